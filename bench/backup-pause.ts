import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildApp } from "../src/app.ts";
import { loadConfig } from "../src/config/load.ts";
import { Keyring } from "../src/crypto/envelope.ts";
import { openDatabase } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { createOrganization } from "../src/resources/organizations/service.ts";
import { ProcessBoard } from "../src/runtimes/board.ts";

/**
 * `npm run bench -- --backup`: the write pause of a backup on the embedded database (PGlite has
 * one session, so writers wait while the snapshot's transaction is open). An on-disk PGlite holds
 * N deployments (each with a revision and a secret); four writers create deployments without
 * pause while GET /v1/backup runs; reported: the snapshot's transaction time, the backup's whole
 * time and size, and the slowest write during it against the slowest write without a backup.
 */
async function measure(count: number): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-bench-backup-"));
  const db = await openDatabase({ kind: "pglite", dataDir: join(dataDir, "db") });
  await migrate(db);
  const config = loadConfig({
    SLIPWAY_DATA_DIR: dataDir,
    LOG_LEVEL: "silent",
    SLIPWAY_RECONCILER: "false",
    SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
  });
  const app = await buildApp(
    { config, db, keyring: new Keyring(randomBytes(32)), processes: new ProcessBoard() },
    { logger: false },
  );
  await app.ready();
  const { api_key } = await createOrganization(db.orm, { name: "bench", isSystem: true });
  const headers = { "x-api-key": api_key.key, "content-type": "application/json" };
  let n = 0;
  const create = async () => {
    const started = performance.now();
    const res = await app.inject({
      method: "POST",
      url: "/v2/deployments",
      headers,
      payload: JSON.stringify({
        name: `d-${n++}`,
        source: "external_docker",
        source_revision_config: { image_uri: "registry.example/app:1" },
        secrets: [{ name: "TOKEN", value: randomBytes(16).toString("hex") }],
      }),
    });
    if (res.statusCode !== 201) throw new Error(`create: ${res.statusCode} ${res.body}`);
    return performance.now() - started;
  };
  while (n < count) await Promise.all([create(), create(), create(), create()]);
  const writersFor = async (until: () => boolean) => {
    let slowest = 0;
    const writer = async () => {
      while (!until()) slowest = Math.max(slowest, await create());
    };
    await Promise.all([writer(), writer(), writer(), writer()]);
    return slowest;
  };
  let quietDone = false;
  const quietTimer = setTimeout(() => {
    quietDone = true;
  }, 3000);
  const quiet = await writersFor(() => quietDone);
  clearTimeout(quietTimer);
  let backupDone = false;
  const started = performance.now();
  const during = writersFor(() => backupDone);
  const res = await app.inject({ method: "GET", url: "/v1/backup", headers: { "x-api-key": api_key.key } });
  const total = performance.now() - started;
  backupDone = true;
  const slowest = await during;
  await app.close();
  await db.close();
  rmSync(dataDir, { recursive: true, force: true });
  return `| ${count} | ${res.headers["x-slipway-backup-rows"]} | ${(res.rawPayload.length / 1e6).toFixed(1)} MB | ${res.headers["x-slipway-backup-transaction-ms"]} ms | ${Math.round(total)} ms | ${Math.round(slowest)} ms | ${Math.round(quiet)} ms |`;
}

export async function backupPauseBench(): Promise<void> {
  console.log(
    "| deployments | rows | backup size | snapshot transaction (the pause) | whole backup | slowest write during it | slowest write without |",
  );
  console.log("|---|---|---|---|---|---|---|");
  for (const count of [1000, 5000]) console.log(await measure(count));
}
