// Why over 300 lines: the front's state (slots, servers, hosts) and the one sync that changes it
// read best together; config, API, process and log are in their own files.
import { execFile } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { RuntimeLogger } from "../../options.ts";
import { recordRequest } from "../request-metrics.ts";
import type { AppsRouter, RouteSnapshot } from "../router.ts";
import { HaproxyApi, HaproxyError } from "./api.ts";
import {
  ADMIN_SOCKET,
  type HaproxyConfig,
  HOSTS_MAP,
  renderHaproxyConfig,
  renderHostsMap,
  SERVERS_PER_SLOT,
} from "./config.ts";
import { HaproxyProcess } from "./process.ts";
import { type LoggedRequest, RequestLog } from "./request-log.ts";

/**
 * The apps edge's HAProxy front (docs/edge.md). HAProxy owns the public apps port; each deployment
 * whose revision has ready processes has a backend (a slot) with those processes as servers, and
 * its hosts map to it. The router's table is compared with the front's state every `syncMs` and
 * the difference applied through the runtime API, without a reload: a new revision's processes
 * are added, then the old ones drained (no new request reaches them; those in flight finish); a
 * reload happens only when every slot is taken. In-flight counts come from HAProxy's statistics
 * and requests (metrics, last request) from its request log.
 */

export interface FrontOptions {
  binary: string;
  /** `<data dir>/edge/haproxy`. */
  dir: string;
  listen: { host: string; port: number };
  /** `auto` or a count of HAProxy threads. */
  workers: string;
  drainMs: number;
  logger: RuntimeLogger;
  router: AppsRouter;
  /** How often the router's table is compared with HAProxy's (default 250 ms). */
  syncMs?: number;
}

interface Server {
  name: string;
  draining: boolean;
  /** Requests in flight at the last statistics read. */
  current: number;
}

interface Slot {
  name: string;
  /** The deployment it serves (kept while its servers drain, so a woken one gets it back). */
  deployment: string | undefined;
  hosts: Set<string>;
  /** By address. */
  servers: Map<string, Server>;
}

/** A declared server of the slot no process uses (`r1` … `r<SERVERS_PER_SLOT>`). */
function freeServer(slot: Slot): string | undefined {
  const used = new Set([...slot.servers.values()].map((r) => r.name));
  for (let i = 1; i <= SERVERS_PER_SLOT; i++) if (!used.has(`r${i}`)) return `r${i}`;
  return undefined;
}

const FIRST_SLOTS = 16;

function uidExists(user: string): Promise<boolean> {
  return new Promise((resolve) => execFile("id", ["-u", user], (err) => resolve(err === null)));
}

/** HAProxy needs two descriptors a connection: its maxconn follows this process's hard limit. */
async function maxconnFromLimits(): Promise<number> {
  const limits = await readFile("/proc/self/limits", "utf8");
  const hard = Number(/^Max open files\s+\S+\s+(\d+)/m.exec(limits)?.[1] ?? 4096);
  // Room for the listeners, the log, and every declared server with its health check.
  return Math.max(256, Math.min(100_000, Math.floor((hard - 4000) / 2)));
}

export class HaproxyFront {
  private readonly api: HaproxyApi;
  private readonly haproxy: HaproxyProcess;
  private readonly log: RequestLog;
  private slots: Slot[] = [];
  /** The same slots by name: the request log looks one up for every request. */
  private readonly slotNamed = new Map<string, Slot>();
  private base: Omit<HaproxyConfig, "slots"> | undefined;
  private syncing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private restarts = 0;

  constructor(private readonly o: FrontOptions) {
    this.api = new HaproxyApi(join(o.dir, ADMIN_SOCKET));
    this.haproxy = new HaproxyProcess(o.binary, o.dir, this.api, (why) => this.crashed(why));
    this.log = new RequestLog(
      join(o.dir, ADMIN_SOCKET),
      () => this.api.workerPid(),
      (r) => this.logged(r),
    );
  }

  /** Starts HAProxy in front of the Node edge on `edgePort`; throws HaproxyError when it cannot. */
  async start(edgePort: number): Promise<void> {
    const version = await HaproxyProcess.version(this.o.binary);
    await mkdir(this.o.dir, { recursive: true, mode: 0o700 });
    const root = process.getuid?.() === 0;
    const user = root && (await uidExists("haproxy")) ? "haproxy" : "nobody";
    this.base = {
      dir: this.o.dir,
      listen: this.o.listen,
      edgePort,
      maxconn: await maxconnFromLimits(),
      threads: this.o.workers,
      user: root ? { user, group: user === "haproxy" ? "haproxy" : "nogroup" } : undefined,
      hardStopAfterS: 3600,
    };
    this.slots = [];
    this.slotNamed.clear();
    this.grow(FIRST_SLOTS);
    await this.writeState();
    await this.haproxy.start();
    await this.log.follow();
    this.o.logger.info(
      { haproxy: version, port: this.o.listen.port, edgePort },
      "apps edge: HAProxy serves the apps port in front of the Node edge",
    );
    this.timer = setInterval(() => this.tick(), this.o.syncMs ?? 250);
    this.timer.unref();
  }

  /** Settles once HAProxy routes as the router does now (a switch has happened there too). */
  routed(): Promise<void> {
    return this.sync();
  }

  /**
   * Settles once HAProxy routes as the router does now and the servers it took out of the
   * rotation have no request in flight (at most the drain timeout).
   */
  async settled(): Promise<void> {
    await this.sync();
    const deadline = Date.now() + this.o.drainMs;
    while (!this.closed && Date.now() < deadline) {
      await this.readStats();
      if (this.slots.every((s) => [...s.servers.values()].every((r) => !r.draining || r.current === 0)))
        return;
      await sleep(25);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.syncing.catch(() => undefined);
    this.log.close();
    await this.haproxy.stop();
  }

  private tick(): void {
    void this.sync()
      .then(() => this.readStats())
      .catch((err: unknown) => {
        if (!this.closed) this.o.logger.warn({ err }, "apps edge: syncing HAProxy failed; retrying");
      });
  }

  /** One sync at a time; each call gets one that starts after it was made. */
  private sync(): Promise<void> {
    const next = this.syncing
      .catch(() => undefined)
      .then(() => (this.closed || !this.haproxy.running ? undefined : this.apply(this.o.router.snapshot())));
    this.syncing = next;
    return next;
  }

  /** Brings HAProxy to `wanted`: new servers first, then hosts, then the old servers drain. */
  private async apply(wanted: RouteSnapshot[]): Promise<void> {
    const byName = new Map(wanted.map((w) => [w.name, w]));
    const unassigned = wanted.filter((w) => !this.slots.some((s) => s.deployment === w.name));
    const free = this.slots.filter((s) => s.deployment === undefined);
    if (unassigned.length > free.length) {
      this.grow(Math.max(this.slots.length, unassigned.length - free.length));
      await this.writeState();
      await this.haproxy.reload();
      await this.log.follow();
    }
    for (const w of unassigned) {
      const slot = this.slots.find((s) => s.deployment === undefined);
      if (slot !== undefined) slot.deployment = w.name;
    }
    const mapFile = join(this.o.dir, HOSTS_MAP);
    for (const slot of this.slots) {
      const w = slot.deployment === undefined ? undefined : byName.get(slot.deployment);
      const servers = new Set(w?.servers ?? []);
      const hosts = new Set(w?.hosts ?? []);
      for (const address of servers) {
        const known = slot.servers.get(address);
        if (known !== undefined && !known.draining) continue;
        if (known !== undefined) {
          // The same address again while it drains (a process on a reused port): a fresh server.
          await this.removeServer(slot, address, known);
        }
        const name = freeServer(slot);
        if (name === undefined) {
          this.o.logger.warn(
            { slot: slot.name, address },
            "apps edge: a HAProxy slot has no server left; not added",
          );
          continue;
        }
        await this.api.useServer(slot.name, name, address);
        slot.servers.set(address, { name, draining: false, current: 0 });
      }
      for (const host of hosts)
        if (!slot.hosts.has(host)) {
          await this.api.setMap(mapFile, host, slot.name);
          slot.hosts.add(host);
        }
      for (const host of [...slot.hosts])
        if (!hosts.has(host)) {
          await this.api.delMap(mapFile, host);
          slot.hosts.delete(host);
        }
      for (const [address, server] of slot.servers) {
        if (servers.has(address)) continue;
        if (!server.draining) {
          await this.api.drainServer(slot.name, server.name);
          server.draining = true;
          server.current = Number.POSITIVE_INFINITY;
        } else if (server.current === 0) await this.removeServer(slot, address, server);
      }
      if (w === undefined && slot.servers.size === 0 && slot.hosts.size === 0) slot.deployment = undefined;
    }
  }

  private async removeServer(slot: Slot, address: string, server: Server): Promise<void> {
    await this.api.releaseServer(slot.name, server.name);
    slot.servers.delete(address);
  }

  /** Requests in flight per server and per deployment (the autoscaler's traffic). */
  private async readStats(): Promise<void> {
    if (!this.haproxy.running) return;
    const stats = await this.api.servers();
    const bySlot = new Map<string, number>();
    for (const slot of this.slots) for (const server of slot.servers.values()) server.current = 0;
    for (const row of stats) {
      const slot = this.slotNamed.get(row.backend);
      const server =
        slot === undefined ? undefined : [...slot.servers.values()].find((r) => r.name === row.server);
      if (server === undefined) continue;
      server.current = row.current;
      bySlot.set(row.backend, (bySlot.get(row.backend) ?? 0) + row.current);
    }
    for (const slot of this.slots) {
      if (slot.deployment === undefined) continue;
      this.o.router.trafficOf(slot.deployment)?.setExternal(bySlot.get(slot.name) ?? 0);
    }
  }

  private logged(r: LoggedRequest): void {
    const name = this.slotNamed.get(r.slot)?.deployment;
    if (name === undefined) return;
    recordRequest(name, r.ms, r.status);
    this.o.router.trafficOf(name)?.touch(Date.now());
  }

  private grow(count: number): void {
    const start = this.slots.length;
    for (let i = start; i < start + count; i++) {
      const slot: Slot = { name: `s${i}`, deployment: undefined, hosts: new Set(), servers: new Map() };
      this.slots.push(slot);
      this.slotNamed.set(slot.name, slot);
    }
  }

  /** The configuration and hosts map of the state now: what a reload or a restart starts from. */
  private async writeState(): Promise<void> {
    if (this.base === undefined) throw new HaproxyError("the HAProxy front has not started");
    const entries: [string, string][] = this.slots.flatMap((s) =>
      [...s.hosts].map((h): [string, string] => [h, s.name]),
    );
    await writeFile(join(this.o.dir, HOSTS_MAP), renderHostsMap(entries));
    const slots = this.slots.map((s) => ({
      slot: s.name,
      servers: [...s.servers].map(([address, r]) => ({ name: r.name, address, drain: r.draining })),
    }));
    await this.haproxy.write(renderHaproxyConfig({ ...this.base, slots }));
  }

  /** HAProxy exited by itself: started again with the state of now (with back-off). */
  private crashed(why: string): void {
    if (this.closed) return;
    this.o.logger.warn({ why }, "apps edge: HAProxy exited; starting it again");
    const delay = Math.min(30_000, 500 * 2 ** this.restarts++);
    setTimeout(() => {
      if (this.closed) return;
      this.writeState()
        .then(() => this.haproxy.start())
        .then(
          () => {
            this.restarts = 0;
            void this.log.follow();
          },
          (err: unknown) => {
            this.o.logger.warn({ err }, "apps edge: HAProxy did not start again");
            this.crashed("a restart failed");
          },
        );
    }, delay).unref();
  }
}
