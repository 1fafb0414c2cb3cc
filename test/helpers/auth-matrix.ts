import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { it } from "node:test";
import type { SuiteHandle, TestContext } from "./harness.ts";

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export interface MatrixRoute {
  method: Method;
  /** The URL to call, built once the suite's context exists. */
  url: (ctx: TestContext) => string | Promise<string>;
  payload?: (ctx: TestContext) => unknown;
  /** Writes are refused to viewers; default: every method but GET. */
  write?: boolean;
  /** Lowest role: "admin" also checks that a member gets 403. */
  role?: "member" | "admin";
  /** The route acts in a workspace, so X-Tenant-Id rules apply. */
  workspace?: boolean;
  /**
   * A URL for the same operation on a resource that belongs to another tenant (another
   * organization, or another workspace); the first organization's admin must get 404.
   */
  otherTenantUrl?: (ctx: TestContext) => string | Promise<string>;
  /**
   * A URL for the same operation on a resource of the organization that a key bound to
   * `workspace2` must not see (another workspace's, or the organization's own): 404 for it.
   */
  otherWorkspaceUrl?: (ctx: TestContext) => string | Promise<string>;
  /** A listener's own route (desired state, status): only listener keys pass, so others get 403. */
  listener?: boolean;
}

async function call(ctx: TestContext, route: MatrixRoute, headers: Record<string, string>, url?: string) {
  const payload = route.payload?.(ctx);
  return ctx.app.inject({
    method: route.method,
    url: url ?? (await route.url(ctx)),
    headers: payload === undefined ? headers : { ...headers, "content-type": "application/json" },
    payload: payload === undefined ? undefined : JSON.stringify(payload),
  });
}

function expectStatus(res: { statusCode: number; body: string }, status: number): void {
  assert.equal(res.statusCode, status, `expected ${status}, got ${res.statusCode}: ${res.body}`);
  const body = JSON.parse(res.body) as { detail?: unknown };
  assert.equal(typeof body.detail, "string", "error body has a detail sentence");
}

/** The same authentication and tenancy checks, run against any route. */
export function authMatrix(suite: SuiteHandle, route: MatrixRoute): void {
  const name = `${route.method} auth`;
  const write = route.write ?? route.method !== "GET";

  it(`${name}: no key → 401`, async () => {
    expectStatus(await call(suite.ctx, route, {}), 401);
  });
  it(`${name}: unknown key → 401 (header and bearer)`, async () => {
    const ctx = suite.ctx;
    expectStatus(await call(ctx, route, { "x-api-key": "sw_not-a-real-key-at-all" }), 401);
    expectStatus(await call(ctx, route, { authorization: "Bearer sw_not-a-real-key-at-all" }), 401);
  });
  it(`${name}: revoked key → 401`, async () => {
    expectStatus(await call(suite.ctx, route, { "x-api-key": suite.ctx.keys.revoked }), 401);
  });
  if (route.listener) {
    it(`${name}: any key but a listener's own → 403`, async () => {
      const ctx = suite.ctx;
      for (const key of [ctx.keys.admin, ctx.keys.system, ctx.keys.viewer]) {
        expectStatus(await call(ctx, route, { "x-api-key": key }), 403);
      }
    });
    return;
  }
  it(`${name}: a listener's key → 403`, async () => {
    expectStatus(await call(suite.ctx, route, { "x-api-key": suite.ctx.keys.listener }), 403);
  });
  if (write) {
    it(`${name}: viewer write → 403`, async () => {
      expectStatus(await call(suite.ctx, route, { "x-api-key": suite.ctx.keys.viewer }), 403);
    });
  }
  if (route.role === "admin") {
    it(`${name}: member → 403`, async () => {
      expectStatus(await call(suite.ctx, route, { "x-api-key": suite.ctx.keys.member }), 403);
    });
  }
  it(`${name}: X-Tenant-Id of no workspace of the key's organization → 403`, async () => {
    const ctx = suite.ctx;
    const key = route.role === "admin" ? ctx.keys.admin : ctx.keys.member;
    expectStatus(await call(ctx, route, { "x-api-key": key, "x-tenant-id": randomUUID() }), 403);
    expectStatus(await call(ctx, route, { "x-api-key": key, "x-tenant-id": ctx.other.workspaceId }), 403);
    expectStatus(await call(ctx, route, { "x-api-key": key, "x-tenant-id": "not-a-uuid" }), 403);
  });
  if (route.workspace) {
    it(`${name}: workspace-bound key with another X-Tenant-Id → 403`, async () => {
      const ctx = suite.ctx;
      expectStatus(
        await call(ctx, route, { "x-api-key": ctx.keys.boundMember, "x-tenant-id": ctx.workspaceId }),
        403,
      );
    });
  }
  if (route.otherTenantUrl) {
    const other = route.otherTenantUrl;
    it(`${name}: another tenant's resource → 404`, async () => {
      const ctx = suite.ctx;
      expectStatus(await call(ctx, route, { "x-api-key": ctx.keys.admin }, await other(ctx)), 404);
    });
  }
  if (route.otherWorkspaceUrl) {
    const other = route.otherWorkspaceUrl;
    it(`${name}: a workspace-bound key on a resource it does not see → 404`, async () => {
      const ctx = suite.ctx;
      expectStatus(await call(ctx, route, { "x-api-key": ctx.keys.boundMember }, await other(ctx)), 404);
    });
  }
}
