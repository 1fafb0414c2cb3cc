import { createHash } from "node:crypto";
import { readRevisionSecrets } from "../../core/deployments/secrets.ts";
import {
  desiredPairs,
  type RemoteRevisionRow,
  remoteRevisionRows,
} from "../../core/revisions/listener-store.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import type { Database } from "../../db/client.ts";
import type { ChannelWaiters } from "../../db/waiters.ts";
import {
  APP_PORT,
  type DesiredDeployment,
  type DesiredState,
  HEALTH_PATH,
  hostOf,
} from "../../protocol/listener.ts";
import { credentialEpoch, pullCredentials } from "../push-tokens/login.ts";
import { desiredVersion, listenerNamespaces, touchListener } from "./store.ts";

/** Re-check at least this often while waiting, in case a notification was missed. */
const RECHECK_MS = 2000;

/** What desired states are made of beyond the database: where apps are served, the image registry. */
export interface DesiredSettings {
  appsDomain: string;
  registry: Parameters<typeof pullCredentials>[0];
}

/** The image a revision runs: the one it names, or the one built and pushed for it. */
export function imageOf(row: Pick<RemoteRevisionRow, "source_revision_config" | "image_ref">): string {
  const uri = row.source_revision_config.image_uri;
  return row.image_ref ?? (typeof uri === "string" ? uri : "");
}

async function describe(
  db: Database,
  keyring: Keyring,
  settings: DesiredSettings,
  listenerId: string,
  row: RemoteRevisionRow,
): Promise<DesiredDeployment> {
  const image = imageOf(row);
  const env: Record<string, string> = {};
  for (const s of await readRevisionSecrets(db.orm, keyring, row.revision_id)) env[s.name] = s.value;
  env.PORT = String(APP_PORT);
  return {
    deployment_id: row.deployment_id,
    name: row.name,
    namespace: row.namespace ?? "default",
    revision_id: row.revision_id,
    image,
    env,
    secret_references: (row.secret_references ?? []).map((r) => ({
      name: r.name,
      secret_name: r.secret_name,
      key: r.secret_key,
    })),
    resource_spec: row.resource_spec ?? {},
    health_path: row.health_path ?? HEALTH_PATH,
    port: APP_PORT,
    host: hostOf(settings, row.name),
    deployment_type: row.deployment_type,
    workspace_id: row.workspace_id,
    registry_credentials: pullCredentials(
      settings.registry,
      { listenerId, workspaceId: row.workspace_id, deploymentId: row.deployment_id },
      image,
    ),
  };
}

/** The current desired state's version and what it is made of, bumping the version on a change. */
async function current(db: Database, settings: DesiredSettings, listenerId: string) {
  const pairs = await desiredPairs(db.orm, listenerId);
  // Re-issued pull credentials are a change too: the listener re-applies and its Secrets get them.
  const fingerprint = `${pairs
    .map((p) => `${p.deployment_id}:${p.revision_id}`)
    .sort()
    .join(",")};${credentialEpoch(settings.registry)}`;
  const hash = createHash("sha256").update(fingerprint).digest("hex");
  const version = await desiredVersion(db.orm, listenerId, hash);
  return { version, revisionIds: pairs.map((p) => p.revision_id) };
}

/**
 * GET /v2/listeners/{id}/desired: at once when the version differs from `after` (a listener whose
 * version is ahead, after a restore, resyncs too), else when it changes or `waitS` ends. Both ends
 * count as hearing from the listener, but not the end of a poll its listener has left (`gone`
 * aborted): a stopped listener must not look connected again when its last poll times out.
 */
export async function pollDesired(
  db: Database,
  keyring: Keyring,
  settings: DesiredSettings,
  waiters: ChannelWaiters,
  poll: { listenerId: string; after: number; waitS: number; gone: AbortSignal },
): Promise<DesiredState> {
  const { listenerId, after, gone } = poll;
  await touchListener(db.orm, listenerId);
  const deadline = Date.now() + poll.waitS * 1000;
  let state = await current(db, settings, listenerId);
  for (;;) {
    const left = deadline - Date.now();
    if (state.version !== after || left <= 0 || waiters.isClosed || gone.aborted) break;
    await waiters.sleep(listenerId, Math.min(left, RECHECK_MS), gone);
    state = await current(db, settings, listenerId);
  }
  if (!gone.aborted) await touchListener(db.orm, listenerId);
  const rows = await remoteRevisionRows(db.orm, state.revisionIds);
  const deployments = [];
  for (const row of rows) deployments.push(await describe(db, keyring, settings, listenerId, row));
  const namespaces = await listenerNamespaces(db.orm, listenerId);
  return { version: state.version, listener_id: listenerId, deployments, pod_reports: true, namespaces };
}
