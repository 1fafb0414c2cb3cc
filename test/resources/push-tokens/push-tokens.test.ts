import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { before, it } from "node:test";
import { deployments } from "../../../src/db/schema/deployments.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

const REGISTRY = {
  SLIPWAY_REGISTRY_URL: "https://registry.example.test:5000/team/",
  SLIPWAY_REGISTRY_USERNAME: "slipway",
  SLIPWAY_REGISTRY_PASSWORD: "registry-password-123",
};

async function insertDeployment(
  ctx: TestContext,
  opts: { workspaceId?: string; organizationId?: string } = {},
) {
  const name = `d-${randomBytes(5).toString("hex")}`;
  const [row] = await ctx.db.orm
    .insert(deployments)
    .values({
      organizationId: opts.organizationId ?? ctx.orgId,
      workspaceId: opts.workspaceId ?? ctx.workspaceId,
      name,
      source: "internal_docker",
    })
    .returning();
  return { id: (row as { id: string }).id, name };
}

const pushToken = (
  ctx: TestContext,
  id: string,
  key = ctx.keys.member,
  headers: Record<string, string> = {},
) =>
  ctx.app.inject({
    method: "POST",
    url: `/v2/deployments/${id}/push-token`,
    headers: ctx.headers(key, headers),
  });

forEachDatabase(
  "push tokens with a registry",
  (suite) => {
    let dep = { id: "", name: "" };
    before(async () => {
      dep = await insertDeployment(suite.ctx);
    });

    authMatrix(suite, {
      method: "POST",
      url: () => `/v2/deployments/${dep.id}/push-token`,
      role: "member",
      workspace: true,
      otherTenantUrl: async (ctx) =>
        `/v2/deployments/${(await insertDeployment(ctx, { organizationId: ctx.other.orgId, workspaceId: ctx.other.workspaceId })).id}/push-token`,
    });

    it("member → 201: the registry, the deployment's repository and the configured credential, never cached", async () => {
      const ctx = suite.ctx;
      const res = await pushToken(ctx, dep.id);
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.headers["cache-control"], "no-store");
      assert.deepEqual(res.json(), {
        token: "registry-password-123",
        username: "slipway",
        registry_url: `registry.example.test:5000/team/${ctx.workspaceId}`,
        repository: `registry.example.test:5000/team/${ctx.workspaceId}/${dep.name}`,
        expires_at: null,
      });
      assert.equal((await pushToken(ctx, dep.id, ctx.keys.admin)).statusCode, 201);
    });

    it("viewer → 403; another workspace's or organization's deployment, or an unknown one → 404; a bad id → 422", async () => {
      const ctx = suite.ctx;
      const viewer = await pushToken(ctx, dep.id, ctx.keys.viewer);
      assert.equal(viewer.statusCode, 403, viewer.body);
      assert.doesNotMatch(viewer.body, /registry-password/);
      const ws2 = await insertDeployment(ctx, { workspaceId: ctx.workspace2Id });
      assert.equal((await pushToken(ctx, ws2.id)).statusCode, 404);
      const inWs2 = await pushToken(ctx, ws2.id, ctx.keys.member, { "x-tenant-id": ctx.workspace2Id });
      assert.equal(inWs2.statusCode, 201, inWs2.body);
      assert.equal(
        inWs2.json().repository,
        `registry.example.test:5000/team/${ctx.workspace2Id}/${ws2.name}`,
      );
      const other = await insertDeployment(ctx, {
        organizationId: ctx.other.orgId,
        workspaceId: ctx.other.workspaceId,
      });
      const res = await pushToken(ctx, other.id, ctx.keys.admin);
      assert.equal(res.statusCode, 404);
      assert.doesNotMatch(res.body, /registry-password/);
      assert.equal((await pushToken(ctx, randomUUID())).statusCode, 404);
      assert.equal((await pushToken(ctx, "nope")).statusCode, 422);
    });

    it("OpenAPI documents the route, its answer and its errors", async () => {
      const res = await suite.ctx.app.inject({ method: "GET", url: "/openapi.json" });
      assert.equal(res.statusCode, 200);
      const op = (
        res.json() as {
          paths: Record<
            string,
            Record<
              string,
              {
                responses: Record<
                  string,
                  { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> }
                >;
              }
            >
          >;
        }
      ).paths["/v2/deployments/{deployment_id}/push-token"]?.post;
      assert.ok(op);
      assert.deepEqual(
        Object.keys(op.responses)
          .filter((s) => ["201", "404", "409"].includes(s))
          .sort(),
        ["201", "404", "409"],
      );
      const props = Object.keys(op.responses["201"]?.content?.["application/json"]?.schema?.properties ?? {});
      assert.deepEqual(props.sort(), ["expires_at", "registry_url", "repository", "token", "username"]);
    });
  },
  { env: REGISTRY },
);

forEachDatabase("push tokens", (suite) => {
  it("no registry configured → 409 saying so", async () => {
    const ctx = suite.ctx;
    const dep = await insertDeployment(ctx);
    const res = await pushToken(ctx, dep.id);
    assert.equal(res.statusCode, 409, res.body);
    assert.match(res.json().detail, /SLIPWAY_REGISTRY_URL/);
    // Not found before "no registry": other tenants learn nothing.
    assert.equal((await pushToken(ctx, randomUUID())).statusCode, 404);
  });

  it("a registry open to pushes (no credentials configured): token and username null", async () => {
    // Checked on the service: the suite's server has no registry.
    const { issuePushToken } = await import("../../../src/resources/push-tokens/service.ts");
    const ctx = suite.ctx;
    const dep = await insertDeployment(ctx);
    const t = await issuePushToken(
      ctx.db.orm,
      {
        registryUrl: "127.0.0.1:5000",
        registryUsername: undefined,
        registryPassword: undefined,
        registryToken: undefined,
      },
      { workspaceId: ctx.workspaceId },
      dep.id,
    );
    assert.deepEqual(t, {
      token: null,
      username: null,
      registry_url: `127.0.0.1:5000/${ctx.workspaceId}`,
      repository: `127.0.0.1:5000/${ctx.workspaceId}/${dep.name}`,
      expires_at: null,
    });
  });
});
