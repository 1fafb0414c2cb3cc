import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, it } from "node:test";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { REDIS_APP_JS, REDIS_WORKER_JS } from "../helpers/redis-app.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { Api, appGet, e2eEnv, freePort, gitRoot } from "./stack.ts";

/**
 * Issue 11's first "done when", end to end through the API, the reconciler, the sandbox and the
 * apps router: an app with `start` and `worker` asks for its own Redis; its web process puts a job
 * into that Redis through REDIS_URI, the queue worker takes it (BRPOP) and writes the result back,
 * and the web process serves the result. Both process types are listed.
 */
const git = gitRoot();
const appsPort = await freePort();

function workerRepo(name: string): void {
  const dir = join(git.team, name);
  mkdirSync(dir, { recursive: true });
  const run = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=Slipway Test", "-c", "user.email=test@slipway.invalid", ...args], {
      cwd: dir,
    });
  run("init", "-q", "-b", "main");
  writeFileSync(join(dir, "server.js"), REDIS_APP_JS);
  writeFileSync(join(dir, "worker.js"), REDIS_WORKER_JS);
  writeFileSync(
    join(dir, "slipway.json"),
    JSON.stringify({
      start: "node server.js",
      worker: "node worker.js",
      healthcheck: "/health",
      redis: true,
    }),
  );
  run("add", "-A");
  run("commit", "-q", "-m", "web and worker");
}

/** POST through the apps listener (no body); status and JSON answer. */
function appPost(
  customUrl: string,
  path: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const u = new URL(customUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: Number(u.port),
        path,
        method: "POST",
        headers: { host: u.host },
        agent: false,
      },
      (res) => {
        let data = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          data += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(data || "{}") }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}

const noRedis = existsSync("/usr/bin/redis-server") ? false : "redis-server is not installed here";

forEachDatabase(
  "end to end: a web process and a queue worker share the deployment's Redis",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    after(async () => {
      await stack?.stop();
    });

    it("the web process pushes a job through REDIS_URI, the worker processes it, the web process serves the result; both types are listed", {
      skip: noRedis,
    }, async () => {
      const ctx = suite.ctx;
      stack = await startReconciler(ctx, ctx.app.log);
      const api = new Api(ctx);
      const name = `jobs-${kind}`;
      workerRepo(name);
      const integrationId = await api.integration(git.team);
      const repoUrl = await api.repoUrl(integrationId, name);
      const dep = await api.createCodehost({ name, integrationId, repoUrl });
      const rid = dep.latest_revision_id ?? "";
      assert.equal(await waitForRevision(ctx.db, rid, { timeoutMs: 90_000 }), "DEPLOYED");
      const url = (await api.deployment(dep.id)).source_config.custom_url ?? "";

      // Before any job: no result.
      assert.equal((await appGet(url, "/jobs/nothing-yet")).status, 404);
      const pushed = await appPost(url, "/jobs?value=resize-image-7");
      assert.equal(pushed.status, 202);
      const id = String(pushed.body.id);
      assert.match(id, /^[0-9a-f-]{36}$/);
      const deadline = Date.now() + 30_000;
      let result = await appGet(url, `/jobs/${id}`);
      while (result.status === 404) {
        assert.ok(Date.now() < deadline, "the worker never wrote the job's result");
        await new Promise((r) => setTimeout(r, 200));
        result = await appGet(url, `/jobs/${id}`);
      }
      assert.equal(result.status, 200);
      assert.deepEqual(result.body, { value: "RESIZE-IMAGE-7", worker: true });

      const res = await ctx.app.inject({
        method: "GET",
        url: `/v2/deployments/${dep.id}/processes`,
        headers: ctx.headers(ctx.keys.viewer),
      });
      assert.equal(res.statusCode, 200, res.body);
      const ps = (
        res.json() as { resources: { type: string; index: number; state: string; revision_id: string }[] }
      ).resources;
      assert.deepEqual(
        ps.map((p) => [p.type, p.index, p.state, p.revision_id]),
        [
          ["api", 1, "running", rid],
          ["queue", 1, "running", rid],
        ],
      );
      // Log lines are written in batches: the worker's may come a moment after its result.
      let log = await api.logs(dep.id, rid, "deploy");
      while (!log.includes(`worker: done ${id}`)) {
        assert.ok(Date.now() < deadline + 30_000, "the worker's output is in the deploy log");
        await new Promise((r) => setTimeout(r, 200));
        log = await api.logs(dep.id, rid, "deploy");
      }
      assert.ok(
        log.some((l) => l.startsWith("slipway: starting the deployment's Redis")),
        log.join("\n"),
      );
      assert.ok(
        log.some((l) =>
          l.startsWith("slipway: queue: 1 process (scaled on cpu, never to zero): node worker.js"),
        ),
      );
    });
  },
  { env: e2eEnv(git.root, appsPort) },
);
