// Real pnpm and yarn builds in the sandbox: corepack fetches the manager from the npm registry, the
// manager installs a real package the app imports at run time, and the app answers over HTTP.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
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
import { PNPM_LOCK, YARN_BERRY_LOCK, YARN_CLASSIC_LOCK } from "../../../helpers/node-lockfiles.ts";

const RANGE = { first: 328_200, last: 328_299 };
const skip = await bwrapSkip(RANGE);
const INDEXES = { npm: `${DEFAULT_NPM_REGISTRY}/`, pipExtra: [] };

/** Imports `ms` (from the registry) at run time; the build script wrote built.txt with it too. */
const SERVER_JS = `
const http = require("node:http");
const fs = require("node:fs");
const ms = require("ms");
http.createServer((req, res) => {
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ twoHours: ms("2h"), built: fs.readFileSync("built.txt", "utf8") }));
}).listen(Number(process.env.PORT), "127.0.0.1", () => console.log("listening with " + process.env.npm_config_user_agent));
`;

function pkg(
  name: string,
  extra: Record<string, unknown> = {},
  deps: Record<string, string> = { ms: "2.1.3" },
) {
  return JSON.stringify({
    name,
    version: "1.0.0",
    private: true,
    dependencies: deps,
    scripts: {
      build: "node -e \"require('fs').writeFileSync('built.txt', String(require('ms')('1d')))\"",
      start: "node server.js",
    },
    ...extra,
  });
}

function app(files: Record<string, string>): string {
  return writeApp(tempDir(), { config: undefined, extra: { "server.js": SERVER_JS, ...files } });
}

describe("Node package managers: real builds in the sandbox", { skip }, () => {
  after(cleanupTemp);

  for (const [manager, files, detected, agent] of [
    [
      "pnpm (packageManager pnpm@9.12.0)",
      { "package.json": pkg("pnpm-app", { packageManager: "pnpm@9.12.0" }), "pnpm-lock.yaml": PNPM_LOCK },
      "node (package.json, pnpm-lock.yaml, packageManager pnpm@9.12.0): corepack pnpm install --frozen-lockfile; " +
        "corepack pnpm run build; start: corepack pnpm start (node)",
      /^listening with pnpm\/9\.12\.0 /,
    ],
    [
      "yarn classic (a v1 yarn.lock)",
      { "package.json": pkg("yarn-app"), "yarn.lock": YARN_CLASSIC_LOCK },
      "node (package.json, yarn.lock): sed -i -e 's|https://registry\\.yarnpkg\\.com/|https://registry.npmjs.org/|g' yarn.lock; " +
        "corepack yarn@1 install --frozen-lockfile; corepack yarn@1 run build; " +
        "start: corepack yarn@1 start (node)",
      /^listening with yarn\/1\./,
    ],
    [
      "yarn berry (packageManager yarn@4.5.0, Plug'n'Play)",
      { "package.json": pkg("berry-app", { packageManager: "yarn@4.5.0" }), "yarn.lock": YARN_BERRY_LOCK },
      "node (package.json, yarn.lock, packageManager yarn@4.5.0): corepack yarn install --immutable; " +
        "corepack yarn run build; start: corepack yarn start (node)",
      /^listening with yarn\/4\.5\.0 /,
    ],
  ] as const) {
    it(`${manager}: installs from the registry, builds, and the app imports its dependency`, async () => {
      const dataDir = tempDir();
      const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE, packageIndexes: INDEXES });
      after(() => rt.close());
      const s = spec({ kind: "directory", path: app(files) }, { frameworkConfigPath: undefined });
      const ctx = phase();
      await rt.prepare(s, ctx);
      await rt.build(s, ctx);
      const log = ctx.text("build");
      assert.ok(ctx.lines.build.includes(`slipway: detected ${detected}`), log);
      await rt.activate(s, ctx);
      const res = await hit(rt, s.deploymentName);
      assert.equal(res.status, 200, res.body);
      assert.deepEqual(res.json(), { twoHours: 7_200_000, built: "86400000" });
      // The manager that started the app is the one named, run by corepack from the deployment's HOME.
      assert.ok(
        ctx.lines.deploy.some((l) => agent.test(l)),
        ctx.text("deploy"),
      );
      const home = join(dataDir, "apps", s.deploymentId, "home");
      const name = manager.split(" ")[0] ?? "";
      assert.ok(
        existsSync(join(home, ".cache", "node", "corepack", "v1", name)),
        "corepack's managers in HOME",
      );
      assert.ok(!log.includes(dataDir), "no host path in the build log");
      await rt.teardown(s.deploymentId);
    });
  }

  for (const [manager, files, managerError] of [
    [
      "pnpm",
      {
        "package.json": pkg(
          "pnpm-app",
          { packageManager: "pnpm@9.12.0" },
          { "slipway-no-such-package-28": "1.0.0" },
        ),
      },
      /ERR_PNPM_FETCH_404.*slipway-no-such-package-28/,
    ],
    [
      "yarn classic",
      {
        "package.json": pkg(
          "yarn-app",
          { packageManager: "yarn@1.22.22" },
          { "slipway-no-such-package-28": "1.0.0" },
        ),
      },
      /^error Couldn't find package "slipway-no-such-package-28" on the "npm" registry/,
    ],
  ] as const) {
    it(`${manager}: an unresolvable dependency fails the build with the manager's own error, and the serving revision keeps serving`, async () => {
      const dataDir = tempDir();
      const rt = newRuntime(dataDir, { sandbox: "bwrap", uidRange: RANGE, packageIndexes: INDEXES });
      after(() => rt.close());
      // An app with nothing to install serves first; the broken revision of the same deployment follows.
      const serving = spec({
        kind: "directory",
        path: writeApp(tempDir(), { config: { start: "node server.js" } }),
      });
      const ctx = phase();
      await rt.prepare(serving, ctx);
      await rt.build(serving, ctx);
      await rt.activate(serving, ctx);
      assert.equal((await hit(rt, serving.deploymentName)).status, 200);

      const broken = spec(
        { kind: "directory", path: app(files) },
        {
          deploymentId: serving.deploymentId,
          deploymentName: serving.deploymentName,
          revisionId: `${serving.revisionId}-broken`,
          frameworkConfigPath: undefined,
        },
      );
      const failed = phase();
      await rt.prepare(broken, failed);
      await assert.rejects(rt.build(broken, failed), (err: unknown) => {
        assert.ok(err instanceof BuildError);
        assert.match(err.message, /^install command "corepack (pnpm|yarn) install" exited with code \d+/);
        return true;
      });
      assert.ok(
        failed.lines.build.some((l) => managerError.test(l)),
        failed.text("build"),
      );
      assert.ok(
        !failed.lines.build.some((l) => /^\$ .*run build/.test(l)),
        "no build after a failed install",
      );
      assert.equal(await rt.isBuilt(broken), false);
      const still = await hit(rt, serving.deploymentName);
      assert.equal(still.status, 200, "the serving revision keeps serving");
      await rt.teardown(serving.deploymentId);
    });
  }
});
