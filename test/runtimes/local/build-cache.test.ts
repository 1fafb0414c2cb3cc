// Real npm builds in the sandbox that reuse (or not) the deployment's node_modules from its last build.
import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { after, describe, it } from "node:test";
import { DEFAULT_NPM_REGISTRY } from "../../../src/runtimes/build/plan/node.ts";
import type { LocalRuntime } from "../../../src/runtimes/local/runtime.ts";
import { bwrapSkip, root } from "../../helpers/bwrap.ts";
import { cleanupTemp, hit, newRuntime, phase, spec, tempDir, writeApp } from "../../helpers/local-runtime.ts";
import { makeWheel } from "../../helpers/python-index.ts";

const RANGE = { first: 328_600, last: 328_699 };
const skip = await bwrapSkip(RANGE);
const INDEXES = { npm: `${DEFAULT_NPM_REGISTRY}/`, pipExtra: [] };

const SERVER_JS = (version: string) => `
const http = require("node:http");
const ms = require("ms");
http.createServer((req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ version: "${version}", twoHours: ms("2h") }));
}).listen(Number(process.env.PORT), "127.0.0.1");
`;

function packageJson(description = "cached"): string {
  return JSON.stringify({
    name: "cache-app",
    version: "1.0.0",
    description,
    private: true,
    dependencies: { ms: "2.1.3" },
    scripts: { start: "node server.js" },
  });
}

/** What npm 10 writes for this package.json (lockfileVersion 3). */
const PACKAGE_LOCK = JSON.stringify({
  name: "cache-app",
  version: "1.0.0",
  lockfileVersion: 3,
  requires: true,
  packages: {
    "": { name: "cache-app", version: "1.0.0", dependencies: { ms: "2.1.3" } },
    "node_modules/ms": {
      version: "2.1.3",
      resolved: "https://registry.npmjs.org/ms/-/ms-2.1.3.tgz",
      integrity:
        "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==",
      license: "MIT",
    },
  },
});

function source(version: string, description?: string): string {
  return writeApp(tempDir(), {
    config: undefined,
    extra: {
      "server.js": SERVER_JS(version),
      "package.json": packageJson(description),
      "package-lock.json": PACKAGE_LOCK,
    },
  });
}

const INSTALL = "$ npm ci";

describe("local runtime: builds reuse the deployment's installed dependencies", { skip }, () => {
  const runtimes: LocalRuntime[] = [];
  after(async () => {
    for (const rt of runtimes) await rt.close();
    cleanupTemp();
  });

  function runtime(dataDir: string, buildCacheBytes?: number): LocalRuntime {
    const rt = newRuntime(dataDir, {
      sandbox: "bwrap",
      uidRange: RANGE,
      packageIndexes: INDEXES,
      ...(buildCacheBytes === undefined ? {} : { limits: { buildCacheBytes } }),
    });
    runtimes.push(rt);
    return rt;
  }

  async function build(rt: LocalRuntime, deploymentId: string | undefined, src: string, rev: string) {
    const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: undefined });
    const revision = { ...s, ...(deploymentId === undefined ? {} : { deploymentId }), revisionId: rev };
    const ctx = phase();
    await rt.prepare(revision, ctx);
    await rt.build(revision, ctx);
    return { spec: revision, log: ctx.text("build") };
  }

  it("a warm rebuild reuses node_modules, owned by the deployment, and the app starts; a changed package.json installs", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir);
    const cold = await build(rt, undefined, source("v1"), "rev-a");
    const id = cold.spec.deploymentId;
    assert.ok(cold.log.includes(INSTALL), cold.log);
    assert.match(
      cold.log,
      /slipway: kept node_modules for later builds with the same package\.json and package-lock\.json \(key [0-9a-f]{12}\)/,
    );
    assert.ok(
      existsSync(join(dataDir, "apps", id, "cache", "entry", "dirs", "node_modules", "ms", "package.json")),
    );

    const warm = await build(rt, id, source("v2"), "rev-b");
    assert.match(
      warm.log,
      /slipway: reused node_modules from a build with the same package\.json and package-lock\.json \(key [0-9a-f]{12}\)/,
    );
    assert.ok(!warm.log.includes("$ npm"), `no install command runs:\n${warm.log}`);
    const appDir = join(dataDir, "apps", id, "rev-b", "app");
    const uid = root ? RANGE.first : process.getuid?.();
    // The deployment's uid (one of the suite's range as root) owns the reused tree, as it owns a fresh install.
    for (const p of ["node_modules", "node_modules/ms", "node_modules/ms/index.js"]) {
      const owner = statSync(join(appDir, p)).uid;
      if (root) assert.ok(owner >= RANGE.first && owner <= RANGE.last, `${p} owned by ${owner}`);
      else assert.equal(owner, uid);
    }
    assert.equal(statSync(join(appDir, "node_modules")).uid, statSync(join(appDir, "server.js")).uid);
    await rt.activate(warm.spec, phase());
    const body = (await hit(rt, warm.spec.deploymentName)).json();
    assert.equal(body.version, "v2");
    assert.equal(body.twoHours, 7_200_000);

    const changed = await build(rt, id, source("v3", "changed"), "rev-c");
    assert.match(
      changed.log,
      /slipway: not reusing node_modules: package\.json and package-lock\.json changed/,
    );
    assert.ok(changed.log.includes(INSTALL), changed.log);
    assert.doesNotMatch(changed.log, /reused node_modules/);

    await rt.teardown(id);
    assert.equal(existsSync(join(dataDir, "apps", id, "cache")), false, "teardown drops the cache");
  });

  it("two deployments never share an entry", async () => {
    const rt = runtime(tempDir());
    const src = source("v1");
    const first = await build(rt, undefined, src, "rev-a");
    assert.match(first.log, /kept node_modules/);
    const second = await build(rt, undefined, src, "rev-a");
    assert.notEqual(second.spec.deploymentId, first.spec.deploymentId);
    assert.doesNotMatch(second.log, /reused/);
    assert.ok(second.log.includes(INSTALL), second.log);
    await rt.teardown(first.spec.deploymentId);
    await rt.teardown(second.spec.deploymentId);
  });

  it("an entry over SLIPWAY_BUILD_CACHE_MB is not kept, and the next build installs", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir, 0);
    const cold = await build(rt, undefined, source("v1"), "rev-a");
    const id = cold.spec.deploymentId;
    assert.match(
      cold.log,
      /slipway: not keeping node_modules for later builds: \d+\.\d MB is over SLIPWAY_BUILD_CACHE_MB \(0\)/,
    );
    assert.equal(existsSync(join(dataDir, "apps", id, "cache", "entry")), false);
    const again = await build(rt, id, source("v2"), "rev-b");
    assert.ok(again.log.includes(INSTALL), again.log);
    await rt.teardown(id);
  });

  it("a corrupt entry is not trusted: the build installs", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir);
    const cold = await build(rt, undefined, source("v1"), "rev-a");
    const id = cold.spec.deploymentId;
    writeFileSync(join(dataDir, "apps", id, "cache", "entry", "meta.json"), "{not json");
    const again = await build(rt, id, source("v2"), "rev-b");
    assert.ok(again.log.includes(INSTALL), again.log);
    assert.match(again.log, /kept node_modules/);
    await rt.teardown(id);
  });

  it("a sandboxed Python rebuild reuses .venv (at /app/.venv in every revision) and starts in it", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir);
    // The wheel ships with the source: the deployment's network namespace reaches no loopback index.
    const wheel = makeWheel(tempDir(), "greetlib", "1.0", {
      "greetlib/__init__.py": 'def greeting():\n    return "hello from greetlib"\n',
    });
    const pySource = (version: string) => {
      const src = writeApp(tempDir(), {
        config: undefined,
        extra: { "main.py": APP_PY(version), "requirements.txt": `./wheels/${basename(wheel)}\n` },
      });
      mkdirSync(join(src, "wheels"));
      copyFileSync(wheel, join(src, "wheels", basename(wheel)));
      return src;
    };
    const cold = await build(rt, undefined, pySource("v1"), "rev-a");
    const id = cold.spec.deploymentId;
    assert.match(cold.log, /kept \.venv for later builds with the same requirements\.txt/);
    const warm = await build(rt, id, pySource("v2"), "rev-b");
    assert.match(
      warm.log,
      /slipway: reused \.venv from a build with the same requirements\.txt \(key [0-9a-f]{12}\)/,
    );
    assert.doesNotMatch(warm.log, /\$ .*(pip install|-m venv)/, "neither the venv nor pip runs again");
    await rt.activate(warm.spec, phase());
    const body = (await hit(rt, warm.spec.deploymentName)).json();
    assert.deepEqual(body, { version: "v2", greeting: "hello from greetlib", prefix: "/app/.venv" });
    await rt.teardown(id);
  });

  it("without a sandbox a venv is never reused: its scripts name the revision's own host path", async () => {
    const rt = newRuntime(tempDir(), { packageIndexes: INDEXES });
    runtimes.push(rt);
    const wheel = makeWheel(tempDir(), "greetlib", "1.0", { "greetlib/__init__.py": "" });
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: { "main.py": APP_PY("v1"), "requirements.txt": `./wheels/${basename(wheel)}\n` },
    });
    mkdirSync(join(src, "wheels"));
    copyFileSync(wheel, join(src, "wheels", basename(wheel)));
    const first = await build(rt, undefined, src, "rev-a");
    const second = await build(rt, first.spec.deploymentId, src, "rev-b");
    for (const log of [first.log, second.log]) {
      assert.match(log, /slipway: not reusing \.venv without a sandbox/);
      assert.match(log, /\$ pip install -r requirements\.txt/);
    }
    await rt.teardown(first.spec.deploymentId);
  });
});

const APP_PY = (version: string) => `
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from greetlib import greeting

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"version": "${version}", "greeting": greeting(), "prefix": sys.prefix})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

HTTPServer(("127.0.0.1", int(__import__("os").environ["PORT"])), Handler).serve_forever()
`;
