import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { RevisionSpec } from "../../../src/runtimes/interface.ts";
import type { EdgeSettings } from "../../../src/runtimes/local/routing/edge.ts";
import type { LocalRuntime } from "../../../src/runtimes/local/runtime.ts";
import {
  type Answer,
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

const HAPROXY = "/usr/sbin/haproxy";

/** The edges that serve the apps port: the Node edge alone, and HAProxy in front of it (CI has both). */
const EDGES: EdgeSettings["kind"][] =
  existsSync(HAPROXY) || process.env.CI === "true" ? ["node", "haproxy"] : ["node"];

for (const edge of EDGES)
  describe(`local runtime: serving (${edge} edge)`, () => {
    const runtimes: LocalRuntime[] = [];
    const runtime = (opts: Parameters<typeof newRuntime>[1] = {}, dataDir = tempDir()) => {
      const rt = newRuntime(dataDir, { edge: { kind: edge, haproxy: HAPROXY, threads: "1" }, ...opts });
      runtimes.push(rt);
      return rt;
    };
    after(async () => {
      await Promise.all(runtimes.map((rt) => rt.close()));
      cleanupTemp();
    });

    it("no request fails while a new revision takes over; old processes drain, then stop", async () => {
      const rt = runtime();
      const v1 = spec({ kind: "directory", path: writeApp(tempDir(), { version: "v1" }) });
      const v2: RevisionSpec = {
        ...v1,
        revisionId: "rev-second",
        source: { kind: "directory", path: writeApp(tempDir(), { version: "v2" }) },
      };
      await built(rt, v1);
      await built(rt, v2);
      await rt.activate(v1, phase());
      const oldPid = Number((await hit(rt, v1.deploymentName)).json().pid);

      const failures: string[] = [];
      const seen = { v1: 0, v2: 0, v1AfterSwitch: 0 };
      let switched = false;
      let stop = false;
      const loop = async (path: string) => {
        while (!stop) {
          const startedAfterSwitch = switched;
          let res: Answer;
          try {
            res = await hit(rt, v1.deploymentName, path);
          } catch (err) {
            failures.push((err as Error).message);
            continue;
          }
          if (res.status !== 200) {
            failures.push(`${res.status} ${res.body}`);
            continue;
          }
          const version = res.json().version;
          if (version === "v1") seen.v1++;
          if (version === "v2") seen.v2++;
          if (startedAfterSwitch && version !== "v2") seen.v1AfterSwitch++;
        }
      };
      const loops = [loop("/"), loop("/"), loop("/slow?ms=50"), loop("/slow?ms=150")];
      // One request is still on v1 when the switch happens; it must complete, and hold back the stop.
      const longOne = hit(rt, v1.deploymentName, "/slow?ms=1500");
      await waitFor("traffic on v1", () => seen.v1 > 20);
      const ctx = phase();
      await rt.activate(v2, ctx);
      switched = true;
      const held = await longOne;
      assert.equal(held.status, 200);
      assert.equal(held.json().version, "v1");
      // activate returns once the new revision serves; the old one drains and stops after it.
      await waitFor("the old revision to stop", () => !alive(oldPid));
      await waitFor("traffic on v2", () => seen.v2 > 50);
      stop = true;
      await Promise.all(loops);
      assert.deepEqual(failures, []);
      assert.equal(seen.v1AfterSwitch, 0, "requests started after the switch go to the new revision");
      // Other lines (the new processes' output) may come between the two; the order is what counts.
      await waitFor("its stop in the deploy log", () => /revision \S+ stopped/.test(ctx.text("deploy")));
      const deployLog = ctx.text("deploy");
      const draining = deployLog.search(/draining revision /);
      const stopped = deployLog.search(/revision \S+ stopped/);
      assert.ok(draining >= 0 && stopped > draining, deployLog);
    });

    it("a crashed process is restarted with back-off and its crash is in the deploy log", async () => {
      const rt = runtime({ restartBackoffMs: 100 });
      const s = spec({ kind: "directory", path: writeApp(tempDir()) });
      await built(rt, s);
      const ctx = phase();
      await rt.activate(s, ctx);
      const before = Number((await hit(rt, s.deploymentName)).json().pid);
      assert.equal((await hit(rt, s.deploymentName, "/crash")).body, "bye");
      // The app's last output can reach the log after its exit is noticed: wait for both.
      await waitFor(
        "the restart",
        () =>
          ctx.lines.deploy.some((l) => /is serving again/.test(l)) &&
          ctx.lines.deploy.some((l) => /crashing on purpose/.test(l)),
      );
      const log = ctx.text("deploy");
      assert.match(log, /crashing on purpose/);
      assert.match(log, /slipway: process web\.1 exited with code 3; restarting in 100 ms/);
      const res = await hit(rt, s.deploymentName);
      assert.equal(res.status, 200);
      assert.notEqual(Number(res.json().pid), before);
      assert.equal(rt.health(s.deploymentId), "running");
      // A second crash in a row waits twice as long.
      await hit(rt, s.deploymentName, "/crash");
      await waitFor(
        "the second restart",
        () => ctx.lines.deploy.filter((l) => /is serving again/.test(l)).length === 2,
      );
      assert.match(ctx.text("deploy"), /exited with code 3; restarting in 200 ms/);
    });

    it("answers 502 while every process is down, and reports the deployment as unknown", async () => {
      const rt = runtime({ restartBackoffMs: 60_000 });
      const s = spec({ kind: "directory", path: writeApp(tempDir()) });
      await built(rt, s);
      await rt.activate(s, phase());
      await hit(rt, s.deploymentName, "/crash");
      await waitFor("the crash to be noticed", () => rt.health(s.deploymentId) === "unknown");
      const res = await hit(rt, s.deploymentName);
      assert.equal(res.status, 502);
      assert.match(String(res.json().detail), /has no running process/);
      await rt.teardown(s.deploymentId);
      assert.equal(rt.health(s.deploymentId), "stopped");
    });

    it("passes upgraded connections (WebSocket style) through", async () => {
      const rt = runtime();
      const src = writeApp(tempDir(), {
        config: { start: "node ws.js" },
        extra: {
          "ws.js": `const server = require("node:http").createServer((req, res) => res.end("plain"));
          server.on("upgrade", (req, socket) => {
            socket.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\nX-Via: " + req.headers["x-forwarded-host"] + "\\r\\n\\r\\n");
            socket.on("data", (d) => socket.write("echo:" + d));
          });
          server.listen(Number(process.env.PORT), "127.0.0.1");`,
        },
      });
      const s = spec({ kind: "directory", path: src });
      await built(rt, s);
      await rt.activate(s, phase());
      const reply = await new Promise<{ via: string; echo: string }>((resolve, reject) => {
        const req = request({
          host: "127.0.0.1",
          port: rt.appsPort,
          headers: { host: `${s.deploymentName}.${DOMAIN}`, connection: "Upgrade", upgrade: "echo" },
        });
        req.on("upgrade", (res, socket) => {
          socket.once("data", (d: Buffer) => {
            resolve({ via: String(res.headers["x-via"]), echo: d.toString() });
            socket.destroy();
          });
          socket.write("ping");
        });
        req.on("error", reject);
        req.end();
      });
      assert.deepEqual(reply, { via: `${s.deploymentName}.${DOMAIN}`, echo: "echo:ping" });
    });

    // What follows does not depend on the edge.
    if (edge !== "node") return;

    it("a new runtime on the same data dir activates a built revision without rebuilding", async () => {
      const dataDir = tempDir();
      const first = runtime({}, dataDir);
      const s = spec(
        { kind: "directory", path: writeApp(tempDir(), { version: "kept" }) },
        { env: { SECRET: "again" } },
      );
      await built(first, s);
      await first.activate(s, phase());
      const oldPid = Number((await hit(first, s.deploymentName)).json().pid);
      const oldPort = first.appsPort;
      await first.close();
      assert.equal(alive(oldPid), false, "close stops the apps");
      await assert.rejects(
        hit(first, s.deploymentName, "/", { agent: undefined }),
        /ECONNREFUSED|socket hang up|ECONNRESET/,
      );

      const second = runtime({}, dataDir);
      assert.equal(await second.isBuilt(s), true);
      const ctx = phase();
      const { url } = await second.activate(s, ctx);
      assert.equal(url, `http://${s.deploymentName}.${DOMAIN}:${second.appsPort}`);
      const body = (await hit(second, s.deploymentName)).json();
      assert.equal(body.version, "kept");
      assert.equal(body.secret, "again");
      assert.deepEqual(ctx.lines.build, []);
      assert.ok(oldPort > 0);
    });

    it("processes left by a runtime that was killed with SIGKILL are ended by the next one", async (t) => {
      const dataDir = tempDir();
      const s = spec({ kind: "directory", path: writeApp(tempDir(), { version: "orphan" }) });
      const host = spawn(
        process.execPath,
        [
          "--import",
          "tsx",
          join(import.meta.dirname, "..", "..", "helpers", "local-runtime-host.ts"),
          dataDir,
          JSON.stringify(s),
        ],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const line = await new Promise<string>((resolve, reject) => {
        let out = "";
        host.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          if (out.includes("\n")) resolve(out.trim());
        });
        host.once("exit", (code) => reject(new Error(`host exited with ${code}`)));
      });
      const orphan = (JSON.parse(line) as { pid: number }).pid;
      assert.ok(Number.isInteger(orphan) && orphan > 0, line);
      t.after(() => {
        // Should this test fail, do not leave the app behind.
        if (alive(orphan)) process.kill(orphan, "SIGKILL");
      });
      const exited = new Promise((resolve) => host.once("exit", resolve));
      t.after(() => {
        if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL");
      });
      host.kill("SIGKILL");
      await exited;
      assert.equal(alive(orphan), true, "the app outlives its killed runtime");

      const rt = runtime({}, dataDir);
      assert.equal(await rt.isBuilt(s), true);
      await rt.activate(s, phase());
      assert.equal(alive(orphan), false);
      const body = (await hit(rt, s.deploymentName)).json();
      assert.equal(body.version, "orphan");
      assert.notEqual(body.pid, orphan);
    });
  });
