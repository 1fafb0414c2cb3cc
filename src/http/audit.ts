import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { runWithAuditScope } from "../core/audit/scope.ts";
import type { AuditScope } from "../core/audit/store.ts";
import { READ_METHODS } from "./types.ts";

/**
 * The audit log of API writes. Two paths, one record:
 * - before the handler, a write request gets an audit scope (AsyncLocalStorage); a service that
 *   changes something records it in the change's transaction (`inAuditedTransaction`, or
 *   `recordAuditInTransaction` / `auditInTransaction` folded into a data-modifying CTE for
 *   deployments and revisions), so the change and its record commit or roll back together;
 * - a record written in the transaction carries the route's success status (its one 2xx) already,
 *   so a successful response costs no further statement;
 * - when the response is ready (onSend, before the client sees it), the record gets the status
 *   code when it is another one, or is written now when no transaction wrote it: refused writes
 *   (403, 404, 409, 422).
 * A crash between a commit and the response leaves a record with the status the change would have
 * answered (or null when the route has no single 2xx), never a change without a record.
 */

const scopes = new WeakMap<FastifyRequest, AuditScope>();
const ends = new WeakMap<FastifyRequest, () => void>();

const VERBS: Record<string, string> = { DELETE: "delete", PATCH: "update", PUT: "update" };

/**
 * What a write route acts on: its first path segment (after the version), and an action made of
 * that, the other named segments, and a verb where the method says it: `POST /v2/webhooks` →
 * `webhooks.create`, `PATCH /v2/webhooks/:id` → `webhooks.update`, `POST
 * /v2/webhooks/:id/deliveries/:delivery_id/redeliver` → `webhooks.deliveries.redeliver`.
 */
export function describeRoute(method: string, route: string): { resourceType: string; action: string } {
  const segments = route.split("/").filter((s) => s !== "" && !/^v\d+$/.test(s));
  const resourceType = segments[0] ?? "root";
  const named = segments.slice(1).filter((s) => !s.startsWith(":"));
  const endsWithParam = segments.at(-1)?.startsWith(":") ?? false;
  let verb = VERBS[method];
  // A POST to a collection creates; a POST to a named action (`/redeploy`) is that action.
  if (verb === undefined) verb = endsWithParam ? "update" : named.length === 0 ? "create" : undefined;
  return { resourceType, action: [resourceType, ...named, ...(verb ? [verb] : [])].join(".") };
}

function scopeOf(request: FastifyRequest, basePath: string): AuditScope | undefined {
  const p = request.principal;
  const pattern = request.routeOptions.url;
  if (!p || pattern === undefined || READ_METHODS.has(request.method)) return undefined;
  let scope = scopes.get(request);
  if (scope) return scope;
  const route = basePath !== "" && pattern.startsWith(basePath) ? pattern.slice(basePath.length) : pattern;
  const { resourceType, action } = describeRoute(request.method, route);
  const params = (request.params ?? {}) as Record<string, unknown>;
  const firstParam = /\/:([A-Za-z_]+)/.exec(route)?.[1];
  const id = firstParam === undefined ? undefined : params[firstParam];
  scope = {
    id: randomUUID(),
    organizationId: p.organizationId,
    workspaceId: p.workspaceId,
    keyId: p.keyId,
    method: request.method,
    route,
    action,
    resourceType,
    resourceId: typeof id === "string" ? id : null,
    requestId: request.id,
    successStatus: successStatus(request),
    recorded: false,
  };
  scopes.set(request, scope);
  return scope;
}

/** The route's one documented 2xx status, or null when it documents none or several. */
function successStatus(request: FastifyRequest): number | null {
  const response = (request.routeOptions.schema?.response ?? {}) as Record<string, unknown>;
  const codes = Object.keys(response)
    .map(Number)
    .filter((c) => c >= 200 && c < 300);
  return codes.length === 1 ? (codes[0] ?? null) : null;
}

/** The id a create answered with (its body's top-level `id`); bodies are never stored. */
function createdId(payload: unknown): string | null {
  if (typeof payload !== "string" || payload.length > 1_000_000 || !payload.startsWith("{")) return null;
  try {
    const id = (JSON.parse(payload) as { id?: unknown }).id;
    return typeof id === "string" ? id : null;
  } catch {
    return null;
  }
}

/** Where records go: the audit log's store, handed in at wiring (app.ts). */
export interface AuditRecords {
  /** Completes a record written in the change's transaction; false when there is none. */
  complete(id: string, statusCode: number, resourceId: string | null): Promise<boolean>;
  /** Writes the whole record now (no transaction of a change wrote it). */
  insert(scope: AuditScope, statusCode: number): Promise<void>;
}

export function registerAudit(app: FastifyInstance, records: AuditRecords, basePath: string): void {
  app.addHook("preHandler", (request, reply, done) => {
    const scope = scopeOf(request, basePath);
    if (!scope) return done();
    // The scope ends with the response (sent, or its connection gone).
    const end = runWithAuditScope(scope, done);
    ends.set(request, end);
    reply.raw.once("close", end);
  });
  // Injected requests (tests, app.inject) may never close a socket: their scope ends here.
  app.addHook("onResponse", (request, _reply, done) => {
    ends.get(request)?.();
    done();
  });
  // Callback style: a read (most requests) passes without a promise.
  app.addHook("onSend", (request, reply, payload, done) => {
    const scope = scopeOf(request, basePath);
    if (!scope) return done(null, payload);
    const resourceId = scope.resourceId ?? (reply.statusCode < 300 ? createdId(payload) : null);
    // Written in the change's transaction with this very outcome: nothing left to say.
    if (scope.recorded && reply.statusCode === scope.successStatus && resourceId === scope.resourceId) {
      return done(null, payload);
    }
    const write = async () => {
      const completed = scope.recorded && (await records.complete(scope.id, reply.statusCode, resourceId));
      if (!completed) await records.insert({ ...scope, resourceId }, reply.statusCode);
    };
    write()
      .catch((err: unknown) => request.log.error({ err }, "writing the audit record failed"))
      .finally(() => done(null, payload));
  });
}
