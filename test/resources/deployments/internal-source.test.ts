import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { it } from "node:test";
import { call, type Deployment, locs, type Revision, uniqueName } from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

interface UploadUrl {
  upload_url: string;
  source_tarball_path: string;
  object_path: string;
}

/** What the hosted service's CLI does: create with `source_revision_config: {}`, then upload. */
async function createEmpty(ctx: TestContext, extra: Record<string, unknown> = {}): Promise<Deployment> {
  const res = await call<Deployment>(ctx, "POST", "/v2/deployments", {
    name: uniqueName("cli"),
    source: "internal_source",
    source_revision_config: {},
    ...extra,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

/** A real tarball PUT to a real upload URL; returns the path to send in a PATCH. */
async function upload(ctx: TestContext, deploymentId: string): Promise<string> {
  const url = await call<UploadUrl>(ctx, "POST", `/v2/deployments/${deploymentId}/upload-url`);
  assert.equal(url.status, 201, JSON.stringify(url.body));
  assert.equal(url.body.object_path, url.body.source_tarball_path);
  const dir = mkdtempSync(join(tmpdir(), "slipway-h1-cli-"));
  try {
    writeFileSync(join(dir, "slipway.json"), "{}\n");
    const tarball = join(dir, "src.tar.gz");
    execFileSync("tar", ["-czf", tarball, "-C", dir, "slipway.json"]);
    const target = new URL(url.body.upload_url);
    const put = await ctx.app.inject({
      method: "PUT",
      url: `${target.pathname}${target.search}`,
      headers: { "content-type": "application/gzip" },
      payload: readFileSync(tarball),
    });
    assert.equal(put.statusCode, 200, put.body);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return url.body.object_path;
}

const patch = (ctx: TestContext, id: string, body: unknown) =>
  call<Deployment>(ctx, "PATCH", `/v2/deployments/${id}`, body);

async function revisionCount(ctx: TestContext, id: string): Promise<number> {
  const res = await call<{ resources: Revision[] }>(ctx, "GET", `/v2/deployments/${id}/revisions`);
  assert.equal(res.status, 200);
  return res.body.resources.length;
}

forEachDatabase("internal_source as the hosted service's CLI drives it", (suite) => {
  it("create without tarball and framework_config_path; the PATCH after the upload makes the first revision", async () => {
    const ctx = suite.ctx;
    const d = await createEmpty(ctx, { secrets: [{ name: "KEY", value: "k" }] });
    assert.equal(d.latest_revision_id, null);
    assert.equal(d.status, "AWAITING_DATABASE");
    assert.equal(await revisionCount(ctx, d.id), 0);
    const path = await upload(ctx, d.id);
    const first = await patch(ctx, d.id, {
      source_revision_config: { source_tarball_path: path, framework_config_path: "slipway.json" },
    });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.ok(first.body.latest_revision_id);
    assert.equal(first.body.source_revision_config.source_tarball_path, path);
    assert.equal(first.body.source_revision_config.framework_config_path, "slipway.json");
    assert.deepEqual(first.body.secrets, [{ name: "KEY", value: "********" }], "create's secrets carry over");
    const rev = await call<Revision>(
      ctx,
      "GET",
      `/v2/deployments/${d.id}/revisions/${first.body.latest_revision_id}`,
    );
    assert.equal(rev.body.status, "QUEUED");
    // Later PATCHes carry the other value over, as for any revision.
    const second = await patch(ctx, d.id, {
      source_revision_config: { framework_config_path: "app/x.json" },
    });
    assert.equal(second.status, 200, JSON.stringify(second.body));
    assert.equal(second.body.source_revision_config.source_tarball_path, path);
    assert.equal(await revisionCount(ctx, d.id), 2);
  });

  it("the first revision-creating PATCH needs both: 422 naming the missing one, and nothing changes", async () => {
    const ctx = suite.ctx;
    const d = await createEmpty(ctx);
    const path = await upload(ctx, d.id);
    assert.deepEqual(
      locs(await patch(ctx, d.id, { source_revision_config: { source_tarball_path: path } })),
      ["body.source_revision_config.framework_config_path"],
    );
    assert.deepEqual(
      locs(await patch(ctx, d.id, { source_revision_config: { framework_config_path: "slipway.json" } })),
      ["body.source_revision_config.source_tarball_path"],
    );
    assert.deepEqual(locs(await patch(ctx, d.id, { secrets: [{ name: "A", value: "1" }] })).sort(), [
      "body.source_revision_config.framework_config_path",
      "body.source_revision_config.source_tarball_path",
    ]);
    const after = await call<Deployment>(ctx, "GET", `/v2/deployments/${d.id}`);
    assert.equal(after.body.latest_revision_id, null);
    assert.deepEqual(after.body.secrets, []);
    assert.equal(await revisionCount(ctx, d.id), 0);
    // A PATCH without revision fields still updates in place.
    const inPlace = await patch(ctx, d.id, { source_config: { build_command: "npm run build" } });
    assert.equal(inPlace.status, 200);
    assert.equal(inPlace.body.source_config.build_command, "npm run build");
    assert.equal(inPlace.body.latest_revision_id, null);
  });

  it("framework_config_path given at create: the tarball alone completes the first revision", async () => {
    const ctx = suite.ctx;
    const d = await createEmpty(ctx, {
      source_revision_config: { framework_config_path: "web/slipway.json" },
    });
    assert.equal(d.latest_revision_id, null);
    const path = await upload(ctx, d.id);
    const first = await patch(ctx, d.id, { source_revision_config: { source_tarball_path: path } });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(first.body.source_revision_config.framework_config_path, "web/slipway.json");
  });

  it("a tarball that is not this deployment's completed upload is refused even when the revision waits", async () => {
    const ctx = suite.ctx;
    const donor = await createEmpty(ctx);
    const foreign = await upload(ctx, donor.id);
    const res = await call(ctx, "POST", "/v2/deployments", {
      name: uniqueName("cli"),
      source: "internal_source",
      source_revision_config: { source_tarball_path: foreign },
    });
    assert.deepEqual(locs(res), ["body.source_revision_config.source_tarball_path"]);
    const d = await createEmpty(ctx);
    const bad = await patch(ctx, d.id, {
      source_revision_config: { source_tarball_path: foreign, framework_config_path: "slipway.json" },
    });
    assert.deepEqual(locs(bad), ["body.source_revision_config.source_tarball_path"]);
    assert.equal(await revisionCount(ctx, d.id), 0);
  });

  it("framework_config_path must still be a relative path when given at create", async () => {
    const res = await call(suite.ctx, "POST", "/v2/deployments", {
      name: uniqueName("cli"),
      source: "internal_source",
      source_revision_config: { framework_config_path: "/etc/passwd" },
    });
    assert.deepEqual(locs(res), ["body.source_revision_config.framework_config_path"]);
  });
});
