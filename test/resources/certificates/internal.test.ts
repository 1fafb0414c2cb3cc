import assert from "node:assert/strict";
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { eventsAfter, sequenceEvents } from "../../../src/core/events/store.ts";
import { rows } from "../../../src/db/client.ts";
import { InternalIssuer } from "../../../src/resources/certificates/internal.ts";
import { IssueError, type Issuer } from "../../../src/resources/certificates/issuer.ts";
import { CertificateKeeper } from "../../../src/resources/certificates/keeper.ts";
import { certificateStates, claimDue } from "../../../src/resources/certificates/store.ts";
import { type RunningReconciler, startReconciler } from "../../../src/wiring/reconciler.ts";
import { freePort } from "../../e2e/stack.ts";
import { deployHello } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";
import { h2Get, httpsGet } from "../../helpers/tls-client.ts";

// SLIPWAY_APPS_TLS=internal through `slipway serve`'s wiring: the root written where the log says,
// a client that trusts it, keys stored encrypted; and the keeper's failure path (back-off, event).
const appsPort = await freePort();
const tlsPort = await freePort();
const quiet = { info: () => {}, warn: () => {} };

/** An issuer that always fails, as an unreachable ACME server would. */
class FailingIssuer implements Issuer {
  readonly source = "acme" as const;
  calls = 0;
  async issue(hostname: string): Promise<{ certPem: string; keyPem: string }> {
    this.calls++;
    throw new IssueError(`the ACME server did not issue a certificate for ${hostname}: connection refused`);
  }
}

forEachDatabase(
  "HTTPS on the apps edge by the internal CA",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let host = "";
    before(async () => {
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      host = await deployHello(suite.ctx, `internal-${kind}`);
    });
    after(async () => {
      await stack?.stop();
    });

    it("serves apps with certificates a client trusting <data dir>/tls/root.crt accepts", async () => {
      const rootPath = join(suite.ctx.config.dataDir, "tls", "root.crt");
      const root = readFileSync(rootPath, "utf8");
      const rootCert = new X509Certificate(root);
      assert.equal(rootCert.ca, true);
      const h1 = await httpsGet(tlsPort, host, root);
      assert.equal(h1.status, 200, h1.body);
      const h2 = await h2Get(tlsPort, host, root);
      assert.equal(h2.status, 200, h2.body);
      assert.equal(h2.alpn, "h2");
      // Without trusting the root, the handshake is refused by the client.
      await assert.rejects(httpsGet(tlsPort, host, []), /self[- ]signed|unable to (get|verify)/);
      // Another server on the database signs with the same root, and writes the same file.
      const other = new InternalIssuer(
        suite.ctx.db,
        suite.ctx.keyring,
        join(suite.ctx.config.dataDir, "other"),
      );
      const issued = await other.issue(`another.${suite.ctx.config.apps.domain}`);
      assert.equal(readFileSync(other.rootPath, "utf8"), root);
      assert.ok(new X509Certificate(issued.certPem).verify(rootCert.publicKey));
      // Private keys are stored as keyring envelopes, never as PEM.
      const keys = await rows<{ key_enc: string }>(
        suite.ctx.db.orm,
        sql`SELECT key_enc FROM tls_authorities UNION ALL SELECT key_enc FROM tls_certificates WHERE key_enc IS NOT NULL`,
      );
      assert.ok(keys.length >= 2);
      for (const k of keys) {
        assert.match(k.key_enc, /^sw1\./);
        assert.doesNotMatch(k.key_enc, /PRIVATE KEY/);
      }
    });

    it("a failed order keeps the valid certificate serving, backs off and is reported", async () => {
      const failing = new FailingIssuer();
      // A keeper whose mode differs (acme): the internal certificate is due for it, and it fails.
      const keeper = new CertificateKeeper(suite.ctx.db, suite.ctx.keyring, failing, {
        appsDomain: suite.ctx.config.apps.domain,
        checkEveryMs: 60_000,
        onDemandWaitMs: 1000,
        logger: quiet,
      });
      await keeper.tick();
      await keeper.stop();
      assert.ok(failing.calls >= 1);
      const [state] = await certificateStates(suite.ctx.db.orm, [host]);
      assert.equal(state?.status, "issued", "the certificate still serves");
      assert.match(state?.reason ?? "", /connection refused/);
      // Backing off: not due again for a minute, so nobody claims it now.
      const again = await claimDue(suite.ctx.db.orm, {
        appsDomain: suite.ctx.config.apps.domain,
        source: "acme",
        owner: "test",
        leaseMs: 1000,
        limit: 10,
        hostname: host,
      });
      assert.deepEqual(again, []);
      await sequenceEvents(suite.ctx.db);
      const events = await eventsAfter(
        suite.ctx.db.orm,
        suite.ctx.workspaceId,
        "0",
        ["certificate.failed"],
        100,
      );
      const mine = events
        .map((e) => JSON.parse(e.body) as { data: Record<string, unknown> })
        .find((e) => e.data.hostname === host);
      assert.ok(mine, "a certificate.failed event");
      assert.equal(mine.data.still_serving, true);
      assert.equal(mine.data.retry_in_s, 60);
      assert.match(String(mine.data.reason), /connection refused/);
      // The edge still serves over HTTPS.
      const root = readFileSync(join(suite.ctx.config.dataDir, "tls", "root.crt"), "utf8");
      assert.equal((await httpsGet(tlsPort, host, root)).status, 200);
    });
  },
  {
    env: {
      SLIPWAY_RECONCILER: "true",
      SLIPWAY_RECONCILER_POLL_MS: "200",
      SLIPWAY_APPS_PORT: String(appsPort),
      SLIPWAY_HEALTH_TIMEOUT_MS: "5000",
      SLIPWAY_APPS_TLS: "internal",
      SLIPWAY_APPS_TLS_PORT: String(tlsPort),
      SLIPWAY_CERT_CHECK_MS: "200",
    },
  },
);
