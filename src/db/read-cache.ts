import { RECORDS_CHANNEL } from "./channels.ts";
import type { Database } from "./client.ts";

/** A safety net only: notifications keep entries right; none lives longer than this regardless. */
const TTL_MS = 30_000;

interface Entry {
  workspaceId: string;
  value: unknown;
  bytes: number;
  expires: number;
}

/** The keys a workspace has cached; replaced (not emptied) when invalidated, see `read`. */
type Bucket = Set<string>;

/**
 * Answers of reads of stored records (GET and list of deployments and revisions), kept per
 * workspace so that a repeated read costs no database round trip.
 *
 * Kept right by invalidation, not by time: every committed change to those tables announces its
 * workspace on `slipway_records` (triggers, migration 0018), and each process drops that
 * workspace's answers on the notification. A request that may write drops its workspace's answers
 * before it answers (`invalidate`), so a client reads its own writes at once on this process; on
 * another process the change shows once the notification arrives (milliseconds; it comes on the
 * same connection, and so before, the events the change raised). While the listening connection
 * is down nothing is cached, and after it was lost everything is dropped (`listenEpoch`). A read
 * that raced with an invalidation is answered but not kept.
 */
export class ReadCache {
  private readonly entries = new Map<string, Entry>();
  private readonly buckets = new Map<string, Bucket>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;
  private epoch: number | undefined;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(
    private readonly db: Database,
    /** 0 turns the cache off. */
    private readonly maxBytes: number,
  ) {}

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  async start(): Promise<void> {
    if (!this.enabled || this.unlisten) return;
    this.unlisten = await this.db.listen(RECORDS_CHANNEL, (workspaceId) => this.invalidate(workspaceId));
  }

  /**
   * The cached answer of `key` in the workspace, or `load`'s (kept when nothing changed meanwhile).
   * `bytes` sizes an answer for the memory bound. Errors (404s) are never kept.
   */
  async read<T>(
    workspaceId: string,
    key: string,
    load: () => Promise<T>,
    bytes: (v: T) => number,
  ): Promise<T> {
    const epoch = this.enabled && this.unlisten ? this.db.listenEpoch() : undefined;
    if (epoch === undefined) return load();
    if (epoch !== this.epoch) {
      this.clear();
      this.epoch = epoch;
    }
    const id = `${workspaceId}\n${key}`;
    const hit = this.entries.get(id);
    if (hit && hit.expires > Date.now()) {
      this.hits++;
      return hit.value as T;
    }
    this.misses++;
    if (hit) this.drop(id, hit);
    let bucket = this.buckets.get(workspaceId);
    if (!bucket) {
      bucket = new Set();
      this.buckets.set(workspaceId, bucket);
    }
    const value = await load();
    // Kept only if no change of the workspace was announced while it was read, and none was lost.
    if (this.buckets.get(workspaceId) === bucket && this.db.listenEpoch() === epoch) {
      this.keep(id, bucket, {
        workspaceId,
        value,
        bytes: bytes(value) + id.length,
        expires: Date.now() + TTL_MS,
      });
    }
    return value;
  }

  /** Drops the workspace's answers. */
  invalidate(workspaceId: string): void {
    const bucket = this.buckets.get(workspaceId);
    if (!bucket) return;
    this.buckets.delete(workspaceId);
    for (const id of bucket) {
      const e = this.entries.get(id);
      if (e) this.drop(id, e);
    }
  }

  /** Drops every answer. */
  clear(): void {
    this.entries.clear();
    this.buckets.clear();
    this.bytes = 0;
  }

  /** What the cache holds (tests and metrics). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  /** Reads answered from memory and from the database since start (reads while off count as neither). */
  get counts(): { hits: number; misses: number } {
    return { hits: this.hits, misses: this.misses };
  }

  async close(): Promise<void> {
    await this.unlisten?.();
    this.unlisten = undefined;
    this.clear();
  }

  private keep(id: string, bucket: Bucket, entry: Entry): void {
    if (entry.bytes > this.maxBytes / 4) return;
    const old = this.entries.get(id);
    if (old) this.drop(id, old);
    // Oldest first: a Map iterates in insertion order.
    for (const [oldId, e] of this.entries) {
      if (this.bytes + entry.bytes <= this.maxBytes) break;
      this.drop(oldId, e);
    }
    this.entries.set(id, entry);
    bucket.add(id);
    this.bytes += entry.bytes;
  }

  private drop(id: string, e: Entry): void {
    this.entries.delete(id);
    this.buckets.get(e.workspaceId)?.delete(id);
    this.bytes -= e.bytes;
  }
}
