import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { detectFramework } from "../../../../src/runtimes/build/plan/frameworks.ts";
import { cleanupTemp, tempDir } from "../../../helpers/local-runtime.ts";

/** A source with this package.json and files; nothing is installed. */
function source(pkg: Record<string, unknown>, files: Record<string, string> = {}): string {
  const dir = tempDir("slipway-fw-");
  writeFileSync(join(dir, "package.json"), JSON.stringify(pkg));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  return dir;
}

const bin = (name: string) => `./node_modules/.bin/${name}`;

describe("framework detection", () => {
  after(cleanupTemp);

  it("Next.js: next build, next start; output: 'export' is a static site in out/", async () => {
    assert.deepEqual(await detectFramework(source({ dependencies: { next: "15.0.0", react: "19.0.0" } })), {
      name: "next",
      build: `${bin("next")} build`,
      start: `${bin("next")} start`,
    });
    const exported = source(
      { dependencies: { next: "15.0.0" } },
      { "next.config.mjs": "export default { output: 'export' };\n" },
    );
    assert.deepEqual(await detectFramework(exported), {
      name: "next",
      build: `${bin("next")} build`,
      staticRoot: "out",
    });
  });

  it("Vite: vite build to dist/, a single-page app", async () => {
    assert.deepEqual(await detectFramework(source({ devDependencies: { vite: "^6.0.0" } })), {
      name: "vite",
      build: `${bin("vite")} build`,
      staticRoot: "dist",
      spa: true,
    });
  });

  it("Astro: static dist/ by default, a server with the node adapter", async () => {
    assert.deepEqual(await detectFramework(source({ dependencies: { astro: "5.0.0" } })), {
      name: "astro",
      build: `${bin("astro")} build`,
      staticRoot: "dist",
    });
    const server = await detectFramework(
      source({ dependencies: { astro: "5.0.0", "@astrojs/node": "9.0.0" } }),
    );
    assert.equal(server?.start, "node ./dist/server/entry.mjs");
    assert.equal(server?.staticRoot, undefined);
  });

  it("Remix: remix-serve of the classic build, or of build/server on Vite", async () => {
    const classic = await detectFramework(
      source({
        dependencies: { "@remix-run/serve": "2.0.0" },
        devDependencies: { "@remix-run/dev": "2.0.0" },
      }),
    );
    assert.deepEqual(classic, {
      name: "remix",
      build: `${bin("remix")} build`,
      start: `${bin("remix-serve")} build/index.js`,
    });
    const vite = await detectFramework(
      source({
        dependencies: { "@remix-run/serve": "2.0.0" },
        devDependencies: { "@remix-run/dev": "2.0.0", vite: "5.0.0" },
      }),
    );
    assert.equal(vite?.name, "remix", "Remix on Vite is Remix, not a Vite site");
    assert.equal(vite?.start, `${bin("remix-serve")} build/server/index.js`);
  });

  it("Nuxt: node .output/server/index.mjs; nuxt generate is static in .output/public", async () => {
    assert.deepEqual(await detectFramework(source({ dependencies: { nuxt: "3.0.0" } })), {
      name: "nuxt",
      build: `${bin("nuxt")} build`,
      start: "node .output/server/index.mjs",
    });
    const generated = await detectFramework(
      source({ dependencies: { nuxt: "3.0.0" }, scripts: { build: "nuxt generate" } }),
    );
    assert.equal(generated?.staticRoot, ".output/public");
    assert.equal(generated?.start, undefined);
  });

  it("SvelteKit: node build with adapter-node, build/ with adapter-static, else not guessed", async () => {
    const kit = { "@sveltejs/kit": "2.0.0", vite: "5.0.0" };
    const node = await detectFramework(
      source({ devDependencies: { ...kit, "@sveltejs/adapter-node": "5.0.0" } }),
    );
    assert.deepEqual(node, { name: "sveltekit", build: `${bin("vite")} build`, start: "node build" });
    const stat = await detectFramework(
      source({ devDependencies: { ...kit, "@sveltejs/adapter-static": "3.0.0" } }),
    );
    assert.deepEqual(stat, { name: "sveltekit", build: `${bin("vite")} build`, staticRoot: "build" });
    // adapter-auto targets hosted platforms: its output is neither a node server nor a static site.
    const auto = await detectFramework(
      source({ devDependencies: { ...kit, "@sveltejs/adapter-auto": "3.0.0" } }),
    );
    assert.deepEqual(auto, { name: "sveltekit", build: `${bin("vite")} build` }, "not taken for a Vite site");
  });

  it("no framework: a plain package, or no package.json", async () => {
    assert.equal(await detectFramework(source({ dependencies: { express: "4.0.0" } })), undefined);
    assert.equal(await detectFramework(tempDir("slipway-fw-")), undefined);
  });
});
