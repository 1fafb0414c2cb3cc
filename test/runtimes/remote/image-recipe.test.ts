import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { BuildPlan } from "../../../src/runtimes/build/plan/types.ts";
import { writeImageRecipe } from "../../../src/runtimes/remote/image-recipe.ts";
import { STATIC_SERVER_FILE, STATIC_SERVER_SCRIPT } from "../../../src/runtimes/remote/static-server.ts";
import { cleanupTemp, tempDir } from "../../helpers/local-runtime.ts";

/** What a listener's podman build is given for each kind of plan (real files in a temp dir). */

const bases = { node: "localhost/node-base:1", python: "localhost/python-base:1" };
const common = { env: { MODE: "prod" }, healthcheck: "/ok", toolchainEnv: {}, steps: [] };

function buildDir(files: Record<string, string> = {}): string {
  const dir = tempDir();
  mkdirSync(join(dir, "app"), { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, "app", name), text);
  return dir;
}

const recipe = (plan: BuildPlan, dir: string) =>
  writeImageRecipe({ plan, dir, bases, port: 8080, revisionId: "rev-1" });

describe("a listener image's recipe, by plan", () => {
  after(cleanupTemp);

  it("a Python process starts FROM the Python base, a Node one FROM the Node base", async () => {
    const python = buildDir();
    const steps = [
      { label: "install", command: "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt" },
    ];
    const py = await recipe(
      { ...common, kind: "process", language: "python", summary: "", steps, start: "python app.py" },
      python,
    );
    assert.equal(py.from, bases.python);
    assert.equal(py.context, python);
    const text = readFileSync(py.file, "utf8");
    assert.match(text, /^FROM localhost\/python-base:1$/m);
    assert.match(
      text,
      /^RUN \["sh","-c","python3 -m venv \.venv && \.venv\/bin\/pip install -r requirements\.txt"\]$/m,
    );
    assert.match(text, /^CMD \["sh","-c","python app\.py"\]$/m);
    const node = await recipe(
      { ...common, kind: "process", language: "node", summary: "", start: "npm start" },
      buildDir(),
    );
    assert.equal(node.from, bases.node);
  });

  it("a static site gets the file server beside it, started in the exec form on its root", async () => {
    const dir = buildDir({ "index.html": "<h1>hi</h1>" });
    const site = await recipe(
      {
        ...common,
        kind: "static",
        language: "node",
        summary: "",
        steps: [{ label: "build", command: "npm run build" }],
        root: "dist",
        spa: true,
      },
      dir,
    );
    assert.equal(site.from, bases.node);
    assert.equal(readFileSync(join(dir, STATIC_SERVER_FILE), "utf8"), STATIC_SERVER_SCRIPT);
    const text = readFileSync(site.file, "utf8");
    assert.match(text, /^COPY \["static-server\.mjs","\/slipway\/static-server\.mjs"\]$/m);
    assert.match(text, /^RUN \["sh","-c","npm run build"\]$/m);
    assert.match(text, /^CMD \["node","\/slipway\/static-server\.mjs","\/app\/dist","1"\]$/m);
    const plain = buildDir({ "index.html": "x" });
    const root = await recipe(
      { ...common, kind: "static", language: "static", summary: "", root: "." },
      plain,
    );
    assert.match(
      readFileSync(root.file, "utf8"),
      /^CMD \["node","\/slipway\/static-server\.mjs","\/app","0"\]$/m,
    );
  });

  it("a source's own Dockerfile: its lines, then dockerfile_lines, PORT and the label; the source is the context", async () => {
    const dir = buildDir({ Dockerfile: 'FROM localhost/busybox:1\nCMD ["httpd"]\n' });
    const own = await recipe(
      {
        ...common,
        kind: "dockerfile",
        summary: "",
        file: "Dockerfile",
        buildArgs: { GREETING: "hi there", PIP_INDEX_URL: "http://127.0.0.1:9/simple/" },
        extraLines: ['LABEL org.opencontainers.image.version="1.2.3"'],
      },
      dir,
    );
    assert.equal(own.context, join(dir, "app"));
    assert.equal(own.from, "its own Dockerfile");
    assert.equal(own.file, join(dir, "Dockerfile.slipway"), "outside the build context");
    assert.equal(existsSync(join(dir, "app", "Dockerfile.slipway")), false);
    assert.deepEqual(own.buildArgs, [
      "--build-arg",
      "GREETING=hi there",
      "--build-arg",
      "PIP_INDEX_URL=http://127.0.0.1:9/simple/",
    ]);
    assert.deepEqual(readFileSync(own.file, "utf8").trimEnd().split("\n"), [
      "FROM localhost/busybox:1",
      'CMD ["httpd"]',
      "",
      'LABEL org.opencontainers.image.version="1.2.3"',
      'ENV MODE="prod"',
      "ENV PORT=8080",
      'LABEL dev.slipway.revision-id="rev-1"',
    ]);
  });
});
