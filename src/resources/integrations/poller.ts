import { randomUUID } from "node:crypto";
import { findRepository } from "../../codehost/interface.ts";
import { LocalGitDriver } from "../../codehost/local-git/driver.ts";
import { findIntegration } from "../../codehost/store.ts";
import { applyPush, type PushEnv } from "./push.ts";
import {
  dropUnwatchedHeads,
  headKey,
  saveHead,
  seenHeads,
  tryPollLock,
  watchedLocalBranches,
} from "./store.ts";

export interface PollerOptions extends PushEnv {
  /** SLIPWAY_LOCAL_GIT_POLL_S in milliseconds; 0: the poller does not run. */
  intervalMs: number;
  log: { warn(obj: object, msg: string): void };
}

/**
 * Notices pushes into local_git repositories (docs/codehost.md, "Build on push"): every interval it reads the
 * heads of the branches build_on_push deployments follow, compares them with the heads it saw last
 * (stored, so a restart misses nothing and reports nothing twice), and on a change does what a
 * push does, with the changed paths from `git diff --name-only old new`. Every process runs one;
 * a transaction lock lets one at a time act. A head seen for the first time is compared with the
 * commits the watching deployments' latest revisions are at: one that differs builds (a push that
 * landed between a deployment's creation and the first pass), and while one of those revisions has
 * not resolved its commit yet, the head is left unrecorded until it has.
 */
export class LocalGitPoller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly opts: PollerOptions) {}

  start(): void {
    if (this.opts.intervalMs > 0) this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.pass()
        .catch((err: unknown) => this.opts.log.warn({ err }, "local_git poll failed"))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.opts.intervalMs);
    this.timer.unref?.();
  }

  /** One look at every watched branch (tests call it directly). */
  async pass(): Promise<void> {
    const { db, config } = this.opts;
    const watched = await watchedLocalBranches(db.orm);
    // Heads are read before the lock: git is the slow part, and every process may read.
    const current = new Map<string, string>();
    const drivers = new Map<string, LocalGitDriver>();
    for (const w of watched) {
      try {
        let driver = drivers.get(w.integration_id);
        if (!driver) {
          driver = new LocalGitDriver(w.path, config.localGitRoots);
          drivers.set(w.integration_id, driver);
        }
        const repo = findRepository(await driver.listRepositories(), w.repo_url);
        const sha = repo && (await driver.branchHeads(repo)).get(w.branch);
        if (sha) current.set(headKey(w.integration_id, w.repo_url, w.branch), sha);
      } catch (err) {
        this.opts.log.warn(
          { err, integrationId: w.integration_id, repoUrl: w.repo_url },
          "reading heads failed",
        );
      }
    }
    await db.transaction(async (tx) => {
      if (!(await tryPollLock(tx.orm))) return;
      const seen = await seenHeads(tx.orm);
      for (const w of watched) {
        const key = headKey(w.integration_id, w.repo_url, w.branch);
        const sha = current.get(key);
        const before = seen.get(key);
        if (sha === undefined || sha === before) continue;
        if (before === undefined && w.pending) continue;
        await saveHead(tx.orm, {
          integrationId: w.integration_id,
          repoUrl: w.repo_url,
          branch: w.branch,
          sha,
        });
        seen.set(key, sha);
        if (before === undefined && w.commits.every((c) => c === sha)) continue;
        const integration = await findIntegration(tx.orm, w.integration_id);
        const driver = drivers.get(w.integration_id);
        if (!integration || !driver) continue;
        const repo = findRepository(await driver.listRepositories(), w.repo_url);
        // A first sighting has no earlier head of its own: the paths changed since the one commit the
        // deployments are at, when they agree on one; otherwise unknown (watch_paths cannot skip it).
        const since = before ?? (w.commits.length === 1 ? w.commits[0] : undefined);
        const changedFiles =
          repo && since !== undefined ? await driver.changedFiles(repo, since, sha) : undefined;
        await applyPush(
          this.opts,
          integration,
          {
            repoUrls: [w.repo_url],
            branch: w.branch,
            after: sha,
            changedFiles,
            via: { route: "local_git poller", requestId: randomUUID(), actor: "local_git poller" },
          },
          tx,
        );
      }
      await dropUnwatchedHeads(tx.orm, [
        ...new Set(watched.map((w) => headKey(w.integration_id, w.repo_url, w.branch))),
      ]);
    });
  }
}
