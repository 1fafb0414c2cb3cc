import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { checkedTarget, FetchFailed, FetchRefused, pinnedLookup, type Target } from "./safe-fetch.ts";

/**
 * One API call of the proxy: the address checked by the same SSRF rules as every other outbound
 * fetch (safe-fetch.ts) on every hop, the answer handed back as a stream (no size limit, no
 * buffering), redirects followed only within the same origin and re-checked. A redirect to
 * another origin is refused: the request carries the user's token.
 */

/** The provider redirected the call to another origin, which the proxy never follows. */
export class RedirectRefused extends Error {
  constructor(readonly location: string) {
    super(`The provider redirected the call to another host (${location}); the proxy does not follow it.`);
  }
}

export interface ProxyRequest {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  allowLoopback: boolean;
  /** Idle time (no bytes either way) after which the call is given up. */
  idleMs?: number;
  maxRedirects?: number;
}

export interface ProxyResponse {
  status: number;
  headers: IncomingMessage["headers"];
  body: IncomingMessage;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function once(
  target: Target,
  req: ProxyRequest,
  method: string,
  body: Buffer | undefined,
): Promise<IncomingMessage> {
  const { url } = target;
  const shown = `${url.origin}${url.pathname}`;
  const pinned = pinnedLookup(target);
  const headers = {
    ...req.headers,
    ...(body === undefined ? {} : { "content-length": String(body.length) }),
  };
  const options: RequestOptions & { servername?: string } = {
    protocol: url.protocol,
    hostname: target.host,
    port: url.port === "" ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    method,
    headers,
    lookup: pinned,
    agent: false,
  };
  if (isIP(target.host) === 0) options.servername = target.host;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<IncomingMessage>((resolve, reject) => {
    let r: ReturnType<typeof send>;
    try {
      r = send(options, resolve);
    } catch {
      // Node refuses a header it cannot send (a control character in a value).
      reject(new FetchFailed(shown, "a header of the call cannot be sent"));
      return;
    }
    r.setTimeout(req.idleMs ?? 60_000, () => r.destroy(new Error("timed out")));
    r.on("error", (err: NodeJS.ErrnoException) => {
      const reason =
        err.message === "timed out"
          ? "timed out"
          : err.code === "ECONNREFUSED"
            ? "connection refused"
            : `network error (${err.code ?? "unknown"})`;
      reject(new FetchFailed(shown, reason));
    });
    r.end(body);
  });
}

/** Sends the call; throws FetchRefused, FetchFailed or RedirectRefused. */
export async function proxyRequest(req: ProxyRequest): Promise<ProxyResponse> {
  let url = req.url;
  let method = req.method.toUpperCase();
  let body = req.body;
  const maxRedirects = req.maxRedirects ?? 3;
  for (let hop = 0; ; hop++) {
    const target = await checkedTarget(url, req.allowLoopback);
    const res = await once(target, req, method, body);
    const status = res.statusCode ?? 502;
    const location = res.headers.location;
    if (!REDIRECTS.has(status) || location === undefined) return { status, headers: res.headers, body: res };
    res.resume();
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw new FetchFailed(`${url.origin}${url.pathname}`, "a redirect to an invalid URL");
    }
    if (next.origin !== url.origin) throw new RedirectRefused(next.origin);
    if (hop >= maxRedirects)
      throw new FetchFailed(`${url.origin}${url.pathname}`, `more than ${maxRedirects} redirects`);
    if (status === 303 || ((status === 301 || status === 302) && method === "POST")) {
      method = "GET";
      body = undefined;
    }
    url = next;
  }
}

export { FetchFailed, FetchRefused };
