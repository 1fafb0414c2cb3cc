import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import pg from "pg";
import { buildApp } from "../src/app.ts";
import { bootstrap } from "../src/bootstrap.ts";
import { loadConfig } from "../src/config.ts";
import { Keyring } from "../src/crypto/envelope.ts";
import { type Database, openDatabase, rows } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { listFilter } from "../src/resources/deployments/list.ts";
import type { ListDeploymentsQuery } from "../src/resources/deployments/schema.ts";
import { explainDeploymentPage } from "../src/resources/deployments/store.ts";

/**
 * `npm run bench -- --scale`: PostgreSQL with SCALE_DEPLOYMENTS (1M) deployments, each with a
 * revision, two secrets and tags (env: 3 values on every row, team: 1000 values on every row,
 * canary: 1 value on 1 row in 10k), loaded by SQL; then p50/p95/p99 of list queries through the
 * real app (auth, validation, the stored records) and EXPLAIN ANALYZE of every filter and some
 * combinations. The secrets' envelopes are placeholders (lists never open them).
 */
const total = Number(process.env.SCALE_DEPLOYMENTS ?? 1_000_000);
const runs = Number(process.env.SCALE_RUNS ?? 100);
const adminUrl = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

async function freshDatabase(): Promise<string> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query("DROP DATABASE IF EXISTS slipway_scale WITH (FORCE)");
  await admin.query("CREATE DATABASE slipway_scale");
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = "/slipway_scale";
  return u.toString();
}

/** Deterministic ids, so rows of different tables refer to each other without lookups. */
const id = (kind: string, n: string) => `md5('${kind}' || ${n})::uuid`;

async function load(db: Database, workspaceId: string, organizationId: string): Promise<number> {
  const started = performance.now();
  const content = JSON.stringify({
    source_revision_config: {
      repo_ref: null,
      framework_config_path: null,
      image_uri: "registry.example/app:1",
    },
    resource_spec: { min_scale: 1, max_scale: 2, cpu: 0.5, memory_mb: 512 },
    secret_references: null,
    secrets: [
      { name: "API_TOKEN", value: "********" },
      { name: "SIGNING_KEY", value: "********" },
    ],
  });
  const script = `
    BEGIN;
    SET LOCAL synchronous_commit = off;
    -- Foreign keys are not checked while loading (every reference is made consistent by construction).
    SET LOCAL session_replication_role = replica;
    INSERT INTO deployments (id, organization_id, workspace_id, name, source, deployment_type, source_config,
                             image_version, status, remote_reconciled, latest_revision_id, active_revision_id,
                             revision_count, latest_revision_content, created_at, updated_at)
    SELECT ${id("d", "g")}, '${organizationId}', '${workspaceId}', 'app-' || lpad(g::text, 7, '0'), 'external_docker',
           (ARRAY['dev', 'prod', 'dev_free'])[1 + g % 3], '{"custom_url": null}'::jsonb, '1.0.' || (g % 10),
           CASE WHEN g % 100 = 0 THEN 'UNKNOWN' ELSE 'READY' END, g % 1000 = 0,
           ${id("r", "g")}, ${id("r", "g")}, 1, '${content}'::jsonb,
           now() - make_interval(secs => g), now() - make_interval(secs => g)
      FROM generate_series(1, ${total}) g;
    INSERT INTO revisions (id, deployment_id, seq, status, source, source_revision_config, resource_spec,
                           status_history, created_at, updated_at)
    SELECT ${id("r", "g")}, ${id("d", "g")}, 1, 'DEPLOYED', 'external_docker',
           '{"image_uri": "registry.example/app:1"}'::jsonb, '{"min_scale": 1}'::jsonb,
           jsonb_build_array(jsonb_build_object('status', 'DEPLOYED', 'at', '2026-01-01T00:00:00.000Z')),
           now() - make_interval(secs => g), now() - make_interval(secs => g)
      FROM generate_series(1, ${total}) g;
    INSERT INTO revision_secrets (revision_id, deployment_id, name, value_enc, position)
    SELECT ${id("r", "g")}, ${id("d", "g")}, s.name, 'sw1.placeholder.x.y', s.position
      FROM generate_series(1, ${total}) g, (VALUES ('API_TOKEN', 0), ('SIGNING_KEY', 1)) s(name, position);
    INSERT INTO tag_keys (id, workspace_id, key)
    SELECT ${id("k", "k")}, '${workspaceId}', k FROM unnest(ARRAY['env', 'team', 'canary']) k;
    INSERT INTO tag_values (id, tag_key_id, value)
    SELECT ${id("env", "i::text")}, ${id("k", "'env'")}, (ARRAY['prod', 'dev', 'staging'])[i + 1]
      FROM generate_series(0, 2) i
    UNION ALL SELECT ${id("team", "i::text")}, ${id("k", "'team'")}, 'team-' || i FROM generate_series(0, 999) i
    UNION ALL SELECT ${id("canary", "'0'")}, ${id("k", "'canary'")}, 'yes';
    INSERT INTO deployment_tags (deployment_id, tag_value_id)
    SELECT ${id("d", "g")}, ${id("env", "(g % 3)::text")} FROM generate_series(1, ${total}) g
    UNION ALL SELECT ${id("d", "g")}, ${id("team", "(g % 1000)::text")} FROM generate_series(1, ${total}) g
    UNION ALL SELECT ${id("d", "g")}, ${id("canary", "'0'")} FROM generate_series(1, ${total}) g WHERE g % 10000 = 0;
    COMMIT;
    ANALYZE;`;
  await db.exec(script);
  return (performance.now() - started) / 1000;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

interface Case {
  label: string;
  query: Record<string, string>;
  runs?: number;
}

export async function scaleBench(): Promise<void> {
  const url = await freshDatabase();
  const key = `sw_bench_${randomBytes(16).toString("hex")}`;
  const config = loadConfig({
    DATABASE_URL: url,
    SLIPWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "slipway-scale-")),
    SLIPWAY_RECONCILER: "false",
    SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
    LOG_LEVEL: "silent",
    PORT: "0",
  });
  const db = await openDatabase(config.database, { poolSize: 4 });
  try {
    await migrate(db);
    await bootstrap(db, key);
    const [ws] = await rows<{ id: string; organization_id: string }>(
      db.orm,
      sql`SELECT id, organization_id FROM workspaces ORDER BY created_at LIMIT 1`,
    );
    if (!ws) throw new Error("no workspace after bootstrap");
    console.log(`[scale] loading ${total} deployments (revisions, 2 secrets each, tags) by SQL…`);
    const seconds = await load(db, ws.id, ws.organization_id);
    console.log(`[scale] loaded in ${seconds.toFixed(1)} s`);

    const app = await buildApp({ config, db, keyring: new Keyring(randomBytes(32)) }, { logger: false });
    const tag = (kind: string, n: string) =>
      rows<{ id: string }>(db.orm, sql.raw(`SELECT ${id(kind, `'${n}'`)}::text AS id`)).then(
        (r) => r[0]?.id ?? "",
      );
    const [prod, dev, team42, canary] = await Promise.all([
      tag("env", "0"),
      tag("env", "1"),
      tag("team", "42"),
      tag("canary", "0"),
    ]);
    const someIds = await rows<{ id: string }>(
      db.orm,
      sql`SELECT id::text AS id FROM deployments ORDER BY md5(id::text) LIMIT 20`,
    );
    const cases: Case[] = [
      { label: "list (20)", query: {} },
      { label: "name", query: { name: "app-0424242" } },
      { label: "name_contains rare", query: { name_contains: "0424242" } },
      { label: "name_contains common", query: { name_contains: "app-0" } },
      { label: "status rare (UNKNOWN, 1%)", query: { status: "UNKNOWN" } },
      { label: "status common (READY)", query: { status: "READY" } },
      { label: "status two values", query: { status: "UNKNOWN,AWAITING_DELETE" } },
      { label: "remote_reconciled=true (0.1%)", query: { remote_reconciled: "true" } },
      { label: "image_version", query: { image_version: "1.0.7" } },
      { label: "deployment_type", query: { deployment_type: "prod" } },
      { label: "deployment_ids (20)", query: { deployment_ids: someIds.map((r) => r.id).join(",") } },
      { label: "tag env=prod (333k rows)", query: { tag_value_ids: prod } },
      { label: "tag env=prod|dev (same key)", query: { tag_value_ids: `${prod},${dev}` } },
      { label: "tag team=42 (1k rows)", query: { tag_value_ids: team42 } },
      { label: "tag canary (100 rows)", query: { tag_value_ids: canary } },
      { label: "tags env=prod + team=42", query: { tag_value_ids: `${prod},${team42}` } },
      { label: "tags env=prod + canary", query: { tag_value_ids: `${prod},${canary}` } },
      { label: "status rare + tag env=prod", query: { status: "UNKNOWN", tag_value_ids: prod } },
      { label: "name_contains + deployment_type", query: { name_contains: "42", deployment_type: "dev" } },
      { label: "image_version + tag team=42", query: { image_version: "1.0.2", tag_value_ids: team42 } },
      { label: "offset 10k", query: { offset: "10000" } },
      { label: "offset 500k", query: { offset: "500000" }, runs: Math.min(runs, 30) },
    ];

    const headers = { "x-api-key": key };
    const results: string[] = ["| query | p50 ms | p95 ms | p99 ms | rows |", "|---|---:|---:|---:|---:|"];
    for (const c of cases) {
      const qs = new URLSearchParams({ limit: "20", ...c.query }).toString();
      const times: number[] = [];
      let count = 0;
      for (let i = 0; i < (c.runs ?? runs) + 3; i++) {
        const t0 = performance.now();
        const res = await app.inject({ method: "GET", url: `/v2/deployments?${qs}`, headers });
        const ms = performance.now() - t0;
        if (res.statusCode !== 200) throw new Error(`${c.label}: ${res.statusCode} ${res.body}`);
        if (i >= 3) times.push(ms);
        count = (res.json() as { resources: unknown[] }).resources.length;
      }
      times.sort((a, b) => a - b);
      const f = (q: number) => quantile(times, q).toFixed(1);
      results.push(`| ${c.label} | ${f(0.5)} | ${f(0.95)} | ${f(0.99)} | ${count} |`);
    }
    console.log(`\n${total} deployments, ${runs} sequential requests per query (app.inject, limit 20)\n`);
    console.log(results.join("\n"));

    console.log(
      "\nEXPLAIN ANALYZE of the page query (the ids of the page; its records are then read by id):",
    );
    for (const c of cases) {
      const q = {
        limit: 20,
        offset: Number(c.query.offset ?? 0),
        ...c.query,
      } as unknown as ListDeploymentsQuery;
      if (c.query.remote_reconciled !== undefined) q.remote_reconciled = c.query.remote_reconciled === "true";
      const filter = await listFilter(db, q);
      if (filter === null) continue;
      console.log(`\n-- ${c.label}`);
      console.log(await explainDeploymentPage(db, ws.id, filter, 20, q.offset));
    }
    await app.close();
  } finally {
    await db.close();
  }
}
