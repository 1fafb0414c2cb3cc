import assert from "node:assert/strict";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { within } from "../helpers/eventually.ts";
import { REPO_ROOT } from "../helpers/process.ts";

/**
 * The package as a user gets it: `npm pack` of this working tree (its `prepare` builds dist/), then
 * `npm install` of the tarball into a fresh project, whose plain `node` (no tsx) runs the installed
 * `slipway` command and imports `slipway/sdk`, and whose `tsc` (nodenext) type-checks against its
 * declarations. The pack runs in a copy so that the build never replaces this checkout's dist/
 * under suites running beside it.
 */

/** The environment of a child npm or node: ours without npm's script variables and loaders. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^npm_/i.test(k) && k !== "NODE_OPTIONS") env[k] = v;
  }
  return { ...env, npm_config_update_notifier: "false", ...extra };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`) and collects its output. */
function run(cmd: string, args: string[], cwd: string, timeoutMs: number, env = cleanEnv()): Promise<Run> {
  const proc = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs });
  let stdout = "";
  let stderr = "";
  proc.stdout.on("data", (c: Buffer) => {
    stdout += c.toString("utf8");
  });
  proc.stderr.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
  });
  return new Promise((resolve, reject) => {
    proc.once("error", reject);
    proc.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const ok = (r: Run, what: string) => assert.equal(r.code, 0, `${what} failed:\n${r.stdout}\n${r.stderr}`);

/** This working tree as git sees it (committed or not, ignored files left out): what `npm pack` starts from. */
function copyWorkingTree(to: string): void {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  for (const file of listed.split("\0")) {
    const from = join(REPO_ROOT, file);
    // Deleted but not yet committed; node_modules is linked, not copied.
    if (file === "" || file === "node_modules" || !existsSync(from)) continue;
    mkdirSync(dirname(join(to, file)), { recursive: true });
    cpSync(from, join(to, file));
  }
}

const KEY = `sw_install_test_${Date.now()}`;

/** A plain ESM script of the consumer: the SDK against a running server, printing what it saw. */
const SDK_SCRIPT = `import { createSlipway, SlipwayError, unwrap } from "slipway/sdk";
const [baseUrl, apiKey] = process.argv.slice(2);
const slipway = createSlipway({ baseUrl, apiKey });
const created = await unwrap(
  slipway.api.POST("/v2/deployments", {
    body: {
      name: "installed-hello",
      source: "internal_template",
      source_revision_config: { repo_ref: "hello-http", framework_config_path: "slipway.json" },
    },
  }),
);
const page = await unwrap(slipway.api.GET("/v2/deployments"));
let refused;
try {
  await unwrap(createSlipway({ baseUrl, apiKey: "sw_not_a_key_of_this_server" }).api.GET("/v2/deployments"));
} catch (err) {
  refused = err instanceof SlipwayError ? err.status : String(err);
}
console.log(JSON.stringify({ created: created.name, listed: page.resources.map((d) => d.name), refused }));
`;

/** A TypeScript consumer that must type-check, and one whose two mistakes the declarations must catch. */
const GOOD_TS = `import { createSlipway, type Deployment, SlipwayError, unwrap } from "slipway/sdk";

export async function names(baseUrl: string, apiKey: string): Promise<string[]> {
  const slipway = createSlipway({ baseUrl, apiKey });
  const page = await unwrap(slipway.api.GET("/v2/deployments", { params: { query: { name_contains: "a" } } }));
  const all: Deployment[] = page.resources;
  return all.map((d) => d.name);
}

export const isSlipwayError = (err: unknown): err is SlipwayError => err instanceof SlipwayError;
`;
const BAD_TS = `import { createSlipway } from "slipway/sdk";
const slipway = createSlipway({ baseUrl: 8080 });
export const missing = slipway.api.GET("/v2/no-such-route");
`;

describe("the package installed into a fresh project (npm pack, npm install)", () => {
  const root = mkdtempSync(join(tmpdir(), "slipway-package-"));
  const source = join(root, "source");
  const app = join(root, "app");
  let tarball = "";
  let packed: string[] = [];
  let server: ChildProcess | undefined;
  after(async () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server?.once("exit", resolve));
      server.kill("SIGTERM");
      await within(exited, 30_000, "the installed server's exit").catch(() => server?.kill("SIGKILL"));
    }
    rmSync(root, { recursive: true, force: true });
  });

  before(
    async () => {
      copyWorkingTree(source);
      symlinkSync(join(REPO_ROOT, "node_modules"), join(source, "node_modules"));
      // A data directory as `npm start` leaves one (master key, database): it must stay out of the package.
      mkdirSync(join(source, ".slipway"));
      writeFileSync(join(source, ".slipway", "master.key"), "not for the tarball\n");
      // `npm pack` runs `prepare`, which is `npm run build`.
      const pack = await run("npm", ["pack", "--pack-destination", root, "--loglevel=warn"], source, 300_000);
      ok(pack, "npm pack");
      const name = readdirSync(root).find((f) => f.endsWith(".tgz"));
      assert.ok(name, `npm pack made no tarball:\n${pack.stdout}\n${pack.stderr}`);
      tarball = join(root, name);
      packed = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).split("\n").filter(Boolean);

      mkdirSync(app);
      writeFileSync(
        join(app, "package.json"),
        JSON.stringify({ name: "consumer", private: true, type: "module" }),
      );
      const install = await run(
        "npm",
        [
          "install",
          tarball,
          "@types/node@20",
          "--prefer-offline",
          "--no-audit",
          "--no-fund",
          "--loglevel=error",
        ],
        app,
        300_000,
      );
      ok(install, "npm install of the tarball");
    },
    { timeout: 600_000 },
  );

  it("holds the build, the migrations, the console and the templates, and no source, tests or data", () => {
    const has = (path: string) => packed.includes(`package/${path}`);
    for (const path of [
      "package.json",
      "README.md",
      "bin/slipway.mjs",
      "dist/cli/main.js",
      "dist/sdk/index.js",
      "dist/sdk/index.d.ts",
      "dist/sdk/client.d.ts",
      "dist/console/app.js",
      "dist/console/app.css",
      "templates/hello-http/slipway.json",
    ]) {
      assert.ok(has(path), `the tarball lacks ${path}`);
    }
    const migrations = readdirSync(join(source, "src", "db", "migrations")).filter((f) => f.endsWith(".sql"));
    assert.ok(migrations.length > 0);
    for (const m of migrations) assert.ok(has(`dist/db/migrations/${m}`), `the tarball lacks migration ${m}`);
    const stray = packed.filter(
      (p) =>
        /^package\/(src|test|bench|node_modules|\.slipway|\.git|\.ci)\//.test(p) ||
        (p.endsWith(".ts") && !p.endsWith(".d.ts")),
    );
    assert.deepEqual(stray, []);
  });

  it("`slipway --help` runs the installed build with plain node", async () => {
    const r = await run(join(app, "node_modules", ".bin", "slipway"), ["--help"], app, 60_000);
    ok(r, "slipway --help");
    assert.match(r.stdout, /Usage: slipway/);
    assert.match(r.stdout, /deploy/);
    assert.doesNotMatch(r.stderr, /TypeScript source|tsx/);
  });

  it("a plain .mjs script uses `slipway/sdk` against the installed `slipway serve`", async () => {
    const dataDir = join(root, "data");
    server = spawn(join(app, "node_modules", ".bin", "slipway"), ["serve"], {
      cwd: app,
      env: cleanEnv({
        SLIPWAY_DATA_DIR: dataDir,
        PORT: "0",
        HOST: "127.0.0.1",
        SLIPWAY_BOOTSTRAP_API_KEY: KEY,
        SLIPWAY_RECONCILER: "false",
        LOG_LEVEL: "warn",
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const serving = new Promise<string>((resolve, reject) => {
      const onData = (c: Buffer) => {
        out += c.toString("utf8");
        const m = out.match(/Slipway is serving (http:\/\/\S+) on/);
        if (m?.[1]) resolve(m[1]);
      };
      server?.stdout?.on("data", onData);
      server?.stderr?.on("data", onData);
      server?.once("exit", (code) => reject(new Error(`slipway serve exited (${code}):\n${out}`)));
    });
    // A first start initialises the embedded database: the slowest start.
    const url = await within(serving, 120_000, `the installed server's start (output so far: ${out})`);

    writeFileSync(join(app, "list.mjs"), SDK_SCRIPT);
    const r = await run(process.execPath, ["list.mjs", url, KEY], app, 60_000);
    ok(r, "the SDK script");
    assert.deepEqual(JSON.parse(r.stdout), {
      created: "installed-hello",
      listed: ["installed-hello"],
      refused: 401,
    });

    // Templates and the console bundle are read from the installed copy at run time.
    const templates = await fetch(`${url}/v2/templates`, { headers: { "x-api-key": KEY } });
    assert.equal(templates.status, 200);
    assert.match(await templates.text(), /hello-http/);
    const bundle = await fetch(`${url}/console/assets/app.js`);
    assert.equal(bundle.status, 200);
    assert.ok((await bundle.arrayBuffer()).byteLength > 1000);
  });

  it("tsc (nodenext) type-checks a consumer against the declarations and catches its mistakes", async () => {
    writeFileSync(join(app, "good.ts"), GOOD_TS);
    writeFileSync(join(app, "bad.ts"), BAD_TS);
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "nodenext",
          moduleResolution: "nodenext",
          strict: true,
          noEmit: true,
          types: ["node"],
        },
        files: ["good.ts", "bad.ts"],
      }),
    );
    const tsc = join(REPO_ROOT, "node_modules", "typescript", "bin", "tsc");
    const r = await run(process.execPath, [tsc, "-p", "tsconfig.json", "--pretty", "false"], app, 120_000);
    // Every error is on one of bad.ts's two lines: the declarations themselves and good.ts check clean.
    const where = r.stdout
      .split("\n")
      .filter((l) => /error TS\d+/.test(l))
      .map((l) => /^(\S+)\((\d+),/.exec(l)?.slice(1).join(":") ?? l);
    assert.deepEqual([...new Set(where)], ["bad.ts:2", "bad.ts:3"], r.stdout);
    assert.equal(r.code, 2);
  });
});
