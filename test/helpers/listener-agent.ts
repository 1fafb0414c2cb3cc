// The test plays a listener against the control plane: its own key, desired long-polls and
// status reports over real HTTP calls, with a reconciler running beside the API.
import assert from "node:assert/strict";
import { after, before } from "node:test";
import type { DesiredState } from "../../src/protocol/listener.ts";
import type { Reconciler } from "../../src/reconciler/reconciler.ts";
import { resolverOf } from "../../src/wiring/reconciler.ts";
import { call, createDocker, type Revision, uniqueName } from "./deployments.ts";
import type { TestContext } from "./harness.ts";
import { makeReconciler } from "./reconciler.ts";
import { ScriptedRuntime } from "./scripted-runtime.ts";
import { waitForRevision } from "./wait.ts";

type Desired = DesiredState;

export interface Agent {
  id: string;
  key: string;
  version: number;
}

/** A listener of the workspace of `admin` (default the suite's first), with its own key. */
export async function registerListener(ctx: TestContext, admin = ctx.keys.admin): Promise<Agent> {
  const l = await call<{ id: string }>(
    ctx,
    "POST",
    "/v2/listeners",
    { compute_type: "k8s", compute_id: uniqueName("k8s"), compute_config: { k8s_namespaces: ["apps"] } },
    { key: admin },
  );
  assert.equal(l.status, 201, JSON.stringify(l.body));
  const k = await call<{ key: string }>(
    ctx,
    "POST",
    "/v1/api-keys",
    { role: "listener", listener_id: l.body.id },
    { key: admin },
  );
  assert.equal(k.status, 201, JSON.stringify(k.body));
  return { id: l.body.id, key: k.body.key, version: 0 };
}

/** One long poll from the agent's last version; remembers the new one. */
export async function poll(ctx: TestContext, agent: Agent, wait = 30): Promise<Desired> {
  const res = await call<Desired>(
    ctx,
    "GET",
    `/v2/listeners/${agent.id}/desired?after=${agent.version}&wait=${wait}`,
    undefined,
    { key: agent.key },
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
  agent.version = res.body.version;
  return res.body;
}

/** Polls until the desired state runs `revisionId` for the deployment (or no longer lists it: null). */
export async function pollUntil(
  ctx: TestContext,
  agent: Agent,
  deploymentId: string,
  revisionId: string | null,
) {
  for (let i = 0; i < 30; i++) {
    const desired = await poll(ctx, agent, 5);
    const entry = desired.deployments.find((d) => d.deployment_id === deploymentId);
    if ((entry?.revision_id ?? null) === revisionId) return { desired, entry };
  }
  throw new Error(`the desired state never ran ${revisionId} for ${deploymentId}`);
}

export function report(ctx: TestContext, agent: Agent, revisions: object[], deployments?: object[]) {
  const body = deployments === undefined ? { revisions } : { revisions, deployments };
  return call(ctx, "POST", `/v2/listeners/${agent.id}/status`, body, { key: agent.key });
}

export const revision = (ctx: TestContext, deploymentId: string, id: string) =>
  call<Revision>(ctx, "GET", `/v2/deployments/${deploymentId}/revisions/${id}`).then((r) => r.body);
export const deployment = (ctx: TestContext, id: string) =>
  call<{ status: string; active_revision_id: string | null; source_config: Record<string, unknown> }>(
    ctx,
    "GET",
    `/v2/deployments/${id}`,
  ).then((r) => r.body);

/** A reconciler for the suite, with the real source resolver: a listener's revisions are images, handed over as they are. */
export function runReconciler(suite: { readonly ctx: TestContext }): void {
  let reconciler: Reconciler;
  before(async () => {
    reconciler = makeReconciler(suite.ctx, new ScriptedRuntime(), {
      resolveSource: resolverOf(suite.ctx.db, suite.ctx.config),
    });
    await reconciler.start();
  });
  after(async () => {
    await reconciler.stop();
  });
}

/** A deployment on the listener in namespace `apps`, rolled out: its first revision DEPLOYED. */
export async function deployedOn(ctx: TestContext, agent: Agent) {
  const d = await createDocker(ctx, {
    source_config: { listener_id: agent.id, listener_config: { k8s_namespace: "apps" } },
  });
  const r1 = String(d.latest_revision_id);
  await pollUntil(ctx, agent, d.id, r1);
  await report(ctx, agent, [{ revision_id: r1, state: "available" }]);
  assert.equal(await waitForRevision(ctx.db, r1), "DEPLOYED");
  return { d, r1 };
}
