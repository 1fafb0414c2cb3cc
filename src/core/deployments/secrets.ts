import type { Keyring } from "../../crypto/envelope.ts";
import { encryptionContext } from "../../crypto/envelope.ts";
import type { Reader } from "../../db/client.ts";
import { MASK, type Secret } from "../model.ts";
import {
  type SealedSecret,
  type StoredSecret,
  secretContextId,
  secretRows,
} from "../revisions/secrets-store.ts";

/**
 * The one module that encrypts and decrypts secret values: a revision's (revision_secrets) and
 * those a deployment keeps for its first revision (pending_secrets_enc). The rows are the
 * revisions store's. A revision secret's envelope is bound to its deployment and name, so a new
 * revision copies an unchanged value's envelope without opening it; rows written before that
 * (deployment_id null) are bound to their row id and are re-sealed when next copied.
 */
/** Secret values are only ever stored as envelopes bound to their deployment and name (or, older rows, their row id). */
const valueContext = (row: Pick<StoredSecret, "id" | "name" | "deployment_id">) =>
  encryptionContext("revision_secrets", "value_enc", secretContextId(row));
const pendingContext = (deploymentId: string) =>
  encryptionContext("deployments", "pending_secrets_enc", deploymentId);

function seal(keyring: Keyring, deploymentId: string, s: Secret): SealedSecret {
  const context = valueContext({ id: "", name: s.name, deployment_id: deploymentId });
  return { name: s.name, value_enc: keyring.encrypt(s.value, context) };
}

const open = (keyring: Keyring, row: StoredSecret) => keyring.decrypt(row.value_enc, valueContext(row));

/** Fresh values, sealed for the deployment. */
export function sealSecrets(keyring: Keyring, deploymentId: string, secrets: Secret[]): SealedSecret[] {
  return secrets.map((s) => seal(keyring, deploymentId, s));
}

/**
 * The secrets of a new revision of `deploymentId`: the sent list (a masked value keeps the stored
 * value of that name, checked before), or, when none was sent, the stored ones. A kept value's
 * envelope is copied as it is when it is bound to this deployment and under the active master key;
 * one under an older key is sealed again (a key rotation may have passed the rows it was read
 * from), and only new values are encrypted.
 */
export function nextSecrets(
  keyring: Keyring,
  deploymentId: string,
  stored: StoredSecret[],
  sent: Secret[] | null,
): SealedSecret[] {
  const keep = (row: StoredSecret): SealedSecret =>
    row.deployment_id === deploymentId && row.value_enc.startsWith(keyring.activePrefix)
      ? { name: row.name, value_enc: row.value_enc }
      : seal(keyring, deploymentId, { name: row.name, value: open(keyring, row) });
  if (sent === null) return stored.map(keep);
  const byName = new Map(stored.map((s) => [s.name, s]));
  return sent.map((s) => {
    if (s.value !== MASK) return seal(keyring, deploymentId, s);
    const row = byName.get(s.name);
    return row ? keep(row) : seal(keyring, deploymentId, { name: s.name, value: "" });
  });
}

/**
 * The stored rows `next` is, when it is exactly them (same names and envelopes in the same order:
 * nothing sent, nothing sealed again): a new revision then shares those rows instead of copying
 * them (migration 0022). Null when anything differs, or there is nothing to share.
 */
export function unchangedRows(next: SealedSecret[], stored: StoredSecret[]): StoredSecret[] | null {
  if (stored.length === 0 || next.length !== stored.length) return null;
  const same = stored.every((row, i) => row.name === next[i]?.name && row.value_enc === next[i]?.value_enc);
  return same ? stored : null;
}

/** A revision's secrets in their order, decrypted: the reconciler puts them in the app's environment. */
export async function readRevisionSecrets(
  exec: Reader,
  keyring: Keyring,
  revisionId: string,
): Promise<Secret[]> {
  const list = await secretRows(exec, revisionId);
  return list.map((r) => ({ name: r.name, value: open(keyring, r) }));
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
