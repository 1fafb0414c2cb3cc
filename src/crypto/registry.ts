/**
 * Every column that holds an envelope (see envelope.ts). Rotation walks this list, so a new
 * encrypted column is registered here and nowhere else. Each table's key column is `id`, and the
 * encryption context is `<table>.<column>:<context id>`; the context id is the row id unless
 * `contextId` (an SQL expression over the row) says otherwise.
 */
export interface EncryptedColumn {
  table: string;
  column: string;
  contextId?: string;
}

/**
 * A revision secret's context id: `<deployment id>/<name>` (rows since migration 0008, so a new
 * revision copies an unchanged envelope), or the row id (older rows, deployment_id null). The SQL
 * below is the same rule, for rotation.
 */
export function secretContextId(row: { id: string; name: string; deployment_id: string | null }): string {
  return row.deployment_id === null ? row.id : `${row.deployment_id}/${row.name}`;
}
const SECRET_CONTEXT_ID = "coalesce(deployment_id::text || '/' || name, id::text)";

export const encryptedColumns: EncryptedColumn[] = [
  { table: "revision_secrets", column: "value_enc", contextId: SECRET_CONTEXT_ID },
  { table: "oauth_providers", column: "client_secret_enc" },
  { table: "oauth_tokens", column: "access_token_enc" },
  { table: "oauth_tokens", column: "refresh_token_enc" },
  { table: "oauth_flows", column: "code_verifier_enc" },
  { table: "deployments", column: "database_password_enc" },
  { table: "deployments", column: "pending_secrets_enc" },
];

export function encryptionContext(table: string, column: string, id: string): string {
  return `${table}.${column}:${id}`;
}
