// Static revisions in a real LocalRuntime: a Vite app built with real vite from the npm registry in
// the sandbox, and a plain index.html site, served by the apps router with no app process.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { DEFAULT_NPM_REGISTRY } from "../../../../src/runtimes/build/plan/node.ts";
import { BuildError } from "../../../../src/runtimes/interface.ts";
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

const RANGE = { first: 329_100, last: 329_199 };
const skip = await bwrapSkip(RANGE);
const INDEXES = { npm: `${DEFAULT_NPM_REGISTRY}/`, pipExtra: [] };

describe("local runtime: static sites", { skip }, () => {
  after(cleanupTemp);

  it("a Vite app is built to dist/ and served with no app process", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE, packageIndexes: INDEXES });
    after(() => rt.close());
    const src = writeApp(tempDir(), {
      config: undefined,
      extra: {
        "package.json": JSON.stringify({
          name: "vite-site",
          private: true,
          type: "module",
          scripts: { build: "vite build" },
          devDependencies: { vite: "6.4.1" },
        }),
        "index.html":
          '<!doctype html><title>vite</title><div id="app"></div><script type="module" src="/src/main.js"></script>\n',
        "src/main.js": 'document.querySelector("#app").textContent = "built by vite";\n',
      },
    });
    const s = spec({ kind: "directory", path: src }, { frameworkConfigPath: undefined });
    const ctx = phase();
    await rt.prepare(s, ctx);
    await rt.build(s, ctx).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${ctx.text("build")}`);
    });
    assert.ok(
      ctx.lines.build.includes(
        "slipway: detected node (package.json, vite): npm install; npm run build; static: dist (vite)",
      ),
      ctx.text("build"),
    );
    const record = JSON.parse(
      readFileSync(join(dataDir, "apps", s.deploymentId, s.revisionId, "build.json"), "utf8"),
    );
    assert.equal(record.kind, "static");
    assert.equal(record.root, "dist");
    assert.equal(record.spa, true);
    await rt.activate(s, ctx);
    assert.match(ctx.text("deploy"), /static site: serving dist with no app process/);
    assert.deepEqual(await rt.processes(s.deploymentId), [], "no process runs for a static revision");

    const home = await hit(rt, s.deploymentName, "/");
    assert.equal(home.status, 200);
    // Vite rewrote the script tag to its hashed bundle: this is the built page, not the source's.
    const script = /src="(\/assets\/index-[^"]+\.js)"/.exec(home.body)?.[1];
    assert.ok(script, home.body);
    const bundle = await hit(rt, s.deploymentName, script);
    assert.equal(bundle.status, 200);
    assert.match(bundle.body, /built by vite/);
    const route = await hit(rt, s.deploymentName, "/some/client/route");
    assert.equal(route.body, home.body, "a single-page app's route gets index.html");
    assert.equal((await hit(rt, s.deploymentName, "/assets/missing.js")).status, 404);
    const escaped = await hit(rt, s.deploymentName, "/../package.json");
    assert.equal(escaped.status, 404);
    assert.equal(escaped.body.includes("vite-site"), false, "the source above dist/ is never served");
  });

  it("a plain index.html site: served as it is, switched from a process revision and between revisions without failed requests", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE, packageIndexes: INDEXES });
    after(() => rt.close());
    // First a process revision, so the switch to the static one must also stop its process.
    const first = spec({ kind: "directory", path: writeApp(tempDir()) });
    const ctx = phase();
    await rt.prepare(first, ctx);
    await rt.build(first, ctx);
    await rt.activate(first, ctx);
    assert.equal((await rt.processes(first.deploymentId)).length, 1);

    const site = (version: string) =>
      writeApp(tempDir(), {
        config: undefined,
        extra: { "index.html": `<h1>${version}</h1>`, "style.css": "h1{}", "secret/.env": "TOKEN=x" },
      });
    const revision = (version: string) => ({
      ...first,
      source: { kind: "directory" as const, path: site(version) },
      frameworkConfigPath: undefined,
      revisionId: `${first.revisionId}-${version}`,
    });
    const load = { stop: false, failures: [] as string[], count: 0 };
    const hammer = (async () => {
      while (!load.stop) {
        const got = await hit(rt, first.deploymentName, "/");
        load.count++;
        if (got.status !== 200) load.failures.push(`${got.status} ${got.body}`);
      }
    })();
    for (const version of ["v1", "v2"]) {
      const s = revision(version);
      const c = phase();
      await rt.prepare(s, c);
      await rt.build(s, c);
      assert.ok(
        c.lines.build.includes(
          "slipway: detected static (index.html): nothing to install or build; static: . (index.html at the root)",
        ),
        c.text("build"),
      );
      await rt.activate(s, c);
      assert.equal((await hit(rt, first.deploymentName, "/")).body, `<h1>${version}</h1>`);
    }
    load.stop = true;
    await hammer;
    assert.deepEqual(load.failures, []);
    assert.ok(load.count > 0);
    const css = await hit(rt, first.deploymentName, "/style.css");
    assert.equal(css.status, 200);
    const missing = await hit(rt, first.deploymentName, "/nothing-here");
    assert.equal(missing.status, 404, "no SPA fallback for a plain site");
    assert.equal((await hit(rt, first.deploymentName, "/secret/.env")).status, 404);
    assert.equal((await hit(rt, first.deploymentName, "/../build.json")).status, 404);
    assert.equal((await hit(rt, first.deploymentName, "/%2e%2e/build.json")).status, 404);
    // The process revision drained and stopped: nothing of the deployment runs now.
    const deadline = Date.now() + 15_000;
    while ((await rt.processes(first.deploymentId)).length > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await rt.processes(first.deploymentId), []);
  });

  it("a build that leaves no index.html where it serves fails the build; the serving revision keeps serving", async () => {
    const dataDir = tempDir();
    const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE, packageIndexes: INDEXES });
    after(() => rt.close());
    const serving = spec(
      {
        kind: "directory",
        path: writeApp(tempDir(), { config: undefined, extra: { "index.html": "<h1>v1</h1>" } }),
      },
      { frameworkConfigPath: undefined },
    );
    const ctx = phase();
    await rt.prepare(serving, ctx);
    await rt.build(serving, ctx);
    await rt.activate(serving, ctx);
    // A Vite app whose build writes somewhere else (its own install skipped: nothing is fetched).
    const broken = {
      ...serving,
      revisionId: `${serving.revisionId}-broken`,
      installCommand: "true",
      source: {
        kind: "directory" as const,
        path: writeApp(tempDir(), {
          config: undefined,
          extra: {
            "package.json": JSON.stringify({
              devDependencies: { vite: "6.4.1" },
              scripts: { build: "mkdir -p out" },
            }),
          },
        }),
      },
    };
    const c = phase();
    await rt.prepare(broken, c);
    await assert.rejects(
      rt.build(broken, c),
      (err: unknown) =>
        err instanceof BuildError &&
        /the build left no index\.html in "dist", the directory Slipway serves/.test(err.message),
    );
    assert.equal(await rt.isBuilt(broken), false);
    assert.equal((await hit(rt, serving.deploymentName, "/")).body, "<h1>v1</h1>");
  });
});
