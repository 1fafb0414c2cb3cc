// SLIPWAY_NPM_REGISTRY reaches every Node build: corepack fetches pnpm from it, and npm, pnpm and
// yarn install from it. Unsandboxed, so the mirror can listen on loopback (a deployment's network
// namespace has its own); node-builds.test.ts builds the same managers in the sandbox.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, describe, it } from "node:test";
import { DEFAULT_NPM_REGISTRY } from "../../../../src/runtimes/build/plan/node.ts";
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

interface Mirror {
  url: string;
  /** The paths asked for, in order. */
  paths: string[];
  close(): Promise<void>;
}

/**
 * An npm registry mirror: each request is answered from the npm registry, with the registry's URLs
 * in metadata turned into the mirror's own (as a real mirror's are), and its path recorded.
 */
async function startMirror(host: string): Promise<Mirror> {
  const paths: string[] = [];
  let self = "";
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    paths.push(path);
    const accept = req.headers.accept;
    fetch(`${DEFAULT_NPM_REGISTRY}${path}`, { headers: accept ? { accept } : {} })
      .then(async (upstream) => {
        const type = upstream.headers.get("content-type") ?? "application/octet-stream";
        let body = Buffer.from(await upstream.arrayBuffer());
        if (type.includes("json")) {
          body = Buffer.from(body.toString("utf8").split(`${DEFAULT_NPM_REGISTRY}/`).join(`${self}/`));
        }
        res.writeHead(upstream.status, { "content-type": type, "content-length": body.length });
        res.end(body);
      })
      .catch((err: unknown) => {
        res.writeHead(502).end(String(err));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  self = `http://${host}:${(server.address() as AddressInfo).port}`;
  return {
    url: `${self}/`,
    paths,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const SERVER_JS = `
const ms = require("ms");
require("node:http")
  .createServer((req, res) => res.end(String(ms("1m"))))
  .listen(Number(process.env.PORT), "127.0.0.1");
`;

function pkg(name: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    name,
    private: true,
    dependencies: { ms: "2.1.3" },
    scripts: { start: "node server.js" },
    ...extra,
  });
}

const NPM_LOCK = JSON.stringify({
  name: "npm-app",
  lockfileVersion: 3,
  requires: true,
  packages: {
    "": { name: "npm-app", dependencies: { ms: "2.1.3" } },
    "node_modules/ms": {
      version: "2.1.3",
      resolved: "https://registry.npmjs.org/ms/-/ms-2.1.3.tgz",
      integrity:
        "sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==",
    },
  },
});

describe("Node builds install from SLIPWAY_NPM_REGISTRY", () => {
  after(cleanupTemp);

  for (const [manager, files, fetched] of [
    // npm ci: the lockfile's registry.npmjs.org URLs go to the mirror (npm's replace-registry-host).
    ["npm", { "package.json": pkg("npm-app"), "package-lock.json": NPM_LOCK }, ["/ms/-/ms-2.1.3.tgz"]],
    [
      "pnpm",
      { "package.json": pkg("pnpm-app", { packageManager: "pnpm@9.12.0" }) },
      ["/pnpm/9.12.0", "/pnpm/-/pnpm-9.12.0.tgz", "/ms", "/ms/-/ms-2.1.3.tgz"],
    ],
    [
      // No packageManager: corepack picks the newest pnpm 9 from the mirror's version list.
      "pnpm from pnpm-lock.yaml",
      { "package.json": pkg("pnpm-lock-app"), "pnpm-lock.yaml": PNPM_LOCK },
      ["/pnpm", "/ms/-/ms-2.1.3.tgz"],
    ],
    [
      "yarn classic",
      { "package.json": pkg("yarn-app"), "yarn.lock": YARN_CLASSIC_LOCK },
      ["/ms/-/ms-2.1.3.tgz"],
    ],
    [
      "yarn berry",
      { "package.json": pkg("berry-app", { packageManager: "yarn@4.5.0" }), "yarn.lock": YARN_BERRY_LOCK },
      ["/@yarnpkg/cli-dist/4.5.0", "/ms/-/ms-2.1.3.tgz"],
    ],
  ] as const) {
    it(`${manager}: the manager and the packages come from the mirror`, async () => {
      const mirror = await startMirror("127.0.0.1");
      after(() => mirror.close());
      const rt = newRuntime(tempDir(), { packageIndexes: { npm: mirror.url, pipExtra: [] } });
      after(() => rt.close());
      const s = spec(
        {
          kind: "directory",
          path: writeApp(tempDir(), { config: undefined, extra: { "server.js": SERVER_JS, ...files } }),
        },
        { frameworkConfigPath: undefined },
      );
      const ctx = phase();
      await rt.prepare(s, ctx);
      await rt.build(s, ctx).catch((err: Error) => {
        throw new Error(`${err.message}\n${ctx.text("build")}`);
      });
      for (const path of fetched)
        assert.ok(mirror.paths.includes(path), `${path} in ${mirror.paths.join(", ")}\n${ctx.text("build")}`);
      await rt.activate(s, ctx);
      const res = await hit(rt, s.deploymentName);
      assert.equal(res.body, "60000");
      await rt.teardown(s.deploymentId);
    });
  }
});
