import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { AppDatabases } from "../../src/reconciler/app-database.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { appGet, e2eEnv, freePort, gitRoot } from "../e2e/stack.ts";
import { APP_FILES, runCli } from "../helpers/cli.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase } from "../helpers/harness.ts";

const git = gitRoot();
const appsPort = await freePort();
const apiPort = await freePort();

function appDir(version: string): string {
  const dir = join(mkdtempSync(join(tmpdir(), "slipway-cli-")), "webapp");
  mkdirSync(dir);
  for (const [name, text] of Object.entries(APP_FILES(version))) writeFileSync(join(dir, name), text);
  return dir;
}

interface JsonEvent {
  event: string;
  status?: string;
  url?: string | null;
  line?: string;
  revision_id?: string;
}

forEachDatabase(
  "the slipway CLI against a real server",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let env: Record<string, string>;
    const home = mkdtempSync(join(tmpdir(), "slipway-cli-home-"));
    const name = `webapp-${kind}`;
    const dir = appDir("1");
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

    it("login stores a 0600 profile that later commands use; a bad key exits 3 and stores nothing", async () => {
      const xdg = join(home, "login");
      const bad = await runCli(["login", "--url", env.SLIPWAY_URL ?? "", "--api-key", "sw_wrong"], {
        HOME: home,
        XDG_CONFIG_HOME: xdg,
      });
      assert.equal(bad.code, 3, bad.stderr);
      assert.doesNotMatch(bad.stderr, /\n\s+at /, "no stack trace");
      const ok = await runCli(
        ["login", "--url", env.SLIPWAY_URL ?? "", "--api-key", suite.ctx.keys.viewer, "--no-input"],
        {
          HOME: home,
          XDG_CONFIG_HOME: xdg,
        },
      );
      assert.equal(ok.code, 0, ok.stderr);
      const file = join(xdg, "slipway", "config.json");
      assert.equal(statSync(file).mode & 0o777, 0o600);
      assert.equal(JSON.parse(readFileSync(file, "utf8")).profiles.default.api_key, suite.ctx.keys.viewer);
      const ls = await runCli(["ls", "--json"], { HOME: home, XDG_CONFIG_HOME: xdg });
      assert.equal(ls.code, 0, ls.stderr);
      assert.deepEqual(JSON.parse(ls.stdout).resources, []);
      // SLIPWAY_API_KEY wins over the profile: the viewer profile cannot deploy, the env key can be wrong.
      const wrong = await runCli(["ls"], { HOME: home, XDG_CONFIG_HOME: xdg, SLIPWAY_API_KEY: "sw_nope" });
      assert.equal(wrong.code, 3);
    });

    it("deploy DIR creates the deployment, uploads, reaches DEPLOYED and prints the URL that serves the app", async () => {
      const res = await runCli(["deploy", dir, "--name", name, "--secret", "GREETING=hello-cli"], env);
      assert.equal(res.code, 0, res.stdout + res.stderr);
      assert.match(res.stdout, /Created deployment/);
      assert.match(res.stdout, /^QUEUED\s+\d+\.\ds$/m);
      assert.match(res.stdout, /^DEPLOYED\s+\d+\.\ds$/m);
      const url = /Deployed \S+ in \S+: (http\S+)/.exec(res.stdout)?.[1];
      assert.ok(url, res.stdout);
      const status = await runCli(["status", name, "--json"], env);
      ids.push(JSON.parse(status.stdout).id);
      const answer = await appGet(url);
      assert.equal(answer.status, 200);
      assert.equal(answer.body.version, "1");
      assert.equal(answer.body.greeting, "hello-cli");
    });

    it("deploy --json writes one JSON event a line: statuses, build log lines, the result", async () => {
      writeFileSync(join(dir, "server.js"), APP_FILES("2")["server.js"] ?? "");
      const res = await runCli(["deploy", dir, "--name", name, "--json"], env);
      assert.equal(res.code, 0, res.stderr);
      const events = res.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as JsonEvent);
      const statuses = events.filter((e) => e.event === "status").map((e) => e.status);
      assert.equal(statuses.at(-1), "DEPLOYED");
      assert.ok(statuses.includes("BUILDING"), statuses.join(","));
      assert.ok(
        events.some((e) => e.event === "log"),
        "build log lines are events",
      );
      const result = events.at(-1);
      assert.equal(result?.event, "result");
      assert.equal(result?.status, "DEPLOYED");
      assert.ok(result?.url);
      assert.equal((await appGet(result.url)).body.version, "2");
      assert.equal((await appGet(result.url)).body.greeting, "hello-cli", "secrets are kept across deploys");
    });

    it("rollback redeploys the previous DEPLOYED revision", async () => {
      const res = await runCli(["rollback", name], env);
      assert.equal(res.code, 0, res.stdout + res.stderr);
      const url = /Deployed \S+ in \S+: (http\S+)/.exec(res.stdout)?.[1];
      assert.ok(url);
      assert.equal((await appGet(url)).body.version, "1");
      const revs = await runCli(["revisions", name, "--json"], env);
      assert.equal(JSON.parse(revs.stdout).length, 3);
    });

    it("secrets set, list and unset: each change is a new revision, values stay masked", async () => {
      const set = await runCli(["secrets", "set", name, "EXTRA=1", "--json"], env);
      assert.equal(set.code, 0, set.stderr);
      const list = await runCli(["secrets", "list", name, "--json"], env);
      const secrets = JSON.parse(list.stdout) as { name: string; value: string }[];
      assert.deepEqual(secrets.map((s) => s.name).sort(), ["EXTRA", "GREETING"]);
      assert.ok(secrets.every((s) => s.value === "********"));
      const unset = await runCli(["secrets", "unset", name, "EXTRA"], env);
      assert.equal(unset.code, 0, unset.stderr);
      assert.match(unset.stdout, /Secrets of \S+: GREETING; new revision/);
      const missing = await runCli(["secrets", "unset", name, "NOPE"], env);
      assert.equal(missing.code, 2);
    });

    it("a failing build exits 1 and prints the reason, the build log's tail and the command for the rest", async () => {
      const created = await suite.ctx.app.inject({
        method: "POST",
        url: "/v2/deployments",
        headers: suite.ctx.headers(suite.ctx.keys.admin),
        payload: {
          name: `broken-${kind}`,
          source: "internal_source",
          source_config: { install_command: "echo boom-from-install; exit 7" },
        },
      });
      assert.equal(created.statusCode, 201, created.body);
      ids.push(created.json().id);
      const res = await runCli(["deploy", dir, "--name", `broken-${kind}`], env);
      assert.equal(res.code, 1, res.stdout + res.stderr);
      assert.match(res.stderr, /^BUILD_FAILED: \S/m);
      assert.doesNotMatch(res.stderr, /BUILD_FAILED: BUILD_FAILED/);
      assert.match(res.stderr, /Last lines of the build log of revision #1:\n[\s\S]*boom-from-install/);
      assert.match(res.stderr, new RegExp(`^Next: slipway logs broken-${kind} --revision 1 --build$`, "m"));
    });
  },
  { env: { ...e2eEnv(git.root, appsPort), SLIPWAY_PUBLIC_URL: `http://127.0.0.1:${apiPort}` } },
);
