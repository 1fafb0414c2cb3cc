import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { DeployError } from "../../interface.ts";
import type { Wrap } from "../../shared/exec.ts";
import { forEachLine } from "../../shared/lines.ts";
import { killGroup } from "../../shared/process-group.ts";
import { type CpuCgroup, createCpuCgroup } from "../processes/cpu-cgroup.ts";
import type { ProcessRecord } from "../processes/orphans.ts";
import { releasePort, takePort } from "../processes/ports.ts";
import { redisCommands } from "./resp.ts";

/**
 * A deployment's own Redis (docs/local-runtime.md, "Redis per deployment"): one `redis-server` process in the
 * deployment's sandbox, as its uid, its data in the deployment's directory, on a loopback port with
 * a password. Its configuration goes in on stdin (`redis-server -`), so the password is on no argv
 * and in no file. It is started before the app's processes, kept across revisions, restarted with
 * back-off when it crashes, and stopped by teardown (which then removes its data).
 */

export interface RedisOptions {
  /** Host path of `redis-server` (SLIPWAY_REDIS_SERVER). */
  binary: string;
  /** Confines the server to the deployment's sandbox, with the Redis directory at `dataDir`. */
  wrap: Wrap;
  env: Record<string, string>;
  /** The data directory as the server sees it (/app in the sandbox). */
  dataDir: string;
  password: string;
  maxMemoryMb: number | undefined;
  /** redis_cpu_limit, applied through a cpu cgroup where the controller is writable. */
  cpus: number | undefined;
  record: ProcessRecord;
  stopGraceMs: number;
  startTimeoutMs: number;
  log: (line: string) => void;
  /** Where Slipway reaches it: the deployment's namespace address (its 127.0.0.1 there); default 127.0.0.1. */
  host?: string;
}

const MAX_BACKOFF_MS = 30_000;

/** Why a deploy that needs Redis cannot have it on this machine; undefined when it can. */
export async function missingRedis(binary: string): Promise<string | undefined> {
  try {
    await access(binary, constants.X_OK);
    return undefined;
  } catch {
    return `this deployment needs Redis, but redis-server is not installed on this machine (no executable at ${binary}; SLIPWAY_REDIS_SERVER names it). The operator must install it (Debian: apt-get install redis-server)`;
  }
}

/** The Redis configuration (redis.conf syntax) of a deployment's server. */
export function redisConfig(
  o: Pick<RedisOptions, "dataDir" | "password" | "maxMemoryMb">,
  port: number,
): string {
  return [
    "bind 127.0.0.1",
    `port ${port}`,
    "protected-mode yes",
    "daemonize no",
    'logfile ""',
    `dir "${o.dataDir}"`,
    `requirepass "${o.password}"`,
    `maxmemory ${o.maxMemoryMb === undefined ? 0 : `${o.maxMemoryMb}mb`}`,
    // A job queue must not lose entries silently: over the limit, writes fail instead.
    "maxmemory-policy noeviction",
    "appendonly yes",
    "appendfsync everysec",
    "",
  ].join("\n");
}

export class RedisServer {
  port = 0;
  private child: ChildProcess | undefined;
  private stopped = false;
  private crashes = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private exited: Promise<void> = Promise.resolve();
  private cpuGroup: CpuCgroup | undefined;

  constructor(private o: RedisOptions) {}

  /** What the app gets as REDIS_URI. */
  get uri(): string {
    return `redis://:${encodeURIComponent(this.o.password)}@127.0.0.1:${this.port}/0`;
  }

  /** Where Slipway (not the app) reaches it: the deployment's namespace address, or 127.0.0.1. */
  get host(): string {
    return this.o.host ?? "127.0.0.1";
  }

  get running(): boolean {
    return this.child !== undefined && !this.stopped;
  }

  /** Starts the server and waits until it answers PING; DeployError with its reason otherwise. */
  async start(): Promise<void> {
    if (this.port === 0) this.port = await takePort();
    if (this.o.cpus !== undefined && this.cpuGroup === undefined) {
      this.cpuGroup = await createCpuCgroup(`redis-${this.port}-${process.pid}`, this.o.cpus).catch(
        () => undefined,
      );
    }
    const reason = await this.launch();
    if (reason !== undefined) {
      await this.stop();
      throw new DeployError(`Redis did not start: ${reason}`);
    }
  }

  /** Its lines go to `log` from now on (the deploy log of the revision now using it). */
  adopt(log: (line: string) => void): void {
    this.o = { ...this.o, log };
  }

  /** Applies a new memory limit to the running server (a new revision's redis_memory_limit_mb). */
  async setMaxMemory(mb: number | undefined): Promise<void> {
    if (mb === this.o.maxMemoryMb) return;
    this.o = { ...this.o, maxMemoryMb: mb };
    const value = mb === undefined ? "0" : `${mb}mb`;
    const [reply] = await redisCommands(
      this.port,
      this.o.password,
      [["CONFIG", "SET", "maxmemory", value]],
      2000,
      this.o.host,
    );
    if (reply instanceof Error) throw new DeployError(`Redis refused the new memory limit: ${reply.message}`);
    this.o.log(`slipway: redis maxmemory is now ${mb === undefined ? "unlimited" : `${mb} MB`}`);
  }

  /** Stops the server (SIGTERM: it writes its data; SIGKILL after the grace period). Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      await killGroup(child.pid, this.o.stopGraceMs);
    }
    await Promise.race([this.exited, sleep(this.o.stopGraceMs + 2000)]);
    if (this.port !== 0) releasePort(this.port);
    await this.cpuGroup?.remove().catch(() => undefined);
    this.cpuGroup = undefined;
  }

  /** Spawns the server and waits for it; the reason it failed, or undefined once it answers. */
  private async launch(): Promise<string | undefined> {
    let { file, args, cwd } = this.o.wrap([this.o.binary, "-"]);
    const procs = this.cpuGroup?.procsPath;
    if (procs !== undefined) {
      // Joined by a host-side shell that then becomes the sandbox, as processes/replica.ts does.
      args = ["-c", 'echo $$ > "$1" && shift && exec "$@"', "sh", procs, file, ...args];
      file = "sh";
    }
    const child = spawn(file, args, {
      cwd,
      env: this.o.env,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
    const pid = child.pid;
    if (pid !== undefined) this.o.record.add(pid);
    const last: string[] = [];
    const onLine = (line: string) => {
      last.push(line);
      if (last.length > 5) last.shift();
      this.o.log(`redis: ${line}`);
    };
    forEachLine(child.stdout, onLine);
    forEachLine(child.stderr, onLine);
    let exit: string | undefined;
    this.exited = new Promise((resolve) => {
      child.once("error", (err) => {
        exit ??= `could not be started: ${err.message}`;
        if (pid === undefined) resolve();
      });
      child.once("close", (code, sig) => {
        exit ??= sig ? `was killed by ${sig}` : `exited with code ${code}`;
        if (pid !== undefined) this.o.record.remove(pid);
        resolve();
        if (child === this.child && !this.stopped) this.scheduleRestart(exit);
      });
    });
    child.stdin.on("error", () => {});
    child.stdin.end(redisConfig(this.o, this.port));
    const deadline = Date.now() + this.o.startTimeoutMs;
    while (Date.now() < deadline) {
      if (exit !== undefined) return `redis-server ${exit}${last.length ? ` (${last.at(-1)})` : ""}`;
      if (this.stopped) return "it was stopped";
      const [pong] = await redisCommands(this.port, this.o.password, [["PING"]], 1000, this.o.host).catch(
        () => [undefined],
      );
      if (pong === "PONG") return undefined;
      await sleep(50);
    }
    return `it did not answer within ${this.o.startTimeoutMs} ms`;
  }

  private scheduleRestart(how: string): void {
    const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** this.crashes);
    this.crashes++;
    this.o.log(`slipway: redis ${how}; restarting in ${delay} ms`);
    this.restartTimer = setTimeout(() => {
      void this.launch().then((reason) => {
        if (reason === undefined) {
          this.crashes = 0;
          this.o.log("slipway: redis is serving again");
        }
      });
    }, delay);
  }
}
