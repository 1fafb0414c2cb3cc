import { createHash } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { type Engine, execEngine } from "./engine.ts";
import { detectIsolation } from "./isolation.ts";

/** Which engine runs image revisions: the first usable one, or exactly the one named. */
export type EngineChoice = "auto" | "podman" | "docker";

/**
 * What Slipway's podman reads instead of the system's containers.conf. Measured on cgroup v1 hosts
 * with a low hard `nofile`: without runc (crun is not installed) and without both ulimits below
 * the host's hard limits, `podman run` fails ("error setting rlimit type 7").
 */
export const CONTAINERS_CONF = `# Written by Slipway; rewritten at every start.
[engine]
runtime = "runc"

[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
`;

/** The server's own settings for reaching an engine, nothing else (no secrets of Slipway). */
function baseEngineEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH || "/usr/local/bin:/usr/bin:/bin" };
  // runc and iptables live in sbin on Debian; a server started without sbin on PATH still needs them.
  for (const dir of ["/usr/local/sbin", "/usr/sbin", "/sbin"]) {
    if (!env.PATH?.split(":").includes(dir)) env.PATH = `${env.PATH}:${dir}`;
  }
  for (const name of [
    "HOME",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CONFIG",
    "CONTAINER_HOST",
    "XDG_RUNTIME_DIR",
    "REGISTRY_AUTH_FILE",
  ]) {
    const value = process.env[name];
    if (value) env[name] = value;
  }
  return env;
}

/**
 * Finds the engine once per runtime: podman first (with Slipway's containers.conf under the data
 * dir), then docker, for `auto`; only the named one otherwise. `info` must succeed: the CLI alone
 * is not enough when the daemon or the storage does not answer. A failed answer is kept too.
 */
export class EngineFinder {
  private found: Promise<Engine | undefined> | undefined;
  /** Label value naming this data dir, so two Slipways on one machine never touch each other's containers. */
  readonly owner: string;

  constructor(
    private readonly dataDir: string,
    readonly choice: EngineChoice = "auto",
  ) {
    this.owner = createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 16);
  }

  get confPath(): string {
    return join(this.dataDir, "runtime", "containers.conf");
  }

  /** What `choice` allows, in the order tried; said in "no engine" messages. */
  get candidates(): ("podman" | "docker")[] {
    return this.choice === "auto" ? ["podman", "docker"] : [this.choice];
  }

  usable(): Promise<Engine | undefined> {
    this.found ??= this.detect();
    return this.found;
  }

  private async detect(): Promise<Engine | undefined> {
    for (const name of this.candidates) {
      const env = baseEngineEnv();
      if (name === "podman") {
        await mkdir(join(this.dataDir, "runtime"), { recursive: true });
        await writeFile(this.confPath, CONTAINERS_CONF);
        env.CONTAINERS_CONF = this.confPath;
      }
      const engine: Engine = { name, env };
      if ((await execEngine(engine, ["info"], 15_000)).ok) {
        engine.isolation = await detectIsolation(engine);
        return engine;
      }
    }
    return undefined;
  }
}
