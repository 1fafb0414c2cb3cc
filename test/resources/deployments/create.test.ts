import assert from "node:assert/strict";
import { before, it } from "node:test";
import { sql } from "drizzle-orm";
import { secretContextId } from "../../../src/core/revisions/secrets-store.ts";
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
import { forEachDatabase } from "../../helpers/harness.ts";

const git = makeGitRoot();

const NULL_REVISION_CONFIG = {
  repo_ref: null,
  framework_config_path: null,
  image_uri: null,
  source_tarball_path: null,
  repo_commit_sha: null,
};

forEachDatabase(
  "POST /v2/deployments",
  (suite) => {
    let codehost: Codehost;
    const post = (
      body: Record<string, unknown>,
      opts: { key?: string; headers?: Record<string, string> } = {},
    ) => call<Deployment>(suite.ctx, "POST", "/v2/deployments", body, opts);
    const codehostBody = (extra: { sc?: object; src?: object; top?: object } = {}) => ({
      name: uniqueName("ch"),
      source: "codehost",
      source_config: { integration_id: codehost.integrationId, repo_url: codehost.repoUrl, ...extra.sc },
      source_revision_config: { repo_ref: "main", framework_config_path: "slipway.json", ...extra.src },
      ...extra.top,
    });

    // A real local_git integration.
    before(async () => {
      codehost = await createIntegration(suite.ctx, git.team);
    });

    authMatrix(suite, {
      method: "POST",
      url: () => "/v2/deployments",
      payload: () => ({
        name: "matrix",
        source: "external_docker",
        source_revision_config: { image_uri: "x:1" },
      }),
      workspace: true,
    });

    it("external_docker: 201 with the exact record, a QUEUED revision, a tracing project, encrypted secrets", async () => {
      const ctx = suite.ctx;
      const name = uniqueName("docker");
      const res = await post({
        name,
        source: "external_docker",
        source_config: {
          custom_url: "https://app.example.com",
          resource_spec: { min_scale: 1, max_scale: 2 },
        },
        source_revision_config: { image_uri: "registry.example/app:1" },
        secrets: [{ name: "API_TOKEN", value: "s3cr3t-value" }],
        secret_references: [{ name: "DB_PASS", secret_name: "db-creds", secret_key: "password" }],
        image_version: "1.0.0",
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assertMatches(deploymentSchema, res.body);
      const d = res.body;
      assert.equal(d.name, name);
      assert.equal(d.tenant_id, ctx.workspaceId);
      assert.equal(d.status, "AWAITING_DATABASE");
      assert.equal(d.deployment_type, "dev");
      assert.equal(d.image_version, "1.0.0");
      assert.equal(d.active_revision_id, null);
      assert.equal(d.source_config.custom_url, "https://app.example.com");
      assert.deepEqual(d.source_config.resource_spec, { min_scale: 1, max_scale: 2 });
      assert.deepEqual(d.source_revision_config, {
        ...NULL_REVISION_CONFIG,
        image_uri: "registry.example/app:1",
      });
      assert.deepEqual(d.secrets, [{ name: "API_TOKEN", value: "********" }]);
      assert.deepEqual(d.secret_references, [
        { name: "DB_PASS", secret_name: "db-creds", secret_key: "password" },
      ]);
      assert.ok(d.latest_revision_id);

      const rev = await call<Revision>(
        ctx,
        "GET",
        `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`,
      );
      assert.equal(rev.status, 200);
      assert.equal(rev.body.status, "QUEUED");
      assert.deepEqual(
        rev.body.status_history.map((h) => h.status),
        ["QUEUED"],
      );

      const projects = await call<{ name: string; deployment_id: string }[]>(
        ctx,
        "GET",
        `/v1/tracing-projects?name=${name}`,
      );
      assert.equal(projects.status, 200);
      assert.equal(projects.body.length, 1);
      assert.equal(projects.body[0]?.deployment_id, d.id);

      type Stored = { id: string; name: string; value_enc: string; deployment_id: string | null };
      const stored = await rows<Stored>(
        ctx.db.orm,
        sql`SELECT id, name, value_enc, deployment_id FROM revision_secrets WHERE revision_id = ${d.latest_revision_id}`,
      );
      assert.equal(stored.length, 1);
      const row = stored[0] as Stored;
      assert.ok(!row.value_enc.includes("s3cr3t-value"), "stored encrypted");
      assert.equal(
        ctx.keyring.decrypt(
          row.value_enc,
          encryptionContext("revision_secrets", "value_enc", secretContextId(row)),
        ),
        "s3cr3t-value",
      );
      assert.ok(!ctx.readLogs().includes("s3cr3t-value"), "never logged");
    });

    it("external_docker: image_uri required; other sources' fields forbidden; URL and listener rules", async () => {
      assert.deepEqual(locs(await post({ name: uniqueName(), source: "external_docker" })), [
        "body.source_revision_config.image_uri",
      ]);
      const res = await post({
        name: uniqueName(),
        source: "external_docker",
        source_config: {
          integration_id: codehost.integrationId,
          repo_url: "file:///x",
          build_on_push: true,
          install_command: "npm ci",
          build_command: "npm run build",
          custom_url: "ftp://nope",
          listener_config: { k8s_namespace: "apps" },
        },
        source_revision_config: { image_uri: "a b", repo_ref: "main", source_tarball_path: "t.tgz" },
      });
      assert.deepEqual(locs(res).sort(), [
        "body.source_config.build_command",
        "body.source_config.build_on_push",
        "body.source_config.custom_url",
        "body.source_config.install_command",
        "body.source_config.integration_id",
        "body.source_config.listener_config",
        "body.source_config.repo_url",
        "body.source_revision_config.image_uri",
        "body.source_revision_config.repo_ref",
        "body.source_revision_config.source_tarball_path",
      ]);
      const withListener = await createDocker(suite.ctx, {
        source_config: {
          listener_id: suite.ctx.listenerId,
          listener_config: { k8s_namespace: "seeded" },
        },
      });
      assert.deepEqual(withListener.source_config.listener_config, { k8s_namespace: "seeded" });
      assert.equal(withListener.source_config.listener_id, suite.ctx.listenerId);
    });

    it("internal_docker: no image → no revision; with an image → a revision; custom_url is the server's", async () => {
      const ctx = suite.ctx;
      const bare = await post({
        name: uniqueName("idk"),
        source: "internal_docker",
        secrets: [{ name: "A", value: "1" }],
      });
      assert.equal(bare.status, 201, JSON.stringify(bare.body));
      assertMatches(deploymentSchema, bare.body);
      assert.equal(bare.body.latest_revision_id, null);
      assert.deepEqual(bare.body.source_revision_config, NULL_REVISION_CONFIG);
      assert.deepEqual(bare.body.secrets, []);
      assert.equal(bare.body.source_config.custom_url, `http://${bare.body.name}.localhost:8081`);
      assert.equal(ctx.config.apps.domain, "localhost");

      const withImage = await post({
        name: uniqueName("idk"),
        source: "internal_docker",
        source_revision_config: { image_uri: "registry.example/x:2" },
      });
      assert.equal(withImage.status, 201);
      assert.ok(withImage.body.latest_revision_id);
      assert.equal(withImage.body.source_revision_config.image_uri, "registry.example/x:2");

      const bad = await post({
        name: uniqueName(),
        source: "internal_docker",
        source_config: {
          custom_url: "https://mine.example",
          listener_id: "6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e",
        },
        secret_references: [{ name: "X", secret_name: "s", secret_key: "k" }],
        source_revision_config: { repo_ref: "main" },
      });
      // internal_docker may name a listener (it runs its image), but only with a namespace.
      assert.deepEqual(locs(bad).sort(), [
        "body.secret_references",
        "body.source_config.custom_url",
        "body.source_config.listener_config.k8s_namespace",
        "body.source_revision_config.repo_ref",
      ]);
    });

    it("internal_source: no tarball or no framework_config_path → no revision; an unknown tarball → 422", async () => {
      for (const body of [{}, { source_revision_config: {} }]) {
        const none = await post({ name: uniqueName("src"), source: "internal_source", ...body });
        assert.equal(none.status, 201, JSON.stringify(none.body));
        assert.equal(none.body.latest_revision_id, null);
        assert.equal(none.body.status, "AWAITING_DATABASE");
      }
      const bare = await post({
        name: uniqueName("src"),
        source: "internal_source",
        source_revision_config: { framework_config_path: "slipway.json" },
      });
      assert.equal(bare.status, 201, JSON.stringify(bare.body));
      assert.equal(bare.body.latest_revision_id, null);
      const name = uniqueName("src");
      const unknownTarball = await post({
        name,
        source: "internal_source",
        source_revision_config: {
          framework_config_path: "slipway.json",
          source_tarball_path: "uploads/nope.tar.gz",
        },
      });
      assert.deepEqual(locs(unknownTarball), ["body.source_revision_config.source_tarball_path"]);
      const after = await call<{ resources: Deployment[] }>(
        suite.ctx,
        "GET",
        `/v2/deployments?name_contains=${name}`,
      );
      assert.equal(after.body.resources.length, 0, "a refused create leaves nothing behind");
      const projects = await call<unknown[]>(suite.ctx, "GET", `/v1/tracing-projects?name=${name}`);
      assert.equal(projects.body.length, 0, "nor a tracing project");
      const forbidden = await post({
        name: uniqueName(),
        source: "internal_source",
        source_revision_config: {
          framework_config_path: "../../etc/passwd",
          repo_ref: "main",
          image_uri: "x:1",
        },
      });
      assert.deepEqual(locs(forbidden).sort(), [
        "body.source_revision_config.framework_config_path",
        "body.source_revision_config.image_uri",
        "body.source_revision_config.repo_ref",
      ]);
    });

    it("internal_template: a built-in template in repo_ref; unknown or missing → 422", async () => {
      const ok = await post({
        name: uniqueName("tpl"),
        source: "internal_template",
        source_revision_config: { repo_ref: "hello-http" },
      });
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.ok(ok.body.latest_revision_id);
      assert.equal(ok.body.source_revision_config.repo_ref, "hello-http");
      assert.deepEqual(
        locs(
          await post({
            name: uniqueName(),
            source: "internal_template",
            source_revision_config: { repo_ref: "no-such-template" },
          }),
        ),
        ["body.source_revision_config.repo_ref"],
      );
      assert.deepEqual(
        locs(
          await post({
            name: uniqueName(),
            source: "internal_template",
            source_revision_config: { image_uri: "x:1" },
          }),
        ).sort(),
        ["body.source_revision_config.image_uri", "body.source_revision_config.repo_ref"],
      );
    });

    it("codehost: a real repository and ref; custom_url set by the server", async () => {
      const body = codehostBody({ sc: { build_on_push: true, install_command: "npm ci" } });
      const res = await post(body);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assertMatches(deploymentSchema, res.body);
      assert.equal(res.body.source_config.integration_id, codehost.integrationId);
      assert.equal(res.body.source_config.repo_url, codehost.repoUrl);
      assert.equal(res.body.source_config.build_on_push, true);
      assert.equal(res.body.source_config.install_command, "npm ci");
      assert.equal(res.body.source_config.custom_url, `http://${body.name}.localhost:8081`);
      assert.equal(res.body.source_revision_config.repo_ref, "main");
      assert.equal(res.body.source_revision_config.repo_commit_sha, null);
      const tag = await post(codehostBody({ src: { repo_ref: "refs/tags/v1" } }));
      assert.equal(tag.status, 201, JSON.stringify(tag.body));
    });

    it("codehost: required fields, forbidden fields, refs and build_on_push rules", async () => {
      const missing = await post({ name: uniqueName(), source: "codehost" });
      assert.deepEqual(locs(missing).sort(), [
        "body.source_config.integration_id",
        "body.source_config.repo_url",
        "body.source_revision_config.framework_config_path",
        "body.source_revision_config.repo_ref",
      ]);
      const forbidden = await post(
        codehostBody({
          sc: { custom_url: "https://x.example", listener_id: "6f1c3a36-7f5e-4d55-9d2b-1f1f0e0e0e0e" },
          src: { image_uri: "x:1", source_tarball_path: "a.tgz" },
          top: { secret_references: [{ name: "X", secret_name: "s", secret_key: "k" }] },
        }),
      );
      assert.deepEqual(locs(forbidden).sort(), [
        "body.secret_references",
        "body.source_config.custom_url",
        "body.source_config.listener_id",
        "body.source_revision_config.image_uri",
        "body.source_revision_config.source_tarball_path",
      ]);
      assert.deepEqual(locs(await post(codehostBody({ src: { repo_ref: "bad..ref" } }))), [
        "body.source_revision_config.repo_ref",
      ]);
      assert.deepEqual(
        locs(await post(codehostBody({ sc: { build_on_push: true }, src: { repo_ref: "refs/tags/v1" } }))),
        ["body.source_config.build_on_push"],
      );
    });

    it("codehost: the integration, repository and ref are checked with the host (422 each)", async () => {
      const ctx = suite.ctx;
      assert.deepEqual(
        locs(await post(codehostBody({ sc: { integration_id: "0d6f52a6-1111-4a4a-9b9b-000000000000" } }))),
        ["body.source_config.integration_id"],
      );
      assert.deepEqual(locs(await post(codehostBody({ sc: { repo_url: `${codehost.repoUrl}-other` } }))), [
        "body.source_config.repo_url",
      ]);
      assert.deepEqual(locs(await post(codehostBody({ src: { repo_ref: "no-such-branch" } }))), [
        "body.source_revision_config.repo_ref",
      ]);
      // Another organization's integration is not this organization's.
      const otherIntegration = await call<{ id: string }>(
        ctx,
        "POST",
        "/v1/integrations/forge/codehost",
        { kind: "local_git", path: git.team },
        { key: ctx.other.admin },
      );
      assert.equal(otherIntegration.status, 201, JSON.stringify(otherIntegration.body));
      assert.deepEqual(locs(await post(codehostBody({ sc: { integration_id: otherIntegration.body.id } }))), [
        "body.source_config.integration_id",
      ]);
    });

    it("names: format and length at and past the bounds; unique per workspace (409)", async () => {
      for (const bad of [
        "",
        "Upper",
        "1starts-with-digit",
        "-dash",
        "under_score",
        "dot.ted",
        `a${"b".repeat(63)}`,
      ]) {
        const res = await post({
          name: bad,
          source: "external_docker",
          source_revision_config: { image_uri: "x:1" },
        });
        assert.deepEqual(locs(res), ["body.name"], bad);
      }
      const longest = `a${"b".repeat(62)}`;
      const first = await createDocker(suite.ctx, { name: longest });
      assert.equal(first.name, longest);
      assert.equal((await createDocker(suite.ctx, { name: "x" })).name, "x");
      const dup = await post({
        name: longest,
        source: "external_docker",
        source_revision_config: { image_uri: "x:1" },
      });
      assert.equal(dup.status, 409);
      assert.equal(typeof (dup.body as unknown as { detail: string }).detail, "string");
      // The same name in another workspace of the organization is another deployment.
      const elsewhere = await createDocker(suite.ctx, { name: longest }, { key: suite.ctx.keys.boundMember });
      assert.equal(elsewhere.tenant_id, suite.ctx.workspace2Id);
      const viaHeader = await createDocker(
        suite.ctx,
        { name: uniqueName() },
        { headers: { "x-tenant-id": suite.ctx.workspace2Id } },
      );
      assert.equal(viaHeader.tenant_id, suite.ctx.workspace2Id);
    });

    it("secrets: C identifiers, unique, not reserved, no mask at create; references likewise", async () => {
      const res = await post({
        name: uniqueName(),
        source: "external_docker",
        source_revision_config: { image_uri: "x:1" },
        secrets: [
          { name: "1BAD", value: "x" },
          { name: "OK_1", value: "x" },
          { name: "OK_1", value: "y" },
          { name: "PORT", value: "1" },
          { name: "DATABASE_URI", value: "1" },
          { name: "POSTGRES_URI", value: "1" },
          { name: "REDIS_URI", value: "1" },
          { name: "SLIPWAY_TOKEN", value: "1" },
          { name: "MASKED", value: "********" },
        ],
        secret_references: [
          { name: "OK_1", secret_name: "s", secret_key: "k" },
          { name: "REF", secret_name: "Not_A_Name", secret_key: "bad key" },
        ],
      });
      assert.deepEqual(locs(res), [
        "body.secrets.0.name",
        "body.secrets.2.name",
        "body.secrets.3.name",
        "body.secrets.4.name",
        "body.secrets.5.name",
        "body.secrets.6.name",
        "body.secrets.7.name",
        "body.secrets.8.value",
        "body.secret_references.0.name",
        "body.secret_references.1.secret_name",
        "body.secret_references.1.secret_key",
      ]);
      const missingValue = await post({
        name: uniqueName(),
        source: "external_docker",
        source_revision_config: { image_uri: "x:1" },
        secrets: [{ name: "A" }],
      });
      assert.deepEqual(locs(missingValue), ["body.secrets.0.value"]);
    });

    it("deployment_type: top level or inside source_config; conflicting or unknown → 422", async () => {
      assert.equal((await createDocker(suite.ctx, { deployment_type: "prod" })).deployment_type, "prod");
      assert.equal(
        (await createDocker(suite.ctx, { source_config: { deployment_type: "dev_free" } })).deployment_type,
        "dev_free",
      );
      assert.deepEqual(
        locs(
          await post({
            name: uniqueName(),
            source: "external_docker",
            source_revision_config: { image_uri: "x:1" },
            deployment_type: "prod",
            source_config: { deployment_type: "dev" },
          }),
        ),
        ["body.source_config.deployment_type"],
      );
      assert.deepEqual(
        locs(
          await post({
            name: uniqueName(),
            source: "external_docker",
            source_revision_config: { image_uri: "x:1" },
            deployment_type: "huge",
          }),
        ),
        ["body.deployment_type"],
      );
    });

    it("shape: unknown fields are ignored; wrong types and sources are 422; nulls mean not given", async () => {
      const d = await createDocker(suite.ctx, {
        tracked_packages: ["x"],
        source_config: { tracked: 1, resource_spec: { min_scale: null, labels: { team: "a" }, unknown: 1 } },
        secrets: null,
        secret_references: null,
        image_version: null,
      });
      assert.deepEqual(d.source_config.resource_spec, { labels: { team: "a" } });
      assert.equal(d.image_version, null);
      assert.deepEqual(d.secrets, []);
      assert.deepEqual(locs(await post({ name: uniqueName(), source: "ftp" })), ["body.source"]);
      assert.deepEqual(locs(await post({ source: "external_docker" })), ["body.name"]);
      assert.deepEqual(
        locs(
          await post({
            name: uniqueName(),
            source: "external_docker",
            source_revision_config: { image_uri: 5 },
            source_config: { resource_spec: { min_scale: -1, cpu: "1" } },
          }),
        ).sort(),
        [
          "body.source_config.resource_spec.cpu",
          "body.source_config.resource_spec.min_scale",
          "body.source_revision_config.image_uri",
        ],
      );
      assert.deepEqual(
        locs(
          await post({
            name: uniqueName(),
            source: "external_docker",
            source_revision_config: { image_uri: "x:1" },
            source_config: { resource_spec: { min_scale: 3, max_scale: 2 } },
          }),
        ),
        ["body.source_config.resource_spec.min_scale"],
      );
      const notJson = await suite.ctx.app.inject({
        method: "POST",
        url: "/v2/deployments",
        headers: { "x-api-key": suite.ctx.keys.member, "content-type": "text/plain" },
        payload: "name=x",
      });
      assert.equal(notJson.statusCode, 415);
    });

    it("Idempotency-Key: the same body replays the first response; another body → 422", async () => {
      const ctx = suite.ctx;
      const body = {
        name: uniqueName("idem"),
        source: "external_docker",
        source_revision_config: { image_uri: "x:1" },
      };
      const headers = { "idempotency-key": `key-${body.name}` };
      const first = await post(body, { headers });
      assert.equal(first.status, 201);
      const again = await post(
        { source_revision_config: { image_uri: "x:1" }, source: body.source, name: body.name },
        { headers },
      );
      assert.equal(again.status, 201);
      assert.equal(again.headers["idempotent-replayed"], "true");
      assert.deepEqual(again.body, first.body);
      const other = await post({ ...body, image_version: "2" }, { headers });
      assert.deepEqual(locs(other), ["header.idempotency-key"]);
      // Another workspace has its own keys.
      const ws2 = await post(body, { headers, key: ctx.keys.boundMember });
      assert.equal(ws2.status, 201);
      assert.notEqual(ws2.body.id, first.body.id);
      assert.deepEqual(locs(await post(body, { headers: { "idempotency-key": "has space" } })), [
        "header.idempotency-key",
      ]);
      // A request refused with a 4xx does not use up its key.
      const refusedKey = { "idempotency-key": `refused-${body.name}` };
      assert.equal((await post({ ...body, name: "Bad" }, { headers: refusedKey })).status, 422);
      const retried = await post({ ...body, name: `${body.name}-b` }, { headers: refusedKey });
      assert.equal(retried.status, 201);
    });

    it("Idempotency-Key: after 24 hours the key is free again", async () => {
      const ctx = suite.ctx;
      const body = {
        name: uniqueName("old"),
        source: "external_docker",
        source_revision_config: { image_uri: "x:1" },
      };
      const headers = { "idempotency-key": `old-${body.name}` };
      assert.equal((await post(body, { headers })).status, 201);
      await ctx.db.orm.execute(
        sql`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = ${headers["idempotency-key"]}`,
      );
      const fresh = await post({ ...body, name: `${body.name}-2` }, { headers });
      assert.equal(fresh.status, 201);
      assert.equal(fresh.headers["idempotent-replayed"], undefined);
      assert.equal(fresh.body.name, `${body.name}-2`);
    });

    it("Idempotency-Key: concurrent requests with one key make one deployment", async () => {
      const body = {
        name: uniqueName("idc"),
        source: "external_docker",
        source_revision_config: { image_uri: "x:1" },
      };
      const headers = { "idempotency-key": `conc-${body.name}` };
      const results = await Promise.all(Array.from({ length: 8 }, () => post(body, { headers })));
      assert.deepEqual(
        results.map((r) => r.status),
        Array(8).fill(201),
      );
      assert.equal(new Set(results.map((r) => r.body.id)).size, 1);
    });

    it("concurrent creates of one name: exactly one 201, the others 409", async () => {
      const name = uniqueName("race");
      const results = await Promise.all(
        Array.from({ length: 12 }, () =>
          post({ name, source: "external_docker", source_revision_config: { image_uri: "x:1" } }),
        ),
      );
      const codes = results.map((r) => r.status).sort();
      assert.deepEqual(codes, [201, ...Array(11).fill(409)]);
      const list = await call<{ resources: Deployment[] }>(
        suite.ctx,
        "GET",
        `/v2/deployments?name_contains=${name}`,
      );
      assert.equal(list.body.resources.length, 1);
    });

    it("a deleted deployment's name is free again and its tracing project is re-attached", async () => {
      const ctx = suite.ctx;
      const first = await createDocker(ctx, { name: uniqueName("again") });
      const [project] = (
        await call<{ id: string; deployment_id: string | null }[]>(
          ctx,
          "GET",
          `/v1/tracing-projects?name=${first.name}`,
        )
      ).body;
      assert.equal(project?.deployment_id, first.id);
      const del = await call(ctx, "DELETE", `/v2/deployments/${first.id}`);
      assert.equal(del.status, 204);
      const detached = await call<{ id: string; deployment_id: string | null }>(
        ctx,
        "GET",
        `/v1/tracing-projects/${project?.id}`,
      );
      assert.equal(detached.body.deployment_id, null);
      const second = await createDocker(ctx, { name: first.name });
      const reattached = await call<{ id: string; deployment_id: string | null }[]>(
        ctx,
        "GET",
        `/v1/tracing-projects?name=${first.name}`,
      );
      assert.equal(reattached.body.length, 1);
      assert.equal(reattached.body[0]?.id, project?.id);
      assert.equal(reattached.body[0]?.deployment_id, second.id);
    });
  },
  { env: { SLIPWAY_LOCAL_GIT_ROOTS: git.root } },
);
