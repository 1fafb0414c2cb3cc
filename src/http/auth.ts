import type { FastifyInstance, FastifyRequest } from "fastify";
import type { KeyRow, Principal, WorkspaceCaller } from "../core/callers.ts";
import { forbidden, unauthorized } from "../core/errors.ts";
import { AUTH_CHANNEL } from "../db/channels.ts";
import type { Database } from "../db/client.ts";
import { isUuid } from "../db/ids.ts";
import type { Role } from "../db/schema/identity.ts";
import { AuthCache } from "./auth-cache.ts";
import { READ_METHODS } from "./types.ts";

/** Per-route access rules, declared in the route's `config.auth`. */
export interface RouteAuth {
  /** No API key needed (health, docs, OAuth browser callbacks, signed uploads). */
  public?: boolean;
  /** Lowest role allowed; default `viewer` for reads and `member` for writes. */
  role?: Role;
  /** Only install-wide system keys. */
  system?: boolean;
  /**
   * A listener's own routes (desired state, status): only listener keys, which no other route
   * answers. The handler checks that the key's listener is the one in the path.
   */
  listener?: boolean;
}

declare module "fastify" {
  interface FastifyInstance {
    authCache: AuthCache<KeyRow>;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    auth?: RouteAuth;
  }
}

/** How a client answers a 401 from the API. */
const API_KEY_CHALLENGE = 'ApiKey header="X-Api-Key"';

/** A listener key ranks below every role: it passes only the routes marked `listener`. */
const RANK: Record<Role, number> = { listener: -1, viewer: 0, member: 1, admin: 2 };

export function apiKeyOf(request: FastifyRequest): string | undefined {
  const header = request.headers["x-api-key"];
  if (typeof header === "string" && header !== "") return header;
  const authz = request.headers.authorization;
  if (typeof authz === "string") {
    const m = /^Bearer\s+(\S+)$/i.exec(authz);
    if (m) return m[1];
  }
  return undefined;
}

function resolveTenant(
  row: KeyRow,
  header: string | undefined,
): Pick<Principal, "workspaceId" | "tenantError"> {
  if (header !== undefined) {
    if (row.workspace_id !== null && header.toLowerCase() !== row.workspace_id) {
      return {
        workspaceId: null,
        tenantError: "This API key is bound to another workspace than X-Tenant-Id.",
      };
    }
    if (row.requested_workspace === null) {
      return {
        workspaceId: null,
        tenantError: "X-Tenant-Id is not a workspace of this API key's organization.",
      };
    }
    return { workspaceId: row.requested_workspace, tenantError: null };
  }
  const ws = row.workspace_id ?? row.default_workspace_id;
  if (ws === null) {
    return {
      workspaceId: null,
      tenantError: "This request requires workspace specification: send X-Tenant-Id.",
    };
  }
  return { workspaceId: ws, tenantError: null };
}

/** How authentication finds a key: the API keys' resource hands these in at wiring (app.ts). */
export interface KeyLookup {
  /** The key's index in the store (and in the cache, so no key is held in the clear). */
  hash(key: string): string;
  /** The key of that hash, with whether `tenant` is one of its organization's workspaces. */
  find(keyHash: string, tenant: string | null): Promise<KeyRow | undefined>;
}

/** Authenticates every non-public route before its body is read; role rules follow the route config. */
export async function registerAuth(app: FastifyInstance, db: Database, keys: KeyLookup): Promise<void> {
  const cache = new AuthCache<KeyRow>();
  app.decorate("authCache", cache);
  const unlisten = await db.listen(AUTH_CHANNEL, (keyId) => cache.invalidateKey(keyId));
  app.addHook("onClose", async () => {
    await unlisten();
  });
  app.decorateRequest("principal", null);
  // Callback style: a cached key (nearly every request) is admitted without a promise.
  app.addHook("onRequest", (request, _reply, done) => {
    const rules = request.routeOptions.config?.auth;
    if (rules?.public || request.routeOptions.url === undefined) return done();
    const key = apiKeyOf(request);
    if (key === undefined) return done(unauthorized("Missing API key: send X-Api-Key.", API_KEY_CHALLENGE));
    const rawTenant = request.headers["x-tenant-id"];
    const tenantHeader = typeof rawTenant === "string" && rawTenant !== "" ? rawTenant : undefined;
    const tenant = tenantHeader && isUuid(tenantHeader) ? tenantHeader.toLowerCase() : null;
    const keyHash = keys.hash(key);
    const cacheKey = `${keyHash}|${tenant ?? ""}`;
    const cached = cache.get(cacheKey);
    if (cached) return done(admit(request, rules, cached, tenantHeader));
    keys
      .find(keyHash, tenant)
      .then((row) => {
        if (row && !row.revoked) cache.set(cacheKey, row.id, row);
        return admit(request, rules, row, tenantHeader);
      })
      .then(done, done);
  });
}

/** Sets the request's principal from its key's row; the error that refuses it, if any. */
function admit(
  request: FastifyRequest,
  rules: RouteAuth | undefined,
  row: KeyRow | undefined,
  tenantHeader: string | undefined,
): Error | undefined {
  if (!row || row.revoked) return unauthorized("Invalid or revoked API key.", API_KEY_CHALLENGE);
  const resolved = resolveTenant(row, tenantHeader);
  // A tenant the key cannot use is refused on every route, so a typo never silently falls back.
  if (tenantHeader !== undefined && resolved.tenantError) return forbidden(resolved.tenantError);
  request.principal = {
    keyId: row.id,
    organizationId: row.organization_id,
    role: row.role,
    isSystem: row.is_system,
    boundWorkspaceId: row.workspace_id,
    listenerId: row.listener_id,
    ...resolved,
  };
  if (row.role === "listener" || rules?.listener) {
    if (row.role !== "listener") return forbidden("This route answers only a listener's own API key.");
    if (!rules?.listener) {
      return forbidden(
        "A listener API key can only read its listener's desired state and report its status.",
      );
    }
    return undefined;
  }
  if (rules?.system && !row.is_system) return forbidden("This operation needs a system API key.");
  const needed: Role = rules?.role ?? (READ_METHODS.has(request.method) ? "viewer" : "member");
  if (RANK[row.role] < RANK[needed]) {
    return forbidden(`This operation needs the ${needed} role; this API key is ${row.role}.`);
  }
  return undefined;
}

/** The caller, on a route that is not public. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized("Missing API key: send X-Api-Key.", API_KEY_CHALLENGE);
  return request.principal;
}

/** The listener a listener key acts for, which must be the one the path names; else 403. */
export function listenerOf(
  request: FastifyRequest,
  listenerId: string,
): { listenerId: string; workspaceId: string } {
  const p = principalOf(request);
  if (p.listenerId === null || p.listenerId !== listenerId.toLowerCase() || p.boundWorkspaceId === null) {
    throw forbidden("This API key belongs to another listener.");
  }
  return { listenerId: p.listenerId, workspaceId: p.boundWorkspaceId };
}

/** The workspace the request acts in; 403 when none can be resolved. */
export function workspaceOf(request: FastifyRequest): WorkspaceCaller {
  const p = principalOf(request);
  if (p.workspaceId === null)
    throw forbidden(p.tenantError ?? "This request requires workspace specification.");
  return { organizationId: p.organizationId, workspaceId: p.workspaceId };
}
