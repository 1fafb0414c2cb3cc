import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, describe, it } from "node:test";
import { c as createTar, Header } from "tar";
import { SourceError } from "../../../src/runtimes/interface.ts";
import { cleanupTemp, git, newRuntime, phase, spec, tempDir, writeApp } from "../../helpers/local-runtime.ts";

/** A repo with commits on main (v1, v2), a branch "next" (v3) and a tag v1.0 on the first commit. */
function makeRepo(): { dir: string; first: string; second: string; third: string } {
  const dir = tempDir("slipway-repo-");
  git(dir, "init", "-q", "-b", "main");
  writeApp(dir, { version: "v1" });
  git(dir, "add", ".");
  git(dir, "commit", "-q", "-m", "v1");
  const first = git(dir, "rev-parse", "HEAD");
  git(dir, "tag", "v1.0");
  writeApp(dir, { version: "v2" });
  git(dir, "commit", "-q", "-am", "v2");
  const second = git(dir, "rev-parse", "HEAD");
  git(dir, "checkout", "-q", "-b", "next");
  writeApp(dir, { version: "v3" });
  git(dir, "commit", "-q", "-am", "v3");
  const third = git(dir, "rev-parse", "HEAD");
  git(dir, "checkout", "-q", "main");
  return { dir, first, second, third };
}

function versionIn(dataDir: string, s: { deploymentId: string; revisionId: string }): string {
  const server = readFileSync(
    join(dataDir, "apps", s.deploymentId, s.revisionId, "app", "server.js"),
    "utf8",
  );
  return /const VERSION = "(\w+)"/.exec(server)?.[1] ?? "";
}

/** A gzipped tar holding exactly the given entries, headers written by hand (no path cleaning). */
function rawTarball(
  entries: { path: string; type?: "File" | "SymbolicLink"; linkpath?: string; body?: string }[],
): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? "");
    const header = Buffer.alloc(512);
    new Header({
      path: e.path,
      mode: 0o644,
      size: e.type === "SymbolicLink" ? 0 : body.length,
      mtime: new Date(0),
      type: e.type ?? "File",
      linkpath: e.linkpath,
    }).encode(header, 0);
    blocks.push(header);
    if (e.type !== "SymbolicLink") {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

describe("local runtime: sources", () => {
  after(cleanupTemp);
  const repo = makeRepo();

  it("clones a branch and records its commit", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const s = spec({ kind: "git", url: repo.dir, ref: "next" });
    const ctx = phase();
    const prepared = await rt.prepare(s, ctx);
    assert.equal(prepared.commitSha, repo.third);
    assert.equal(versionIn(dataDir, s), "v3");
    assert.match(ctx.text("build"), new RegExp(`Checked out next at ${repo.third}`));
  });

  it("clones a tag given as refs/tags/…, and a bare tag name", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const s = spec({ kind: "git", url: repo.dir, ref: "refs/tags/v1.0" });
    assert.equal((await rt.prepare(s, phase())).commitSha, repo.first);
    assert.equal(versionIn(dataDir, s), "v1");
    const bare = spec({ kind: "git", url: `file://${repo.dir}`, ref: "v1.0" });
    assert.equal((await rt.prepare(bare, phase())).commitSha, repo.first);
  });

  it("checks out a pinned commit instead of the ref's newest one", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const s = spec({ kind: "git", url: repo.dir, ref: "main", commitSha: repo.first });
    assert.equal((await rt.prepare(s, phase())).commitSha, repo.first);
    assert.equal(versionIn(dataDir, s), "v1");
    const head = spec({ kind: "git", url: repo.dir, ref: "refs/heads/main" });
    assert.equal((await rt.prepare(head, phase())).commitSha, repo.second);
  });

  it("a missing ref or commit is a SourceError and leaves no directory", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    for (const source of [
      { kind: "git" as const, url: repo.dir, ref: "no-such-branch" },
      { kind: "git" as const, url: repo.dir, ref: "refs/tags/v9" },
      {
        kind: "git" as const,
        url: repo.dir,
        ref: "main",
        commitSha: "0123456789abcdef0123456789abcdef01234567",
      },
      { kind: "git" as const, url: join(repo.dir, "missing"), ref: "main" },
    ]) {
      const s = spec(source);
      const ctx = phase();
      await assert.rejects(rt.prepare(s, ctx), SourceError);
      assert.match(ctx.text("build"), /^error: (ref|commit|could not clone)/m);
      assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, s.revisionId)), false);
    }
  });

  it("hides credentials of a clone URL in the log", async () => {
    const rt = newRuntime(tempDir());
    const ctx = phase();
    const s = spec({
      kind: "git",
      url: "http://x-access-token:s3cr3tT0ken@127.0.0.1:1/repo.git",
      ref: "main",
    });
    await assert.rejects(rt.prepare(s, ctx), SourceError);
    assert.doesNotMatch(ctx.text("build"), /s3cr3tT0ken/);
    assert.match(ctx.text("build"), /Cloning http:\/\/\*\*\*@127\.0\.0\.1:1\/repo\.git/);
  });

  it("unpacks a tarball, unwrapping a single top directory", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const src = tempDir();
    writeApp(join(src, "myapp"), { version: "tgz" });
    const chunks: Buffer[] = [];
    for await (const chunk of createTar({ gzip: true, cwd: src }, ["myapp"])) chunks.push(chunk as Buffer);
    const archive = Buffer.concat(chunks);
    const s = spec({ kind: "tarball", open: async () => Readable.from([archive]) });
    await rt.prepare(s, phase());
    assert.equal(versionIn(dataDir, s), "tgz");
  });

  it("refuses a tarball with a '..' entry, an absolute path or an escaping link", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const cases = [
      [
        { path: "app.json", body: "{}" },
        { path: "../escaped.txt", body: "x" },
      ],
      [{ path: "sub/../../escaped.txt", body: "x" }],
      [{ path: "/tmp/absolute-escape.txt", body: "x" }],
      [{ path: "link", type: "SymbolicLink" as const, linkpath: "../../outside" }],
      [{ path: "abs-link", type: "SymbolicLink" as const, linkpath: "/etc/passwd" }],
    ];
    for (const entries of cases) {
      const archive = rawTarball(entries);
      const s = spec({ kind: "tarball", open: async () => Readable.from([archive]) });
      const ctx = phase();
      await assert.rejects(rt.prepare(s, ctx), (err: unknown) => {
        assert.ok(err instanceof SourceError);
        assert.match(err.message, /refused: .*outside the archive/);
        return true;
      });
      assert.match(ctx.text("build"), /^error: the uploaded archive was refused/m);
      assert.equal(existsSync(join(dataDir, "apps", s.deploymentId)), true);
      assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, s.revisionId)), false);
      assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, "escaped.txt")), false);
      assert.equal(existsSync(join(dataDir, "apps", "escaped.txt")), false);
    }
    assert.equal(existsSync("/tmp/absolute-escape.txt"), false);
  });

  it("an archive that is not a tarball, or cannot be opened, is a SourceError", async () => {
    const rt = newRuntime(tempDir());
    const garbage = spec({
      kind: "tarball",
      open: async () => Readable.from([Buffer.from("not a tar at all")]),
    });
    await assert.rejects(rt.prepare(garbage, phase()), SourceError);
    const missing = spec({
      kind: "tarball",
      open: async () => {
        throw new Error("no such upload");
      },
    });
    await assert.rejects(rt.prepare(missing, phase()), /could not be opened: no such upload/);
  });

  it("copies a directory (links kept as links) and refuses a missing one", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const src = writeApp(tempDir(), { version: "dir" });
    mkdirSync(join(src, "lib"));
    writeFileSync(join(src, "lib", "a.txt"), "a");
    symlinkSync("lib/a.txt", join(src, "alias.txt"));
    const s = spec({ kind: "directory", path: src });
    await rt.prepare(s, phase());
    assert.equal(versionIn(dataDir, s), "dir");
    const app = join(dataDir, "apps", s.deploymentId, s.revisionId, "app");
    assert.equal(readFileSync(join(app, "alias.txt"), "utf8"), "a");
    await assert.rejects(
      rt.prepare(spec({ kind: "directory", path: join(src, "nope") }), phase()),
      SourceError,
    );
  });

  it("prepare wipes what a previous attempt of the same revision left", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir);
    const s = spec({ kind: "directory", path: writeApp(tempDir()) });
    await rt.prepare(s, phase());
    const stray = join(dataDir, "apps", s.deploymentId, s.revisionId, "app", "stray.txt");
    writeFileSync(stray, "left over");
    await rt.prepare(s, phase());
    assert.equal(existsSync(stray), false);
  });
});
