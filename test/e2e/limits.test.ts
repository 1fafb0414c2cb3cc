import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { after, it } from "node:test";
import { type RunningReconciler, startReconciler } from "../../src/reconciler/start.ts";
import { diskUsage } from "../../src/runtimes/local/disk-limit.ts";
import { gzipBomb } from "../helpers/bomb.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { Api, type Deployment, e2eEnv, freePort, gitRoot } from "./stack.ts";

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
