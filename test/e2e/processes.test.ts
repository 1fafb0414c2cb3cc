import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { sql } from "drizzle-orm";
import { rows } from "../../src/db/client.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../helpers/databases.ts";
import { runSlipway, type SlipwayProcess } from "../helpers/process.ts";
import { waitForRevision } from "../helpers/wait.ts";
import { AppRepo, appGet, freePort, gitRoot } from "./stack.ts";

/**
 * Slipway processes sharing one PostgreSQL: work survives a process killed mid-build, and two
 * processes never build the same revision. Real `slipway serve` children, real git, real apps.
 */
const git = gitRoot();
const repo = new AppRepo(git.team, "svc");
repo.commit({ version: "1" });
const masterKey = randomBytes(32).toString("base64");
const apiKey = `sw_e2e_${randomBytes(16).toString("hex")}`;

interface Node {
  proc: SlipwayProcess;
  api: string;
  appsPort: number;
  dataDir: string;
}

async function startNode(
  dbUrl: string,
  dataDir = mkdtempSync(join(tmpdir(), "slipway-node-")),
  env: Record<string, string> = {},
): Promise<Node> {
  const port = await freePort();
  const appsPort = await freePort();
  const proc = runSlipway(["serve"], {
    DATABASE_URL: dbUrl,
    SLIPWAY_DATA_DIR: dataDir,
    SLIPWAY_MASTER_KEY: masterKey,
    SLIPWAY_BOOTSTRAP_API_KEY: apiKey,
    PORT: String(port),
    SLIPWAY_APPS_PORT: String(appsPort),
    SLIPWAY_RECONCILER_LEASE_MS: "1500",
    SLIPWAY_RECONCILER_POLL_MS: "200",
    SLIPWAY_HEALTH_TIMEOUT_MS: "5000",
    SLIPWAY_LOCAL_GIT_ROOTS: git.root,
    // These builds signal the test through host files (gates, one file per build), which a sandbox
    // hides; the sandbox's own kill -9 and restart behaviour is in test/runtime/sandbox.test.ts.
    SLIPWAY_SANDBOX: "none",
    ...env,
  });
  const [, url] = await proc.waitFor(/Slipway is serving (\S+)/, 60_000);
  return { proc, api: url ?? "", appsPort, dataDir };
}

async function call<T>(node: Node, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${node.api}${path}`, {
    method,
    headers: { "x-api-key": apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status}: ${text}`);
  return JSON.parse(text) as T;
}

async function deploy(
  node: Node,
  name: string,
  installCommand: string,
  repoName = "svc",
): Promise<{ id: string; rid: string }> {
  const integrations = await call<{ id: string; path: string | null }[]>(
    node,
    "GET",
    "/v1/integrations/forge/codehost/install",
  );
  const integrationId =
    integrations.find((i) => i.path === git.team)?.id ??
    (
      await call<{ id: string }>(node, "POST", "/v1/integrations/forge/codehost", {
        kind: "local_git",
        path: git.team,
      })
    ).id;
  const repos = await call<{ name: string; url: string }[]>(
    node,
    "GET",
    `/v1/integrations/forge/codehost/${integrationId}/repos`,
  );
  const repoUrl = repos.find((r) => r.name === repoName)?.url;
  const created = await call<{ id: string; latest_revision_id: string }>(node, "POST", "/v2/deployments", {
    name,
    source: "codehost",
    source_config: { integration_id: integrationId, repo_url: repoUrl, install_command: installCommand },
    source_revision_config: { repo_ref: "main", framework_config_path: "slipway.json" },
    secrets: [{ name: "GREETING", value: `hello from ${name}` }],
  });
  return { id: created.id, rid: created.latest_revision_id };
}

/** Commits everything in `dir` as the suite's author. */
function commitAll(dir: string, message: string): void {
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: "Slipway Test",
    GIT_AUTHOR_EMAIL: "test@slipway.invalid",
    GIT_COMMITTER_NAME: "Slipway Test",
    GIT_COMMITTER_EMAIL: "test@slipway.invalid",
  };
  execFileSync("git", ["add", "-A"], { cwd: dir, env });
  execFileSync("git", ["commit", "-q", "-m", message], { cwd: dir, env });
}

const history = async (db: TestDatabase, rid: string) => {
  const [row] = await rows<{ status_history: { status: string }[] }>(
    db.db.orm,
    sql`SELECT status_history FROM revisions WHERE id = ${rid}`,
  );
  return (row?.status_history ?? []).map((h) => h.status);
};

describe("end to end: Slipway processes on one PostgreSQL", { skip: !DB_KINDS.includes("postgres") }, () => {
  let db: TestDatabase;
  const nodes: Node[] = [];

  before(async () => {
    db = await createTestDatabase("postgres");
  });
  after(async () => {
    for (const n of nodes) await n.proc.stop();
    await db.drop();
  });

  it("kill -9 of a Slipway process mid-build: a new process resumes the revision and finishes it", async () => {
    const gate = join(git.root, "resume-gate");
    const first = await startNode(db.url ?? "");
    nodes.push(first);
    const { id, rid } = await deploy(first, "resumed", `while [ ! -f ${gate} ]; do sleep 0.05; done`);
    assert.equal(await waitForRevision(db.db, rid, { until: ["BUILDING"], timeoutMs: 30_000 }), "BUILDING");
    first.proc.proc.kill("SIGKILL");
    await first.proc.exited;
    writeFileSync(gate, "go");

    const second = await startNode(db.url ?? "", first.dataDir);
    nodes.push(second);
    assert.equal(await waitForRevision(db.db, rid, { timeoutMs: 60_000 }), "DEPLOYED");
    const h = await history(db, rid);
    assert.deepEqual(h.slice(0, 4), ["QUEUED", "AWAITING_BUILD", "BUILDING", "UNKNOWN"]);
    assert.equal(h.at(-1), "DEPLOYED");
    const d = await call<{ source_config: { custom_url: string } }>(second, "GET", `/v2/deployments/${id}`);
    const answer = await appGet(d.source_config.custom_url);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.greeting, "hello from resumed");
  });

  it("a restarted process brings the active revision back without rebuilding it", async () => {
    const before = nodes.pop();
    assert.ok(before);
    await before.proc.stop();
    const [dep] = await rows<{ id: string; active_revision_id: string }>(
      db.db.orm,
      sql`SELECT id, active_revision_id FROM deployments WHERE name = 'resumed'`,
    );
    assert.ok(dep);
    const buildLines = async () =>
      (
        await rows<{ n: number }>(
          db.db.orm,
          sql`SELECT count(*)::int AS n FROM revision_logs WHERE revision_id = ${dep.active_revision_id} AND stream = 'build'`,
        )
      )[0]?.n;
    const linesBefore = await buildLines();
    const restarted = await startNode(db.url ?? "", before.dataDir);
    nodes.push(restarted);
    const d = await call<{ source_config: { custom_url: string } }>(
      restarted,
      "GET",
      `/v2/deployments/${dep.id}`,
    );
    const url = d.source_config.custom_url.replace(/:\d+$/, `:${restarted.appsPort}`);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const answer = await appGet(url).catch(() => undefined);
      if (answer?.status === 200) {
        assert.equal(answer.body.greeting, "hello from resumed");
        break;
      }
      assert.ok(Date.now() < deadline, "the app came back");
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(await buildLines(), linesBefore, "no build ran");
  });

  it("an app that listens on a hard-coded port fails long before the health timeout, naming that port and $PORT; the previous revision keeps serving", async () => {
    // A health timeout far beyond the wait below: only the early verdict ends the deploy in time.
    const node = await startNode(db.url ?? "", undefined, { SLIPWAY_HEALTH_TIMEOUT_MS: "300000" });
    nodes.push(node);
    const ported = new AppRepo(git.team, "ported");
    ported.commit({ version: "1" });
    const { id, rid } = await deploy(node, "ported", "true", "ported");
    assert.equal(await waitForRevision(db.db, rid, { timeoutMs: 60_000 }), "DEPLOYED");

    const wrong = await freePort();
    writeFileSync(
      join(ported.dir, "server.js"),
      `console.log("starting; PORT is " + process.env.PORT);
require("node:http").createServer((req, res) => res.end("wrong")).listen(${wrong});
`,
    );
    commitAll(ported.dir, "listen on a hard-coded port");
    const patched = await call<{ latest_revision_id: string }>(node, "PATCH", `/v2/deployments/${id}`, {
      source_revision_config: { repo_ref: "main", framework_config_path: "slipway.json" },
    });
    const next = patched.latest_revision_id;
    assert.notEqual(next, rid);
    assert.equal(await waitForRevision(db.db, next, { timeoutMs: 90_000 }), "DEPLOY_FAILED");
    const rev = await call<{ status_message: string | null }>(
      node,
      "GET",
      `/v2/deployments/${id}/revisions/${next}`,
    );
    const logs = await call<{ line: string }[]>(
      node,
      "GET",
      `/v2/deployments/${id}/revisions/${next}/logs?type=deploy&limit=5000`,
    );
    const given = logs.map((l) => /starting; PORT is (\d+)/.exec(l.line)?.[1]).find(Boolean);
    assert.ok(given, JSON.stringify(logs));
    assert.match(
      rev.status_message ?? "",
      new RegExp(
        `^process web\\.1 listens on port ${wrong}, not on \\$PORT \\(${given}\\): make it listen on the port in the PORT environment variable$`,
      ),
    );
    const d = await call<{ active_revision_id: string; source_config: { custom_url: string } }>(
      node,
      "GET",
      `/v2/deployments/${id}`,
    );
    assert.equal(d.active_revision_id, rid);
    const answer = await appGet(d.source_config.custom_url);
    assert.equal(answer.status, 200);
    assert.equal(answer.body.version, "1");
  });

  it("two processes never build the same revision twice", async () => {
    const builds = mkdtempSync(join(tmpdir(), "slipway-builds-"));
    const a = nodes.at(-1) ?? (await startNode(db.url ?? ""));
    const b = await startNode(db.url ?? "");
    nodes.push(b);
    // Each build appends a line to a file named after its revision directory.
    const install = `echo "$PPID" >> ${builds}/$(basename "$(dirname "$PWD")")`;
    const made: { id: string; rid: string }[] = [];
    for (let i = 0; i < 6; i++) made.push(await deploy(i % 2 === 0 ? a : b, `pair-${i}`, install));
    for (const m of made)
      assert.equal(await waitForRevision(db.db, m.rid, { timeoutMs: 60_000 }), "DEPLOYED");
    const files = readdirSync(builds).sort();
    assert.deepEqual(files, made.map((m) => m.rid).sort(), "one build directory per revision");
    for (const f of files) {
      assert.equal(
        readFileSync(join(builds, f), "utf8").trim().split("\n").length,
        1,
        `revision ${f} built once`,
      );
    }
    for (const m of made) {
      assert.equal((await history(db, m.rid)).filter((s) => s === "BUILDING").length, 1);
    }
  });
});
