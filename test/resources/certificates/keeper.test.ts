import assert from "node:assert/strict";
import { after, before, it } from "node:test";
import { eventsAfter, sequenceEvents } from "../../../src/core/events/store.ts";
import { IssueError, type Issuer } from "../../../src/resources/certificates/issuer.ts";
import { CertificateKeeper, orderBackoffMs } from "../../../src/resources/certificates/keeper.ts";
import { certificateStates } from "../../../src/resources/certificates/store.ts";
import { type RunningReconciler, startReconciler } from "../../../src/wiring/reconciler.ts";
import { freePort } from "../../e2e/stack.ts";
import { deployHello } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

// The keeper on its own (TLS off for the server): which names it orders for, and a host whose
// orders fail (no certificate at all): `failed`, back-off, an event, handshakes refused at once.

const appsPort = await freePort();
const quiet = { info: () => {}, warn: () => {} };

class FailingIssuer implements Issuer {
  readonly source = "acme" as const;
  calls: string[] = [];
  async issue(hostname: string): Promise<{ certPem: string; keyPem: string }> {
    this.calls.push(hostname);
    throw new IssueError(`the ACME server did not issue a certificate for ${hostname}: rate limited`);
  }
}

it("backs off from the check interval, doubling per failure, up to 6 hours", () => {
  assert.equal(orderBackoffMs(60_000, 0), 60_000);
  assert.equal(orderBackoffMs(60_000, 1), 120_000);
  assert.equal(orderBackoffMs(60_000, 3), 480_000);
  assert.equal(orderBackoffMs(60_000, 50), 6 * 3_600_000);
});

forEachDatabase(
  "the certificate keeper",
  (suite, kind) => {
    let stack: RunningReconciler | undefined;
    let host = "";
    before(async () => {
      stack = await startReconciler(suite.ctx, suite.ctx.app.log);
      host = await deployHello(suite.ctx, `keeper-${kind}`);
    });
    after(async () => {
      await stack?.stop();
    });

    it("orders nothing for names Slipway does not serve", async () => {
      const issuer = new FailingIssuer();
      const keeper = new CertificateKeeper(suite.ctx.db, suite.ctx.keyring, issuer, {
        appsDomain: suite.ctx.config.apps.domain,
        checkEveryMs: 60_000,
        onDemandWaitMs: 2000,
        logger: quiet,
      });
      const names = [`nobody.${suite.ctx.config.apps.domain}`, "example.org", "a.b.c.keeper.test", ""];
      for (const name of names) assert.equal(await keeper.context(name), undefined);
      assert.deepEqual(issuer.calls, []);
      assert.deepEqual(await certificateStates(suite.ctx.db.orm, names), []);
      await keeper.stop();
    });

    it("a host whose order fails is `failed`, backs off, is reported, and its handshakes fail at once", async () => {
      const issuer = new FailingIssuer();
      const keeper = new CertificateKeeper(suite.ctx.db, suite.ctx.keyring, issuer, {
        appsDomain: suite.ctx.config.apps.domain,
        checkEveryMs: 60_000,
        onDemandWaitMs: 5000,
        logger: quiet,
      });
      try {
        // On demand, at the first handshake (upper case and a trailing dot are the same name).
        assert.equal(await keeper.context(`${host.toUpperCase()}.`), undefined);
        assert.deepEqual(issuer.calls, [host]);
        const [state] = await certificateStates(suite.ctx.db.orm, [host]);
        assert.equal(state?.status, "failed");
        assert.equal(state?.not_after, null);
        assert.match(state?.reason ?? "", /rate limited/);
        // Backing off: the next handshake neither orders nor waits out its timeout.
        const started = Date.now();
        assert.equal(await keeper.context(host), undefined);
        assert.ok(Date.now() - started < 2000, `refused after ${Date.now() - started} ms`);
        await keeper.tick();
        assert.deepEqual(issuer.calls, [host], "no order before the back-off ends");
        await sequenceEvents(suite.ctx.db);
        const failed = (
          await eventsAfter(suite.ctx.db.orm, suite.ctx.workspaceId, "0", ["certificate.failed"], 100)
        ).map((e) => JSON.parse(e.body) as { data: Record<string, unknown> });
        const mine = failed.find((e) => e.data.hostname === host);
        assert.ok(mine, "a certificate.failed event");
        assert.equal(mine.data.still_serving, false);
        assert.equal(mine.data.retry_in_s, 60);
      } finally {
        await keeper.stop();
      }
    });
  },
  {
    env: {
      SLIPWAY_RECONCILER: "true",
      SLIPWAY_RECONCILER_POLL_MS: "200",
      SLIPWAY_APPS_PORT: String(appsPort),
      SLIPWAY_HEALTH_TIMEOUT_MS: "5000",
    },
  },
);
