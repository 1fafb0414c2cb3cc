import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createTestDatabase, DB_KINDS, type TestDatabase } from "../helpers/databases.ts";
import { REPO_ROOT, runSlipway, type SlipwayProcess } from "../helpers/process.ts";
import { makeTarball } from "../helpers/tarballs.ts";

const SERVING = /Slipway is serving (http:\/\/\S+) on/;
/** The tree the issue names v0.1.0, for as long as no later `Release vX.Y.Z` commit exists. */
const V0_1_0 = "ffb35ff";

/** The newest `Release vX.Y.Z` commit of another version than this tree's, else v0.1.0's. */
function previousRelease(): { commit: string; version: string } {
  const { version } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
    version: string;
  };
  const log = execFileSync("git", ["log", "--format=%H %s", "--grep=^Release v"], {
    cwd: REPO_ROOT,
    encoding: "utf8",
  });
  for (const line of log.split("\n")) {
    const m = /^([0-9a-f]{40}) Release v(\d+\.\d+\.\d+)$/.exec(line);
    if (m?.[1] && m[2] && m[2] !== version) return { commit: m[1], version: m[2] };
  }
  return { commit: V0_1_0, version: "0.1.0" };
}

/**
 * The previous release's tree from git history (git archive: the repository is not touched). Its
 * package-lock.json pins the same versions of every package it uses as this tree's (0.2.0 only
 * adds `ignore`), so it runs on this checkout's node_modules: what `npm ci` there would install.
 */
function checkOut(commit: string, into: string): void {
  mkdirSync(into, { recursive: true });
  const archive = execFileSync("git", ["archive", "--format=tar", commit], {
    cwd: REPO_ROOT,
    maxBuffer: 1024 ** 3,
  });
  execFileSync("tar", ["-x", "-C", into], { input: archive });
  symlinkSync(join(REPO_ROOT, "node_modules"), join(into, "node_modules"));
}

function runOld(root: string, env: Record<string, string>): SlipwayProcess {
  return runSlipway(["serve"], env, root);
}

interface Ack {
  id: string;
  name: string;
  via: "old" | "new";
}

/**
 * A rolling upgrade: the previous release serves a PostgreSQL database under writes, the current
 * code starts on the same database (migrating it) while the old server goes on, and both take
 * writes and read each other's: no 5xx, no acknowledged write lost (expand/contract,
 * docs/operations.md#upgrading).
 */
describe("upgrade from the previous release, both live on one PostgreSQL", () => {
  const dirs: string[] = [];
  const servers: SlipwayProcess[] = [];
  let db: TestDatabase | undefined;
  after(async () => {
    for (const s of servers) {
      s.proc.kill("SIGKILL");
      await s.exited;
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await db?.drop();
  });

  it("no 5xx, nothing lost, each reads what the other wrote", {
    skip: !DB_KINDS.includes("postgres"),
  }, async (t) => {
    const prev = previousRelease();
    const root = mkdtempSync(join(tmpdir(), `slipway-v${prev.version}-`));
    dirs.push(root);
    checkOut(prev.commit, root);
    db = await createTestDatabase("postgres");
    await db.db.exec("DROP SCHEMA public CASCADE; CREATE SCHEMA public;");
    // Replicas share the master key (each would make its own in its data dir otherwise).
    const base = {
      SLIPWAY_MASTER_KEY: randomBytes(32).toString("base64"),
      DATABASE_URL: db.url as string,
      PORT: "0",
      SLIPWAY_RECONCILER: "false",
      SLIPWAY_RATE_LIMIT_PER_MINUTE: "0",
    };

    const old = runOld(root, { ...base, SLIPWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "slipway-old-")) });
    servers.push(old);
    const [, oldUrl] = await old.waitFor(SERVING, 120_000);
    const [, key] = await old.waitFor(/^\s+(sw_[A-Za-z0-9_-]{43})$/m);
    const urls: Record<Ack["via"], string> = { old: oldUrl as string, new: "" };

    const failures: string[] = [];
    const acks: Ack[] = [];
    let n = 0;
    const call = async (via: Ack["via"], method: string, path: string, body?: unknown) => {
      const res = await fetch(`${urls[via]}${path}`, {
        method,
        headers: {
          "x-api-key": key as string,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status >= 500) failures.push(`${via} ${method} ${path}: ${res.status} ${text}`);
      return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    };
    let stop = false;
    const writer = async (pick: () => Ack["via"]) => {
      while (!stop) {
        const via = pick();
        if (!urls[via]) continue;
        const name = `up-${n++}`;
        const created = await call(via, "POST", "/v2/deployments", {
          name,
          source: "external_docker",
          source_revision_config: { image_uri: "registry.example/app:1" },
          secrets: [{ name: "TOKEN", value: `v-${name}` }],
        });
        if (created.status !== 201) {
          failures.push(`${via} create ${name}: ${created.status} ${JSON.stringify(created.body)}`);
          continue;
        }
        const id = created.body.id as string;
        acks.push({ id, name, via });
        // A revision-creating PATCH, on the other server when both run.
        const other: Ack["via"] = via === "old" && urls.new ? "new" : "old";
        const patched = await call(other, "PATCH", `/v2/deployments/${id}`, {
          source_revision_config: { image_uri: "registry.example/app:2" },
        });
        if (patched.status !== 200)
          failures.push(`${other} patch ${name}: ${patched.status} ${JSON.stringify(patched.body)}`);
        const hook = await call(via, "POST", "/v2/webhooks", {
          url: `https://hooks.example.com/${name}`,
          events: ["deployment.created"],
        });
        if (hook.status !== 201)
          failures.push(`${via} webhook ${name}: ${hook.status} ${JSON.stringify(hook.body)}`);
      }
    };
    let turn = 0;
    const alternate = () => (turn++ % 2 === 0 ? "old" : "new") as Ack["via"];
    const writers = [writer(() => "old"), writer(alternate), writer(alternate)];
    await new Promise((r) => setTimeout(r, 2000));

    // The current code starts on the same database and migrates it while the old one serves.
    const fresh = runSlipway(["serve"], {
      ...base,
      SLIPWAY_DATA_DIR: mkdtempSync(join(tmpdir(), "slipway-new-")),
    });
    servers.push(fresh);
    const [, newUrl] = await fresh.waitFor(SERVING, 120_000);
    urls.new = newUrl as string;
    await new Promise((r) => setTimeout(r, 8000));
    stop = true;
    await Promise.all(writers);

    assert.deepEqual(
      failures,
      [],
      `failures:\n${failures.slice(0, 20).join("\n")}\nold:\n${old.output().slice(-3000)}\nnew:\n${fresh.output().slice(-3000)}`,
    );
    assert.ok(
      acks.some((a) => a.via === "old") && acks.some((a) => a.via === "new"),
      "both servers took writes",
    );
    t.diagnostic(
      `v${prev.version} and this tree: ${acks.filter((a) => a.via === "old").length} creates on the old server, ${acks.filter((a) => a.via === "new").length} on the new one, each with a PATCH and a webhook`,
    );
    // Every acknowledged create, read on both servers, with the PATCH's revision.
    for (const via of ["old", "new"] as const) {
      for (const a of acks) {
        const got = await call(via, "GET", `/v2/deployments/${a.id}`);
        assert.equal(got.status, 200, `${via} reads ${a.name} (written on ${a.via})`);
        assert.equal(got.body.name, a.name);
      }
      const revisions = await call(via, "GET", `/v2/deployments/${acks[0]?.id}/revisions`);
      assert.equal(revisions.status, 200);
    }
    // Uploads across the two (migration 0028 added uploads.claimed_by): a URL issued by one server
    // takes its tarball on the other, and the finished upload is single-use on both.
    const tarball = await makeTarball({
      "server.js": "require('node:http').createServer((q, s) => s.end('ok')).listen(process.env.PORT)",
    });
    for (const [issuer, receiver] of [
      ["old", "new"],
      ["new", "old"],
    ] as const) {
      const d = await call(issuer, "POST", "/v2/deployments", {
        name: `upload-${issuer}`,
        source: "internal_source",
      });
      assert.equal(d.status, 201, JSON.stringify(d.body));
      const issued = await call(issuer, "POST", `/v2/deployments/${d.body.id}/upload-url`);
      assert.equal(issued.status, 201, JSON.stringify(issued.body));
      const signed = new URL(issued.body.upload_url as string);
      const put = (via: Ack["via"]) =>
        fetch(`${urls[via]}${signed.pathname}${signed.search}`, {
          method: "PUT",
          headers: { "content-type": "application/gzip" },
          body: new Uint8Array(tarball),
        });
      const received = await put(receiver);
      assert.equal(received.status, 200, `${issuer}'s URL on ${receiver}: ${await received.text()}`);
      assert.equal((await put(issuer)).status, 409, "single use on the other server too");
    }
    assert.equal(await fresh.stop(), 0);
    assert.equal(await old.stop(), 0);
  });
});
