import { SC } from "../../core/deployments/rules.ts";
import { invalid } from "../../core/errors.ts";
import type { Executor } from "../../db/client.ts";
import { shareListener } from "../listeners/store.ts";

/**
 * A deployment's listener must be one of its workspace's, and its namespace one of the listener's.
 * Run inside the create's transaction: the listener's row is share-locked, so a concurrent delete
 * of the listener waits and then sees the deployment (409).
 */
export async function checkListener(
  tx: Executor,
  workspaceId: string,
  listenerId: string,
  namespace: string | null,
): Promise<void> {
  const listener = await shareListener(tx, workspaceId, listenerId);
  if (!listener)
    throw invalid([...SC, "listener_id"], `Listener ID ${listenerId} not found in this workspace.`);
  const allowed = listener.k8s_namespaces ?? [];
  if (namespace === null || !allowed.includes(namespace)) {
    const list = allowed.length === 0 ? "none" : allowed.join(", ");
    throw invalid(
      [...SC, "listener_config", "k8s_namespace"],
      `Must be one of the listener's namespaces (compute_config.k8s_namespaces: ${list}).`,
    );
  }
}
