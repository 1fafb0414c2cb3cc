import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { ControlPlane, ControlPlaneError } from "../../src/listener/control-plane.ts";
import type { DesiredState } from "../../src/protocol/listener.ts";
import { desired, LISTENER_ID } from "../helpers/listener-fixtures.ts";

/** The listener's side of the protocol: what it makes of the desired-state answers it gets. */
describe("control plane client: desired state", () => {
  let server: Server;
  let answer: unknown;
  let cp: ControlPlane;

  before(async () => {
    server = createServer((_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify(answer));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    cp = new ControlPlane({ url: `http://127.0.0.1:${port}`, apiKey: "k", listenerId: LISTENER_ID });
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("reads `namespaces` as the protocol declares it", async () => {
    const state: DesiredState = {
      version: 3,
      listener_id: LISTENER_ID,
      deployments: [desired()],
      namespaces: ["team-a", "team-b"],
    };
    answer = state;
    assert.deepEqual(await cp.desired(0, 0), state);
  });

  it("a server that sends no `namespaces` (older than the field) gives none, not a crash", async () => {
    answer = { version: 1, listener_id: LISTENER_ID, deployments: [] };
    assert.deepEqual((await cp.desired(0, 0)).namespaces, []);
    answer = { version: 1, listener_id: LISTENER_ID, deployments: [], namespaces: ["a", 7] };
    assert.deepEqual((await cp.desired(0, 0)).namespaces, ["a"]);
  });

  it("an answer without version and deployments is refused", async () => {
    answer = { deployments: [] };
    await assert.rejects(cp.desired(0, 0), ControlPlaneError);
  });
});
