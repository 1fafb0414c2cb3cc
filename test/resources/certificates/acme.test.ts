import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { eventsAfter, sequenceEvents } from "../../../src/core/events/store.ts";
import { certificateStates } from "../../../src/resources/certificates/store.ts";
import { type RunningReconciler, startReconciler } from "../../../src/wiring/reconciler.ts";
import { freePort } from "../../e2e/stack.ts";
import { call, type Deployment } from "../../helpers/deployments.ts";
import { startDnsServer } from "../../helpers/dns-challtestsrv.ts";
import { eventually } from "../../helpers/eventually.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";
import { startPebble } from "../../helpers/pebble.ts";
import { h2Get, handshake, httpsGet } from "../../helpers/tls-client.ts";
import { waitForRevision } from "../../helpers/wait.ts";

interface Domain {
  id: string;
  hostname: string;
  verification: { status: string; record_name: string; token: string };
  certificate: { status: string; expires_at: string | null; reason: string | null };
}

// The whole path with real components (issue 30): Pebble validates HTTP-01 through the edge's
// plain port, resolving every name through pebble-challtestsrv; certificates live 24 s, so renewal
// (at two thirds) happens within the suite.
const LIFE_S = 24;
const dns = await startDnsServer({ noIpv6: true });
const appsPort = await freePort();
const tlsPort = await freePort();
const pebble = await startPebble({ httpPort: appsPort, dnsServer: dns.address, validitySeconds: LIFE_S });
after(async () => {
  await pebble.stop();
  await dns.stop();
});

/** A plain HTTP request to the apps port: status and Location. */
function plainGet(host: string, path: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: appsPort, path, headers: { host } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** The certificate.issued events of `host` in the workspace (sequenced first, as a follower would). */
async function issuedEvents(ctx: TestContext, host: string): Promise<number> {
  await sequenceEvents(ctx.db);
  const events = await eventsAfter(ctx.db.orm, ctx.workspaceId, "0", ["certificate.issued"], 1000);
  return events.filter((e) => e.body.includes(`"${host}"`)).length;
}

forEachDatabase(
  "HTTPS on the apps edge with certificates from an ACME server (Pebble)",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let root = "";
    let dep: Deployment;
    let appHost = "";
    before(async () => {
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      root = await pebble.root();
      const created = await call<Deployment>(suite.ctx, "POST", "/v2/deployments", {
        name: `tls-${kind}`,
        source: "internal_template",
        source_revision_config: { repo_ref: "hello-http" },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      dep = created.body;
      assert.ok(dep.latest_revision_id);
      assert.equal(
        await waitForRevision(suite.ctx.db, dep.latest_revision_id, { timeoutMs: 120_000 }),
        "DEPLOYED",
      );
      appHost = `${dep.name}.${suite.ctx.config.apps.domain}`;
    });
    after(async () => {
      await stack?.stop();
    });

    it("serves the app over HTTPS with a Pebble certificate, HTTP/1.1 and HTTP/2", async () => {
      assert.equal(stack?.runtime.tlsPort, tlsPort);
      const h1 = await httpsGet(tlsPort, appHost, root);
      assert.equal(h1.status, 200, h1.body);
      assert.equal(h1.alpn, "http/1.1");
      const h2 = await h2Get(tlsPort, appHost, root);
      assert.equal(h2.status, 200, h2.body);
      assert.equal(h2.alpn, "h2");
      assert.equal(h2.body, h1.body);
      // The deployment's URL is the HTTPS one.
      const own = (await call<Deployment>(suite.ctx, "GET", `/v2/deployments/${dep.id}`)).body;
      assert.equal(own.source_config.custom_url, `https://${appHost}:${tlsPort}`);
      // The certificate names the host and chains to Pebble's root (the client checked the chain).
      const shake = await handshake(tlsPort, appHost, root);
      assert.ok(shake.ok);
      assert.match(shake.cert.subjectaltname ?? "", new RegExp(`DNS:${appHost}`));
      // Issued once, reported as an event of the deployment's workspace.
      await eventually(
        "the certificate.issued event",
        async () => (await issuedEvents(suite.ctx, appHost)) > 0,
        10_000,
      );
    });

    it("redirects plain HTTP to HTTPS (308), except ACME's challenge path", async () => {
      const plain = await plainGet(`${appHost}:${appsPort}`, "/some/path?x=1");
      assert.equal(plain.status, 308);
      assert.equal(plain.location, `https://${appHost}:${tlsPort}/some/path?x=1`);
      const challenge = await plainGet(`${appHost}:${appsPort}`, "/.well-known/acme-challenge/unknown-token");
      assert.equal(challenge.status, 404, "an unknown token is a 404, never a redirect");
      const bad = await plainGet(`${appHost}:${appsPort}`, "/.well-known/acme-challenge/../../etc");
      assert.equal(bad.status, 404);
    });

    it("a verified custom domain gets its own certificate, never before verification", async () => {
      const host = `shop-${kind}.example.com`;
      const added = await call<Domain>(suite.ctx, "POST", `/v2/deployments/${dep.id}/domains`, {
        hostname: host,
      });
      assert.equal(added.status, 201);
      assert.equal(added.body.certificate.status, "none");
      // Pending: no certificate, not even on demand at a handshake.
      const early = await handshake(tlsPort, host, root);
      assert.equal(early.ok, false);
      assert.deepEqual(await certificateStates(suite.ctx.db.orm, [host]), []);

      await dns.setTxt(added.body.verification.record_name, added.body.verification.token);
      await eventually(
        "the domain's certificate to be issued",
        async () => {
          const list = await call<Domain[]>(suite.ctx, "GET", `/v2/deployments/${dep.id}/domains`);
          return list.body.find((d) => d.id === added.body.id)?.certificate.status === "issued";
        },
        30_000,
      );
      const list = await call<Domain[]>(suite.ctx, "GET", `/v2/deployments/${dep.id}/domains`);
      const cert = list.body.find((d) => d.id === added.body.id)?.certificate;
      assert.ok(cert?.expires_at);
      assert.ok(Date.parse(cert.expires_at) > Date.now());
      assert.equal(cert.reason, null);
      const h2 = await h2Get(tlsPort, host, root);
      assert.equal(h2.status, 200, h2.body);
      const h1 = await httpsGet(tlsPort, host, root);
      assert.equal(h1.status, 200, h1.body);
      const own = (await call<Deployment>(suite.ctx, "GET", `/v2/deployments/${dep.id}`)).body;
      assert.equal(own.source_config.custom_url, `https://${host}:${tlsPort}`);
    });

    it("an unknown name gets no certificate and causes no order", async () => {
      const shake = await handshake(tlsPort, `nobody-${kind}.example.net`, root);
      assert.equal(shake.ok, false);
      const other = await handshake(tlsPort, `x.${suite.ctx.config.apps.domain}`, root);
      assert.equal(other.ok, false);
      assert.deepEqual(
        await certificateStates(suite.ctx.db.orm, [
          `nobody-${kind}.example.net`,
          `x.${suite.ctx.config.apps.domain}`,
        ]),
        [],
      );
      // The edge keeps serving.
      assert.equal((await httpsGet(tlsPort, appHost, root)).status, 200);
    });

    it("renews at two thirds of the certificate's life, without a failed request", async () => {
      const first = await httpsGet(tlsPort, appHost, root);
      const leaf = new X509Certificate(
        await handshake(tlsPort, appHost, root).then((s) => (s.ok ? s.cert.raw : Buffer.alloc(0))),
      );
      const life = Date.parse(leaf.validTo) - Date.parse(leaf.validFrom);
      assert.ok(life <= (LIFE_S + 1) * 1000, `a short life: ${life} ms`);
      let failures = 0;
      await eventually(
        "a renewed certificate to be served",
        async () => {
          const now = await httpsGet(tlsPort, appHost, root).catch(() => undefined);
          if (now?.status !== 200) failures++;
          return now !== undefined && now.serial !== first.serial;
        },
        LIFE_S * 1000 + 10_000,
      );
      assert.equal(failures, 0);
    });

    if (kind === "postgres")
      it("two servers on one database share one certificate, ordered once", async () => {
        // A second `slipway serve` on the same database, with its own data dir and ports. Pebble
        // validates through the first one's plain port whichever server ordered: the HTTP-01
        // answers are in the database.
        const dataDir = mkdtempSync(join(tmpdir(), "slipway-second-"));
        const config = {
          ...suite.ctx.config,
          dataDir,
          apps: {
            ...suite.ctx.config.apps,
            port: await freePort(),
            tls: { ...suite.ctx.config.apps.tls, port: await freePort() },
          },
        };
        const second = await startReconciler(
          { config, db: suite.ctx.db, keyring: suite.ctx.keyring },
          suite.ctx.app.log,
        );
        try {
          const secondTls = second.runtime.tlsPort ?? 0;
          assert.ok(secondTls > 0 && secondTls !== tlsPort);
          const host = `both-${kind}.example.com`;
          const added = await call<Domain>(suite.ctx, "POST", `/v2/deployments/${dep.id}/domains`, {
            hostname: host,
          });
          await dns.setTxt(added.body.verification.record_name, added.body.verification.token);
          await eventually(
            "the domain to be verified",
            async () =>
              (await call<Domain[]>(suite.ctx, "GET", `/v2/deployments/${dep.id}/domains`)).body.find(
                (d) => d.id === added.body.id,
              )?.verification.status === "verified",
            30_000,
          );
          // Both servers are asked for it at once, as soon as it is verified.
          const [here, there] = await Promise.all([
            handshake(tlsPort, host, root),
            handshake(secondTls, host, root),
          ]);
          assert.ok(here.ok && there.ok, JSON.stringify([here, there]));
          assert.equal(here.cert.serialNumber, there.cert.serialNumber);
          const issued = () => issuedEvents(suite.ctx, host);
          await eventually("the certificate.issued event", async () => (await issued()) > 0, 10_000);
          // Both keep looking over certificates meanwhile: still one order.
          await new Promise((r) => setTimeout(r, 1500));
          assert.equal(await issued(), 1, "one order for the two servers");
        } finally {
          await second.stop();
          rmSync(dataDir, { recursive: true, force: true });
        }
      });
  },
  {
    env: {
      SLIPWAY_RECONCILER: "true",
      SLIPWAY_RECONCILER_POLL_MS: "200",
      SLIPWAY_APPS_PORT: String(appsPort),
      SLIPWAY_APPS_DOMAIN: "apps.example.com",
      SLIPWAY_HEALTH_TIMEOUT_MS: "5000",
      SLIPWAY_DNS_RESOLVER: dns.address,
      SLIPWAY_DOMAIN_CHECK_MS: "200",
      SLIPWAY_APPS_TLS: "acme",
      SLIPWAY_APPS_TLS_PORT: String(tlsPort),
      SLIPWAY_ACME_DIRECTORY_URL: pebble.directoryUrl,
      SLIPWAY_ACME_CA_FILE: pebble.caFile,
      SLIPWAY_CERT_CHECK_MS: "200",
      SLIPWAY_APPS_TLS_HANDSHAKE_TIMEOUT_MS: "20000",
    },
  },
);
