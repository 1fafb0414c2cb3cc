import { abortError } from "./exec.ts";
import type { Replica } from "./replica.ts";

/** The processes of one revision of one deployment, and the round-robin over the healthy ones. */
export class RevisionGroup {
  private next = 0;

  constructor(
    readonly revisionId: string,
    readonly replicas: Replica[],
    /** The deploy log of the activation that started it; kept for crash lines. */
    readonly log: (line: string) => void,
  ) {}

  /** Starts every replica in parallel; the first failure stops them all and is thrown. */
  async start(signal: AbortSignal): Promise<void> {
    const inner = new AbortController();
    const onAbort = () => inner.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    let failure: { error: unknown } | undefined;
    await Promise.all(
      this.replicas.map((r) =>
        r.start(inner.signal).catch((error: unknown) => {
          failure ??= { error };
          inner.abort(error);
        }),
      ),
    );
    signal.removeEventListener("abort", onAbort);
    if (failure !== undefined) {
      await this.stop();
      throw signal.aborted ? abortError(signal) : failure.error;
    }
  }

  supervise(): void {
    for (const r of this.replicas) r.supervise();
  }

  /** The next healthy replica, taken in turn; undefined when none is serving. */
  pick(): Replica | undefined {
    const n = this.replicas.length;
    for (let i = 0; i < n; i++) {
      const candidate = this.replicas[(this.next + i) % n];
      if (candidate?.ready) {
        this.next = (this.next + i + 1) % n;
        return candidate;
      }
    }
    return undefined;
  }

  get serving(): boolean {
    return this.replicas.some((r) => r.ready);
  }

  get allReady(): boolean {
    return this.replicas.every((r) => r.ready);
  }

  /** Waits for in-flight requests (at most `drainMs`), then stops every process. */
  async retire(drainMs: number): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.whenIdle(drainMs)));
    await this.stop();
  }

  async stop(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.stop()));
  }
}
