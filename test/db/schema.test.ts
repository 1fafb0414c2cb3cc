import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { is, SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgColumn, PgDialect, PgTable } from "drizzle-orm/pg-core";
import { rows } from "../../src/db/client.ts";
import * as schema from "../../src/db/schema/index.ts";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../helpers/databases.ts";

/**
 * The Drizzle schema (src/db/schema) and the migrations describe the same tables: every column's
 * name, type, nullability and default, and each table's primary key. A migration that adds a
 * column without its Drizzle twin (or the reverse) fails here.
 */

/** Tables the migrations make that are bookkeeping, not the app's data: no Drizzle twin. */
const NOT_IN_DRIZZLE = new Set(["schema_migrations"]);

interface ColumnShape {
  type: string;
  nullable: boolean;
  /** The default as PostgreSQL prints it in information_schema, or null for none. */
  default: string | null;
}

type TableShape = Record<string, ColumnShape>;

const dialect = new PgDialect();

function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** Drizzle's SQL type as information_schema spells it (serials are their integer type plus a sequence). */
function drizzleType(column: PgColumn): string {
  const type = column.getSQLType();
  if (type === "bigserial") return "bigint";
  if (type === "serial") return "integer";
  return type;
}

/** The default PostgreSQL stores for a Drizzle column, printed the way information_schema prints it. */
function drizzleDefault(table: string, column: PgColumn): string | null {
  const type = column.getSQLType();
  if (type === "bigserial" || type === "serial") return `nextval('${table}_${column.name}_seq'::regclass)`;
  const value: unknown = column.default;
  if (value === undefined) return null;
  if (is(value, SQL)) return dialect.sqlToQuery(value).sql;
  if (typeof value === "boolean" || typeof value === "number") return String(value);
  if (type === "jsonb") return `${quoteLiteral(JSON.stringify(value))}::jsonb`;
  if (type.endsWith("[]") && Array.isArray(value)) {
    return `${quoteLiteral(`{${value.map(String).join(",")}}`)}::${type}`;
  }
  if (typeof value === "string") return `${quoteLiteral(value)}::${type}`;
  throw new Error(`${table}.${column.name}: no rule to print a default of type ${typeof value}`);
}

function drizzleTables(): PgTable[] {
  const values: unknown[] = Object.values(schema);
  return values.filter((value): value is PgTable => is(value, PgTable));
}

function drizzleShapes(): { columns: Record<string, TableShape>; primaryKeys: Record<string, string[]> } {
  const columns: Record<string, TableShape> = {};
  const primaryKeys: Record<string, string[]> = {};
  for (const table of drizzleTables()) {
    const config = getTableConfig(table);
    const shape: TableShape = {};
    for (const column of config.columns) {
      shape[column.name] = {
        type: drizzleType(column),
        nullable: !column.notNull,
        default: drizzleDefault(config.name, column),
      };
    }
    columns[config.name] = shape;
    const single = config.columns.filter((c) => c.primary).map((c) => c.name);
    const composite = config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name));
    primaryKeys[config.name] = [...single, ...composite].sort();
  }
  return { columns, primaryKeys };
}

interface InfoColumn {
  table_name: string;
  column_name: string;
  data_type: string;
  udt_name: string;
  is_nullable: "YES" | "NO";
  column_default: string | null;
}

async function databaseShapes(
  test: TestDatabase,
): Promise<{ columns: Record<string, TableShape>; primaryKeys: Record<string, string[]> }> {
  const found = await rows<InfoColumn>(
    test.db.orm,
    sql`SELECT table_name::text AS table_name, column_name::text AS column_name, data_type::text AS data_type,
               udt_name::text AS udt_name, is_nullable::text AS is_nullable, column_default::text AS column_default
          FROM information_schema.columns
         WHERE table_schema = 'public'
           AND table_name IN (SELECT table_name FROM information_schema.tables
                               WHERE table_schema = 'public' AND table_type = 'BASE TABLE')
         ORDER BY table_name, ordinal_position`,
  );
  const columns: Record<string, TableShape> = {};
  for (const c of found) {
    if (NOT_IN_DRIZZLE.has(c.table_name)) continue;
    const table = columns[c.table_name] ?? {};
    table[c.column_name] = {
      // Arrays show as "ARRAY" with the element type in udt_name ("_text").
      type: c.data_type === "ARRAY" ? `${c.udt_name.slice(1)}[]` : c.data_type,
      nullable: c.is_nullable === "YES",
      default: c.column_default,
    };
    columns[c.table_name] = table;
  }
  const keys = await rows<{ table_name: string; column_name: string }>(
    test.db.orm,
    sql`SELECT k.table_name::text AS table_name, k.column_name::text AS column_name
          FROM information_schema.table_constraints t
          JOIN information_schema.key_column_usage k
            ON k.constraint_name = t.constraint_name AND k.table_schema = t.table_schema
         WHERE t.table_schema = 'public' AND t.constraint_type = 'PRIMARY KEY'`,
  );
  const primaryKeys: Record<string, string[]> = {};
  for (const k of keys) {
    if (NOT_IN_DRIZZLE.has(k.table_name)) continue;
    primaryKeys[k.table_name] = [...(primaryKeys[k.table_name] ?? []), k.column_name].sort();
  }
  return { columns, primaryKeys };
}

/** One line per column that differs, so a failure names the column and both sides. */
function differences(drizzle: Record<string, TableShape>, database: Record<string, TableShape>): string[] {
  const out: string[] = [];
  for (const [table, columns] of Object.entries(drizzle)) {
    const actual = database[table] ?? {};
    const names = new Set([...Object.keys(columns), ...Object.keys(actual)]);
    for (const name of [...names].sort()) {
      const want = JSON.stringify(columns[name] ?? "missing");
      const got = JSON.stringify(actual[name] ?? "missing");
      if (want !== got) out.push(`${table}.${name}: drizzle ${want}, migrations ${got}`);
    }
  }
  return out;
}

describe("the Drizzle schema's default printer", () => {
  it("prints each kind of default the way information_schema does", () => {
    const t = getTableConfig(schema.deployments);
    const col = (name: string): PgColumn => {
      const found = t.columns.find((c) => c.name === name);
      assert.ok(found, name);
      return found;
    };
    assert.equal(drizzleDefault("deployments", col("id")), "gen_random_uuid()");
    assert.equal(drizzleDefault("deployments", col("created_at")), "now()");
    assert.equal(drizzleDefault("deployments", col("deployment_type")), "'dev'::text");
    assert.equal(drizzleDefault("deployments", col("source_config")), "'{}'::jsonb");
    assert.equal(drizzleDefault("deployments", col("remote_reconciled")), "false");
    assert.equal(drizzleDefault("deployments", col("revision_count")), "0");
    assert.equal(drizzleDefault("deployments", col("name")), null);
  });
});

for (const kind of DB_KINDS) {
  describe(`Drizzle schema = migrations [${kind}]`, () => {
    let test: TestDatabase;
    const drizzle = drizzleShapes();
    let database: Awaited<ReturnType<typeof databaseShapes>>;

    before(async () => {
      test = await createTestDatabase(kind);
      database = await databaseShapes(test);
    });
    after(async () => {
      await test?.drop();
    });

    it("every table the migrations create is in the Drizzle schema, and no other", () => {
      assert.deepEqual(Object.keys(drizzle.columns).sort(), Object.keys(database.columns).sort());
    });

    it("each table's columns have the same names, types, nullability and defaults", () => {
      assert.deepEqual(differences(drizzle.columns, database.columns), []);
    });

    it("each table has the same primary key", () => {
      assert.deepEqual(drizzle.primaryKeys, database.primaryKeys);
    });
  });
}
