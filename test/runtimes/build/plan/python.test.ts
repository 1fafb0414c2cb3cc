import assert from "node:assert/strict";
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { planBuild } from "../../../../src/runtimes/build/plan/plan.ts";
import { pipEnv } from "../../../../src/runtimes/build/plan/python.ts";
import { BuildError } from "../../../../src/runtimes/interface.ts";
import type { LocalRuntime, LocalRuntimeOptions } from "../../../../src/runtimes/local/runtime.ts";
import { bwrapSkip } from "../../../helpers/bwrap.ts";
import {
  cleanupTemp,
  hit,
  newRuntime,
  phase,
  spec,
  tempDir,
  writeApp,
} from "../../../helpers/local-runtime.ts";
import { makeWheel, type PythonIndex, startPythonIndex } from "../../../helpers/python-index.ts";

const RANGE = { first: 328_300, last: 328_399 };
const skipSandbox = await bwrapSkip(RANGE);

/** A stdlib HTTP app on $PORT answering what it imported from the index and where it runs. */
const APP_PY = `
import json, os, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from greetlib import greeting

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"greeting": greeting(), "prefix": sys.prefix, "version": sys.version_info[:2],
                           "virtualEnv": os.environ.get("VIRTUAL_ENV"), "unbuffered": os.environ.get("PYTHONUNBUFFERED")})
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

print("listening on", os.environ["PORT"])
HTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
`;

describe("python builds", () => {
  let index: PythonIndex;
  /** The greetlib wheel the index serves. */
  let greetlib: string;
  const runtimes: LocalRuntime[] = [];
  const runtime = (dataDir = tempDir(), opts: Partial<LocalRuntimeOptions> = {}) => {
    const rt = newRuntime(dataDir, { packageIndexes: { pip: index.url, pipExtra: [] }, ...opts });
    runtimes.push(rt);
    return rt;
  };
  before(async () => {
    const wheels = tempDir();
    greetlib = makeWheel(wheels, "greetlib", "1.0", {
      "greetlib/__init__.py": 'def greeting():\n    return "hello from greetlib"\n',
    });
    index = await startPythonIndex([wheels]);
  });
  after(async () => {
    await Promise.all(runtimes.map((rt) => rt.close()));
    await index.close();
    cleanupTemp();
  });

  it("installs requirements.txt from the index into .venv and starts app.py inside it", async () => {
    const dataDir = tempDir();
    const rt = runtime(dataDir);
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: { "app.py": APP_PY, "requirements.txt": "greetlib==1.0\n", ".python-version": "3.11\n" },
    });
    const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: undefined });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    const log = ctx.text("build");
    assert.ok(
      ctx.lines.build.includes(
        "slipway: detected python (requirements.txt, .python-version): /usr/bin/python3.11 -m venv .venv; " +
          "pip install -r requirements.txt; start: python app.py (app.py at the root)",
      ),
      log,
    );
    assert.match(
      log,
      /slipway: python 3\.11 \(\/usr\/bin\/python3\.11\), as \.python-version asks \(3\.11\)/,
    );
    assert.deepEqual(index.asked, ["greetlib"], "pip asked the configured index");
    // pip's cache is the deployment's own, in its HOME.
    assert.equal(existsSync(join(dataDir, "apps", s.deploymentId, "home", ".cache", "pip")), true);
    await rt.activate(s, phase());
    const body = (await hit(rt, s.deploymentName)).json();
    assert.equal(body.greeting, "hello from greetlib");
    assert.match(String(body.prefix), /\/app\/\.venv$/);
    assert.equal(body.virtualEnv, body.prefix, "VIRTUAL_ENV names the venv the app runs in");
    assert.deepEqual(body.version, [3, 11]);
    assert.equal(body.unbuffered, "1");
  });

  it("builds a pyproject.toml app with PEP 517 (setuptools from the index) and a Procfile start", async () => {
    const rt = runtime();
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: {
        "pyproject.toml":
          '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n' +
          '[project]\nname = "webapp"\nversion = "0.1"\ndependencies = ["greetlib"]\n\n' +
          '[tool.setuptools]\npy-modules = ["webapp"]\n',
        "webapp.py": APP_PY,
        Procfile: "web: python -m webapp\n",
      },
    });
    const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: undefined });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    assert.ok(
      ctx.lines.build.includes(
        "slipway: detected python (pyproject.toml): /usr/bin/python3.11 -m venv .venv; pip install .; " +
          "start: python -m webapp (Procfile web:)",
      ),
      ctx.text("build"),
    );
    assert.ok(index.asked.includes("setuptools"), "the PEP 517 build fetched setuptools from the index");
    await rt.activate(s, phase());
    assert.equal((await hit(rt, s.deploymentName)).json().greeting, "hello from greetlib");
  });

  it("installs Pipfile.lock's pinned default packages with pip, hashes checked", async () => {
    const { createHash } = await import("node:crypto");
    const sha = createHash("sha256").update(readFileSync(greetlib)).digest("hex");
    const lock = (hash: string) =>
      JSON.stringify({
        _meta: { sources: [{ url: "https://pypi.org/simple", name: "pypi" }] },
        default: { greetlib: { version: "==1.0", hashes: [`sha256:${hash}`] } },
        develop: { nosuchdevtool: { version: "==9" } },
      });
    const rt = runtime();
    const good = writeApp(tempDir(), {
      config: undefined,
      extra: { "app.py": APP_PY, "Pipfile.lock": lock(sha) },
    });
    const s = spec({ kind: "directory", path: good }, { frameworkConfigPath: undefined });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    assert.match(ctx.text("build"), /pip install -r \.slipway-pipfile-requirements\.txt/);
    await rt.activate(s, phase());
    assert.equal((await hit(rt, s.deploymentName)).json().greeting, "hello from greetlib");

    // A lock whose hash does not match what the index serves fails, in pip's words.
    const bad = writeApp(tempDir(), {
      config: undefined,
      extra: { "app.py": APP_PY, "Pipfile.lock": lock("0".repeat(64)) },
    });
    const b = spec({ kind: "directory", path: bad }, { frameworkConfigPath: undefined });
    const badCtx = phase();
    await rt.prepare(b, badCtx);
    await assert.rejects(rt.build(b, badCtx), BuildError);
    assert.match(badCtx.text("build"), /THESE PACKAGES DO NOT MATCH THE HASHES/);
  });

  it("an impossible python_version fails naming it and the versions here, before installing", async () => {
    for (const [files, expected] of [
      [
        { ".python-version": "2.7\n" },
        /python 2\.7 \(from \.python-version\) is not on this machine; Python versions here: 3\.11/,
      ],
      [
        { "runtime.txt": "python-3.99.1\n" },
        /python 3\.99\.1 \(from runtime\.txt\) is not on this machine; Python versions here: 3\.11/,
      ],
      [{ ".python-version": "pypy3.9\n" }, /python "pypy3\.9" \(from \.python-version\) is not a version/],
    ] as const) {
      const rt = runtime();
      const src = writeApp(tempDir(), {
        config: undefined,
        extra: { "app.py": APP_PY, "requirements.txt": "greetlib\n", ...files },
      });
      const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: undefined });
      const ctx = phase();
      await rt.prepare(s, ctx);
      await assert.rejects(rt.build(s, ctx), (err: unknown) => {
        assert.ok(err instanceof BuildError);
        assert.match(err.message, expected);
        return true;
      });
      assert.match(ctx.text("build"), new RegExp(`^error: .*${expected.source}`, "m"));
      assert.ok(!ctx.text("build").includes("$ "), "nothing ran");
    }
  });

  it("a requirement the index does not have fails with pip's own error lines", async () => {
    const rt = runtime();
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: { "app.py": APP_PY, "requirements.txt": "greetlib==1.0\nno-such-package==2.0\n" },
    });
    const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: undefined });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await assert.rejects(
      rt.build(s, ctx),
      /install command "pip install -r requirements.txt" exited with code 1/,
    );
    const log = ctx.text("build");
    assert.match(log, /ERROR: Could not find a version that satisfies the requirement no-such-package==2\.0/);
    assert.match(log, /ERROR: No matching distribution found for no-such-package==2\.0/);
    assert.equal(await rt.isBuilt(s), false);
  });

  it("builds and runs in the sandbox, the venv at /app/.venv", { skip: skipSandbox }, async () => {
    // The deployment's network namespace reaches no index on this machine (its loopback is the
    // namespace's own), so the wheel ships with the source: pip, the venv and the app run confined.
    const rt = newRuntime(tempDir(), {
      sandbox: "bwrap",
      uidRange: RANGE,
      packageIndexes: { pip: index.url, pipExtra: [] },
    });
    runtimes.push(rt);
    const wheel = basename(greetlib);
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: {
        "main.py": APP_PY,
        "requirements.txt": `./wheels/${wheel}\n`,
        "runtime.txt": "python-3.11.4\n",
      },
    });
    mkdirSync(join(src, "wheels"));
    copyFileSync(greetlib, join(src, "wheels", wheel));
    const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: undefined });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx);
    assert.match(ctx.text("build"), /start: python main\.py \(main\.py at the root\)/);
    assert.match(
      ctx.text("build"),
      /slipway: python 3\.11 \(\/usr\/bin\/python3\.11\), as runtime\.txt asks \(3\.11\.4\)/,
    );
    await rt.activate(s, phase());
    const body = (await hit(rt, s.deploymentName)).json();
    assert.equal(body.greeting, "hello from greetlib");
    assert.equal(body.prefix, "/app/.venv");
    assert.equal(body.virtualEnv, "/app/.venv");
  });

  it("pip's settings: the configured indexes, trusted when plain http, and its cache in HOME", async () => {
    assert.deepEqual(
      pipEnv({ pip: "http://127.0.0.1:3141/simple", pipExtra: ["https://mirror.test/simple"] }),
      {
        PIP_DISABLE_PIP_VERSION_CHECK: "1",
        PIP_NO_INPUT: "1",
        PIP_CACHE_DIR: "{home}/.cache/pip",
        PIP_INDEX_URL: "http://127.0.0.1:3141/simple",
        PIP_EXTRA_INDEX_URL: "https://mirror.test/simple",
        PIP_TRUSTED_HOST: "127.0.0.1:3141",
      },
    );
    assert.equal(pipEnv({ pipExtra: [] }).PIP_INDEX_URL, undefined, "unset: pip's own default");
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: { "main.py": "print(1)\n", "requirements.txt": "" },
    });
    const plan = await planBuild({ appDir: src, indexes: { pipExtra: [] }, log: () => {} });
    assert.equal(plan.kind === "process" && plan.start, "python main.py");
    assert.deepEqual(plan.cache, { dirs: [".venv"], keyFiles: ["requirements.txt"] });
    assert.equal(existsSync(join(src, ".venv")), false, "planning runs nothing");
  });
});
