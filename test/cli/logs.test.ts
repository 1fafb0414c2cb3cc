import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { AppDatabases } from "../../src/reconciler/app-database.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { e2eEnv, freePort, gitRoot } from "../e2e/stack.ts";
import { runCli } from "../helpers/cli.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { eventually } from "../helpers/eventually.ts";
import { forEachDatabase } from "../helpers/harness.ts";
import { REPO_ROOT, runSlipway } from "../helpers/process.ts";

const git = gitRoot();
const appsPort = await freePort();
const apiPort = await freePort();
const proxyPort = await freePort();
const FILLER = 3000;

/** An app that says which version started, then writes FILLER long lines (over 300 KB of log). */
/** Temporary directories of this file, removed once its suites are done. */
const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function appDir(version: string): string {
  const parent = mkdtempSync(join(tmpdir(), "slipway-cli-logs-"));
  made.push(parent);
  const dir = join(parent, "logger");
  mkdirSync(dir);
  writeFileSync(
    join(dir, "server.js"),
    `console.log("started version ${version}");
for (let i = 0; i < ${FILLER}; i++) console.log("filler " + i + " " + "x".repeat(100));
require("node:http").createServer((req, res) => res.end("${version}")).listen(Number(process.env.PORT), "127.0.0.1");
`,
  );
  writeFileSync(join(dir, "slipway.json"), JSON.stringify({ start: "node server.js", healthcheck: "/" }));
  return dir;
}

/** The API, except that its event stream is not there (404): what an older server looks like. */
function proxyWithoutEvents(target: number): Server {
  return createServer((req, res) => {
    if (req.url?.startsWith("/v2/events")) {
      res.writeHead(404, { "content-type": "application/json" }).end('{"detail":"Not Found"}');
      return;
    }
    const upstream = request(
      { host: "127.0.0.1", port: target, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => res.destroy());
    // As a proxy does: a client that leaves takes its upstream request with it.
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  });
}

forEachDatabase(
  "slipway logs: -f across deploys, a closed pipe",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let env: Record<string, string>;
    let proxy: Server | undefined;
    const home = mkdtempSync(join(tmpdir(), "slipway-cli-home-"));
    const name = `logger-${kind}`;
    let deploymentId = "";
    before(async () => {
      await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      env = {
        HOME: home,
        XDG_CONFIG_HOME: join(home, "config"),
        SLIPWAY_URL: `http://127.0.0.1:${apiPort}`,
        SLIPWAY_API_KEY: suite.ctx.keys.admin,
      };
      const first = await runCli(["deploy", appDir("1"), "--name", name], env);
      assert.equal(first.code, 0, first.stdout + first.stderr);
      deploymentId = JSON.parse((await runCli(["status", name, "--json"], env)).stdout).id;
      proxy = proxyWithoutEvents(apiPort);
      await new Promise<void>((resolve) => proxy?.listen(proxyPort, "127.0.0.1", resolve));
    });
    after(async () => {
      await new Promise((resolve) => (proxy ? proxy.close(resolve) : resolve(undefined)));
      await stack?.stop();
      await new AppDatabases(TEST_DATABASE_URL, suite.ctx.keyring).drop(deploymentId).catch(() => undefined);
      rmSync(home, { recursive: true, force: true });
    });

    it("logs NAME | head -1 ends quietly: the first line, exit 0, no EPIPE trace", async () => {
      // The whole log must be stored, so that writing it overflows the pipe after head has left.
      const stored = await eventually("the app's log stored", async () => {
        const r = await runCli(["logs", name, "--json"], env);
        const lines = r.stdout.trim().split("\n");
        return lines.length > FILLER ? lines : undefined;
      });
      const first = JSON.parse(stored[0] ?? "{}").line;
      const shell = spawn(
        "bash",
        [
          "-c",
          `set -o pipefail; "${process.execPath}" bin/slipway.mjs logs "${name}" | head -1; echo "exit: \${PIPESTATUS[0]}" >&2`,
        ],
        { cwd: REPO_ROOT, env: { ...env, PATH: process.env.PATH ?? "" }, stdio: ["ignore", "pipe", "pipe"] },
      );
      let stdout = "";
      let stderr = "";
      shell.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
      shell.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
      await new Promise((resolve) => shell.on("close", resolve));
      assert.equal(stdout, `${first}\n`);
      assert.match(stderr, /^exit: 0$/m, stderr);
      assert.doesNotMatch(stderr, /EPIPE|\n\s+at /);
    });

    it("logs -f moves on to each new active revision, says so in one line, and stops on Ctrl-C", async () => {
      const follow = runSlipway(["logs", name, "-f"], env);
      try {
        await follow.waitFor(/started version 1\n/, 120_000);
        const second = await runCli(["deploy", appDir("2"), "--name", name], env);
        assert.equal(second.code, 0, second.stdout + second.stderr);
        const [switched] = await follow.waitFor(/— now following revision #2 \([0-9a-f-]{36}\)\n/, 120_000);
        await follow.waitFor(/now following revision #2[^\n]*\n[\s\S]*started version 2\n/, 120_000);
        assert.equal(follow.output().split(switched).length, 2, "said once");
        follow.proc.kill("SIGINT");
        assert.equal(await follow.exited, 0, follow.output());
      } finally {
        await follow.stop();
      }
    });

    it("without an event stream (an older server) it polls, and still moves on", async () => {
      const follow = runSlipway(["logs", name, "-f", "--json"], {
        ...env,
        SLIPWAY_URL: `http://127.0.0.1:${proxyPort}`,
      });
      try {
        await follow.waitFor(/"line":"started version 2"/, 120_000);
        const third = await runCli(["deploy", appDir("3"), "--name", name], env);
        assert.equal(third.code, 0, third.stdout + third.stderr);
        await follow.waitFor(
          /\{"event":"switch","revision_id":"[0-9a-f-]{36}","revision_number":3\}/,
          120_000,
        );
        await follow.waitFor(/"line":"started version 3"/, 120_000);
        follow.proc.kill("SIGINT");
        assert.equal(await follow.exited, 0, follow.output());
      } finally {
        await follow.stop();
      }
    });
  },
  {
    env: {
      ...e2eEnv(git.root, appsPort),
      SLIPWAY_PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
      // The app prints its whole filler at once: over the default rate, most lines would be dropped.
      SLIPWAY_LOG_LINES_PER_S: String(FILLER * 10),
    },
  },
);
