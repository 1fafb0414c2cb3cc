// Registry token auth (SLIPWAY_REGISTRY_TOKEN_*): push tokens scoped to one repository that expire,
// and the registry's token endpoint that exchanges them for bearers. The real registry taking
// these bearers is shown in test/e2e/registry.test.ts.
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { after, before, it } from "node:test";
import { eq } from "drizzle-orm";
import { deployments } from "../../../src/db/schema/deployments.ts";
import { pullCredentials } from "../../../src/resources/push-tokens/login.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { jwtParts, makeTokenKeys } from "../../helpers/registry-token-keys.ts";

const keys = makeTokenKeys();
after(() => rmSync(keys.dir, { recursive: true, force: true }));
const REGISTRY = "registry.example.test:5000";

async function insertDeployment(ctx: TestContext, workspaceId = ctx.workspaceId, organizationId = ctx.orgId) {
  const name = `d-${randomBytes(5).toString("hex")}`;
  const [row] = await ctx.db.orm
    .insert(deployments)
    .values({ organizationId, workspaceId, name, source: "internal_docker" })
    .returning();
  return { id: (row as { id: string }).id, name, repository: `${workspaceId}/${name}` };
}

const basic = (password: string, user = "anyone") =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

async function pushToken(ctx: TestContext, id: string): Promise<string> {
  const res = await ctx.app.inject({
    method: "POST",
    url: `/v2/deployments/${id}/push-token`,
    headers: ctx.headers(ctx.keys.member),
  });
  assert.equal(res.statusCode, 201, res.body);
  return (res.json() as { token: string }).token;
}

function exchange(ctx: TestContext, query: string, authorization?: string) {
  return ctx.app.inject({
    method: "GET",
    url: `/v2/registry/token?${query}`,
    headers: authorization ? { authorization } : {},
  });
}

const scope = (repository: string, actions = "pull,push") =>
  `service=slipway-registry&scope=${encodeURIComponent(`repository:${repository}:${actions}`)}`;

forEachDatabase(
  "registry token auth",
  (suite) => {
    let dep = { id: "", name: "", repository: "" };
    before(async () => {
      dep = await insertDeployment(suite.ctx);
    });

    it("push-token → a token for this repository that expires; no store or cache keeps it", async () => {
      const ctx = suite.ctx;
      const started = Date.now();
      const res = await ctx.app.inject({
        method: "POST",
        url: `/v2/deployments/${dep.id}/push-token`,
        headers: ctx.headers(ctx.keys.member),
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.headers["cache-control"], "no-store");
      const body = res.json() as Record<string, string>;
      assert.equal(body.username, "slipway");
      assert.equal(body.repository, `${REGISTRY}/${dep.repository}`);
      // The hosted service's CLI pushes to `{registry_url}/{name}`: that must be the token's repository.
      assert.equal(`${body.registry_url}/${dep.name}`, body.repository);
      const expires = Date.parse(body.expires_at ?? "");
      assert.ok(expires > started + 890_000 && expires <= Date.now() + 900_000, body.expires_at);
      const { claims } = jwtParts(body.token ?? "");
      assert.equal(claims.repository, dep.repository);
      assert.deepEqual(claims.actions, ["pull", "push"]);
    });

    it("the token endpoint: a bearer granting pull and push of the token's own repository", async () => {
      const ctx = suite.ctx;
      const res = await exchange(ctx, scope(dep.repository), basic(await pushToken(ctx, dep.id)));
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers["cache-control"], "no-store");
      const body = res.json() as {
        token: string;
        access_token: string;
        expires_in: number;
        issued_at: string;
      };
      assert.equal(body.access_token, body.token);
      assert.equal(body.expires_in, 300);
      const { header, claims } = jwtParts(body.token);
      assert.equal(header.alg, "ES256");
      assert.equal(claims.aud, "slipway-registry");
      assert.equal(claims.sub, `deployment:${dep.id}`);
      assert.deepEqual(claims.access, [
        { type: "repository", name: dep.repository, actions: ["pull", "push"] },
      ]);
      // A login (no scope) gets a bearer granting nothing; repeated scopes are each answered.
      const login = await exchange(ctx, "service=slipway-registry", basic(await pushToken(ctx, dep.id)));
      assert.equal(login.statusCode, 200, login.body);
      assert.deepEqual(jwtParts((login.json() as { token: string }).token).claims.access, []);
    });

    it("another repository is granted nothing, even in the same workspace or asked beside its own", async () => {
      const ctx = suite.ctx;
      const sibling = await insertDeployment(ctx);
      const other = await insertDeployment(ctx, ctx.other.workspaceId, ctx.other.orgId);
      const token = await pushToken(ctx, dep.id);
      const res = await exchange(
        ctx,
        `${scope(sibling.repository)}&scope=${encodeURIComponent(`repository:${other.repository}:push`)}&scope=${encodeURIComponent(`repository:${dep.repository}:pull`)}`,
        basic(token),
      );
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(jwtParts((res.json() as { token: string }).token).claims.access, [
        { type: "repository", name: dep.repository, actions: ["pull"] },
      ]);
    });

    it("a cluster's pull credentials pull their repository and never push", async () => {
      const ctx = suite.ctx;
      const creds = pullCredentials(
        ctx.config.listeners,
        { listenerId: ctx.listenerId, workspaceId: ctx.workspaceId, deploymentId: dep.id },
        `${REGISTRY}/${dep.repository}:rev1`,
      );
      assert.ok(creds);
      assert.equal(creds.registry, REGISTRY);
      const res = await exchange(ctx, scope(dep.repository), basic(creds.password));
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(jwtParts((res.json() as { token: string }).token).claims.access, [
        { type: "repository", name: dep.repository, actions: ["pull"] },
      ]);
      // Images elsewhere need no credentials from Slipway.
      const elsewhere = pullCredentials(
        ctx.config.listeners,
        { listenerId: ctx.listenerId, workspaceId: ctx.workspaceId, deploymentId: dep.id },
        "docker.io/library/nginx:1",
      );
      assert.equal(elsewhere, null);
    });

    it("no credentials, a bad or expired token, a deleted deployment → 401 with a Basic challenge", async () => {
      const ctx = suite.ctx;
      const none = await exchange(ctx, scope(dep.repository));
      assert.equal(none.statusCode, 401, none.body);
      assert.match(String(none.headers["www-authenticate"]), /^Basic realm=/);
      for (const auth of [basic("not-a-token"), "Bearer abc", basic(ctx.keys.admin), "Basic !!!"]) {
        const res = await exchange(ctx, scope(dep.repository), auth);
        assert.equal(res.statusCode, 401, `${auth}: ${res.body}`);
      }
      const signer = ctx.config.listeners.registryToken?.signer;
      assert.ok(signer);
      const old = signer.pushToken(
        {
          subject: `deployment:${dep.id}`,
          workspaceId: ctx.workspaceId,
          deploymentId: dep.id,
          repository: dep.repository,
          actions: ["push"],
        },
        60,
        Date.now() - 120_000,
      );
      const expired = await exchange(ctx, scope(dep.repository), basic(old.token));
      assert.equal(expired.statusCode, 401, expired.body);
      assert.match(expired.json().detail, /expired/);
      const gone = await insertDeployment(ctx);
      const token = await pushToken(ctx, gone.id);
      await ctx.db.orm.delete(deployments).where(eq(deployments.id, gone.id));
      const afterDelete = await exchange(ctx, scope(gone.repository), basic(token));
      assert.equal(afterDelete.statusCode, 401, afterDelete.body);
      assert.match(afterDelete.json().detail, /no longer exists/);
    });

    it("another registry's service or a scope that is not a repository's → 400", async () => {
      const ctx = suite.ctx;
      const token = await pushToken(ctx, dep.id);
      const wrong = await exchange(
        ctx,
        `service=other&scope=repository:${dep.repository}:pull`,
        basic(token),
      );
      assert.equal(wrong.statusCode, 400, wrong.body);
      assert.match(wrong.json().detail, /slipway-registry/);
      for (const bad of ["registry:catalog:*", "repository:UPPER/x:pull", "repository:a:b:c:pull"]) {
        const res = await exchange(ctx, `scope=${encodeURIComponent(bad)}`, basic(token));
        assert.equal(res.statusCode, 400, `${bad}: ${res.body}`);
      }
      const long = await exchange(ctx, `scope=${"a".repeat(2000)}`, basic(token));
      assert.equal(long.statusCode, 422, long.body);
    });

    it("an API key is not needed and does not help: the push token is the credential", async () => {
      const ctx = suite.ctx;
      const res = await ctx.app.inject({
        method: "GET",
        url: `/v2/registry/token?${scope(dep.repository)}`,
        headers: { "x-api-key": ctx.keys.admin },
      });
      assert.equal(res.statusCode, 401, res.body);
    });

    it("push-token keeps its tenancy: another organization's deployment or an unknown one → 404", async () => {
      const ctx = suite.ctx;
      const other = await insertDeployment(ctx, ctx.other.workspaceId, ctx.other.orgId);
      for (const id of [other.id, randomUUID()]) {
        const res = await ctx.app.inject({
          method: "POST",
          url: `/v2/deployments/${id}/push-token`,
          headers: ctx.headers(ctx.keys.admin),
        });
        assert.equal(res.statusCode, 404, res.body);
      }
    });
  },
  {
    env: {
      SLIPWAY_REGISTRY_URL: `https://${REGISTRY}`,
      SLIPWAY_REGISTRY_TOKEN_KEY_FILE: keys.keyFile,
      SLIPWAY_REGISTRY_TOKEN_CERT_FILE: keys.certFile,
    },
  },
);

forEachDatabase("registry token endpoint without token auth", (suite) => {
  it("→ 404 saying this server is not a token server", async () => {
    const res = await suite.ctx.app.inject({
      method: "GET",
      url: "/v2/registry/token?scope=repository:a/b:pull",
    });
    assert.equal(res.statusCode, 404, res.body);
    assert.match(res.json().detail, /SLIPWAY_REGISTRY_TOKEN_/);
  });
});
