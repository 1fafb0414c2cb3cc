import { sql } from "drizzle-orm";
import { type Orm, rows } from "../db/client.ts";
import type { Keyring } from "./envelope.ts";
import { type EncryptedColumn, encryptedColumns, encryptionContext } from "./registry.ts";

export interface RotationResult {
  table: string;
  column: string;
  rewrapped: number;
}

const BATCH = 200;

/**
 * Re-encrypts every stored value that is not under the active master key. Runs beside live
 * servers: each row is updated only if it still holds the value that was read, so a concurrent
 * write (already under the active key) is never overwritten.
 */
export async function rotateSecrets(
  orm: Orm,
  keyring: Keyring,
  columns: EncryptedColumn[] = encryptedColumns,
): Promise<RotationResult[]> {
  const results: RotationResult[] = [];
  const activePrefix = `sw1.${keyring.activeKid}.%`;
  for (const { table, column, contextId } of columns) {
    const t = sql.identifier(table);
    const c = sql.identifier(column);
    let rewrapped = 0;
    let after = "00000000-0000-0000-0000-000000000000";
    for (;;) {
      const batch = await rows<{ id: string; ctx: string; value: string }>(
        orm,
        sql`SELECT id::text AS id, ${sql.raw(contextId ?? "id::text")} AS ctx, ${c} AS value FROM ${t}
            WHERE ${c} IS NOT NULL AND ${c} NOT LIKE ${activePrefix} AND id > ${after}::uuid
            ORDER BY id LIMIT ${BATCH}`,
      );
      if (batch.length === 0) break;
      for (const row of batch) {
        const next = keyring.reencrypt(row.value, encryptionContext(table, column, row.ctx));
        const updated = await rows<{ id: string }>(
          orm,
          sql`UPDATE ${t} SET ${c} = ${next} WHERE id = ${row.id}::uuid AND ${c} = ${row.value} RETURNING id`,
        );
        rewrapped += updated.length;
      }
      after = (batch[batch.length - 1] as { id: string }).id;
    }
    results.push({ table, column, rewrapped });
  }
  return results;
}
