import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, it } from "node:test";
import { pathToFileURL } from "node:url";
import { cloneSourceFor } from "../../src/codehost/clone.ts";
import { HostUnavailable, IntegrationNotFound, RepoNotFound } from "../../src/codehost/errors.ts";
import { FieldsInvalid } from "../../src/core/errors.ts";
import { integrations } from "../../src/db/schema/codehost.ts";
import type { AppDeps } from "../../src/deps.ts";
import { verifyCodehost } from "../../src/resources/deployments/source-rules.ts";
import { makeGitRoot } from "../helpers/git-fixtures.ts";
import { forEachDatabase } from "../helpers/harness.ts";

const fx = makeGitRoot();

/** The rule create and patch apply: the codehost source checked with its host, 422 at the field at fault. */
const verifySource = (deps: AppDeps, orgId: string, input: Parameters<typeof verifyCodehost>[3]) =>
  verifyCodehost(deps.db.orm, deps.config, orgId, input);
const BASE = "/v1/integrations/forge/codehost";

/** Asserts a 422 whose single item names `loc`. */
async function rejectsAt(promise: Promise<unknown>, loc: string[]): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof FieldsInvalid, `expected a 422, got ${String(err)}`);
    assert.deepEqual(
      err.items.map((i) => i.loc),
      [loc],
    );
    return true;
  });
}

forEachDatabase(
  "verifyCodehostSource and cloneSourceFor (local git)",
  (suite) => {
    let integrationId = "";
    let otherOrgIntegrationId = "";
    const alphaUrl = pathToFileURL(join(fx.team, "alpha")).href;
    const betaUrl = pathToFileURL(join(fx.team, "beta.git")).href;

    before(async () => {
      const ctx = suite.ctx;
      const res = await ctx.app.inject({
        method: "POST",
        url: BASE,
        headers: ctx.headers(ctx.keys.admin),
        payload: { kind: "local_git", path: fx.team },
      });
      assert.equal(res.statusCode, 201, res.body);
      integrationId = (res.json() as { id: string }).id;
      const [row] = await ctx.db.orm
        .insert(integrations)
        .values({
          organizationId: ctx.other.orgId,
          kind: "local_git",
          config: { path: fx.team },
          name: "theirs",
        })
        .returning();
      otherOrgIntegrationId = (row as { id: string }).id;
    });

    it("accepts a listed repository with a branch, a nested branch, refs/heads/… and refs/tags/…", async () => {
      const deps = suite.ctx.app.deps;
      for (const repoRef of ["main", "feature/x", "refs/heads/main", "refs/tags/v1"]) {
        await verifySource(deps, suite.ctx.orgId, { integrationId, repoUrl: alphaUrl, repoRef });
      }
      // A bare repository, at its HEAD branch; the URL with a trailing slash names the same one.
      await verifySource(deps, suite.ctx.orgId, {
        integrationId,
        repoUrl: betaUrl,
        repoRef: "develop",
      });
      await verifySource(deps, suite.ctx.orgId, {
        integrationId,
        repoUrl: `${alphaUrl}/`,
        repoRef: "main",
      });
    });

    it("an integration of another organization, unknown, or not a uuid → 422 at source_config.integration_id", async () => {
      const { app, orgId } = suite.ctx;
      for (const id of [otherOrgIntegrationId, randomUUID(), "nope"]) {
        await rejectsAt(
          verifySource(app.deps, orgId, { integrationId: id, repoUrl: alphaUrl, repoRef: "main" }),
          ["body", "source_config", "integration_id"],
        );
      }
    });

    it("a repository the integration does not offer → 422 at source_config.repo_url", async () => {
      const { app, orgId } = suite.ctx;
      const notOffered = [
        pathToFileURL(join(fx.outside, "secret")).href, // outside the directory
        pathToFileURL(join(fx.team, "escape")).href, // a symlink out of it
        pathToFileURL(join(fx.team, "notes", "nested")).href, // not directly under it
        pathToFileURL(join(fx.team, "notes")).href, // not a repository
        "https://github.com/acme/alpha",
        "",
      ];
      for (const repoUrl of notOffered) {
        await rejectsAt(verifySource(app.deps, orgId, { integrationId, repoUrl, repoRef: "main" }), [
          "body",
          "source_config",
          "repo_url",
        ]);
      }
    });

    it("a ref that does not exist, or cannot be a ref → 422 at source_revision_config.repo_ref", async () => {
      const { app, orgId } = suite.ctx;
      const missing = [
        "nope",
        "refs/tags/v2",
        "refs/heads/nope",
        "develop",
        "refs/remotes/origin/main",
        "v1",
      ];
      const malformed = ["", "-x", "a..b", "a b", "refs/tags/", "main.lock", "HEAD~1", "x\u0000y"];
      for (const repoRef of [...missing, ...malformed]) {
        await rejectsAt(verifySource(app.deps, orgId, { integrationId, repoUrl: alphaUrl, repoRef }), [
          "body",
          "source_revision_config",
          "repo_ref",
        ]);
      }
      // The empty repository has no branch at all yet, even though HEAD names main.
      await rejectsAt(
        verifySource(app.deps, orgId, {
          integrationId,
          repoUrl: pathToFileURL(join(fx.team, "empty")).href,
          repoRef: "main",
        }),
        ["body", "source_revision_config", "repo_ref"],
      );
    });

    it("a directory that can no longer be read → 502", async () => {
      const ctx = suite.ctx;
      const [row] = await ctx.db.orm
        .insert(integrations)
        .values({
          organizationId: ctx.orgId,
          kind: "local_git",
          config: { path: join(fx.root, `gone-${ctx.kind}`) },
          name: "gone",
        })
        .returning();
      await assert.rejects(
        verifySource(ctx.app.deps, ctx.orgId, {
          integrationId: (row as { id: string }).id,
          repoUrl: alphaUrl,
          repoRef: "main",
        }),
        (err: unknown) => err instanceof HostUnavailable,
      );
    });

    it("cloneSourceFor gives a path git can clone, at the ref that was verified", async () => {
      const ctx = suite.ctx;
      const source = await cloneSourceFor(ctx.app.deps.db.orm, ctx.app.deps.config, integrationId, alphaUrl);
      assert.equal(source, join(fx.team, "alpha"));
      const dest = mkdtempSync(join(tmpdir(), "slipway-clone-"));
      try {
        execFileSync("git", ["clone", "-q", "--branch", "feature/x", source, join(dest, "c")]);
        assert.match(readFileSync(join(dest, "c", "README.md"), "utf8"), /alpha/);
        const bare = await cloneSourceFor(ctx.app.deps.db.orm, ctx.app.deps.config, integrationId, betaUrl);
        execFileSync("git", ["clone", "-q", bare, join(dest, "b")]);
        assert.match(readFileSync(join(dest, "b", "README.md"), "utf8"), /seed/);
      } finally {
        rmSync(dest, { recursive: true, force: true });
      }
    });

    it("cloneSourceFor refuses an unknown integration or a repository it does not offer (404)", async () => {
      const deps = suite.ctx.app.deps;
      const outsideUrl = pathToFileURL(join(fx.outside, "secret")).href;
      for (const [id, url] of [
        [randomUUID(), alphaUrl],
        [integrationId, outsideUrl],
      ] as const) {
        await assert.rejects(
          cloneSourceFor(deps.db.orm, deps.config, id, url),
          (err: unknown) => err instanceof IntegrationNotFound || err instanceof RepoNotFound,
        );
      }
    });
  },
  { env: { SLIPWAY_LOCAL_GIT_ROOTS: fx.root } },
);
