import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { integrations } from "../../../src/db/schema/codehost.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { makeGitRoot, workingRepo } from "../../helpers/git-fixtures.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

const fx = makeGitRoot();
const FORGE = "/v1/integrations/forge/codehost";
const LEGACY = "/v1/integrations/codehost";

async function get(ctx: TestContext, url: string, key: string, extra: Record<string, string> = {}) {
  const res = await ctx.app.inject({ method: "GET", url, headers: ctx.headers(key, extra) });
  return { status: res.statusCode, body: res.json() as unknown, type: res.headers["content-type"] };
}

/** The legacy twin answers exactly what the forge path answers, for this key and path tail. */
async function sameAnswer(ctx: TestContext, tail: string, key: string, extra: Record<string, string> = {}) {
  const forge = await get(ctx, `${FORGE}${tail}`, key, extra);
  const legacy = await get(ctx, `${LEGACY}${tail}`, key, extra);
  assert.deepEqual(legacy, forge, `${tail}`);
  return legacy;
}

forEachDatabase(
  "code-host integrations at the legacy paths (no forge/)",
  (suite) => {
    let mine = "";
    let theirs = "";
    let gone = "";

    before(async () => {
      const ctx = suite.ctx;
      const created = await ctx.app.inject({
        method: "POST",
        url: FORGE,
        headers: ctx.headers(ctx.keys.admin),
        payload: { kind: "local_git", path: fx.team },
      });
      assert.equal(created.statusCode, 201, created.body);
      mine = created.json<{ id: string }>().id;
      const [row] = await ctx.db.orm
        .insert(integrations)
        .values({
          organizationId: ctx.other.orgId,
          kind: "local_git",
          config: { path: fx.team },
          name: "theirs",
        })
        .returning();
      theirs = (row as { id: string }).id;
      const dir = join(fx.root, `vanishing-${ctx.kind}`);
      workingRepo(join(dir, "r"), "main");
      const vanishing = await ctx.app.inject({
        method: "POST",
        url: FORGE,
        headers: ctx.headers(ctx.keys.admin),
        payload: { kind: "local_git", path: dir },
      });
      gone = vanishing.json<{ id: string }>().id;
      rmSync(dir, { recursive: true, force: true });
    });

    it("GET …/codehost/install lists the organization's integrations, as the forge path does", async () => {
      const ctx = suite.ctx;
      const res = await sameAnswer(ctx, "/install", ctx.keys.viewer);
      assert.equal(res.status, 200);
      const list = res.body as { id: string; organization_id: string }[];
      assert.ok(list.some((i) => i.id === mine));
      assert.ok(list.every((i) => i.organization_id === ctx.orgId));
      const other = await sameAnswer(ctx, "/install", ctx.other.admin);
      assert.deepEqual(
        (other.body as { id: string }[]).map((i) => i.id),
        [theirs],
        "another organization sees only its own",
      );
      // A workspace-bound key reads its organization's integrations on both paths.
      assert.equal((await sameAnswer(ctx, "/install", ctx.keys.boundMember)).status, 200);
    });

    it("GET …/codehost/{id}/repos returns the repository records, as the forge path does", async () => {
      const ctx = suite.ctx;
      const res = await sameAnswer(ctx, `/${mine}/repos`, ctx.keys.member);
      assert.equal(res.status, 200);
      const repos = res.body as { name: string; host_integration_id: string }[];
      assert.deepEqual(repos.map((r) => r.name).sort(), ["alpha", "beta.git", "empty", "gamma"]);
      assert.ok(repos.every((r) => r.host_integration_id === mine));
    });

    it("the same 404 for another organization's or an unknown integration, 422 for a bad id, 502 for a failing host", async () => {
      const ctx = suite.ctx;
      for (const id of [theirs, randomUUID()]) {
        const res = await sameAnswer(ctx, `/${id}/repos`, ctx.keys.admin);
        assert.equal(res.status, 404);
        assert.equal(typeof (res.body as { detail: unknown }).detail, "string");
      }
      const bad = await sameAnswer(ctx, "/not-a-uuid/repos", ctx.keys.admin);
      assert.equal(bad.status, 422);
      assert.deepEqual(
        (bad.body as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc),
        [["path", "integration_id"]],
      );
      const failing = await sameAnswer(ctx, `/${gone}/repos`, ctx.keys.admin);
      assert.equal(failing.status, 502);
      assert.match((failing.body as { detail: string }).detail, /cannot be read/);
    });

    it("the same 401 and 403 answers", async () => {
      const ctx = suite.ctx;
      for (const tail of ["/install", `/${mine}/repos`]) {
        assert.equal((await sameAnswer(ctx, tail, "sw_not-a-real-key-at-all")).status, 401);
        assert.equal((await sameAnswer(ctx, tail, ctx.keys.revoked)).status, 401);
        const tenant = await sameAnswer(ctx, tail, ctx.keys.member, { "x-tenant-id": ctx.other.workspaceId });
        assert.equal(tenant.status, 403);
      }
    });

    describe("legacy install", () => {
      authMatrix(suite, { method: "GET", url: () => `${LEGACY}/install` });
    });
    describe("legacy repos", () => {
      authMatrix(suite, {
        method: "GET",
        url: () => `${LEGACY}/${mine}/repos`,
        otherTenantUrl: () => `${LEGACY}/${theirs}/repos`,
      });
    });
  },
  { env: { SLIPWAY_LOCAL_GIT_ROOTS: fx.root } },
);
