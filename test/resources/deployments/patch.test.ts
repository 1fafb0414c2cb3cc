import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, it } from "node:test";
import { sql } from "drizzle-orm";
import { secretContextId, secretRows } from "../../../src/core/revisions/secrets-store.ts";
import { encryptionContext } from "../../../src/crypto/envelope.ts";
import { rows } from "../../../src/db/client.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import {
  assertMatches,
  type Codehost,
  call,
  createDocker,
  createIntegration,
  type Deployment,
  deploymentSchema,
  locs,
  makeGitRoot,
  type Revision,
  uniqueName,
} from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

const git = makeGitRoot();

interface RevisionPage {
  resources: Revision[];
  offset: number;
}

/** The stored (decrypted) secrets of a revision, in order. */
async function storedSecrets(ctx: TestContext, revisionId: string | null): Promise<[string, string][]> {
  const list = revisionId === null ? [] : await secretRows(ctx.db.orm, revisionId);
  return list.map((r) => [
    r.name,
    ctx.keyring.decrypt(r.value_enc, encryptionContext("revision_secrets", "value_enc", secretContextId(r))),
  ]);
}

async function revisionCount(ctx: TestContext, deploymentId: string): Promise<number> {
  const [row] = await rows<{ n: number }>(
    ctx.db.orm,
    sql`SELECT count(*)::int AS n FROM revisions WHERE deployment_id = ${deploymentId}`,
  );
  return row?.n ?? 0;
}

forEachDatabase(
  "GET and PATCH /v2/deployments/{id}",
  (suite) => {
    let codehost: Codehost;
    let otherOrgDeployment: Deployment;
    let otherWorkspaceDeployment: Deployment;
    let matrixTarget: Deployment;

    const patch = (id: string, body: unknown, headers: Record<string, string> = {}) =>
      call<Deployment>(suite.ctx, "PATCH", `/v2/deployments/${id}`, body, { headers });
    const get = (id: string, headers: Record<string, string> = {}) =>
      call<Deployment>(suite.ctx, "GET", `/v2/deployments/${id}`, undefined, { headers });
    const expectOk = (res: { status: number; body: Deployment }) => {
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assertMatches(deploymentSchema, res.body);
      return res.body;
    };
    const createCodehost = async (extra: { sc?: object; src?: object } = {}) => {
      const res = await call<Deployment>(suite.ctx, "POST", "/v2/deployments", {
        name: uniqueName("ch"),
        source: "codehost",
        source_config: { integration_id: codehost.integrationId, repo_url: codehost.repoUrl, ...extra.sc },
        source_revision_config: { repo_ref: "main", framework_config_path: "slipway.json", ...extra.src },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body;
    };

    // An integration, and deployments in other tenants.
    before(async () => {
      const ctx = suite.ctx;
      codehost = await createIntegration(ctx, git.team);
      otherOrgDeployment = await createDocker(ctx, {}, { key: ctx.other.admin });
      otherWorkspaceDeployment = await createDocker(ctx, {}, { key: ctx.keys.boundMember });
      matrixTarget = await createDocker(ctx);
    });

    authMatrix(suite, {
      method: "GET",
      url: () => `/v2/deployments/${matrixTarget.id}`,
      workspace: true,
      otherTenantUrl: () => `/v2/deployments/${otherOrgDeployment.id}`,
    });
    authMatrix(suite, {
      method: "PATCH",
      url: () => `/v2/deployments/${matrixTarget.id}`,
      payload: () => ({ image_version: "matrix" }),
      workspace: true,
      otherTenantUrl: () => `/v2/deployments/${otherOrgDeployment.id}`,
    });

    it("another workspace's or organization's deployment is a 404 for GET and PATCH; bad ids too", async () => {
      for (const d of [otherWorkspaceDeployment, otherOrgDeployment]) {
        assert.equal((await get(d.id)).status, 404);
        assert.equal((await patch(d.id, { image_version: "x" })).status, 404);
      }
      const fromOther = await call(suite.ctx, "GET", `/v2/deployments/${matrixTarget.id}`, undefined, {
        key: suite.ctx.other.admin,
      });
      assert.equal(fromOther.status, 404);
      assert.equal((await get("6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e")).status, 404);
      assert.deepEqual(locs(await get("not-a-uuid")), ["path.deployment_id"]);
      const unchanged = await call<Deployment>(
        suite.ctx,
        "GET",
        `/v2/deployments/${otherWorkspaceDeployment.id}`,
        undefined,
        {
          key: suite.ctx.keys.boundMember,
        },
      );
      assert.equal(unchanged.body.image_version, null, "the refused PATCH changed nothing");
    });

    it("GET: the record with a strong ETag; If-None-Match → 304", async () => {
      const d = await createDocker(suite.ctx);
      const first = await get(d.id);
      expectOk(first);
      assert.deepEqual(first.body, d);
      const etag = String(first.headers.etag);
      assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
      assert.equal((await get(d.id)).headers.etag, etag, "stable while nothing changes");
      const cached = await suite.ctx.app.inject({
        method: "GET",
        url: `/v2/deployments/${d.id}`,
        headers: { "x-api-key": suite.ctx.keys.viewer, "if-none-match": etag },
      });
      assert.equal(cached.statusCode, 304);
      assert.equal(cached.body, "");
      const changed = await get(d.id, { "if-none-match": '"something-else"' });
      assert.equal(changed.status, 200);
    });

    it("in-place fields update without a revision; an empty or all-null PATCH changes nothing", async () => {
      const d = await createDocker(suite.ctx, { source_config: { custom_url: "https://one.example" } });
      const before = await get(d.id);
      for (const body of [
        {},
        { source_config: null, source_revision_config: null, secrets: null },
        { tracked_packages: ["x"] },
      ]) {
        const same = expectOk(await patch(d.id, body));
        assert.deepEqual(same, before.body);
        assert.equal((await get(d.id)).headers.etag, before.headers.etag);
      }
      const nullKeeps = expectOk(
        await patch(d.id, { source_config: { custom_url: null }, image_version: null }),
      );
      assert.equal(nullKeeps.source_config.custom_url, "https://one.example");
      const updated = expectOk(
        await patch(d.id, { source_config: { custom_url: "https://two.example" }, image_version: "2.0" }),
      );
      assert.equal(updated.source_config.custom_url, "https://two.example");
      assert.equal(updated.image_version, "2.0");
      assert.equal(updated.latest_revision_id, d.latest_revision_id, "no new revision");
      assert.notEqual(updated.updated_at, d.updated_at);
      assert.equal(await revisionCount(suite.ctx, d.id), 1);
      assert.notEqual((await get(d.id)).headers.etag, before.headers.etag);
    });

    it("each revision field makes a new revision, even with the current value", async () => {
      const d = await createDocker(suite.ctx, {
        source_config: { resource_spec: { min_scale: 1 } },
        secrets: [{ name: "A", value: "1" }],
        secret_references: [{ name: "R", secret_name: "s", secret_key: "k" }],
      });
      const bodies = [
        { source_revision_config: { image_uri: d.source_revision_config.image_uri } },
        { secrets: [{ name: "A", value: "********" }] },
        { source_config: { resource_spec: { min_scale: 1 } } },
        { secret_references: [{ name: "R", secret_name: "s", secret_key: "k" }] },
        { revision_source: "internal_docker" },
      ];
      let previous = d;
      for (const [i, body] of bodies.entries()) {
        const next = expectOk(await patch(d.id, body));
        assert.notEqual(next.latest_revision_id, previous.latest_revision_id, JSON.stringify(body));
        assert.equal(await revisionCount(suite.ctx, d.id), i + 2);
        previous = next;
      }
      assert.deepEqual(previous.source_config.resource_spec, { min_scale: 1 });
      assert.equal(previous.source, "external_docker", "revision_source changes only the revision");
      const rev = await call<Revision>(
        suite.ctx,
        "GET",
        `/v2/deployments/${d.id}/revisions/${previous.latest_revision_id}`,
      );
      assert.equal(rev.body.source, "internal_docker");
      assert.equal(previous.secret_references, null, "references belong to external_docker revisions only");
      assert.deepEqual(await storedSecrets(suite.ctx, previous.latest_revision_id), [["A", "1"]]);
      const spec = expectOk(
        await patch(d.id, { source_config: { resource_spec: { max_scale: 3, min_scale: null } } }),
      );
      assert.deepEqual(spec.source_config.resource_spec, { min_scale: 1, max_scale: 3 }, "spec fields merge");
      assert.deepEqual(locs(await patch(d.id, { source_config: { resource_spec: { min_scale: 4 } } })), [
        "body.source_config.resource_spec.min_scale",
      ]);
    });

    it("codehost: re-sending repo_ref makes a new revision (the CI case); the older queued one is skipped", async () => {
      const d = await createCodehost();
      const next = expectOk(await patch(d.id, { source_revision_config: { repo_ref: "main" } }));
      assert.notEqual(next.latest_revision_id, d.latest_revision_id);
      assert.equal(next.source_revision_config.repo_ref, "main");
      assert.equal(next.source_revision_config.framework_config_path, "slipway.json", "carried over");
      const old = await call<Revision>(
        suite.ctx,
        "GET",
        `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`,
      );
      assert.equal(old.body.status, "SKIPPED");
      assert.deepEqual(
        old.body.status_history.map((h) => h.status),
        ["QUEUED", "SKIPPED"],
      );
      assert.deepEqual(locs(await patch(d.id, { source_revision_config: { repo_ref: "no-such-branch" } })), [
        "body.source_revision_config.repo_ref",
      ]);
      assert.equal(await revisionCount(suite.ctx, d.id), 2, "a refused PATCH makes nothing");
      const tag = expectOk(await patch(d.id, { source_revision_config: { repo_ref: "refs/tags/v1" } }));
      assert.equal(tag.source_revision_config.repo_ref, "refs/tags/v1");
      assert.deepEqual(locs(await patch(d.id, { source_config: { build_on_push: true } })), [
        "body.source_config.build_on_push",
      ]);
      const pushes = await createCodehost({ sc: { build_on_push: true } });
      assert.deepEqual(
        locs(await patch(pushes.id, { source_revision_config: { repo_ref: "refs/tags/v1" } })),
        ["body.source_revision_config.repo_ref"],
      );
      assert.deepEqual(
        locs(await patch(d.id, { secret_references: [{ name: "R", secret_name: "s", secret_key: "k" }] })),
        ["body.secret_references"],
      );
      assert.deepEqual(locs(await patch(d.id, { source_revision_config: { image_uri: "x:1" } })), [
        "body.source_revision_config.image_uri",
      ]);
    });

    it("revision_source switches the rules for that revision only", async () => {
      const d = await createCodehost();
      const docker = expectOk(
        await patch(d.id, {
          revision_source: "internal_docker",
          source_revision_config: { image_uri: "x:9" },
        }),
      );
      assert.equal(docker.source, "codehost");
      assert.equal(docker.source_revision_config.image_uri, "x:9");
      assert.equal(docker.source_revision_config.repo_ref, null, "codehost's ref is not a docker revision's");
      assert.equal(
        docker.source_revision_config.framework_config_path,
        "slipway.json",
        "shared fields carry",
      );
      // Back to the deployment's own source: the docker image is dropped, the ref must be given again.
      assert.deepEqual(locs(await patch(d.id, { secrets: [] })), ["body.source_revision_config.repo_ref"]);
      const back = expectOk(await patch(d.id, { source_revision_config: { repo_ref: "main" } }));
      assert.equal(back.source_revision_config.image_uri, null);
      assert.equal(back.source_revision_config.framework_config_path, "slipway.json");
      const fresh = await createCodehost();
      assert.deepEqual(locs(await patch(fresh.id, { revision_source: "internal_docker" })), [
        "body.source_revision_config.image_uri",
      ]);
      const plain = await createDocker(suite.ctx);
      assert.deepEqual(
        locs(
          await patch(plain.id, {
            revision_source: "codehost",
            source_revision_config: { repo_ref: "main", framework_config_path: "a.json" },
          }),
        ),
        ["body.revision_source"],
      );
      assert.deepEqual(locs(await patch(plain.id, { revision_source: "external_docker" })), [
        "body.revision_source",
      ]);
    });

    it("immutable fields: a different value → 400, the same value is accepted", async () => {
      const d = await createCodehost();
      const docker = await createDocker(suite.ctx, {
        source_config: {
          listener_id: suite.ctx.listenerId,
          listener_config: { k8s_namespace: "seeded" },
        },
      });
      const cases: [Deployment, object][] = [
        [d, { name: "renamed" }],
        [d, { source: "internal_docker" }],
        [d, { deployment_type: "prod" }],
        [d, { source_config: { deployment_type: "prod" } }],
        [d, { source_config: { integration_id: "6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e" } }],
        [d, { source_config: { repo_url: `${codehost.repoUrl}x` } }],
        [docker, { source_config: { listener_id: "7f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e" } }],
        [docker, { source_config: { listener_config: { k8s_namespace: "b" } } }],
      ];
      for (const [target, body] of cases) {
        const res = await patch(target.id, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(typeof (res.body as unknown as { detail: unknown }).detail, "string");
      }
      const same = expectOk(
        await patch(d.id, {
          name: d.name,
          source: "codehost",
          deployment_type: "dev",
          source_config: {
            integration_id: codehost.integrationId.toUpperCase(),
            repo_url: codehost.repoUrl,
            custom_url: d.source_config.custom_url,
          },
        }),
      );
      assert.equal(same.latest_revision_id, d.latest_revision_id);
      assert.equal(same.updated_at, d.updated_at);
      expectOk(
        await patch(docker.id, {
          source_config: {
            listener_id: docker.source_config.listener_id,
            listener_config: { k8s_namespace: "seeded" },
          },
        }),
      );
      // The server's custom_url of other sources cannot be replaced; sending it back is fine.
      assert.deepEqual(locs(await patch(d.id, { source_config: { custom_url: "https://mine.example" } })), [
        "body.source_config.custom_url",
      ]);
      assert.deepEqual(locs(await patch(docker.id, { source_config: { install_command: "npm ci" } })), [
        "body.source_config.install_command",
      ]);
    });

    it("secrets: masked in responses; the mask keeps the stored value; the list is replaced", async () => {
      const ctx = suite.ctx;
      const d = await createDocker(ctx, {
        secrets: [
          { name: "A", value: "alpha" },
          { name: "B", value: "bravo" },
        ],
      });
      const read = await get(d.id);
      assert.deepEqual(read.body.secrets, [
        { name: "A", value: "********" },
        { name: "B", value: "********" },
      ]);
      const roundTrip = expectOk(
        await patch(d.id, { secrets: [...read.body.secrets, { name: "C", value: "charlie" }] }),
      );
      assert.deepEqual(await storedSecrets(ctx, roundTrip.latest_revision_id), [
        ["A", "alpha"],
        ["B", "bravo"],
        ["C", "charlie"],
      ]);
      const replaced = expectOk(
        await patch(d.id, {
          secrets: [
            { name: "B", value: "********" },
            { name: "A", value: "new" },
          ],
        }),
      );
      assert.deepEqual(await storedSecrets(ctx, replaced.latest_revision_id), [
        ["B", "bravo"],
        ["A", "new"],
      ]);
      assert.deepEqual(locs(await patch(d.id, { secrets: [{ name: "ZED", value: "********" }] })), [
        "body.secrets.0.value",
      ]);
      assert.deepEqual(locs(await patch(d.id, { secrets: [{ name: "PORT", value: "1" }] })), [
        "body.secrets.0.name",
      ]);
      const cleared = expectOk(await patch(d.id, { secrets: [] }));
      assert.deepEqual(cleared.secrets, []);
      assert.deepEqual(await storedSecrets(ctx, cleared.latest_revision_id), []);
      assert.ok(!ctx.readLogs().includes("charlie") && !ctx.readLogs().includes("bravo"), "never logged");
    });

    it("If-Match: a stale ETag → 412 and nothing changes; the current one or * goes through", async () => {
      const d = await createDocker(suite.ctx);
      const etag = String((await get(d.id)).headers.etag);
      const first = await patch(d.id, { image_version: "1" }, { "if-match": etag });
      expectOk(first);
      const newEtag = String(first.headers.etag);
      assert.notEqual(newEtag, etag);
      assert.equal((await get(d.id)).headers.etag, newEtag, "PATCH returns the new ETag");
      const stale = await patch(d.id, { image_version: "2" }, { "if-match": etag });
      assert.equal(stale.status, 412);
      const weak = await patch(d.id, { image_version: "2" }, { "if-match": `W/${newEtag}` });
      assert.equal(weak.status, 412, "weak tags never match for If-Match");
      assert.equal((await get(d.id)).body.image_version, "1");
      expectOk(await patch(d.id, { image_version: "3" }, { "if-match": `"x", ${newEtag}` }));
      expectOk(await patch(d.id, { image_version: "4" }, { "if-match": "*" }));
    });

    it("internal_docker without an image: the first image makes the first revision with the values given at create", async () => {
      const ctx = suite.ctx;
      const created = await call<Deployment>(ctx, "POST", "/v2/deployments", {
        name: uniqueName("later"),
        source: "internal_docker",
        source_config: { resource_spec: { memory_mb: 512 } },
        source_revision_config: { framework_config_path: "slipway.json" },
        secrets: [{ name: "TOKEN", value: "t-1" }],
      });
      assert.equal(created.status, 201);
      assert.equal(created.body.latest_revision_id, null);
      assert.deepEqual(
        locs(await patch(created.body.id, { secrets: [{ name: "TOKEN", value: "********" }] })),
        ["body.source_revision_config.image_uri"],
      );
      const first = expectOk(
        await patch(created.body.id, { source_revision_config: { image_uri: "r.example/a:1" } }),
      );
      assert.ok(first.latest_revision_id);
      assert.equal(first.source_revision_config.framework_config_path, "slipway.json");
      assert.deepEqual(first.source_config.resource_spec, { memory_mb: 512, memory_limit_mb: 1024 });
      assert.deepEqual(first.secrets, [{ name: "TOKEN", value: "********" }]);
      assert.deepEqual(await storedSecrets(ctx, first.latest_revision_id), [["TOKEN", "t-1"]]);
      const [row] = await rows<{ pending_secrets_enc: string | null }>(
        ctx.db.orm,
        sql`SELECT pending_secrets_enc FROM deployments WHERE id = ${created.body.id}`,
      );
      assert.equal(row?.pending_secrets_enc, null, "the sealed pending values are gone once used");
    });

    it("internal_source: upload a real tarball, then PATCH its path to make the first revision", async () => {
      const ctx = suite.ctx;
      const created = await call<Deployment>(ctx, "POST", "/v2/deployments", {
        name: uniqueName("up"),
        source: "internal_source",
        source_revision_config: { framework_config_path: "slipway.json" },
        secrets: [{ name: "KEY", value: "k-1" }],
      });
      assert.equal(created.status, 201);
      const id = created.body.id;
      assert.deepEqual(
        locs(await patch(id, { source_revision_config: { source_tarball_path: "uploads/none.tar.gz" } })),
        ["body.source_revision_config.source_tarball_path"],
      );
      const url = await call<{ upload_url: string; source_tarball_path: string }>(
        ctx,
        "POST",
        `/v2/deployments/${id}/upload-url`,
      );
      assert.equal(url.status, 201, JSON.stringify(url.body));
      const dir = mkdtempSync(join(tmpdir(), "slipway-h1-src-"));
      writeFileSync(join(dir, "slipway.json"), "{}\n");
      const tarball = join(dir, "..", `${uniqueName("src")}.tar.gz`);
      execFileSync("tar", ["-czf", tarball, "-C", dir, "."]);
      const target = new URL(url.body.upload_url);
      const put = await ctx.app.inject({
        method: "PUT",
        url: `${target.pathname}${target.search}`,
        headers: { "content-type": "application/gzip" },
        payload: readFileSync(tarball),
      });
      assert.equal(put.statusCode, 200, put.body);
      const first = expectOk(
        await patch(id, { source_revision_config: { source_tarball_path: url.body.source_tarball_path } }),
      );
      assert.ok(first.latest_revision_id);
      assert.equal(first.source_revision_config.source_tarball_path, url.body.source_tarball_path);
      assert.equal(first.source_revision_config.framework_config_path, "slipway.json");
      assert.deepEqual(await storedSecrets(ctx, first.latest_revision_id), [["KEY", "k-1"]]);
      // Another deployment cannot use this upload.
      const other = await call<Deployment>(ctx, "POST", "/v2/deployments", {
        name: uniqueName("up"),
        source: "internal_source",
        source_revision_config: { framework_config_path: "slipway.json" },
      });
      assert.deepEqual(
        locs(
          await patch(other.body.id, {
            source_revision_config: { source_tarball_path: url.body.source_tarball_path },
          }),
        ),
        ["body.source_revision_config.source_tarball_path"],
      );
    });

    it("50 concurrent revision-creating PATCHes: 51 distinct revisions, latest on the newest", async () => {
      const ctx = suite.ctx;
      const d = await createDocker(ctx);
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          patch(d.id, { source_revision_config: { image_uri: `r.example/app:${i}` } }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        Array(50).fill(200),
      );
      const page = await call<RevisionPage>(ctx, "GET", `/v2/deployments/${d.id}/revisions?limit=100`);
      assert.equal(page.body.resources.length, 51);
      assert.equal(new Set(page.body.resources.map((r) => r.id)).size, 51);
      const seqs = await rows<{ id: string; seq: number }>(
        ctx.db.orm,
        sql`SELECT id, seq FROM revisions WHERE deployment_id = ${d.id} ORDER BY seq`,
      );
      assert.deepEqual(
        seqs.map((r) => r.seq),
        Array.from({ length: 51 }, (_, i) => i + 1),
      );
      const newest = seqs[50]?.id;
      const after = await get(d.id);
      assert.equal(after.body.latest_revision_id, newest);
      assert.equal(page.body.resources[0]?.id, newest, "newest first");
      assert.equal(
        page.body.resources.filter((r) => r.status === "QUEUED").length,
        1,
        "older queued ones skipped",
      );
      const newestResponse = results.find((r) => r.body.latest_revision_id === newest);
      assert.ok(newestResponse, "one PATCH answered with the newest revision");
    });

    it("a deployment being deleted refuses PATCH with 400", async () => {
      const d = await createDocker(suite.ctx);
      await suite.ctx.db.orm.execute(
        sql`UPDATE deployments SET status = 'AWAITING_DELETE' WHERE id = ${d.id}`,
      );
      const res = await patch(d.id, { image_version: "x" });
      assert.equal(res.status, 400);
      assert.equal((await get(d.id)).body.image_version, null);
    });
  },
  { env: { SLIPWAY_LOCAL_GIT_ROOTS: git.root } },
);
