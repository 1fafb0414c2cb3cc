import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, describe, it } from "node:test";
import { gunzipSync, gzipSync } from "node:zlib";
import { c as createTar } from "tar";
import { diskUsage } from "../../../src/runtimes/build/disk-limit.ts";
import type { LocalLimits } from "../../../src/runtimes/build/limits.ts";
import { BuildError, SourceError } from "../../../src/runtimes/interface.ts";
import { gzipBomb } from "../../helpers/bomb.ts";
import { cleanupTemp, git, newRuntime, phase, spec, tempDir, writeApp } from "../../helpers/local-runtime.ts";

const MiB = 1024 * 1024;

async function tarOf(dir: string, names: string[]): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of createTar({ gzip: true, cwd: dir, portable: true }, names)) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Prepares `archive` on a fresh runtime with `limits`; returns what happened and where. */
async function prepareTarball(archive: Buffer, limits: Partial<LocalLimits>) {
  const dataDir = tempDir();
  const rt = newRuntime(dataDir, { limits });
  const s = spec({ kind: "tarball", open: async () => Readable.from([archive]) });
  const ctx = phase();
  const outcome = await rt.prepare(s, ctx).then(
    () => undefined,
    (err: unknown) => err,
  );
  return { dataDir, s, ctx, outcome, appsBytes: await diskUsage(join(dataDir, "apps", s.deploymentId)) };
}

/** Whether the revision's directory is gone and no file is left under the deployment's. */
function nothingLeft(dataDir: string, s: { deploymentId: string; revisionId: string }): boolean {
  const dep = join(dataDir, "apps", s.deploymentId);
  // The deployment's own HOME (npm cache) and uid claim outlive a failed revision: they are not its files.
  const perDeployment = new Set(["home", "uid"]);
  return (
    !existsSync(join(dep, s.revisionId)) &&
    (!existsSync(dep) || readdirSync(dep).every((name) => perDeployment.has(name)))
  );
}

describe("local runtime: source and build disk limits", () => {
  after(cleanupTemp);

  it("a 2 MB archive of 2 GiB of zeros is refused at the default 1 GiB limit, nothing left on disk", async () => {
    const bomb = gzipBomb(2 * 1024 ** 3);
    assert.ok(bomb.length < 3 * MiB);
    const started = Date.now();
    const r = await prepareTarball(bomb, {});
    assert.ok(r.outcome instanceof SourceError, String(r.outcome));
    assert.equal(
      r.outcome.message,
      "the source archive is larger than 1 GiB unpacked (SLIPWAY_SOURCE_LIMIT_BYTES)",
    );
    assert.match(r.ctx.text("build"), /^error: the source archive is larger than 1 GiB unpacked/m);
    assert.ok(nothingLeft(r.dataDir, r.s));
    assert.ok(Date.now() - started < 20_000, "stopped at the header, not after unpacking");
  });

  it("files under the byte limit each, but over it together, stop at the limit", async () => {
    const src = tempDir();
    const names: string[] = [];
    for (let i = 0; i < 8; i++) {
      writeFileSync(join(src, `part${i}.bin`), randomBytes(MiB / 2));
      names.push(`part${i}.bin`);
    }
    const r = await prepareTarball(await tarOf(src, names), { sourceBytes: 2 * MiB });
    assert.ok(r.outcome instanceof SourceError);
    assert.match(r.outcome.message, /larger than 2 MiB unpacked \(SLIPWAY_SOURCE_LIMIT_BYTES\)/);
    assert.ok(nothingLeft(r.dataDir, r.s));
  });

  it("the unpacked stream is counted, so an entry tar skips (a device) cannot burn through the limit", async () => {
    const r = await prepareTarball(gzipBomb(64 * MiB, { type: "CharacterDevice" }), { sourceBytes: 4 * MiB });
    assert.ok(r.outcome instanceof SourceError, String(r.outcome));
    assert.match(r.outcome.message, /larger than 4 MiB unpacked/);
    assert.ok(nothingLeft(r.dataDir, r.s));
  });

  it("a plain (not gzip) tar is counted the same way", async () => {
    const src = tempDir();
    writeFileSync(join(src, "big.bin"), randomBytes(3 * MiB));
    const r = await prepareTarball(gunzipSync(await tarOf(src, ["big.bin"])), { sourceBytes: 2 * MiB });
    assert.ok(r.outcome instanceof SourceError);
    assert.match(r.outcome.message, /larger than 2 MiB unpacked/);
    assert.ok(nothingLeft(r.dataDir, r.s));
  });

  it("more entries than SLIPWAY_SOURCE_MAX_FILES → SourceError, nothing left; exactly the limit unpacks", async () => {
    const src = tempDir();
    writeApp(src);
    const names = ["server.js", "app.json"];
    for (let i = 0; i < 8; i++) {
      writeFileSync(join(src, `f${i}.txt`), `${i}`);
      names.push(`f${i}.txt`);
    }
    const archive = await tarOf(src, names);
    const over = await prepareTarball(archive, { sourceMaxFiles: 9 });
    assert.ok(over.outcome instanceof SourceError);
    assert.equal(
      over.outcome.message,
      "the source archive holds more than 9 files (SLIPWAY_SOURCE_MAX_FILES)",
    );
    assert.ok(nothingLeft(over.dataDir, over.s));

    const exact = await prepareTarball(archive, { sourceMaxFiles: 10, sourceBytes: 64 * 1024 });
    assert.equal(exact.outcome, undefined, String(exact.outcome));
    assert.ok(
      existsSync(join(exact.dataDir, "apps", exact.s.deploymentId, exact.s.revisionId, "app", "f7.txt")),
    );
  });

  it("a broken gzip stream is still a clear SourceError", async () => {
    const good = gzipSync(Buffer.alloc(4096));
    const r = await prepareTarball(good.subarray(0, good.length - 10), {});
    assert.ok(r.outcome instanceof SourceError);
    assert.match(r.outcome.message, /could not be unpacked/);
  });

  describe("git", () => {
    /** A repository whose main branch holds the app and `extra` (name → content). */
    function repoWith(extra: Record<string, Buffer | string>, history: Record<string, Buffer> = {}): string {
      const dir = tempDir("slipway-repo-");
      git(dir, "init", "-q", "-b", "main");
      if (Object.keys(history).length > 0) {
        for (const [name, content] of Object.entries(history)) writeFileSync(join(dir, name), content);
        git(dir, "add", ".");
        git(dir, "commit", "-q", "-m", "history");
        git(dir, "rm", "-q", ...Object.keys(history));
      }
      writeApp(dir);
      for (const [name, content] of Object.entries(extra)) writeFileSync(join(dir, name), content);
      git(dir, "add", ".");
      git(dir, "commit", "-q", "-m", "app");
      return dir;
    }

    async function prepareGit(url: string, limits: Partial<LocalLimits>) {
      const dataDir = tempDir();
      const rt = newRuntime(dataDir, { limits });
      const s = spec({ kind: "git", url, ref: "main" });
      const ctx = phase();
      const outcome = await rt.prepare(s, ctx).then(
        () => undefined,
        (err: unknown) => err,
      );
      return { dataDir, s, ctx, outcome };
    }

    it("a tree over the byte limit is refused before checkout; under it clones", async () => {
      const url = repoWith({ "big.bin": randomBytes(3 * MiB) });
      const r = await prepareGit(url, { sourceBytes: 2 * MiB });
      assert.ok(r.outcome instanceof SourceError, String(r.outcome));
      assert.equal(
        r.outcome.message,
        "the repository is larger than 2 MiB checked out (SLIPWAY_SOURCE_LIMIT_BYTES)",
      );
      assert.match(r.ctx.text("build"), /^error: the repository is larger than 2 MiB checked out/m);
      assert.ok(nothingLeft(r.dataDir, r.s));
      const ok = await prepareGit(url, { sourceBytes: 16 * MiB });
      assert.equal(ok.outcome, undefined, String(ok.outcome));
    });

    it("a clone whose history alone passes the limit stops there (small checkout, big .git)", async () => {
      const url = repoWith({}, { "old.bin": randomBytes(4 * MiB) });
      const r = await prepareGit(url, { sourceBytes: 2 * MiB });
      assert.ok(r.outcome instanceof SourceError, String(r.outcome));
      assert.match(r.outcome.message, /the repository is larger than 2 MiB checked out/);
      assert.ok(nothingLeft(r.dataDir, r.s));
    });

    it("more files than SLIPWAY_SOURCE_MAX_FILES → SourceError, nothing checked out", async () => {
      const files: Record<string, string> = {};
      for (let i = 0; i < 12; i++) files[`f${i}.txt`] = `${i}`;
      const r = await prepareGit(repoWith(files), { sourceMaxFiles: 10 });
      assert.ok(r.outcome instanceof SourceError, String(r.outcome));
      assert.equal(r.outcome.message, "the repository holds more than 10 files (SLIPWAY_SOURCE_MAX_FILES)");
      assert.ok(nothingLeft(r.dataDir, r.s));
    });
  });

  describe("build disk", () => {
    async function build(installCommand: string, limitMb: number) {
      const dataDir = tempDir();
      const rt = newRuntime(dataDir, { limits: { buildDiskBytes: limitMb * MiB } });
      const s = spec({ kind: "directory", path: writeApp(tempDir()) }, { installCommand });
      const ctx = phase();
      await rt.prepare(s, ctx);
      const started = Date.now();
      const outcome = await rt.build(s, ctx).then(
        () => undefined,
        (err: unknown) => err,
      );
      return { dataDir, s, ctx, outcome, ms: Date.now() - started, rt };
    }

    it("a build that keeps writing past SLIPWAY_BUILD_DISK_LIMIT_MB is stopped → BuildError, directory removed", async () => {
      const r = await build("head -c 8000000 /dev/urandom > big.bin; echo wrote; sleep 30", 5);
      assert.ok(r.outcome instanceof BuildError, String(r.outcome));
      assert.equal(r.outcome.message, "the build directory grew past 5 MB (SLIPWAY_BUILD_DISK_LIMIT_MB)");
      assert.ok(r.ms < 20_000, `stopped while running, not after the sleep (${r.ms} ms)`);
      assert.match(r.ctx.text("build"), /^error: the build directory grew past 5 MB/m);
      assert.ok(nothingLeft(r.dataDir, r.s));
      assert.equal(await r.rt.isBuilt(r.s), false);
    });

    it("a burst that ends before the next look still fails the build", async () => {
      const r = await build("head -c 8000000 /dev/zero > big.bin", 5);
      assert.ok(r.outcome instanceof BuildError, String(r.outcome));
      assert.match(r.outcome.message, /grew past 5 MB/);
      assert.ok(nothingLeft(r.dataDir, r.s));
    });

    it("a build under the limit succeeds", async () => {
      const r = await build("head -c 1000000 /dev/zero > some.bin", 5);
      assert.equal(r.outcome, undefined, String(r.outcome));
      assert.equal(await r.rt.isBuilt(r.s), true);
    });
  });

  it("diskUsage counts hard links once and stops early past stopAbove", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "sub"));
    writeFileSync(join(dir, "sub", "a.bin"), Buffer.alloc(MiB));
    linkSync(join(dir, "sub", "a.bin"), join(dir, "b.bin"));
    writeFileSync(join(dir, "c.bin"), Buffer.alloc(MiB));
    const all = await diskUsage(dir);
    assert.ok(all >= 2 * MiB && all < 2 * MiB + 64 * 1024, String(all));
    assert.ok((await diskUsage(dir, 10)) <= 2 * MiB);
    assert.equal(await diskUsage(join(dir, "missing")), 0);
  });
});
