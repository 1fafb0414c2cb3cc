import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { after, before, it } from "node:test";
import { AppDatabases } from "../../src/reconciler/app-database.ts";
import { insertApiKey } from "../../src/resources/api-keys/service.ts";
import { probeNetworkNamespaces } from "../../src/runtimes/local/network/probe.ts";
import { hostSystem, probeBwrap } from "../../src/runtimes/local/sandbox/sandbox.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { DB_KINDS, TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { type ConnectResult, type PgResult, SPY_APP_JS, type SpyHome } from "../helpers/spy-app.ts";
import { makeTarball } from "../helpers/tarballs.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { appGet, e2eEnv, freePort, gitRoot } from "./stack.ts";

/**
 * Issue 26's network test through the API: a second organization's spy app, in its sandbox and its
 * deployment's network namespace, tries every host loopback port that matters and the victim's
 * own port and Redis, and reaches none; it still answers through the edge, reaches its own
 * database through the gate (as its own role only) and its own Redis. Traffic goes only to
 * loopback and to the 198.18.0.0/15 addresses of the namespaces Slipway makes here.
 */

const root = process.getuid?.() === 0;
const bwrapProblem = await probeBwrap(hostSystem(), root ? { uid: 200_000, gid: 200_000 } : undefined);
const netProbe = await probeNetworkNamespaces();
const redisServer = "/usr/bin/redis-server";
let hasRedis = true;
try {
  execFileSync(redisServer, ["--version"]);
} catch {
  hasRedis = false;
}
const problem = [
  bwrapProblem,
  netProbe.ok ? undefined : netProbe.detail,
  hasRedis ? undefined : "redis-server is missing (apt-get install redis-server)",
  DB_KINDS.includes("postgres") ? undefined : "PostgreSQL is unreachable",
].filter((p): p is string => p !== undefined);
if (problem.length > 0 && process.env.CI === "true") {
  throw new Error(`the network test must run in CI: ${problem.join("; ")}`);
}
const skip = problem.length > 0 ? problem.join("; ") : false;

const git = gitRoot();
const appsPort = await freePort();

const APP_FILES = {
  "server.js": SPY_APP_JS,
  "slipway.json": JSON.stringify({ start: "node server.js", healthcheck: "/", redis: true }),
};

interface Uploaded {
  id: string;
  revisionId: string;
  status: string;
  url: string;
}

/** What a tenant does with an API key: an internal_source deployment, an upload, a PATCH. */
async function deployUpload(ctx: TestContext, key: string, name: string, marker: string): Promise<Uploaded> {
  const call = async (method: "POST" | "PATCH" | "GET" | "PUT", url: string, payload?: unknown) => {
    const res = await ctx.app.inject({
      method,
      url,
      headers: method === "PUT" ? { "content-type": "application/gzip" } : ctx.headers(key),
      payload: payload as string,
    });
    assert.ok(res.statusCode < 300, `${method} ${url} → ${res.statusCode}: ${res.body}`);
    return res.json() as Record<string, unknown>;
  };
  const secrets = [{ name: "SPY_NAME", value: marker }];
  const dep = await call("POST", "/v2/deployments", {
    name,
    source: "internal_source",
    source_config: {},
    source_revision_config: { framework_config_path: "slipway.json" },
    secrets,
  });
  const id = String(dep.id);
  const upload = await call("POST", `/v2/deployments/${id}/upload-url`);
  const u = new URL(String(upload.upload_url));
  await call("PUT", `${u.pathname}${u.search}`, await makeTarball(APP_FILES));
  const patched = await call("PATCH", `/v2/deployments/${id}`, {
    source_revision_config: {
      source_tarball_path: upload.source_tarball_path,
      framework_config_path: "slipway.json",
    },
    secrets,
  });
  const revisionId = String(patched.latest_revision_id);
  const status = await waitForRevision(ctx.db, revisionId, { timeoutMs: 120_000 });
  const got = await call("GET", `/v2/deployments/${id}`);
  const url = (got.source_config as { custom_url: string | null }).custom_url;
  assert.ok(url, "a custom_url");
  return { id, revisionId, status, url };
}

/** The app process (node) whose SPY_NAME is `marker`: its environment, as root reads it. */
function appProcess(marker: string): { pid: number; env: Record<string, string> } {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, "utf8").trim() !== "node") continue;
      const raw = readFileSync(`/proc/${entry}/environ`, "utf8").split("\0");
      const env = Object.fromEntries(
        raw.map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
      );
      if (env.SPY_NAME === marker) return { pid: Number(entry), env };
    } catch {
      // gone, or not readable
    }
  }
  throw new Error(`no app process of ${marker}`);
}

/** The named network namespace a process is in, its address and its host end (the default route). */
function namespaceOf(pid: number): { name: string; address: string; hostAddress: string } {
  const name = execFileSync("ip", ["netns", "identify", String(pid)], { encoding: "utf8" }).trim();
  assert.ok(name.startsWith("slipway-"), `process ${pid} is in namespace "${name}"`);
  const addr = execFileSync("ip", ["-n", name, "-4", "-o", "addr", "show", "dev", "eth0"], {
    encoding: "utf8",
  });
  const route = execFileSync("ip", ["-n", name, "-4", "route", "show", "default"], { encoding: "utf8" });
  const address = /inet (198\.1[89]\.[\d.]+)\//.exec(addr)?.[1];
  const hostAddress = /via (198\.1[89]\.[\d.]+)/.exec(route)?.[1];
  assert.ok(address && hostAddress, `${addr} ${route}`);
  return { name, address, hostAddress };
}

/** Whether this (host) process can open a TCP connection: the control that a target listens. */
function hostConnects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host, port, timeout: 3000 });
    s.on("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.on("timeout", () => {
      s.destroy();
      resolve(false);
    });
    s.on("error", () => resolve(false));
  });
}

async function spyGet<T>(url: string, path: string): Promise<T> {
  const answer = await appGet(url, path);
  assert.equal(answer.status, 200, JSON.stringify(answer));
  return answer.body as unknown as T;
}

forEachDatabase(
  "end to end: a second organization's app reaches nothing on the host's network",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let redis: ChildProcess | undefined;
    let hostRedisPort = 0;
    const servers: Server[] = [];
    const deployments: string[] = [];
    let victim: Uploaded;
    let spy: Uploaded;
    const victimMarker = `victim-${kind}-${process.pid}`;
    const spyMarker = `spy-${kind}-${process.pid}`;

    before(async () => {
      if (skip !== false) return;
      hostRedisPort = await freePort();
      redis = spawn(
        redisServer,
        ["--port", String(hostRedisPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        { stdio: "ignore" },
      );
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
    });
    after(async () => {
      await stack?.stop();
      redis?.kill();
      for (const s of servers) s.close();
      // The databases are dropped here: the suite's server outlives the deployments.
      const dbs = new AppDatabases(TEST_DATABASE_URL, suite.ctx.keyring);
      for (const id of deployments) await dbs.drop(id).catch(() => undefined);
    });

    it("the spy tries PostgreSQL, Redis, Slipway's API, the apps listener and the victim's port and Redis: none answers; it answers through the edge", {
      skip,
    }, async () => {
      const ctx = suite.ctx;
      // Slipway's API on a real port, as `slipway serve` has it.
      await ctx.app.listen({ host: "127.0.0.1", port: 0 });
      const apiPort = (ctx.app.server.address() as AddressInfo).port;

      victim = await deployUpload(ctx, ctx.keys.member, `victim-${kind}`, victimMarker);
      deployments.push(victim.id);
      assert.equal(victim.status, "DEPLOYED");
      const memberB = (await insertApiKey(ctx.db.orm, { organizationId: ctx.other.orgId, role: "member" }))
        .key;
      spy = await deployUpload(ctx, memberB, `spy-${kind}`, spyMarker);
      deployments.push(spy.id);
      assert.equal(spy.status, "DEPLOYED");

      const v = appProcess(victimMarker);
      const s = appProcess(spyMarker);
      const victimPort = Number(v.env.PORT);
      const victimRedisPort = Number(new URL(v.env.REDIS_URI ?? "redis://x:1").port);
      const spyPort = Number(s.env.PORT);
      const vNet = namespaceOf(v.pid);
      const sNet = namespaceOf(s.pid);
      assert.notEqual(vNet.name, sNet.name, "each deployment has its own namespace");
      // A host service bound to the spy's own host end: only the firewall keeps it out.
      const onHostEnd = createHttpServer((_req, res) => res.end("host"));
      servers.push(onHostEnd);
      await new Promise<void>((resolve) => onHostEnd.listen(0, sNet.hostAddress, resolve));
      const hostEndPort = (onHostEnd.address() as AddressInfo).port;

      const targets = [
        { label: "PostgreSQL", host: "127.0.0.1", port: 5432 },
        { label: "the host's Redis", host: "127.0.0.1", port: hostRedisPort },
        { label: "Slipway's API", host: "127.0.0.1", port: apiPort },
        { label: "the apps listener", host: "127.0.0.1", port: appsPort },
        { label: "the victim's port on loopback", host: "127.0.0.1", port: victimPort },
        { label: "the victim's Redis on loopback", host: "127.0.0.1", port: victimRedisPort },
        { label: "Slipway's API on the host end", host: sNet.hostAddress, port: apiPort },
        { label: "the apps listener on the host end", host: sNet.hostAddress, port: appsPort },
        { label: "a host service on the host end", host: sNet.hostAddress, port: hostEndPort },
        { label: "the victim's port in its namespace", host: vNet.address, port: victimPort },
        { label: "the victim's Redis in its namespace", host: vNet.address, port: victimRedisPort },
      ];
      // Every target listens: the host reaches each (so a failure below is the namespace's doing).
      const hostTargets = [
        { host: "127.0.0.1", port: 5432 },
        { host: "127.0.0.1", port: hostRedisPort },
        { host: "127.0.0.1", port: apiPort },
        { host: "127.0.0.1", port: appsPort },
        { host: sNet.hostAddress, port: hostEndPort },
        { host: vNet.address, port: victimPort },
        { host: vNet.address, port: victimRedisPort },
      ];
      for (const t of hostTargets)
        assert.ok(await hostConnects(t.host, t.port), `the host reaches ${t.host}:${t.port}`);

      const own = { label: "its own port", host: "127.0.0.1", port: spyPort };
      const query = `/connect?targets=${encodeURIComponent(JSON.stringify([own, ...targets]))}`;
      const results = await spyGet<ConnectResult[]>(spy.url, query);
      assert.equal(results[0]?.result, "connected", "it connects to its own port (the probe works)");
      const reached = results.slice(1).filter((r) => r.result === "connected");
      assert.deepEqual(reached, [], `reached: ${JSON.stringify(reached)}`);
      assert.equal(results.length, targets.length + 1);

      // Both still answer through the edge.
      assert.equal((await spyGet<SpyHome>(spy.url, "/")).spy, spyMarker);
      assert.equal((await spyGet<SpyHome>(victim.url, "/")).spy, victimMarker);
    });

    it("through DATABASE_URI the spy reaches its own database as its own role; as postgres or into another database it is refused", {
      skip,
    }, async () => {
      const home = await spyGet<SpyHome>(spy.url, "/");
      assert.ok(home.database, "the spy has a DATABASE_URI");
      assert.match(home.database.host, /^198\.1[89]\./, "it leads to the gate, not to the host's loopback");
      const victimHome = await spyGet<SpyHome>(victim.url, "/");
      assert.ok(victimHome.database);
      const pg = (user: string, database: string) =>
        spyGet<PgResult>(
          spy.url,
          `/pg?user=${encodeURIComponent(user)}&database=${encodeURIComponent(database)}`,
        );
      const mine = await pg(home.database.user, home.database.name);
      assert.deepEqual(mine, { ok: true, user: home.database.user, database: home.database.name });
      for (const [user, database] of [
        ["postgres", home.database.name],
        ["postgres", "postgres"],
        [home.database.user, "postgres"],
        [home.database.user, victimHome.database.name],
        [victimHome.database.user, victimHome.database.name],
      ] as const) {
        const r = await pg(user, database);
        assert.equal(r.ok, false, `${user} into ${database}: ${JSON.stringify(r)}`);
        assert.equal(r.code, "28000", `${user} into ${database}: ${JSON.stringify(r)}`);
      }
    });

    it("the spy reaches its own Redis through REDIS_URI", { skip }, async () => {
      assert.equal(await spyGet<string>(spy.url, "/redis"), "+OK\r\n+PONG");
    });
  },
  {
    env: {
      ...e2eEnv(git.root, appsPort),
      SLIPWAY_SANDBOX: "bwrap",
      SLIPWAY_APPS_DATABASE_URL: TEST_DATABASE_URL,
    },
  },
);
