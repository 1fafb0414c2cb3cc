import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import * as tar from "tar";
import { createSlipway, type Slipway, unwrap } from "../../src/sdk/client.ts";
import { deploy } from "../../src/sdk/deploy.ts";
import { formatBytes, packDirectory, UploadTooLargeError, uploadRules } from "../../src/sdk/upload.ts";
import { freePort } from "../e2e/stack.ts";
import { APP_FILES, runCli } from "../helpers/cli.ts";
import { forEachDatabase } from "../helpers/harness.ts";

function tree(files: Record<string, string | Buffer>): string {
  const dir = mkdtempSync(join(tmpdir(), "slipway-upload-"));
  for (const [path, body] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), body);
  }
  return dir;
}

/** The file paths in a .tar.gz, without the leading `./`. */
async function entries(tarball: Buffer): Promise<string[]> {
  const paths: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const parser = tar.t({
      onReadEntry: (e) => e.type === "File" && paths.push(e.path.replace(/^\.\//, "")),
    });
    parser.on("end", resolve).on("error", reject);
    Readable.from(tarball).pipe(parser);
  });
  return paths.sort();
}

const BASE = {
  "slipway.json": "{}",
  "server.js": "",
  "src/app.js": "",
  "dist/bundle.js": "",
  "logs/a.log": "",
  "logs/keep.log": "",
  "debug.log": "",
  ".env": "SECRET=1",
  "node_modules/x/index.js": "",
  ".git/HEAD": "ref: refs/heads/main",
  "docs/.env": "",
};

describe("what an upload of a directory holds: .slipwayignore, else .gitignore, on top of the fixed exclusions", () => {
  const dirs: string[] = [];
  const make = (files: Record<string, string>) => {
    const d = tree({ ...BASE, ...files });
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("without an ignore file: everything but .git, node_modules, .slipway and .env", async () => {
    const dir = make({});
    assert.equal(uploadRules(dir).file, null);
    assert.deepEqual(await entries(await packDirectory(dir)), [
      "debug.log",
      "dist/bundle.js",
      "logs/a.log",
      "logs/keep.log",
      "server.js",
      "slipway.json",
      "src/app.js",
    ]);
  });

  it(".gitignore decides when there is no .slipwayignore (directories, globs, negations)", async () => {
    const dir = make({ ".gitignore": "dist/\n*.log\n!logs/keep.log\n" });
    assert.equal(uploadRules(dir).file, ".gitignore");
    assert.deepEqual(await entries(await packDirectory(dir)), [
      ".gitignore",
      "logs/keep.log",
      "server.js",
      "slipway.json",
      "src/app.js",
    ]);
  });

  it(".slipwayignore wins over .gitignore; it cannot bring back .git, node_modules or .env", async () => {
    const dir = make({
      ".gitignore": "src/\n",
      ".slipwayignore": "# comments and blank lines are fine\n\n/debug.log\nlogs\n!node_modules\n!.env\n",
    });
    const rules = uploadRules(dir);
    assert.equal(rules.file, ".slipwayignore");
    assert.equal(rules.ignores("src/app.js"), false, ".gitignore is not read");
    assert.equal(rules.ignores("logs", true), true);
    assert.deepEqual(await entries(await packDirectory(dir)), [
      ".gitignore",
      ".slipwayignore",
      "dist/bundle.js",
      "server.js",
      "slipway.json",
      "src/app.js",
    ]);
  });

  it("formats sizes with their exact byte count", () => {
    assert.equal(formatBytes(512), "512 bytes");
    assert.equal(formatBytes(1536), "1.5 KB (1,536 bytes)");
    assert.equal(formatBytes(104_857_600), "100.0 MB (104,857,600 bytes)");
  });
});

const apiPort = await freePort();
const LIMIT = 4096;

forEachDatabase(
  "an upload over the server's limit",
  (suite) => {
    let client: Slipway;
    let env: Record<string, string>;
    const home = mkdtempSync(join(tmpdir(), "slipway-upload-home-"));
    // Random bytes do not compress: the archive is over the limit.
    const big = tree({ ...APP_FILES("1"), "blob.bin": randomBytes(3 * LIMIT) });
    before(async () => {
      await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
      client = createSlipway({ baseUrl: `http://127.0.0.1:${apiPort}`, apiKey: suite.ctx.keys.admin });
      env = {
        HOME: home,
        XDG_CONFIG_HOME: join(home, "config"),
        SLIPWAY_URL: `http://127.0.0.1:${apiPort}`,
        SLIPWAY_API_KEY: suite.ctx.keys.admin,
      };
    });
    after(() => {
      rmSync(home, { recursive: true, force: true });
      rmSync(big, { recursive: true, force: true });
    });

    it("the SDK throws UploadTooLargeError with the archive's size and the server's limit", async () => {
      const size = (await packDirectory(big)).byteLength;
      await assert.rejects(deploy(client, { directory: big, name: "too-big-sdk" }), (err: unknown) => {
        assert.ok(err instanceof UploadTooLargeError, String(err));
        assert.equal(err.status, 413);
        assert.equal(err.sizeBytes, size);
        assert.equal(err.limitBytes, LIMIT);
        assert.match(err.message, /is \d+\.\d KB \([\d,]+ bytes\), over 4\.0 KB \(4,096 bytes\)/);
        return true;
      });
      const page = await unwrap(
        client.api.GET("/v2/deployments", { params: { query: { name: "too-big-sdk" } } }),
      );
      assert.equal(page.resources[0]?.latest_revision_id, null, "no revision was made");
    });

    it("slipway deploy exits 2 (not 1, kept for failed deployments) naming both sizes", async () => {
      const res = await runCli(["deploy", big, "--name", "too-big-cli"], env);
      assert.equal(res.code, 2, res.stdout + res.stderr);
      assert.match(
        res.stderr,
        /Error: The archive of \S+ is [\d.]+ KB \([\d,]+ bytes\), over 4\.0 KB \(4,096 bytes\)/,
      );
      assert.match(res.stderr, /\.slipwayignore/);
      // Leaving the blob out with .slipwayignore makes the same directory fit.
      writeFileSync(join(big, ".slipwayignore"), "blob.bin\n");
      const fits = await runCli(["deploy", big, "--name", "too-big-cli", "--no-wait"], env);
      assert.equal(fits.code, 0, fits.stderr);
      assert.match(fits.stdout, /Uploaded /);
    });
  },
  { env: { SLIPWAY_UPLOAD_LIMIT_BYTES: String(LIMIT), SLIPWAY_PUBLIC_URL: `http://127.0.0.1:${apiPort}` } },
);
