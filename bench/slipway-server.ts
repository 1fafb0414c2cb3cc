import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { buildApp } from "../src/app.ts";
import { bootstrap } from "../src/bootstrap.ts";
import { loadConfig } from "../src/config/load.ts";
import { Keyring } from "../src/crypto/envelope.ts";
import { openDatabase, rows } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";

/**
 * Slipway for the benchmark: the real app (auth, validation, serialization, database) on the
 * database named by DATABASE_URL, seeded with BENCH_DEPLOYMENTS deployments. Prints
 * {url, loggedUrl, key, getId, patchIds, deployments, workspaceId} as one JSON line, then serves
 * until SIGTERM.
 */
const total = Number(process.env.BENCH_DEPLOYMENTS ?? 10_000);
const key = `sw_bench_${randomBytes(16).toString("hex")}`;
const dataDir = mkdtempSync(join(tmpdir(), "slipway-bench-"));
const config = loadConfig({
  DATABASE_URL: process.env.DATABASE_URL ?? "memory://",
  SLIPWAY_DATA_DIR: dataDir,
  SLIPWAY_RECONCILER: "false",
  SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
  LOG_LEVEL: "silent",
  PORT: "0",
});
const db = await openDatabase(config.database, { poolSize: 10 });
await migrate(db);
await bootstrap(db, key);
const keyring = new Keyring(randomBytes(32));
const app = await buildApp({ config, db, keyring }, { logger: false });

async function create(name: string): Promise<string> {
  const res = await app.inject({
    method: "POST",
    url: "/v2/deployments",
    headers: { "x-api-key": key, "content-type": "application/json" },
    payload: {
      name,
      source: "external_docker",
      source_config: { resource_spec: { min_scale: 1, max_scale: 2, cpu: 0.5, memory_mb: 512 } },
      source_revision_config: { image_uri: "registry.example/app:1.0.0" },
      secrets: [
        { name: "API_TOKEN", value: "t0ken" },
        { name: "SIGNING_KEY", value: "s1gn" },
      ],
      image_version: "1.0.0",
      deployment_type: "prod",
    },
  });
  if (res.statusCode !== 201) throw new Error(`seed create failed: ${res.statusCode} ${res.body}`);
  return (res.json() as { id: string }).id;
}

// A few real deployments through the API (GET and PATCH targets), then the rest copied in SQL,
// each with its own first revision, so lists page through 10k realistic rows.
const getId = await create("bench-target");
const patchIds: string[] = [];
for (let i = 0; i < 20; i++) patchIds.push(await create(`bench-patch-${i}`));
const copies = Math.max(0, total - 1 - patchIds.length);
await rows(
  db.orm,
  sql`INSERT INTO deployments (organization_id, workspace_id, name, source, deployment_type, source_config,
                               image_version, status, revision_count, created_at, updated_at)
      SELECT d.organization_id, d.workspace_id, 'bench-' || lpad(g::text, 6, '0'), d.source,
             (ARRAY['dev', 'prod', 'dev_free'])[1 + g % 3], d.source_config, '1.0.' || (g % 10), d.status, 1,
             now() - make_interval(secs => g), now() - make_interval(secs => g)
        FROM deployments d, generate_series(1, ${copies}::int) g
       WHERE d.id = ${getId}::uuid`,
);
await rows(
  db.orm,
  sql`INSERT INTO revisions (deployment_id, seq, status, source, source_revision_config, resource_spec, status_history)
      SELECT d.id, 1, 'DEPLOYED', d.source, r.source_revision_config, r.resource_spec, r.status_history
        FROM deployments d, revisions r
       WHERE d.name LIKE 'bench-0%' AND r.id = (SELECT latest_revision_id FROM deployments WHERE id = ${getId}::uuid)`,
);
await rows(
  db.orm,
  sql`UPDATE deployments d SET latest_revision_id = r.id, active_revision_id = r.id,
                               latest_revision_content = t.latest_revision_content
        FROM revisions r, deployments t
       WHERE r.deployment_id = d.id AND d.name LIKE 'bench-0%' AND t.id = ${getId}::uuid`,
);
// As autovacuum leaves a table after such an insert (it vacuums after 1000 + 20% new rows): with
// the visibility map set, a list page's index scan reads no heap for the rows it skips.
await db.exec("VACUUM ANALYZE");
const [count] = await rows<{ n: number }>(db.orm, sql`SELECT count(*)::int AS n FROM deployments`);
const [target] = await rows<{ workspace_id: string }>(
  db.orm,
  sql`SELECT workspace_id FROM deployments WHERE id = ${getId}::uuid`,
);

// The same app with logging as `npm start` has it (info: a line per request and per response),
// written to a file as a service manager would keep it; on its own port, over the same database.
const logged = await buildApp(
  { config, db, keyring },
  { logger: { level: "info", file: join(dataDir, "server.log") } },
);

async function listen(a: typeof app): Promise<string> {
  await a.listen({ port: 0, host: "127.0.0.1" });
  const address = a.server.address();
  if (typeof address !== "object" || address === null) throw new Error("no address");
  return `http://127.0.0.1:${address.port}`;
}

const url = await listen(app);
const loggedUrl = await listen(logged);
console.log(
  JSON.stringify({
    url,
    loggedUrl,
    key,
    getId,
    patchIds,
    deployments: count?.n,
    workspaceId: target?.workspace_id,
  }),
);
process.on("SIGTERM", () => {
  void Promise.all([app.close(), logged.close()])
    .then(() => db.close())
    .then(() => process.exit(0));
});
