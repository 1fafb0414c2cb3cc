import { connect as h2connect } from "node:http2";
import { type RequestOptions, request } from "node:https";
import { type ConnectionOptions, type PeerCertificate, connect as tlsConnect } from "node:tls";

/** Clients of the apps edge's HTTPS listener, trusting `ca`, naming `host` by SNI and Host. */

export interface TlsAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** The served certificate's serial (hex), to tell one certificate from another. */
  serial: string;
  alpn: string | false;
}

export function httpsGet(
  port: number,
  host: string,
  ca: string | string[],
  path = "/",
  headers: Record<string, string> = {},
): Promise<TlsAnswer> {
  return new Promise((resolve, reject) => {
    // https passes TLS options on to tls.connect; its RequestOptions type omits ALPN.
    const options: RequestOptions & ConnectionOptions = {
      host: "127.0.0.1",
      port,
      path,
      servername: host,
      ca,
      ALPNProtocols: ["http/1.1"],
      agent: false,
      headers: { host: `${host}:${port}`, ...headers },
    };
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      const socket = res.socket as import("node:tls").TLSSocket;
      const serial = socket.getPeerCertificate().serialNumber;
      const alpn = socket.alpnProtocol;
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString(),
          serial,
          alpn: alpn ?? false,
        }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/** One request over HTTP/2 (ALPN h2), on a connection of its own. */
export function h2Get(port: number, host: string, ca: string | string[], path = "/"): Promise<TlsAnswer> {
  return new Promise((resolve, reject) => {
    const session = h2connect(`https://127.0.0.1:${port}`, { servername: host, ca });
    session.on("error", reject);
    const stream = session.request({ ":path": path, ":authority": `${host}:${port}` });
    let status = 0;
    let headers: Record<string, string | string[] | undefined> = {};
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      headers = h;
    });
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", reject);
    stream.on("end", () => {
      const socket = session.socket as import("node:tls").TLSSocket;
      const answer: TlsAnswer = {
        status,
        headers,
        body: Buffer.concat(chunks).toString(),
        serial: socket.getPeerCertificate().serialNumber,
        alpn: typeof session.alpnProtocol === "string" ? session.alpnProtocol : false,
      };
      session.close();
      resolve(answer);
    });
    stream.end();
  });
}

/** A bare handshake: the certificate served for `host`, or the error that ended the handshake. */
export function handshake(
  port: number,
  host: string,
  ca: string | string[],
): Promise<{ ok: true; cert: PeerCertificate } | { ok: false; error: string }> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: "127.0.0.1", port, servername: host, ca });
    socket.once("secureConnect", () => {
      resolve({ ok: true, cert: socket.getPeerCertificate() });
      socket.end();
    });
    socket.once("error", (err) => resolve({ ok: false, error: err.message }));
  });
}
