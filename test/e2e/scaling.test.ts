import assert from "node:assert/strict";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, it } from "node:test";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { Api, AppRepo, appGet, type Deployment, e2eEnv, freePort, gitRoot } from "./stack.ts";

/**
 * Process types, autoscaling, scale to zero and failed-deploy logs on the real local runtime:
 * real git, real sandboxed processes, load through the real apps listener.
 */
const git = gitRoot();
const appsPort = await freePort();

// The worker proves it runs with the app's environment: it writes the secret into its HOME.
const WORKER =
  "node -e \"require('fs').writeFileSync(process.env.HOME + '/worker.txt', String(process.env.GREETING)); setInterval(() => {}, 1000)\"";

interface Proc {
  type: string;
  index: number;
  id: string;
  revision_id: string;
  state: string;
  restarts: number;
  started_at: string | null;
  memory_bytes: number | null;
}

async function processes(ctx: TestContext, id: string): Promise<Proc[]> {
  // A viewer may read them.
  const res = await ctx.app.inject({
    method: "GET",
    url: `/v2/deployments/${id}/processes`,
    headers: ctx.headers(ctx.keys.viewer),
  });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as { resources: Proc[] }).resources;
}

/** GET through the apps listener, keeping the status, Retry-After and raw body. */
function rawGet(
  customUrl: string,
): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  const u = new URL(customUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port: Number(u.port), path: "/", headers: { host: u.host }, agent: false },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => {
          const retry = res.headers["retry-after"];
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: typeof retry === "string" ? retry : undefined,
            body,
          });
        });
      },
    );
    req.on("error", reject);
    req.end();
  });
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const running = (ps: Proc[], type: string) =>
  ps.filter((p) => p.type === type && p.state === "running").length;

forEachDatabase(
  "end to end: process types, autoscaling and scale to zero",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let api: Api;
    let repo: AppRepo;
    let dep: Deployment;
    let url: string;
    after(async () => {
      await stack?.stop();
    });
    const settle = (rid: string) => waitForRevision(suite.ctx.db, rid, { timeoutMs: 90_000 });
    const latest = async () => (await api.deployment(dep.id)).latest_revision_id ?? "";
    const deployLog = async () => api.logs(dep.id, await latest(), "deploy");
    /** Log lines reach the database in batches: a line may land after the effect it describes. */
    const untilLogged = async (what: string, match: (line: string) => boolean) => {
      let log: string[] = [];
      try {
        await until(what, async () => {
          log = await deployLog();
          return log.some(match);
        });
      } catch (err) {
        throw new Error(`${(err as Error).message}\n${log.join("\n")}`);
      }
    };

    it("an app with a worker runs an API process and a queue worker with the same env; both are listed", async () => {
      const ctx = suite.ctx;
      stack = await startReconciler(ctx, ctx.app.log);
      api = new Api(ctx);
      const name = `scaled-${kind}`;
      repo = new AppRepo(git.team, name);
      repo.commit({ version: "1", config: { worker: WORKER } });
      const integrationId = await api.integration(git.team);
      const repoUrl = await api.repoUrl(integrationId, name);
      dep = await api.createCodehost({
        name,
        integrationId,
        repoUrl,
        secrets: [{ name: "GREETING", value: "from-the-worker" }],
      });
      assert.equal(await settle(dep.latest_revision_id ?? ""), "DEPLOYED");
      url = (await api.deployment(dep.id)).source_config.custom_url ?? "";
      assert.equal((await appGet(url)).body.version, "1");

      const home = join(ctx.config.dataDir, "apps", dep.id, "home");
      await until("the worker wrote its file", async () => existsSync(join(home, "worker.txt")));
      assert.equal(readFileSync(join(home, "worker.txt"), "utf8"), "from-the-worker");

      const ps = await processes(ctx, dep.id);
      assert.deepEqual(
        ps.map((p) => [p.type, p.index, p.state, p.revision_id]),
        [
          ["api", 1, "running", dep.latest_revision_id],
          ["queue", 1, "running", dep.latest_revision_id],
        ],
      );
      for (const p of ps) {
        assert.ok(p.started_at !== null && p.memory_bytes !== null && p.memory_bytes > 0, JSON.stringify(p));
        assert.ok(!("pid" in p));
      }
      const log = await deployLog();
      assert.ok(
        log.some((l) => /^slipway: api: 1 process\(es\), deployment_type dev: node server\.js$/.test(l)),
        log.join("\n"),
      );
      assert.ok(log.some((l) => l.startsWith("slipway: queue: 1 process (scaled on cpu, never to zero)")));
    });

    it("a load loop scales the API processes from 1 towards max_scale, and back after the cool-down", async () => {
      const ctx = suite.ctx;
      await api.patch(dep.id, { source_config: { resource_spec: { min_scale: 1, max_scale: 3 } } });
      assert.equal(await settle(await latest()), "DEPLOYED");
      let stop = false;
      const failures: number[] = [];
      const loop = async () => {
        while (!stop) {
          const a = await appGet(url, "/slow");
          if (a.status !== 200) failures.push(a.status);
        }
      };
      // 12 requests always in flight: 12 per process against a target of 2.
      const loops = Array.from({ length: 12 }, loop);
      try {
        await until(
          "three API processes run",
          async () => running(await processes(ctx, dep.id), "api") === 3,
        );
      } finally {
        stop = true;
        await Promise.all(loops);
      }
      assert.deepEqual(failures, [], "no request failed while scaling up");
      await until("back to one API process", async () => {
        const ps = await processes(ctx, dep.id);
        return ps.filter((p) => p.type === "api").length === 1;
      });
      assert.equal(
        running(await processes(ctx, dep.id), "queue"),
        1,
        "queue workers scale on their cpu, not on requests",
      );
      await untilLogged("the scale-up line", (l) =>
        /^slipway: scaling API processes from [12] to [23]: .*(above the target of 2|panic)/.test(l),
      );
      await untilLogged("the scale-down line", (l) =>
        /^slipway: scaling API processes from [23] to 1: /.test(l),
      );
    });

    it("min_scale 0 stops every API process when idle (not the worker); the next request is served after a cold start", async () => {
      const ctx = suite.ctx;
      await api.patch(dep.id, { source_config: { resource_spec: { min_scale: 0, max_scale: 1 } } });
      assert.equal(await settle(await latest()), "DEPLOYED");
      // The scale-down itself, not only a moment with no API process listed (a switch between
      // revisions can show none while the new revision's process is still starting).
      const scaledToZero = (l: string) =>
        /^slipway: scaling API processes from 1 to 0: no request for \d+ s/.test(l);
      await untilLogged("the scale to zero", scaledToZero);
      await until("no API process runs", async () => {
        const ps = await processes(ctx, dep.id);
        return ps.filter((p) => p.type === "api").length === 0;
      });
      assert.equal(running(await processes(ctx, dep.id), "queue"), 1, "the worker keeps running");
      assert.equal((await api.deployment(dep.id)).status, "READY");
      const answer = await appGet(url);
      assert.equal(answer.status, 200);
      assert.equal(answer.body.version, "1");
      assert.equal(running(await processes(ctx, dep.id), "api"), 1);
      await untilLogged("the cold start's log line", (l) => l.startsWith("slipway: cold start:"));
    });

    it("a cold start that fails answers 503 with Retry-After; the next one serves again", async () => {
      const ctx = suite.ctx;
      await until("no API process runs", async () => {
        const ps = await processes(ctx, dep.id);
        return ps.filter((p) => p.type === "api").length === 0;
      });
      // The app exits at start while this flag is in its HOME (stack.ts).
      const flag = join(ctx.config.dataDir, "apps", dep.id, "home", "crash.flag");
      writeFileSync(flag, "x");
      try {
        const failed = await rawGet(url);
        assert.equal(failed.status, 503);
        assert.equal(failed.retryAfter, "5");
        assert.match(failed.body, /could not be started in time/);
      } finally {
        rmSync(flag);
      }
      assert.equal((await appGet(url)).status, 200);
      await untilLogged(
        "the failed cold start's log line",
        (l) => l === "slipway: cold start failed; requests get 503 until the next one succeeds",
      );
    });

    it("a DEPLOY_FAILED log ends with the app's last lines and the reason; healthcheck_timeout_s bounds the wait", async () => {
      repo.commit({ version: "2-exit", mode: "exit" }, "exits");
      await api.patch(dep.id, { source_revision_config: { repo_ref: "exits" } });
      const exits = await latest();
      assert.equal(await settle(exits), "DEPLOY_FAILED");
      const log = await api.logs(dep.id, exits, "deploy");
      const rev = await api.call<{ status: string; status_message: string | null }>(
        "GET",
        `/v2/deployments/${dep.id}/revisions/${exits}`,
      );
      assert.ok(rev.status_message);
      // The reconciler's last line states the reason, exactly as status_message does.
      assert.equal(log.at(-1), `Slipway: ${rev.status}: ${rev.status_message}`);
      assert.match(rev.status_message, /^process web\.1 exited with code 3/);
      const tail = log.indexOf("slipway: the last 1 lines the app printed:");
      assert.ok(tail >= 0, log.join("\n"));
      assert.equal(log[tail + 1], "| starting and exiting");

      repo.commit({ version: "2-sick", mode: "unhealthy", config: { healthcheck_timeout_s: 1 } }, "sick");
      await api.patch(dep.id, { source_revision_config: { repo_ref: "sick" } });
      const sick = await latest();
      assert.equal(await settle(sick), "DEPLOY_FAILED");
      const last = (await api.logs(dep.id, sick, "deploy")).at(-1) ?? "";
      assert.match(
        last,
        /^Slipway: DEPLOY_FAILED: process web\.1 did not answer GET \/health with a status below 500 within 1000 ms/,
      );
      assert.equal((await appGet(url)).body.version, "1", "the active revision kept serving");
    });
  },
  {
    env: {
      ...e2eEnv(git.root, appsPort),
      SLIPWAY_AUTOSCALE_TARGET_CONCURRENCY: "2",
      SLIPWAY_AUTOSCALE_WINDOW_S: "2",
      SLIPWAY_AUTOSCALE_COOLDOWN_S: "2",
      SLIPWAY_IDLE_SCALE_DOWN_S: "2",
    },
  },
);
