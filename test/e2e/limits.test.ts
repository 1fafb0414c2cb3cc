import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";
import { diskUsage } from "../../src/runtimes/build/disk-limit.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { gzipBomb } from "../helpers/bomb.ts";
import { eventually } from "../helpers/eventually.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { Api, AppRepo, appGet, createDeployed, type Deployment, e2eEnv, freePort, gitRoot } from "./stack.ts";

const git = gitRoot();
const appsPort = await freePort();

/** Regular files under `dir`, recursively (directories alone hold no data). */
function filesUnder(dir: string): string[] {
  try {
    return readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => !e.isDirectory())
      .map((e) => join(e.parentPath, e.name));
  } catch {
    return [];
  }
}

forEachDatabase(
  "end to end: a decompression bomb uploaded as source",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    after(async () => {
      await stack?.stop();
    });

    it("ends CREATE_FAILED at the unpacked-size limit, with the data dir back where it was", async () => {
      const ctx = suite.ctx;
      stack = await startReconciler(ctx, ctx.app.log);
      const api = new Api(ctx);
      const created = await api.call<Deployment>(
        "POST",
        "/v2/deployments",
        {
          name: `bomb-${kind}`,
          source: "internal_source",
          source_revision_config: { framework_config_path: "slipway.json" },
        },
        201,
      );
      const target = await api.call<{ upload_url: string; source_tarball_path: string }>(
        "POST",
        `/v2/deployments/${created.id}/upload-url`,
      );
      // 2 GiB of zeros in about 2 MB: well under the upload limit, far over the unpacked one.
      const bomb = gzipBomb(2 * 1024 ** 3);
      const u = new URL(target.upload_url);
      const put = await ctx.app.inject({
        method: "PUT",
        url: `${u.pathname}${u.search}`,
        headers: { "content-type": "application/gzip" },
        payload: bomb,
      });
      assert.equal(put.statusCode, 200, put.body);

      const before = await diskUsage(ctx.config.dataDir);
      const patched = await api.patch(created.id, {
        source_revision_config: { source_tarball_path: target.source_tarball_path },
      });
      assert.ok(patched.latest_revision_id);
      const rid = patched.latest_revision_id;
      assert.equal(await waitForRevision(ctx.db, rid, { timeoutMs: 60_000 }), "CREATE_FAILED");

      const log = await api.logs(created.id, rid, "build");
      assert.ok(
        log.includes("error: the source archive is larger than 1 GiB unpacked (SLIPWAY_SOURCE_LIMIT_BYTES)"),
        log.join("\n"),
      );
      assert.deepEqual(filesUnder(join(ctx.config.dataDir, "apps")), [], "no file of the archive is left");
      // Directories the runtime made on its first use (apps/, runtime/home) hold a few KiB at most.
      const afterBytes = await diskUsage(ctx.config.dataDir);
      assert.ok(afterBytes - before < 64 * 1024, `data dir grew by ${afterBytes - before} bytes`);
    });
  },
  { env: e2eEnv(git.root, appsPort) },
);

/**
 * An app that answers every path at once, and on GET /flood prints 300,000 lines in bursts over
 * about two seconds, answering once all are written.
 */
const FLOOD_JS = `const http = require("node:http");
const LINES = 300000, BURSTS = 20;
function flood(done) {
  let burst = 0;
  const next = () => {
    if (burst === BURSTS) return done();
    let text = "";
    for (let i = 0; i < LINES / BURSTS; i++) text += "flood line " + (burst * LINES / BURSTS + i) + "\\n";
    burst++;
    process.stdout.write(text, () => setTimeout(next, 100));
  };
  next();
}
const server = http.createServer((req, res) => {
  if (req.url === "/flood") return flood(() => res.end("flooded"));
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ version: "flood" }));
});
server.listen(Number(process.env.PORT), "127.0.0.1", () => console.log("listening on " + process.env.PORT));
`;

/** Host processes whose command line is exactly `words` (a build's leftovers, say). */
function processesRunning(words: string[]): number[] {
  const found: number[] = [];
  for (const pid of readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = readFileSync(join("/proc", pid, "cmdline"), "utf8")
        .split("\0")
        .filter(Boolean);
      if (cmd.join(" ") === words.join(" ")) found.push(Number(pid));
    } catch {
      // Gone since the listing.
    }
  }
  return found;
}

const p99 = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.ceil(sorted.length * 0.99) - 1] ?? Number.POSITIVE_INFINITY;
};

const fairGit = gitRoot();
const fairAppsPort = await freePort();

forEachDatabase(
  "end to end: a tenant's build time and log flood",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    const settle = (rid: string) => waitForRevision(suite.ctx.db, rid, { timeoutMs: 120_000 });
    after(async () => {
      await stack?.stop();
    });

    it("kills a build past SLIPWAY_BUILD_TIMEOUT_S and fails it with the reason; the active revision keeps serving", async () => {
      const ctx = suite.ctx;
      stack = await startReconciler(ctx, ctx.app.log);
      const s = await createDeployed(ctx, fairGit.team, `slow-build-${kind}`, settle);
      // A unique duration names this build's processes on the host, the background one included.
      const marker = ["sleep", String(7000 + Math.floor(Math.random() * 900))];
      await s.api.patch(s.dep.id, {
        source_config: { install_command: `${marker.join(" ")} & ${marker.join(" ")}` },
        source_revision_config: { repo_ref: "main" },
      });
      const rid = (await s.api.deployment(s.dep.id)).latest_revision_id ?? "";
      await eventually("the build to start", () => processesRunning(marker).length >= 1, 60_000);
      assert.equal(await settle(rid), "BUILD_FAILED");
      const rev = await s.api.call<{ status_message: string | null }>(
        "GET",
        `/v2/deployments/${s.dep.id}/revisions/${rid}`,
      );
      assert.equal(rev.status_message, "the build took longer than 3 s (SLIPWAY_BUILD_TIMEOUT_S)");
      const log = await s.api.logs(s.dep.id, rid, "build");
      assert.ok(
        log.includes("Slipway: the build took longer than 3 s (SLIPWAY_BUILD_TIMEOUT_S); stopping it."),
        log.join("\n"),
      );
      assert.deepEqual(
        processesRunning(marker),
        [],
        "no process of the build is left, background ones included",
      );
      assert.equal((await s.api.deployment(s.dep.id)).active_revision_id, s.firstRevision);
      assert.equal((await appGet(s.url)).body.version, "1", "the previous revision keeps serving");
    });

    it("an app printing 300,000 lines keeps /ok under 100 ms at p99, its lines held to the rate", async (t) => {
      const ctx = suite.ctx;
      stack ??= await startReconciler(ctx, ctx.app.log);
      const api = new Api(ctx);
      const name = `flood-${kind}`;
      const repo = new AppRepo(fairGit.team, name);
      writeFileSync(join(repo.dir, "flood.js"), FLOOD_JS);
      repo.commit({ version: "flood", config: { start: "node flood.js", healthcheck: "/" } });
      const integrationId = await api.integration(fairGit.team);
      const dep = await api.createCodehost({
        name,
        integrationId,
        repoUrl: await api.repoUrl(integrationId, name),
      });
      const rid = dep.latest_revision_id ?? "";
      assert.equal(await settle(rid), "DEPLOYED");
      const url = (await api.deployment(dep.id)).source_config.custom_url ?? "";

      let flooded = false;
      const flood = appGet(url, "/flood").finally(() => {
        flooded = true;
      });
      // Requests one after another, 20 ms apart, for as long as the app floods (at least 100).
      const samples: number[] = [];
      while ((!flooded || samples.length < 100) && samples.length < 1000) {
        const started = performance.now();
        const res = await ctx.app.inject({ method: "GET", url: "/ok" });
        samples.push(performance.now() - started);
        assert.equal(res.statusCode, 200, res.body);
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal((await flood).status, 200);
      t.diagnostic(
        `/ok over ${samples.length} requests: p99 ${p99(samples).toFixed(1)} ms, max ${Math.max(...samples).toFixed(1)} ms`,
      );
      assert.ok(p99(samples) < 100, `/ok p99 ${p99(samples).toFixed(1)} ms while an app floods its log`);

      // What was over the rate is counted, one line per second, and everything else is stored.
      const lines = await eventually(
        "every line stored or counted",
        async () => {
          const all = await api.logs(dep.id, rid, "deploy");
          const dropped = all
            .map((l) => /^slipway: (\d+) lines? dropped \(over SLIPWAY_LOG_LINES_PER_S\)$/.exec(l)?.[1])
            .filter((n) => n !== undefined)
            .reduce((sum, n) => sum + Number(n), 0);
          const kept = all.filter((l) => l.startsWith("flood line ")).length;
          assert.equal(kept + dropped, 300_000, `${kept} kept, ${dropped} counted as dropped`);
          return all;
        },
        30_000,
      );
      assert.ok(lines.filter((l) => l.startsWith("flood line ")).length < 10_000);
    });
  },
  { env: { ...e2eEnv(fairGit.root, fairAppsPort), SLIPWAY_BUILD_TIMEOUT_S: "3" } },
);
