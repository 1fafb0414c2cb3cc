import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { UsageError } from "../../src/cli/args.ts";
import { resolveRevision } from "../../src/cli/revision-ref.ts";
import { rows } from "../../src/db/client.ts";
import { createSlipway, type Deployment, type Slipway, SlipwayError, unwrap } from "../../src/sdk/client.ts";
import { freePort } from "../e2e/stack.ts";
import { runCli } from "../helpers/cli.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { insertDeployment } from "../helpers/reconciler.ts";

const apiPort = await freePort();

/** Revisions with the ids given (null: a random one), numbered after the deployment's last, as the API makes them. */
async function addRevisions(
  ctx: TestContext,
  deploymentId: string,
  ids: (string | null)[],
): Promise<string[]> {
  return ctx.db.orm.transaction(async (tx) => {
    const [dep] = await rows<{ revision_count: number }>(
      tx,
      sql`SELECT revision_count FROM deployments WHERE id = ${deploymentId} FOR UPDATE`,
    );
    let seq = dep?.revision_count ?? 0;
    const made: string[] = [];
    for (const given of ids) {
      const id = given ?? randomUUID();
      seq++;
      const history = JSON.stringify([{ status: "DEPLOYED", at: new Date().toISOString() }]);
      await tx.execute(
        sql`INSERT INTO revisions (id, deployment_id, seq, status, source, source_revision_config, status_history)
            VALUES (${id}, ${deploymentId}, ${seq}, 'DEPLOYED', 'internal_template',
                    ${JSON.stringify({ repo_ref: "hello-http", framework_config_path: "slipway.json" })}::jsonb,
                    ${history}::jsonb)`,
      );
      made.push(id);
    }
    await tx.execute(
      sql`UPDATE deployments SET revision_count = ${seq}, latest_revision_id = ${made.at(-1) ?? null},
                 active_revision_id = ${made.at(-1) ?? null}, updated_at = now()
           WHERE id = ${deploymentId}`,
    );
    return made;
  });
}

const SHARED_A = "abcdef01-0000-4000-8000-000000000001";
const SHARED_B = "abcdef02-0000-4000-8000-000000000002";
const DIGITS = "12345678-0000-4000-8000-000000000003";

forEachDatabase("naming revisions: number, #number, id prefix, id", (suite) => {
  let client: Slipway;
  let dep: Deployment;
  let many: Deployment;
  let ids: string[];
  let manyIds: string[];
  let env: Record<string, string>;
  const home = mkdtempSync(join(tmpdir(), "slipway-cli-revs-"));
  const name = "revs";
  before(async () => {
    await suite.ctx.app.listen({ port: apiPort, host: "127.0.0.1" });
    client = createSlipway({ baseUrl: `http://127.0.0.1:${apiPort}`, apiKey: suite.ctx.keys.admin });
    const depId = await insertDeployment(suite.ctx, { name });
    ids = await addRevisions(suite.ctx, depId, [null, SHARED_A, SHARED_B, null, DIGITS]);
    const manyId = await insertDeployment(suite.ctx, { name: "many" });
    // Over two pages of the revisions list (100 a page), so a lookup has to page.
    manyIds = await addRevisions(
      suite.ctx,
      manyId,
      Array.from({ length: 230 }, () => null),
    );
    const get = (id: string) =>
      unwrap(client.api.GET("/v2/deployments/{deployment_id}", { params: { path: { deployment_id: id } } }));
    dep = await get(depId);
    many = await get(manyId);
    env = {
      HOME: home,
      XDG_CONFIG_HOME: join(home, "config"),
      SLIPWAY_URL: `http://127.0.0.1:${apiPort}`,
      SLIPWAY_API_KEY: suite.ctx.keys.admin,
    };
  });
  after(() => rmSync(home, { recursive: true, force: true }));

  const resolve = (d: Deployment, ref: string) => resolveRevision(client, d, ref);

  it("a number, with or without #, is the creation order from 1, the record's number", async () => {
    for (const [ref, index] of [
      ["1", 0],
      ["#3", 2],
      ["5", 4],
      [" #2 ", 1],
    ] as const) {
      const rev = await resolve(dep, ref);
      assert.equal(rev.id, ids[index], ref);
      assert.equal(rev.number, index + 1);
    }
    assert.equal((await resolve(many, "#3")).id, manyIds[2], "found past the first pages");
    assert.equal((await resolve(many, "230")).id, manyIds[229]);
  });

  it("an unknown number is not found, naming the range", async () => {
    for (const ref of ["#9", "0", "231"]) {
      const d = ref === "231" ? many : dep;
      await assert.rejects(resolve(d, ref), (err: unknown) => {
        assert.ok(err instanceof SlipwayError && err.status === 404, String(err));
        assert.match(
          err.message,
          new RegExp(
            `has no revision #${ref.replace("#", "")}: its revisions are #1 to #${ref === "231" ? 230 : 5}\\.`,
          ),
        );
        return true;
      });
    }
  });

  it("an id prefix of 6 or more hex characters; ambiguous ones name the candidates; full ids must belong", async () => {
    assert.equal((await resolve(dep, "abcdef01")).id, SHARED_A);
    assert.equal((await resolve(dep, "ABCDEF02-0000")).id, SHARED_B, "any case, hyphens kept");
    assert.equal((await resolve(dep, "123456")).id, DIGITS, "digits only: no #123456, so a prefix");
    assert.equal((await resolve(many, manyIds[0]?.slice(0, 8) ?? "")).id, manyIds[0]);
    await assert.rejects(resolve(dep, "abcdef0"), (err: unknown) => {
      assert.ok(err instanceof UsageError, String(err));
      assert.match(
        err.message,
        /abcdef0 is the start of 2 revisions of revs: #3 \(abcdef02-[^)]+\), #2 \(abcdef01-/,
      );
      return true;
    });
    await assert.rejects(resolve(dep, "fedcba"), (err: unknown) => {
      assert.ok(err instanceof SlipwayError && err.status === 404);
      assert.match(err.message, /No revision of revs has an id starting with fedcba/);
      return true;
    });
    for (const bad of ["abcde", "latest", "#x", "-1"])
      await assert.rejects(resolve(dep, bad), UsageError, bad);
    assert.equal((await resolve(dep, ids[3] ?? "")).id, ids[3]);
    await assert.rejects(resolve(dep, manyIds[0] ?? ""), (err: unknown) => {
      assert.ok(err instanceof SlipwayError && err.status === 404, "another deployment's revision");
      return true;
    });
  });

  it("the commands take them: revisions shows #, logs/rollback/interrupt resolve, errors exit 2 or 4", async () => {
    const list = await runCli(["revisions", name], env);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^#\s+ACTIVE\s+ID\s+STATUS/m);
    assert.match(list.stdout, new RegExp(`^#5\\s+\\*\\s+${DIGITS}\\s+DEPLOYED`, "m"));
    assert.match(list.stdout, new RegExp(`^#2\\s+${SHARED_A}`, "m"));
    const logs = await runCli(["logs", name, "--revision", "#2"], env);
    assert.equal(logs.code, 0, logs.stderr);
    const ambiguous = await runCli(["logs", name, "--revision", "abcdef"], env);
    assert.equal(ambiguous.code, 2);
    assert.match(ambiguous.stderr, /#3 \(abcdef02-.*#2 \(abcdef01-/);
    const missing = await runCli(["rollback", name, "99"], env);
    assert.equal(missing.code, 4);
    assert.match(missing.stderr, /has no revision #99: its revisions are #1 to #5/);
    const nonsense = await runCli(["rollback", name, "yesterday"], env);
    assert.equal(nonsense.code, 2);
    const rollback = await runCli(["rollback", name, "#1", "--no-wait"], env);
    assert.equal(rollback.code, 0, rollback.stderr);
    assert.match(rollback.stdout, /Rolling back revs to revision #1: new revision #6 \([0-9a-f-]{36}\)\./);
    const interrupted = await runCli(["interrupt", name, "--revision", "6", "--json"], env);
    assert.equal(interrupted.code, 0, interrupted.stderr);
    assert.equal(JSON.parse(interrupted.stdout).status, "INTERRUPTED");
    assert.equal(JSON.parse(interrupted.stdout).number, 6);
  });
});
