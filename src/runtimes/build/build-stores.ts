import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Engine } from "../engine/engine.ts";
import { run } from "../shared/exec.ts";
import { diskUsage } from "./disk-limit.ts";

/**
 * Where Dockerfile builds keep their layers, and how their images go away: each workspace has its
 * own podman store (no tenant's build sees another's layers or base images); a built image is
 * copied into the engine's default store, where it runs, and removed from there when its revision
 * is discarded or its deployment deleted. The workspace store keeps the layer cache, pruned past
 * SLIPWAY_BUILD_CACHE_MB.
 */

/** Every image a Dockerfile build makes is named under this prefix, by deployment and revision. */
export const BUILT_IMAGE_PREFIX = "localhost/slipway-build/";

/** The image a revision's Dockerfile build makes (lowercase: image names are). */
export function builtImageRef(deploymentId: string, revisionId: string): string {
  return `${BUILT_IMAGE_PREFIX}${deploymentId}:${revisionId}`.toLowerCase();
}

export interface BuildStore {
  root: string;
  runroot: string;
}

/**
 * A workspace's own image store (the deployment's, when the workspace is not known). podman refuses
 * a runroot longer than 50 characters, which a data dir and a workspace id easily make: the runroot
 * (locks and mount state, made again after a reboot) is a short path named by the store's hash.
 */
export function workspaceStorage(dataDir: string, key: string): BuildStore {
  // Becomes a directory name: only a plain token may.
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(key))
    throw new Error(`not a plain workspace id: ${JSON.stringify(key)}`);
  const root = join(dataDir, "builds", "storage", key);
  const uid = process.getuid?.() ?? 0;
  const runBase = uid === 0 ? "/run/slipway/rr" : join(tmpdir(), `slipway-rr-${uid}`);
  return { root, runroot: join(runBase, createHash("sha256").update(root).digest("hex").slice(0, 16)) };
}

/** The store's flags for a podman command. */
export function storeFlags(store: BuildStore): string[] {
  return ["--root", store.root, "--runroot", store.runroot];
}

/** `apps/<deployment>/build-store`: which store the deployment's builds used (read by teardown). */
function storeRecord(dataDir: string, deploymentId: string): string {
  return join(dataDir, "apps", deploymentId, "build-store");
}

export async function recordStore(dataDir: string, deploymentId: string, key: string): Promise<void> {
  await writeFile(storeRecord(dataDir, deploymentId), key);
}

function quiet(engine: Engine, args: string[]): Promise<{ code: number | null; stdout: string }> {
  let stdout = "";
  const onLine = (line: string) => {
    stdout += `${line}\n`;
  };
  const signal = new AbortController().signal;
  return run(engine.name, args, { cwd: "/", env: engine.env, signal, onLine })
    .then((r) => ({ code: r.code, stdout }))
    .catch(() => ({ code: 1, stdout: "" }));
}

/** What podman says of an image a killed build left half-written (its id is the one to remove). */
const BROKEN_IMAGE = /locating item named "[^"]+" for image with ID "([0-9a-f]{64})"/;

/**
 * A build stopped mid-commit (past a limit, or its server killed) can leave an image record with no
 * manifest, and every later listing of that store then fails. Such records are removed, one a pass,
 * until the store lists again; they hold nothing a later build could reuse.
 */
export async function repairStore(
  engine: Engine,
  store: BuildStore,
  log?: (line: string) => void,
): Promise<void> {
  for (let pass = 0; pass < 20; pass++) {
    let text = "";
    const signal = new AbortController().signal;
    const r = await run(engine.name, [...storeFlags(store), "images", "--quiet"], {
      cwd: "/",
      env: engine.env,
      signal,
      onLine: (line) => {
        text += `${line}\n`;
      },
    }).catch(() => undefined);
    const broken = r === undefined || r.code === 0 ? undefined : BROKEN_IMAGE.exec(text)?.[1];
    if (broken === undefined) return;
    log?.(
      `slipway: removing the half-written image ${broken.slice(0, 12)} a stopped build left in the cache`,
    );
    await quiet(engine, [...storeFlags(store), "rmi", "--force", broken]);
  }
}

/** Tagged images of one deployment in a store (the default one when `store` is undefined). */
async function deploymentImages(engine: Engine, deploymentId: string, store?: BuildStore): Promise<string[]> {
  const repo = `${BUILT_IMAGE_PREFIX}${deploymentId}`.toLowerCase();
  const flags = store === undefined ? [] : storeFlags(store);
  if (store !== undefined) await repairStore(engine, store);
  const r = await quiet(engine, [...flags, "images", "--format", "{{.Repository}}:{{.Tag}}"]);
  return r.stdout
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.startsWith(`${repo}:`));
}

/** A discarded revision's built image leaves the default store (not an image someone else named). */
export async function removeBuiltImage(engine: Engine, ref: string): Promise<void> {
  if (!ref.startsWith(BUILT_IMAGE_PREFIX)) return;
  await quiet(engine, ["rmi", "--force", ref]);
}

/** A deleted deployment's built images leave both stores; the workspace's layer cache stays. */
export async function removeDeploymentImages(
  engine: Engine,
  dataDir: string,
  deploymentId: string,
): Promise<void> {
  const key = await readFile(storeRecord(dataDir, deploymentId), "utf8").catch(() => undefined);
  const stores: (BuildStore | undefined)[] = [undefined];
  if (key !== undefined && /^[A-Za-z0-9][A-Za-z0-9_-]*$/.test(key.trim()))
    stores.push(workspaceStorage(dataDir, key.trim()));
  for (const store of stores) {
    const refs = await deploymentImages(engine, deploymentId, store);
    if (refs.length > 0)
      await quiet(engine, [...(store === undefined ? [] : storeFlags(store)), "rmi", "--force", ...refs]);
  }
}

/**
 * Past `capBytes`, the store's images not in use by a running build are pruned (base images are
 * pulled again when next asked for); a build in progress keeps what its working container uses.
 */
export async function capStore(
  engine: Engine,
  store: BuildStore,
  capBytes: number,
  log: (line: string) => void,
): Promise<void> {
  const used = await diskUsage(store.root, capBytes + 1);
  if (used <= capBytes) return;
  log(
    `slipway: the workspace's image cache is over SLIPWAY_BUILD_CACHE_MB (${Math.round(capBytes / 1048576)} MB): pruning it`,
  );
  await repairStore(engine, store, log);
  await quiet(engine, [...storeFlags(store), "image", "prune", "--all", "--force"]);
}
