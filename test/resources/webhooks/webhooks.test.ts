import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, it } from "node:test";
import { sql } from "drizzle-orm";
import { rows } from "../../../src/db/client.ts";
import type { Reconciler } from "../../../src/reconciler/reconciler.ts";
import { WebhookDispatcher } from "../../../src/resources/webhooks/dispatcher.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker, locs } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";
import { makeReconciler, until } from "../../helpers/reconciler.ts";
import { ScriptedRuntime } from "../../helpers/scripted-runtime.ts";
import { WebhookReceiver } from "../../helpers/webhook-receiver.ts";

interface Hook {
  id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  tenant_id: string;
  secret?: string;
}

interface DeliveryBody {
  id: string;
  event_id: string;
  event_type: string;
  status: string;
  attempts: number;
  history: { status_code: number | null; error: string | null; duration_ms: number }[];
}

const ALL = [
  "deployment.created",
  "deployment.deleted",
  "deployment.status_changed",
  "deployment.storage_exceeded",
  "revision.status_changed",
  "listener.status_changed",
];

forEachDatabase(
  "webhooks",
  (suite) => {
    let dispatcher: WebhookDispatcher;
    let receiver: WebhookReceiver;
    let hook: Hook;
    let otherWorkspaceReceiver: WebhookReceiver;

    before(async () => {
      const ctx = suite.ctx;
      receiver = await new WebhookReceiver().start();
      otherWorkspaceReceiver = await new WebhookReceiver().start();
      dispatcher = new WebhookDispatcher({
        db: ctx.db,
        keyring: ctx.keyring,
        allowPrivate: true,
        log: { warn: () => {} },
        retryBaseMs: 50,
        pollMs: 50,
      });
      await dispatcher.start();
      const res = await call<Hook>(ctx, "POST", "/v2/webhooks", { url: receiver.url, events: ALL });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      hook = res.body;
      const other = await call<Hook>(
        ctx,
        "POST",
        "/v2/webhooks",
        { url: otherWorkspaceReceiver.url, events: ALL },
        { headers: { "x-tenant-id": ctx.workspace2Id } },
      );
      assert.equal(other.status, 201);
    });
    after(async () => {
      await dispatcher.stop();
      await receiver.close();
      await otherWorkspaceReceiver.close();
    });

    const url = () => "/v2/webhooks";
    const one = async () => {
      // Subscribed to what no test here emits: these receivers do not exist.
      const res = await call<Hook>(suite.ctx, "POST", "/v2/webhooks", {
        url: "https://hooks.example.com/x",
        events: ["listener.status_changed"],
      });
      return `/v2/webhooks/${res.body.id}`;
    };
    const otherTenant = async () => {
      const ctx = suite.ctx;
      const res = await call<Hook>(
        ctx,
        "POST",
        "/v2/webhooks",
        { url: "https://hooks.example.com/x", events: ["listener.status_changed"] },
        { key: ctx.other.admin },
      );
      return `/v2/webhooks/${res.body.id}`;
    };
    authMatrix(suite, { method: "GET", url, workspace: true });
    authMatrix(suite, {
      method: "POST",
      url,
      workspace: true,
      payload: () => ({ url: "https://hooks.example.com/x", events: ["listener.status_changed"] }),
    });
    authMatrix(suite, { method: "GET", url: one, workspace: true, otherTenantUrl: otherTenant });
    authMatrix(suite, {
      method: "PATCH",
      url: one,
      workspace: true,
      payload: () => ({ enabled: false }),
      otherTenantUrl: otherTenant,
    });
    authMatrix(suite, { method: "DELETE", url: one, workspace: true, otherTenantUrl: otherTenant });
    authMatrix(suite, {
      method: "POST",
      url: async () => `${await one()}/rotate-secret`,
      workspace: true,
      otherTenantUrl: async () => `${await otherTenant()}/rotate-secret`,
    });
    authMatrix(suite, {
      method: "GET",
      url: async () => `${await one()}/deliveries`,
      workspace: true,
      otherTenantUrl: async () => `${await otherTenant()}/deliveries`,
    });

    it("create shows the secret once; get, list, patch, rotate and delete", async () => {
      const ctx = suite.ctx;
      const created = await call<Hook>(ctx, "POST", "/v2/webhooks", {
        url: "https://hooks.example.com/a",
        events: ["listener.status_changed", "deployment.deleted"],
        description: "ci",
      });
      assert.equal(created.status, 201);
      assert.match(created.body.secret ?? "", /^whsec_[A-Za-z0-9+/=]{32}$/);
      assert.equal(created.body.enabled, true);
      assert.equal(created.body.tenant_id, ctx.workspaceId);
      const got = await call<Hook>(ctx, "GET", `/v2/webhooks/${created.body.id}`, undefined, {
        key: ctx.keys.viewer,
      });
      assert.equal(got.status, 200);
      assert.equal(got.body.secret, undefined, "the secret is never shown again");
      assert.deepEqual(got.body.events, ["listener.status_changed", "deployment.deleted"]);
      const listed = await call<Hook[]>(ctx, "GET", "/v2/webhooks");
      assert.ok(listed.body.some((h) => h.id === created.body.id));
      assert.ok(listed.body.every((h) => h.secret === undefined));

      const patched = await call<Hook>(ctx, "PATCH", `/v2/webhooks/${created.body.id}`, {
        description: "ci 2",
        enabled: false,
      });
      assert.equal(patched.status, 200);
      assert.equal(patched.body.description, "ci 2");
      assert.equal(patched.body.enabled, false);
      assert.equal(patched.body.url, "https://hooks.example.com/a");

      const rotated = await call<Hook>(ctx, "POST", `/v2/webhooks/${created.body.id}/rotate-secret`);
      assert.equal(rotated.status, 200);
      assert.match(rotated.body.secret ?? "", /^whsec_/);
      assert.notEqual(rotated.body.secret, created.body.secret);

      const [stored] = await rows<{ secret_enc: string }>(
        ctx.db.orm,
        sql`SELECT secret_enc FROM webhooks WHERE id = ${created.body.id}`,
      );
      assert.ok(stored && !stored.secret_enc.includes(rotated.body.secret ?? "x"), "stored encrypted");

      assert.equal((await call(ctx, "DELETE", `/v2/webhooks/${created.body.id}`)).status, 204);
      assert.equal((await call(ctx, "GET", `/v2/webhooks/${created.body.id}`)).status, 404);
      assert.equal((await call(ctx, "DELETE", `/v2/webhooks/${created.body.id}`)).status, 404);
    });

    it("bad input is 422 and creates nothing", async () => {
      const ctx = suite.ctx;
      const [before] = await rows<{ n: number }>(ctx.db.orm, sql`SELECT count(*)::int AS n FROM webhooks`);
      const bad: [unknown, string][] = [
        [{ url: "ftp://x.example.com/", events: ["deployment.created"] }, "body.url"],
        [{ url: "http://hooks.example.com/", events: ["deployment.created"] }, "body.url"],
        [{ url: "https://u:p@hooks.example.com/", events: ["deployment.created"] }, "body.url"],
        [{ url: "https://10.0.0.1/", events: ["deployment.created"] }, "body.url"],
        [{ url: "https://169.254.169.254/", events: ["deployment.created"] }, "body.url"],
        [{ url: "not a url", events: ["deployment.created"] }, "body.url"],
        [{ url: "https://hooks.example.com/", events: [] }, "body.events"],
        [{ url: "https://hooks.example.com/", events: ["deployment.exploded"] }, "body.events.0"],
        [
          { url: "https://hooks.example.com/", events: ["deployment.created", "deployment.created"] },
          "body.events",
        ],
        [{ url: "https://hooks.example.com/" }, "body.events"],
      ];
      for (const [payload, loc] of bad) {
        const res = await call(ctx, "POST", "/v2/webhooks", payload);
        assert.ok(locs(res).includes(loc), `${JSON.stringify(payload)} → ${JSON.stringify(res.body)}`);
      }
      const [afterCount] = await rows<{ n: number }>(
        ctx.db.orm,
        sql`SELECT count(*)::int AS n FROM webhooks`,
      );
      assert.equal(afterCount?.n, before?.n);
      const patchEmpty = await call(ctx, "PATCH", `/v2/webhooks/${hook.id}`, {});
      assert.equal(patchEmpty.status, 422);
      const patchBad = await call(ctx, "PATCH", `/v2/webhooks/${hook.id}`, { url: "https://192.168.1.1/" });
      assert.ok(locs(patchBad).includes("body.url"));
      assert.equal((await call(ctx, "GET", `/v2/webhooks/${randomUUID()}`)).status, 404);
      assert.equal((await call(ctx, "GET", "/v2/webhooks/not-a-uuid")).status, 422);
    });

    it("a receiver on loopback gets every event of a deployment's life, in order, signed", async () => {
      const ctx = suite.ctx;
      const runtime = new ScriptedRuntime();
      const reconciler: Reconciler = makeReconciler(ctx, runtime);
      await reconciler.start();
      let deploymentId = "";
      try {
        const d = await createDocker(ctx);
        deploymentId = d.id;
        await until("deployed", async () => {
          const url = `/v2/deployments/${d.id}/revisions/${d.latest_revision_id}`;
          const res = await call<{ status: string }>(ctx, "GET", url);
          return res.body.status === "DEPLOYED";
        });
      } finally {
        await reconciler.stop();
      }
      assert.equal((await call(ctx, "DELETE", `/v2/deployments/${deploymentId}`)).status, 204);
      const mine = () =>
        receiver.accepted(hook.secret ?? "").filter((e) => e.data.deployment_id === deploymentId);
      await until("every event delivered", async () => mine().some((e) => e.type === "deployment.deleted"));
      const seen = mine().map((e) =>
        e.type === "revision.status_changed" || e.type === "deployment.status_changed"
          ? `${e.type}:${e.data.status}`
          : e.type,
      );
      assert.deepEqual(seen, [
        "deployment.created",
        "revision.status_changed:QUEUED",
        // The app's database is ready before its first build starts.
        "deployment.status_changed:READY",
        "revision.status_changed:AWAITING_BUILD",
        "revision.status_changed:BUILDING",
        "revision.status_changed:AWAITING_DEPLOY",
        "revision.status_changed:DEPLOYING",
        "revision.status_changed:DEPLOYED",
        "deployment.status_changed:AWAITING_DELETE",
        "deployment.deleted",
      ]);
      const deployed = mine().find((e) => e.data.status === "DEPLOYED");
      assert.equal(deployed?.data.status_message, null);
      assert.equal(typeof deployed?.data.deployment_name, "string");
      assert.equal(deployed?.data.tenant_id, ctx.workspaceId);
      assert.equal(new Set(mine().map((e) => e.id)).size, seen.length, "one webhook-id per event");
      assert.ok(
        !otherWorkspaceReceiver.received.some((r) => r.body.includes(deploymentId)),
        "another workspace's webhook sees nothing of it",
      );
    });

    it("a receiver that fails for a while gets the events after it recovers; the log shows the attempts", async () => {
      const ctx = suite.ctx;
      const flaky = await new WebhookReceiver().start();
      try {
        flaky.status = 503;
        const created = await call<Hook>(ctx, "POST", "/v2/webhooks", {
          url: flaky.url,
          events: ["deployment.created"],
        });
        const d = await createDocker(ctx);
        await until("three failed attempts", async () => flaky.received.length >= 3);
        flaky.status = 204;
        await until("delivered", async () =>
          flaky.accepted(created.body.secret ?? "").some((e) => e.data.deployment_id === d.id),
        );
        // The receiver answers before the dispatcher records the answer: wait for the record.
        await until("the log shows it delivered", async () => {
          const res = await call<DeliveryBody[]>(ctx, "GET", `/v2/webhooks/${created.body.id}/deliveries`);
          return res.body[0]?.status === "delivered";
        });
        const attempts = flaky.received;
        assert.ok(
          attempts.every((r) => r.body === attempts[0]?.body),
          "the same body every attempt",
        );
        assert.equal(new Set(attempts.map((r) => r.headers["webhook-id"])).size, 1, "the same webhook-id");
        const log = await call<DeliveryBody[]>(ctx, "GET", `/v2/webhooks/${created.body.id}/deliveries`);
        assert.equal(log.status, 200);
        const [delivery] = log.body;
        assert.ok(delivery);
        assert.equal(delivery.status, "delivered");
        assert.equal(delivery.event_type, "deployment.created");
        assert.equal(delivery.event_id, attempts[0]?.headers["webhook-id"]);
        assert.equal(delivery.attempts, attempts.length);
        assert.deepEqual(
          delivery.history.map((h) => h.status_code),
          attempts.map((r) => r.status),
        );
        assert.ok(delivery.history.every((h) => h.duration_ms >= 0));
        assert.match(delivery.history[0]?.error ?? "", /503/);

        // Redeliver: the same webhook-id and body once more.
        const before = flaky.received.length;
        const again = await call<DeliveryBody>(
          ctx,
          "POST",
          `/v2/webhooks/${created.body.id}/deliveries/${delivery.id}/redeliver`,
        );
        assert.equal(again.status, 202);
        await until("redelivered", async () => flaky.received.length > before);
        assert.equal(flaky.received.at(-1)?.body, attempts[0]?.body);
        assert.equal(flaky.received.at(-1)?.headers["webhook-id"], delivery.event_id);
        const viewer = await call(
          ctx,
          "POST",
          `/v2/webhooks/${created.body.id}/deliveries/${delivery.id}/redeliver`,
          undefined,
          { key: ctx.keys.viewer },
        );
        assert.equal(viewer.status, 403);
        const missing = await call(
          ctx,
          "POST",
          `/v2/webhooks/${created.body.id}/deliveries/${randomUUID()}/redeliver`,
        );
        assert.equal(missing.status, 404);
        const otherHook = await call(
          ctx,
          "POST",
          `/v2/webhooks/${hook.id}/deliveries/${delivery.id}/redeliver`,
        );
        assert.equal(otherHook.status, 404, "a delivery is found only under its own webhook");
      } finally {
        await flaky.close();
      }
    });

    it("a disabled webhook gets nothing; events it does not subscribe to are not sent", async () => {
      const ctx = suite.ctx;
      const quiet = await new WebhookReceiver().start();
      try {
        const off = await call<Hook>(ctx, "POST", "/v2/webhooks", {
          url: quiet.url,
          events: ["deployment.created"],
          enabled: false,
        });
        const narrow = await call<Hook>(ctx, "POST", "/v2/webhooks", {
          url: quiet.url,
          events: ["deployment.deleted"],
        });
        const d = await createDocker(ctx);
        // The main webhook got it: the dispatcher has run past it.
        await until("main receiver has it", async () =>
          receiver.received.some((r) => r.body.includes(d.id) && r.body.includes("deployment.created")),
        );
        const [queued] = await rows<{ n: number }>(
          ctx.db.orm,
          sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id IN (${off.body.id}, ${narrow.body.id})`,
        );
        assert.equal(queued?.n, 0);
        assert.equal(quiet.received.length, 0);
      } finally {
        await quiet.close();
      }
    });
  },
  { env: { SLIPWAY_WEBHOOKS_ALLOW_PRIVATE: "true" } },
);
