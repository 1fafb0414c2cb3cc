import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { planBuild } from "../../../../src/runtimes/build/plan/plan.ts";
import { plainSiteRoot } from "../../../../src/runtimes/build/plan/static.ts";
import { BuildError } from "../../../../src/runtimes/interface.ts";
import { cleanupTemp, tempDir } from "../../../helpers/local-runtime.ts";

function source(files: Record<string, string>): string {
  const dir = tempDir("slipway-static-");
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

async function plan(appDir: string) {
  const lines: string[] = [];
  const result = await planBuild({ appDir, indexes: { pipExtra: [] }, log: (l) => lines.push(l) });
  return { plan: result, lines };
}

const VITE_PKG = JSON.stringify({ devDependencies: { vite: "6.0.0" }, scripts: { build: "vite build" } });

describe("static plans", () => {
  after(cleanupTemp);

  it("a Vite app is a static plan serving dist/, with the log line naming it", async () => {
    const { plan: p, lines } = await plan(source({ "package.json": VITE_PKG, "index.html": "<p>hi</p>" }));
    assert.equal(p.kind, "static");
    assert.equal(p.kind === "static" && p.root, "dist");
    assert.equal(p.kind === "static" && p.spa, true);
    assert.ok(
      lines.includes(
        "slipway: detected node (package.json, vite): npm install; npm run build; static: dist (vite)",
      ),
      lines.join("\n"),
    );
  });

  it("the framework's build runs when package.json has none", async () => {
    const pkg = JSON.stringify({ devDependencies: { vite: "6.0.0" } });
    const { plan: p } = await plan(source({ "package.json": pkg }));
    assert.deepEqual(
      p.steps.map((s) => s.command),
      ["npm install", "./node_modules/.bin/vite build"],
    );
  });

  it("a start command anywhere wins over the static output: package.json start, a Procfile", async () => {
    const withStart = JSON.stringify({
      devDependencies: { vite: "6.0.0" },
      scripts: { start: "vite preview" },
    });
    assert.equal((await plan(source({ "package.json": withStart }))).plan.kind, "process");
    const procfile = await plan(source({ "package.json": VITE_PKG, Procfile: "web: node server.js\n" }));
    assert.equal(procfile.plan.kind, "process");
  });

  it("a framework with a server starts it: Next.js without a start script", async () => {
    const { plan: p, lines } = await plan(
      source({ "package.json": JSON.stringify({ dependencies: { next: "15.0.0" } }) }),
    );
    assert.equal(p.kind === "process" && p.start, "./node_modules/.bin/next start");
    assert.ok(
      lines.some((l) => l.endsWith("start: ./node_modules/.bin/next start (next)")),
      lines.join("\n"),
    );
  });

  it("a plain index.html at the root is served as it is, with nothing to build", async () => {
    const dir = source({ "index.html": "<h1>plain</h1>" });
    assert.equal(await plainSiteRoot(dir), ".");
    const { plan: p, lines } = await plan(dir);
    assert.equal(p.kind === "static" && p.root, ".");
    assert.equal(p.kind === "static" && p.spa, undefined);
    assert.ok(
      lines.includes(
        "slipway: detected static (index.html): nothing to install or build; static: . (index.html at the root)",
      ),
      lines.join("\n"),
    );
  });

  it("no start command and no index.html still fails, naming index.html among the places looked", async () => {
    await assert.rejects(
      plan(source({ "package.json": JSON.stringify({ dependencies: { express: "4.0.0" } }) })),
      (err: unknown) => err instanceof BuildError && /no index\.html to serve/.test(err.message),
    );
  });
});
