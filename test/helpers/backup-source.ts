import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { buildApp } from "../../src/app.ts";
import { tablesOf } from "../../src/backup/catalog.ts";
import { Keyring } from "../../src/crypto/envelope.ts";
import { type Database, rows } from "../../src/db/client.ts";
import type { App } from "../../src/http/types.ts";
import { createOrganization } from "../../src/resources/organizations/service.ts";
import { ProcessBoard } from "../../src/runtimes/board.ts";
import { createTestDatabase, type DbKind, type TestDatabase } from "./databases.ts";
import { testConfig } from "./harness.ts";

/** A server (in process) whose master key the test knows, with a system admin key. */
export interface Source {
  kind: DbKind;
  app: App;
  db: Database;
  key: string;
  masterKey: string;
  dataDir: string;
  close(): Promise<void>;
}

export async function makeSource(kind: DbKind): Promise<Source> {
  const test: TestDatabase = await createTestDatabase(kind);
  const masterKey = randomBytes(32).toString("base64");
  const config = testConfig();
  const app = await buildApp(
    { config, db: test.db, keyring: Keyring.fromBase64(masterKey), processes: new ProcessBoard() },
    { logger: false },
  );
  await app.ready();
  const org = await createOrganization(test.db.orm, { name: "acme", isSystem: true });
  return {
    kind,
    app,
    db: test.db,
    key: org.api_key.key,
    masterKey,
    dataDir: config.dataDir,
    close: async () => {
      await app.close();
      await test.drop();
    },
  };
}

export async function api<T = Record<string, unknown>>(
  s: Source,
  method: "GET" | "POST" | "PATCH" | "DELETE",
  url: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await s.app.inject({
    method,
    url,
    headers: { "x-api-key": s.key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.json() as T };
}

/** Downloads a backup through the API into a file; resolves with its path and the response headers. */
export async function downloadBackup(s: Source, key = s.key) {
  const res = await s.app.inject({ method: "GET", url: "/v1/backup", headers: { "x-api-key": key } });
  const file = join(mkdtempSync(join(tmpdir(), "slipway-backup-test-")), "backup.gz");
  writeFileSync(file, res.rawPayload);
  return { file, res };
}

/** Every table's rows as sorted JSON texts (times in UTC, generated columns aside): equal databases give equal maps. */
export async function contents(db: Database): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  await db.transaction(async (tx) => {
    await tx.orm.execute(sql`SET LOCAL TimeZone = 'UTC'`);
    for (const t of await tablesOf(tx.orm)) {
      const strip = t.generated.map((g) => ` - '${g}'`).join("");
      const list = await rows<{ r: string }>(
        tx.orm,
        sql.raw(`SELECT (to_jsonb(x)${strip})::text AS r FROM "${t.name}" x`),
      );
      out.set(t.name, list.map((row) => row.r).sort());
    }
  });
  return out;
}
