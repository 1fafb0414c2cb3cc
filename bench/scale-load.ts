import { performance } from "node:perf_hooks";
import pg from "pg";

/**
 * Loads the scale bench's rows by SQL into a database the migrations made: the secondary indexes
 * and unique constraints of the loaded tables are dropped, every table is filled by set-based
 * INSERT … SELECT FROM generate_series split into ranges run on `jobs` connections at once (the
 * generated record columns are computed per row, so this is CPU-bound), then the indexes are
 * rebuilt (also in parallel), and VACUUM ANALYZE sets statistics and the visibility map (index-only
 * scans of deployment_tags need it). Each step is timed.
 */

/**
 * Deterministic ids, cheap to compute and increasing with n (so primary keys are appended to, not
 * split at random): one hex digit names the kind.
 */
export const KIND = { d: "1", r: "2", k: "3", env: "4", team: "5", canary: "6", s: "7" } as const;
export const idSql = (kind: keyof typeof KIND, n: string) =>
  `('${KIND[kind]}0000000-0000-4000-8000-' || lpad(to_hex(${n}), 12, '0'))::uuid`;
export const idOf = (kind: keyof typeof KIND, n: number) =>
  `${KIND[kind]}0000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;

const TABLES = ["deployments", "revisions", "revision_secrets", "deployment_tags"];

export interface LoadStep {
  step: string;
  seconds: number;
}

interface Ctx {
  total: number;
  workspaceId: string;
  organizationId: string;
}

/** One INSERT per table, over the rows [lo, hi]. */
function insertsFor(c: Ctx, lo: number, hi: number): Record<string, string> {
  const series = `generate_series(${lo}, ${hi}) g`;
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
  return {
    deployments: `INSERT INTO deployments (id, organization_id, workspace_id, name, source, deployment_type,
        source_config, image_version, status, remote_reconciled, latest_revision_id, active_revision_id,
        revision_count, latest_revision_content, created_at, updated_at)
      SELECT ${idSql("d", "g")}, '${c.organizationId}', '${c.workspaceId}', 'app-' || lpad(g::text, 7, '0'),
             'external_docker', (ARRAY['dev', 'prod', 'dev_free'])[1 + g % 3], '{"custom_url": null}'::jsonb,
             '1.0.' || (g % 10), CASE WHEN g % 100 = 0 THEN 'UNKNOWN' ELSE 'READY' END, g % 1000 = 0,
             ${idSql("r", "g")}, ${idSql("r", "g")}, 1, '${content}'::jsonb,
             t0 - make_interval(secs => g), t0 - make_interval(secs => g)
        FROM ${series}, (SELECT now() AS t0) n`,
    revisions: `INSERT INTO revisions (id, deployment_id, seq, status, source, source_revision_config,
        resource_spec, status_history, created_at, updated_at)
      SELECT ${idSql("r", "g")}, ${idSql("d", "g")}, 1, 'DEPLOYED', 'external_docker',
             '{"image_uri": "registry.example/app:1"}'::jsonb, '{"min_scale": 1}'::jsonb,
             '[{"status": "DEPLOYED", "at": "2026-01-01T00:00:00.000Z"}]'::jsonb,
             t0 - make_interval(secs => g), t0 - make_interval(secs => g)
        FROM ${series}, (SELECT now() AS t0) n`,
    revision_secrets: `INSERT INTO revision_secrets (id, revision_id, deployment_id, name, value_enc, position)
      SELECT ${idSql("s", "2 * g + s.position")}, ${idSql("r", "g")}, ${idSql("d", "g")}, s.name, 'sw1.placeholder.x.y', s.position
        FROM ${series}, (VALUES ('API_TOKEN', 0), ('SIGNING_KEY', 1)) s(name, position)`,
    deployment_tags: `INSERT INTO deployment_tags (deployment_id, tag_value_id)
      SELECT ${idSql("d", "g")}, ${idSql("env", "g % 3")} FROM ${series}
      UNION ALL SELECT ${idSql("d", "g")}, ${idSql("team", "g % 1000")} FROM ${series}
      UNION ALL SELECT ${idSql("d", "g")}, ${idSql("canary", "0")} FROM ${series} WHERE g % 10000 = 0`,
  };
}

/** Runs `work` over a pool of `clients`, each taking the next item when it is free. */
async function parallel<T>(clients: pg.Client[], items: T[], work: (c: pg.Client, item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    clients.map(async (client) => {
      for (let i = next++; i < items.length; i = next++) await work(client, items[i] as T);
    }),
  );
}

export async function loadScale(url: string, c: Ctx, jobs: number): Promise<LoadStep[]> {
  const steps: LoadStep[] = [];
  const timed = async (step: string, f: () => Promise<unknown>) => {
    const t0 = performance.now();
    await f();
    steps.push({ step, seconds: (performance.now() - t0) / 1000 });
    console.log(`[scale]   ${step}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  };
  const clients = Array.from({ length: jobs }, () => new pg.Client({ connectionString: url }));
  await Promise.all(clients.map((cl) => cl.connect()));
  const [main] = clients as [pg.Client];
  try {
    // Loading session: no wait for the WAL flush at commit; foreign keys unchecked (the rows refer
    // to each other consistently by construction); large sort memory for the index builds.
    for (const cl of clients) {
      await cl.query(`SET synchronous_commit = off; SET session_replication_role = replica;
                      SET maintenance_work_mem = '256MB'; SET max_parallel_maintenance_workers = 0`);
    }
    const { rows: indexes } = await main.query<{
      tbl: string;
      name: string;
      def: string;
      con: string | null;
    }>(
      `SELECT i.indrelid::regclass::text AS tbl, i.indexrelid::regclass::text AS name,
              pg_get_indexdef(i.indexrelid) AS def,
              (SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.conindid = i.indexrelid
                  AND c.conrelid = i.indrelid AND c.contype = 'u') AS con
         FROM pg_index i WHERE i.indrelid::regclass::text = ANY($1) AND NOT i.indisprimary`,
      [TABLES],
    );
    await timed(`drop ${indexes.length} secondary indexes`, async () => {
      for (const ix of indexes) {
        await main.query(
          ix.con === null ? `DROP INDEX ${ix.name}` : `ALTER TABLE ${ix.tbl} DROP CONSTRAINT ${ix.name}`,
        );
      }
    });
    await timed("tag keys and values", () =>
      main.query(`
        INSERT INTO tag_keys (id, workspace_id, key)
        VALUES (${idSql("k", "1")}, '${c.workspaceId}', 'env'), (${idSql("k", "2")}, '${c.workspaceId}', 'team'),
               (${idSql("k", "3")}, '${c.workspaceId}', 'canary');
        INSERT INTO tag_values (id, tag_key_id, value)
        SELECT ${idSql("env", "i")}, ${idSql("k", "1")}, (ARRAY['prod', 'dev', 'staging'])[i + 1] FROM generate_series(0, 2) i
        UNION ALL SELECT ${idSql("team", "i")}, ${idSql("k", "2")}, 'team-' || i FROM generate_series(0, 999) i
        UNION ALL SELECT ${idSql("canary", "0")}, ${idSql("k", "3")}, 'yes';`),
    );
    // Ranges of 100k rows: enough statements to keep every connection busy to the end.
    const chunk = 100_000;
    const ranges: [number, number][] = [];
    for (let lo = 1; lo <= c.total; lo += chunk) ranges.push([lo, Math.min(c.total, lo + chunk - 1)]);
    for (const table of TABLES) {
      await timed(
        `${table}: INSERT … SELECT generate_series (${ranges.length} ranges, ${jobs} at once)`,
        () =>
          parallel(clients, ranges, async (cl, [lo, hi]) => {
            await cl.query(insertsFor(c, lo, hi)[table] as string);
          }),
      );
    }
    await timed(`recreate ${indexes.length} indexes (${jobs} at once)`, () =>
      parallel(clients, indexes, async (cl, ix) => {
        await cl.query(
          ix.con === null ? ix.def : `ALTER TABLE ${ix.tbl} ADD CONSTRAINT ${ix.name} ${ix.con}`,
        );
      }),
    );
    // VACUUM where index-only scans matter (the list order's index, the taggings); ANALYZE the rest.
    const maintenance = [
      "VACUUM ANALYZE deployments",
      "VACUUM ANALYZE deployment_tags",
      "ANALYZE revisions",
      "ANALYZE revision_secrets",
      "ANALYZE tag_values",
      "ANALYZE tag_keys",
    ];
    await timed("VACUUM ANALYZE deployments, deployment_tags; ANALYZE the others", () =>
      parallel(clients, maintenance, async (cl, statement) => {
        await cl.query(statement);
      }),
    );
  } finally {
    await Promise.all(clients.map((cl) => cl.end()));
  }
  return steps;
}
