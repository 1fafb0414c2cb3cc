// The typed client: openapi-fetch over the types generated from the server's /openapi.json.
// Browser-safe (the console uses it); Node-only helpers live in upload.ts.
import createClient, { type Client } from "openapi-fetch";
import type { paths } from "./openapi.ts";

export type { paths };

type Json<P extends keyof paths, M extends keyof paths[P], S extends number> = paths[P][M] extends {
  responses: { [K in S]: { content: { "application/json": infer T } } };
}
  ? T
  : never;

/** A deployment record (`GET /v2/deployments/{id}`). */
export type Deployment = Json<"/v2/deployments/{deployment_id}", "get", 200>;
/** A page of `GET /v2/deployments`: `resources` and the next `offset`. */
export type DeploymentPage = Json<"/v2/deployments", "get", 200>;
/** A revision record, with its `number` (creation order from 1), `status_history` and `status_message`. */
export type Revision = Json<"/v2/deployments/{deployment_id}/revisions/{revision_id}", "get", 200>;
/** A page of `GET /v2/deployments/{id}/revisions`, newest first. */
export type RevisionPage = Json<"/v2/deployments/{deployment_id}/revisions", "get", 200>;
/** One stored line of a revision's build or deploy log. */
export type LogLine = Json<
  "/v2/deployments/{deployment_id}/revisions/{revision_id}/logs",
  "get",
  200
>[number];
/** The body of `POST /v2/deployments`. */
export type CreateDeploymentBody = NonNullable<
  paths["/v2/deployments"]["post"]["requestBody"]
>["content"]["application/json"];
/** The body of `PATCH /v2/deployments/{id}`. */
export type PatchDeploymentBody = NonNullable<
  paths["/v2/deployments/{deployment_id}"]["patch"]["requestBody"]
>["content"]["application/json"];

/** What {@link createSlipway} needs: where the server is and the key to use. */
export interface SlipwayOptions {
  /** The server's URL, with its base path (`SLIPWAY_BASE_PATH`) if any. */
  baseUrl: string;
  apiKey?: string;
  /** Sent as `X-Tenant-Id`. */
  workspace?: string;
  fetch?: typeof globalThis.fetch;
}

/** One item of a 422 `detail`. */
export interface ValidationItem {
  loc: (string | number)[];
  msg: string;
}

/** An error answer of the server, or status 0 when the server could not be reached. */
export class SlipwayError extends Error {
  readonly status: number;
  readonly detail: string | ValidationItem[];
  constructor(status: number, detail: string | ValidationItem[]) {
    super(formatDetail(detail));
    this.name = "SlipwayError";
    this.status = status;
    this.detail = detail;
  }
}

/** A string detail as is; 422 items as `field: message` lines (the `body`/`query` prefix dropped). */
export function formatDetail(detail: string | ValidationItem[]): string {
  if (typeof detail === "string") return detail;
  return detail
    .map((d) => {
      const field = d.loc.slice(d.loc[0] === "body" || d.loc[0] === "query" || d.loc[0] === "path" ? 1 : 0);
      return field.length ? `${field.join(".")}: ${d.msg}` : d.msg;
    })
    .join("\n");
}

function detailOf(status: number, body: unknown): string | ValidationItem[] {
  if (body && typeof body === "object" && "detail" in body) {
    const d = (body as { detail: unknown }).detail;
    if (typeof d === "string") return d;
    if (Array.isArray(d)) {
      return d.map((i: { loc?: unknown; msg?: unknown }) => ({
        loc: Array.isArray(i.loc) ? (i.loc as (string | number)[]) : [],
        msg: typeof i.msg === "string" ? i.msg : JSON.stringify(i),
      }));
    }
  }
  return `The server answered ${status}.`;
}

/** A client of one server with one key: what every SDK function takes first. */
export interface Slipway {
  /** The openapi-fetch client: every operation of the server, typed. */
  api: Client<paths>;
  baseUrl: string;
  /** The credential headers every request carries. */
  headers: Record<string, string>;
  /** A request outside the typed paths (routes newer than this SDK); throws SlipwayError. */
  raw<T>(method: string, path: string, body?: unknown): Promise<T>;
  fetch: typeof globalThis.fetch;
}

/**
 * A client of the server at `baseUrl`, sending `apiKey` (and `workspace` as `X-Tenant-Id`) with
 * every request. `api` has every operation of the server, typed from its OpenAPI document; a
 * server that cannot be reached makes every call throw `SlipwayError` with status 0.
 */
export function createSlipway(opts: SlipwayOptions): Slipway {
  const baseUrl = opts.baseUrl.replace(/\/+$/, "");
  const headers: Record<string, string> = {};
  if (opts.apiKey) headers["x-api-key"] = opts.apiKey;
  if (opts.workspace) headers["x-tenant-id"] = opts.workspace;
  const fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
  // Unreachable servers surface as SlipwayError(0) from every call, typed or raw.
  const guarded: typeof globalThis.fetch = async (input, init) => {
    try {
      return await fetchImpl(input, init);
    } catch (err) {
      if (init?.signal?.aborted || (input instanceof Request && input.signal.aborted)) throw err;
      // Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND…) is its cause.
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : undefined;
      const reason = cause ?? (err instanceof Error ? err.message : String(err));
      throw new SlipwayError(0, `Cannot reach ${baseUrl}: ${reason}`);
    }
  };
  const api = createClient<paths>({ baseUrl, headers, fetch: guarded });
  return {
    api,
    baseUrl,
    headers,
    fetch: guarded,
    raw: async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await guarded(baseUrl + path, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      const parsed: unknown = text ? JSON.parse(text) : undefined;
      if (!res.ok) throw new SlipwayError(res.status, detailOf(res.status, parsed));
      return parsed as T;
    },
  };
}

/** The data of an openapi-fetch answer, or a SlipwayError carrying the server's `detail`. */
export async function unwrap<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new SlipwayError(response.status, detailOf(response.status, error));
  return data as T;
}
