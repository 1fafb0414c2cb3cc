import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { connect, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import pg from "pg";
import { gatedDatabaseUri } from "../../../../src/runtimes/local/network/database.ts";
import {
  type DeploymentNetwork,
  NetworkNamespaces,
} from "../../../../src/runtimes/local/network/namespace.ts";
import { probeNetworkNamespaces } from "../../../../src/runtimes/local/network/probe.ts";
import { TEST_DATABASE_URL } from "../../../helpers/databases.ts";

// Real namespaces, veths and nft tables of this test's own names (removed in `after`). Traffic goes
// only to loopback and to addresses inside these namespaces; blocking elsewhere is read from rules.
const probe = await probeNetworkNamespaces();
const skip = probe.ok ? false : `network namespaces are off here: ${probe.detail}`;
const tag = randomBytes(3).toString("hex");
const require = createRequire(import.meta.url);

function sh(file: string, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = execFile(file, args, { timeout: 20_000 }, (err, out, stderr) =>
      err ? reject(new Error(`${file} ${args.join(" ")}: ${stderr || err.message}`)) : resolve(String(out)),
    );
    c.stdin?.on("error", () => {});
    c.stdin?.end(input ?? "");
  });
}

/** From inside `net`: whether a TCP connection to host:port is accepted (1 s at most). */
async function reachesFrom(net: DeploymentNetwork, host: string, port: number): Promise<boolean> {
  const js = `const s=require("net").connect(${port},"${host}");s.setTimeout(1000);s.on("connect",()=>{console.log("open");process.exit(0)});s.on("error",()=>{console.log("closed");process.exit(0)});s.on("timeout",()=>{console.log("closed");process.exit(0)})`;
  const out = await sh("nsenter", [`--net=${net.path}`, "--", process.execPath, "-e", js]);
  return out.trim() === "open";
}

function listen(host: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer((s) => s.end("hi"));
    server.listen(0, host, () => {
      const a = server.address();
      resolve({ server, port: typeof a === "object" && a !== null ? a.port : 0 });
    });
  });
}

describe("a network namespace per deployment", { skip }, () => {
  const db = `slipway_app_${randomBytes(6).toString("hex")}`;
  let slots: string;
  let namespaces: NetworkNamespaces;
  let spy: DeploymentNetwork;
  let victim: DeploymentNetwork;
  let hostService: { server: Server; port: number };
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await c.connect();
    await c.query(sql).finally(() => c.end());
  };

  before(async () => {
    slots = await mkdtemp(join(tmpdir(), "slipway-netns-slots-"));
    namespaces = new NetworkNamespaces({
      egress: "none",
      allow: ["192.168.7.0/24", "fd12::/64"],
      table: `slipway_test_${tag}`,
      prefix: "tq",
      namePrefix: `slipway-test-${tag}-`,
      slotsDir: slots,
    });
    spy = await namespaces.ensure(`spy-${tag}`);
    victim = await namespaces.ensure(`victim-${tag}`);
    hostService = await listen("127.0.0.1");
    await admin(`CREATE ROLE ${db} LOGIN`);
    await admin(`CREATE DATABASE ${db} OWNER ${db}`);
  });
  after(async () => {
    hostService?.server.close();
    await namespaces?.closeAll();
    await rm(slots, { recursive: true, force: true });
    await admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => undefined);
    await admin(`DROP ROLE IF EXISTS ${db}`).catch(() => undefined);
  });

  it("gives each deployment its own namespace and /30, idempotently", async () => {
    assert.notEqual(spy.address, victim.address);
    assert.deepEqual(await namespaces.ensure(`spy-${tag}`), spy);
    const list = await sh("ip", ["netns", "list"]);
    assert.match(list, new RegExp(spy.name));
    assert.match(list, new RegExp(victim.name));
  });

  it("reaches nothing on the host's loopback (PostgreSQL, a host listener)", async () => {
    assert.equal(await reachesFrom(spy, "127.0.0.1", 5432), false);
    assert.equal(await reachesFrom(spy, "127.0.0.1", hostService.port), false);
    // The host end of its own veth, on a port that is not its gate.
    const onHostEnd = await listen(spy.hostAddress);
    try {
      assert.equal(await reachesFrom(spy, spy.hostAddress, onHostEnd.port), false);
    } finally {
      onHostEnd.server.close();
    }
  });

  it("lets the host reach an app listening on 127.0.0.1 in the namespace, and no other namespace", async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const js = `require("net").createServer(s=>s.end("victim")).listen(${port},"127.0.0.1",()=>console.log("up"))`;
    const child = execFile("nsenter", [`--net=${victim.path}`, "--", process.execPath, "-e", js]);
    try {
      await new Promise((resolve) => child.stdout?.once("data", resolve));
      const fromHost = await new Promise<string>((resolve, reject) => {
        const s = connect(port, victim.address);
        let got = "";
        s.on("data", (d: Buffer) => {
          got += d.toString();
        });
        s.on("close", () => resolve(got));
        s.on("error", reject);
      });
      assert.equal(fromHost, "victim");
      assert.equal(await reachesFrom(spy, victim.address, port), false);
      assert.equal(await reachesFrom(spy, victim.hostAddress, port), false);
    } finally {
      child.kill();
    }
  });

  it("leads DATABASE_URI to a gate that admits the deployment's own role and database only", async () => {
    const server = new URL(TEST_DATABASE_URL);
    server.username = db;
    server.pathname = `/${db}`;
    const uri = await gatedDatabaseUri(namespaces, `spy-${tag}`, server.toString());
    assert.ok(uri !== undefined);
    const u = new URL(uri);
    assert.equal(u.hostname, spy.hostAddress);
    const query = (user: string, database: string) => {
      const target = new URL(uri);
      target.username = user;
      target.pathname = `/${database}`;
      const js = `const pg=require(${JSON.stringify(require.resolve("pg"))});const c=new pg.Client({connectionString:${JSON.stringify(target.toString())}});c.connect().then(()=>c.query("select current_user u")).then(r=>{console.log("ok "+r.rows[0].u);return c.end()},e=>console.log("err "+e.code))`;
      return sh("nsenter", [`--net=${spy.path}`, "--", process.execPath, "-e", js]);
    };
    assert.equal((await query(db, db)).trim(), `ok ${db}`);
    assert.equal((await query("postgres", db)).trim(), "err 28000");
    assert.equal((await query(db, "postgres")).trim(), "err 28000");
    // Another namespace does not reach this deployment's gate.
    assert.equal(await reachesFrom(victim, spy.hostAddress, Number(u.port)), false);
  });

  it("installs the host rules: only gates in, nothing between namespaces, masquerade out", async () => {
    const rules = await sh("nft", ["list", "table", "inet", `slipway_test_${tag}`]);
    assert.match(rules, /iifname "tq\*" ct state established,related accept/);
    assert.match(rules, /iifname \. ip daddr \. tcp dport @gates accept/);
    assert.match(rules, /hook input[\s\S]*iifname "tq\*" drop/);
    assert.match(rules, /iifname "tq\*" oifname "tq\*" drop/);
    assert.match(rules, /oifname "tq\*" drop/);
    assert.match(rules, /ip saddr 198\.18\.0\.0\/15 oifname != "tq\*" masquerade/);
  });

  it("installs the egress policy in the namespace: private ranges and metadata denied, allow list first", async () => {
    const rules = await sh("ip", ["netns", "exec", spy.name, "nft", "list", "table", "inet", "slipway"]);
    const allow = rules.indexOf("192.168.7.0/24");
    const denyLine = rules.split("\n").find((l) => /ip daddr \{.*\} drop/.test(l)) ?? "";
    for (const range of [
      "10.0.0.0/8",
      "172.16.0.0/12",
      "192.168.0.0/16",
      "100.64.0.0/10",
      "169.254.0.0/16",
    ]) {
      assert.ok(denyLine.includes(range), `${range} denied: ${rules}`);
    }
    assert.ok(allow > 0 && rules.indexOf(denyLine) > allow, rules);
    assert.match(rules, /ip6 daddr \{ fc00::\/7, fe80::\/10 \} drop/);
    assert.match(rules, /ip6 daddr fd12::\/64 accept/);
    // egress "none": the chain ends in a drop, not an accept.
    assert.match(rules, /drop\s*\}\s*\}\s*$/);
    assert.match(
      rules,
      new RegExp(`iifname "eth0" ip daddr ${spy.address.replace(/\./g, "\\.")} dnat ip to 127\\.0\\.0\\.1`),
    );
  });

  it("removes the namespace, its veth and its address slot", async () => {
    const id = `gone-${tag}`;
    const net = await namespaces.ensure(id);
    await namespaces.remove(id);
    assert.doesNotMatch(await sh("ip", ["netns", "list"]), new RegExp(net.name));
    assert.doesNotMatch(await sh("ip", ["-o", "link", "show"]), new RegExp(net.hostIf));
  });
});
