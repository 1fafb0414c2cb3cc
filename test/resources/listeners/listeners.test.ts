import assert from "node:assert/strict";
import { it } from "node:test";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { call, createDocker, locs, uniqueName } from "../../helpers/deployments.ts";
import { forEachDatabase, type TestContext } from "../../helpers/harness.ts";

interface Listener {
  id: string;
  compute_type: string;
  compute_id: string;
  compute_config: { k8s_namespaces: string[] | null };
  version: string | null;
  status: string;
  last_seen_at: string | null;
  created_at: string;
  updated_at: string;
}

const body = (computeId = uniqueName("cluster"), namespaces: string[] | null = ["apps", "jobs"]) => ({
  compute_type: "k8s",
  compute_id: computeId,
  compute_config: { k8s_namespaces: namespaces },
});

async function makeListener(ctx: TestContext, namespaces: string[] = ["apps"]): Promise<Listener> {
  const res = await call<Listener>(ctx, "POST", "/v2/listeners", body(undefined, namespaces), {
    key: ctx.keys.admin,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body;
}

forEachDatabase("listeners API", (suite) => {
  const admin = () => ({ key: suite.ctx.keys.admin });

  it("create → 201 DISCONNECTED, never seen; get and list show it; the same compute_id → 409", async () => {
    const ctx = suite.ctx;
    const name = uniqueName("prod-eu");
    const res = await call<Listener>(
      ctx,
      "POST",
      "/v2/listeners",
      { ...body(name), version: "1.2" },
      admin(),
    );
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const l = res.body;
    assert.equal(l.compute_type, "k8s");
    assert.equal(l.compute_id, name);
    assert.deepEqual(l.compute_config, { k8s_namespaces: ["apps", "jobs"] });
    assert.equal(l.version, "1.2");
    assert.equal(l.status, "DISCONNECTED");
    assert.equal(l.last_seen_at, null);
    const got = await call<Listener>(ctx, "GET", `/v2/listeners/${l.id}`);
    assert.deepEqual(got.body, l);
    const listed = await call<{ resources: Listener[]; offset: number }>(
      ctx,
      "GET",
      "/v2/listeners?limit=100",
    );
    assert.ok(listed.body.resources.some((x) => x.id === l.id));
    assert.equal(listed.body.offset, listed.body.resources.length);
    const again = await call(ctx, "POST", "/v2/listeners", body(name), admin());
    assert.equal(again.status, 409);
    // Another workspace may use the same cluster name.
    const other = await call(ctx, "POST", "/v2/listeners", body(name), {
      key: ctx.keys.admin,
      headers: { "x-tenant-id": ctx.workspace2Id },
    });
    assert.equal(other.status, 201, JSON.stringify(other.body));
  });

  it("create: bad compute_type, compute_id or namespaces → 422, nothing stored", async () => {
    const ctx = suite.ctx;
    const before = await call<{ resources: Listener[] }>(ctx, "GET", "/v2/listeners?limit=100");
    const bad = async (b: unknown) => locs(await call(ctx, "POST", "/v2/listeners", b, admin()));
    assert.deepEqual(await bad({ ...body(), compute_type: "ecs" }), ["body.compute_type"]);
    assert.deepEqual(await bad({ ...body(), compute_id: "" }), ["body.compute_id"]);
    assert.deepEqual(await bad(body(undefined, ["Not_A_Namespace"])), [
      "body.compute_config.k8s_namespaces.0",
    ]);
    assert.deepEqual(await bad(body(undefined, ["a", "a"])), ["body.compute_config.k8s_namespaces"]);
    const { compute_config: _, ...noConfig } = body();
    assert.deepEqual(await bad(noConfig), ["body.compute_config"]);
    const after = await call<{ resources: Listener[] }>(ctx, "GET", "/v2/listeners?limit=100");
    assert.equal(after.body.resources.length, before.body.resources.length);
  });

  it("list pages newest first with limit and offset", async () => {
    const ctx = suite.ctx;
    const ws = await call<{ id: string }>(ctx, "POST", "/v1/workspaces", { name: uniqueName("lw") }, admin());
    const headers = { "x-tenant-id": ws.body.id };
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call<Listener>(ctx, "POST", "/v2/listeners", body(`c${i}`), { ...admin(), headers });
      ids.push(res.body.id);
    }
    const page1 = await call<{ resources: Listener[]; offset: number }>(
      ctx,
      "GET",
      "/v2/listeners?limit=2",
      undefined,
      { headers },
    );
    assert.deepEqual(
      page1.body.resources.map((l) => l.id),
      [ids[2], ids[1]],
    );
    assert.equal(page1.body.offset, 2);
    const page2 = await call<{ resources: Listener[]; offset: number }>(
      ctx,
      "GET",
      "/v2/listeners?limit=2&offset=2",
      undefined,
      { headers },
    );
    assert.deepEqual(
      page2.body.resources.map((l) => l.id),
      [ids[0]],
    );
    assert.deepEqual(locs(await call(ctx, "GET", "/v2/listeners?limit=0")), ["query.limit"]);
  });

  it("patch: version and namespaces change; compute_id/compute_type do not; a namespace in use stays", async () => {
    const ctx = suite.ctx;
    const l = await makeListener(ctx, ["apps", "jobs"]);
    const res = await call<Listener>(
      ctx,
      "PATCH",
      `/v2/listeners/${l.id}`,
      { version: "2", compute_config: { k8s_namespaces: ["apps"] } },
      admin(),
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.version, "2");
    assert.deepEqual(res.body.compute_config.k8s_namespaces, ["apps"]);
    // Fields that cannot change are not patchable: they are ignored like any unknown field.
    const fixed = await call<Listener>(ctx, "PATCH", `/v2/listeners/${l.id}`, { compute_id: "x" }, admin());
    assert.equal(fixed.body.compute_id, l.compute_id);
    await createDocker(ctx, {
      source_config: { listener_id: l.id, listener_config: { k8s_namespace: "apps" } },
    });
    const strand = await call(
      ctx,
      "PATCH",
      `/v2/listeners/${l.id}`,
      { compute_config: { k8s_namespaces: ["jobs"] } },
      admin(),
    );
    assert.deepEqual(locs(strand), ["body.compute_config.k8s_namespaces"]);
    const kept = await call<Listener>(ctx, "GET", `/v2/listeners/${l.id}`);
    assert.deepEqual(kept.body.compute_config.k8s_namespaces, ["apps"]);
    // Only the version: the namespaces stay.
    const v = await call<Listener>(ctx, "PATCH", `/v2/listeners/${l.id}`, { version: null }, admin());
    assert.equal(v.body.version, null);
    assert.deepEqual(v.body.compute_config.k8s_namespaces, ["apps"]);
  });

  it("delete: 409 while a deployment uses it; 204 after, its keys stop working; then 404", async () => {
    const ctx = suite.ctx;
    const l = await makeListener(ctx);
    const key = await call<{ key: string }>(
      ctx,
      "POST",
      "/v1/api-keys",
      { role: "listener", listener_id: l.id },
      admin(),
    );
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const d = await createDocker(ctx, {
      source_config: { listener_id: l.id, listener_config: { k8s_namespace: "apps" } },
    });
    const refused = await call<{ detail: string }>(
      ctx,
      "DELETE",
      `/v2/listeners/${l.id}`,
      undefined,
      admin(),
    );
    assert.equal(refused.status, 409);
    assert.match(refused.body.detail, new RegExp(d.name));
    // The deployment's row goes once torn down; without a reconciler here, remove it the API's way.
    await ctx.db.orm.transaction(async (tx) => {
      const { moveDeployment, removeDeployment } = await import(
        "../../../src/core/deployments/write-store.ts"
      );
      await moveDeployment(tx, d.id, "AWAITING_DATABASE", "AWAITING_DELETE");
      await removeDeployment(tx, d.id);
    });
    const ok = await call(ctx, "DELETE", `/v2/listeners/${l.id}`, undefined, admin());
    assert.equal(ok.status, 204);
    const poll = await call(ctx, "GET", `/v2/listeners/${l.id}/desired?wait=0`, undefined, {
      key: key.body.key,
    });
    assert.equal(poll.status, 401);
    assert.equal((await call(ctx, "GET", `/v2/listeners/${l.id}`)).status, 404);
    assert.equal((await call(ctx, "DELETE", `/v2/listeners/${l.id}`, undefined, admin())).status, 404);
  });

  it("listener API keys: role listener needs its listener_id, of the organization; other roles name none", async () => {
    const ctx = suite.ctx;
    const l = await makeListener(ctx);
    const post = (b: object, key = ctx.keys.admin) => call(ctx, "POST", "/v1/api-keys", b, { key });
    assert.deepEqual(locs(await post({ role: "listener" })), ["body.listener_id"]);
    assert.deepEqual(locs(await post({ role: "member", listener_id: l.id })), ["body.listener_id"]);
    assert.deepEqual(locs(await post({ role: "listener", listener_id: l.id }, ctx.other.admin)), [
      "body.listener_id",
    ]);
    assert.deepEqual(
      locs(await post({ role: "listener", listener_id: l.id, workspace_id: ctx.workspace2Id })),
      ["body.workspace_id"],
    );
    const made = await post({ role: "listener", listener_id: l.id, description: "cluster agent" });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body.role, "listener");
    assert.equal(made.body.listener_id, l.id);
    assert.equal(made.body.workspace_id, ctx.workspaceId);
    // It answers on its own listener only.
    const key = String(made.body.key);
    const own = await call(ctx, "GET", `/v2/listeners/${l.id}/desired?wait=0`, undefined, { key });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    const other = await call(ctx, "GET", `/v2/listeners/${ctx.listenerId}/desired?wait=0`, undefined, {
      key,
    });
    assert.equal(other.status, 403);
    assert.equal((await call(ctx, "GET", "/v2/deployments", undefined, { key })).status, 403);
    assert.equal((await call(ctx, "GET", `/v2/listeners/${l.id}`, undefined, { key })).status, 403);
  });

  it("deployments: unknown listener or a namespace not its own → 422; on it → remote_reconciled", async () => {
    const ctx = suite.ctx;
    const l = await makeListener(ctx, ["apps"]);
    const post = (sc: object, extra: object = {}) =>
      call(ctx, "POST", "/v2/deployments", {
        name: uniqueName(),
        source: "external_docker",
        source_revision_config: { image_uri: "registry.example/app:1" },
        source_config: sc,
        ...extra,
      });
    assert.deepEqual(
      locs(await post({ listener_id: crypto.randomUUID(), listener_config: { k8s_namespace: "apps" } })),
      ["body.source_config.listener_id"],
    );
    assert.deepEqual(locs(await post({ listener_id: l.id, listener_config: { k8s_namespace: "other" } })), [
      "body.source_config.listener_config.k8s_namespace",
    ]);
    assert.deepEqual(locs(await post({ listener_id: l.id })), [
      "body.source_config.listener_config.k8s_namespace",
    ]);
    // Another workspace's listener is not found from this one.
    const ws2 = await call<Listener>(ctx, "POST", "/v2/listeners", body(), {
      key: ctx.keys.admin,
      headers: { "x-tenant-id": ctx.workspace2Id },
    });
    assert.deepEqual(
      locs(await post({ listener_id: ws2.body.id, listener_config: { k8s_namespace: "apps" } })),
      ["body.source_config.listener_id"],
    );
    // A source that must be built needs a registry.
    const built = await call<{ detail: { msg: string }[] }>(ctx, "POST", "/v2/deployments", {
      name: uniqueName(),
      source: "internal_source",
      source_config: { listener_id: l.id, listener_config: { k8s_namespace: "apps" } },
      source_revision_config: {},
    });
    assert.deepEqual(locs(built), ["body.source_config.listener_id"]);
    assert.match(built.body.detail[0]?.msg ?? "", /SLIPWAY_REGISTRY_URL/);

    const d = await createDocker(ctx, {
      source_config: { listener_id: l.id, listener_config: { k8s_namespace: "apps" } },
    });
    const local = await createDocker(ctx);
    const remote = await call<{ resources: { id: string }[] }>(
      ctx,
      "GET",
      "/v2/deployments?remote_reconciled=true&limit=100",
    );
    assert.ok(remote.body.resources.some((x) => x.id === d.id));
    assert.ok(!remote.body.resources.some((x) => x.id === local.id));
    const revs = (id: string, q: string) =>
      call<{ resources: { id: string }[] }>(
        ctx,
        "GET",
        `/v2/deployments/${id}/revisions?remote_reconciled=${q}`,
      );
    assert.deepEqual(
      (await revs(d.id, "true")).body.resources.map((r) => r.id),
      [d.latest_revision_id],
    );
    assert.deepEqual((await revs(d.id, "false")).body.resources, []);
    assert.deepEqual((await revs(local.id, "true")).body.resources, []);
    assert.deepEqual(
      (await revs(local.id, "false")).body.resources.map((r) => r.id),
      [local.latest_revision_id],
    );
    // Both are immutable.
    const patch = (b: object) => call(ctx, "PATCH", `/v2/deployments/${d.id}`, b);
    assert.equal(
      (await patch({ source_config: { listener_config: { k8s_namespace: "other" } } })).status,
      400,
    );
    assert.equal((await patch({ source_config: { listener_id: ctx.listenerId } })).status, 400);
  });

  authMatrix(suite, { method: "GET", url: () => "/v2/listeners", workspace: true });
  authMatrix(suite, {
    method: "POST",
    url: () => "/v2/listeners",
    payload: () => body(),
    role: "admin",
    workspace: true,
  });
  authMatrix(suite, {
    method: "GET",
    url: (ctx) => `/v2/listeners/${ctx.listenerId}`,
    workspace: true,
    otherTenantUrl: async (ctx) => {
      const res = await call<Listener>(ctx, "POST", "/v2/listeners", body(), { key: ctx.other.admin });
      return `/v2/listeners/${res.body.id}`;
    },
  });
  authMatrix(suite, {
    method: "PATCH",
    url: (ctx) => `/v2/listeners/${ctx.listenerId}`,
    payload: () => ({ version: "x" }),
    role: "admin",
    workspace: true,
    otherTenantUrl: async (ctx) => {
      const res = await call<Listener>(ctx, "POST", "/v2/listeners", body(), { key: ctx.other.admin });
      return `/v2/listeners/${res.body.id}`;
    },
  });
  authMatrix(suite, {
    method: "DELETE",
    url: async (ctx) => `/v2/listeners/${(await makeListener(ctx)).id}`,
    role: "admin",
    workspace: true,
    otherTenantUrl: async (ctx) => {
      const res = await call<Listener>(ctx, "POST", "/v2/listeners", body(), { key: ctx.other.admin });
      return `/v2/listeners/${res.body.id}`;
    },
  });
  authMatrix(suite, {
    method: "GET",
    url: (ctx) => `/v2/listeners/${ctx.listenerId}/desired?wait=0`,
    listener: true,
  });
  authMatrix(suite, {
    method: "POST",
    url: (ctx) => `/v2/listeners/${ctx.listenerId}/status`,
    payload: () => ({ revisions: [] }),
    listener: true,
  });
});
