import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, it } from "node:test";
import { AppDatabases } from "../../src/reconciler/app-database.ts";
import { createSlipway, type Slipway, unwrap } from "../../src/sdk/client.ts";
import { type DeployEvent, DeployInputError, deploy, findDeployment } from "../../src/sdk/deploy.ts";
import { failedStep, failureReason, followRevision, logTail } from "../../src/sdk/follow.ts";
import { waitForRevision } from "../../src/sdk/revisions.ts";
import { type RunningReconciler, startReconciler } from "../../src/wiring/reconciler.ts";
import { appGet, e2eEnv, freePort, gitRoot } from "../e2e/stack.ts";
import { APP_FILES } from "../helpers/cli.ts";
import { TEST_DATABASE_URL } from "../helpers/databases.ts";
import { forEachDatabase } from "../helpers/harness.ts";

const git = gitRoot();
const appsPort = await freePort();
const apiPort = await freePort();

function newAppDir(files: Record<string, string>, name = "sdkapp"): string {
  const dir = join(mkdtempSync(join(tmpdir(), "slipway-sdk-deploy-")), name);
  mkdirSync(dir);
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

forEachDatabase(
  "SDK deploy(): find or create, upload, PATCH, wait with events",
  (suite) => {
    let stack: RunningReconciler | undefined;
    let client: Slipway;
    const ids: string[] = [];
    const made: string[] = [];
    const appDir = (files: Record<string, string>, name?: string) => {
      const d = newAppDir(files, name);
      made.push(dirname(d));
      return d;
    };
    const dir = appDir(APP_FILES("1"));
    before(async () => {
      await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      client = createSlipway({ baseUrl: `http://127.0.0.1:${apiPort}`, apiKey: suite.ctx.keys.admin });
    });
    after(async () => {
      await stack?.stop();
      for (const id of ids)
        await new AppDatabases(TEST_DATABASE_URL, suite.ctx.keyring).drop(id).catch(() => undefined);
      for (const d of made) rmSync(d, { recursive: true, force: true });
    });

    it("creates the deployment named after the directory, reports each step, resolves with the URL", async () => {
      const events: DeployEvent[] = [];
      const result = await deploy(client, {
        directory: dir,
        secrets: [{ name: "GREETING", value: "from-sdk" }],
        onEvent: (e) => events.push(e),
      });
      ids.push(result.deployment.id);
      assert.equal(result.ok, true, result.revision.status_message ?? "");
      assert.equal(result.created, true);
      assert.equal(result.deployment.name, "sdkapp");
      assert.equal(result.revision.status, "DEPLOYED");
      assert.equal(result.revision.number, 1);
      const types = events.map((e) => e.type);
      assert.deepEqual(types.slice(0, 4), ["created", "packed", "uploaded", "queued"]);
      const statuses = events.flatMap((e) => (e.type === "status" ? [e.status] : []));
      assert.equal(statuses[0], "QUEUED");
      assert.equal(statuses.at(-1), "DEPLOYED");
      assert.ok(statuses.includes("BUILDING"), statuses.join(","));
      assert.ok(types.includes("log"), "build log lines are events");
      assert.ok(result.url);
      const answer = await appGet(result.url);
      assert.equal(answer.body.version, "1");
      assert.equal(answer.body.greeting, "from-sdk");
    });

    it("finds the deployment the next time, keeps its secrets, and deploys the new source", async () => {
      writeFileSync(join(dir, "server.js"), APP_FILES("2")["server.js"] ?? "");
      const events: string[] = [];
      const result = await deploy(client, { directory: dir, onEvent: (e) => events.push(e.type) });
      assert.equal(result.ok, true);
      assert.equal(result.created, false);
      assert.ok(!events.includes("created"));
      assert.equal(result.revision.number, 2);
      const answer = await appGet(result.url ?? "");
      assert.equal(answer.body.version, "2");
      assert.equal(answer.body.greeting, "from-sdk");
    });

    it("without wait it resolves once queued; followRevision then waits; a template deploys the same way", async () => {
      const queued = await deploy(client, { template: "hello-http", name: "sdk-template", wait: false });
      ids.push(queued.deployment.id);
      assert.equal(queued.created, true);
      assert.equal(queued.ok, false);
      const outcome = await followRevision(client, queued.deployment.id, queued.revision.id);
      assert.equal(outcome.ok, true, outcome.revision.status_message ?? "");
      assert.equal(outcome.revision.id, queued.revision.id);
      assert.equal((await appGet(outcome.url ?? "")).status, 200);
    });

    it("a failed revision resolves with ok false; its step, reason and log tail say why", async () => {
      const broken = appDir(
        {
          "server.js": `console.log("cannot start: no DATABASE"); process.exit(2);\n`,
          "slipway.json": JSON.stringify({ start: "node server.js", healthcheck: "/" }),
        },
        "sdk-broken",
      );
      const result = await deploy(client, { directory: broken });
      ids.push(result.deployment.id);
      assert.equal(result.ok, false);
      assert.equal(result.revision.status, "DEPLOY_FAILED");
      assert.equal(failedStep(result.revision), "deploy");
      const reason = failureReason(result.revision);
      assert.ok(reason && !reason.startsWith("DEPLOY_FAILED"), String(reason));
      const tail = await logTail(client, result.deployment.id, result.revision.id, "deploy");
      assert.ok(
        tail.some((l) => l.line.includes("cannot start: no DATABASE")),
        JSON.stringify(tail),
      );
    });

    it("aborting stops the wait, not the revision", async () => {
      writeFileSync(join(dir, "server.js"), APP_FILES("3")["server.js"] ?? "");
      const abort = new AbortController();
      let revisionId = "";
      await assert.rejects(
        deploy(client, {
          directory: dir,
          signal: abort.signal,
          onEvent: (e) => {
            if (e.type === "queued") revisionId = e.revisionId;
            if (e.type === "status") abort.abort(new Error("enough"));
          },
        }),
        /enough/,
      );
      const dep = await findDeployment(client, "sdkapp");
      const rev = await waitForRevision(client, dep?.id ?? "", revisionId);
      assert.equal(rev.status, "DEPLOYED");
    });

    it("bad options are DeployInputError and send nothing", async () => {
      const noConfig = appDir({ "server.js": "" }, "no-config");
      const ignored = appDir({ ...APP_FILES("1"), ".slipwayignore": "*.json\n" }, "ignored-config");
      const cases: [Parameters<typeof deploy>[1], RegExp][] = [
        [{ name: "x" }, /Give a directory, image, template or repo/],
        [
          { directory: dir, template: "hello-http", name: "two" },
          /Give one source, not directory and template/,
        ],
        [{ directory: join(dir, "nope") }, /is not a directory/],
        [{ directory: noConfig }, /slipway\.json does not exist/],
        [{ directory: ignored }, /slipway\.json is left out of the upload by \.slipwayignore/],
        [{ repo: { url: "https://example.com/r.git", integrationId: "" }, name: "r" }, /integration/],
        [
          { template: "hello-http", name: "sdkapp" },
          /Deployment sdkapp deploys from internal_source, not internal_template/,
        ],
      ];
      for (const [opts, message] of cases)
        await assert.rejects(deploy(client, opts), (err: unknown) => {
          assert.ok(err instanceof DeployInputError, `${JSON.stringify(opts)}: ${String(err)}`);
          assert.match(err.message, message);
          return true;
        });
      const page = await unwrap(client.api.GET("/v2/deployments", { params: { query: { limit: 100 } } }));
      assert.deepEqual(page.resources.map((d) => d.name).sort(), ["sdk-broken", "sdk-template", "sdkapp"]);
    });
  },
  { env: { ...e2eEnv(git.root, appsPort), SLIPWAY_PUBLIC_URL: `http://127.0.0.1:${apiPort}` } },
);
