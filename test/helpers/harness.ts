import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe } from "node:test";
import { buildApp } from "../../src/app.ts";
import { loadConfig } from "../../src/config/load.ts";
import type { Config } from "../../src/config.ts";
import { Keyring } from "../../src/crypto/envelope.ts";
import type { Database } from "../../src/db/client.ts";
import type { App } from "../../src/http/types.ts";
import { insertApiKey, revokeApiKey } from "../../src/resources/api-keys/service.ts";
import { createListener } from "../../src/resources/listeners/service.ts";
import { createOrganization } from "../../src/resources/organizations/service.ts";
import { insertWorkspace } from "../../src/resources/workspaces/service.ts";
import { ProcessBoard } from "../../src/runtimes/board.ts";
import { createTestDatabase, DB_KINDS, type DbKind } from "./databases.ts";

export interface SeededKeys {
  /** Install-wide system admin key of the main organization. */
  system: string;
  admin: string;
  member: string;
  viewer: string;
  /** A member key bound to `workspace2`. */
  boundMember: string;
  revoked: string;
  /** A listener's own key (role listener): every route but its listener's two answers 403. */
  listener: string;
}

export interface TestContext {
  kind: DbKind;
  app: App;
  db: Database;
  /** postgres:// URL of this suite's database (postgres kind only). */
  dbUrl?: string;
  config: Config;
  keyring: Keyring;
  /** What the processes route reads; `startReconciler(ctx, …)` attaches its runtime here. */
  processes: ProcessBoard;
  orgId: string;
  /** The organization's default workspace (what unbound keys use without X-Tenant-Id). */
  workspaceId: string;
  workspace2Id: string;
  /** The listener of `keys.listener`, in the default workspace (namespace "seeded"). */
  listenerId: string;
  keys: SeededKeys;
  /** A second organization: its resources must be invisible (404) to the first one's keys. */
  other: { orgId: string; workspaceId: string; admin: string };
  /** Headers for a key, plus any extra. */
  headers(key: string, extra?: Record<string, string>): Record<string, string>;
  /** Everything the app logged so far (pino JSON lines). */
  readLogs(): string;
  close(): Promise<void>;
}

/** Environment for tests: in-memory defaults, quiet unless the test reads the log file. */
export function testConfig(env: Record<string, string> = {}): Config {
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-test-"));
  return loadConfig({
    SLIPWAY_DATA_DIR: dataDir,
    DATABASE_URL: "memory://",
    LOG_LEVEL: "info",
    SLIPWAY_RECONCILER: "false",
    // Suites fire thousands of requests with one key; the limit has its own test.
    SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
    // Auth-matrix suites send hundreds of 401s from one address; the limiter has its own suite.
    SLIPWAY_AUTH_FAIL_LIMIT_PER_MINUTE: "0",
    ...env,
  });
}

export interface ContextOptions {
  env?: Record<string, string>;
}

/** Builds the app on a fresh database and seeds two organizations with keys of every role. */
export async function createTestContext(kind: DbKind, opts: ContextOptions = {}): Promise<TestContext> {
  const { db, url, drop } = await createTestDatabase(kind);
  const config = testConfig(opts.env);
  const keyring = new Keyring(randomBytes(32));
  const logDir = join(tmpdir(), "slipway-test-logs");
  mkdirSync(logDir, { recursive: true });
  const logFile = join(logDir, `${kind}-${randomBytes(6).toString("hex")}.log`);
  // Written synchronously so that readLogs() sees every line a request produced.
  const stream = { write: (line: string) => appendFileSync(logFile, line) };
  const processes = new ProcessBoard();
  const app = await buildApp({ config, db, keyring, processes }, { logger: { level: "info", stream } });
  await app.ready();

  const org = await createOrganization(db.orm, { name: "acme", isSystem: true });
  const orgId = org.id;
  const workspaceId = org.default_workspace_id as string;
  const ws2 = await insertWorkspace(db.orm, orgId, "second");
  const mk = async (role: "admin" | "member" | "viewer", workspace: string | null = null) =>
    (await insertApiKey(db.orm, { organizationId: orgId, role, workspaceId: workspace })).key;
  const revokedKey = await insertApiKey(db.orm, { organizationId: orgId, role: "admin" });
  await revokeApiKey(db.orm, { organizationId: orgId, boundWorkspaceId: null }, revokedKey.id);
  const listener = await createListener(
    db.orm,
    { timeoutS: config.listeners.timeoutS },
    { organizationId: orgId, workspaceId },
    { compute_type: "k8s", compute_id: "seeded-cluster", compute_config: { k8s_namespaces: ["seeded"] } },
  );
  const listenerKey = await insertApiKey(db.orm, {
    organizationId: orgId,
    role: "listener",
    workspaceId,
    listenerId: listener.id,
  });
  const keys: SeededKeys = {
    system: org.api_key.key,
    admin: await mk("admin"),
    member: await mk("member"),
    viewer: await mk("viewer"),
    boundMember: await mk("member", ws2.id),
    revoked: revokedKey.key,
    listener: listenerKey.key,
  };
  const otherOrg = await createOrganization(db.orm, { name: "globex" });

  return {
    kind,
    app,
    db,
    dbUrl: url,
    config,
    keyring,
    processes,
    orgId,
    workspaceId,
    workspace2Id: ws2.id,
    listenerId: listener.id,
    keys,
    other: {
      orgId: otherOrg.id,
      workspaceId: otherOrg.default_workspace_id as string,
      admin: otherOrg.api_key.key,
    },
    headers: (key, extra = {}) => ({ "x-api-key": key, ...extra }),
    readLogs: () => {
      try {
        return readFileSync(logFile, "utf8");
      } catch {
        return "";
      }
    },
    close: async () => {
      await app.close();
      await drop();
      rmSync(config.dataDir, { recursive: true, force: true });
    },
  };
}

/** Holder whose `ctx` is set before the suite's tests run. */
export interface SuiteHandle {
  readonly ctx: TestContext;
}

/**
 * Runs a suite once per database kind (PGlite always; PostgreSQL when reachable, required in CI),
 * each on its own fresh database.
 */
export function forEachDatabase(
  title: string,
  body: (suite: SuiteHandle, kind: DbKind) => void,
  opts: ContextOptions = {},
): void {
  for (const kind of DB_KINDS) {
    describe(`${title} [${kind}]`, () => {
      let current: TestContext | undefined;
      const handle: SuiteHandle = {
        get ctx() {
          if (!current) throw new Error("test context used before setup");
          return current;
        },
      };
      before(async () => {
        current = await createTestContext(kind, opts);
      });
      after(async () => {
        await current?.close();
      });
      body(handle, kind);
    });
  }
}
