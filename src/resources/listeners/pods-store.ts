import { sql } from "drizzle-orm";
import { type Executor, type Reader, rows } from "../../db/client.ts";
import { isoSql, uuidList } from "../../db/sql.ts";
import type { PodReport } from "../../protocol/listener.ts";

/**
 * The only module that writes SQL on `deployment_pods` (migration 0032): each listener
 * deployment's latest pods report, and since when its active revision has not served.
 */

/** A deployment of the listener as a pods report needs it, its row locked for the transaction. */
export interface PodsSubject {
  id: string;
  name: string;
  workspace_id: string;
  organization_id: string;
  active_revision_id: string | null;
  /** Its active revision was not serving at the last judged report. */
  unhealthy: boolean;
}

/**
 * The listener's deployments among `ids` (others are not returned), with their stored serving
 * state; the pods rows are locked so concurrent reports judge each transition once.
 */
export async function podsSubjects(
  exec: Executor,
  listenerId: string,
  ids: readonly string[],
): Promise<PodsSubject[]> {
  if (ids.length === 0) return [];
  await exec.execute(
    sql`SELECT deployment_id FROM deployment_pods WHERE deployment_id IN (${uuidList(ids)}) FOR UPDATE`,
  );
  return rows<PodsSubject>(
    exec,
    sql`SELECT d.id, d.name, d.workspace_id, d.organization_id, d.active_revision_id,
               (p.unhealthy_since IS NOT NULL) AS unhealthy
          FROM deployments d LEFT JOIN deployment_pods p ON p.deployment_id = d.id
         WHERE d.id IN (${uuidList(ids)}) AND d.source_config->>'listener_id' = ${listenerId.toLowerCase()}`,
  );
}

export interface PodsWrite {
  deploymentId: string;
  listenerId: string;
  revisionId: string;
  pods: PodReport[];
  serving: boolean;
  reason: string | null;
  /** "keep" the stored unhealthy state (not judged), "set" it now with `reason`, or "clear" it. */
  unhealthy: "keep" | "set" | "clear";
}

export async function savePods(exec: Executor, w: PodsWrite): Promise<void> {
  const since =
    w.unhealthy === "set"
      ? sql`now()`
      : w.unhealthy === "clear"
        ? sql`NULL`
        : sql`deployment_pods.unhealthy_since`;
  const unhealthyReason =
    w.unhealthy === "set"
      ? sql`${w.reason}`
      : w.unhealthy === "clear"
        ? sql`NULL`
        : sql`deployment_pods.unhealthy_reason`;
  await exec.execute(
    sql`INSERT INTO deployment_pods AS deployment_pods
               (deployment_id, listener_id, revision_id, pods, serving, reason, unhealthy_since, unhealthy_reason)
        VALUES (${w.deploymentId}, ${w.listenerId}, ${w.revisionId}, ${JSON.stringify(w.pods)}::jsonb, ${w.serving},
                ${w.reason}, ${w.unhealthy === "set" ? sql`now()` : sql`NULL`},
                ${w.unhealthy === "set" ? w.reason : null})
        ON CONFLICT (deployment_id) DO UPDATE
           SET listener_id = EXCLUDED.listener_id, revision_id = EXCLUDED.revision_id, pods = EXCLUDED.pods,
               serving = EXCLUDED.serving, reason = EXCLUDED.reason, unhealthy_since = ${since},
               unhealthy_reason = ${unhealthyReason}, reported_at = now()`,
  );
}

export interface PodsRow {
  revision_id: string;
  pods: PodReport[];
  serving: boolean;
  reason: string | null;
  unhealthy_since: string | null;
  unhealthy_reason: string | null;
  reported_at: string;
}

/** The deployment's latest pods report, if a listener sent one. */
export async function podsOf(exec: Reader, deploymentId: string): Promise<PodsRow | undefined> {
  const [row] = await rows<PodsRow>(
    exec,
    sql`SELECT revision_id, pods, serving, reason, ${sql.raw(isoSql("unhealthy_since"))} AS unhealthy_since,
               unhealthy_reason, ${sql.raw(isoSql("reported_at"))} AS reported_at
          FROM deployment_pods WHERE deployment_id = ${deploymentId}`,
  );
  return row;
}
