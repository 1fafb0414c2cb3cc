import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Engine } from "../engine/engine.ts";
import type { EngineFinder } from "../engine/finder.ts";
import { BuildError } from "../interface.ts";
import { abortError, describeExit, run } from "../shared/exec.ts";
import type { BuildRecord } from "./app-config.ts";
import {
  builtImageRef,
  capStore,
  recordStore,
  repairStore,
  storeFlags,
  workspaceStorage,
} from "./build-stores.ts";
import { DEFAULT_BUILD_CACHE_BYTES } from "./cache.ts";
import { diskUsage, withDiskLimit } from "./disk-limit.ts";
import { imageVersion, inspectImage } from "./image.ts";
import { buildDiskExceeded } from "./limits.ts";
import type { DockerfilePlan } from "./plan/types.ts";

/** podman's limits, said again on the command line (as the listener's builder does): RUN steps must not inherit the host's. */
const ULIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"];

/**
 * What a RUN step may do as root in its container: install packages, chown and setuid/setgid files
 * (adduser, `npm ci` as root), bind a low port; not mount, trace, load modules or change the
 * network. No user namespace: podman 4.3's builder writes WORKDIR and COPY as host root under an
 * explicit or automatic uid map, so root in the next RUN step could not write them (measured), and
 * the commonest Dockerfiles would fail. The built image runs under a user namespace of its own.
 */
export const RUN_STEP_CAPS = [
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "SETUID",
  "SETGID",
  "SETFCAP",
  "KILL",
  "NET_BIND_SERVICE",
];

/**
 * How RUN steps are confined: the capabilities above, and the deployment's own network namespace
 * when it has one (the package mirrors and the egress policy reach it; the host's loopback, its
 * services and other tenants do not). Without one (no sandbox here): podman's default network.
 */
export function runStepFlags(network: string | undefined): string[] {
  const flags = ["--cap-drop=ALL", `--cap-add=${RUN_STEP_CAPS.join(",")}`];
  if (network !== undefined) flags.push("--network", `ns:${network}`);
  return flags;
}

/** What a Dockerfile build of one revision needs. */
export interface DockerfileBuild {
  containers: EngineFinder;
  dataDir: string;
  /** Whose layers these are: the storage root is this workspace's (the deployment's when unknown). */
  workspaceId: string | undefined;
  deploymentId: string;
  revisionId: string;
  appDir: string;
  /** The revision's directory: the file with `dockerfile_lines` and the image archive go there. */
  revisionDir: string;
  plan: DockerfilePlan;
  /** The deployment's network namespace (its /run/netns path), where RUN steps run; none: podman's default. */
  network?: string;
  diskLimitBytes: number;
  /** SLIPWAY_BUILD_CACHE_MB: the workspace store's layer cache is pruned past it (default as for dependencies). */
  cacheCapBytes: number | undefined;
  signal: AbortSignal;
  log: (line: string) => void;
}

/**
 * The source's Dockerfile with `dockerfile_lines` (and `more` lines) appended, written as
 * `Dockerfile.slipway` in `dir`: outside the source, so never part of the build context.
 */
export async function writeComposedDockerfile(
  appDir: string,
  plan: DockerfilePlan,
  dir: string,
  more: string[] = [],
): Promise<string> {
  const file = join(dir, "Dockerfile.slipway");
  const text = await readFile(join(appDir, plan.file), "utf8");
  const lines = [...plan.extraLines, ...more];
  await writeFile(file, lines.length > 0 ? `${text}\n${lines.join("\n")}\n` : text);
  return file;
}

/** The plan's build args as podman flags. */
export function buildArgFlags(plan: DockerfilePlan): string[] {
  return Object.entries(plan.buildArgs).flatMap(([k, v]) => ["--build-arg", `${k}=${v}`]);
}

/** podman's `STEP n/m: …` lines and its final `Error: …` line, for a failure that names the step. */
class StepTracker {
  step = "";
  error = "";
  line = (line: string) => {
    const t = line.trim();
    if (/^STEP \d+\/\d+: /.test(t)) this.step = t;
    else if (t.startsWith("Error: ")) this.error = t;
  };
  /** `the Dockerfile failed at STEP 3/4: RUN false (exit code 1)`; podman's own words otherwise. */
  message(exit: string): string {
    const code = /exit status (\d+)/.exec(this.error)?.[1];
    if (this.step !== "" && code !== undefined)
      return `the Dockerfile failed at ${this.step} (exit code ${code})`;
    const said = this.error === "" ? "" : `: ${this.error.replace(/^Error: /, "")}`;
    return `podman build ${exit}${this.step === "" ? "" : ` at ${this.step}`}${said}`;
  }
}

/**
 * Builds a revision from its source's own Dockerfile with podman, outside the sandbox (podman
 * cannot run in bubblewrap), in the workspace's storage root under the build disk limit and the
 * caller's signal (the build time limit). The image is then moved into the engine's default store,
 * where image revisions run, and its record returned: it runs as a container revision.
 */
export async function buildFromDockerfile(b: DockerfileBuild): Promise<BuildRecord> {
  const engine = await b.containers.usable();
  if (engine?.name !== "podman")
    fail(b.log, "a Dockerfile is built with podman, which is not usable on this server");
  const key = b.workspaceId ?? b.deploymentId;
  const storage = workspaceStorage(b.dataDir, key);
  await mkdir(storage.root, { recursive: true });
  await mkdir(storage.runroot, { recursive: true });
  await recordStore(b.dataDir, b.deploymentId, key);
  const store = storeFlags(storage);
  // Both ids are plain tokens (the layout checked them).
  const ref = builtImageRef(b.deploymentId, b.revisionId);

  const file = await writeComposedDockerfile(b.appDir, b.plan, b.revisionDir);
  const buildArgs = buildArgFlags(b.plan);

  // podman's scratch space (a RUN step's rootfs is mounted there): per build, so one stopped past a
  // limit is found and ended by it (runc puts a RUN step in a session of its own, outside podman's group).
  const scratch = join(b.dataDir, "builds", "tmp", `${b.deploymentId}-${b.revisionId}`);
  await mkdir(scratch, { recursive: true });
  const steps = new StepTracker();
  const exceeded = () => buildDiskExceeded(b.diskLimitBytes);
  // The limit is on what this build adds: the store already holds the workspace's cached layers.
  const before = await diskUsage(storage.root);
  const limitBytes = before + b.diskLimitBytes;
  const limit = { dir: storage.root, limitBytes, signal: b.signal, exceeded, log: b.log };
  const buildEngine = { ...engine, env: { ...engine.env, TMPDIR: scratch } };
  let built = false;
  try {
    const result = await withDiskLimit(limit, (signal) =>
      podman(
        buildEngine,
        [
          ...store,
          "build",
          ...ULIMITS,
          ...runStepFlags(b.network),
          ...buildArgs,
          "--file",
          file,
          "--tag",
          ref,
          b.appDir,
        ],
        signal,
        (line) => {
          steps.line(line);
          b.log(line);
        },
      ),
    );
    if (result.code !== 0) fail(b.log, steps.message(describeExit(result)));
    built = true;
  } finally {
    await endRunSteps(engine, scratch);
    await rm(scratch, { recursive: true, force: true });
    if (!built) await repairStore(engine, storage, b.log);
  }

  // Into the engine's default store, where containers run: a push between stores copies only the
  // layers it lacks (save and load moved the whole image, base and cached layers included, each time).
  const target = `containers-storage:[${await defaultStore(engine)}]${ref}`;
  await must(b, engine, [...store, "push", "--quiet", ref, target], "push");
  await capStore(engine, storage, b.cacheCapBytes ?? DEFAULT_BUILD_CACHE_BYTES, b.log);
  const found = await inspectImage(engine, ref);
  if (found === undefined) fail(b.log, `the built image ${ref} is not in podman's store after loading it`);
  const version = imageVersion(ref, found);
  b.log(`Image ${ref} is ${found.id.replace(/^sha256:/, "").slice(0, 12)}; it runs as a container.`);
  return {
    version: 1,
    kind: "image",
    image: found.id,
    ref,
    imageVersion: version,
    healthcheck: b.plan.healthcheck,
    ...(b.plan.healthTimeoutS === undefined ? {} : { healthTimeoutS: b.plan.healthTimeoutS }),
    env: b.plan.env,
  };
}

/** runc's state of root's containers, where buildah's RUN steps are listed too. */
const RUNC_ROOT = "/run/runc";

/**
 * Ends the RUN steps a stopped podman left (their rootfs is under `scratch`), and unmounts what
 * they left mounted there, so removing `scratch` never reaches into a container's files.
 */
async function endRunSteps(engine: Engine, scratch: string): Promise<void> {
  let ids: string[] = [];
  try {
    ids = await readdir(RUNC_ROOT);
  } catch {
    // No runc state: nothing runs.
  }
  const quiet = { cwd: "/", env: engine.env, signal: new AbortController().signal, onLine: () => {} };
  for (const id of ids) {
    try {
      const state: unknown = JSON.parse(await readFile(join(RUNC_ROOT, id, "state.json"), "utf8"));
      const rootfs = (state as { config?: { rootfs?: unknown } }).config?.rootfs;
      if (typeof rootfs === "string" && rootfs.startsWith(`${scratch}/`))
        await run("runc", ["--root", RUNC_ROOT, "delete", "--force", id], quiet);
    } catch {
      // Gone meanwhile, or not a container's state.
    }
  }
  const mounts = (await readFile("/proc/self/mountinfo", "utf8"))
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((m) => m.startsWith(`${scratch}/`))
    .reverse();
  for (const m of mounts) await run("umount", ["--lazy", m], quiet).catch(() => {});
}

const defaultStores = new Map<string, Promise<string>>();

/** The engine's default store as containers-storage names it: `driver@graphroot+runroot`. */
function defaultStore(engine: Engine): Promise<string> {
  const key = `${engine.name}\0${JSON.stringify(engine.env)}`;
  let found = defaultStores.get(key);
  if (found === undefined) {
    found = (async () => {
      let text = "";
      const format = "{{.Store.GraphDriverName}}@{{.Store.GraphRoot}}+{{.Store.RunRoot}}";
      const signal = new AbortController().signal;
      const r = await run(engine.name, ["info", "--format", format], {
        cwd: "/",
        env: engine.env,
        signal,
        onLine: (line) => {
          if (line.trim()) text = line.trim();
        },
      });
      if (r.code !== 0 || !/^\w+@\/.+\+\/.+$/.test(text))
        throw new BuildError(`podman info did not name its default store (${describeExit(r)}): ${text}`);
      return text;
    })();
    defaultStores.set(key, found);
    found.catch(() => defaultStores.delete(key));
  }
  return found;
}

function fail(log: (line: string) => void, message: string): never {
  log(`error: ${message}`);
  throw new BuildError(message);
}

function podman(engine: Engine, args: string[], signal: AbortSignal, onLine: (line: string) => void) {
  onLine(`$ podman ${args.join(" ")}`);
  return run(engine.name, args, { cwd: "/", env: engine.env, signal, onLine });
}

async function must(b: DockerfileBuild, engine: Engine, args: string[], what: string): Promise<void> {
  let last = "";
  const result = await podman(engine, args, b.signal, (line) => {
    if (line.trim()) last = line.trim();
    b.log(line);
  });
  if (b.signal.aborted) throw abortError(b.signal);
  if (result.code !== 0) fail(b.log, `podman ${what} ${describeExit(result)}${last ? `: ${last}` : ""}`);
}
