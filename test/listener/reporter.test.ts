// What the listener posts to the control plane (src/listener/reporter.ts), through a real
// ControlPlane client to a small HTTP server that records each status request.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, beforeEach, describe, it } from "node:test";
import { ControlPlane } from "../../src/listener/control-plane.ts";
import { Reporter, SETTLE_MS } from "../../src/listener/reporter.ts";
import type { DeploymentPodsReport, StatusReport } from "../../src/protocol/listener.ts";
import { LISTENER_ID } from "../helpers/listener-fixtures.ts";

const D1 = "5f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const R1 = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";

const pods = (over: Partial<DeploymentPodsReport> = {}): DeploymentPodsReport => ({
  deployment_id: D1,
  revision_id: R1,
  serving: true,
  pods: [{ name: "shop-a", revision_id: R1, component: "api", state: "ready", restarts: 0 }],
  ...over,
});

describe("the listener's reporter", () => {
  let server: Server;
  let cp: ControlPlane;
  let bodies: StatusReport[] = [];
  let sizes: number[] = [];
  let clock = 0;
  let reporter: Reporter;

  before(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        sizes.push(text.length);
        bodies.push(JSON.parse(text) as StatusReport);
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    cp = new ControlPlane({ url: `http://127.0.0.1:${port}`, apiKey: "k", listenerId: LISTENER_ID });
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    bodies = [];
    sizes = [];
    clock = 1_000_000;
    reporter = new Reporter(
      cp,
      () => {},
      () => clock,
    );
  });

  /** Posts what changed of `report`, as the listener's judging pass does. */
  const pass = async (report: DeploymentPodsReport) => {
    if (reporter.podsChanged(report)) await reporter.send([], [report]);
  };

  it("pods are posted when they change, never again while they stay the same; revisions alike", async () => {
    await pass(pods());
    await pass(pods());
    assert.equal(bodies.length, 1);
    assert.deepEqual(bodies[0], { revisions: [], deployments: [pods()] });
    await pass(
      pods({ pods: [{ name: "shop-a", revision_id: R1, component: "api", state: "ready", restarts: 1 }] }),
    );
    assert.equal(bodies.length, 2);

    const available = { revision_id: R1, state: "available" as const };
    assert.equal(reporter.revisionChanged(available), true);
    await reporter.send([available]);
    assert.deepEqual(bodies[2], { revisions: [available] }, "no deployments field without pods");
    assert.equal(reporter.revisionChanged(available), false);
    assert.equal(reporter.finished(R1), true);
  });

  it("not serving with no pod saying why is held back SETTLE_MS; a pod with a reason goes at once", async () => {
    await pass(pods());
    const gone = pods({ serving: false, reason: "no API pod runs", pods: [] });
    await pass(gone);
    clock += SETTLE_MS - 1;
    await pass(gone);
    assert.equal(bodies.length, 1, "the moment between a pod and its replacement is not reported");
    clock += 1;
    await pass(gone);
    assert.equal(bodies.length, 2);
    assert.equal(bodies[1]?.deployments?.[0]?.reason, "no API pod runs");

    const crashing = pods({
      serving: false,
      reason: "shop-a: CrashLoopBackOff in container app",
      pods: [
        {
          name: "shop-a",
          revision_id: R1,
          component: "api",
          state: "crash_looping",
          restarts: 3,
          reason: "CrashLoopBackOff in container app",
        },
      ],
    });
    await pass(pods());
    await pass(crashing);
    assert.equal(bodies.length, 4);
    assert.equal(bodies[3]?.deployments?.[0]?.pods[0]?.state, "crash_looping");
  });

  it("many pods reports are split into requests of at most 256 KiB; revisions go in the first", async () => {
    const big = (i: number) =>
      pods({
        deployment_id: `5f1e2d3c-4b5a-4978-8695-${i.toString(16).padStart(12, "0")}`,
        pods: Array.from({ length: 100 }, (_, j) => ({
          name: `app-${i}-pod-${j}-${"x".repeat(100)}`,
          revision_id: R1,
          component: "api" as const,
          state: "ready" as const,
          restarts: 0,
        })),
      });
    const all = Array.from({ length: 40 }, (_, i) => big(i));
    await reporter.send([{ revision_id: R1, state: "available" }], all);
    assert.ok(bodies.length >= 2, `${bodies.length} requests`);
    assert.ok(
      sizes.every((s) => s < 300 * 1024),
      sizes.join(", "),
    );
    assert.equal(bodies.flatMap((b) => b.deployments ?? []).length, 40);
    assert.deepEqual(
      bodies.map((b) => b.revisions.length),
      [1, ...bodies.slice(1).map(() => 0)],
    );
  });

  it("a deployment no longer desired is forgotten: its pods are posted again if it comes back", async () => {
    await pass(pods());
    reporter.keepOnly(new Set(), new Set());
    await pass(pods());
    assert.equal(bodies.length, 2);
  });
});
