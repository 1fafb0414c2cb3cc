import assert from "node:assert/strict";
import { before, it } from "node:test";
import { sql } from "drizzle-orm";
import { secretContextId, secretRows } from "../../../src/core/revisions/secrets-store.ts";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { rows } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import {
  assertMatches,
  call,
  createDocker,
  type Deployment,
  deploymentSchema,
  locs,
  type Revision,
  revisionListSchema,
  revisionSchema,
} from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

interface Page {
  resources: Revision[];
  offset: number;
}

async function setStatus(ctx: TestContext, revisionId: string, status: string): Promise<void> {
  await ctx.db.orm.execute(sql`UPDATE revisions SET status = ${status} WHERE id = ${revisionId}`);
}

forEachDatabase("revisions", (suite) => {
  let d: Deployment;
  let other: Deployment;
  const revisionIds: string[] = [];
  const base = () => `/v2/deployments/${d.id}/revisions`;
  const list = async (query = "") => {
    const res = await call<Page>(suite.ctx, "GET", `${base()}${query}`);
    if (res.status === 200) assertMatches(revisionListSchema, res.body);
    return res;
  };

  // A deployment with six revisions, and one in another organization.
  before(async () => {
    const ctx = suite.ctx;
    d = await createDocker(ctx, { secrets: [{ name: "TOKEN", value: "t-0" }] });
    revisionIds.push(d.latest_revision_id as string);
    for (let i = 1; i < 6; i++) {
      const res = await call<Deployment>(ctx, "PATCH", `/v2/deployments/${d.id}`, {
        source_revision_config: { image_uri: `r.example/app:${i}` },
      });
      assert.equal(res.status, 200);
      revisionIds.push(res.body.latest_revision_id as string);
    }
    other = await createDocker(ctx, {}, { key: ctx.other.admin });
  });

  authMatrix(suite, {
    method: "GET",
    url: () => base(),
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${other.id}/revisions`,
  });
  authMatrix(suite, {
    method: "GET",
    url: () => `${base()}/${revisionIds[0]}`,
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${other.id}/revisions/${other.latest_revision_id}`,
  });
  authMatrix(suite, {
    method: "POST",
    url: () => `${base()}/${revisionIds[0]}/redeploy`,
    workspace: true,
    otherTenantUrl: () => `/v2/deployments/${other.id}/revisions/${other.latest_revision_id}/redeploy`,
  });
  for (const path of ["interrupt", "interruption"]) {
    authMatrix(suite, {
      method: "POST",
      url: () => `${base()}/${revisionIds[0]}/${path}`,
      workspace: true,
      otherTenantUrl: () => `/v2/deployments/${other.id}/revisions/${other.latest_revision_id}/${path}`,
    });
  }

  it("list: newest first with limit and offset; bounds; pages cover every revision once", async () => {
    const all = await list();
    assert.equal(all.status, 200);
    assert.deepEqual(
      all.body.resources.map((r) => r.id),
      [...revisionIds].reverse(),
    );
    assert.equal(all.body.offset, 6);
    assert.ok(all.body.resources.every((r) => r.deployment_id === d.id));
    const seen: string[] = [];
    for (let offset = 0; ; ) {
      const page = await list(`?limit=4&offset=${offset}`);
      if (page.body.resources.length === 0) break;
      seen.push(...page.body.resources.map((r) => r.id));
      offset = page.body.offset;
    }
    assert.deepEqual(seen, [...revisionIds].reverse());
    for (const q of ["?limit=0", "?limit=101", "?offset=-1", "?limit=x"]) {
      assert.equal((await list(q)).status, 422, q);
    }
    assert.equal((await list("?limit=100")).body.resources.length, 6);
    assert.deepEqual((await list("?offset=50")).body, { resources: [], offset: 50 });
  });

  it("list: status filter (comma list); unknown status → 422; unknown deployment → 404", async () => {
    const queued = await list("?status=QUEUED");
    assert.deepEqual(
      queued.body.resources.map((r) => r.id),
      [revisionIds[5]],
    );
    const both = await list("?status=SKIPPED,QUEUED");
    assert.equal(both.body.resources.length, 6);
    assert.deepEqual((await list("?status=DEPLOYED")).body.resources, []);
    assert.deepEqual(locs(await list("?status=QUEUED,done")), ["query.status"]);
    const missing = await call(
      suite.ctx,
      "GET",
      "/v2/deployments/6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e/revisions",
    );
    assert.equal(missing.status, 404);
    const boundKey = await call(suite.ctx, "GET", base(), undefined, { key: suite.ctx.keys.boundMember });
    assert.equal(boundKey.status, 404, "another workspace's deployment");
  });

  it("get: the record; a revision of another deployment is a 404", async () => {
    const res = await call<Revision>(suite.ctx, "GET", `${base()}/${revisionIds[5]}`);
    assert.equal(res.status, 200);
    assertMatches(revisionSchema, res.body);
    assert.equal(res.body.status, "QUEUED");
    assert.equal(res.body.source, "external_docker");
    assert.equal(res.body.source_revision_config.image_uri, "r.example/app:5");
    const second = await createDocker(suite.ctx);
    const crossed = await call(suite.ctx, "GET", `${base()}/${second.latest_revision_id}`);
    assert.equal(crossed.status, 404);
    assert.deepEqual(locs(await call(suite.ctx, "GET", `${base()}/nope`)), ["path.revision_id"]);
  });

  it("redeploy: a new revision with that revision's config, pinned commit, spec and secrets", async () => {
    const ctx = suite.ctx;
    const first = revisionIds[0] as string;
    await ctx.db.orm.execute(
      sql`UPDATE revisions SET source_revision_config = jsonb_set(source_revision_config, '{repo_commit_sha}', '"0123abcd"'),
                               resource_spec = '{"min_scale": 2}'::jsonb
           WHERE id = ${first}`,
    );
    const res = await call<Deployment>(ctx, "POST", `${base()}/${first}/redeploy`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assertMatches(deploymentSchema, res.body);
    const newId = res.body.latest_revision_id as string;
    assert.ok(!revisionIds.includes(newId));
    assert.equal(res.body.source_revision_config.image_uri, "registry.example/app:1");
    assert.equal(res.body.source_revision_config.repo_commit_sha, "0123abcd");
    assert.deepEqual(res.body.source_config.resource_spec, { min_scale: 2 });
    assert.deepEqual(res.body.secrets, [{ name: "TOKEN", value: "********" }]);
    type Stored = { id: string; name: string; value_enc: string; deployment_id: string | null };
    // The redeploy's secrets: its own rows or, unchanged, the ones it shares (migration 0022).
    const secrets: Stored[] = await secretRows(ctx.db.orm, newId);
    assert.equal(secrets.length, 1);
    const secret = secrets[0] as Stored;
    assert.equal(
      ctx.keyring.decrypt(
        secret.value_enc,
        encryptionContext("revision_secrets", "value_enc", secretContextId(secret)),
      ),
      "t-0",
    );
    const previous = await call<Revision>(ctx, "GET", `${base()}/${revisionIds[5]}`);
    assert.equal(previous.body.status, "SKIPPED", "the older queued revision is superseded");
    revisionIds.push(newId);
    const missing = await call(ctx, "POST", `${base()}/6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e/redeploy`);
    assert.equal(missing.status, 404);
  });

  it("interrupt: a running revision → INTERRUPTED; an ended one → 400", async () => {
    const ctx = suite.ctx;
    const current = revisionIds[revisionIds.length - 1] as string;
    const res = await call<Revision>(ctx, "POST", `${base()}/${current}/interrupt`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assertMatches(revisionSchema, res.body);
    assert.equal(res.body.status, "INTERRUPTED");
    assert.equal(res.body.status_message, "Interrupted by request.");
    assert.deepEqual(
      res.body.status_history.map((h) => h.status),
      ["QUEUED", "INTERRUPTED"],
    );
    const [flag] = await rows<{ interrupt_requested: boolean }>(
      ctx.db.orm,
      sql`SELECT interrupt_requested FROM revisions WHERE id = ${current}`,
    );
    assert.equal(flag?.interrupt_requested, true);
    for (const status of ["INTERRUPTED", "SKIPPED", "DEPLOYED", "BUILD_FAILED"]) {
      const target = revisionIds[1] as string;
      await setStatus(ctx, target, status);
      const again = await call(ctx, "POST", `${base()}/${target}/interrupt`);
      assert.equal(again.status, 400, status);
    }
    for (const status of ["BUILDING", "UNKNOWN", "DEPLOYING"]) {
      const target = revisionIds[2] as string;
      await setStatus(ctx, target, status);
      const stopped = await call<Revision>(ctx, "POST", `${base()}/${target}/interrupt`);
      assert.equal(stopped.status, 200, status);
      assert.equal(stopped.body.status, "INTERRUPTED");
    }
  });

  it("status_message: null while fine; SKIPPED says which revision superseded it", async () => {
    const ctx = suite.ctx;
    const fresh = await createDocker(ctx);
    const first = fresh.latest_revision_id as string;
    const queued = await call<Revision>(ctx, "GET", `/v2/deployments/${fresh.id}/revisions/${first}`);
    assertMatches(revisionSchema, queued.body);
    assert.equal(queued.body.status_message, null);
    const patched = await call<Deployment>(ctx, "PATCH", `/v2/deployments/${fresh.id}`, {
      source_revision_config: { image_uri: "r.example/c:2" },
    });
    assert.equal(patched.status, 200);
    const page = await call<Page>(ctx, "GET", `/v2/deployments/${fresh.id}/revisions`);
    assertMatches(revisionListSchema, page.body);
    assert.deepEqual(
      page.body.resources.map((r) => [r.status, r.status_message]),
      [
        ["QUEUED", null],
        ["SKIPPED", "Superseded by revision 2."],
      ],
    );
  });

  it("interruption: a second path of interrupt with the same answers", async () => {
    const ctx = suite.ctx;
    const fresh = await createDocker(ctx);
    const rid = fresh.latest_revision_id as string;
    const url = `/v2/deployments/${fresh.id}/revisions/${rid}/interruption`;
    const res = await call<Revision>(ctx, "POST", url);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assertMatches(revisionSchema, res.body);
    assert.equal(res.body.status, "INTERRUPTED");
    assert.equal(res.body.status_message, "Interrupted by request.");
    const read = await call<Revision>(ctx, "GET", `/v2/deployments/${fresh.id}/revisions/${rid}`);
    assert.equal(read.body.status, "INTERRUPTED", "stored");
    assert.equal((await call(ctx, "POST", url)).status, 400, "an ended revision");
    const unknown = `/v2/deployments/${fresh.id}/revisions/6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e/interruption`;
    assert.equal((await call(ctx, "POST", unknown)).status, 404);
    assert.deepEqual(
      locs(await call(ctx, "POST", `/v2/deployments/${fresh.id}/revisions/nope/interruption`)),
      ["path.revision_id"],
    );
  });

  it("list: remote_reconciled=true matches none (every revision runs here), false all; not a boolean → 422", async () => {
    const all = await list();
    assert.ok(all.body.resources.length > 0);
    assert.deepEqual((await list("?remote_reconciled=true")).body, { resources: [], offset: 0 });
    assert.deepEqual((await list("?remote_reconciled=false")).body, all.body);
    assert.deepEqual(locs(await list("?remote_reconciled=maybe")), ["query.remote_reconciled"]);
    const missing = await call(
      suite.ctx,
      "GET",
      "/v2/deployments/6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e/revisions?remote_reconciled=true",
    );
    assert.equal(missing.status, 404, "an unknown deployment is still a 404");
  });

  it("the reconciler is told of every new revision and interrupt (NOTIFY slipway_work)", async () => {
    const ctx = suite.ctx;
    const payloads: string[] = [];
    const stop = await ctx.db.listen("slipway_work", (p) => payloads.push(p));
    try {
      const fresh = await createDocker(ctx);
      const patched = await call<Deployment>(ctx, "PATCH", `/v2/deployments/${fresh.id}`, {
        source_revision_config: { image_uri: "r.example/b:2" },
      });
      const redeployed = await call<Deployment>(
        ctx,
        "POST",
        `/v2/deployments/${fresh.id}/revisions/${fresh.latest_revision_id}/redeploy`,
      );
      const rid = redeployed.body.latest_revision_id as string;
      await call(ctx, "POST", `/v2/deployments/${fresh.id}/revisions/${rid}/interrupt`);
      const expected = [fresh.latest_revision_id, patched.body.latest_revision_id, rid, rid];
      // In any order: a new revision is announced just after its commit, an interrupt at once
      // (db/announce.ts); only this deployment's, as an earlier test's may still arrive.
      const ours = () => payloads.filter((p) => expected.includes(p));
      for (let i = 0; i < 500 && ours().length < expected.length; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      await new Promise((r) => setTimeout(r, 100));
      assert.deepEqual(ours().sort(), [...expected].sort());
    } finally {
      await stop();
    }
  });

  it("redeploy of a deployment being deleted → 400", async () => {
    const ctx = suite.ctx;
    const fresh = await createDocker(ctx);
    await ctx.db.orm.execute(sql`UPDATE deployments SET status = 'AWAITING_DELETE' WHERE id = ${fresh.id}`);
    const res = await call(
      ctx,
      "POST",
      `/v2/deployments/${fresh.id}/revisions/${fresh.latest_revision_id}/redeploy`,
    );
    assert.equal(res.status, 400);
  });
});
