import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import type { Keyring } from "../../crypto/envelope.ts";
import { encryptionContext } from "../../crypto/registry.ts";
import { type Executor, rows } from "../../db/client.ts";
import { revisionSecrets } from "../../db/schema/deployments.ts";
import { MASK, type Secret } from "./schema.ts";

/** Secret values are only ever stored as envelopes bound to their row (crypto/registry.ts). */
const valueContext = (rowId: string) => encryptionContext("revision_secrets", "value_enc", rowId);
const pendingContext = (deploymentId: string) =>
  encryptionContext("deployments", "pending_secrets_enc", deploymentId);

export async function insertRevisionSecrets(
  exec: Executor,
  keyring: Keyring,
  revisionId: string,
  secrets: Secret[],
): Promise<void> {
  if (secrets.length === 0) return;
  await exec.insert(revisionSecrets).values(
    secrets.map((s, position) => {
      const id = randomUUID();
      return { id, revisionId, name: s.name, valueEnc: keyring.encrypt(s.value, valueContext(id)), position };
    }),
  );
}

/** A revision's secrets in their order, decrypted (only to copy them into a new revision). */
export async function readRevisionSecrets(
  exec: Executor,
  keyring: Keyring,
  revisionId: string,
): Promise<Secret[]> {
  const list = await rows<{ id: string; name: string; value_enc: string }>(
    exec,
    sql`SELECT id, name, value_enc FROM revision_secrets WHERE revision_id = ${revisionId} ORDER BY position`,
  );
  return list.map((r) => ({ name: r.name, value: keyring.decrypt(r.value_enc, valueContext(r.id)) }));
}

export function encryptPendingSecrets(
  keyring: Keyring,
  deploymentId: string,
  secrets: Secret[],
): string | null {
  return secrets.length === 0 ? null : keyring.encrypt(JSON.stringify(secrets), pendingContext(deploymentId));
}

export function decryptPendingSecrets(
  keyring: Keyring,
  deploymentId: string,
  envelope: string | null,
): Secret[] {
  if (envelope === null) return [];
  return JSON.parse(keyring.decrypt(envelope, pendingContext(deploymentId))) as Secret[];
}

/** A sent list where a masked value stands for the stored value of that name (checked before). */
export function unmask(sent: Secret[], stored: Secret[]): Secret[] {
  const byName = new Map(stored.map((s) => [s.name, s.value]));
  return sent.map((s) => (s.value === MASK ? { name: s.name, value: byName.get(s.name) ?? "" } : s));
}
