import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, it } from "node:test";
import { getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import * as schema from "../../src/db/schema/index.ts";

/**
 * One owner per table (issue 9): only a table's store writes SQL on it — raw statements
 * (`UPDATE t`, `INSERT INTO t`, `DELETE FROM t`) and the query builder (`.insert(t)`, …) alike.
 * The reconciler's store may write the lease columns of deployments and revisions, nothing else.
 * A static scan of src/: it needs no database. Key rotation's two statements (db/envelopes.ts) take
 * their table from the store that declares the column, which the last test checks.
 */

const SRC = join(import.meta.dirname, "../../src");

/** The reconciler's store: its leases, and its claims of work (claims/store.ts, apart from store.ts for length). */
const RECONCILER_STORE = ["reconciler/store.ts", "reconciler/claims/store.ts"];

/** Table → the files (under src/) allowed to write it. */
const OWNERS: Record<string, readonly string[]> = {
  deployments: ["core/deployments/write-store.ts", "core/deployments/runtime-store.ts", ...RECONCILER_STORE],
  idempotency_keys: ["resources/deployments/keys-store.ts"],
  revisions: [
    "core/revisions/write-store.ts",
    "core/revisions/status-store.ts",
    "core/revisions/listener-store.ts",
    ...RECONCILER_STORE,
  ],
  revision_secrets: ["core/revisions/secrets-store.ts"],
  revision_logs: ["core/revision-logs/store.ts"],
  tracing_projects: ["resources/tracing-projects/store.ts"],
  tag_keys: ["resources/tags/store.ts"],
  tag_values: ["resources/tags/store.ts"],
  deployment_tags: ["resources/tags/store.ts"],
  uploads: ["resources/uploads/store.ts"],
  upload_chunks: ["resources/uploads/store.ts"],
  api_keys: ["resources/api-keys/store.ts"],
  listeners: ["resources/listeners/store.ts"],
  integrations: ["resources/integrations/store.ts"],
  codehost_deliveries: ["resources/integrations/store.ts"],
  local_git_heads: ["resources/integrations/store.ts"],
  organizations: ["resources/organizations/store.ts"],
  workspaces: ["resources/workspaces/store.ts"],
  agent_connections: ["resources/agent-connections/store.ts"],
  oauth_providers: ["resources/oauth-providers/store.ts"],
  oauth_flows: ["resources/oauth-flows/store.ts"],
  oauth_tokens: ["resources/oauth-tokens/store.ts"],
  events: ["core/events/store.ts"],
  webhooks: ["resources/webhooks/store.ts"],
  // Born with their event (core), then claimed and attempted by the webhooks resource.
  webhook_deliveries: ["core/events/deliveries-store.ts", "resources/webhooks/store.ts"],
  webhook_attempts: ["resources/webhooks/store.ts"],
  audit_log: ["core/audit/store.ts"],
  scheduled_backups: ["backup/store.ts"],
  custom_domains: ["resources/domains/store.ts"],
  tls_certificates: ["resources/certificates/store.ts"],
  acme_accounts: ["resources/certificates/store.ts"],
  acme_challenges: ["resources/certificates/store.ts"],
  tls_authorities: ["resources/certificates/store.ts"],
  deployment_pods: ["resources/listeners/pods-store.ts"],
  // The migration runner's ledger: not an application table (the Drizzle schema does not declare it).
  schema_migrations: ["db/migrate.ts"],
};

/**
 * Tables that, besides being written only by their store, are read only in stores (a store may
 * join another resource's table).
 */
const READ_IN_STORES_ONLY = [
  "deployments",
  "revisions",
  "uploads",
  "upload_chunks",
  "api_keys",
  "listeners",
  "integrations",
  "organizations",
  "workspaces",
  "agent_connections",
  "oauth_providers",
  "oauth_flows",
  "oauth_tokens",
];

/** What reconciler/store.ts may set on the tables it shares: leases and teardown claims. */
const LEASE_COLUMNS: Record<string, readonly string[]> = {
  revisions: ["lease_owner", "lease_expires_at"],
  deployments: ["reconcile_owner", "reconcile_expires_at"],
};

/** Drizzle table objects by their variable name (`revisionSecrets` → `revision_secrets`). */
const TABLE_OF_IDENT = new Map(
  Object.entries(schema)
    .filter(([, v]) => is(v, PgTable))
    .map(([name, table]) => [name, getTableName(table as PgTable)]),
);

export interface Write {
  file: string;
  table: string;
  /** The statement text from the keyword to the end of its template (raw SQL only). */
  statement?: string;
}

/** Every SQL write in one file's text. */
export function writesIn(file: string, text: string): Write[] {
  const found: Write[] = [];
  for (const m of text.matchAll(/\b(?:UPDATE|INSERT\s+INTO|DELETE\s+FROM)\s+"?([a-z_][a-z0-9_]*)"?/g)) {
    const end = text.indexOf("`", m.index);
    found.push({ file, table: m[1] ?? "", statement: text.slice(m.index, end < 0 ? undefined : end) });
  }
  for (const m of text.matchAll(/\.(?:insert|update|delete)\(\s*([A-Za-z_]\w*)\s*\)/g)) {
    const table = TABLE_OF_IDENT.get(m[1] ?? "");
    if (table) found.push({ file, table });
  }
  return found;
}

/** Every table one file's text reads: raw `FROM t` / `JOIN t` and the query builder's `.from(t)`, joins. */
export function readsIn(file: string, text: string): Write[] {
  const found: Write[] = [];
  for (const m of text.matchAll(/\b(?:FROM|JOIN)\s+"?([a-z_][a-z0-9_]*)"?/g))
    found.push({ file, table: m[1] ?? "" });
  for (const m of text.matchAll(
    /\.(?:from|innerJoin|leftJoin|rightJoin|fullJoin)\(\s*([A-Za-z_]\w*)\s*[,)]/g,
  )) {
    const table = TABLE_OF_IDENT.get(m[1] ?? "");
    if (table) found.push({ file, table });
  }
  return found;
}

/** Reads of READ_IN_STORES_ONLY tables outside a store. */
export function strayReads(reads: Write[]): string[] {
  return reads
    .filter((r) => READ_IN_STORES_ONLY.includes(r.table) && !r.file.endsWith("store.ts"))
    .map((r) => `${r.file} reads ${r.table}; call its store`);
}

/** The writes that break the ownership rule. */
export function violations(writes: Write[]): string[] {
  const bad: string[] = [];
  for (const w of writes) {
    const owners = OWNERS[w.table];
    if (!owners) {
      bad.push(`${w.file} writes ${w.table}, which has no owner in this test`);
      continue;
    }
    if (!owners.includes(w.file)) bad.push(`${w.file} writes ${w.table}; only ${owners.join(", ")} may`);
    if (RECONCILER_STORE.includes(w.file) && w.statement?.startsWith("UPDATE")) {
      const set = /\bSET\b([\s\S]*?)\bWHERE\b/.exec(w.statement)?.[1] ?? "";
      const columns = [...set.matchAll(/(?:^|,)\s*(\w+)\s*=/g)].map((c) => c[1]);
      for (const c of columns) {
        if (!LEASE_COLUMNS[w.table]?.includes(c ?? "")) bad.push(`${w.file} sets ${w.table}.${c}`);
      }
    } else if (RECONCILER_STORE.includes(w.file)) {
      bad.push(`${w.file} inserts into or deletes from ${w.table}`);
    }
  }
  return bad;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith(".ts") ? [path] : [];
  });
}

const files = sourceFiles(SRC).map((path) => ({
  file: relative(SRC, path),
  text: readFileSync(path, "utf8"),
}));

describe("SQL ownership", () => {
  it("finds writes of every kind (the scan can fail)", () => {
    const planted = [
      "await tx.execute(sql`UPDATE deployments SET status = 'READY' WHERE id = $1`);",
      "await tx.execute(sql`INSERT INTO revisions (id) VALUES ($1)`);",
      'await tx.execute(sql`DELETE FROM "tag_keys" WHERE id = $1`);',
      "await exec.insert(revisionSecrets).values(rows);",
      "await exec.update( apiKeys ).set({});",
      "await exec.delete(oauthFlows).where(x);",
    ].join("\n");
    const writes = writesIn("resources/deployments/routes.ts", planted);
    assert.deepEqual(
      writes.map((w) => w.table),
      ["deployments", "revisions", "tag_keys", "revision_secrets", "api_keys", "oauth_flows"],
    );
    assert.equal(violations(writes).length, 6);
    // In its owner's file the same write is fine; the reconciler's store may touch leases only.
    assert.deepEqual(
      violations(writesIn("core/deployments/write-store.ts", planted.split("\n")[0] ?? "")),
      [],
    );
    const lease = "sql`UPDATE revisions SET lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`";
    assert.deepEqual(violations(writesIn("reconciler/store.ts", lease)), []);
    const status = "sql`UPDATE revisions SET lease_owner = NULL, status = 'DEPLOYED' WHERE id = $1`";
    assert.deepEqual(violations(writesIn("reconciler/store.ts", status)), [
      "reconciler/store.ts sets revisions.status",
    ]);
    // Map and Set methods are not writes.
    assert.deepEqual(writesIn("x.ts", "this.jobs.delete(id); set.delete(wake);"), []);
  });

  it("no file outside a table's store writes SQL on it", () => {
    const writes = files.flatMap(({ file, text }) => writesIn(file, text));
    assert.ok(writes.length > 20, `only ${writes.length} writes found: the scan is broken`);
    assert.deepEqual(violations(writes), []);
  });

  it("every table the schema declares has one owning store.ts", () => {
    for (const table of TABLE_OF_IDENT.values()) {
      const owners = OWNERS[table] ?? [];
      assert.ok(owners.length > 0, `${table} has no owner`);
      for (const o of owners) assert.match(o, /(^|\/|-)store\.ts$/, `${table} is owned by ${o}, not a store`);
    }
  });

  it("finds reads of every kind (the scan can fail)", () => {
    const planted = [
      "sql`SELECT k.id FROM api_keys k JOIN organizations o ON o.id = k.organization_id`",
      "await exec.select().from(oauthTokens).innerJoin(oauthProviders, eq(a, b));",
      "Buffer.from(body); rows.from(x);",
    ].join("\n");
    const reads = readsIn("http/auth.ts", planted);
    assert.deepEqual(
      reads.map((r) => r.table),
      ["api_keys", "organizations", "oauth_tokens", "oauth_providers"],
    );
    assert.equal(strayReads(reads).length, 4);
    assert.deepEqual(strayReads(readsIn("resources/agent-connections/store.ts", planted)), []);
    // The reads issue 13 moved into the stores: list filters, log follow.
    const moved = [
      "sql`SELECT r.status FROM revisions r JOIN deployments d ON d.id = r.deployment_id`",
      "sql`SELECT id FROM deployments d WHERE d.id = $1`",
    ].join("\n");
    assert.deepEqual(strayReads(readsIn("resources/revision-logs/follow.ts", moved)), [
      "resources/revision-logs/follow.ts reads revisions; call its store",
      "resources/revision-logs/follow.ts reads deployments; call its store",
      "resources/revision-logs/follow.ts reads deployments; call its store",
    ]);
  });

  it("deployments, revisions, identity, upload, integration and OAuth tables are read only in stores", () => {
    const reads = files.flatMap(({ file, text }) => readsIn(file, text));
    assert.ok(
      reads.filter((r) => READ_IN_STORES_ONLY.includes(r.table)).length > 20,
      "the read scan is broken",
    );
    assert.deepEqual(strayReads(reads), []);
  });

  it("revision statuses are written by one function, which appends status_history", () => {
    const writers = files.filter(({ text }) => /status_history\s*=\s*status_history\s*\|\|/.test(text));
    assert.deepEqual(
      writers.map((f) => f.file),
      ["core/revisions/status-store.ts"],
    );
    const store = files.find((f) => f.file === "core/revisions/status-store.ts")?.text ?? "";
    const statusSets = [...store.matchAll(/sql`status = \$\{/g)];
    assert.equal(statusSets.length, 1, "one place in the revision status store sets status");
    assert.match(store, /for \(const from of w\.from\) assertTransition\(from, w\.to\)/);
  });

  it("encrypted columns are declared for key rotation only by their stores", () => {
    const declaring = files
      .filter(({ text }) => /\benvelopeColumn\(\s*exec\s*,/.test(text))
      .map((f) => f.file);
    assert.ok(declaring.length >= 5, `only ${declaring.join(", ")} declare envelope columns`);
    for (const file of declaring) {
      const owns = Object.values(OWNERS).some((owners) => owners.includes(file));
      assert.ok(
        owns && /(^|\/|-)store\.ts$/.test(file),
        `${file} declares envelope columns but owns no table`,
      );
    }
  });
});
