import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import {
  createSecureServer,
  type Http2SecureServer,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from "node:http2";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { SecureContext, TLSSocket } from "node:tls";
import type { AppsRouter } from "./router.ts";

/**
 * The apps edge's HTTPS listener (docs/https.md): TLS with the certificate SNI names, HTTP/2 by
 * ALPN or HTTP/1.1 (WebSocket upgrades too), every request handed to the same AppsRouter as the
 * plain listener's, marked `x-forwarded-proto: https`.
 */

/** Where certificates come from: the keeper (database) or the files of SLIPWAY_APPS_TLS_DIR. */
export interface SniSource {
  /** The context for a name, or undefined: the handshake then fails (never an order for it). */
  context(servername: string): Promise<SecureContext | undefined>;
}

export interface TlsEdgeOptions {
  certificates: SniSource;
  /** How long a client has to finish its handshake (a slow one is cut, the edge keeps serving). */
  handshakeTimeoutMs: number;
  logger: { warn(obj: object, msg: string): void };
}

/** HTTP/2 pseudo-headers, which the HTTP/1.1 request to the app cannot carry. */
const PSEUDO = [":method", ":path", ":scheme", ":authority", ":protocol"];

export class TlsEdge {
  private readonly server: Http2SecureServer;
  private readonly sockets = new Set<Socket>();
  private listening: Promise<number> | undefined;

  constructor(router: AppsRouter, o: TlsEdgeOptions) {
    this.server = createSecureServer({
      allowHTTP1: true,
      handshakeTimeout: o.handshakeTimeoutMs,
      minVersion: "TLSv1.2",
      SNICallback: (servername, done) => {
        o.certificates.context(servername).then(
          (context) =>
            context === undefined ? done(new Error(`no certificate for ${servername}`)) : done(null, context),
          (err: unknown) => {
            o.logger.warn({ err, servername }, "apps edge: no certificate could be had");
            done(err instanceof Error ? err : new Error(String(err)));
          },
        );
      },
    });
    // The compatibility API hands HTTP/1.1 requests over as http.IncomingMessage and HTTP/2 ones
    // as Http2ServerRequest; the router reads only what both have (headers, url, method, streams).
    this.server.on("request", (req: Http2ServerRequest, res: Http2ServerResponse) => {
      if (req.httpVersionMajor === 2) adaptHttp2(req, res);
      req.headers["x-forwarded-proto"] = "https";
      router.serve(req as unknown as IncomingMessage, res as unknown as ServerResponse);
    });
    this.server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      req.headers["x-forwarded-proto"] = "https";
      router.upgrade(req, socket, head);
    });
    // Garbage, a wrong name, a handshake too slow: Node closes that socket; nothing else to do.
    this.server.on("tlsClientError", () => {});
    this.server.on("connection", (socket: Socket) => {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
    this.server.on("secureConnection", (socket: TLSSocket) => {
      socket.on("error", () => socket.destroy());
    });
  }

  listen(port: number, host: string): Promise<number> {
    this.listening ??= new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        const address = this.server.address();
        resolve(typeof address === "object" && address !== null ? address.port : port);
      });
    });
    return this.listening;
  }

  async close(): Promise<void> {
    if (this.listening === undefined) return;
    await this.listening.catch(() => undefined);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

/**
 * An HTTP/2 request as the router expects an HTTP/1.1 one: `Host` from `:authority`, no pseudo-
 * headers; and its response without what HTTP/2 has no place for (a status message).
 */
function adaptHttp2(req: Http2ServerRequest, res: Http2ServerResponse): void {
  const authority = req.headers[":authority"];
  if (req.headers.host === undefined && typeof authority === "string") req.headers.host = authority;
  // The request's url and method are read from its pseudo-headers: keep them before those go.
  const { url, method } = req;
  Object.defineProperty(req, "url", { value: url, writable: true });
  Object.defineProperty(req, "method", { value: method, writable: true });
  for (const name of PSEUDO) delete req.headers[name];
  // HTTP/2 frames bodies itself, often with no content-length: say "chunked" so that the router
  // passes the body on (and the HTTP/1.1 request to the app frames it so).
  if (!req.stream.endAfterHeaders && req.headers["content-length"] === undefined)
    req.headers["transfer-encoding"] = "chunked";
  const writeHead = res.writeHead.bind(res);
  Object.defineProperty(res, "writeHead", {
    value: (status: number, message?: string | OutgoingHttpHeaders, headers?: OutgoingHttpHeaders) =>
      writeHead(status, typeof message === "string" ? headers : message),
  });
  // The router checks `res.destroyed` after a cold start: the stream's is the one that says.
  Object.defineProperty(res, "destroyed", { get: () => res.stream.destroyed });
}

/**
 * What the plain HTTP listener does once TLS is on: HTTP-01 answers at
 * `/.well-known/acme-challenge/<token>` (never redirected: the ACME server asks over HTTP), and a
 * 308 to the same URL over HTTPS for everything else.
 */
export function plainHttpHook(o: {
  tlsPort: () => number;
  challenge: ((token: string) => Promise<string | undefined>) | undefined;
}): (req: IncomingMessage, res: ServerResponse) => boolean {
  const PREFIX = "/.well-known/acme-challenge/";
  return (req, res) => {
    const url = req.url ?? "/";
    if (url.startsWith(PREFIX)) {
      req.resume();
      const token = url.slice(PREFIX.length).split("?")[0] ?? "";
      const answer = (status: number, body: string) => {
        res.writeHead(status, { "content-type": "text/plain", "content-length": Buffer.byteLength(body) });
        res.end(body);
      };
      // Tokens are base64url (RFC 8555 section 8.3).
      if (o.challenge === undefined || !/^[A-Za-z0-9_-]{1,256}$/.test(token)) {
        answer(404, "no such challenge\n");
        return true;
      }
      o.challenge(token).then(
        (keyAuthorization) =>
          keyAuthorization === undefined ? answer(404, "no such challenge\n") : answer(200, keyAuthorization),
        () => answer(503, "challenges cannot be read now\n"),
      );
      return true;
    }
    const hostname = /^([A-Za-z0-9.-]{1,253})(?::\d{1,5})?$/.exec(req.headers.host ?? "")?.[1];
    if (hostname === undefined) return false;
    const port = o.tlsPort();
    req.resume();
    res.writeHead(308, {
      location: `https://${hostname}${port === 443 ? "" : `:${port}`}${url.startsWith("/") ? url : "/"}`,
      "content-length": 0,
    });
    res.end();
    return true;
  };
}

/** The runtime's HTTPS settings (LocalRuntimeOptions.tls): its port, certificates, ACME answers. */
export interface RuntimeTls extends TlsEdgeOptions {
  /** SLIPWAY_APPS_TLS_PORT; 0 picks a free one. */
  port: number;
  /** Stored HTTP-01 answers by token (acme mode); unset: every challenge path is a 404. */
  challenge?: (token: string) => Promise<string | undefined>;
}

/** Puts HTTPS beside the router's plain listener: the TLS edge, and the plain side's redirect. */
export function attachTls(router: AppsRouter, o: RuntimeTls, boundPort: () => number): TlsEdge {
  router.plainHook = plainHttpHook({ tlsPort: boundPort, challenge: o.challenge });
  return new TlsEdge(router, o);
}
