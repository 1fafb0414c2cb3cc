import { type ListeningSocket, listeningSockets } from "./listening-ports.ts";

/**
 * Why a starting app does not answer on $PORT, from what its processes listen on: an app that
 * listens on another port (a hard-coded 3000) or only on an address Slipway cannot reach fails
 * after a short grace instead of the whole health timeout, with a reason that says what to change.
 * Where the listening sockets cannot be read, it says nothing and the health check's own timeout
 * and message apply.
 */

/** How long the set of listening sockets must stay wrong before the start fails. */
export const WRONG_PORT_GRACE_MS = 2000;
/**
 * /proc is read at most this often while a process starts, the first time this long after it was
 * spawned (an app that answers at once costs no read). A read of a loaded machine's /proc takes tens
 * of ms, so it runs beside the health probes rather than between them.
 */
const SAMPLE_MS = 200;

/**
 * Where Slipway's probe comes from: `loopback` (a process, or a container on the host's network:
 * 127.0.0.1 on the same network stack) or `bridge` (a container's own network: its published port
 * arrives on the container's interface, never on its loopback).
 */
export type ProbeOrigin = "loopback" | "bridge";

export interface PortCheckOptions {
  /** The PORT the app was given. */
  port: number;
  origin: ProbeOrigin;
  /** The process whose tree is looked at; undefined while not known yet (a container being created). */
  root: () => Promise<number | undefined>;
  graceMs?: number;
  /** Replaces the /proc reading (tests). */
  sample?: (root: number) => Promise<ListeningSocket[] | undefined>;
  now?: () => number;
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;
const WILDCARD = new Set(["0.0.0.0", "::"]);

/** Whether a connection to the app's port from `origin` reaches a socket bound to `address`. */
export function reachable(address: string, origin: ProbeOrigin): boolean {
  if (WILDCARD.has(address)) return true;
  if (origin === "bridge") return !LOOPBACK.test(address);
  return address === "127.0.0.1" || address === "::ffff:127.0.0.1";
}

/** "1 s", "30 s", "1.5 s": the health timeout as a person reads it. */
export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/** "port 3000", "ports 3000 and 9229", "ports 3000, 8000 and 9229". */
function portList(ports: number[]): string {
  const unique = [...new Set(ports)].sort((a, b) => a - b).map(String);
  if (unique.length === 1) return `port ${unique[0]}`;
  return `ports ${unique.slice(0, -1).join(", ")} and ${unique.at(-1)}`;
}

export class PortCheck {
  private lastSample: number;
  private reading: Promise<void> | undefined;
  /** What was last read (undefined: never readable), and since when it has been so. */
  private sockets: ListeningSocket[] | undefined;
  private key = "";
  private since = 0;
  private readonly graceMs: number;
  private readonly now: () => number;
  private readonly sample: (root: number) => Promise<ListeningSocket[] | undefined>;

  constructor(private readonly o: PortCheckOptions) {
    this.graceMs = o.graceMs ?? WRONG_PORT_GRACE_MS;
    this.now = o.now ?? Date.now;
    this.sample = o.sample ?? listeningSockets;
    this.lastSample = this.now();
  }

  /**
   * Called after a probe of $PORT got no answer: the reason to fail now, when the app has listened
   * only elsewhere for the whole grace; else undefined (keep waiting). Starts a read of /proc when
   * one is due and answers from the last one, without waiting.
   */
  verdict(): string | undefined {
    const now = this.now();
    if (this.reading === undefined && now - this.lastSample >= SAMPLE_MS) {
      this.reading = this.read().finally(() => {
        this.reading = undefined;
      });
    }
    const wrong = this.wrong();
    return wrong !== undefined && now - this.since >= this.graceMs ? wrong : undefined;
  }

  /** The reason when the health timeout ran out with no answer; undefined: the health check's own. */
  async timedOut(timeoutMs: number): Promise<string | undefined> {
    await this.reading;
    await this.read();
    if (this.sockets === undefined) return undefined;
    if (this.sockets.length === 0)
      return `did not listen on $PORT (${this.o.port}) within ${seconds(timeoutMs)}`;
    return this.wrong();
  }

  /** The wrong-port or unreachable-address reason for the sockets last read, if they are wrong. */
  private wrong(): string | undefined {
    const sockets = this.sockets;
    if (sockets === undefined || sockets.length === 0) return undefined;
    const { port, origin } = this.o;
    const onPort = sockets.filter((s) => s.port === port);
    if (onPort.length === 0) {
      return `listens on ${portList(sockets.map((s) => s.port))}, not on $PORT (${port}): make it listen on the port in the PORT environment variable`;
    }
    if (onPort.some((s) => reachable(s.address, origin))) return undefined;
    const addresses = [...new Set(onPort.map((s) => s.address))].join(" and ");
    return origin === "bridge"
      ? `listens on $PORT (${port}) only on ${addresses}, which is not reachable from outside its container: make it listen on all interfaces (0.0.0.0)`
      : `listens on $PORT (${port}) only on ${addresses}, where Slipway does not connect: make it listen on 127.0.0.1 or on all interfaces (0.0.0.0)`;
  }

  private async read(): Promise<void> {
    this.lastSample = this.now();
    const root = await this.o.root().catch(() => undefined);
    const sockets = root === undefined ? undefined : await this.sample(root).catch(() => undefined);
    // An unreadable moment (the process just exited) keeps what was known.
    if (sockets === undefined) return;
    const key = sockets.map((s) => `${s.address}|${s.port}`).join(",");
    if (this.sockets === undefined || key !== this.key) this.since = this.now();
    this.sockets = sockets;
    this.key = key;
  }
}
