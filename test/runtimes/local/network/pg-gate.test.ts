import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { connect } from "node:net";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { PostgresGate } from "../../../../src/runtimes/local/network/pg-gate.ts";
import { TEST_DATABASE_URL } from "../../../helpers/databases.ts";

// The gate's own checks against the test PostgreSQL server (trust authentication on loopback: the
// gate is all that stands between a client and every role).
const server = new URL(TEST_DATABASE_URL);
const name = `slipway_app_${randomBytes(6).toString("hex")}`;
const admin = () => new pg.Client({ connectionString: TEST_DATABASE_URL });
let gate: PostgresGate;

async function asAdmin(sql: string): Promise<void> {
  const c = admin();
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

function through(user: string, database: string): pg.Client {
  const c = new pg.Client({ host: "127.0.0.1", port: gate.port, user, database, password: "x" });
  c.on("error", () => {});
  return c;
}

/** Sends raw bytes to the gate; resolves to everything it answers before closing. */
function raw(bytes: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const s = connect(gate.port, "127.0.0.1");
    const got: Buffer[] = [];
    s.on("data", (d) => got.push(d));
    s.on("error", reject);
    s.on("close", () => resolve(Buffer.concat(got)));
    s.on("connect", () => s.write(bytes));
    setTimeout(() => s.end(), 500).unref();
  });
}

describe("PostgreSQL gate", () => {
  before(async () => {
    await asAdmin(`CREATE ROLE ${name} LOGIN`);
    await asAdmin(`CREATE DATABASE ${name} OWNER ${name}`);
    gate = new PostgresGate({
      host: "127.0.0.1",
      port: 0,
      upstream: { host: server.hostname, port: Number(server.port || 5432) },
      role: name,
      database: name,
    });
    await gate.listen();
  });
  after(async () => {
    await gate?.close();
    await asAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await asAdmin(`DROP ROLE IF EXISTS ${name}`);
  });

  it("lets the deployment's own role into its own database", async () => {
    const c = through(name, name);
    await c.connect();
    const r = await c.query<{ u: string; d: string }>("SELECT current_user AS u, current_database() AS d");
    await c.end();
    assert.deepEqual(r.rows[0], { u: name, d: name });
  });

  for (const [who, user, database] of [
    ["the superuser", "postgres", name],
    ["the superuser in its own database", "postgres", "postgres"],
    ["its role in another database", name, "postgres"],
  ] as const) {
    it(`refuses ${who} with FATAL 28000`, async () => {
      const c = through(user, database);
      await assert.rejects(c.connect(), (err: Error & { code?: string; severity?: string }) => {
        assert.equal(err.code, "28000");
        assert.equal(err.severity, "FATAL");
        return true;
      });
    });
  }

  it("answers SSLRequest and GSSENCRequest with N, then still checks the startup", async () => {
    const ssl = Buffer.alloc(8);
    ssl.writeInt32BE(8, 0);
    ssl.writeInt32BE(80877103, 4);
    const gss = Buffer.alloc(8);
    gss.writeInt32BE(8, 0);
    gss.writeInt32BE(80877104, 4);
    const params = Buffer.from("user\0postgres\0database\0postgres\0\0");
    const startup = Buffer.alloc(8);
    startup.writeInt32BE(8 + params.length, 0);
    startup.writeInt32BE(196608, 4);
    const answer = await raw(Buffer.concat([ssl, gss, startup, params]));
    assert.equal(answer.subarray(0, 2).toString(), "NN");
    assert.equal(answer.subarray(2, 3).toString(), "E");
    assert.match(answer.toString(), /28000/);
  });

  it("refuses a replication connection of its own role", async () => {
    const params = Buffer.from(`user\0${name}\0database\0${name}\0replication\0database\0\0`);
    const startup = Buffer.alloc(8);
    startup.writeInt32BE(8 + params.length, 0);
    startup.writeInt32BE(196608, 4);
    const answer = await raw(Buffer.concat([startup, params]));
    assert.match(answer.toString(), /28000.*replication/s);
  });

  it("passes a CancelRequest only for a key one of its own sessions was given", async () => {
    const c = through(name, name);
    await c.connect();
    const slow = c.query("SELECT pg_sleep(30)").then(
      () => undefined,
      (err: Error) => err,
    );
    // A key the gate never saw (another session's): dropped, the query runs on.
    const foreign = Buffer.alloc(16);
    foreign.writeInt32BE(16, 0);
    foreign.writeInt32BE(80877102, 4);
    foreign.writeInt32BE(1, 8);
    foreign.writeInt32BE(2, 12);
    assert.equal((await raw(foreign)).length, 0);
    // Its own key (pg's cancel sends the session's BackendKeyData through the same host and port).
    const pid = (c as unknown as { processID: number }).processID;
    const secret = (c as unknown as { secretKey: number }).secretKey;
    const own = Buffer.alloc(16);
    own.writeInt32BE(16, 0);
    own.writeInt32BE(80877102, 4);
    own.writeInt32BE(pid, 8);
    own.writeInt32BE(secret, 12);
    await raw(own);
    assert.match(String((await slow)?.message), /cancel/i);
    await c.end();
  });
});
