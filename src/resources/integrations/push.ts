import { randomUUID } from "node:crypto";
import type { CodehostConfig, IntegrationRow } from "../../codehost/drivers.ts";
import { driverFor } from "../../codehost/drivers.ts";
import { findRepository, type HostRepository, normalizeRepoUrl } from "../../codehost/interface.ts";
import { touchesWatchPaths, watchPathsOf } from "../../codehost/watch-paths.ts";
import { withAuditScope } from "../../core/audit/scope.ts";
import { type AuditScope, completeAuditRecord } from "../../core/audit/store.ts";
import { lockDeployment } from "../../core/deployments/read-store.ts";
import { insertRevision, readRevisionContent } from "../../core/deployments/revision-writer.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import type { Database, Reader, Transaction } from "../../db/client.ts";
import type { PushOutcome } from "./schema.ts";
import { type PushTarget, pushTargets } from "./store.ts";

/**
 * What a push to a branch does (a signed webhook, the post-receive hook, or the local_git poller
 * noticing a new head): a new revision at the pushed commit for each deployment of the integration
 * that builds that repository and branch on push, unless its app config's `watch_paths` rule it
 * out. Revisions are made the way a redeploy makes them (`insertRevision`), so they emit the same
 * events.
 */
export interface Push {
  /** Every URL the host gives for the repository (html, clone, api); any may match a deployment's. */
  repoUrls: string[];
  branch: string;
  /** The pushed commit. */
  after: string;
  /** The paths the push changed; undefined when not known (then `watch_paths` cannot rule it out). */
  changedFiles: string[] | undefined;
  /** What the audit log records as the request: the webhook route and delivery id, or the poller. */
  via: { route: string; requestId: string; actor: string };
}

export interface PushEnv {
  db: Database;
  keyring: Keyring;
  config: CodehostConfig;
}

/** Whether a deployment's ref names the pushed branch (`main` and `refs/heads/main` both do). */
function namesBranch(ref: string | null, branch: string): boolean {
  return ref === branch || ref === `refs/heads/${branch}`;
}

/** The deployments of the integration a push of this repository and branch concerns. */
export async function targetsOf(exec: Reader, integrationId: string, push: Push): Promise<PushTarget[]> {
  const urls = new Set(push.repoUrls.map(normalizeRepoUrl));
  const all = await pushTargets(exec, integrationId);
  return all.filter((t) => urls.has(normalizeRepoUrl(t.repo_url)) && namesBranch(t.repo_ref, push.branch));
}

/**
 * Why the app config at the pushed commit rules the push out for this deployment; undefined when
 * it builds. Config files are read once per repository and path.
 */
async function watchPathsVerdict(
  read: (repoUrl: string, path: string) => Promise<string | undefined>,
  target: PushTarget,
  push: Push,
): Promise<{ skip?: string; note?: string }> {
  if (push.changedFiles === undefined || target.framework_config_path === null) return {};
  const watch = watchPathsOf(await read(target.repo_url, target.framework_config_path));
  if (watch.kind === "invalid") return { note: watch.reason };
  if (watch.kind === "all" || touchesWatchPaths(push.changedFiles, watch.globs)) return {};
  return { skip: "No changed file matches the app config's watch_paths." };
}

/** A reader of files at the pushed commit through the integration's driver, cached per push. */
function fileReader(config: CodehostConfig, integration: IntegrationRow, sha: string) {
  const driver = driverFor(config, integration);
  let repos: Promise<HostRepository[]> | undefined;
  const cache = new Map<string, Promise<string | undefined>>();
  return (repoUrl: string, path: string): Promise<string | undefined> => {
    const key = `${repoUrl}\n${path}`;
    let text = cache.get(key);
    if (!text) {
      text = (async () => {
        repos ??= driver.listRepositories();
        const repo = findRepository(await repos, repoUrl);
        return repo ? driver.readFile(repo, sha, path) : undefined;
      })();
      cache.set(key, text);
    }
    return text;
  };
}

/**
 * The revision a push makes for one deployment, in the caller's transaction: the latest
 * revision's content (config, spec, secrets) pinned at the pushed commit. Undefined (with why)
 * when the deployment moved on meanwhile: gone, being deleted, or no longer on that branch.
 */
export async function pushRevision(
  tx: Transaction,
  keyring: Keyring,
  target: PushTarget,
  push: Push,
): Promise<{ revisionId: string } | { skipped: string }> {
  const d = await lockDeployment(tx.orm, target.workspace_id, target.id);
  if (!d || d.status === "AWAITING_DELETE" || d.latest_revision_id === null) {
    return { skipped: "The deployment is being deleted." };
  }
  const content = await readRevisionContent(tx.orm, keyring, d.id, d.latest_revision_id);
  if (content?.source !== "codehost" || !namesBranch(content.config.repo_ref, push.branch)) {
    return { skipped: "The deployment no longer builds this branch." };
  }
  if (content.commitSha === push.after) return { skipped: "The latest revision is already at this commit." };
  const made = await insertRevision({ exec: tx }, d, { ...content, commitSha: push.after }, new Date());
  return { revisionId: made.revisionId };
}

/**
 * Applies a push: one revision per concerned deployment, each in its own transaction (`within`,
 * when given, runs them all in the caller's: the poller's, which holds its lock).
 */
export async function applyPush(
  env: PushEnv,
  integration: IntegrationRow,
  push: Push,
  within?: Transaction,
): Promise<PushOutcome[]> {
  const targets = await targetsOf(within?.orm ?? env.db.orm, integration.id, push);
  const read = fileReader(env.config, integration, push.after);
  const outcomes: PushOutcome[] = [];
  for (const target of targets) {
    const base = { deployment_id: target.id, tenant_id: target.workspace_id, name: target.name };
    if (target.repo_commit_sha === push.after) {
      outcomes.push({
        ...base,
        revision_id: null,
        skipped: "The latest revision is already at this commit.",
      });
      continue;
    }
    const verdict = await watchPathsVerdict(read, target, push);
    if (verdict.skip) {
      outcomes.push({ ...base, revision_id: null, skipped: verdict.skip });
      continue;
    }
    // No API key acts, so the revision's audit record names the push (keyless, `actor`).
    const scope: AuditScope = {
      id: randomUUID(),
      organizationId: target.organization_id,
      workspaceId: target.workspace_id,
      keyId: null,
      actor: push.via.actor,
      method: "POST",
      route: push.via.route,
      action: "deployments.push",
      resourceType: "deployments",
      resourceId: target.id,
      requestId: push.via.requestId,
      successStatus: 201,
      recorded: false,
    };
    const made = await withAuditScope(scope, () =>
      within
        ? pushRevision(within, env.keyring, target, push)
        : env.db.transaction((tx) => pushRevision(tx, env.keyring, target, push)),
    );
    if (scope.recorded) await completeAuditRecord(within?.orm ?? env.db.orm, scope.id, 201, target.id);
    outcomes.push(
      "revisionId" in made
        ? {
            ...base,
            revision_id: made.revisionId,
            skipped: null,
            ...(verdict.note ? { note: verdict.note } : {}),
          }
        : { ...base, revision_id: null, skipped: made.skipped },
    );
  }
  return outcomes;
}
