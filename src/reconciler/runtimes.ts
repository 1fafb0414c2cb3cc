import type { Runtime } from "../runtimes/interface.ts";

/** The runtime of revisions that name no listener: this server's processes and containers. */
export const DEFAULT_RUNTIME = "local";
/** The runtime of revisions a listener runs on its Kubernetes cluster. */
export const REMOTE_RUNTIME = "remote";

/**
 * Which runtime serves a revision: `remote` when the revision records a listener (copied from its
 * deployment when it was made), else `local` — the one place that decides it.
 */
export function runtimeNameOf(revision: { listener_id?: string | null }): string {
  return revision.listener_id ? REMOTE_RUNTIME : DEFAULT_RUNTIME;
}

export class UnknownRuntime extends Error {
  constructor(name: string) {
    super(`no runtime named ${name} is configured`);
  }
}

/**
 * The data planes the reconciler drives, by name, and nothing but `runtimes/interface.ts` of
 * them: adding one is a new entry here, not a change of the loop.
 */
export class Runtimes {
  private readonly byName: ReadonlyMap<string, Runtime>;

  constructor(runtimes: Readonly<Record<string, Runtime>>) {
    this.byName = new Map(Object.entries(runtimes));
  }

  of(name: string): Runtime {
    const runtime = this.byName.get(name);
    if (!runtime) throw new UnknownRuntime(name);
    return runtime;
  }

  /** The runtime serving a revision. */
  forRevision(revision: { listener_id?: string | null }): Runtime {
    return this.of(runtimeNameOf(revision));
  }

  /** Stops a deployment wherever it runs (teardown is idempotent, so asking each runtime is safe). */
  async teardown(deploymentId: string): Promise<void> {
    for (const runtime of this.byName.values()) await runtime.teardown(deploymentId);
  }
}
