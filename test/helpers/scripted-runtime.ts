import {
  type Activation,
  BuildError,
  DeployError,
  type PhaseContext,
  type PreparedSource,
  type ProcessInfo,
  type RevisionSpec,
  type Runtime,
  SourceError,
} from "../../src/runtimes/interface.ts";

type Phase = "prepare" | "build" | "activate";

/** What one phase of a revision does in the scripted runtime. */
export type Behaviour =
  | { kind: "fail"; error: "source" | "build" | "deploy" | "fault"; message?: string }
  /** Waits until the test calls `release(revisionId, phase)` or the phase is aborted. */
  | { kind: "block"; ignoreAbort?: boolean };

/**
 * A Runtime whose phases do what a test scripts, and which records every call: a test of the
 * reconciler's state machine, not of a data plane (the end-to-end suites use LocalRuntime).
 */
export class ScriptedRuntime implements Runtime {
  readonly name = "scripted";
  readonly calls: { phase: string; deploymentId: string; revisionId?: string; tag?: string }[] = [];
  readonly specs = new Map<string, RevisionSpec>();
  readonly serving = new Map<string, string>();
  readonly built = new Set<string>();
  healthOf: (deploymentId: string) => "running" | "stopped" | "unknown" = (id) =>
    this.serving.has(id) ? "running" : "stopped";
  private readonly script = new Map<string, Behaviour>();
  private readonly waiting = new Map<string, () => void>();
  private readonly started = new Map<string, () => void>();

  /**
   * Scripts a phase of the revisions tagged `tag`: the tag is the revision's framework_config_path,
   * so a test scripts a revision before it is queued. Faults fire once.
   */
  on(tag: string, phase: Phase, behaviour: Behaviour): void {
    this.script.set(`${tag}:${phase}`, behaviour);
  }

  release(tag: string, phase: Phase): void {
    this.script.delete(`${tag}:${phase}`);
    this.waiting.get(`${tag}:${phase}`)?.();
  }

  /** Resolves when a phase of a tagged revision has begun. */
  reached(tag: string, phase: Phase): Promise<void> {
    if (this.calls.some((c) => c.tag === tag && c.phase === phase)) return Promise.resolve();
    return new Promise((resolve) => this.started.set(`${tag}:${phase}`, resolve));
  }

  count(phase: string, revisionId?: string): number {
    return this.calls.filter(
      (c) => c.phase === phase && (revisionId === undefined || c.revisionId === revisionId),
    ).length;
  }

  private async run(phase: Phase, spec: RevisionSpec, ctx: PhaseContext): Promise<void> {
    const tag = spec.frameworkConfigPath ?? spec.revisionId;
    const key = `${tag}:${phase}`;
    this.calls.push({ phase, deploymentId: spec.deploymentId, revisionId: spec.revisionId, tag });
    this.specs.set(spec.revisionId, spec);
    ctx.log(phase === "activate" ? "deploy" : "build", `${phase} ${spec.revisionId}`);
    for (const [name, value] of Object.entries(spec.env)) ctx.log("build", `env ${name}=${value}`);
    this.started.get(key)?.();
    const b = this.script.get(key);
    if (!b) return;
    if (b.kind === "block") {
      await new Promise<void>((resolve, reject) => {
        this.waiting.set(key, resolve);
        const abort = () => reject(new Error(`${phase} aborted`));
        if (b.ignoreAbort) return;
        if (ctx.signal.aborted) abort();
        ctx.signal.addEventListener("abort", abort, { once: true });
      });
      return;
    }
    const message = b.message ?? `${phase} failed`;
    if (b.error === "fault") {
      this.script.delete(key);
      throw new Error(message);
    }
    throw b.error === "source"
      ? new SourceError(message)
      : b.error === "build"
        ? new BuildError(message)
        : new DeployError(message);
  }

  async prepare(spec: RevisionSpec, ctx: PhaseContext): Promise<PreparedSource> {
    await this.run("prepare", spec, ctx);
    return { commitSha: "0123456789abcdef0123456789abcdef01234567" };
  }

  async build(spec: RevisionSpec, ctx: PhaseContext): Promise<void> {
    await this.run("build", spec, ctx);
    this.built.add(spec.revisionId);
  }

  async activate(spec: RevisionSpec, ctx: PhaseContext): Promise<Activation> {
    await this.run("activate", spec, ctx);
    this.serving.set(spec.deploymentId, spec.revisionId);
    return { url: `http://${spec.deploymentName}.localhost:8081` };
  }

  async isBuilt(spec: RevisionSpec): Promise<boolean> {
    this.calls.push({ phase: "isBuilt", deploymentId: spec.deploymentId, revisionId: spec.revisionId });
    return this.built.has(spec.revisionId);
  }

  async teardown(deploymentId: string): Promise<void> {
    this.calls.push({ phase: "teardown", deploymentId });
    this.serving.delete(deploymentId);
  }

  async discard(deploymentId: string, revisionId: string): Promise<void> {
    this.calls.push({ phase: "discard", deploymentId, revisionId });
    this.built.delete(revisionId);
  }

  /** What a test says the deployment's router saw last (epoch ms). */
  readonly lastRequests = new Map<string, number>();

  lastRequestAt(deploymentId: string): number | undefined {
    return this.lastRequests.get(deploymentId);
  }

  health(deploymentId: string): "running" | "stopped" | "unknown" {
    return this.healthOf(deploymentId);
  }

  /** A scripted runtime runs nothing, so it has no processes to show. */
  async processes(_deploymentId: string): Promise<ProcessInfo[]> {
    return [];
  }

  async close(): Promise<void> {}
}
