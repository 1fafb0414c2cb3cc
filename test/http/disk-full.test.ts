import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { runSlipway, type SlipwayProcess } from "../helpers/process.ts";

const SERVING = /Slipway is serving (http:\/\/\S+) on/;

/** A tmpfs of `size` at a new directory, or undefined where this process may not mount (not root). */
function smallFilesystem(size: string): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), "slipway-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]);
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

const free = (dir: string) => {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
};

/**
 * The embedded database's data dir on a small filesystem that fills up: writes answer 503 with a
 * sentence and Retry-After (not 500), reads go on, nothing acknowledged is lost or corrupted, and
 * writes succeed again once space returns, also after a restart.
 */
describe("disk full", () => {
  const mount = smallFilesystem("160m");
  const servers: SlipwayProcess[] = [];
  after(async () => {
    for (const s of servers) {
      s.proc.kill("SIGKILL");
      await s.exited;
    }
    if (mount) {
      execFileSync("umount", ["-l", mount]);
      rmSync(mount, { recursive: true, force: true });
    }
  });

  it("503 with Retry-After while full, service again when space returns", {
    skip: mount === undefined && "needs root to mount a tmpfs",
  }, async () => {
    const root = mount as string;
    const dataDir = join(root, "data");
    const env = {
      SLIPWAY_DATA_DIR: dataDir,
      PORT: "0",
      SLIPWAY_RECONCILER: "false",
      SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
    };
    let server = runSlipway(["serve"], env);
    servers.push(server);
    const [, url] = await server.waitFor(SERVING, 120_000);
    const [, key] = await server.waitFor(/^\s+(sw_[A-Za-z0-9_-]{43})$/m);
    const h = { "x-api-key": key as string, "content-type": "application/json" };
    const create = (base: string, name: string) =>
      fetch(`${base}/v2/deployments`, {
        method: "POST",
        headers: h,
        body: JSON.stringify({
          name,
          source: "external_docker",
          source_revision_config: { image_uri: "registry.example/app:1" },
          secrets: Array.from({ length: 10 }, (_, j) => ({ name: `S${j}`, value: "x".repeat(4000) })),
        }),
      });
    const acked: string[] = [];
    const first = await create(url as string, "before");
    assert.equal(first.status, 201);
    acked.push("before");

    // Fill the filesystem but for a little room, then write until the database runs out of it.
    const filler = join(root, "filler");
    writeFileSync(filler, Buffer.alloc(Math.max(0, free(root) - 3 * 1024 * 1024)));
    let full: Response | undefined;
    for (let i = 0; i < 400 && !full; i++) {
      const res = await create(url as string, `fill-${i}`);
      if (res.status === 201) acked.push(`fill-${i}`);
      else full = res;
    }
    assert.ok(full, "the disk filled up");
    const body = (await full.json()) as { detail: string };
    assert.equal(full.status, 503, JSON.stringify(body));
    assert.match(body.detail, /disk is full/);
    assert.equal(full.headers.get("retry-after"), "60");
    const again = await create(url as string, "while-full");
    assert.equal(again.status, 503, "still full: refused again, no 500");
    const read = await fetch(`${url}/v2/deployments?limit=1`, { headers: h });
    assert.equal(read.status, 200, "reads go on");

    // Space returns: writes succeed again, on this process and after a restart.
    rmSync(filler);
    let resumed = 0;
    for (let i = 0; i < 20 && resumed !== 201; i++) {
      resumed = (await create(url as string, `after-${i}`)).status;
      if (resumed === 201) acked.push(`after-${i}`);
      else await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(resumed, 201, "writes resume once space returns");
    assert.equal(await server.stop(), 0);
    server = runSlipway(["serve"], env);
    servers.push(server);
    const [, url2] = await server.waitFor(SERVING, 120_000);
    const names = new Set<string>();
    for (let offset = 0; ; offset += 100) {
      const page = await fetch(`${url2}/v2/deployments?limit=100&offset=${offset}`, { headers: h });
      assert.equal(page.status, 200);
      const { resources } = (await page.json()) as { resources: { name: string }[] };
      for (const r of resources) names.add(r.name);
      if (resources.length < 100) break;
    }
    for (const n of acked) assert.ok(names.has(n), `${n} was acknowledged and is there after the restart`);
    assert.ok(!names.has("while-full"), "a refused write left nothing");
    assert.equal((await create(url2 as string, "restarted")).status, 201);
    assert.equal(await server.stop(), 0);
  });
});
