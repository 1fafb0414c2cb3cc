// Why over 300 lines: one reverse proxy (HTTP, upgrades, cold-start holds) whose parts share its helpers.
import {
  Agent,
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  request,
  type Server,
  type ServerResponse,
} from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { RevisionGroup } from "../processes/group.ts";
import type { Replica } from "../processes/replica.ts";
import { recordRequest } from "./request-metrics.ts";

/** Headers that describe one connection, not the message; a proxy must not pass them on. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "upgrade",
  "expect",
]);

/** Which deployment (by name) a host outside the apps domain is served by, if any. */
export interface CustomHosts {
  nameOf(hostname: string): string | undefined;
  /** Every custom host and the deployment it serves (the HAProxy front writes them into its map). */
  entries?(): Iterable<[hostname: string, name: string]>;
}

/** What the HAProxy front proxies straight to an app: its hosts and ready processes (haproxy/config.ts). */
export interface RouteSnapshot {
  name: string;
  hosts: string[];
  servers: string[];
}

/** Why a request is not proxied: the status and sentence to answer with. */
interface Refusal {
  status: number;
  detail: string;
  /** Seconds, for 503 after a failed cold start. */
  retryAfter?: number;
}

/** What a client is told to wait before retrying after a cold start failed. */
const COLD_START_RETRY_AFTER_S = 5;

const REASONS: Record<number, string> = { 404: "Not Found", 502: "Bad Gateway", 503: "Service Unavailable" };

function sendJson(res: ServerResponse, refusal: Refusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ detail: refusal.detail });
  res.writeHead(refusal.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(refusal.retryAfter === undefined ? {} : { "retry-after": String(refusal.retryAfter) }),
  });
  res.end(body);
}

function connectionTokens(headers: IncomingHttpHeaders): Set<string> {
  const value = headers.connection;
  return new Set(
    (value ?? "")
      .split(",")
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

/**
 * The request's headers for the app. `fromFront`: it came through the HAProxy front, which already
 * wrote the X-Forwarded-* headers (the front's own address is not the client's).
 */
function forwardedHeaders(req: IncomingMessage, fromFront: boolean): OutgoingHttpHeaders {
  const named = connectionTokens(req.headers);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name)) continue;
    out[name] = value;
  }
  if (fromFront) return out;
  const client = req.socket.remoteAddress ?? "";
  const prior = req.headers["x-forwarded-for"];
  out["x-forwarded-for"] = prior ? `${prior}, ${client}` : client;
  out["x-forwarded-host"] = req.headers["x-forwarded-host"] ?? req.headers.host ?? "";
  out["x-forwarded-proto"] = req.headers["x-forwarded-proto"] ?? "http";
  return out;
}

function responseHeaders(res: IncomingMessage): OutgoingHttpHeaders {
  const named = connectionTokens(res.headers);
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(res.headers)) {
    // Framing is redone by our own response (Node chunks when there is no content-length).
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name) || name === "transfer-encoding")
      continue;
    out[name] = value;
  }
  return out;
}

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
}

/**
 * The apps listener: routes `Host: <name>.<domain>` to the healthy processes of the deployment's
 * active revision, round-robin, as a streaming reverse proxy. A request picks its process when it
 * starts and holds it (in-flight count) until its response is done, which is what lets a switch of
 * revisions drain the old processes without failing anything. Every request counts in its
 * deployment's Traffic (scaling/traffic.ts) from routing to the end of its response, which the autoscaler
 * reads; a request to a deployment scaled to zero is held while one process starts (a cold start).
 */
export class AppsRouter {
  private readonly routes = new Map<string, RevisionGroup>();
  private readonly agent = new Agent({ keepAlive: true, maxFreeSockets: 256 });
  private readonly servers: Server[] = [];
  private readonly tunnels = new Set<Duplex>();
  /** By `host:port` asked for: listening is idempotent per address. */
  private readonly listening = new Map<string, Promise<number>>();

  /**
   * `customHosts` names the deployment a host outside the apps domain belongs to (a verified
   * custom domain), synchronously: it is asked once per request, so it answers from memory.
   */
  constructor(
    private readonly domain: string,
    private readonly customHosts?: CustomHosts,
  ) {}

  /**
   * HTTPS hooks (tls.ts): what the plain listeners do first once TLS is on (ACME answers, the
   * redirect; true: handled), and the TLS listener's way into the same routing.
   */
  plainHook: ((req: IncomingMessage, res: ServerResponse) => boolean) | undefined;

  serve(req: IncomingMessage, res: ServerResponse): void {
    this.handle(req, res, false);
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.tunnel(req, socket, head, false);
  }

  /** Points `name` at a revision's processes, from the next request on. */
  set(name: string, group: RevisionGroup): void {
    this.routes.set(name, group);
  }

  /** Stops routing `name` (only if it still points at `group`, when given). */
  delete(name: string, group?: RevisionGroup): void {
    if (group === undefined || this.routes.get(name) === group) this.routes.delete(name);
  }

  /**
   * Serves on `host:port` (idempotent per address; resolves to the bound port). `front`: only the
   * HAProxy front connects there, and its X-Forwarded-* headers are passed on as it wrote them.
   */
  listen(port: number, host: string, opts: { front?: boolean } = {}): Promise<number> {
    const key = `${host}:${port}`;
    let listening = this.listening.get(key);
    if (listening !== undefined) return listening;
    const fromFront = opts.front === true;
    const server = createServer((req, res) => {
      if (this.plainHook?.(req, res) !== true) this.handle(req, res, fromFront);
    });
    server.on("upgrade", (req, socket, head) => this.tunnel(req, socket, head, fromFront));
    this.servers.push(server);
    listening = new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        const address = server.address();
        resolve(typeof address === "object" && address !== null ? address.port : port);
      });
    });
    this.listening.set(key, listening);
    return listening;
  }

  async close(): Promise<void> {
    await Promise.all([...this.listening.values()].map((l) => l.catch(() => undefined)));
    const closed = this.servers.map(
      (server) =>
        new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
    );
    for (const server of this.servers) server.closeAllConnections();
    for (const socket of this.tunnels) socket.destroy();
    this.agent.destroy();
    await Promise.all(closed);
  }

  /** What the HAProxy front may proxy straight to apps: routes whose revision has ready processes. */
  snapshot(): RouteSnapshot[] {
    const custom = new Map<string, string[]>();
    for (const [hostname, name] of this.customHosts?.entries?.() ?? []) {
      const list = custom.get(name) ?? [];
      list.push(hostname);
      custom.set(name, list);
    }
    const out: RouteSnapshot[] = [];
    for (const [name, group] of this.routes) {
      if (group.site !== undefined || group.scaledToZero) continue;
      const servers = group
        .routable()
        .map((r) => `${r.host.includes(":") ? `[${r.host}]` : r.host}:${r.port}`);
      if (servers.length === 0) continue;
      out.push({
        name,
        hosts: [`${name}.${this.domain}`.toLowerCase(), ...(custom.get(name) ?? [])],
        servers,
      });
    }
    return out;
  }

  /** The traffic of the deployment served under `name` (the front credits what it proxied). */
  trafficOf(name: string): RevisionGroup["traffic"] | undefined {
    return this.routes.get(name)?.traffic;
  }

  /** The deployment name a Host header addresses, or undefined when it is not one of ours. */
  private nameOf(host: string | undefined): string | undefined {
    if (host === undefined || host.startsWith("[")) return undefined;
    const hostname = (host.split(":")[0] ?? "").toLowerCase().replace(/\.$/, "");
    const suffix = `.${this.domain.toLowerCase()}`;
    if (!hostname.endsWith(suffix)) return this.customHosts?.nameOf(hostname);
    const name = hostname.slice(0, -suffix.length);
    return name !== "" && !name.includes(".") ? name : undefined;
  }

  /**
   * The deployment a request addresses, its traffic already counting the request until `done`;
   * or the 404 to answer with.
   */
  private admit(
    req: IncomingMessage,
    done: (end: () => void) => void,
  ): { name: string; group: RevisionGroup } | Refusal {
    const name = this.nameOf(req.headers.host);
    const group = name === undefined ? undefined : this.routes.get(name);
    if (name === undefined || group === undefined) {
      return { status: 404, detail: `No app is served at ${req.headers.host ?? "this host"}.` };
    }
    group.traffic.begin();
    done(() => group.traffic.end());
    return { name, group };
  }

  /** The replica for a request, already holding it (after a cold start if need be); or the refusal. */
  private async route(name: string, group: RevisionGroup): Promise<Replica | Refusal> {
    let replica = group.pick();
    if (replica === undefined && group.scaledToZero) {
      replica = (await group.wake()) ? group.pick() : undefined;
      if (replica === undefined) {
        return {
          status: 503,
          detail: `The app "${name}" could not be started in time; try again shortly.`,
          retryAfter: COLD_START_RETRY_AFTER_S,
        };
      }
    }
    if (replica === undefined) return { status: 502, detail: `The app "${name}" has no running process.` };
    replica.acquire();
    return replica;
  }

  private handle(req: IncomingMessage, res: ServerResponse, fromFront: boolean): void {
    const admitted = this.admit(req, (end) => res.once("close", end));
    if (!("group" in admitted)) {
      req.resume();
      sendJson(res, admitted);
      return;
    }
    const site = admitted.group.site;
    if (site !== undefined) {
      const started = performance.now();
      res.once("close", () => recordRequest(admitted.name, performance.now() - started, res.statusCode));
      void site.serve(req, res);
      return;
    }
    void this.route(admitted.name, admitted.group).then((target) => {
      if (!("port" in target)) {
        req.resume();
        sendJson(res, target);
        return;
      }
      if (res.destroyed) {
        target.release();
        return;
      }
      this.proxy(req, res, admitted.name, target, fromFront);
    });
  }

  private proxy(
    req: IncomingMessage,
    res: ServerResponse,
    name: string,
    target: Replica,
    fromFront: boolean,
  ): void {
    const started = performance.now();
    res.once("close", () => {
      target.release();
      recordRequest(name, performance.now() - started, res.statusCode);
    });
    const withBody = hasBody(req);
    const headers = forwardedHeaders(req, fromFront);
    const send = (fresh: boolean) => {
      const upstream = request({
        host: target.host,
        port: target.port,
        method: req.method,
        path: req.url,
        headers,
        agent: fresh ? false : this.agent,
      });
      upstream.on("response", (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, responseHeaders(answer));
        answer.pipe(res);
        answer.on("error", () => res.destroy());
      });
      upstream.on("error", (err: NodeJS.ErrnoException) => {
        // A kept-alive socket the app closed just as we reused it: safe to resend a bodiless request.
        if (!fresh && !withBody && upstream.reusedSocket && err.code === "ECONNRESET" && !res.headersSent) {
          send(true);
          return;
        }
        sendJson(res, { status: 502, detail: `The app did not answer: ${err.message}.` });
      });
      res.once("close", () => {
        if (!res.writableFinished) upstream.destroy();
      });
      if (withBody) req.pipe(upstream);
      else upstream.end();
    };
    if (!withBody) req.resume();
    send(false);
  }

  /** WebSocket and other upgrades: replay the request head to the app, then splice the sockets. */
  private tunnel(req: IncomingMessage, socket: Duplex, head: Buffer, fromFront: boolean): void {
    const refuse = (r: Refusal) => {
      const body = JSON.stringify({ detail: r.detail });
      const retry = r.retryAfter === undefined ? "" : `retry-after: ${r.retryAfter}\r\n`;
      socket.end(
        `HTTP/1.1 ${r.status} ${REASONS[r.status] ?? "Error"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${retry}connection: close\r\n\r\n${body}`,
      );
    };
    const admitted = this.admit(req, (end) => socket.once("close", end));
    if (!("group" in admitted)) {
      refuse(admitted);
      return;
    }
    if (admitted.group.site !== undefined) {
      refuse({ status: 404, detail: `The app "${admitted.name}" is a static site: it takes no upgrades.` });
      return;
    }
    this.tunnels.add(socket);
    socket.once("close", () => this.tunnels.delete(socket));
    void this.route(admitted.name, admitted.group).then((target) => {
      if (!("port" in target)) refuse(target);
      else if (socket.destroyed) target.release();
      else this.splice(req, socket, head, target, fromFront);
    });
  }

  private splice(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    target: Replica,
    fromFront: boolean,
  ): void {
    const upstream: Socket = connect(target.port, target.host);
    this.tunnels.add(upstream);
    let released = false;
    const done = () => {
      if (!released) {
        released = true;
        target.release();
      }
      this.tunnels.delete(socket);
      this.tunnels.delete(upstream);
      socket.destroy();
      upstream.destroy();
    };
    let connected = false;
    upstream.once("connect", () => {
      connected = true;
      const lines = [`${req.method} ${req.url} HTTP/${req.httpVersion}`];
      const skip = new Set(["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto"]);
      for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i] ?? "";
        if (!skip.has(name.toLowerCase())) lines.push(`${name}: ${req.rawHeaders[i + 1] ?? ""}`);
      }
      const fwd = forwardedHeaders(req, fromFront);
      for (const name of skip) lines.push(`${name}: ${String(fwd[name] ?? "")}`);
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      if (head.length > 0) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.once("error", () => {
      // Not connected: answer the client, whose socket then closes and ends the tunnel.
      if (!connected)
        socket.end("HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    });
    upstream.once("close", () => {
      if (connected) done();
    });
    socket.once("error", done);
    socket.once("close", done);
  }
}
