import type { PatchState } from "../../core/deployments/read-store.ts";

/** Deployments whose state a process keeps; past it, the least recently PATCHed go first. */
const DEFAULT_MAX_ENTRIES = 1000;

/**
 * The state of each deployment as this process's last PATCH of it left it (row version, in-place
 * fields, latest revision with its secrets as envelopes), so that the next PATCH of it skips its
 * read: one round trip instead of two.
 *
 * A kept state is a guess, never an answer. It is only used for a write guarded by its row
 * version, which changes nothing when anything (another process, the reconciler, a delete) changed
 * the deployment since; and a PATCH that would answer anything but a write from it (a 4xx, or a
 * no-op that returns the current record) reads the deployment afresh and answers from that.
 * Entries are per workspace, as reads are: another workspace's caller never finds one.
 */
export class PatchStates {
  private readonly states = new Map<string, PatchState>();

  constructor(private readonly maxEntries = DEFAULT_MAX_ENTRIES) {}

  get size(): number {
    return this.states.size;
  }

  get(workspaceId: string, id: string): PatchState | undefined {
    const key = keyOf(workspaceId, id);
    const state = this.states.get(key);
    if (state) {
      // Most recently used last: eviction takes from the front.
      this.states.delete(key);
      this.states.set(key, state);
    }
    return state;
  }

  remember(workspaceId: string, id: string, state: PatchState): void {
    const key = keyOf(workspaceId, id);
    this.states.delete(key);
    this.states.set(key, state);
    for (const oldest of this.states.keys()) {
      if (this.states.size <= this.maxEntries) break;
      this.states.delete(oldest);
    }
  }

  /** Drops the state if it is still the one at `version` (a newer one another PATCH kept stays). */
  forget(workspaceId: string, id: string, version: string): void {
    const key = keyOf(workspaceId, id);
    if (this.states.get(key)?.version === version) this.states.delete(key);
  }
}

const keyOf = (workspaceId: string, id: string) => `${workspaceId}\n${id.toLowerCase()}`;
