import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../helpers/databases.ts";
import { hostStatus, runSlipway, type SlipwayProcess } from "../helpers/process.ts";

const SERVING = /Slipway is serving (http:\/\/\S+) on/;
const TERMINAL = ["DEPLOYED", "BUILD_FAILED", "DEPLOY_FAILED", "CREATE_FAILED"];

/**
 * A build on a full disk: the data dir (where builds write) on a small tmpfs, the database on
 * PostgreSQL elsewhere. The build that runs out of space fails its revision, the deployed revision
 * keeps serving, and once space returns the next deploy succeeds.
 */
describe("a build on a full disk", () => {
  const root = process.getuid?.() === 0 ? mkdtempSync(join(tmpdir(), "slipway-build-full-")) : undefined;
  let mounted = false;
  if (root) {
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=64m", "tmpfs", root]);
      mounted = true;
    } catch {
      mounted = false;
    }
  }
  const servers: SlipwayProcess[] = [];
  let db: TestDatabase | undefined;
  after(async () => {
    for (const s of servers) {
      s.proc.kill("SIGKILL");
      await s.exited;
    }
    if (root && mounted) execFileSync("umount", ["-l", root]);
    if (root) rmSync(root, { recursive: true, force: true });
    await db?.drop();
  });

  const skip = !mounted
    ? "needs root to mount a tmpfs"
    : !DB_KINDS.includes("postgres") && "needs PostgreSQL";
  it("fails the revision, the deployed one keeps serving, and the next deploy works once space returns", {
    skip,
  }, async () => {
    const dir = root as string;
    db = await createTestDatabase("postgres");
    const server = runSlipway(["serve"], {
      DATABASE_URL: db.url as string,
      SLIPWAY_DATA_DIR: join(dir, "data"),
      PORT: "0",
      SLIPWAY_APPS_PORT: "0",
      SLIPWAY_SANDBOX: "none",
      SLIPWAY_RECONCILER_POLL_MS: "300",
    });
    servers.push(server);
    const [, url] = await server.waitFor(SERVING, 120_000);
    const [, port] = await server.waitFor(/Apps: +http:\/\/\S+:(\d+)/);
    const [, key] = await server.waitFor(/^\s+(sw_[A-Za-z0-9_-]{43})$/m);
    const h = { "x-api-key": key as string, "content-type": "application/json" };
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: h,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return (await res.json()) as Record<string, string | null>;
    };
    const created = await call("POST", "/v2/deployments", {
      name: "hello",
      source: "internal_template",
      source_revision_config: { repo_ref: "hello-http", framework_config_path: "slipway.json" },
    });
    const settled = async (revision: string | null) => {
      for (let i = 0; i < 240; i++) {
        const r = await call("GET", `/v2/deployments/${created.id}/revisions/${revision}`);
        if (TERMINAL.includes(r.status ?? "")) return r;
        await new Promise((res) => setTimeout(res, 500));
      }
      throw new Error(`revision ${revision} never settled:\n${server.output().slice(-2000)}`);
    };
    assert.equal((await settled(created.latest_revision_id ?? null)).status, "DEPLOYED");
    assert.equal(await hostStatus(Number(port), "hello.localhost"), 200);

    const filler = join(dir, "filler");
    const fs = statfsSync(dir);
    writeFileSync(filler, Buffer.alloc(fs.bavail * fs.bsize));
    const patched = await call("PATCH", `/v2/deployments/${created.id}`, {
      secrets: [{ name: "ROUND", value: "second-round" }],
    });
    const failed = await settled(patched.latest_revision_id ?? null);
    // Out of space while the source is copied in (CREATE_FAILED) or while it builds (BUILD_FAILED),
    // after the reconciler's retries of a fault: failed either way, with the reason.
    assert.ok(["CREATE_FAILED", "BUILD_FAILED"].includes(failed.status ?? ""), JSON.stringify(failed));
    assert.match(failed.status_message ?? "", /ENOSPC|no space/i);
    assert.equal(
      await hostStatus(Number(port), "hello.localhost"),
      200,
      "the deployed revision keeps serving",
    );

    rmSync(filler);
    const again = await call("PATCH", `/v2/deployments/${created.id}`, {
      secrets: [{ name: "ROUND", value: "third-round" }],
    });
    assert.equal((await settled(again.latest_revision_id ?? null)).status, "DEPLOYED");
    assert.equal(await hostStatus(Number(port), "hello.localhost"), 200);
    assert.equal(await server.stop(), 0);
  });
});
