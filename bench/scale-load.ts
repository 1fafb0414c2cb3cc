import { performance } from "node:perf_hooks";
import pg from "pg";

/**
 * Loads the scale bench's rows by SQL into a database the migrations made: the secondary indexes
 * (but the partial ones, which no loaded row enters) and unique constraints of the loaded tables
 * are dropped, and every table is filled by set-based INSERT … SELECT FROM generate_series split
 * into ranges run on `jobs` connections at once (the generated record columns are computed per
 * row, so this is CPU-bound). deployments and deployment_tags are loaded first; then VACUUM sets
 * their hint bits and visibility map (index-only scans need it) before their indexes are rebuilt,
 * and those builds (much reading and writing, where the inserts mostly compute) run beside the
 * inserts of revisions and revision_secrets, whose indexes follow; ANALYZE comes last. Each step
 * is timed (wall clock; the steps do not overlap), and within the overlapped steps the time each
 * kind of task took is printed.
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

/** A unit of work for one connection; it may start once every task named in `after` has finished. */
interface Task {
  name: string;
  sql: string;
  after: string[];
}

/**
 * Runs `tasks` on the `clients`: each free connection takes the first task (in list order, so the
 * list is the priority) whose predecessors have finished. Returns each task's seconds.
 */
async function schedule(clients: pg.Client[], tasks: Task[]): Promise<Map<string, number>> {
  const pending = [...tasks];
  const finished = new Set<string>();
  const seconds = new Map<string, number>();
  let wake = () => {};
  let failed: unknown;
  const ready = () => pending.findIndex((t) => t.after.every((a) => finished.has(a)));
  await Promise.all(
    clients.map(async (client) => {
      while (pending.length > 0 && failed === undefined) {
        const i = ready();
        if (i < 0) {
          // Everything left waits on a running task: sleep until one finishes.
          await new Promise<void>((resolve) => {
            const previous = wake;
            wake = () => {
              previous();
              resolve();
            };
          });
          continue;
        }
        const [task] = pending.splice(i, 1) as [Task];
        const t0 = performance.now();
        try {
          await client.query(task.sql);
        } catch (err) {
          failed ??= err;
        }
        seconds.set(task.name, (performance.now() - t0) / 1000);
        finished.add(task.name);
        const w = wake;
        wake = () => {};
        w();
      }
    }),
  );
  if (failed !== undefined) throw failed;
  return seconds;
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
    // Partial indexes stay: no loaded row matches their predicates (AWAITING_DELETE, a revision not
    // yet settled, a listener), so keeping them costs a predicate test per row, and rebuilding them
    // would cost a pass over their table each.
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
         FROM pg_index i WHERE i.indrelid::regclass::text = ANY($1) AND NOT i.indisprimary
          AND i.indpred IS NULL
        ORDER BY (SELECT a.amname FROM pg_class r JOIN pg_am a ON a.oid = r.relam
                   WHERE r.oid = i.indexrelid) = 'gin' DESC, 2`,
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
    // Ranges of 50k rows: short enough that the connections finish a step nearly together.
    const chunk = 50_000;
    const ranges: [number, number][] = [];
    for (let lo = 1; lo <= c.total; lo += chunk) ranges.push([lo, Math.min(c.total, lo + chunk - 1)]);
    const inserts = (table: string): Task[] =>
      ranges.map(([lo, hi]) => ({
        name: `${table} ${lo}`,
        sql: insertsFor(c, lo, hi)[table] as string,
        after: [],
      }));
    const report = (seconds: Map<string, number>) => {
      const byKind = new Map<string, number>();
      for (const [name, s] of seconds) {
        const kind = name.replace(/ \d+$/, "");
        byKind.set(kind, (byKind.get(kind) ?? 0) + s);
      }
      for (const [kind, s] of byKind)
        console.log(`[scale]     ${kind}: ${s.toFixed(1)} s (summed over tasks)`);
    };
    // The tables VACUUM must mark all-visible (index-only scans) are loaded first, alone: VACUUM
    // marks a row all-visible only once no transaction that began before the row's commit still
    // runs, so nothing may overlap the end of their loading.
    const first = ["deployments", "deployment_tags"];
    await timed(
      `${first.join(", ")}: INSERT … SELECT generate_series (${ranges.length} ranges each, ${jobs} at once)`,
      async () => {
        report(await schedule(clients, first.flatMap(inserts)));
        // The inserts commit asynchronously, and VACUUM may not set a hint bit, nor so mark a page
        // all-visible, before the commit record is on disk: one synchronous commit flushes the WAL
        // (it must write WAL to be synchronous; a logical message is the smallest write, no row).
        await main.query(`BEGIN; SET LOCAL synchronous_commit = on;
                          SELECT pg_logical_emit_message(true, 'slipway-scale', 'loaded'); COMMIT`);
      },
    );
    // Then everything else at once, in this order of priority: VACUUM the first tables before their
    // index builds (one pass sets hint bits and the visibility map; a build first would dirty every
    // page for the hint bits and VACUUM would dirty and write it again), their index builds beside
    // the CPU-bound inserts of the other tables, then those tables' index builds, then ANALYZE
    // (after the builds, for the expression index's statistics). A unique constraint's index is
    // built as a plain unique index and attached at the end: ADD CONSTRAINT would hold an exclusive
    // lock on the table for the whole build and stall its other builds.
    // The builds go in the order of `indexes`: the GIN (trigram) index first, the longest build, so
    // that it does not run alone at the end.
    const buildName = (ix: { name: string }) => `index ${ix.name}`;
    const builds = (tables: string[], after: (tbl: string) => string[]): Task[] =>
      indexes
        .filter((ix) => tables.includes(ix.tbl))
        .map((ix) => ({
          name: buildName(ix),
          sql: ix.def,
          after: after(ix.tbl),
        }));
    const second = ["revisions", "revision_secrets"];
    const loaded = (tbl: string) => ranges.map(([lo]) => `${tbl} ${lo}`);
    const builtOn = (tbl: string) => indexes.filter((ix) => ix.tbl === tbl).map(buildName);
    const attached = (tbl: string) =>
      indexes.filter((ix) => ix.tbl === tbl && ix.con !== null).map((ix) => `attach ${ix.name}`);
    const tasks: Task[] = [
      ...first.map((tbl) => ({ name: `VACUUM ${tbl}`, sql: `VACUUM ${tbl}`, after: [] })),
      ...builds(first, (tbl) => [`VACUUM ${tbl}`]),
      ...second.flatMap(inserts),
      ...builds(second, loaded),
      ...indexes
        .filter((ix) => ix.con !== null)
        .map((ix) => ({
          name: `attach ${ix.name}`,
          sql: `ALTER TABLE ${ix.tbl} ADD CONSTRAINT ${ix.name} UNIQUE USING INDEX ${ix.name}`,
          after: builtOn(ix.tbl),
        })),
      ...[...first, ...second].map((tbl) => ({
        name: `ANALYZE ${tbl}`,
        sql: `ANALYZE ${tbl}`,
        after: [...builtOn(tbl), ...attached(tbl)],
      })),
      { name: "ANALYZE tag_values", sql: "ANALYZE tag_values", after: [] },
      { name: "ANALYZE tag_keys", sql: "ANALYZE tag_keys", after: [] },
    ];
    await timed(
      `VACUUM ${first.join(", ")}, rebuild ${indexes.length} indexes beside ${second.join(", ")}: INSERT … SELECT, ANALYZE (${jobs} at once)`,
      async () => report(await schedule(clients, tasks)),
    );
  } finally {
    await Promise.all(clients.map((cl) => cl.end()));
  }
  return steps;
}
