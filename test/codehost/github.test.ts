import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { after, before, it } from "node:test";
import { cloneSourceFor } from "../../src/codehost/clone.ts";
import { HostUnavailable } from "../../src/codehost/errors.ts";
import type { GithubApp } from "../../src/codehost/github/client.ts";
import { GithubDriver, installationAccount } from "../../src/codehost/github/driver.ts";
import { FieldsInvalid } from "../../src/core/errors.ts";
import { integrations } from "../../src/db/schema/codehost.ts";
import type { AppDeps } from "../../src/deps.ts";
import { verifyCodehost } from "../../src/resources/deployments/source-rules.ts";
import { GithubStandin, generateAppKeys, manyRepos } from "../helpers/github-standin.ts";

/** The rule create and patch apply: the codehost source checked with its host, 422 at the field at fault. */
const verifySource = (deps: AppDeps, orgId: string, input: Parameters<typeof verifyCodehost>[3]) =>
  verifyCodehost(deps.db.orm, deps.config, orgId, input);

import { createTestContext, forEachDatabase, type TestContext } from "../helpers/harness.ts";

const BASE = "/v1/integrations/forge/codehost";
const APP_ID = "31337";
const INSTALLATION = 4242;
const keys = generateAppKeys();
const wrongKeys = generateAppKeys();
const repos = [
  ...manyRepos("acme", 230),
  { id: 9001, name: "empty-repo", owner: "acme", default_branch: "main", refs: [] },
];
const standin = await GithubStandin.start({
  appId: APP_ID,
  publicKey: keys.publicKey,
  installations: {
    [INSTALLATION]: { account: "acme", repos },
    77: { account: "globex", repos: manyRepos("globex", 3, 5000) },
  },
});
after(() => standin.close());

const env = (overrides: Record<string, string> = {}) => ({
  SLIPWAY_GITHUB_APP_ID: APP_ID,
  // Escaped newlines, as a private key usually sits in an environment variable.
  SLIPWAY_GITHUB_PRIVATE_KEY: keys.privateKey.replace(/\n/g, "\\n"),
  SLIPWAY_GITHUB_API_URL: standin.url,
  ...overrides,
});

interface Repo {
  host_integration_id: string;
  id: number;
  name: string;
  owner: string;
  url: string;
  default_branch: string;
}

function createGithub(ctx: TestContext, installationId: number) {
  return ctx.app.inject({
    method: "POST",
    url: BASE,
    headers: ctx.headers(ctx.keys.admin),
    payload: { kind: "github", installation_id: installationId },
  });
}

/** A closed local port: connecting to it is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

forEachDatabase(
  "code-host integrations (GitHub App, against the stand-in)",
  (suite, kind) => {
    let integrationId = "";

    before(async () => {
      const res = await createGithub(suite.ctx, INSTALLATION);
      assert.equal(res.statusCode, 201, res.body);
      integrationId = (res.json() as { id: string }).id;
    });

    it("POST checks the installation with the app JWT and names the integration after its account", async () => {
      const ctx = suite.ctx;
      const list = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/install`,
        headers: ctx.headers(ctx.keys.viewer),
      });
      const mine = (list.json() as Record<string, unknown>[]).find((i) => i.id === integrationId);
      assert.deepEqual(
        { kind: mine?.kind, name: mine?.name, installation_id: mine?.installation_id, path: mine?.path },
        { kind: "github", name: "acme", installation_id: INSTALLATION, path: null },
      );
      const dup = await createGithub(ctx, INSTALLATION);
      assert.equal(dup.statusCode, 409, dup.body);
    });

    it("POST with an installation the app does not have → 422 at body.installation_id", async () => {
      const res = await createGithub(suite.ctx, 999);
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual((res.json() as { detail: { loc: unknown[] }[] }).detail[0]?.loc, [
        "body",
        "installation_id",
      ]);
    });

    it("GET repos walks every page of the installation's repositories (no envelope)", async () => {
      const ctx = suite.ctx;
      const before = standin.requests.length;
      const res = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${integrationId}/repos`,
        headers: ctx.headers(ctx.keys.viewer),
      });
      assert.equal(res.statusCode, 200, res.body);
      const list = res.json() as Repo[];
      assert.equal(list.length, repos.length);
      assert.deepEqual(new Set(list.map((r) => r.id)), new Set(repos.map((r) => r.id)));
      const pages = standin.requests.slice(before).filter((r) => r.path === "/installation/repositories");
      assert.deepEqual(
        pages.map((p) => p.query.page ?? "1"),
        ["1", "2", "3"],
        "three pages of 100 were fetched",
      );
      const r7 = list.find((r) => r.id === 1003);
      assert.deepEqual(r7, {
        host_integration_id: integrationId,
        id: 1003,
        name: "repo-003",
        owner: "acme",
        url: `${standin.url}/acme/repo-003`,
        default_branch: "develop",
      });
      for (const r of list) {
        assert.deepEqual(Object.keys(r).sort(), [
          "default_branch",
          "host_integration_id",
          "id",
          "name",
          "owner",
          "url",
        ]);
      }
    });

    it("verifyCodehostSource: the repo must be the installation's and the ref must exist", async () => {
      const { app, orgId } = suite.ctx;
      const repoUrl = `${standin.url}/acme/repo-151`;
      await verifySource(app.deps, orgId, { integrationId, repoUrl, repoRef: "main" });
      await verifySource(app.deps, orgId, { integrationId, repoUrl, repoRef: "feature/x" });
      await verifySource(app.deps, orgId, { integrationId, repoUrl, repoRef: "refs/tags/v1.0.0" });
      const cases: [Parameters<typeof verifyCodehost>[3], string[]][] = [
        [{ integrationId, repoUrl, repoRef: "nope" }, ["body", "source_revision_config", "repo_ref"]],
        [{ integrationId, repoUrl, repoRef: "refs/tags/v9" }, ["body", "source_revision_config", "repo_ref"]],
        [
          { integrationId, repoUrl: `${standin.url}/acme/empty-repo`, repoRef: "main" },
          ["body", "source_revision_config", "repo_ref"],
        ],
        [
          { integrationId, repoUrl: `${standin.url}/globex/repo-000`, repoRef: "main" },
          ["body", "source_config", "repo_url"],
        ],
        [
          { integrationId: randomUUID(), repoUrl, repoRef: "main" },
          ["body", "source_config", "integration_id"],
        ],
      ];
      for (const [input, loc] of cases) {
        await assert.rejects(verifySource(app.deps, orgId, input), (err: unknown) => {
          assert.ok(err instanceof FieldsInvalid, String(err));
          assert.deepEqual(err.items[0]?.loc, loc);
          return true;
        });
      }
    });

    it("cloneSourceFor gives the https URL with a live installation token", async () => {
      const url = new URL(
        await cloneSourceFor(
          suite.ctx.app.deps.db.orm,
          suite.ctx.app.deps.config,
          integrationId,
          `${standin.url}/acme/repo-010`,
        ),
      );
      assert.equal(url.username, "x-access-token");
      assert.ok(standin.isIssuedToken(url.password), "the token is one GitHub issued");
      url.username = "";
      url.password = "";
      assert.equal(url.href, `${standin.url}/acme/repo-010`);
    });

    it("an outage of GitHub → 502 with a detail, for listing, verifying and creating", async () => {
      const ctx = suite.ctx;
      standin.failWith = 503;
      try {
        const res = await ctx.app.inject({
          method: "GET",
          url: `${BASE}/${integrationId}/repos`,
          headers: ctx.headers(ctx.keys.viewer),
        });
        assert.equal(res.statusCode, 502, res.body);
        assert.match((res.json() as { detail: string }).detail, /GitHub answered 503/);
        await assert.rejects(
          verifySource(ctx.app.deps, ctx.orgId, {
            integrationId,
            repoUrl: `${standin.url}/acme/repo-001`,
            repoRef: "main",
          }),
          (err: unknown) => err instanceof HostUnavailable,
        );
        const created = await createGithub(ctx, 77);
        assert.equal(created.statusCode, 502, created.body);
      } finally {
        standin.failWith = undefined;
      }
    });

    it("the other organization sees none of it (404)", async () => {
      const ctx = suite.ctx;
      const res = await ctx.app.inject({
        method: "GET",
        url: `${BASE}/${integrationId}/repos`,
        headers: ctx.headers(ctx.other.admin),
      });
      assert.equal(res.statusCode, 404, res.body);
    });

    it("a JWT signed with the wrong key is refused by GitHub: 502, and nothing is created", async () => {
      const other = await createTestContext(kind, {
        env: env({ SLIPWAY_GITHUB_PRIVATE_KEY: wrongKeys.privateKey }),
      });
      try {
        const before = standin.requests.length;
        const res = await createGithub(other, 77);
        assert.equal(res.statusCode, 502, res.body);
        assert.match((res.json() as { detail: string }).detail, /GitHub answered 401/);
        assert.deepEqual(
          standin.requests.slice(before).map((r) => r.status),
          [401],
        );
        assert.equal((await other.db.orm.select().from(integrations)).length, 0);
        // An integration that exists already cannot list either.
        const [row] = await other.db.orm
          .insert(integrations)
          .values({ organizationId: other.orgId, kind: "github", config: { installation_id: 77 }, name: "x" })
          .returning();
        const list = await other.app.inject({
          method: "GET",
          url: `${BASE}/${(row as { id: string }).id}/repos`,
          headers: other.headers(other.keys.viewer),
        });
        assert.equal(list.statusCode, 502, list.body);
      } finally {
        await other.close();
      }
    });

    it("a JWT for another app id (iss), or GitHub unreachable: the driver fails with a 502", async () => {
      const wrongIss = { appId: "1", privateKey: keys.privateKey, apiUrl: standin.url };
      const unreachable = {
        appId: APP_ID,
        privateKey: keys.privateKey,
        apiUrl: `http://127.0.0.1:${await closedPort()}`,
      };
      const cases: [GithubApp, RegExp][] = [
        [wrongIss, /GitHub answered 401/],
        [unreachable, /could not be reached/],
      ];
      for (const [app, detail] of cases) {
        for (const call of [
          () => installationAccount(app, INSTALLATION),
          () => new GithubDriver(app, INSTALLATION).listRepositories(),
        ]) {
          await assert.rejects(call(), (err: unknown) => {
            assert.ok(err instanceof HostUnavailable, String(err));
            assert.match(err.message, detail);
            return true;
          });
        }
      }
    });
  },
  { env: env() },
);
