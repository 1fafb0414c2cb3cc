import assert from "node:assert/strict";
import { it } from "node:test";
import type { RevisionWork } from "../../src/reconciler/work.ts";
import { SourceError } from "../../src/runtimes/interface.ts";
import { findTemplate } from "../../src/templates/catalog.ts";
import { resolverOf } from "../../src/wiring/reconciler.ts";
import { AppRepo, gitRoot } from "../e2e/stack.ts";
import { forEachDatabase } from "../helpers/harness.ts";

const git = gitRoot();
const repo = new AppRepo(git.team, "svc");
const sha = repo.commit({ version: "1" });

function work(source: string, rev: Record<string, unknown>, dep: Record<string, unknown> = {}): RevisionWork {
  return {
    id: crypto.randomUUID(),
    deploymentId: crypto.randomUUID(),
    seq: 1,
    status: "AWAITING_BUILD",
    source,
    runtime: "local",
    sourceRevisionConfig: rev,
    resourceSpec: null,
    buildConfig: {},
    attempts: 0,
    deploymentName: "svc",
    deploymentType: "dev",
    deploymentStatus: "READY",
    deploymentSourceConfig: dep,
    organizationId: crypto.randomUUID(),
    workspaceId: crypto.randomUUID(),
    activeRevisionId: null,
  };
}

forEachDatabase(
  "reconciler source resolution",
  (suite) => {
    it("codehost: the integration's clone URL, the ref, and a pinned commit for redeploys", async () => {
      const ctx = suite.ctx;
      const created = await ctx.app.inject({
        method: "POST",
        url: "/v1/integrations/forge/codehost",
        headers: ctx.headers(ctx.keys.admin, { "content-type": "application/json" }),
        payload: JSON.stringify({ kind: "local_git", path: git.team }),
      });
      assert.equal(created.statusCode, 201, created.body);
      const integrationId = created.json<{ id: string }>().id;
      const repos = await ctx.app.inject({
        method: "GET",
        url: `/v1/integrations/forge/codehost/${integrationId}/repos`,
        headers: ctx.headers(ctx.keys.admin),
      });
      const repoUrl = repos.json<{ url: string }[]>()[0]?.url;
      const resolve = resolverOf(ctx.db, ctx.config);
      const loc = await resolve(
        work(
          "codehost",
          { repo_ref: "main", repo_commit_sha: sha },
          { integration_id: integrationId, repo_url: repoUrl },
        ),
      );
      assert.equal(loc.kind, "git");
      assert.ok(loc.kind === "git" && loc.ref === "main" && loc.commitSha === sha);
      await assert.rejects(
        resolve(
          work("codehost", { repo_ref: "main" }, { integration_id: crypto.randomUUID(), repo_url: repoUrl }),
        ),
        SourceError,
      );
      await assert.rejects(
        resolve(work("codehost", {}, { integration_id: integrationId, repo_url: repoUrl })),
        SourceError,
      );
    });

    it("templates, uploads and images; anything unresolvable is a SourceError (CREATE_FAILED)", async () => {
      const resolve = resolverOf(suite.ctx.db, suite.ctx.config);
      assert.deepEqual(await resolve(work("internal_template", { repo_ref: "hello-http" })), {
        kind: "directory",
        path: findTemplate("hello-http")?.path,
      });
      await assert.rejects(resolve(work("internal_template", { repo_ref: "nope" })), SourceError);
      await assert.rejects(
        resolve(work("internal_source", { source_tarball_path: "uploads/does-not-exist.tar.gz" })),
        SourceError,
      );
      await assert.rejects(resolve(work("internal_source", {})), SourceError);
      assert.deepEqual(await resolve(work("external_docker", { image_uri: "nginx:1" })), {
        kind: "image",
        imageUri: "nginx:1",
      });
      await assert.rejects(resolve(work("internal_docker", {})), SourceError);
      await assert.rejects(resolve(work("martian", {})), SourceError);
    });
  },
  { env: { SLIPWAY_LOCAL_GIT_ROOTS: git.root } },
);
