import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { keyId } from "../../src/crypto/envelope.ts";
import { runCli } from "../helpers/cli.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../helpers/databases.ts";
import { hostStatus, runSlipway, type SlipwayProcess } from "../helpers/process.ts";

const SERVING = /Slipway is serving (http:\/\/\S+) on/;
const SECRET = "cli-backup-secret-77";

async function api<T>(base: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as T };
}

interface Served {
  server: SlipwayProcess;
  base: string;
}

async function start(env: Record<string, string>): Promise<Served> {
  const server = runSlipway(["serve"], { PORT: "0", SLIPWAY_RECONCILER: "false", ...env });
  const [, base] = await server.waitFor(SERVING, 120_000);
  return { server, base: base as string };
}

/** What a restored server must answer as the original did: deployments with their secrets, keys, providers. */
async function view(base: string, key: string) {
  const deployments = await api<{ resources: { id: string; name: string }[] }>(
    base,
    key,
    "GET",
    "/v2/deployments",
  );
  assert.equal(deployments.status, 200, JSON.stringify(deployments.body));
  const secrets: Record<string, unknown> = {};
  for (const d of deployments.body.resources) {
    const s = await api(base, key, "GET", `/v2/deployments/${d.id}/secrets`);
    secrets[d.name] = s.status === 200 ? s.body : s.status;
  }
  const keys = await api<{ id: string; description: string }[]>(base, key, "GET", "/v1/api-keys");
  const providers = await api(base, key, "GET", "/v2/auth/providers");
  return {
    deployments: deployments.body.resources.map((d) => d.name).sort(),
    secrets,
    keys: keys.body.map((k) => `${k.id}:${k.description}`).sort(),
    providers: providers.body,
  };
}

/**
 * The operator's path, with real processes: `slipway backup` from a running server, `slipway
 * restore` into an empty data dir or PostgreSQL database, and a server started on what was
 * restored answering as the first one did; the embedded database moves to PostgreSQL and back.
 */
describe("slipway backup and slipway restore", () => {
  const dirs: string[] = [];
  const dbs: TestDatabase[] = [];
  const servers: SlipwayProcess[] = [];
  const tempDir = () => {
    const d = mkdtempSync(join(tmpdir(), "slipway-cli-backup-"));
    dirs.push(d);
    return d;
  };
  after(async () => {
    for (const s of servers) {
      s.proc.kill("SIGKILL");
      await s.exited;
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    for (const db of dbs) await db.drop();
  });
  const masterKey = randomBytes(32).toString("base64");
  const work = tempDir();
  let key = "";
  let original: Awaited<ReturnType<typeof view>>;
  const embedded = tempDir();

  it("backup --out: a checked file from a running server (system admin key only)", async () => {
    const s = await start({ SLIPWAY_DATA_DIR: embedded, SLIPWAY_MASTER_KEY: masterKey });
    servers.push(s.server);
    [, key = ""] = await s.server.waitFor(/^\s+(sw_[A-Za-z0-9_-]{43})$/m);
    for (const name of ["web", "worker"]) {
      const d = await api(s.base, key, "POST", "/v2/deployments", {
        name,
        source: "external_docker",
        source_revision_config: { image_uri: `registry.example/${name}:1` },
        secrets: [{ name: "TOKEN", value: `${SECRET}-${name}` }],
      });
      assert.equal(d.status, 201, JSON.stringify(d.body));
    }
    const member = await api<{ key: string }>(s.base, key, "POST", "/v1/api-keys", {
      role: "admin",
      description: "ops",
    });
    assert.equal(member.status, 201);
    const provider = await api(s.base, key, "POST", "/v2/auth/providers", {
      provider_id: "gh",
      name: "GitHub",
      client_id: "cid",
      client_secret: "provider-secret-1",
      auth_url: "https://github.com/login/oauth/authorize",
      token_url: "https://github.com/login/oauth/access_token",
    });
    assert.ok(provider.status === 200 || provider.status === 201, JSON.stringify(provider.body));
    original = await view(s.base, key);
    assert.equal(original.deployments.length, 2);

    const env = { SLIPWAY_URL: s.base, SLIPWAY_API_KEY: key };
    const file = join(work, "embedded.backup.gz");
    const done = await runCli(["backup", "--out", file], env);
    assert.equal(done.code, 0, done.stderr);
    assert.match(
      done.stdout,
      /Wrote .*embedded\.backup\.gz: \d+ rows, Slipway \d+\.\d+\.\d+, taken at .*\(checksum verified\)/,
    );
    const json = await runCli(["--json", "backup", "--out", join(work, "again.gz")], env);
    assert.equal(json.code, 0, json.stderr);
    assert.equal((JSON.parse(json.stdout) as { event: string }).event, "backup");
    // An organization admin that is not a system admin: refused, and no file.
    const refused = await runCli(["backup", "--out", join(work, "refused.gz")], {
      ...env,
      SLIPWAY_API_KEY: member.body.key,
    });
    assert.equal(refused.code, 3, refused.stderr);
    assert.equal(existsSync(join(work, "refused.gz")) || existsSync(join(work, "refused.gz.partial")), false);
    const usage = await runCli(["backup"], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--out FILE/);
    assert.equal(await s.server.stop(), 0);
  });

  it("restore: refused with another master key (naming the one it needs), then into an empty data dir", async () => {
    const file = join(work, "embedded.backup.gz");
    const target = tempDir();
    const other = randomBytes(32).toString("base64");
    const wrong = await runCli(["restore", file], { SLIPWAY_DATA_DIR: target, SLIPWAY_MASTER_KEY: other });
    assert.equal(wrong.code, 1, wrong.stderr);
    assert.match(wrong.stderr, new RegExp(`master key ${keyId(Buffer.from(masterKey, "base64"))}`));
    assert.match(wrong.stderr, /Nothing was written/);
    assert.deepEqual(readdirSync(target), [], "nothing in the data dir");
    const noFile = await runCli(["restore"], { SLIPWAY_DATA_DIR: target, SLIPWAY_MASTER_KEY: masterKey });
    assert.notEqual(noFile.code, 0);

    const ok = await runCli(["restore", file], { SLIPWAY_DATA_DIR: target, SLIPWAY_MASTER_KEY: masterKey });
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /Restored \d+ rows of \d+ tables into the data dir/);
    const again = await runCli(["restore", file], {
      SLIPWAY_DATA_DIR: target,
      SLIPWAY_MASTER_KEY: masterKey,
    });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /not empty.*--force/s);
    const forced = await runCli(["restore", file, "--force"], {
      SLIPWAY_DATA_DIR: target,
      SLIPWAY_MASTER_KEY: masterKey,
    });
    assert.equal(forced.code, 0, forced.stderr);

    const s = await start({ SLIPWAY_DATA_DIR: target, SLIPWAY_MASTER_KEY: masterKey });
    servers.push(s.server);
    assert.doesNotMatch(s.server.output(), /Bootstrap API key/, "the restored keys, no new one");
    assert.deepEqual(await view(s.base, key), original);
    assert.equal(await s.server.stop(), 0);
  });

  it("a restored server runs the active revisions again, building them from their stored sources", async () => {
    const dataDir = tempDir();
    const env = {
      SLIPWAY_DATA_DIR: dataDir,
      SLIPWAY_MASTER_KEY: masterKey,
      SLIPWAY_RECONCILER: "true",
      SLIPWAY_RECONCILER_POLL_MS: "300",
      SLIPWAY_SANDBOX: "none",
      SLIPWAY_APPS_PORT: "0",
    };
    const s = await start(env);
    servers.push(s.server);
    const [, own] = await s.server.waitFor(/^\s+(sw_[A-Za-z0-9_-]{43})$/m);
    const created = await api<{ id: string }>(s.base, own as string, "POST", "/v2/deployments", {
      name: "hello",
      source: "internal_template",
      source_revision_config: { repo_ref: "hello-http", framework_config_path: "slipway.json" },
      secrets: [{ name: "GREETING", value: "restored" }],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const served = async (server: SlipwayProcess, base: string) => {
      const [, port] = await server.waitFor(/Apps: +http:\/\/\S+:(\d+)/);
      for (let i = 0; i < 600; i++) {
        const d = await api<{ status: string; active_revision_id: string | null }>(
          base,
          own as string,
          "GET",
          `/v2/deployments/${created.body.id}`,
        );
        if (d.body.active_revision_id && d.body.status === "READY") {
          // fetch() may not set Host; node:http may.
          if ((await hostStatus(Number(port), "hello.localhost")) === 200) return d.body.active_revision_id;
        }
        await new Promise((r) => setTimeout(r, 500));
      }
      throw new Error(`hello never served:\n${server.output().slice(-2000)}`);
    };
    const active = await served(s.server, s.base);
    const file = join(work, "with-app.backup.gz");
    const done = await runCli(["backup", "--out", file], {
      SLIPWAY_URL: s.base,
      SLIPWAY_API_KEY: own as string,
    });
    assert.equal(done.code, 0, done.stderr);
    assert.equal(await s.server.stop(), 0);

    const target = tempDir();
    const restored = await runCli(["restore", file], { ...env, SLIPWAY_DATA_DIR: target });
    assert.equal(restored.code, 0, restored.stderr);
    const again = await start({ ...env, SLIPWAY_DATA_DIR: target });
    servers.push(again.server);
    assert.equal(await served(again.server, again.base), active, "the same revision, active again");
    const logs = await api<{ line: string }[]>(
      again.base,
      own as string,
      "GET",
      `/v2/deployments/${created.body.id}/revisions/${active}/logs?type=build&limit=1000`,
    );
    assert.ok(
      logs.body.some((l) => /build output is gone; building this revision again/.test(l.line)),
      "built again from its stored source (the backup holds no build output)",
    );
    assert.equal(await again.server.stop(), 0);
  });

  for (const kind of DB_KINDS.filter((k) => k === "postgres")) {
    it(`the embedded database moves to ${kind}, and back`, async () => {
      const pg = await createTestDatabase("postgres");
      dbs.push(pg);
      await pg.db.exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
      const url = pg.url as string;
      const pgDir = tempDir();
      const env = { DATABASE_URL: url, SLIPWAY_DATA_DIR: pgDir, SLIPWAY_MASTER_KEY: masterKey };
      const check = await runCli(["migrate", "--check"], env);
      assert.equal(check.code, 1, check.stderr);
      assert.match(check.stdout, /^Pending: 0001_identity\.sql, /);
      const moved = await runCli(["restore", join(work, "embedded.backup.gz")], env);
      assert.equal(moved.code, 0, moved.stderr);
      assert.match(moved.stdout, /into the database of DATABASE_URL, from a backup of Slipway .* \(pglite\)/);
      const upToDate = await runCli(["migrate", "--check"], env);
      assert.equal(upToDate.code, 0, upToDate.stderr);
      assert.equal(upToDate.stdout, "Database is up to date.\n");

      const s = await start(env);
      servers.push(s.server);
      assert.deepEqual(await view(s.base, key), original);
      // A write on PostgreSQL, then back to an embedded data dir.
      const d = await api(s.base, key, "POST", "/v2/deployments", {
        name: "on-postgres",
        source: "external_docker",
        source_revision_config: { image_uri: "registry.example/pg:1" },
      });
      assert.equal(d.status, 201);
      const expected = await view(s.base, key);
      const file = join(work, "postgres.backup.gz");
      const done = await runCli(["backup", "--out", file], { SLIPWAY_URL: s.base, SLIPWAY_API_KEY: key });
      assert.equal(done.code, 0, done.stderr);
      assert.equal(await s.server.stop(), 0);

      const back = tempDir();
      const restored = await runCli(["restore", file], {
        SLIPWAY_DATA_DIR: back,
        SLIPWAY_MASTER_KEY: masterKey,
      });
      assert.equal(restored.code, 0, restored.stderr);
      const e = await start({ SLIPWAY_DATA_DIR: back, SLIPWAY_MASTER_KEY: masterKey });
      servers.push(e.server);
      assert.deepEqual(await view(e.base, key), expected);
      assert.ok(expected.deployments.includes("on-postgres"));
      assert.equal(await e.server.stop(), 0);
    });
  }
});
