import type { EnvelopeColumn } from "../db/envelopes.ts";
import { encryptionContext, type Keyring } from "./envelope.ts";

export interface RotationResult {
  table: string;
  column: string;
  rewrapped: number;
}

const BATCH = 200;
const BEFORE_ANY_UUID = "00000000-0000-0000-0000-000000000000";

/**
 * Re-encrypts every stored value that is not under the active master key, column by column (the
 * stores list theirs: resources/envelopes.ts). Runs beside live servers: a value is swapped only
 * if the row still holds what was read, so a concurrent write (already under the active key) wins.
 */
export async function rotateSecrets(keyring: Keyring, columns: EnvelopeColumn[]): Promise<RotationResult[]> {
  const results: RotationResult[] = [];
  for (const c of columns) {
    let rewrapped = 0;
    let after = BEFORE_ANY_UUID;
    for (;;) {
      const batch = await c.stale(keyring.activePrefix, after, BATCH);
      const last = batch.at(-1);
      if (!last) break;
      for (const row of batch) {
        const next = keyring.reencrypt(row.value, encryptionContext(c.table, c.column, row.contextId));
        if (await c.swap(row.id, row.value, next)) rewrapped++;
      }
      after = last.id;
    }
    results.push({ table: c.table, column: c.column, rewrapped });
  }
  return results;
}
