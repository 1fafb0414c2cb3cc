import { listenerOfDeployment } from "../core/deployments/read-store.ts";
import { recordImageRef, remoteState } from "../core/revisions/listener-store.ts";
import { LISTENER_CHANNEL, REPORT_CHANNEL } from "../db/channels.ts";
import type { Database } from "../db/client.ts";
import { ChannelWaiters } from "../db/waiters.ts";
import { hostOf, REVISION_STATES } from "../protocol/listener.ts";
import type { RemoteBridge, RemoteReport } from "../runtimes/remote/runtime.ts";

const STATES: ReadonlySet<string> = new Set(REVISION_STATES);

/**
 * The database side of the `remote` runtime: announcing desired-state changes to listeners' long
 * polls (any process), and reading the reports they post. Close it when the reconciler stops.
 */
export function remoteBridge(db: Database, appsDomain: string): RemoteBridge & { close(): Promise<void> } {
  const reports = new ChannelWaiters(db, REPORT_CHANNEL);
  return {
    async publish(deploymentId) {
      const listenerId = deploymentId === undefined ? "*" : await listenerOfDeployment(db.orm, deploymentId);
      await db.notify(LISTENER_CHANNEL, listenerId ?? "*").catch(() => {});
    },
    async report(revisionId): Promise<RemoteReport | undefined> {
      const row = await remoteState(db.orm, revisionId);
      if (!row?.remote_state || !STATES.has(row.remote_state)) return undefined;
      return { state: row.remote_state as RemoteReport["state"], reason: row.remote_reason };
    },
    nextReport: (revisionId, ms, signal) => reports.sleep(revisionId, ms, signal),
    url: (name) => `http://${hostOf({ appsDomain }, name)}`,
    recordImage: (revisionId, image) => recordImageRef(db.orm, revisionId, image.ref, image.healthPath),
    imageOf: async (revisionId) => (await remoteState(db.orm, revisionId))?.image_ref ?? undefined,
    close: () => reports.close(),
  };
}
