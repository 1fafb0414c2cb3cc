import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { HaproxyApi } from "../../../../../src/runtimes/local/routing/haproxy/api.ts";
import { renderHostsMap } from "../../../../../src/runtimes/local/routing/haproxy/config.ts";
import { edgeTotals } from "../../../../../src/runtimes/local/routing/request-metrics.ts";
import type { LocalRuntime } from "../../../../../src/runtimes/local/runtime.ts";
import {
  cleanupTemp,
  deployed,
  hit,
  newRuntime,
  spec,
  tempDir,
  waitFor,
  writeApp,
} from "../../../../helpers/local-runtime.ts";

/**
 * The HAProxy front of the apps edge with a real HAProxy (Debian's; CI installs it): what it serves
 * itself, what it leaves to the Node edge, and what becomes of the edge when HAProxy is absent or
 * dies. The serving behaviours both edges share (a switch under load, crashes, upgrades) are in
 * test/runtimes/local/serving.test.ts, run once per edge.
 */

const HAPROXY = "/usr/sbin/haproxy";
const skip = existsSync(HAPROXY) || process.env.CI === "true" ? false : "no haproxy here (CI installs it)";

/** The apps port's HAProxy of a runtime started with the data dir `dataDir`. */
const apiOf = (dataDir: string) => new HaproxyApi(join(dataDir, "edge", "haproxy", "admin.sock"));

/** `show stat`'s `column`, summed over the servers at `port` (the app's process), from HAProxy itself. */
async function serverStat(dataDir: string, port: number, column = "req_tot"): Promise<number> {
  const csv = await apiOf(dataDir).command("show stat -1 4 -1");
  const [head = "", ...rows] = csv.split("\n");
  const cols = head.replace(/^# /, "").split(",");
  const [addr, wanted] = [cols.indexOf("addr"), cols.indexOf(column)];
  return rows
    .map((r) => r.split(","))
    .filter((f) => f[addr]?.endsWith(`:${port}`))
    .reduce((sum, f) => sum + Number(f[wanted] ?? 0), 0);
}
const servedByHaproxy = (dataDir: string, port: number) => serverStat(dataDir, port);

describe("the apps edge's HAProxy front", { skip }, () => {
  const runtimes: LocalRuntime[] = [];
  const runtime = (dataDir: string, logger?: { info(): void; warn(o: object, m: string): void }) => {
    const rt = newRuntime(dataDir, {
      edge: { kind: "haproxy", haproxy: HAPROXY, threads: "1" },
      ...(logger === undefined ? {} : { logger }),
    });
    runtimes.push(rt);
    return rt;
  };
  after(async () => {
    await Promise.all(runtimes.map((rt) => rt.close()));
    cleanupTemp();
  });

  it("proxies straight to the app; its log feeds the deployment's metrics and its statistics the traffic", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir);
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    await deployed(rt, s);
    const port = Number((await hit(rt, s.deploymentName)).json().port);
    for (let i = 0; i < 40; i++) assert.equal((await hit(rt, s.deploymentName)).status, 200);
    assert.ok((await servedByHaproxy(dataDir, port)) >= 40, "HAProxy served them, not the Node edge");
    // Over kept-alive connections to the app (a connection a request would cost the app dearly).
    assert.ok((await serverStat(dataDir, port, "connect")) <= 5, "HAProxy reuses its connections to the app");
    await waitFor(
      "the request log's counts",
      () => (edgeTotals().get(s.deploymentName)?.requests ?? 0) >= 41,
    );
    const totals = edgeTotals().get(s.deploymentName);
    assert.equal(totals?.classes[1], totals?.requests, "all 2xx");

    // A request in flight on HAProxy counts in the deployment's traffic while it lasts.
    const slow = hit(rt, s.deploymentName, "/slow?ms=1500");
    await waitFor("the in-flight request seen", () => (rt.traffic(s.deploymentId)?.inflight ?? 0) >= 1, 5000);
    assert.equal((await slow).status, 200);
    await waitFor("nothing in flight", () => rt.traffic(s.deploymentId)?.inflight === 0, 5000);
  });

  it("leaves unknown hosts to the Node edge, and passes X-Forwarded-* as it wrote them", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir);
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    await deployed(rt, s);
    const missing = await hit(rt, "nobody-here");
    assert.equal(missing.status, 404);
    assert.match(String(missing.json().detail), /No app is served at nobody-here\./);
    const body = (await hit(rt, s.deploymentName)).json();
    assert.equal(body.forwardedFor, "127.0.0.1");
    assert.equal(body.forwardedHost, `${s.deploymentName}.apps.test:${rt.appsPort}`);
  });

  it("is started again when it dies, with the routes of the moment", async () => {
    const dataDir = tempDir();
    const warnings: string[] = [];
    const rt = runtime(dataDir, { info: () => {}, warn: (_o, m) => warnings.push(m) });
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    await deployed(rt, s);
    const pid = Number(readFileSync(join(dataDir, "edge", "haproxy", "haproxy.pid"), "utf8").trim());
    process.kill(pid, "SIGKILL");
    await waitFor("a warning", () => warnings.some((w) => /HAProxy exited; starting it again/.test(w)), 5000);
    await waitFor(
      "serving again",
      async () => (await hit(rt, s.deploymentName).catch(() => ({ status: 0 }))).status === 200,
      15_000,
    );
    const port = Number((await hit(rt, s.deploymentName)).json().port);
    await waitFor("HAProxy itself serving it", async () => (await servedByHaproxy(dataDir, port)) > 0, 5000);
  });

  it("SLIPWAY_EDGE=auto without HAProxy: the Node edge serves alone, and says why; haproxy then fails the start", async () => {
    const warnings: string[] = [];
    const auto = newRuntime(tempDir(), {
      edge: { kind: "auto", haproxy: "/nonexistent/haproxy", threads: "1" },
      logger: { info: () => {}, warn: (_o, m) => warnings.push(m) },
    });
    runtimes.push(auto);
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    await deployed(auto, s);
    assert.equal((await hit(auto, s.deploymentName)).status, 200);
    assert.ok(
      warnings.some((w) => /HAProxy is not used \(SLIPWAY_EDGE=auto\)/.test(w)),
      warnings.join("\n"),
    );

    const required = newRuntime(tempDir(), {
      edge: { kind: "haproxy", haproxy: "/nonexistent/haproxy", threads: "1" },
    });
    runtimes.push(required);
    await assert.rejects(required.start(), /\/nonexistent\/haproxy -v failed/);
  });

  it("maps only plain host names", () => {
    assert.equal(
      renderHostsMap([
        ["app.apps.test", "s0"],
        ["evil host\nother", "s1"],
        ["Upper.test", "s2"],
      ]),
      "app.apps.test s0\n",
    );
  });
});
