// Why over 300 lines: no; the PostgreSQL wire handling and the proxy read best together.
import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * The PostgreSQL gate of one deployment (docs/network.md): a TCP proxy on the host end of its
 * namespace's veth, the only way from the namespace to the database server. It reads the startup
 * message (answering SSLRequest and GSSENCRequest with 'N': the hop to the gate stays in the host),
 * lets through only the deployment's own role and database, and answers anything else with a
 * FATAL ErrorResponse (28000). A CancelRequest passes only with a key the server gave one of this
 * gate's own connections (BackendKeyData), so no other session can be cancelled through it.
 */

export interface GateOptions {
  /** Where the gate listens (the host end of the namespace's veth). */
  host: string;
  /** Tried first; taken already: any free port. */
  port: number;
  /** The database server the allowed connections are piped to. */
  upstream: { host: string; port: number };
  role: string;
  database: string;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
/** Larger startup packets are refused (the server's own limit is 10000). */
const MAX_STARTUP = 10_000;

/** A FATAL ErrorResponse with SQLSTATE `code`. */
export function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.concat([
    ...[
      ["S", "FATAL"],
      ["V", "FATAL"],
      ["C", code],
      ["M", message],
    ].map(([k, v]) => Buffer.from(`${k}${v}\0`, "utf8")),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write("E", 0, "latin1");
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

/** The parameters of a protocol-3 startup message (`body`: after the length). */
export function startupParameters(body: Buffer): Map<string, string> | undefined {
  if (body.length < 4 || body.readUInt16BE(0) !== 3) return undefined;
  const params = new Map<string, string>();
  const parts = body.subarray(4).toString("utf8").split("\0");
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const key = parts[i] ?? "";
    if (key === "") break;
    params.set(key, parts[i + 1] ?? "");
  }
  return params;
}

/** Why a startup is refused, or undefined to let it through. */
export function refusal(params: Map<string, string>, role: string, database: string): string | undefined {
  const user = params.get("user");
  // The server's own default: the database is named like the user.
  const db = params.get("database") || user;
  if (user !== role) return `role "${user ?? ""}" may not connect here; this app's role is "${role}"`;
  if (db !== database)
    return `database "${db ?? ""}" may not be used here; this app's database is "${database}"`;
  if (params.has("replication")) return "replication connections are not allowed here";
  return undefined;
}

export class PostgresGate {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  /** BackendKeyData the server gave this gate's connections: `${pid}:${key}` (hex of the 8 bytes). */
  private readonly keys = new Set<string>();
  port = 0;

  constructor(private readonly o: GateOptions) {}

  async listen(): Promise<number> {
    const server = createServer((socket) => this.accept(socket));
    server.on("error", () => {});
    this.server = server;
    const tryPort = (port: number) =>
      new Promise<number>((resolve, reject) => {
        server.once("error", reject);
        server.listen({ host: this.o.host, port, exclusive: true }, () => {
          server.off("error", reject);
          const a = server.address();
          resolve(typeof a === "object" && a !== null ? a.port : port);
        });
      });
    this.port = await tryPort(this.o.port).catch(() => tryPort(0));
    return this.port;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private track(s: Socket): void {
    this.sockets.add(s);
    s.once("close", () => this.sockets.delete(s));
    s.on("error", () => s.destroy());
  }

  private accept(client: Socket): void {
    this.track(client);
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        if (buffered.length < 8) return;
        const length = buffered.readInt32BE(0);
        if (length < 8 || length > MAX_STARTUP) return this.refuse(client, "08P01", "invalid startup packet");
        if (buffered.length < length) return;
        const packet = buffered.subarray(0, length);
        buffered = buffered.subarray(length);
        const code = packet.readInt32BE(4);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          client.write("N");
          continue;
        }
        client.off("data", onData);
        if (code === CANCEL_REQUEST) return this.cancel(client, packet);
        const params = startupParameters(packet.subarray(4));
        if (params === undefined) return this.refuse(client, "08P01", "unsupported frontend protocol");
        const why = refusal(params, this.o.role, this.o.database);
        if (why !== undefined) return this.refuse(client, "28000", why);
        return this.pipe(client, Buffer.concat([packet, buffered]));
      }
    };
    client.on("data", onData);
  }

  private refuse(client: Socket, code: string, message: string): void {
    client.end(errorResponse(code, `slipway: ${message}`));
  }

  /** A CancelRequest with a key of this gate's own sessions is passed on; any other is dropped. */
  private cancel(client: Socket, packet: Buffer): void {
    const key = packet.subarray(8, 16).toString("hex");
    if (packet.length !== 16 || !this.keys.has(key)) {
      client.destroy();
      return;
    }
    const upstream = connect(this.o.upstream.port, this.o.upstream.host);
    this.track(upstream);
    upstream.once("connect", () => upstream.end(packet));
    upstream.once("close", () => client.destroy());
  }

  private pipe(client: Socket, first: Buffer): void {
    const upstream = connect(this.o.upstream.port, this.o.upstream.host);
    this.track(upstream);
    upstream.setNoDelay(true);
    client.setNoDelay(true);
    upstream.once("connect", () => upstream.write(first));
    const sessionKeys: string[] = [];
    // Server messages are read until ReadyForQuery for BackendKeyData; raw piping after that.
    let pending = Buffer.alloc(0);
    let watching = true;
    upstream.on("data", (chunk: Buffer) => {
      client.write(chunk);
      if (!watching) return;
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 5) {
        const type = String.fromCharCode(pending[0] ?? 0);
        const length = pending.readInt32BE(1);
        if (pending.length < 1 + length) break;
        if (type === "K" && length >= 12) {
          const key = pending.subarray(5, 1 + length).toString("hex");
          sessionKeys.push(key);
          this.keys.add(key);
        }
        pending = pending.subarray(1 + length);
        if (type === "Z" || type === "E") {
          watching = false;
          pending = Buffer.alloc(0);
          break;
        }
      }
    });
    client.pipe(upstream);
    const done = () => {
      for (const k of sessionKeys) this.keys.delete(k);
      client.destroy();
      upstream.destroy();
    };
    client.once("close", done);
    upstream.once("close", done);
  }
}
