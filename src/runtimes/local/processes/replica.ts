// Why over 300 lines: one replica lifecycle (spawn, health, supervision, stop) that is easier to follow whole.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { DeployError } from "../../interface.ts";
import type { Wrap } from "../../shared/exec.ts";
import { abortError } from "../../shared/exec.ts";
import { forEachLine, type Tail } from "../../shared/lines.ts";
import { killGroup } from "../../shared/process-group.ts";
import {
  appPort,
  type ContainerLaunch,
  containerCommand,
  containerPidFinder,
  stopContainer,
} from "../containers/container.ts";
import { createMemoryCgroup, type MemoryCgroup } from "./cgroup.ts";
import { type CpuCgroup, createCpuCgroup } from "./cpu-cgroup.ts";
import { type HealthResult, waitHealthy } from "./health.ts";
import { groupRssBytes } from "./memory.ts";
import type { ProcessRecord } from "./orphans.ts";
import { PortCheck } from "./port-check.ts";
import { releasePort, takePort } from "./ports.ts";

/**
 * How a replica is started: a shell command in the revision's directory (confined by `wrap`, the
 * sandbox), or a container image.
 */
export type Launch =
  | {
      kind: "process";
      command: string;
      wrap: Wrap;
      /** Over the app's environment for this process type (NODE_OPTIONS with its heap cap). */
      env?: Record<string, string>;
      dataLimitBytes?: number;
      cpus?: number;
      /** The address its deployment's network namespace has (the edge connects there); unset: 127.0.0.1. */
      host?: string;
    }
  | ({ kind: "container" } & ContainerLaunch);

export interface ReplicaOptions {
  /** "web.1", "worker.1", … in log lines. */
  label: string;
  launch: Launch;
  /** The app's environment without PORT (set per start). */
  env: Record<string, string>;
  /** GET path that must answer below 500; undefined (queue workers): running once it stays up. */
  healthPath: string | undefined;
  healthTimeoutMs: number;
  stopGraceMs: number;
  /** First restart delay after a crash; doubles per consecutive crash up to MAX_BACKOFF_MS. */
  restartBackoffMs: number;
  log: (line: string) => void;
  /** Keeps the last lines the app printed, for the end of a failed deploy's log. */
  tail?: Tail;
  record: ProcessRecord;
  /** Told of each crash restart (the console's restart chart). */
  onRestart?: () => void;
}

/** A queue worker (no health check) counts as started once it has stayed up this long. */
const WORKER_SETTLE_MS = 1000;

const MAX_BACKOFF_MS = 30_000;
/** A process that ran this long before crashing starts the back-off over. */
const STABLE_MS = 30_000;

type State = "new" | "starting" | "ready" | "waiting" | "stopped";

/**
 * One running copy of an app: its process (group), its port, the requests it is serving, and —
 * once supervised — restarts with exponential back-off when it crashes.
 */
export class Replica {
  port = 0;
  private state: State = "new";
  private child: ChildProcess | undefined;
  private exitInfo: string | undefined;
  private closed: Promise<void> = Promise.resolve();
  /** The replica's memory cgroup (process launches with a limit, where the kernel lets us). */
  private cgroup: Promise<MemoryCgroup | undefined> | undefined;
  /** Its cpu cgroup (process launches with `cpus`, where the cpu controller is writable). */
  private cpuGroup: Promise<CpuCgroup | undefined> | undefined;
  private cleanup: Promise<void> | undefined;
  private startedAt = 0;
  private crashes = 0;
  private supervised = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private restartAbort: AbortController | undefined;
  private inflightCount = 0;
  private idleWaiters: (() => void)[] = [];
  private restartCount = 0;
  /** Pid-free and stable across restarts: what the processes listing calls it. */
  readonly id = randomBytes(5).toString("hex");

  constructor(private readonly o: ReplicaOptions) {}

  /** What the processes listing shows of it: its state, restarts, start time and memory. */
  async info(): Promise<{
    state: "starting" | "running" | "restarting" | "stopped";
    restarts: number;
    startedAt: number | undefined;
    memoryBytes: number | undefined;
  }> {
    const state =
      this.state === "ready"
        ? "running"
        : this.state === "waiting"
          ? "restarting"
          : this.state === "stopped"
            ? "stopped"
            : "starting";
    const pid = this.child?.pid;
    const alive = pid !== undefined && this.child?.exitCode === null && this.child.signalCode === null;
    const memoryBytes = alive && this.o.launch.kind === "process" ? await groupRssBytes(pid) : undefined;
    return {
      state,
      restarts: this.restartCount,
      startedAt: this.startedAt === 0 ? undefined : this.startedAt,
      memoryBytes,
    };
  }

  get label(): string {
    return this.o.label;
  }

  get ready(): boolean {
    return this.state === "ready";
  }

  /** Where the edge and the health check connect (with `port`). */
  get host(): string {
    const { launch } = this.o;
    return (launch.kind === "process" ? launch.host : undefined) ?? "127.0.0.1";
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get inflight(): number {
    return this.inflightCount;
  }

  /** Starts the process and waits until it is healthy; on failure it is stopped and DeployError thrown. */
  async start(signal: AbortSignal): Promise<void> {
    const result = await this.launch(signal);
    if (signal.aborted) {
      await this.stop();
      throw abortError(signal);
    }
    if (!result.ok || this.stopped) {
      await this.stop();
      throw new DeployError(`process ${this.o.label} ${result.ok ? "was stopped" : result.reason}`);
    }
    this.state = "ready";
  }

  /** From now on a crash is answered with a restart instead of being final. */
  supervise(): void {
    this.supervised = true;
    // It may have crashed between becoming healthy and being put to work.
    if (this.state === "waiting" && this.restartTimer === undefined) this.scheduleRestart();
  }

  acquire(): void {
    this.inflightCount++;
  }

  release(): void {
    this.inflightCount--;
    if (this.inflightCount === 0) for (const wake of this.idleWaiters.splice(0)) wake();
  }

  /** Resolves when no proxied request is in flight, or after `timeoutMs`. */
  whenIdle(timeoutMs: number): Promise<void> {
    if (this.inflightCount === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Ends the process group (SIGTERM, then SIGKILL after the grace period). Idempotent. */
  async stop(): Promise<void> {
    this.state = "stopped";
    clearTimeout(this.restartTimer);
    this.restartAbort?.abort();
    await this.end();
    const cgroup = await this.cgroup;
    this.cgroup = undefined;
    await cgroup?.remove().catch(() => undefined);
    const cpuGroup = await this.cpuGroup;
    this.cpuGroup = undefined;
    await cpuGroup?.remove().catch(() => undefined);
  }

  private async launch(signal: AbortSignal): Promise<HealthResult> {
    if (this.stopped) return { ok: false, reason: "was stopped" };
    this.state = "starting";
    const { launch } = this.o;
    if (launch.kind === "process" && launch.dataLimitBytes !== undefined && this.cgroup === undefined) {
      // One group per replica, kept across its restarts; undefined where cgroups are not writable.
      this.cgroup = createMemoryCgroup(`app-${randomBytes(6).toString("hex")}`, launch.dataLimitBytes).catch(
        () => undefined,
      );
    }
    const cgroup = await this.cgroup;
    if (launch.kind === "process" && launch.cpus !== undefined && this.cpuGroup === undefined) {
      const cpus = launch.cpus;
      this.cpuGroup = createCpuCgroup(`cpu-${randomBytes(6).toString("hex")}`, cpus, cgroup).catch(
        () => undefined,
      );
    }
    const cpuProcs = (await this.cpuGroup)?.procsPath;
    const joins = [cgroup?.procsPath, cpuProcs].filter((p): p is string => p !== undefined);
    const port = await takePort();
    // Stopped while a port was found: spawning now would leave a process nobody ends.
    if (this.stopped || signal.aborted) {
      releasePort(port);
      return { ok: false, reason: "was stopped" };
    }
    this.port = port;
    this.spawnChild(joins);
    if (this.o.healthPath === undefined) return this.settle(signal);
    return waitHealthy({
      host: this.host,
      port: this.port,
      path: this.o.healthPath,
      timeoutMs: this.o.healthTimeoutMs,
      signal,
      exited: () => this.exitInfo,
      ports: this.portCheck(),
    });
  }

  /** What this start's processes listen on: a process's own tree, or the container's. */
  private portCheck(): PortCheck {
    const { launch } = this.o;
    if (launch.kind === "process") {
      const pid = this.child?.pid;
      return new PortCheck({ port: this.port, origin: "loopback", root: async () => pid });
    }
    return new PortCheck({
      port: appPort(launch, this.port),
      origin: launch.network === "host" ? "loopback" : "bridge",
      root: containerPidFinder(launch),
    });
  }

  /** A queue worker: started when it has not exited within a moment (or the health timeout). */
  private async settle(signal: AbortSignal): Promise<HealthResult> {
    const deadline = Date.now() + Math.min(WORKER_SETTLE_MS, this.o.healthTimeoutMs);
    while (Date.now() < deadline) {
      if (signal.aborted) return { ok: false, reason: "interrupted" };
      const exit = this.exitInfo;
      if (exit !== undefined) return { ok: false, reason: exit };
      await sleep(50);
    }
    return this.exitInfo === undefined ? { ok: true } : { ok: false, reason: this.exitInfo };
  }

  /** Starts the process; a process launch joins the cgroups whose `cgroup.procs` are in `joins`. */
  private spawnChild(joins: string[]): void {
    const { launch } = this.o;
    let file: string;
    let args: string[];
    let env: Record<string, string>;
    let cwd: string | undefined;
    if (launch.kind === "process") {
      env = { ...this.o.env, ...launch.env, PORT: String(this.port) };
      const argv =
        launch.dataLimitBytes === undefined
          ? ["sh", "-c", launch.command]
          : // ulimit in a wrapper shell, so the limit binds the user's command and all it starts.
            [
              "sh",
              "-c",
              'ulimit -d "$1" && exec sh -c "$2"',
              "sh",
              String(Math.ceil(launch.dataLimitBytes / 1024)),
              launch.command,
            ];
      ({ file, args, cwd } = launch.wrap(argv));
      if (joins.length > 0) {
        // Joined by a host-side shell that then becomes the sandbox: the limits bind from the first
        // instruction, and the recorded pid stays the group leader's.
        const join = joins.map((_, i) => `echo $$ > "$${i + 1}"`).join(" && ");
        args = ["-c", `${join} && shift ${joins.length} && exec "$@"`, "sh", ...joins, file, ...args];
        file = "sh";
      }
    } else {
      ({ file, args, env } = containerCommand(launch, this.port, this.o.env));
    }
    this.exitInfo = undefined;
    this.cleanup = undefined;
    this.startedAt = Date.now();
    const child = spawn(file, args, { cwd, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    const pid = child.pid;
    if (pid !== undefined) this.o.record.add(pid);
    const output = (line: string) => {
      this.o.tail?.push(line);
      this.o.log(line);
    };
    forEachLine(child.stdout, output);
    forEachLine(child.stderr, output);
    let settle: () => void = () => {};
    this.closed = new Promise((resolve) => {
      settle = resolve;
    });
    child.once("error", (err) => {
      // Spawning itself failed (no such program): there is no process to wait for.
      if (pid === undefined) this.onClosed(child, `could not be started: ${err.message}`, settle);
    });
    // Leftovers of the group would keep the pipes (and so "close") open: end them with the leader.
    child.once("exit", () => {
      if (pid !== undefined) this.cleanup ??= killGroup(pid, this.o.stopGraceMs);
    });
    child.once("close", (code, sig) => {
      const how = sig ? `was killed by ${sig}` : `exited with code ${code}`;
      this.onClosed(child, how, settle);
    });
  }

  private onClosed(child: ChildProcess, how: string, settle: () => void): void {
    if (child.pid !== undefined) this.o.record.remove(child.pid);
    settle();
    if (child !== this.child) return;
    this.exitInfo = how;
    releasePort(this.port);
    if (this.state === "ready") {
      this.state = "waiting";
      if (this.supervised) this.scheduleRestart();
    }
  }

  private scheduleRestart(): void {
    if (Date.now() - this.startedAt >= STABLE_MS) this.crashes = 0;
    const delay = Math.min(MAX_BACKOFF_MS, this.o.restartBackoffMs * 2 ** this.crashes);
    this.crashes++;
    this.o.onRestart?.();
    this.o.log(`slipway: process ${this.o.label} ${this.exitInfo ?? "stopped"}; restarting in ${delay} ms`);
    this.state = "waiting";
    this.restartTimer = setTimeout(() => void this.restart(), delay);
  }

  private get stopped(): boolean {
    return this.state === "stopped";
  }

  private async restart(): Promise<void> {
    if (this.stopped) return;
    const abort = new AbortController();
    this.restartAbort = abort;
    this.restartCount++;
    await this.end();
    if (this.stopped) return;
    const result = await this.launch(abort.signal);
    if (this.stopped || abort.signal.aborted) return;
    if (result.ok) {
      this.state = "ready";
      this.o.log(`slipway: process ${this.o.label} is serving again`);
      return;
    }
    this.exitInfo = result.reason;
    await this.end();
    if (!this.stopped) this.scheduleRestart();
  }

  /** Kills whatever runs now and waits until its pipes are closed. */
  private async end(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    const launch = this.o.launch;
    if (launch.kind === "container") await stopContainer(launch);
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      this.cleanup ??= killGroup(child.pid, this.o.stopGraceMs);
    }
    await this.cleanup;
    // A process that left the group (setsid) could hold the pipes open forever; do not wait on it.
    await Promise.race([this.closed, sleep(this.o.stopGraceMs + 2000)]);
  }
}
