import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { REDIS_APP_JS } from "../helpers/redis-app.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { Api, appGet, type Deployment, e2eEnv, freePort, gitRoot } from "./stack.ts";

/**
 * The local data plane's services end to end, through the API and the apps router: a deployment's
 * own Redis used by its app through REDIS_URI, and UNUSED after SLIPWAY_UNUSED_AFTER_S without
 * requests (and READY again on a request or a new revision).
 */
const git = gitRoot();
const appsPort = await freePort();
const UNUSED_AFTER_S = 3;

/** A repository holding the Redis test app, committed on main. */
function redisRepo(name: string): void {
  const dir = join(git.team, name);
  mkdirSync(dir, { recursive: true });
  const run = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=Slipway Test", "-c", "user.email=test@slipway.invalid", ...args], {
      cwd: dir,
    });
  run("init", "-q", "-b", "main");
  writeFileSync(join(dir, "server.js"), REDIS_APP_JS);
  writeFileSync(
    join(dir, "slipway.json"),
    JSON.stringify({ start: "node server.js", healthcheck: "/health" }),
  );
  run("add", "-A");
  run("commit", "-q", "-m", "redis app");
}

const noRedis = existsSync("/usr/bin/redis-server") ? false : "redis-server is not installed here";

forEachDatabase(
  "end to end: a deployment's Redis and UNUSED",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let api: Api;
    let dep: Deployment;
    let url: string;
    after(async () => {
      await stack?.stop();
    });
    const settle = (rid: string) => waitForRevision(suite.ctx.db, rid, { timeoutMs: 60_000 });
    const statusBecomes = async (want: string) => {
      const deadline = Date.now() + 30_000;
      while ((await api.deployment(dep.id)).status !== want) {
        assert.ok(Date.now() < deadline, `deployment never became ${want}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };

    it("redis_memory_mb gives the app its own Redis: the web process puts a job in through REDIS_URI and reads it back", {
      skip: noRedis,
    }, async () => {
      const ctx = suite.ctx;
      stack = await startReconciler(ctx, ctx.app.log);
      api = new Api(ctx);
      const name = `cache-${kind}`;
      redisRepo(name);
      const integrationId = await api.integration(git.team);
      const repoUrl = await api.repoUrl(integrationId, name);
      dep = await api.call<Deployment>(
        "POST",
        "/v2/deployments",
        {
          name,
          source: "codehost",
          source_config: {
            integration_id: integrationId,
            repo_url: repoUrl,
            resource_spec: { redis_memory_mb: 32 },
          },
          source_revision_config: { repo_ref: "main", framework_config_path: "slipway.json" },
        },
        201,
      );
      assert.ok(dep.latest_revision_id);
      assert.equal(await settle(dep.latest_revision_id), "DEPLOYED");
      dep = await api.deployment(dep.id);
      url = dep.source_config.custom_url ?? "";
      const pushed = await appGet(url, "/push?value=job-1");
      assert.equal(pushed.status, 200);
      assert.deepEqual(pushed.body, { pushed: 1, jobs: ["job-1"] });
      assert.deepEqual((await appGet(url, "/jobs")).body, { jobs: ["job-1"] });
      const rid = dep.latest_revision_id ?? "";
      const logs = await api.logs(dep.id, rid, "deploy");
      assert.ok(logs.some((l) => l.includes("starting the deployment's Redis (maxmemory 32 MB)")));
      // The password is stored encrypted and shown nowhere.
      assert.ok(!logs.some((l) => /redis:\/\/:[0-9a-f]{8}/.test(l)));
    });

    it("with no request for SLIPWAY_UNUSED_AFTER_S the deployment becomes UNUSED, the status filter finds it, and a request makes it READY", async () => {
      if (stack === undefined) {
        // Alone (or without redis-server): deploy the built-in template instead.
        const ctx = suite.ctx;
        stack = await startReconciler(ctx, ctx.app.log);
        api = new Api(ctx);
        dep = await api.call<Deployment>(
          "POST",
          "/v2/deployments",
          {
            name: `idle-${kind}`,
            source: "internal_template",
            source_revision_config: { repo_ref: "hello-http", framework_config_path: "slipway.json" },
          },
          201,
        );
        assert.ok(dep.latest_revision_id);
        assert.equal(await settle(dep.latest_revision_id), "DEPLOYED");
        dep = await api.deployment(dep.id);
        url = dep.source_config.custom_url ?? "";
      }
      await statusBecomes("UNUSED");
      const listed = await api.call<{ resources: Deployment[] }>("GET", "/v2/deployments?status=UNUSED");
      assert.deepEqual(
        listed.resources.map((d) => d.id),
        [dep.id],
      );
      const ready = await api.call<{ resources: Deployment[] }>("GET", "/v2/deployments?status=READY");
      assert.ok(!ready.resources.some((d) => d.id === dep.id));
      const rid = (await api.deployment(dep.id)).active_revision_id ?? "";
      assert.ok(
        (await api.logs(dep.id, rid, "deploy")).some((l) => l.includes(`no request for ${UNUSED_AFTER_S} s`)),
      );

      // An UNUSED app still serves; the request makes it READY.
      assert.equal((await appGet(url, "/health")).status, 200);
      await statusBecomes("READY");
    });

    it("a new revision makes an UNUSED deployment READY", async () => {
      await statusBecomes("UNUSED");
      const patched = await api.patch(dep.id, { secrets: [{ name: "NEW_SETTING", value: "on" }] });
      assert.ok(patched.latest_revision_id);
      assert.equal(await settle(patched.latest_revision_id), "DEPLOYED");
      assert.equal((await api.deployment(dep.id)).status, "READY");
    });
  },
  { env: { ...e2eEnv(git.root, appsPort), SLIPWAY_UNUSED_AFTER_S: String(UNUSED_AFTER_S) } },
);
