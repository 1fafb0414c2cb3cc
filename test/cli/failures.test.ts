import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { AppDatabases } from "../../src/reconciler/app-database.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { e2eEnv, freePort, gitRoot } from "../e2e/stack.ts";
import { APP_FILES, lateTimersOptions, runCli, runCliInTerminal, screenOf } from "../helpers/cli.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase } from "../helpers/harness.ts";

const git = gitRoot();
const appsPort = await freePort();
const apiPort = await freePort();

/** Temporary directories of this file, removed once its suites are done. */
const made: string[] = [];
after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

function appDir(files: Record<string, string>): string {
  const parent = mkdtempSync(join(tmpdir(), "slipway-cli-"));
  made.push(parent);
  const dir = join(parent, "app");
  mkdirSync(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

/** An app that says why it stops, then exits before it ever listens. */
const CRASHING = {
  "server.js": `console.log("boom: the app's own words"); console.error("missing SETTING_X"); process.exit(3);\n`,
  "slipway.json": JSON.stringify({ start: "node server.js", healthcheck: "/" }),
};

const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
const RED = "\x1b[31m";

forEachDatabase(
  "the slipway CLI on failed deployments: the latest revision's state, its log, its colour",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let env: Record<string, string>;
    const home = mkdtempSync(join(tmpdir(), "slipway-cli-home-"));
    const crashing = `crashing-${kind}`;
    const healthy = `healthy-${kind}`;
    const ids: string[] = [];
    before(async () => {
      await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      env = {
        HOME: home,
        XDG_CONFIG_HOME: join(home, "config"),
        SLIPWAY_URL: `http://127.0.0.1:${apiPort}`,
        SLIPWAY_API_KEY: suite.ctx.keys.admin,
      };
    });
    after(async () => {
      await stack?.stop();
      for (const id of ids)
        await new AppDatabases(TEST_DATABASE_URL, suite.ctx.keyring).drop(id).catch(() => undefined);
      rmSync(home, { recursive: true, force: true });
    });

    it("a deploy whose app exits at start: exit 1, the reason once, the app's own output, the next command", async () => {
      const res = await runCli(["deploy", appDir(CRASHING), "--name", crashing], env);
      assert.equal(res.code, 1, res.stdout + res.stderr);
      const id = JSON.parse((await runCli(["status", crashing, "--json"], env)).stdout).id;
      ids.push(id);
      assert.match(res.stderr, /^DEPLOY_FAILED: \S.*$/m);
      assert.doesNotMatch(res.stderr, /DEPLOY_FAILED: DEPLOY_FAILED/);
      // The app's output, not the build log that succeeded.
      assert.match(
        res.stderr,
        /Last lines of the deploy log of revision #1:\n[\s\S]*boom: the app's own words/,
      );
      assert.match(res.stderr, /missing SETTING_X/);
      assert.doesNotMatch(res.stderr, /build log/);
      assert.match(res.stderr, new RegExp(`^Next: slipway logs ${crashing} --revision 1$`, "m"));
      assert.doesNotMatch(res.stderr, /\n\s+at /, "no stack trace");
      assert.ok(!(res.stdout + res.stderr).includes("\x1b["), "no escape codes when not on a terminal");
      const json = await runCli(["deploy", appDir(CRASHING), "--name", crashing, "--json"], env);
      assert.equal(json.code, 1);
      const result = JSON.parse(json.stdout.trim().split("\n").at(-1) ?? "{}");
      assert.equal(result.event, "result");
      assert.equal(result.status, "DEPLOY_FAILED");
      assert.equal(result.failed_step, "deploy");
      assert.equal(result.revision_number, 2);
      assert.ok(result.log_tail.some((l: string) => l.includes("boom: the app's own words")));
      assert.equal(result.next, `slipway logs ${crashing} --revision 2`);
    });

    it("a successful deploy exits once its last line is out: no timer of its own fires after it", async () => {
      const res = await runCli(["deploy", appDir(APP_FILES("1")), "--name", healthy], {
        ...env,
        NODE_OPTIONS: lateTimersOptions(),
      });
      assert.equal(res.code, 0, res.stdout + res.stderr);
      ids.push(JSON.parse((await runCli(["status", healthy, "--json"], env)).stdout).id);
      assert.match(res.stdout, /Deployed \S+ in \S+: http/);
      assert.match(res.stderr, /^late timers: \[\]$/m);
    });

    it("ls and status show the latest revision's state; ls --status takes it; unknown states are refused", async () => {
      const ls = await runCli(["ls"], env);
      assert.equal(ls.code, 0, ls.stderr);
      assert.match(ls.stdout, /^NAME\s+STATUS\s+LATEST REVISION\s+SOURCE/m);
      assert.match(ls.stdout, new RegExp(`^${crashing}\\s+READY\\s+DEPLOY_FAILED\\s`, "m"));
      assert.match(ls.stdout, new RegExp(`^${healthy}\\s+READY\\s+DEPLOYED\\s`, "m"));
      const names = async (...args: string[]) => {
        const r = await runCli(["ls", "--json", ...args], env);
        assert.equal(r.code, 0, r.stderr);
        return (JSON.parse(r.stdout).resources as { name: string }[]).map((d) => d.name).sort();
      };
      assert.deepEqual(await names("--status", "DEPLOY_FAILED"), [crashing]);
      assert.deepEqual(await names("--status", "deployed"), [healthy]);
      assert.deepEqual(await names("--status", "DEPLOYED,DEPLOY_FAILED"), [crashing, healthy].sort());
      assert.deepEqual(await names("--status", "READY,DEPLOY_FAILED"), [crashing], "both kinds must match");
      assert.deepEqual(await names("--status", "UNUSED"), []);
      const bad = await runCli(["ls", "--status", "FAILED"], env);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /--status FAILED is not a state/);
      assert.match(bad.stderr, /READY/);
      assert.match(bad.stderr, /DEPLOY_FAILED/);
      const status = await runCli(["status", crashing], env);
      assert.equal(status.code, 0, status.stderr);
      assert.match(status.stdout, /^revision state\s+DEPLOY_FAILED$/m);
      assert.match(status.stdout, /^latest revision\s+#2 [0-9a-f-]{36}$/m);
      assert.match(status.stdout, /^message\s+\S/m);
      assert.doesNotMatch(status.stdout, /message\s+DEPLOY_FAILED:/);
    });

    it("on a terminal failures are red (not with NO_COLOR), and a deploy leaves no spinner behind", async () => {
      const ls = runCliInTerminal(["ls"], env);
      assert.equal(await ls.exited, 0, ls.output());
      assert.ok(ls.output().includes(`${RED}DEPLOY_FAILED`), JSON.stringify(ls.output()));
      assert.ok(!ls.output().includes(`${RED}DEPLOYED`), "a success is not red");
      const plain = runCliInTerminal(["ls"], { ...env, NO_COLOR: "1" });
      assert.equal(await plain.exited, 0);
      assert.match(plain.output(), /DEPLOY_FAILED/);
      assert.ok(!plain.output().includes(RED));
      const status = runCliInTerminal(["status", crashing], env);
      assert.equal(await status.exited, 0);
      assert.ok(status.output().includes(`${RED}DEPLOY_FAILED`));

      const deploy = runCliInTerminal(["deploy", appDir(APP_FILES("2")), "--name", healthy], env);
      assert.equal(await deploy.exited, 0, deploy.output());
      // The spinner was drawn (so this test can fail), then erased before each line and at the end.
      assert.match(deploy.output(), SPINNER);
      const screen = screenOf(deploy.output());
      assert.equal(
        screen.filter((l) => SPINNER.test(l)).length,
        0,
        `spinner debris on screen:\n${screen.join("\n")}`,
      );
      assert.match(screen.join("\n"), /^DEPLOYED\s+\d+\.\ds\n[\s\S]*Deployed \S+ in \S+: http/m);
      assert.equal(screen.at(-1), "", "the cursor's line is clean at exit");
    });
  },
  { env: { ...e2eEnv(git.root, appsPort), SLIPWAY_PUBLIC_URL: `http://127.0.0.1:${apiPort}` } },
);
