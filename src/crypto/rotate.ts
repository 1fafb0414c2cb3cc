import { encryptionContext, type Keyring } from "./envelope.ts";

/**
 * One column of stored envelopes, as rotation walks it: the database side (db/envelopes.ts
 * `envelopeColumn`, declared by each table's store) hands these in, so rotation names no table in
 * SQL and reaches no database itself; it only asks for stale values and swaps them.
 */
export interface EnvelopeColumn {
  /** SQL names, for the encryption context and rotation's report. */
  readonly table: string;
  readonly column: string;
  /** Up to `limit` non-null values not starting with `current`, with ids after `after`, in id order. */
  stale(current: string, after: string, limit: number): Promise<StaleEnvelope[]>;
  /** Writes `next` where the row still holds `current` (a concurrent write wins); whether it did. */
  swap(id: string, current: string, next: string): Promise<boolean>;
}

export interface StaleEnvelope {
  id: string;
  /** The id its encryption context names (envelope.ts `encryptionContext`). */
  contextId: string;
  value: string;
}

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
