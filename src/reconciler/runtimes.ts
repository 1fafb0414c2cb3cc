import type { Runtime } from "../runtimes/interface.ts";

/** The runtime every revision runs on until a revision can ask for another. */
export const DEFAULT_RUNTIME = "local";

/**
 * Which runtime serves a revision. Every revision is served by `local` today; the runtime that
 * adds a second data plane stores the choice on the revision and reads it here — the one place
 * that decides it.
 */
export function runtimeNameOf(_revision: { id: string }): string {
  return DEFAULT_RUNTIME;
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
  forRevision(revision: { id: string }): Runtime {
    return this.of(runtimeNameOf(revision));
  }

  /** Stops a deployment wherever it runs (teardown is idempotent, so asking each runtime is safe). */
  async teardown(deploymentId: string): Promise<void> {
    for (const runtime of this.byName.values()) await runtime.teardown(deploymentId);
  }
}
