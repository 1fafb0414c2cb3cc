import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sql } from "drizzle-orm";
import { buildApp } from "../src/app.ts";
import { bootstrap } from "../src/bootstrap.ts";
import { loadConfig } from "../src/config/load.ts";
import { explainDeploymentPage } from "../src/core/deployments/list-store.ts";
import { Keyring } from "../src/crypto/envelope.ts";
import { openDatabase, rows } from "../src/db/client.ts";
import { migrate } from "../src/db/migrate.ts";
import { listFilter } from "../src/resources/deployments/list.ts";
import type { ListDeploymentsQuery } from "../src/resources/deployments/schema.ts";
import { dropDatabase, freshDatabase } from "./databases.ts";
import { idOf, loadScale } from "./scale-load.ts";

/**
 * `npm run bench -- --scale`: PostgreSQL with SCALE_DEPLOYMENTS (1M) deployments, each with a
 * revision, two secrets and tags (env: 3 values on every row, team: 1000 values on every row,
 * canary: 1 value on 1 row in 10k), loaded by SQL (scale-load.ts); then p50/p95/p99 of list
 * queries over HTTP against the real app listening on a port (auth, validation, stored records),
 * and EXPLAIN (ANALYZE, BUFFERS) of every filter's page query. The report goes to stdout and to
 * bench/results/scale-<time>.md. The secrets' envelopes are placeholders (lists never open them).
 */
const total = Number(process.env.SCALE_DEPLOYMENTS ?? 1_000_000);
const runs = Number(process.env.SCALE_RUNS ?? 100);
const jobs = Number(process.env.SCALE_LOAD_JOBS ?? 2);
const resultsDir = join(dirname(fileURLToPath(import.meta.url)), "results");

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;

interface Case {
  label: string;
  query: Record<string, string>;
  runs?: number;
}

function cases(someIds: string[]): Case[] {
  const [prod, dev, team42, canary] = [idOf("env", 0), idOf("env", 1), idOf("team", 42), idOf("canary", 0)];
  return [
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
    { label: "deployment_ids (20)", query: { deployment_ids: someIds.join(",") } },
    { label: "tag env=prod (333k rows)", query: { tag_value_ids: prod } },
    { label: "tag env=prod|dev (one key, two values)", query: { tag_value_ids: `${prod},${dev}` } },
    { label: "tag team=42 (1k rows)", query: { tag_value_ids: team42 } },
    { label: "tag canary (100 rows)", query: { tag_value_ids: canary } },
    { label: "tags env=prod + team=42 (two keys)", query: { tag_value_ids: `${prod},${team42}` } },
    { label: "tags env=prod + canary (two keys)", query: { tag_value_ids: `${prod},${canary}` } },
    { label: "status rare + tag env=prod", query: { status: "UNKNOWN", tag_value_ids: prod } },
    { label: "name_contains + deployment_type", query: { name_contains: "42", deployment_type: "dev" } },
    { label: "image_version + tag team=42", query: { image_version: "1.0.2", tag_value_ids: team42 } },
    { label: "offset 10k", query: { offset: "10000" } },
    { label: "offset 500k", query: { offset: "500000" }, runs: Math.min(runs, 30) },
  ];
}

export async function scaleBench(): Promise<void> {
  const url = await freshDatabase("slipway_scale");
  const key = `sw_bench_${randomBytes(16).toString("hex")}`;
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-scale-"));
  const config = loadConfig({
    DATABASE_URL: url,
    SLIPWAY_DATA_DIR: dataDir,
    SLIPWAY_RECONCILER: "false",
    SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
    // Each query is sent many times in a row: with the read cache all but the first would be
    // answered from memory, and this bench measures the queries at 1M rows.
    SLIPWAY_READ_CACHE_MB: "0",
    LOG_LEVEL: "silent",
    PORT: "0",
  });
  const report: string[] = [`# Scale bench, ${new Date().toISOString()}`, ""];
  const out = (line: string) => {
    console.log(line);
    report.push(line);
  };
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
    const loadBefore = load();
    const steps = await loadScale(
      url,
      { total, workspaceId: ws.id, organizationId: ws.organization_id },
      jobs,
    );
    const loaded = steps.reduce((s, x) => s + x.seconds, 0);
    out(`## Load: ${total} deployments by SQL in ${loaded.toFixed(1)} s`);
    out(`(load average before ${loadBefore}, after ${load()}; ${jobs} connections)\n`);
    out("| step | s |\n|---|---:|");
    for (const s of steps) out(`| ${s.step} | ${s.seconds.toFixed(1)} |`);

    const app = await buildApp({ config, db, keyring: new Keyring(randomBytes(32)) }, { logger: false });
    await app.listen({ port: 0, host: "127.0.0.1" });
    const address = app.server.address();
    if (typeof address !== "object" || address === null) throw new Error("no address");
    const base = `http://127.0.0.1:${address.port}`;
    const someIds = Array.from({ length: 20 }, (_, i) => idOf("d", 1 + ((i * 48_611) % total)));
    const all = cases(someIds);

    const headers = { "x-api-key": key };
    out(`\n## Lists over HTTP: ${runs} sequential requests per query (limit 20), load average ${load()}\n`);
    out("| query | p50 ms | p95 ms | p99 ms | rows |\n|---|---:|---:|---:|---:|");
    for (const c of all) {
      const qs = new URLSearchParams({ limit: "20", ...c.query }).toString();
      const times: number[] = [];
      let count = 0;
      for (let i = 0; i < (c.runs ?? runs) + 3; i++) {
        const t0 = performance.now();
        const res = await fetch(`${base}/v2/deployments?${qs}`, { headers });
        const body = await res.text();
        const ms = performance.now() - t0;
        if (res.status !== 200) throw new Error(`${c.label}: ${res.status} ${body}`);
        if (i >= 3) times.push(ms);
        count = (JSON.parse(body) as { resources: unknown[] }).resources.length;
      }
      times.sort((a, b) => a - b);
      const f = (q: number) => quantile(times, q).toFixed(1);
      out(`| ${c.label} | ${f(0.5)} | ${f(0.95)} | ${f(0.99)} | ${count} |`);
    }
    out(`(load average after the lists ${load()})`);

    out("\n## EXPLAIN (ANALYZE, BUFFERS) of each list's page query\n");
    const seqScans: string[] = [];
    for (const c of all) {
      const q = {
        limit: 20,
        offset: Number(c.query.offset ?? 0),
        ...c.query,
      } as unknown as ListDeploymentsQuery;
      if (c.query.remote_reconciled !== undefined) q.remote_reconciled = c.query.remote_reconciled === "true";
      const filter = await listFilter(db, q);
      if (filter === null) continue;
      const plan = await explainDeploymentPage(db, ws.id, filter, 20, q.offset);
      if (/Seq Scan on (deployments|deployment_tags)/.test(plan)) seqScans.push(c.label);
      out(`### ${c.label}\n\n\`\`\`\n${plan}\n\`\`\`\n`);
    }
    out(
      `Sequential scans of deployments or deployment_tags: ${seqScans.length ? seqScans.join(", ") : "none"}`,
    );
    await app.close();
  } finally {
    await db.close();
    // A million deployments take gigabytes: the report keeps what was measured, not the rows.
    await dropDatabase("slipway_scale");
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `scale-${new Date().toISOString().replace(/[:.]/g, "-")}.md`);
    writeFileSync(file, `${report.join("\n")}\n`);
    console.log(`\n[scale] report written to ${file}`);
  }
}
