import { mkdir, rm, stat } from "node:fs/promises";
import { type BuildRecord, readBuildRecord, writeBuildRecord } from "../build/app-config.ts";
import { withDiskLimit } from "../build/disk-limit.ts";
import { buildFromDockerfile } from "../build/dockerfile.ts";
import { fetchImage, imagePresent, imageRecord } from "../build/image-source.ts";
import { buildDiskExceeded, type LocalLimits } from "../build/limits.ts";
import type { PackageIndexes } from "../build/plan/detection.ts";
import { planBuild } from "../build/plan/plan.ts";
import { checkStaticOutput } from "../build/plan/static.ts";
import { resolveToolchainEnv } from "../build/plan/toolchain-env.ts";
import type { BuildPlan } from "../build/plan/types.ts";
import { fetchSource } from "../build/source.ts";
import { runBuild } from "../build/steps.ts";
import type { EngineFinder } from "../engine/finder.ts";
import { type PhaseContext, type PreparedSource, type RevisionSpec, SourceError } from "../interface.ts";
import { abortError } from "../shared/exec.ts";
import type { Layout } from "../shared/layout.ts";
import { useBuildCache } from "./build-cache.ts";
import { UNSANDBOXED_WARNING } from "./protections/refusals.ts";
import type { Confiner } from "./sandbox/confine.ts";
import { SANDBOX_APP_DIR } from "./sandbox/sandbox.ts";

/**
 * The runtime's prepare and build phases: fetch a revision's source (or image) into its directory,
 * run its install and build commands under the disk limit, and write `build.json` last, so its
 * presence means "built". Neither touches what runs; activation (runtime.ts) reads what they leave.
 */

/** What the phases work with: the runtime's directories, sandbox, engine and limits. */
export interface PhaseHandles {
  layout: Layout;
  confiner: Confiner;
  containers: EngineFinder;
  limits: LocalLimits;
  indexes: PackageIndexes;
}

/** Log lines of the revision, with host paths shown as the app sees them. */
export function revisionLog(
  confiner: Confiner,
  spec: RevisionSpec,
  ctx: PhaseContext,
  stream: "build" | "deploy",
): (line: string) => void {
  const hide = confiner.hidePaths(spec.deploymentId, spec.revisionId);
  return (line) => ctx.log(stream, hide(line));
}

export async function prepareRevision(
  h: PhaseHandles,
  spec: RevisionSpec,
  ctx: PhaseContext,
): Promise<PreparedSource> {
  const log = revisionLog(h.confiner, spec, ctx, "build");
  const revisionDir = h.layout.revisionDir(spec.deploymentId, spec.revisionId);
  const appDir = h.layout.appDir(spec.deploymentId, spec.revisionId);
  // Nothing of a revision that may not run here is fetched; activate fails it (DEPLOY_FAILED).
  const refusal = await h.confiner.refusal(spec);
  if (refusal !== undefined) {
    log(`slipway: not fetching the source: ${refusal}`);
    return {};
  }
  await rm(revisionDir, { recursive: true, force: true });
  await mkdir(appDir, { recursive: true });
  await mkdir(h.layout.homeDir, { recursive: true });
  try {
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    if (spec.source.kind === "image") {
      await fetchImage(h.containers, spec.source.imageUri, ctx.signal, log);
      return {};
    }
    return await fetchSource(h.layout, spec, appDir, ctx.signal, log, h.limits);
  } catch (err) {
    await rm(revisionDir, { recursive: true, force: true });
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    if (err instanceof SourceError) log(`error: ${err.message}`);
    throw err;
  }
}

export async function buildRevision(h: PhaseHandles, spec: RevisionSpec, ctx: PhaseContext): Promise<void> {
  const log = revisionLog(h.confiner, spec, ctx, "build");
  const refusal = await h.confiner.refusal(spec);
  if (refusal !== undefined) {
    log(`slipway: not building: ${refusal}`);
    return;
  }
  const revisionDir = h.layout.revisionDir(spec.deploymentId, spec.revisionId);
  const appDir = h.layout.appDir(spec.deploymentId, spec.revisionId);
  try {
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    let record: BuildRecord;
    if (spec.source.kind === "image") {
      record = await imageRecord(h.containers, spec.source.imageUri, log);
    } else {
      await stat(appDir);
      // Planned first: a bad config or a source with nothing to start fails in a second, not after a long install.
      const plan = await planBuild({
        appDir,
        configPath: spec.frameworkConfigPath,
        installCommand: spec.installCommand,
        buildCommand: spec.buildCommand,
        indexes: h.indexes,
        log,
      });
      if (plan.kind === "dockerfile") {
        // podman builds it outside the sandbox; it then runs as a container revision (kind "image").
        const built = await buildFromDockerfile({
          containers: h.containers,
          dataDir: h.layout.dataDir,
          workspaceId: spec.workspaceId,
          deploymentId: spec.deploymentId,
          revisionId: spec.revisionId,
          appDir,
          revisionDir,
          plan,
          network: (await h.confiner.networkOf(spec.deploymentId))?.path,
          diskLimitBytes: h.limits.buildDiskBytes,
          cacheCapBytes: h.limits.buildCacheBytes,
          signal: ctx.signal,
          log,
        });
        if (ctx.signal.aborted) throw abortError(ctx.signal);
        await writeBuildRecord(h.layout.buildRecord(spec.deploymentId, spec.revisionId), built);
        log("Build finished.");
        return;
      }
      const confined = await h.confiner.confine(spec.deploymentId, appDir, true);
      if (!confined.sandboxed) log(UNSANDBOXED_WARNING);
      // The app runs where it was built (/app in the sandbox), with the PATH and HOME it was built with.
      const toolchain = resolveToolchainEnv(
        plan.toolchainEnv,
        confined.env,
        confined.sandboxed ? SANDBOX_APP_DIR : appDir,
      );
      const cached = await useBuildCache({
        layout: h.layout,
        confiner: h.confiner,
        deploymentId: spec.deploymentId,
        appDir,
        language: plan.language,
        steps: plan.steps,
        cache: plan.cache,
        sandboxed: confined.sandboxed,
        capBytes: h.limits.buildCacheBytes,
        signal: ctx.signal,
        log,
      });
      const limitBytes = h.limits.buildDiskBytes;
      const exceeded = () => buildDiskExceeded(limitBytes);
      await withDiskLimit({ dir: revisionDir, limitBytes, signal: ctx.signal, exceeded, log }, (signal) =>
        runBuild({
          appDir,
          steps: cached.steps,
          env: { ...confined.env, ...toolchain },
          wrap: confined.wrap,
          signal,
          log,
        }),
      );
      if (plan.kind === "static") await checkStaticOutput(appDir, plan.root, log);
      await cached.save();
      record =
        plan.kind === "static"
          ? {
              version: 1,
              kind: "static",
              root: plan.root,
              spa: plan.spa === true,
              healthcheck: plan.healthcheck,
              env: plan.env,
            }
          : processRecord(plan, toolchain);
    }
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    await writeBuildRecord(h.layout.buildRecord(spec.deploymentId, spec.revisionId), record);
    log("Build finished.");
  } catch (err) {
    await rm(revisionDir, { recursive: true, force: true });
    if (ctx.signal.aborted) throw abortError(ctx.signal);
    throw err;
  }
}

/** What activation starts from a process plan: its commands, with the toolchain's environment. */
function processRecord(plan: BuildPlan, toolchain: Record<string, string>): BuildRecord {
  if (plan.kind !== "process") throw new Error(`a ${plan.kind} plan is not run as processes`);
  return {
    version: 1,
    kind: "process",
    start: plan.start,
    ...(plan.worker === undefined ? {} : { worker: plan.worker }),
    healthcheck: plan.healthcheck,
    ...(plan.healthTimeoutS === undefined ? {} : { healthTimeoutS: plan.healthTimeoutS }),
    env: { ...toolchain, ...plan.env },
    ...(plan.redis ? { redis: true } : {}),
  };
}

/** Built: `build.json` is there and what it names still is (the image in the store, or the tree). */
export async function isRevisionBuilt(h: PhaseHandles, spec: RevisionSpec): Promise<boolean> {
  const record = await readBuildRecord(h.layout.buildRecord(spec.deploymentId, spec.revisionId));
  if (record === undefined) return false;
  if (record.kind === "image") return imagePresent(h.containers, record.image);
  try {
    return (await stat(h.layout.appDir(spec.deploymentId, spec.revisionId))).isDirectory();
  } catch {
    return false;
  }
}
