import { spawn } from "node:child_process";
import { connect, createServer, type Server, type Socket } from "node:net";

/**
 * A package index on the host's loopback, reachable from a deployment's namespace at the same URL
 * (docs/network.md): a listener on the index's address and port on the namespace's own loopback,
 * whose connections Slipway pipes to the same address and port on the host's loopback. That port
 * alone: every other host loopback port stays out of reach.
 *
 * The listening socket is made inside the namespace by a short-lived child (`nsenter --net=…
 * node -e …`), which hands it to Slipway over its IPC channel and exits: a socket keeps the
 * namespace it was made in, so Slipway accepts from the namespace and connects from the host, with
 * no process left running inside and no firewall rule to add.
 */

const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** The child: listen on argv[1]:argv[2], send the server to the parent, exit. Errors go back as text. */
const CHILD = `
const net = require("node:net");
const server = net.createServer();
server.on("error", (e) => process.send({ error: e.message }, () => process.exit(1)));
server.listen({ host: process.argv[1], port: Number(process.argv[2]), exclusive: true }, () =>
  process.send({ listening: true }, server, () => { server.close(); process.exit(0); }));
`;

export class LoopbackForward {
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly host: string,
    readonly port: number,
  ) {
    server.on("connection", (client: Socket) => this.pipe(client));
    server.on("error", () => {});
  }

  /** Opens the listener in the namespace at `netnsPath`; rejects with why it could not. */
  static open(netnsPath: string, host: string, port: number): Promise<LoopbackForward> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        "nsenter",
        [`--net=${netnsPath}`, "--", process.execPath, "-e", CHILD, host, String(port)],
        { stdio: ["ignore", "ignore", "pipe", "ipc"], env: { PATH: SYSTEM_PATH } },
      );
      let stderr = "";
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        child.kill("SIGKILL");
        reject(
          new Error(`the package index at ${host}:${port} cannot be reached from the namespace: ${why}`),
        );
      };
      const timer = setTimeout(() => fail("no listener after 10 s"), 10_000);
      child.stderr?.on("data", (d: Buffer) => {
        stderr += d.toString("utf8");
      });
      child.on("message", (message: unknown, handle: unknown) => {
        clearTimeout(timer);
        if (typeof message === "object" && message !== null && "error" in message)
          return fail(String(message.error));
        if (settled) return;
        if (!isServer(handle)) return fail("no socket came back");
        settled = true;
        // The received server is remade half-open on the same socket: a client that ends its side
        // after sending its request (HTTP/1.0 tools, nc) still gets the answer, as it would directly.
        const own = createServer({ allowHalfOpen: true });
        own.listen(handle, () => resolve(new LoopbackForward(own, host, port)));
      });
      child.on("error", (err) => fail(err.message));
      // A clean exit comes after the socket was sent (the message may be read after the exit).
      child.on("exit", (code) => {
        if (code === 0) return;
        clearTimeout(timer);
        fail(stderr.trim().split("\n")[0] || `nsenter exited with code ${code}`);
      });
    });
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.port, this.host);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.once("close", () => this.sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function isServer(handle: unknown): handle is Server {
  return typeof handle === "object" && handle !== null && "listen" in handle && "close" in handle;
}
