import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { openDatabase } from "../../../src/db/client.ts";
import { backoffMs, DomainChecker } from "../../../src/resources/domains/checker.ts";
import { VerifiedHosts } from "../../../src/resources/domains/hosts.ts";
import { call, type Deployment } from "../../helpers/deployments.ts";
import { type DnsServer, startDnsServer } from "../../helpers/dns-challtestsrv.ts";
import { eventually } from "../../helpers/eventually.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

interface Domain {
  id: string;
  hostname: string;
  verification: { status: string; record_name: string; token: string; reason: string | null };
}

// A real DNS server (pebble-challtestsrv) answers the checks.
let dns: DnsServer;
before(async () => {
  dns = await startDnsServer();
});
after(async () => {
  await dns?.stop();
});

it("back-off doubles from the base pause, up to an hour", () => {
  assert.equal(backoffMs(1000, 0), 1000);
  assert.equal(backoffMs(1000, 3), 8000);
  assert.equal(backoffMs(30_000, 7), 3_600_000);
  assert.equal(backoffMs(30_000, 1000), 3_600_000);
});

forEachDatabase(
  "custom domain verification through a real DNS server",
  (suite, kind) => {
    let checker: DomainChecker;
    let hosts: VerifiedHosts;
    let dep: Deployment;
    const domains = (id: string) => `/v2/deployments/${id}/domains`;
    const find = async (id: string) => {
      const list = await call<Domain[]>(suite.ctx, "GET", domains(dep.id));
      const d = list.body.find((x) => x.id === id);
      assert.ok(d, `domain ${id} listed`);
      return d;
    };
    /** Runs checks until the domain's check has recorded something other than `before`. */
    const checkedPast = async (id: string, previous: string | null) =>
      eventually(
        "a check of the domain",
        async () => {
          await checker.tick();
          const d = await find(id);
          return d.verification.status === "verified" || d.verification.reason !== previous ? d : undefined;
        },
        20_000,
      );

    before(async () => {
      const ctx = suite.ctx;
      checker = new DomainChecker(ctx.db, {
        dnsResolver: dns.address,
        checkEveryMs: 100,
        appsDomain: "apps.test",
        logger: { warn: () => {} },
      });
      hosts = new VerifiedHosts(ctx.db, 3_600_000);
      await hosts.start();
      const res = await call<Deployment>(ctx, "POST", "/v2/deployments", {
        name: `dom-${kind}`,
        source: "internal_template",
        source_revision_config: { repo_ref: "hello-http" },
      });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      dep = res.body;
    });
    after(async () => {
      await checker?.stop();
      await hosts?.stop();
    });

    it("no TXT record: pending with the reason; a wrong value: pending with that reason; the token: verified", async () => {
      const ctx = suite.ctx;
      const host = `www.${kind}.example.com`;
      const added = await call<Domain>(ctx, "POST", domains(dep.id), { hostname: host });
      assert.equal(added.status, 201);
      const { id, token, record_name } = { id: added.body.id, ...added.body.verification };

      const missing = await checkedPast(id, null);
      assert.equal(missing.verification.status, "pending");
      assert.equal(missing.verification.reason, `No TXT record at _slipway.${host}.`);
      assert.equal(hosts.nameOf(host), undefined);

      await dns.setTxt(record_name, "someone-elses-token");
      const wrong = await checkedPast(id, missing.verification.reason);
      assert.equal(wrong.verification.status, "pending");
      assert.match(
        wrong.verification.reason ?? "",
        /does not hold the token \(found "someone-elses-token"\)/,
      );

      await dns.setTxt(record_name, token);
      const ok = await checkedPast(id, wrong.verification.reason);
      assert.equal(ok.verification.status, "verified");
      assert.equal(ok.verification.reason, null);

      // custom_url names the verified domain, with the apps listener's scheme and port.
      const d = (await call<Deployment>(ctx, "GET", `/v2/deployments/${dep.id}`)).body;
      assert.equal(d.source_config.custom_url, `http://${host}:8081`);
      // The edge's map learns it from the notification.
      await eventually("the custom hosts to reload", () => hosts.nameOf(host) === dep.name, 10_000);

      // Verified stays verified: the record may go.
      await dns.clearTxt(record_name);
      await checker.tick();
      assert.equal((await find(id)).verification.status, "verified");

      // Removing it moves custom_url back to the apps domain and unserves the host.
      assert.equal((await call(ctx, "DELETE", `${domains(dep.id)}/${id}`)).status, 200);
      const back = (await call<Deployment>(ctx, "GET", `/v2/deployments/${dep.id}`)).body;
      assert.equal(back.source_config.custom_url, `http://${dep.name}.apps.test:8081`);
      await eventually("the custom hosts to drop it", () => hosts.nameOf(host) === undefined, 10_000);
    });

    it("custom_url is the first verified domain; the next one takes over when it goes", async () => {
      const ctx = suite.ctx;
      const a = (await call<Domain>(ctx, "POST", domains(dep.id), { hostname: `a.${kind}.example.org` }))
        .body;
      const b = (await call<Domain>(ctx, "POST", domains(dep.id), { hostname: `b.${kind}.example.org` }))
        .body;
      await dns.setTxt(a.verification.record_name, a.verification.token);
      await checkedPast(a.id, null);
      await dns.setTxt(b.verification.record_name, b.verification.token);
      await checkedPast(b.id, (await find(b.id)).verification.reason);
      const url = async () =>
        (await call<Deployment>(ctx, "GET", `/v2/deployments/${dep.id}`)).body.source_config.custom_url;
      assert.equal(await url(), `http://${a.hostname}:8081`);
      assert.equal((await call(ctx, "DELETE", `${domains(dep.id)}/${a.id}`)).status, 200);
      assert.equal(await url(), `http://${b.hostname}:8081`);
    });

    it("two servers on one database: one verifies, the other's edge learns it from the notification", async (t) => {
      const ctx = suite.ctx;
      if (kind !== "postgres" || !ctx.dbUrl) {
        t.skip("replicas share a PostgreSQL server");
        return;
      }
      // The second server: its own connections, its own custom hosts, no checker.
      const db2 = await openDatabase({ kind: "postgres", url: ctx.dbUrl }, { poolSize: 2 });
      const hosts2 = new VerifiedHosts(db2, 3_600_000);
      try {
        await hosts2.start();
        const host = `replica.${kind}.example.com`;
        const added = (await call<Domain>(ctx, "POST", domains(dep.id), { hostname: host })).body;
        await dns.setTxt(added.verification.record_name, added.verification.token);
        await checkedPast(added.id, null);
        assert.equal((await find(added.id)).verification.status, "verified");
        await eventually(
          "the other server's edge to serve it",
          () => hosts2.nameOf(host) === dep.name,
          10_000,
        );
        assert.equal((await call(ctx, "DELETE", `${domains(dep.id)}/${added.id}`)).status, 200);
        await eventually(
          "the other server's edge to drop it",
          () => hosts2.nameOf(host) === undefined,
          10_000,
        );
      } finally {
        await hosts2.stop();
        await db2.close();
      }
    });

    it("a DNS server that does not answer: pending with a lookup failure as the reason", async () => {
      const ctx = suite.ctx;
      const deaf = new DomainChecker(ctx.db, {
        // A loopback port nobody listens on (UDP: the query goes unanswered, then refused).
        dnsResolver: "127.0.0.1:9",
        checkEveryMs: 100,
        appsDomain: "apps.test",
        logger: { warn: () => {} },
      });
      const added = (
        await call<Domain>(ctx, "POST", domains(dep.id), { hostname: `deaf.${kind}.example.net` })
      ).body;
      const d = await eventually(
        "a failed lookup",
        async () => {
          await deaf.tick();
          const x = await find(added.id);
          return x.verification.reason?.includes("DNS lookup") ? x : undefined;
        },
        60_000,
      );
      assert.equal(d.verification.status, "pending");
      await deaf.stop();
    });
  },
  { env: { SLIPWAY_APPS_DOMAIN: "apps.test" } },
);
