/**
 * Every column that holds an envelope (see envelope.ts). Rotation walks this list, so a new
 * encrypted column is registered here and nowhere else. Each table's key column is `id`, and the
 * encryption context is `<table>.<column>:<id>`.
 */
export interface EncryptedColumn {
  table: string;
  column: string;
}

export const encryptedColumns: EncryptedColumn[] = [
  { table: "revision_secrets", column: "value_enc" },
  { table: "oauth_providers", column: "client_secret_enc" },
  { table: "oauth_tokens", column: "access_token_enc" },
  { table: "oauth_tokens", column: "refresh_token_enc" },
  { table: "oauth_flows", column: "code_verifier_enc" },
  { table: "deployments", column: "database_password_enc" },
  { table: "deployments", column: "pending_secrets_enc" },
  { table: "webhooks", column: "secret_enc" },
];

export function encryptionContext(table: string, column: string, id: string): string {
  return `${table}.${column}:${id}`;
}
