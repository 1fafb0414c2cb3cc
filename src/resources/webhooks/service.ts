import { randomBytes, randomUUID } from "node:crypto";
import { isIP } from "node:net";
import { recordAuditInTransaction } from "../../core/audit/scope.ts";
import type { WorkspaceCaller } from "../../core/callers.ts";
import { invalid, notFound } from "../../core/errors.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import { encryptionContext } from "../../crypto/envelope.ts";
import { type Executor, inTransaction } from "../../db/client.ts";
import { isLoopbackHostname, refusedAddressReason } from "../../oauth/address-policy.ts";
import type { CreateWebhookBody, Delivery, PatchWebhookBody, Webhook, WebhookWithSecret } from "./schema.ts";
import {
  deleteWebhook,
  findDelivery,
  findWebhook,
  insertWebhook,
  requeueDelivery,
  updateWebhook,
} from "./store.ts";

/** What the webhook operations need. */
export interface WebhookEnv {
  orm: Executor;
  keyring: Keyring;
  /** SLIPWAY_WEBHOOKS_ALLOW_PRIVATE: receivers on this machine (plain http) are allowed. */
  allowPrivate: boolean;
}

export const secretContext = (id: string) => encryptionContext("webhooks", "secret_enc", id);

/** A Standard Webhooks secret: `whsec_` and base64 of 24 random bytes. */
function newSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

/**
 * A receiver URL: https (or http to this machine when private receivers are allowed), no
 * credentials, and not an address literal that could never be reached safely. Host names are
 * checked again on every delivery (they may resolve differently later).
 */
function checkUrl(raw: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid(["body", "url"], "must be an absolute URL");
  }
  const loopback = isLoopbackHostname(url.hostname);
  if (url.protocol !== "https:" && !(url.protocol === "http:" && allowPrivate && loopback)) {
    throw invalid(["body", "url"], "must be an https URL");
  }
  if (url.username !== "" || url.password !== "") {
    throw invalid(["body", "url"], "must not carry credentials");
  }
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0) {
    const reason = refusedAddressReason(host, allowPrivate);
    if (reason !== null) throw invalid(["body", "url"], `must not point at ${reason}`);
  } else if (loopback && !allowPrivate) {
    throw invalid(["body", "url"], "must not point at this machine");
  }
  return url.toString();
}

export async function createWebhook(
  env: WebhookEnv,
  caller: WorkspaceCaller,
  body: CreateWebhookBody,
): Promise<WebhookWithSecret> {
  const url = checkUrl(body.url, env.allowPrivate);
  const id = randomUUID();
  const secret = newSecret();
  const created = await inTransaction(env.orm, async (tx) => {
    const row = await insertWebhook(tx, {
      id,
      organizationId: caller.organizationId,
      workspaceId: caller.workspaceId,
      url,
      events: body.events,
      description: body.description ?? "",
      enabled: body.enabled ?? true,
      secretEnc: env.keyring.encrypt(secret, secretContext(id)),
    });
    await recordAuditInTransaction(tx, id);
    return row;
  });
  return { ...created, secret };
}

export async function getWebhook(exec: Executor, caller: WorkspaceCaller, id: string): Promise<Webhook> {
  const row = await findWebhook(exec, caller.workspaceId, id);
  if (!row) throw notFound("Webhook not found.");
  return row;
}

export async function patchWebhook(
  env: WebhookEnv,
  caller: WorkspaceCaller,
  id: string,
  body: PatchWebhookBody,
): Promise<Webhook> {
  const url = body.url === undefined ? undefined : checkUrl(body.url, env.allowPrivate);
  return inTransaction(env.orm, async (tx) => {
    const changes = { url, events: body.events, description: body.description, enabled: body.enabled };
    if (!(await updateWebhook(tx, caller.workspaceId, id, changes))) throw notFound("Webhook not found.");
    await recordAuditInTransaction(tx);
    return (await findWebhook(tx, caller.workspaceId, id)) as Webhook;
  });
}

/** A new signing secret; the old one stops working at once. */
export async function rotateWebhookSecret(
  env: WebhookEnv,
  caller: WorkspaceCaller,
  id: string,
): Promise<WebhookWithSecret> {
  const secret = newSecret();
  const row = await inTransaction(env.orm, async (tx) => {
    const secretEnc = env.keyring.encrypt(secret, secretContext(id));
    if (!(await updateWebhook(tx, caller.workspaceId, id, { secretEnc })))
      throw notFound("Webhook not found.");
    await recordAuditInTransaction(tx);
    return (await findWebhook(tx, caller.workspaceId, id)) as Webhook;
  });
  return { ...row, secret };
}

export async function removeWebhook(exec: Executor, caller: WorkspaceCaller, id: string): Promise<void> {
  await inTransaction(exec, async (tx) => {
    if (!(await deleteWebhook(tx, caller.workspaceId, id))) throw notFound("Webhook not found.");
    await recordAuditInTransaction(tx);
  });
}

/** Sends a delivery again, whatever became of it: same `webhook-id`, same body. */
export async function redeliver(
  exec: Executor,
  caller: WorkspaceCaller,
  webhookId: string,
  deliveryId: string,
): Promise<Delivery> {
  return inTransaction(exec, async (tx) => {
    if (!(await findDelivery(tx, caller.workspaceId, webhookId, deliveryId))) {
      throw notFound("Delivery not found.");
    }
    await requeueDelivery(tx, webhookId, deliveryId);
    await recordAuditInTransaction(tx);
    return (await findDelivery(tx, caller.workspaceId, webhookId, deliveryId)) as Delivery;
  });
}
