import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { insertApiKey } from "../../src/resources/api-keys/service.ts";
import { NO_SANDBOX_REFUSAL, UNSANDBOXED_WARNING } from "../../src/runtimes/local/protections/refusals.ts";
import { hostSystem, probeBwrap } from "../../src/runtimes/local/sandbox/sandbox.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { PROBE_APP_JS, type ProbeAnswer, probeQuery } from "../helpers/probe-app.ts";
import { makeTarball } from "../helpers/tarballs.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { appGet, e2eEnv, freePort, gitRoot } from "./stack.ts";

const root = process.getuid?.() === 0;
const bwrapProblem = await probeBwrap(hostSystem(), root ? { uid: 200_000, gid: 200_000 } : undefined);
if (bwrapProblem !== undefined && process.env.CI === "true") {
  throw new Error(`bubblewrap must work in CI: ${bwrapProblem}`);
}
const git = gitRoot();

const APP_FILES = {
  "server.js": PROBE_APP_JS,
  "slipway.json": JSON.stringify({ start: "node server.js", healthcheck: "/" }),
};

interface Uploaded {
  id: string;
  revisionId: string;
  status: string;
  url: string | null;
}

/** What a tenant does with an API key: create an internal_source deployment, upload, PATCH. */
async function deployUpload(ctx: TestContext, key: string, name: string, secret: string): Promise<Uploaded> {
  const call = async (
    method: "POST" | "PATCH" | "GET" | "PUT",
    url: string,
    payload?: unknown,
    type?: string,
  ) => {
    const res = await ctx.app.inject({
      method,
      url,
      headers: method === "PUT" ? { "content-type": type ?? "" } : ctx.headers(key),
      payload: payload as string,
    });
    assert.ok(res.statusCode < 300, `${method} ${url} → ${res.statusCode}: ${res.body}`);
    return res.json() as Record<string, unknown>;
  };
  const dep = await call("POST", "/v2/deployments", {
    name,
    source: "internal_source",
    source_config: {},
    source_revision_config: { framework_config_path: "slipway.json" },
    secrets: [{ name: "TENANT_SECRET", value: secret }],
  });
  const id = String(dep.id);
  const upload = await call("POST", `/v2/deployments/${id}/upload-url`);
  const u = new URL(String(upload.upload_url));
  await call("PUT", `${u.pathname}${u.search}`, await makeTarball(APP_FILES), "application/gzip");
  const patched = await call("PATCH", `/v2/deployments/${id}`, {
    source_revision_config: {
      source_tarball_path: upload.source_tarball_path,
      framework_config_path: "slipway.json",
    },
    secrets: [{ name: "TENANT_SECRET", value: secret }],
  });
  const revisionId = String(patched.latest_revision_id);
  const status = await waitForRevision(ctx.db, revisionId, { timeoutMs: 90_000 });
  const after = await call("GET", `/v2/deployments/${id}`);
  const sc = after.source_config as { custom_url: string | null };
  return { id, revisionId, status, url: sc.custom_url };
}

async function logsOf(
  ctx: TestContext,
  key: string,
  d: Uploaded,
  type: "build" | "deploy",
): Promise<string[]> {
  const res = await ctx.app.inject({
    method: "GET",
    url: `/v2/deployments/${d.id}/revisions/${d.revisionId}/logs?type=${type}&limit=5000`,
    headers: ctx.headers(key),
  });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as { line: string }[]).map((l) => l.line);
}

/** Host pids of processes whose environment holds `marker` (root reads every one). */
function pidsWithEnv(marker: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, "utf8").includes(marker)) out.push(Number(entry));
    } catch {
      // not ours to read, or gone
    }
  }
  return out;
}

async function probe(url: string, paths: string[], pids: number[]): Promise<ProbeAnswer> {
  const answer = await appGet(url, probeQuery(paths, pids));
  assert.equal(answer.status, 200);
  return answer.body as unknown as ProbeAnswer;
}

const appsPortA = await freePort();
const appsPortB = await freePort();

forEachDatabase(
  "end to end: the sandbox keeps a second organization's app away from everything else",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let first: Uploaded;
    let second: Uploaded;
    let memberB = "";
    before(async () => {
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      memberB = (
        await insertApiKey(suite.ctx.db.orm, { organizationId: suite.ctx.other.orgId, role: "member" })
      ).key;
    });
    after(async () => {
      await stack?.stop();
    });

    it("the first organization's app deploys and serves, confined too", async () => {
      const ctx = suite.ctx;
      first = await deployUpload(ctx, ctx.keys.member, `first-${kind}`, "first-org-secret-value");
      assert.equal(first.status, "DEPLOYED");
      assert.ok(first.url);
      const p = await probe(first.url, [], []);
      assert.equal(p.cwd, "/app");
      assert.ok(p.envNames.includes("TENANT_SECRET"));
      const deployLog = await logsOf(ctx, ctx.keys.member, first, "deploy");
      assert.ok(!deployLog.includes(UNSANDBOXED_WARNING));
    });

    it("a member of a second organization deploys an app that cannot read the master key, the data dir, another app's files or environment, Slipway's environment or other processes", async () => {
      const ctx = suite.ctx;
      const dataDir = ctx.config.dataDir;
      writeFileSync(join(dataDir, "master.key"), "MASTER-KEY-FILE-CONTENT\n", { mode: 0o600 });
      second = await deployUpload(ctx, memberB, `second-${kind}`, "second-org-secret-value");
      assert.equal(second.status, "DEPLOYED");
      assert.ok(second.url && first.url);
      const firstPids = pidsWithEnv("first-org-secret-value");
      assert.ok(firstPids.length > 0, "the first app's host processes were found");
      const targets = [
        join(dataDir, "master.key"),
        dataDir,
        join(dataDir, "apps"),
        join(dataDir, "apps", first.id, first.revisionId, "app", "server.js"),
        join(dataDir, "apps", first.id, "home"),
        "/etc/shadow",
        "/root",
        `/proc/${process.pid}/environ`,
      ];
      const p = await probe(second.url, targets, [...firstPids, process.pid]);
      for (const t of targets)
        assert.equal(p.reads[t]?.ok, false, `${t} was readable: ${JSON.stringify(p.reads[t])}`);
      for (const pid of [...firstPids, process.pid]) {
        const env = p.pidEnvirons[String(pid)];
        assert.ok(
          env?.ok !== true || !/first-org-secret-value|DATABASE_URL|SLIPWAY_/.test(env.value ?? ""),
          `pid ${pid}'s environment was readable: ${JSON.stringify(env)}`,
        );
      }
      // Every process it can see is its own, and no environment it can read is anyone else's.
      const seen = JSON.stringify({ processes: p.processes, environs: p.environs });
      assert.ok(!seen.includes("first-org-secret-value"));
      const cmdlines = Object.values(p.processes).map((a) => a.value ?? "");
      assert.equal(cmdlines.filter((c) => c.startsWith("node server.js")).length, 1, seen);
      assert.ok(!cmdlines.some((c) => c.includes("--test")), "the Slipway process is not visible");
      assert.ok(!p.envNames.some((n) => /^(DATABASE_URL|SLIPWAY_)/.test(n)), p.envNames.join(","));
      if (root) assert.notEqual(p.status[0], "Uid:\t0\t0\t0\t0", "not root");
      // Tenants' logs name no host path and no host pid.
      const logs = [
        ...(await logsOf(ctx, memberB, second, "build")),
        ...(await logsOf(ctx, memberB, second, "deploy")),
      ];
      const text = logs.join("\n");
      assert.ok(!text.includes(dataDir), text);
      assert.ok(!/\bpid\b/.test(text), text);
      // The first app is untouched.
      const again = await probe(first.url, [], []);
      assert.ok(again.envNames.includes("TENANT_SECRET"));
    });
  },
  {
    env: {
      ...e2eEnv(git.root, appsPortA),
      // Fails start-up rather than silently running unsandboxed where bwrap is missing.
      SLIPWAY_SANDBOX: bwrapProblem === undefined ? "bwrap" : "auto",
    },
  },
);

forEachDatabase(
  "end to end: without a sandbox only the first organization deploys",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    before(async () => {
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
    });
    after(async () => {
      await stack?.stop();
    });

    it("the first organization's app deploys with a warning in its logs; a second organization's → DEPLOY_FAILED saying how to enable the sandbox", async () => {
      const ctx = suite.ctx;
      const first = await deployUpload(ctx, ctx.keys.member, `open-${kind}`, "first-org-secret-value");
      assert.equal(first.status, "DEPLOYED");
      assert.ok(first.url);
      assert.equal((await appGet(first.url)).status, 200);
      assert.ok((await logsOf(ctx, ctx.keys.member, first, "deploy")).includes(UNSANDBOXED_WARNING));
      assert.ok((await logsOf(ctx, ctx.keys.member, first, "build")).includes(UNSANDBOXED_WARNING));

      const memberB = (await insertApiKey(ctx.db.orm, { organizationId: ctx.other.orgId, role: "member" }))
        .key;
      const second = await deployUpload(ctx, memberB, `closed-${kind}`, "second-org-secret-value");
      assert.equal(second.status, "DEPLOY_FAILED");
      const rev = await ctx.app.inject({
        method: "GET",
        url: `/v2/deployments/${second.id}/revisions/${second.revisionId}`,
        headers: ctx.headers(memberB),
      });
      assert.ok(rev.body.includes("apt-get install bubblewrap"), rev.body);
      assert.ok((await logsOf(ctx, memberB, second, "deploy")).some((l) => l.includes(NO_SANDBOX_REFUSAL)));
      assert.deepEqual(pidsWithEnv("second-org-secret-value"), [], "nothing of it ever ran");
    });
  },
  { env: { ...e2eEnv(git.root, appsPortB), SLIPWAY_SANDBOX: "none" } },
);
