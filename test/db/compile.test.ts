import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { eq, type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { compileSql } from "../../src/db/compile.ts";
import { deployments } from "../../src/db/schema/index.ts";

const dialect = new PgDialect();

/** The fast compiler must make exactly what the ORM makes: the same text, the same parameters. */
function same(query: SQL) {
  const ours = compileSql(query);
  const theirs = dialect.sqlToQuery(query);
  assert.equal(ours.sql, theirs.sql);
  assert.deepEqual(ours.params, theirs.params);
  return ours;
}

describe("compileSql", () => {
  it("numbers the values of text, nested templates and joins in order", () => {
    const inner = sql`b = ${2} AND c = ${"three"}`;
    const parts = [sql`x = ${"x"}`, sql`y = ${null}`, sql`z = ${true}`];
    const q = same(
      sql`SELECT ${1}::int WHERE ${inner} AND ${sql.join(parts, sql` OR `)}${sql.empty()} ${sql.raw("LIMIT 5")}`,
    );
    assert.equal(q.sql, "SELECT $1::int WHERE b = $2 AND c = $3 AND x = $4 OR y = $5 OR z = $6 LIMIT 5");
    assert.deepEqual(q.params, [1, 2, "three", "x", null, true]);
  });

  it("sends dates, buffers and objects as parameters, and a list as a parenthesized row", () => {
    const at = new Date("2026-01-02T03:04:05.000Z");
    const q = same(
      sql`INSERT INTO t VALUES (${at}, ${Buffer.from("ab")}, ${{ a: 1 }}) WHERE k IN ${["a", sql`lower(${"B"})`, 3]}`,
    );
    assert.equal(q.sql, "INSERT INTO t VALUES ($1, $2, $3) WHERE k IN ($4, lower($5), $6)");
    assert.equal(q.params[0], at);
  });

  it("leaves what renders its own SQL to the ORM, with the same result", () => {
    // A column comparison (Param with the column's encoder, the column itself), a name, an inlined
    // template, a placeholder: each goes through the ORM's compiler.
    same(
      sql`SELECT 1 FROM ${deployments} WHERE ${eq(deployments.id, "00000000-0000-0000-0000-000000000000")}`,
    );
    same(sql`SELECT ${sql.identifier('odd"name')} FROM t WHERE a = ${"v"}`);
    const inlined = sql`SELECT ${"it's"}`.inlineParams();
    assert.deepEqual(same(inlined).params, []);
    same(sql`SELECT ${sql.placeholder("p")}`);
  });
});
