import { verify } from "@octokit/webhooks-methods";
import { isCommitSha } from "../../codehost/interface.ts";
import { findIntegration } from "../../codehost/store.ts";
import { badRequest, notFound, unauthorized } from "../../core/errors.ts";
import { DecryptionError } from "../../crypto/envelope.ts";
import { applyPush, type Push, type PushEnv } from "./push.ts";
import type { WebhookAnswer } from "./schema.ts";
import { webhookSecretContext } from "./service.ts";
import { forgetDelivery, recordDelivery } from "./store.ts";

/**
 * A code-host webhook delivery in GitHub's wire format (docs/codehost.md, "Build on push"). The signature
 * (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body with the integration's secret) is checked
 * with @octokit/webhooks-methods, in constant time, before the body is parsed; anything unsigned or
 * mis-signed is 401 and changes nothing. Then a delivery id seen before does nothing, a ping and
 * other events are answered, and a push to a branch builds (push.ts).
 */

export interface Delivery {
  event: string | undefined;
  deliveryId: string | undefined;
  signature: string | undefined;
  body: Buffer;
}

/** 401 without an API-key challenge: the signature is this route's credential. */
const refused = (msg: string) => unauthorized(msg);

const ROTATE_HINT =
  "POST /v1/integrations/forge/codehost/{integration_id}/webhook-secret (admin) generates one; configure it as the webhook's secret.";

/** The push event's fields that matter, or why it cannot be read. */
interface PushPayload {
  ref: string;
  after: string;
  deleted: boolean;
  repoUrls: string[];
  changedFiles: string[] | undefined;
}

/** GitHub lists at most this many commits in a push event; at that many the list may be cut short. */
const COMMITS_LISTED = 20;

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];

function readPush(body: Buffer): PushPayload {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    throw badRequest("The push payload is not JSON: set the webhook's content type to application/json.");
  }
  const p = (typeof parsed === "object" && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const repo = (typeof p.repository === "object" && p.repository !== null ? p.repository : {}) as Record<
    string,
    unknown
  >;
  if (typeof p.ref !== "string" || typeof p.after !== "string") {
    throw badRequest("The push payload has no `ref` and `after`.");
  }
  const repoUrls = ["html_url", "clone_url", "url", "git_url", "ssh_url"]
    .map((k) => repo[k])
    .filter((u): u is string => typeof u === "string" && u !== "");
  if (repoUrls.length === 0) throw badRequest("The push payload names no repository URL.");
  const commits = Array.isArray(p.commits) ? p.commits : [];
  // With no commits listed (a branch made at an existing commit) or possibly more than listed, the
  // changed paths are not known, so watch_paths cannot rule the push out.
  const changedFiles =
    commits.length === 0 || commits.length >= COMMITS_LISTED
      ? undefined
      : commits.flatMap((c: unknown) => {
          const commit = (typeof c === "object" && c !== null ? c : {}) as Record<string, unknown>;
          return [...strings(commit.added), ...strings(commit.removed), ...strings(commit.modified)];
        });
  return { ref: p.ref, after: p.after, deleted: p.deleted === true, repoUrls, changedFiles };
}

export async function receiveWebhook(
  env: PushEnv,
  integrationId: string,
  d: Delivery,
): Promise<{ status: number; answer: WebhookAnswer }> {
  const integration = await findIntegration(env.db.orm, integrationId);
  if (!integration) throw notFound("Code-host integration not found.");
  if (integration.webhookSecretEnc === null) {
    throw refused(`This integration has no webhook secret yet: ${ROTATE_HINT}`);
  }
  let secret: string;
  try {
    secret = env.keyring.decrypt(integration.webhookSecretEnc, webhookSecretContext(integration.id));
  } catch (err) {
    if (err instanceof DecryptionError) throw refused(`The webhook secret cannot be read: ${ROTATE_HINT}`);
    throw err;
  }
  if (d.signature === undefined) throw refused("Missing X-Hub-Signature-256: deliveries must be signed.");
  // verify() throws on an empty body; that is as unsigned as a wrong signature.
  const signed = await verify(secret, d.body.toString("utf8"), d.signature).catch(() => false);
  if (!signed) throw refused("X-Hub-Signature-256 does not match the body and this integration's secret.");

  if (d.event === undefined || d.deliveryId === undefined) {
    throw badRequest("X-GitHub-Event and X-GitHub-Delivery are required.");
  }
  const base = { event: d.event, delivery_id: d.deliveryId, deployments: [] };
  if (d.event === "ping") return { status: 200, answer: { ...base, ignored: "ping" } };
  if (d.event !== "push") {
    return { status: 202, answer: { ...base, ignored: `The ${d.event} event does not build anything.` } };
  }
  const push = readPush(d.body);
  const shown = { ref: push.ref, after: push.after };
  if (!(await recordDelivery(env.db.orm, integration.id, d.deliveryId))) {
    return { status: 200, answer: { ...base, ...shown, ignored: "This delivery was already handled." } };
  }
  const ignore = (why: string) => ({ status: 200, answer: { ...base, ...shown, ignored: why } });
  if (!push.ref.startsWith("refs/heads/")) return ignore("Only pushes to branches build (tags never do).");
  if (push.deleted) return ignore("The branch was deleted.");
  if (!isCommitSha(push.after)) throw badRequest("`after` is not a commit id.");
  const p: Push = {
    repoUrls: push.repoUrls,
    branch: push.ref.slice("refs/heads/".length),
    after: push.after,
    changedFiles: push.changedFiles,
    via: {
      route: "/v1/integrations/forge/codehost/:integration_id/webhook",
      requestId: d.deliveryId,
      actor: `code-host push (delivery ${d.deliveryId})`,
    },
  };
  try {
    const deployments = await applyPush(env, integration, p);
    return { status: 200, answer: { ...base, ...shown, ignored: null, deployments } };
  } catch (err) {
    // Nothing (or not everything) was built: the host's retry of this delivery must not be ignored.
    await forgetDelivery(env.db.orm, integration.id, d.deliveryId);
    throw err;
  }
}
