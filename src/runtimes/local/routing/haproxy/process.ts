import { type ChildProcess, execFile, spawn } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { type HaproxyApi, HaproxyError } from "./api.ts";
import { MASTER_SOCKET, PID_FILE } from "./config.ts";

/**
 * One HAProxy in master-worker mode, run in the foreground as Slipway's child. A reload (SIGUSR2 to
 * the master) starts a worker with the configuration file as it is then; the old worker finishes
 * its connections (at most `hard-stop-after`) while the new one takes new ones.
 */

const CONF = "haproxy.cfg";

function run(binary: string, args: string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(binary, args, { timeout: 10_000 }, (err, stdout, stderr) =>
      resolve({ ok: err === null, output: `${stdout}${stderr}`.trim() }),
    );
  });
}

async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  return stat !== "" && stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
}

export class HaproxyProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(
    private readonly binary: string,
    private readonly dir: string,
    private readonly api: HaproxyApi,
    /** Told when the master exits by itself, with what it printed. */
    private readonly onCrash: (why: string) => void,
  ) {}

  get running(): boolean {
    return this.child?.exitCode === null && this.child.pid !== undefined;
  }

  /** `haproxy -v`'s version, or why the binary cannot be run. */
  static async version(binary: string): Promise<string> {
    const r = await run(binary, ["-v"]);
    const version = /version (\S+)/.exec(r.output)?.[1];
    if (!r.ok || version === undefined)
      throw new HaproxyError(`${binary} -v failed: ${r.output || "not found"}`);
    return version;
  }

  /** Checks a configuration (`haproxy -c`) and makes it the one the next start or reload reads. */
  async write(config: string): Promise<void> {
    const next = join(this.dir, `${CONF}.next`);
    await writeFile(next, config);
    const r = await run(this.binary, ["-c", "-q", "-f", next]);
    if (!r.ok) {
      await rm(next, { force: true });
      throw new HaproxyError(`haproxy refused its configuration: ${r.output}`);
    }
    await writeFile(join(this.dir, CONF), config);
    await rm(next, { force: true });
  }

  /** Starts the master on the written configuration; resolves once a worker answers the API. */
  async start(): Promise<void> {
    await this.endLeftover();
    let output = "";
    const child = spawn(
      this.binary,
      ["-W", "-db", "-f", join(this.dir, CONF), "-S", join(this.dir, MASTER_SOCKET)],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const keep = (chunk: Buffer) => {
      output = `${output}${chunk.toString("utf8")}`.slice(-4000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    this.child = child;
    this.stopping = false;
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        if (!this.stopping) this.onCrash(`haproxy exited (${signal ?? `code ${code}`}): ${output.trim()}`);
        resolve();
      });
      child.once("error", (err) => {
        output += err.message;
        resolve();
      });
    });
    const deadline = Date.now() + 10_000;
    while (this.running && Date.now() < deadline) {
      if (await this.api.workerPid().catch(() => undefined)) return;
      await sleep(20);
    }
    if (!this.running) {
      await this.exited;
      throw new HaproxyError(`haproxy did not start: ${output.trim() || "it exited at once"}`);
    }
    await this.stop();
    throw new HaproxyError(`haproxy's worker did not answer within 10 s: ${output.trim()}`);
  }

  /** Reloads the written configuration; resolves once the new worker answers the API. */
  async reload(): Promise<void> {
    const master = this.child?.pid;
    if (!this.running || master === undefined) throw new HaproxyError("haproxy is not running");
    const before = await this.api.workerPid().catch(() => 0);
    process.kill(master, "SIGUSR2");
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      await sleep(20);
      const now = await this.api.workerPid().catch(() => 0);
      if (now !== 0 && now !== before) return;
    }
    throw new HaproxyError("haproxy did not reload within 10 s");
  }

  /** Stops at once (SIGTERM): the apps port's clients see their connections close. */
  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (child?.pid !== undefined && child.exitCode === null) child.kill("SIGTERM");
    const done = await Promise.race([this.exited.then(() => true), sleep(5000).then(() => false)]);
    if (!done) child?.kill("SIGKILL");
    await this.exited;
    this.child = undefined;
  }

  /** A master a killed Slipway left (its pid file names a worker; the master is its parent). */
  private async endLeftover(): Promise<void> {
    const text = await readFile(join(this.dir, PID_FILE), "utf8").catch(() => "");
    for (const pid of text
      .split(/\s+/)
      .filter((p) => /^\d+$/.test(p))
      .map(Number)) {
      if (pid <= 1 || !(await alive(pid))) continue;
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).split("\0");
      if (!cmdline[0]?.endsWith("haproxy") || !cmdline.includes(join(this.dir, CONF))) continue;
      process.kill(pid, "SIGTERM");
      for (let i = 0; i < 250 && (await alive(pid)); i++) await sleep(20);
    }
  }
}
