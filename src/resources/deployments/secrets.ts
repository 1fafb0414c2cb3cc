import { randomUUID } from "node:crypto";
import type { Keyring } from "../../crypto/envelope.ts";
import { encryptionContext } from "../../crypto/envelope.ts";
import type { Executor, Reader } from "../../db/client.ts";
import { insertSecretRows, secretRows } from "../revisions/store.ts";
import { MASK, type Secret } from "./schema.ts";

/**
 * The one module that encrypts and decrypts secret values: a revision's (revision_secrets) and
 * those a deployment keeps for its first revision (pending_secrets_enc). The rows are the
 * revisions store's.
 */

/** Secret values are only ever stored as envelopes bound to their row (crypto/envelope.ts). */
const valueContext = (rowId: string) => encryptionContext("revision_secrets", "value_enc", rowId);
const pendingContext = (deploymentId: string) =>
  encryptionContext("deployments", "pending_secrets_enc", deploymentId);

export async function insertRevisionSecrets(
  exec: Executor,
  keyring: Keyring,
  revisionId: string,
  secrets: Secret[],
): Promise<void> {
  await insertSecretRows(
    exec,
    revisionId,
    secrets.map((s) => {
      const id = randomUUID();
      return { id, name: s.name, value_enc: keyring.encrypt(s.value, valueContext(id)) };
    }),
  );
}

/**
 * A revision's secrets in their order, decrypted: to copy them into a new revision, or (the
 * reconciler) into the app's environment and the log redactor.
 */
export async function readRevisionSecrets(
  exec: Reader,
  keyring: Keyring,
  revisionId: string,
): Promise<Secret[]> {
  const list = await secretRows(exec, revisionId);
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
