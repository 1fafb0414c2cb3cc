// Why over 300 lines: activation as a whole (routing, failures, scale, limits, teardown),
// against one runtime and its apps listener.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { DeployError } from "../../../src/runtimes/interface.ts";
import { cgroupSupport } from "../../../src/runtimes/local/processes/cgroup.ts";
import type { LocalRuntime } from "../../../src/runtimes/local/runtime.ts";
import {
  alive,
  built,
  cleanupTemp,
  DOMAIN,
  hit,
  newRuntime,
  phase,
  spec,
  tempDir,
  waitFor,
  writeApp,
} from "../../helpers/local-runtime.ts";

/** Binds and releases `port` on loopback: fails if something still listens there. */
function canListen(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => server.close(() => resolve()));
  });
}

describe("local runtime: activate", () => {
  const runtimes: LocalRuntime[] = [];
  const runtime = (opts: Parameters<typeof newRuntime>[1] = {}) => {
    const rt = newRuntime(tempDir(), opts);
    runtimes.push(rt);
    return rt;
  };
  after(async () => {
    await Promise.all(runtimes.map((rt) => rt.close()));
    cleanupTemp();
  });

  it("serves the app by Host name with its config env and the revision's secrets", async () => {
    const rt = runtime();
    const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { env: { SECRET: "s3cret-value" } });
    await built(rt, s);
    assert.equal(rt.health(s.deploymentId), "stopped");
    const ctx = phase();
    const { url } = await rt.activate(s, ctx);
    assert.equal(url, `http://${s.deploymentName}.${DOMAIN}:${rt.appsPort}`);
    assert.equal(rt.health(s.deploymentId), "running");
    const res = await hit(rt, s.deploymentName);
    assert.equal(res.status, 200);
    const body = res.json();
    assert.equal(body.secret, "s3cret-value");
    assert.equal(body.greeting, "hello");
    assert.equal(body.host, `${s.deploymentName}.${DOMAIN}:${rt.appsPort}`);
    assert.equal(body.forwardedFor, "127.0.0.1");
    assert.equal(body.forwardedHost, `${s.deploymentName}.${DOMAIN}:${rt.appsPort}`);
    // Only what the app is given: no server environment.
    const names = body.envNames as string[];
    assert.ok(names.includes("PORT") && names.includes("SECRET") && names.includes("GREETING"));
    assert.ok(
      !names.some((n) => n.startsWith("SLIPWAY_") || n === "DATABASE_URL" || n === "NODE_TEST_CONTEXT"),
    );
    assert.ok(
      ctx.lines.deploy.some((l) => /^listening on \d+$/.test(l)),
      "app output is in the deploy log",
    );
    assert.ok(!ctx.text("deploy").includes("s3cret-value"));
    // Activating the revision that already serves changes nothing.
    const again = phase();
    await rt.activate(s, again);
    assert.match(again.text("deploy"), /already serving/);
    assert.equal((await hit(rt, s.deploymentName)).json().pid, body.pid);
  });

  it("answers 404 for hosts it does not serve, upper case and trailing dots aside", async () => {
    const rt = runtime();
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    await built(rt, s);
    await rt.activate(s, phase());
    assert.equal(
      (await hit(rt, s.deploymentName, "/", { host: `${s.deploymentName.toUpperCase()}.${DOMAIN}.` })).status,
      200,
    );
    for (const host of [
      "nope.apps.test",
      `${s.deploymentName}.other.test`,
      `a.${s.deploymentName}.${DOMAIN}`,
      "apps.test",
      "[::1]:80",
    ]) {
      const res = await hit(rt, s.deploymentName, "/", { host });
      assert.equal(res.status, 404, host);
      assert.match(String(res.json().detail), /No app is served at/);
    }
  });

  it("proxies methods, bodies and status codes", async () => {
    const rt = runtime();
    const src = writeApp(tempDir(), {
      config: { start: "node echo.js" },
      extra: {
        "echo.js": `require("node:http").createServer((req, res) => {
          const chunks = [];
          req.on("data", (c) => chunks.push(c));
          req.on("end", () => {
            res.writeHead(req.url === "/teapot" ? 418 : 201, { "x-method": req.method, "set-cookie": ["a=1", "b=2"] });
            res.end(Buffer.concat(chunks));
          });
        }).listen(Number(process.env.PORT), "127.0.0.1");`,
      },
    });
    const s = spec({ kind: "directory", path: src });
    await built(rt, s);
    await rt.activate(s, phase());
    const posted = await hit(rt, s.deploymentName, "/x", { method: "POST", body: "payload ".repeat(10_000) });
    assert.equal(posted.status, 201);
    assert.equal(posted.body, "payload ".repeat(10_000));
    const teapot = await hit(rt, s.deploymentName, "/teapot", { method: "PUT", body: "" });
    assert.equal(teapot.status, 418);
  });

  it("an app that exits at once is a DeployError with its output in the deploy log", async () => {
    const rt = runtime();
    const src = writeApp(tempDir(), {
      config: { start: "node boom.js" },
      extra: {
        "boom.js": `console.log("starting up"); console.error("Error: missing setting FOO"); process.exit(2);`,
      },
    });
    const s = spec({ kind: "directory", path: src });
    await built(rt, s);
    const ctx = phase();
    await assert.rejects(rt.activate(s, ctx), (err: unknown) => {
      assert.ok(err instanceof DeployError);
      assert.match(err.message, /process web\.1 exited with code 2/);
      return true;
    });
    assert.ok(ctx.lines.deploy.includes("Error: missing setting FOO"));
    assert.ok(ctx.lines.deploy.includes("starting up"));
    assert.match(ctx.text("deploy"), /^error: process web\.1 exited with code 2/m);
    assert.equal(rt.health(s.deploymentId), "stopped");
    assert.equal((await hit(rt, s.deploymentName)).status, 404);
  });

  it("an app that never gets healthy is stopped and a DeployError", async () => {
    const rt = runtime({ healthTimeoutMs: 1000 });
    const src = writeApp(tempDir(), {
      config: { start: "node sick.js", healthcheck: "/healthz" },
      extra: {
        "sick.js": `console.log("pid " + process.pid);
          require("node:http").createServer((req, res) => { res.statusCode = req.url === "/healthz" ? 503 : 200; res.end(); })
            .listen(Number(process.env.PORT), "127.0.0.1");`,
      },
    });
    const s = spec({ kind: "directory", path: src });
    await built(rt, s);
    const ctx = phase();
    await assert.rejects(
      rt.activate(s, ctx),
      /did not answer GET \/healthz with a status below 500 within 1000 ms \(last: status 503\)/,
    );
    const pid = Number(ctx.lines.deploy.find((l) => l.startsWith("pid "))?.slice(4));
    assert.ok(pid > 0);
    assert.equal(alive(pid), false);
  });

  it("a failed activation leaves the serving revision in place", async () => {
    const rt = runtime({ healthTimeoutMs: 2000 });
    const good = spec({ kind: "directory", path: writeApp(tempDir()) });
    await built(rt, good);
    await rt.activate(good, phase());
    const bad = {
      ...good,
      revisionId: "rev-broken",
      source: { kind: "directory" as const, path: writeApp(tempDir(), { config: { start: "exit 1" } }) },
    };
    await built(rt, bad);
    await assert.rejects(rt.activate(bad, phase()), DeployError);
    assert.equal((await hit(rt, good.deploymentName)).status, 200);
    assert.equal(rt.health(good.deploymentId), "running");
  });

  it("min_scale 2 runs two processes and round-robins between them", async () => {
    const rt = runtime();
    const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { resourceSpec: { min_scale: 2 } });
    await built(rt, s);
    const ctx = phase();
    await rt.activate(s, ctx);
    const pids: unknown[] = [];
    for (let i = 0; i < 6; i++) pids.push((await hit(rt, s.deploymentName)).json().pid);
    assert.equal(new Set(pids).size, 2);
    // Strict alternation: a, b, a, b, …
    for (let i = 2; i < pids.length; i++) assert.equal(pids[i], pids[i - 2]);
    assert.notEqual(pids[0], pids[1]);
    assert.match(ctx.text("deploy"), /api: 2 process\(es\), deployment_type dev/);
  });

  it("caps min_scale and ignores one that is not a whole number", async () => {
    const rt = runtime({ maxScale: 2 });
    const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { resourceSpec: { min_scale: 50 } });
    await built(rt, s);
    const ctx = phase();
    await rt.activate(s, ctx);
    assert.match(ctx.text("deploy"), /min_scale 50 is above this machine's limit of 2; using 2/);
    const odd = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { resourceSpec: { min_scale: "lots" } },
    );
    await built(rt, odd);
    const ctx2 = phase();
    await rt.activate(odd, ctx2);
    assert.match(ctx2.text("deploy"), /min_scale "lots" is not a whole number ≥ 0; using 1/);
  });

  it("memory_limit_mb sets the data segment limit and the Node heap of the app", async () => {
    const rt = runtime();
    const s = spec(
      { kind: "directory", path: writeApp(tempDir()) },
      { resourceSpec: { memory_limit_mb: 256 } },
    );
    await built(rt, s);
    const ctx = phase();
    await rt.activate(s, ctx);
    const body = (await hit(rt, s.deploymentName)).json();
    assert.match(
      String(body.dataLimit),
      new RegExp(`Max data size\\s+${256 * 1024 * 1024}\\s+${256 * 1024 * 1024}\\s+bytes`),
    );
    assert.equal(body.nodeOptions, "--max-old-space-size=192");
    assert.match(ctx.text("deploy"), /memory limit 256 MB per API process/);
    const support = await cgroupSupport();
    if (support !== undefined) {
      // Where the memory controller is writable the kernel enforces the limit on the whole process.
      const line = String(body.cgroups)
        .split("\n")
        .find((l) =>
          support.version === 1 ? /:memory[:,]/.test(l) || /,memory:/.test(l) : l.startsWith("0::"),
        );
      const group = line?.split(":").slice(2).join(":") ?? "";
      assert.match(group, /slipway-app-[0-9a-f]{12}$/, String(body.cgroups));
      const dir = join(support.parent, group.slice(group.lastIndexOf("/") + 1));
      const limitFile = support.version === 1 ? "memory.limit_in_bytes" : "memory.max";
      assert.equal(readFileSync(join(dir, limitFile), "utf8").trim(), String(256 * 1024 * 1024));
      await rt.teardown(s.deploymentId);
      assert.equal(existsSync(dir), false, "the group is removed with the app");
    }
  });

  it("activating a revision that was never built is a DeployError", async () => {
    const rt = runtime();
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    await assert.rejects(rt.activate(s, phase()), /has no build output/);
  });

  it("an abort while waiting for health stops the new processes at once", async () => {
    const rt = runtime({ healthTimeoutMs: 60_000 });
    const src = writeApp(tempDir(), {
      config: { start: "node idle.js" },
      extra: { "idle.js": `console.log("pid " + process.pid); setInterval(() => {}, 1000);` },
    });
    const s = spec({ kind: "directory", path: src });
    await built(rt, s);
    const ctx = phase();
    const activating = rt.activate(s, ctx);
    await waitFor("the app to start", () => ctx.lines.deploy.some((l) => l.startsWith("pid ")));
    const pid = Number(ctx.lines.deploy.find((l) => l.startsWith("pid "))?.slice(4));
    ctx.abort.abort(new Error("lease lost"));
    await assert.rejects(activating, /lease lost/);
    assert.equal(alive(pid), false);
    assert.equal(rt.health(s.deploymentId), "stopped");
  });

  it("teardown while a revision is starting stops it without waiting for the health timeout", async () => {
    const rt = runtime({ healthTimeoutMs: 60_000 });
    const src = writeApp(tempDir(), {
      config: { start: "node idle.js" },
      extra: { "idle.js": `console.log("pid " + process.pid); setInterval(() => {}, 1000);` },
    });
    const s = spec({ kind: "directory", path: src });
    await built(rt, s);
    const ctx = phase();
    // Settled into a value at once: the rejection arrives while teardown is still awaited.
    const outcome = rt.activate(s, ctx).then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitFor("the app to start", () => ctx.lines.deploy.some((l) => l.startsWith("pid ")));
    const pid = Number(ctx.lines.deploy.find((l) => l.startsWith("pid "))?.slice(4));
    await rt.teardown(s.deploymentId);
    assert.match(String(await outcome), /stopped while starting/);
    assert.equal(alive(pid), false);
    assert.equal(rt.health(s.deploymentId), "stopped");
  });

  it("two deployments cannot be served under one name", async () => {
    const rt = runtime();
    const a = spec({ kind: "directory", path: writeApp(tempDir()) });
    await built(rt, a);
    await rt.activate(a, phase());
    const b = spec({ kind: "directory", path: writeApp(tempDir()) }, { deploymentName: a.deploymentName });
    await built(rt, b);
    await assert.rejects(rt.activate(b, phase()), /already served by another deployment/);
  });

  it("a renamed deployment is served under its new name only", async () => {
    const rt = runtime();
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    await built(rt, s);
    await rt.activate(s, phase());
    const renamed = { ...s, deploymentName: `${s.deploymentName}-new` };
    const { url } = await rt.activate(renamed, phase());
    assert.equal(url, `http://${renamed.deploymentName}.${DOMAIN}:${rt.appsPort}`);
    assert.equal((await hit(rt, renamed.deploymentName)).status, 200);
    assert.equal((await hit(rt, s.deploymentName)).status, 404);
  });

  it("teardown stops the processes, frees the name and port, and removes the files", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    runtimes.push(rt);
    const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { resourceSpec: { min_scale: 2 } });
    await built(rt, s);
    await rt.activate(s, phase());
    const pids = new Set<number>();
    const ports = new Set<number>();
    for (let i = 0; i < 2; i++) {
      const body = (await hit(rt, s.deploymentName)).json();
      pids.add(Number(body.pid));
      ports.add(Number(body.port));
    }
    assert.equal(pids.size, 2);
    await rt.teardown(s.deploymentId);
    for (const pid of pids) assert.equal(alive(pid), false);
    for (const port of ports) await canListen(port);
    assert.equal(existsSync(join(dataDir, "apps", s.deploymentId)), false);
    assert.equal((await hit(rt, s.deploymentName)).status, 404);
    assert.equal(rt.health(s.deploymentId), "stopped");
    await rt.teardown(s.deploymentId);
    // The name is free for another deployment.
    const next = spec({ kind: "directory", path: writeApp(tempDir()) }, { deploymentName: s.deploymentName });
    await built(rt, next);
    await rt.activate(next, phase());
    assert.equal((await hit(rt, s.deploymentName)).status, 200);
  });
});
