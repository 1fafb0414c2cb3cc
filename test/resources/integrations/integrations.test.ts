import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { before, it } from "node:test";
import { pathToFileURL } from "node:url";
import { integrations } from "../../../src/db/schema/codehost.ts";
import { deployments } from "../../../src/db/schema/deployments.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { makeGitRoot, workingRepo } from "../../helpers/git-fixtures.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

const fx = makeGitRoot();
const BASE = "/v1/integrations/forge/codehost";

interface Repo {
  host_integration_id: string;
  id: number;
  name: string;
  owner: string;
  url: string;
  default_branch: string;
}

async function createLocal(ctx: TestContext, path: string, key = ctx.keys.admin) {
  return ctx.app.inject({
    method: "POST",
    url: BASE,
    headers: ctx.headers(key),
    payload: { kind: "local_git", path },
  });
}

/** An integration of the other organization, straight into the table (its own API is theirs to call). */
async function otherOrgIntegration(ctx: TestContext): Promise<string> {
  const [row] = await ctx.db.orm
    .insert(integrations)
    .values({ organizationId: ctx.other.orgId, kind: "local_git", config: { path: fx.team }, name: "theirs" })
    .returning();
  return (row as { id: string }).id;
}

function detail(res: { json(): unknown }): { loc: unknown[]; msg: string }[] {
  return (res.json() as { detail: { loc: unknown[]; msg: string }[] }).detail;
}

forEachDatabase(
  "code-host integrations (local git)",
  (suite) => {
    let integrationId = "";
    let otherId = "";

    before(async () => {
      const res = await createLocal(suite.ctx, fx.team);
      assert.equal(res.statusCode, 201, res.body);
      integrationId = (res.json() as { id: string }).id;
      otherId = await otherOrgIntegration(suite.ctx);
    });

    it("POST creates a local_git integration with the real path and the directory's name", async () => {
      const ctx = suite.ctx;
      const dir = join(fx.root, "solo");
      mkdirSync(dir, { recursive: true });
      // `..` and a trailing slash resolve to the same real directory.
      const res = await createLocal(ctx, `${fx.team}/../solo/`);
      assert.equal(res.statusCode, 201, res.body);
      const body = res.json() as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), [
        "created_at",
        "has_webhook_secret",
        "id",
        "installation_id",
        "kind",
        "name",
        "organization_id",
        "path",
        "webhook_secret",
      ]);
      assert.equal(body.kind, "local_git");
      assert.equal(body.path, dir);
      assert.equal(body.name, "solo");
      assert.equal(body.installation_id, null);
      assert.equal(body.organization_id, ctx.orgId);
      // The same directory again, by another spelling, is a conflict.
      const again = await createLocal(ctx, dir);
      assert.equal(again.statusCode, 409, again.body);
      const del = await ctx.app.inject({
        method: "DELETE",
        url: `${BASE}/${body.id}`,
        headers: ctx.headers(ctx.keys.admin),
      });
      assert.equal(del.statusCode, 200, del.body);
    });

    it("POST takes a chosen name", async () => {
      const ctx = suite.ctx;
      const dir = join(fx.root, "named");
      mkdirSync(dir, { recursive: true });
      const res = await ctx.app.inject({
        method: "POST",
        url: BASE,
        headers: ctx.headers(ctx.keys.admin),
        payload: { kind: "local_git", path: dir, name: "Team repos" },
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal((res.json() as { name: string }).name, "Team repos");
    });

    it("POST refuses paths outside the allowed roots, by any route there (422 at body.path)", async () => {
      const ctx = suite.ctx;
      const link = join(fx.root, "link-out");
      rmSync(link, { force: true });
      symlinkSync(fx.outside, link);
      const cases = [
        fx.outside, // outside
        `${fx.team}/../../outside`, // outside by `..`
        link, // a symlink under the root that leads outside
        "/etc",
        join(fx.outside, "does-not-exist"), // outside and missing: same answer as outside
        "relative/path",
        join(fx.root, "missing"), // inside but missing
        join(fx.team, "alpha", "README.md"), // inside but a file
      ];
      for (const path of cases) {
        const res = await createLocal(ctx, path);
        assert.equal(res.statusCode, 422, `${path}: ${res.body}`);
        const [item] = detail(res);
        assert.deepEqual(item?.loc, ["body", "path"], path);
      }
      const outsideMsg = detail(await createLocal(ctx, fx.outside))[0]?.msg;
      assert.equal(detail(await createLocal(ctx, join(fx.outside, "does-not-exist")))[0]?.msg, outsideMsg);
      const count = await ctx.db.orm.select().from(integrations);
      assert.ok(count.every((r) => !JSON.stringify(r.config).includes("outside")));
    });

    it("POST validates the body per kind (422 naming the field)", async () => {
      const ctx = suite.ctx;
      const cases: [Record<string, unknown>, unknown[]][] = [
        [{ kind: "local_git" }, ["body", "path"]],
        [{ kind: "local_git", path: fx.team, installation_id: 5 }, ["body", "installation_id"]],
        [{ kind: "github" }, ["body", "installation_id"]],
        [{ kind: "github", installation_id: 5, path: fx.team }, ["body", "path"]],
        // The GitHub App is not configured on this server.
        [{ kind: "github", installation_id: 5 }, ["body", "kind"]],
        [{ kind: "gitlab", path: fx.team }, ["body", "kind"]],
        [{ kind: "github", installation_id: "5" }, ["body", "installation_id"]],
        [{ kind: "github", installation_id: 0 }, ["body", "installation_id"]],
        [{ kind: "local_git", path: "" }, ["body", "path"]],
      ];
      for (const [payload, loc] of cases) {
        const res = await ctx.app.inject({
          method: "POST",
          url: BASE,
          headers: ctx.headers(ctx.keys.admin),
          payload,
        });
        assert.equal(res.statusCode, 422, `${JSON.stringify(payload)}: ${res.body}`);
        assert.ok(
          detail(res).some((d) => JSON.stringify(d.loc) === JSON.stringify(loc)),
          `${JSON.stringify(payload)} → ${res.body}`,
        );
      }
    });

    it("a workspace-bound key cannot add or remove integrations (403)", async () => {
      const ctx = suite.ctx;
      const { insertApiKey } = await import("../../../src/resources/api-keys/service.ts");
      const bound = await insertApiKey(ctx.db.orm, {
        organizationId: ctx.orgId,
        role: "admin",
        workspaceId: ctx.workspace2Id,
      });
      const res = await createLocal(ctx, join(fx.root, "named"), bound.key);
      assert.equal(res.statusCode, 403, res.body);
      const del = await ctx.app.inject({
        method: "DELETE",
        url: `${BASE}/${integrationId}`,
        headers: ctx.headers(bound.key),
      });
      assert.equal(del.statusCode, 403, del.body);
      const list = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/install`,
        headers: ctx.headers(bound.key),
      });
      assert.equal(list.statusCode, 200, list.body);
    });

    it("GET install lists this organization's integrations only", async () => {
      const ctx = suite.ctx;
      const res = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/install`,
        headers: ctx.headers(ctx.keys.viewer),
      });
      assert.equal(res.statusCode, 200, res.body);
      const list = res.json() as { id: string; organization_id: string; path: string }[];
      assert.ok(list.some((i) => i.id === integrationId && i.path === fx.team));
      assert.ok(list.every((i) => i.organization_id === ctx.orgId));
      assert.ok(!list.some((i) => i.id === otherId));
      const theirs = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/install`,
        headers: ctx.headers(ctx.other.admin),
      });
      assert.deepEqual(
        (theirs.json() as { id: string }[]).map((i) => i.id),
        [otherId],
      );
    });

    it("GET repos lists every git repository directly under the directory, exactly as the interface says", async () => {
      const ctx = suite.ctx;
      const res = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${integrationId}/repos`,
        headers: ctx.headers(ctx.keys.viewer),
      });
      assert.equal(res.statusCode, 200, res.body);
      const repos = res.json() as Repo[];
      assert.ok(Array.isArray(repos), "a bare array, no envelope");
      for (const r of repos) {
        assert.deepEqual(Object.keys(r).sort(), [
          "default_branch",
          "host_integration_id",
          "id",
          "name",
          "owner",
          "url",
        ]);
        assert.equal(r.host_integration_id, integrationId);
        assert.ok(Number.isSafeInteger(r.id) && r.id > 0, `id ${r.id}`);
        assert.equal(r.owner, "team");
      }
      const byName = Object.fromEntries(repos.map((r) => [r.name, r]));
      assert.deepEqual(Object.keys(byName).sort(), ["alpha", "beta.git", "empty", "gamma"]);
      assert.equal(byName.alpha?.default_branch, "main");
      assert.equal(byName["beta.git"]?.default_branch, "develop");
      assert.equal(byName.gamma?.default_branch, "trunk");
      assert.equal(byName.empty?.default_branch, "main");
      assert.equal(byName.alpha?.url, pathToFileURL(join(fx.team, "alpha")).href);
      // Ids are stable across listings and distinct.
      const again = (
        await ctx.app.inject({
          method: "GET",
          url: `${BASE}/${integrationId}/repos`,
          headers: ctx.headers(ctx.keys.viewer),
        })
      ).json() as Repo[];
      assert.deepEqual(again, repos);
      assert.equal(new Set(repos.map((r) => r.id)).size, repos.length);
    });

    it("GET repos sees a repository added later, and a detached HEAD falls back to main", async () => {
      const ctx = suite.ctx;
      const dir = join(fx.root, `later-${ctx.kind}`);
      const repo = workingRepo(join(dir, "fresh"), "main");
      const { git } = await import("../../helpers/git-fixtures.ts");
      git(repo, "checkout", "-q", "--detach");
      const created = await createLocal(ctx, dir);
      assert.equal(created.statusCode, 201, created.body);
      const id = (created.json() as { id: string }).id;
      const res = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${id}/repos`,
        headers: ctx.headers(ctx.keys.member),
      });
      assert.deepEqual(
        (res.json() as Repo[]).map((r) => [r.name, r.default_branch, r.owner]),
        [["fresh", "main", `later-${ctx.kind}`]],
      );
      workingRepo(join(dir, "another"), "release");
      const after = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${id}/repos`,
        headers: ctx.headers(ctx.keys.member),
      });
      assert.deepEqual(
        (after.json() as Repo[]).map((r) => r.name),
        ["another", "fresh"],
      );
    });

    it("GET repos of a directory that is gone, or no longer allowed, is a 502 with a detail", async () => {
      const ctx = suite.ctx;
      const dir = join(fx.root, `vanishing-${ctx.kind}`);
      workingRepo(join(dir, "r"), "main");
      const created = await createLocal(ctx, dir);
      const id = (created.json() as { id: string }).id;
      rmSync(dir, { recursive: true, force: true });
      const res = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${id}/repos`,
        headers: ctx.headers(ctx.keys.admin),
      });
      assert.equal(res.statusCode, 502, res.body);
      assert.match((res.json() as { detail: string }).detail, /cannot be read/);
      // A stored path outside the roots (the configuration changed) is not read either.
      const [row] = await ctx.db.orm
        .insert(integrations)
        .values({ organizationId: ctx.orgId, kind: "local_git", config: { path: fx.outside }, name: "old" })
        .returning();
      const res2 = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${(row as { id: string }).id}/repos`,
        headers: ctx.headers(ctx.keys.admin),
      });
      assert.equal(res2.statusCode, 502, res2.body);
      assert.match((res2.json() as { detail: string }).detail, /SLIPWAY_LOCAL_GIT_ROOTS/);
    });

    it("a stored github integration, with no GitHub App configured on this server, lists as a 502", async () => {
      const ctx = suite.ctx;
      const [row] = await ctx.db.orm
        .insert(integrations)
        .values({ organizationId: ctx.orgId, kind: "github", config: { installation_id: 77 }, name: "gh" })
        .returning();
      const res = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${(row as { id: string }).id}/repos`,
        headers: ctx.headers(ctx.keys.viewer),
      });
      assert.equal(res.statusCode, 502, res.body);
      assert.match((res.json() as { detail: string }).detail, /not configured/);
    });

    it("another organization's integration is a 404 for repos and delete; an unknown one too", async () => {
      const ctx = suite.ctx;
      for (const id of [otherId, randomUUID()]) {
        const repos = await ctx.app.inject({
          method: "GET",
          url: `${BASE}/${id}/repos`,
          headers: ctx.headers(ctx.keys.admin),
        });
        assert.equal(repos.statusCode, 404, repos.body);
        const del = await ctx.app.inject({
          method: "DELETE",
          url: `${BASE}/${id}`,
          headers: ctx.headers(ctx.keys.admin),
        });
        assert.equal(del.statusCode, 404, del.body);
      }
      const [still] = await ctx.db.orm
        .select()
        .from(integrations)
        .where((await import("drizzle-orm")).eq(integrations.id, otherId));
      assert.ok(still, "the other organization's integration is untouched");
      const bad = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/not-a-uuid/repos`,
        headers: ctx.headers(ctx.keys.admin),
      });
      assert.equal(bad.statusCode, 422, bad.body);
    });

    it("DELETE refuses while a live deployment builds from the integration (409), then removes it", async () => {
      const ctx = suite.ctx;
      const dir = join(fx.root, `in-use-${ctx.kind}`);
      workingRepo(join(dir, "app"), "main");
      const id = ((await createLocal(ctx, dir)).json() as { id: string }).id;
      const [dep] = await ctx.db.orm
        .insert(deployments)
        .values({
          organizationId: ctx.orgId,
          workspaceId: ctx.workspaceId,
          name: `uses-${id.slice(0, 8)}`,
          source: "codehost",
          sourceConfig: { integration_id: id, repo_url: pathToFileURL(join(dir, "app")).href },
        })
        .returning();
      const refused = await ctx.app.inject({
        method: "DELETE",
        url: `${BASE}/${id}`,
        headers: ctx.headers(ctx.keys.admin),
      });
      assert.equal(refused.statusCode, 409, refused.body);
      const { eq } = await import("drizzle-orm");
      await ctx.db.orm.delete(deployments).where(eq(deployments.id, (dep as { id: string }).id));
      const del = await ctx.app.inject({
        method: "DELETE",
        url: `${BASE}/${id}`,
        headers: ctx.headers(ctx.keys.admin),
      });
      assert.equal(del.statusCode, 200, del.body);
      assert.equal((del.json() as { id: string }).id, id);
      const gone = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${id}/repos`,
        headers: ctx.headers(ctx.keys.admin),
      });
      assert.equal(gone.statusCode, 404, gone.body);
      const twice = await ctx.app.inject({
        method: "DELETE",
        url: `${BASE}/${id}`,
        headers: ctx.headers(ctx.keys.admin),
      });
      assert.equal(twice.statusCode, 404, twice.body);
    });

    it("a codehost deployment created through the API pins its integration: DELETE → 409 until it is gone", async () => {
      const ctx = suite.ctx;
      const dir = join(fx.root, `api-${ctx.kind}`);
      workingRepo(join(dir, "app"), "main");
      const integration = ((await createLocal(ctx, dir)).json() as { id: string }).id;
      const repos = (
        await ctx.app.inject({
          method: "GET",
          url: `${BASE}/${integration}/repos`,
          headers: ctx.headers(ctx.keys.member),
        })
      ).json() as Repo[];
      const repo = repos[0];
      assert.ok(repo);
      const create = (repoRef: string) =>
        ctx.app.inject({
          method: "POST",
          url: "/v2/deployments",
          headers: ctx.headers(ctx.keys.member),
          // What the repository record says to copy into the request.
          payload: {
            name: `from-repo-${repoRef.replace(/[^a-z0-9]/g, "")}`,
            source: "codehost",
            source_config: { integration_id: repo.host_integration_id, repo_url: repo.url },
            source_revision_config: { repo_ref: repoRef, framework_config_path: "slipway.json" },
          },
        });
      const missingRef = await create("no-such-branch");
      assert.equal(missingRef.statusCode, 422, missingRef.body);
      const created = await create(repo.default_branch);
      assert.equal(created.statusCode, 201, created.body);
      const deploymentId = (created.json() as { id: string }).id;
      const url = `${BASE}/${integration.toUpperCase()}`;
      const refused = await ctx.app.inject({ method: "DELETE", url, headers: ctx.headers(ctx.keys.admin) });
      assert.equal(refused.statusCode, 409, refused.body);
      const gone = await ctx.app.inject({
        method: "DELETE",
        url: `/v2/deployments/${deploymentId}`,
        headers: ctx.headers(ctx.keys.member),
      });
      assert.equal(gone.statusCode, 204, gone.body);
      const del = await ctx.app.inject({ method: "DELETE", url, headers: ctx.headers(ctx.keys.admin) });
      assert.equal(del.statusCode, 200, del.body);
    });

    it("the local_git listing never follows a symlink out of the directory", async () => {
      const ctx = suite.ctx;
      const res = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${integrationId}/repos`,
        headers: ctx.headers(ctx.keys.admin),
      });
      const urls = (res.json() as Repo[]).map((r) => r.url);
      assert.ok(!urls.some((u) => u.includes("outside") || u.includes("escape")), urls.join(" "));
      assert.ok(!urls.some((u) => u.includes("nested")), "only repositories directly under the directory");
      assert.equal(realpathSync(fx.team), fx.team);
    });

    authMatrix(suite, { method: "GET", url: () => `${BASE}/install` });
    authMatrix(suite, {
      method: "POST",
      url: () => BASE,
      role: "admin",
      payload: () => ({ kind: "local_git", path: join(fx.root, "matrix") }),
    });
    authMatrix(suite, {
      method: "DELETE",
      url: () => `${BASE}/${integrationId}`,
      role: "admin",
      otherTenantUrl: () => `${BASE}/${otherId}`,
    });
    authMatrix(suite, {
      method: "GET",
      url: () => `${BASE}/${integrationId}/repos`,
      otherTenantUrl: () => `${BASE}/${otherId}/repos`,
    });
  },
  { env: { SLIPWAY_LOCAL_GIT_ROOTS: `/nonexistent-root:${fx.root}` } },
);
