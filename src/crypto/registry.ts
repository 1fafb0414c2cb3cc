/**
 * Every column that holds an envelope (see envelope.ts). Rotation walks this list, so a new
 * encrypted column is registered here and nowhere else. Each table's key column is `id`, and the
 * encryption context is `<table>.<column>:<id>`.
 */
export interface EncryptedColumn {
  table: string;
  column: string;
}

export const encryptedColumns: EncryptedColumn[] = [{ table: "revision_secrets", column: "value_enc" }];

export function encryptionContext(table: string, column: string, id: string): string {
  return `${table}.${column}:${id}`;
}
