import type { ProcessInfo, Runtime } from "./interface.ts";

/** What the processes route reads: the narrow handle, not a runtime. */
export interface ProcessReader {
  processes(deploymentId: string): Promise<ProcessInfo[]>;
}

/**
 * The runtimes of this Slipway process, as the API sees them. The API is built before the
 * reconciler starts its runtimes, so they attach here once running (and detach when stopped);
 * without a reconciler in this process the list is empty.
 */
export class ProcessBoard implements ProcessReader {
  private readonly runtimes = new Set<Pick<Runtime, "processes">>();

  /** Makes `runtime`'s processes visible; the returned function hides them again. */
  attach(runtime: Pick<Runtime, "processes">): () => void {
    this.runtimes.add(runtime);
    return () => this.runtimes.delete(runtime);
  }

  async processes(deploymentId: string): Promise<ProcessInfo[]> {
    const lists = await Promise.all([...this.runtimes].map((r) => r.processes(deploymentId)));
    return lists.flat();
  }
}
