import assert from "node:assert/strict";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { DeployError, type RevisionSpec } from "../../../../src/runtimes/interface.ts";
import { redisCommands } from "../../../../src/runtimes/local/redis/resp.ts";
import type { LocalRuntime } from "../../../../src/runtimes/local/runtime.ts";
import { hostSystem, probeBwrap } from "../../../../src/runtimes/local/sandbox/sandbox.ts";
import {
  cleanupTemp,
  deployed,
  hit,
  newRuntime,
  phase,
  spec,
  tempDir,
} from "../../../helpers/local-runtime.ts";
import { REDIS_APP_JS } from "../../../helpers/redis-app.ts";

const root = process.getuid?.() === 0;
const RANGE = { first: 311_000, last: 311_099 };
const bwrapProblem = await probeBwrap(
  hostSystem(),
  root ? { uid: RANGE.first, gid: RANGE.first } : undefined,
);
const noRedis = existsSync("/usr/bin/redis-server") ? false : "redis-server is not installed here";

/** The Redis test app in a fresh directory; `config` extends its app config. */
function redisApp(config: Record<string, unknown> = {}): string {
  const dir = tempDir("slipway-redis-app-");
  writeFileSync(join(dir, "server.js"), REDIS_APP_JS);
  writeFileSync(
    join(dir, "app.json"),
    JSON.stringify({ start: "node server.js", healthcheck: "/health", ...config }),
  );
  return dir;
}

function uriOf(rt: LocalRuntime, deploymentId: string): URL {
  const uri = rt.redisUri(deploymentId);
  assert.ok(uri, "the deployment has a Redis");
  return new URL(uri);
}

describe("local runtime: a deployment's own Redis", { skip: noRedis || bwrapProblem || false }, () => {
  const runtimes: LocalRuntime[] = [];
  const runtime = (dataDir = tempDir(), opts: Parameters<typeof newRuntime>[1] = {}) => {
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE, ...opts });
    runtimes.push(rt);
    return rt;
  };
  after(async () => {
    await Promise.all(runtimes.map((rt) => rt.close()));
    cleanupTemp();
  });

  it("redis_* fields start one in the sandbox with maxmemory and a password; the app writes and reads it through REDIS_URI", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir);
    const s = spec(
      { kind: "directory", path: redisApp() },
      {
        resourceSpec: { redis_memory_mb: 48, redis_memory_limit_mb: 48 },
        redisPassword: "p4ss-word-for-test",
      },
    );
    const ctx = await deployed(rt, s);
    assert.match(ctx.text("deploy"), /starting the deployment's Redis \(maxmemory 48 MB\)/);
    const pushed = (await hit(rt, s.deploymentName, "/push?value=job-1")).json();
    assert.deepEqual(pushed, { pushed: 1, jobs: ["job-1"] });

    const u = uriOf(rt, s.deploymentId);
    assert.equal(u.hostname, "127.0.0.1");
    assert.equal(decodeURIComponent(u.password), "p4ss-word-for-test");
    const port = Number(u.port);
    const [maxmemory] = await redisCommands(
      port,
      "p4ss-word-for-test",
      [["CONFIG", "GET", "maxmemory"]],
      2000,
      rt.redisHost(s.deploymentId),
    );
    assert.deepEqual(maxmemory, ["maxmemory", String(48 * 1024 * 1024)]);
    // Without the password nothing is served.
    await assert.rejects(
      redisCommands(port, "wrong", [["PING"]], 2000, rt.redisHost(s.deploymentId)),
      /refused AUTH/,
    );
    // The password is in no argv and no log line.
    assert.ok(!ctx.text("deploy").includes("p4ss-word-for-test"));

    // Its data is in the deployment's directory, owned by the deployment's uid when Slipway is root.
    const data = join(dataDir, "apps", s.deploymentId, "redis");
    assert.ok(existsSync(data));
    if (root) {
      const uid = statSync(join(data, "appendonlydir")).uid;
      assert.ok(uid >= RANGE.first && uid <= RANGE.last, `owned by the deployment's uid, got ${uid}`);
    }
  });

  it("survives a revision switch (same URI, same data, new maxmemory), is restored after a restart, and teardown removes it", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir);
    const app = redisApp();
    const s = spec(
      { kind: "directory", path: app },
      { resourceSpec: { redis_memory_limit_mb: 32 }, redisPassword: "pw-two" },
    );
    await deployed(rt, s);
    await hit(rt, s.deploymentName, "/push?value=a");
    const before = uriOf(rt, s.deploymentId).toString();

    const s2: RevisionSpec = {
      ...s,
      revisionId: `${s.revisionId}-2`,
      resourceSpec: { redis_memory_limit_mb: 64 },
    };
    const ctx2 = await deployed(rt, s2);
    assert.match(ctx2.text("deploy"), /keeps serving \(maxmemory 64 MB\)/);
    assert.equal(uriOf(rt, s.deploymentId).toString(), before);
    assert.deepEqual((await hit(rt, s.deploymentName, "/jobs")).json(), { jobs: ["a"] });
    const port = Number(uriOf(rt, s.deploymentId).port);
    const [mm] = await redisCommands(
      port,
      "pw-two",
      [["CONFIG", "GET", "maxmemory"]],
      2000,
      rt.redisHost(s.deploymentId),
    );
    assert.deepEqual(mm, ["maxmemory", String(64 * 1024 * 1024)]);

    // A restart: a new runtime on the same data dir brings it back with its data.
    await rt.close();
    const again = runtime(dataDir);
    await again.activate(s2, phase());
    assert.deepEqual((await hit(again, s.deploymentName, "/jobs")).json(), { jobs: ["a"] });

    const newPort = Number(uriOf(again, s.deploymentId).port);
    const newHost = again.redisHost(s.deploymentId);
    await again.teardown(s.deploymentId);
    await assert.rejects(redisCommands(newPort, "pw-two", [["PING"]], 500, newHost));
    assert.ok(!existsSync(join(dataDir, "apps", s.deploymentId)), "its data is gone");
  });

  it('the app config\'s "redis": true asks for one; a revision asking for none has no REDIS_URI', async () => {
    const rt = runtime();
    const s = spec({ kind: "directory", path: redisApp({ redis: true }) });
    await deployed(rt, s);
    assert.deepEqual((await hit(rt, s.deploymentName, "/push?value=x")).json(), { pushed: 1, jobs: ["x"] });
    const plain = spec({ kind: "directory", path: redisApp() });
    await deployed(rt, plain);
    assert.deepEqual((await hit(rt, plain.deploymentName, "/uri")).json(), { set: false });
    assert.equal(rt.redisUri(plain.deploymentId), undefined);
  });

  it("an app config with a non-boolean redis fails the build saying so", async () => {
    const rt = runtime();
    const s = spec({ kind: "directory", path: redisApp({ redis: "yes" }) });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await assert.rejects(rt.build(s, ctx), /"redis" must be true or false/);
  });

  it("without redis-server on the machine the deploy fails saying so", async () => {
    const rt = runtime(tempDir(), { redisServer: "/nonexistent/redis-server" });
    const s = spec({ kind: "directory", path: redisApp() }, { resourceSpec: { redis_memory_mb: 16 } });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    await assert.rejects(rt.activate(s, ctx), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      assert.match(err.message, /redis-server is not installed on this machine/);
      return true;
    });
    assert.equal(rt.health(s.deploymentId), "stopped");
  });
});
