import type { ProcessInfo } from "../../interface.ts";
import type { RevisionGroup } from "../processes/group.ts";
import type { ProcessRecord } from "../processes/orphans.ts";
import type { RedisServer } from "../redis/redis.ts";
import { Traffic } from "../scaling/traffic.ts";
import type { AppsRouter } from "./router.ts";

/**
 * What runs for one deployment on this machine: the active revision group, the groups starting or
 * draining, and the queue that runs its activations and teardown one at a time. The routing of its
 * name and the switch from one group to the next are here; runtime.ts decides when they happen.
 */
export class DeploymentSlot {
  active: RevisionGroup | undefined;
  readonly starting = new Set<RevisionGroup>();
  /** Replaced revisions still finishing their in-flight requests. */
  readonly retiring = new Set<RevisionGroup>();
  /** The deployment's own Redis, kept across revisions (redis/cache.ts). */
  cache: RedisServer | undefined;
  /** Its requests as the router counts them, across revisions (autoscaling, idle periods). */
  readonly traffic = new Traffic();
  /** Whether what a killed Slipway left for this deployment was ended (once per runtime). */
  reaped = false;
  private queue: Promise<unknown> = Promise.resolve();
  /** The drains under way, by revision: its files stay until it has stopped. */
  private readonly draining = new Map<string, Promise<void>>();

  constructor(
    readonly id: string,
    /** The host name it is served under, until an activation renames it. */
    public name: string,
    readonly record: ProcessRecord,
    private readonly router: AppsRouter,
  ) {}

  /** Runs `task` after every task queued before it, whether they failed or not. */
  serialize<T>(task: () => Promise<T>): Promise<T> {
    const result = this.queue.then(task, task);
    this.queue = result.catch(() => undefined);
    return result;
  }

  /** Settles once every task queued so far has. */
  settled(): Promise<unknown> {
    return this.queue;
  }

  /** Renamed: the old host stops routing; the new one serves what runs until the next switch. */
  rename(name: string): void {
    if (this.name === name) return;
    if (this.active !== undefined) {
      this.router.delete(this.name, this.active);
      this.router.set(name, this.active);
    }
    this.name = name;
  }

  /** The switch: from here on every new request goes to `group`. Returns the group it replaced. */
  switchTo(group: RevisionGroup): RevisionGroup | undefined {
    const previous = this.active;
    this.active = group;
    this.router.set(this.name, group);
    group.supervise();
    return previous;
  }

  /** Lets a replaced group finish its in-flight requests (at most `drainMs`), then stops it. */
  drain(previous: RevisionGroup, drainMs: number, log: (line: string) => void): Promise<void> {
    log(`slipway: draining revision ${previous.revisionId}`);
    this.retiring.add(previous);
    const done = previous.retire(drainMs).finally(() => {
      this.retiring.delete(previous);
      this.draining.delete(previous.revisionId);
    });
    this.draining.set(previous.revisionId, done);
    return done.then(() => log(`slipway: revision ${previous.revisionId} stopped`));
  }

  /** Settles once the revision's drain has; undefined when it is not draining. */
  drained(revisionId: string): Promise<unknown> | undefined {
    return this.draining.get(revisionId)?.catch(() => undefined);
  }

  /** Every process of the deployment that runs here: active, starting and draining revisions. */
  async processes(): Promise<ProcessInfo[]> {
    const groups = [
      ...(this.active === undefined ? [] : [{ g: this.active, draining: false }]),
      ...[...this.starting].map((g) => ({ g, draining: false })),
      ...[...this.retiring].map((g) => ({ g, draining: true })),
    ];
    return (await Promise.all(groups.map(({ g, draining }) => g.processes(draining)))).flat();
  }

  /** Stops what is starting or draining now, not after its health or drain timeout. */
  async stopPending(): Promise<void> {
    const pending = [...this.starting, ...this.retiring];
    this.starting.clear();
    await Promise.all(pending.map((g) => g.stop()));
  }

  /** Unroutes the name and stops the active group, then the deployment's Redis. */
  async stopActive(): Promise<void> {
    const active = this.active;
    this.active = undefined;
    if (active !== undefined) {
      this.router.delete(this.name, active);
      await active.stop();
    }
    const cache = this.cache;
    this.cache = undefined;
    await cache?.stop();
  }
}
