import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { maskedUrl } from "../../src/cli/startup-errors.ts";
import { freePort } from "../e2e/stack.ts";
import { type CliResult, runCli } from "../helpers/cli.ts";
import { DB_KINDS } from "../helpers/databases.ts";

const PG = "127.0.0.1:5432";
const havePostgres = DB_KINDS.includes("postgres");

/** An ErrorResponse message of the PostgreSQL protocol (what the server answers a refused login). */
function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.concat([
    ...[
      ["S", "FATAL"],
      ["V", "FATAL"],
      ["C", code],
      ["M", message],
    ].map(([k, v]) => Buffer.from(`${k}${v}\0`)),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write("E", 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

describe("slipway serve: start-up errors name the setting and the fix, never a stack", () => {
  const dataDir = mkdtempSync(join(tmpdir(), "slipway-startup-"));
  let fakePg: Server;
  let fakePort = 0;
  before(async () => {
    // A server that refuses every password, as PostgreSQL does with a wrong one (28P01).
    fakePg = createServer((socket) => {
      socket.once("data", () =>
        socket.end(errorResponse("28P01", 'password authentication failed for user "app"')),
      );
    });
    await new Promise<void>((resolve) => fakePg.listen(0, "127.0.0.1", resolve));
    const addr = fakePg.address();
    fakePort = typeof addr === "object" && addr ? addr.port : 0;
  });
  after(async () => {
    await new Promise((resolve) => fakePg.close(resolve));
    rmSync(dataDir, { recursive: true, force: true });
  });

  const serve = (url: string, command = "serve"): Promise<CliResult> =>
    runCli([command], { DATABASE_URL: url, SLIPWAY_DATA_DIR: dataDir, LOG_LEVEL: "warn" }, dataDir);

  const assertClean = (r: CliResult) => {
    assert.equal(r.code, 1, r.stderr);
    assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");
    assert.doesNotMatch(r.stderr, /pg-pool|node_modules/);
  };

  it("a database that does not exist: createdb with the URL's host, user and name", {
    skip: !havePostgres,
  }, async () => {
    const db = `slipway_missing_${randomBytes(4).toString("hex")}`;
    for (const command of ["serve", "migrate"]) {
      const r = await serve(`postgres://postgres@${PG}/${db}`, command);
      assertClean(r);
      assert.match(
        r.stderr,
        new RegExp(
          `database "${db}" does not exist: create it with \`createdb -h 127\\.0\\.0\\.1 -U postgres ${db}\` or fix DATABASE_URL=postgres://postgres@127\\.0\\.0\\.1:5432/${db}`,
        ),
      );
    }
  });

  it("a user PostgreSQL does not know (28000)", { skip: !havePostgres }, async () => {
    const user = `nobody_${randomBytes(3).toString("hex")}`;
    const r = await serve(`postgres://${user}:pw@${PG}/postgres`);
    assertClean(r);
    assert.match(r.stderr, new RegExp(`PostgreSQL at ${PG} refused user "${user}"`));
    assert.match(r.stderr, /fix the user in DATABASE_URL=postgres:\/\/nobody_\w+:\*\*\*\*@/);
  });

  it("a wrong password (28P01), the password never printed", async () => {
    const r = await serve(`postgres://app:Wr0ngPassw0rd@127.0.0.1:${fakePort}/appdb`);
    assertClean(r);
    assert.match(
      r.stderr,
      new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${fakePort} refused the password of user "app"`),
    );
    assert.doesNotMatch(r.stderr, /Wr0ngPassw0rd/);
  });

  it("nothing listening (ECONNREFUSED) and a host that does not resolve", async () => {
    const port = await freePort();
    const refused = await serve(`postgres://app:s3cret@127.0.0.1:${port}/appdb`);
    assertClean(refused);
    assert.match(
      refused.stderr,
      new RegExp(
        `cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\): is it running.*DATABASE_URL=postgres://app:\\*\\*\\*\\*@127\\.0\\.0\\.1:${port}/appdb`,
      ),
    );
    assert.doesNotMatch(refused.stderr, /s3cret/);
    const unknown = await serve("postgres://app@no-such-host.invalid:5432/appdb");
    assertClean(unknown);
    assert.match(
      unknown.stderr,
      /cannot reach PostgreSQL at no-such-host\.invalid:5432 \((ENOTFOUND|EAI_AGAIN): no such host\): fix the host/,
    );
  });

  it("masks the password of any URL it prints", () => {
    assert.equal(
      maskedUrl("postgres://u:p%40ss@h:5/d?sslmode=require"),
      "postgres://u:****@h:5/d?sslmode=require",
    );
    assert.equal(maskedUrl("postgres://u@h/d"), "postgres://u@h/d");
    assert.equal(maskedUrl("postgres://u:secret@[bad"), "postgres://u:****@[bad");
  });
});
