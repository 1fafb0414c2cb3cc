import { lookup } from "node:dns/promises";
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { hostAddressProblem, isLoopbackAddress, isLoopbackHostname } from "./address-policy.ts";

/** The fetch was refused before any connection: the URL or an address it resolves to is not allowed. */
export class FetchRefused extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`Refused to fetch ${url}: ${reason}.`);
  }
}

/** The server could not be reached, was too slow, or answered with too much. */
export class FetchFailed extends Error {
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`Could not fetch ${url}: ${reason}.`);
  }
}

export interface SafeFetchOptions {
  allowLoopback: boolean;
  /** For the whole request, redirects included. */
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
}

export interface SafeRequestInit {
  method?: string;
  headers?: Headers | Record<string, string> | [string, string][];
  body?: string | URLSearchParams | Uint8Array | null;
  signal?: AbortSignal;
  /** Read the status and headers only (probing a server that may stream). */
  discardBody?: boolean;
}

export type SafeFetch = (url: string, init?: SafeRequestInit) => Promise<Response>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NO_BODY = new Set([101, 204, 205, 304]);

/** A lookup that answers the target's checked addresses: the connection never takes a second DNS answer. */
export function pinnedLookup(target: Target): LookupFunction {
  return (_hostname, options, callback) => {
    const first = target.addresses[0] as { address: string; family: 4 | 6 };
    if (options.all) callback(null, target.addresses);
    else callback(null, first.address, first.family);
  };
}

export interface Target {
  url: URL;
  host: string;
  /** Every address the host has, each one checked. */
  addresses: { address: string; family: 4 | 6 }[];
}

/** Resolves the host once and checks every address it has; the connection then uses only those. */
export async function checkedTarget(url: URL, allowLoopback: boolean): Promise<Target> {
  const shown = `${url.origin}${url.pathname}`;
  if (url.protocol !== "https:" && url.protocol !== "http:")
    throw new FetchRefused(shown, "only https is allowed");
  // Plain http is only for a server on this machine (tests, local development), when allowed.
  if (url.protocol === "http:" && !(allowLoopback && isLoopbackHostname(url.hostname))) {
    throw new FetchRefused(shown, "only https is allowed");
  }
  if (url.username !== "" || url.password !== "") throw new FetchRefused(shown, "credentials in the URL");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let found: { address: string; family: number }[];
  if (isIP(host) !== 0) {
    found = [{ address: host, family: isIP(host) }];
  } else {
    try {
      found = await lookup(host, { all: true, verbatim: true });
    } catch {
      throw new FetchFailed(shown, `the host name ${host} does not resolve`);
    }
  }
  if (found.length === 0) throw new FetchFailed(shown, `the host name ${host} does not resolve`);
  const refused = hostAddressProblem(
    host,
    found.map((a) => a.address),
    allowLoopback,
  );
  if (refused !== null) throw new FetchRefused(shown, refused);
  for (const a of found) {
    if (url.protocol === "http:" && !isLoopbackAddress(a.address)) {
      throw new FetchRefused(shown, "only https is allowed for hosts that are not loopback");
    }
  }
  const addresses = found.map((a) => ({
    address: a.address,
    family: a.family === 6 ? (6 as const) : (4 as const),
  }));
  return { url, host, addresses };
}

function toHeaderRecord(headers: SafeRequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers === undefined) return out;
  const entries =
    headers instanceof Headers
      ? [...headers.entries()]
      : Array.isArray(headers)
        ? headers
        : Object.entries(headers);
  for (const [k, v] of entries) out[k.toLowerCase()] = v;
  return out;
}

function toBody(body: SafeRequestInit["body"]): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (body instanceof URLSearchParams) return Buffer.from(body.toString(), "utf8");
  return Buffer.from(body);
}

interface RawResponse {
  status: number;
  statusText: string;
  headers: Headers;
  body: Buffer;
}

function toHeaders(res: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) {
    if (v === undefined) continue;
    for (const item of Array.isArray(v) ? v : [v]) headers.append(k, item);
  }
  return headers;
}

function once(
  target: Target,
  method: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
  signal: AbortSignal,
  maxBytes: number,
  readBody: boolean,
): Promise<RawResponse> {
  const { url } = target;
  const shown = `${url.origin}${url.pathname}`;
  const pinned = pinnedLookup(target);
  const options: RequestOptions & { servername?: string } = {
    protocol: url.protocol,
    hostname: target.host,
    port: url.port === "" ? undefined : Number(url.port),
    path: `${url.pathname}${url.search}`,
    method,
    headers: body === undefined ? headers : { ...headers, "content-length": String(body.length) },
    lookup: pinned,
    agent: false,
    signal,
  };
  if (isIP(target.host) === 0) options.servername = target.host;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise<RawResponse>((resolve, reject) => {
    // The first outcome wins: a destroyed stream reports errors after the real reason.
    let settled = false;
    const fail = (reason: string) => {
      if (settled) return;
      settled = true;
      reject(new FetchFailed(shown, reason));
    };
    const done = (value: RawResponse) => {
      if (settled) return;
      settled = true;
      resolve(value);
    };
    const req = send(options, (res) => {
      const status = res.statusCode ?? 0;
      const base = { status, statusText: res.statusMessage ?? "", headers: toHeaders(res) };
      if (!readBody || REDIRECTS.has(status)) {
        done({ ...base, body: Buffer.alloc(0) });
        res.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          fail(`the response is larger than ${maxBytes} bytes`);
          res.destroy();
          return;
        }
        chunks.push(chunk);
      });
      res.on("end", () => done({ ...base, body: Buffer.concat(chunks) }));
      res.on("error", () => fail(signal.aborted ? "timed out" : "the connection broke"));
      res.on("aborted", () => fail(signal.aborted ? "timed out" : "the connection broke"));
    });
    req.on("error", (err: NodeJS.ErrnoException) => {
      if (signal.aborted) return fail("timed out");
      fail(err.code === "ECONNREFUSED" ? "connection refused" : `network error (${err.code ?? "unknown"})`);
    });
    req.end(body);
  });
}

/**
 * A fetch for URLs that come from configuration or from remote metadata: every hop's address is
 * checked (SSRF rules in address-policy.ts), redirects are followed by hand and re-checked, and the
 * answer is bounded in size and time. Returns a buffered standard Response.
 */
export function createSafeFetch(opts: SafeFetchOptions): SafeFetch {
  const timeoutMs = opts.timeoutMs ?? 5000;
  const maxBytes = opts.maxBytes ?? 1024 * 1024;
  const maxRedirects = opts.maxRedirects ?? 3;
  return async (input, init = {}) => {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let url = new URL(input);
    let method = (init.method ?? "GET").toUpperCase();
    let headers = toHeaderRecord(init.headers);
    let body = toBody(init.body);
    for (let hop = 0; ; hop++) {
      const target = await checkedTarget(url, opts.allowLoopback);
      if (signal.aborted) throw new FetchFailed(`${url.origin}${url.pathname}`, "timed out");
      const res = await once(target, method, headers, body, signal, maxBytes, init.discardBody !== true);
      const location = res.headers.get("location");
      if (!REDIRECTS.has(res.status) || location === null) {
        return new Response(NO_BODY.has(res.status) ? null : new Uint8Array(res.body), {
          status: res.status,
          statusText: res.statusText,
          headers: res.headers,
        });
      }
      if (hop >= maxRedirects) {
        throw new FetchFailed(`${url.origin}${url.pathname}`, `more than ${maxRedirects} redirects`);
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new FetchFailed(`${url.origin}${url.pathname}`, "a redirect to an invalid URL");
      }
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
        method = "GET";
        body = undefined;
        const { "content-type": _type, ...rest } = headers;
        headers = rest;
      }
      // Credentials are for the origin they were meant for.
      if (next.origin !== url.origin) {
        const { authorization: _auth, cookie: _cookie, ...rest } = headers;
        headers = rest;
      }
      url = next;
    }
  };
}
