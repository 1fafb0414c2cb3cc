import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { runStepFlags } from "../build/dockerfile.ts";
import type { LocalLimits } from "../build/limits.ts";
import type { PackageIndexes } from "../build/plan/detection.ts";
import { planBuild } from "../build/plan/plan.ts";
import { fetchSource } from "../build/source.ts";
import type { Engine } from "../engine/engine.ts";
import { EngineFinder } from "../engine/finder.ts";
import { BuildError, type PhaseContext, type PreparedSource, type RevisionSpec } from "../interface.ts";
import { abortError, describeExit, run } from "../shared/exec.ts";
import { exists } from "../shared/files.ts";
import { Layout } from "../shared/layout.ts";
import { type BaseImages, writeImageRecipe } from "./image-recipe.ts";
import { imageRepository, registryHost, repositoryPath } from "./image-ref.ts";
import type { BuiltImage, ImageBuilder } from "./runtime.ts";

/** How a build logs in to push one repository; undefined: the registry takes pushes without a login. */
export type RegistryLogin = (repository: {
  workspaceId: string;
  deploymentId: string;
  /** The repository path inside the registry (`[<path>/]<workspace id>/<deployment name>`). */
  path: string;
}) => { username: string; password: string } | undefined;

export interface RegistryOptions {
  url: string;
  login: RegistryLogin;
  /** Plain http or an unverified certificate: `--tls-verify=false` on every registry command. */
  insecure: boolean;
}

export interface PodmanBuilderOptions {
  dataDir: string;
  registry: RegistryOptions;
  baseImages: BaseImages;
  /** The port the app listens on in its pod (PORT). */
  port: number;
  limits: LocalLimits;
  /** Where the image's install steps fetch packages (config.packageIndexes). */
  indexes: PackageIndexes;
}

/** podman's limits, said again on the command line: a build's RUN steps must not inherit the host's. */
const ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"];

/**
 * Builds revisions that are not images into one with `podman build` (each RUN step in its own
 * container: the build never runs on the host), from the recipe their plan gives (image-recipe.ts:
 * a generated Containerfile, or the source's own Dockerfile), and pushes it to SLIPWAY_REGISTRY_URL as
 * `<registry>/<workspace id>/<deployment name>:<revision id>`. Files live under
 * `<data dir>/builds/<deployment>/<revision>/` only while the revision builds.
 */
export class PodmanImageBuilder implements ImageBuilder {
  private readonly layout: Layout;
  private readonly engines: EngineFinder;

  constructor(private readonly o: PodmanBuilderOptions) {
    this.layout = new Layout(o.dataDir);
    this.engines = new EngineFinder(o.dataDir, "podman");
  }

  private dir(spec: Pick<RevisionSpec, "deploymentId" | "revisionId">): string {
    // The layout checks both ids are plain tokens before they become directory names.
    this.layout.revisionDir(spec.deploymentId, spec.revisionId);
    return join(this.o.dataDir, "builds", spec.deploymentId, spec.revisionId);
  }

  async prepare(spec: RevisionSpec, ctx: PhaseContext): Promise<PreparedSource> {
    const dir = this.dir(spec);
    await rm(dir, { recursive: true, force: true });
    const appDir = join(dir, "app");
    await mkdir(appDir, { recursive: true });
    await mkdir(this.layout.homeDir, { recursive: true });
    return fetchSource(this.layout, spec, appDir, ctx.signal, (l) => ctx.log("build", l), this.o.limits);
  }

  async build(spec: RevisionSpec, ctx: PhaseContext): Promise<BuiltImage> {
    const log = (line: string) => ctx.log("build", line);
    if (!spec.workspaceId)
      throw new BuildError("the revision's workspace is not known; cannot name its image");
    const engine = await this.engines.usable();
    if (!engine) throw new BuildError("podman is not usable on this server, so the image cannot be built");
    const dir = this.dir(spec);
    const appDir = join(dir, "app");
    // A restart between prepare and build leaves no source: fetch it again.
    if (!(await exists(appDir))) await this.prepare(spec, ctx);
    const repository = imageRepository(this.o.registry.url, spec.workspaceId, spec.deploymentName);
    const ref = `${repository}:${spec.revisionId}`;
    // Each build's own credentials (a token may be scoped to its repository), never the user's ~/.config.
    const authFile = join(dir, "registry-auth.json");
    const credentials = this.o.registry.login({
      workspaceId: spec.workspaceId,
      deploymentId: spec.deploymentId,
      path: repositoryPath(this.o.registry.url, repository),
    });
    const auth = credentials ? ["--authfile", authFile] : [];
    try {
      const plan = await planBuild({
        appDir,
        configPath: spec.frameworkConfigPath,
        installCommand: spec.installCommand,
        buildCommand: spec.buildCommand,
        indexes: this.o.indexes,
        log,
      });
      const recipe = await writeImageRecipe({
        plan,
        dir,
        bases: this.o.baseImages,
        port: this.o.port,
        revisionId: spec.revisionId,
      });
      log(`Slipway: building ${ref} from ${recipe.from}.`);
      if (credentials) await this.login(engine, ctx, credentials, authFile);
      await this.podman(engine, ctx, "build", [
        "build",
        ...ULIMITS,
        // The install capabilities only, as for local Dockerfile builds (no namespace here: podman's network).
        ...runStepFlags(undefined),
        ...this.tls(),
        ...auth,
        ...recipe.buildArgs,
        "--file",
        recipe.file,
        "--tag",
        ref,
        recipe.context,
      ]);
      await this.podman(engine, ctx, "push", ["push", ...this.tls(), ...auth, ref]);
      return { ref, healthPath: plan.healthcheck };
    } finally {
      // The registry holds the image now (or the build failed): nothing here is needed again.
      await run(engine.name, ["rmi", "--force", ref], {
        cwd: "/",
        env: engine.env,
        signal: new AbortController().signal,
        onLine: () => {},
      }).catch(() => {});
      await rm(dir, { recursive: true, force: true });
    }
  }

  async discard(deploymentId: string, revisionId: string): Promise<void> {
    await rm(this.dir({ deploymentId, revisionId }), { recursive: true, force: true });
  }

  private tls(): string[] {
    return this.o.registry.insecure ? ["--tls-verify=false"] : [];
  }

  /** Logs in for this build; the password goes through stdin, never argv. */
  private async login(
    engine: Engine,
    ctx: PhaseContext,
    credentials: { username: string; password: string },
    authFile: string,
  ): Promise<void> {
    const host = registryHost(this.o.registry.url);
    await this.podman(
      engine,
      ctx,
      "login",
      [
        "login",
        ...this.tls(),
        "--authfile",
        authFile,
        "--username",
        credentials.username,
        "--password-stdin",
        host,
      ],
      credentials.password,
    );
  }

  /** Runs one podman command, its output in the build log; a failure is a BuildError. */
  private async podman(engine: Engine, ctx: PhaseContext, what: string, args: string[], stdin?: string) {
    ctx.log("build", `$ podman ${args.join(" ")}`);
    let last = "";
    const result = await run(engine.name, args, {
      cwd: "/",
      env: engine.env,
      signal: ctx.signal,
      stdin,
      onLine: (line) => {
        if (line.trim()) last = line.trim();
        ctx.log("build", line);
      },
    });
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    if (result.code !== 0) {
      const message = `podman ${what} ${describeExit(result)}${last ? `: ${last}` : ""}`;
      ctx.log("build", `error: ${message}`);
      throw new BuildError(message);
    }
  }
}
