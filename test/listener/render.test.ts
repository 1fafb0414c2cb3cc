// `slipway listener render`: the listener's objects for a desired state, without a cluster, as
// YAML documents or a JSON List; and the listener's own flags parsed by the same code.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { loadAllYaml } from "@kubernetes/client-node";
import { ConfigError } from "../../src/config.ts";
import { manifestsFor } from "../../src/listener/manifests/index.ts";
import { parseListenerArgs } from "../../src/listener/options.ts";
import { PASSWORD_PLACEHOLDER, renderCommand, renderObjects } from "../../src/listener/render.ts";
import type { DesiredState } from "../../src/protocol/listener.ts";
import { runCli } from "../helpers/cli.ts";
import { validateManifest } from "../helpers/k8s-models.ts";
import { desired, LISTENER_ID, manifestOptions } from "../helpers/listener-fixtures.ts";

const STATE: DesiredState = {
  version: 7,
  listener_id: LISTENER_ID,
  namespaces: ["team-a"],
  deployments: [
    desired({ resource_spec: { db_storage_gi: 2, redis_memory_mb: 64 } }),
    desired({ deployment_id: "11111111-2222-4333-8444-555555555555", name: "blog" }),
  ],
};

const run = (argv: string[], stdin = "") => {
  let out = "";
  renderCommand(
    argv,
    () => stdin,
    (t) => {
      out += t;
    },
  );
  return out;
};

describe("slipway listener render", () => {
  it("YAML: one document per object, the same objects the listener applies, all valid", () => {
    const out = run(["--desired", "-", "--ingress-class", "nginx"], JSON.stringify(STATE));
    // client-node reads into its model classes: compared as plain JSON.
    const docs = JSON.parse(JSON.stringify(loadAllYaml(out))) as Record<string, unknown>[];
    const expected = STATE.deployments.flatMap((d) =>
      manifestsFor(d, manifestOptions({ ingressNamespace: "ingress-nginx", podSecurity: "baseline" }), {
        database: PASSWORD_PLACEHOLDER,
        cache: PASSWORD_PLACEHOLDER,
      }),
    );
    assert.deepEqual(
      docs.map((d) => `${d.kind}/${(d.metadata as { name: string }).name}`),
      expected.map((o) => `${o.kind}/${o.metadata.name}`),
    );
    for (const d of docs) validateManifest(d);
    // The JSON form is exact: the same objects the listener applies.
    const list = JSON.parse(
      run(["--desired", "-", "--ingress-class", "nginx", "--output", "json"], JSON.stringify(STATE)),
    );
    assert.deepEqual(list.items, JSON.parse(JSON.stringify(expected)));
    assert.match(out, /^---\n/);
  });

  it("JSON: a v1 List; routing flags act (gateway, --domain)", () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-render-"));
    try {
      const file = join(dir, "desired.json");
      writeFileSync(file, JSON.stringify(STATE));
      const list = JSON.parse(
        run(["--desired", file, "--output", "json", "--gateway", "gw/public", "--domain", "apps.test"]),
      );
      assert.equal(list.kind, "List");
      assert.equal(list.apiVersion, "v1");
      const routes = list.items.filter((o: { kind: string }) => o.kind === "HTTPRoute");
      assert.deepEqual(
        routes.map((r: { spec: { hostnames: string[] } }) => r.spec.hostnames[0]),
        ["shop.apps.test", "blog.apps.test"],
      );
      assert.ok(!list.items.some((o: { kind: string }) => o.kind === "Ingress"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("bad input: a clear error naming what is wrong, nothing printed", () => {
    assert.throws(
      () => run([]),
      (e: Error) => e instanceof ConfigError && /--desired/.test(e.message),
    );
    assert.throws(() => run(["--desired", "-"], "not json"), /not JSON/);
    assert.throws(() => run(["--desired", "-"], JSON.stringify({ version: 1 })), /listener_id|deployments/);
    assert.throws(() => run(["--desired", "/nonexistent/x.json"]), /cannot read/);
    assert.throws(
      () => run(["--desired", "-", "--output", "xml"], JSON.stringify(STATE)),
      /--output must be yaml or json/,
    );
    assert.throws(() => run(["--desired", "-", "--url", "x"], JSON.stringify(STATE)), /unknown option --url/);
    assert.throws(() => renderObjects({ ...STATE, deployments: [{ name: 1 }] }, []), /deployments/);
  });
});

describe("the slipway command", () => {
  it("`slipway listener render --desired FILE` prints them; a bad file is a configuration error", async () => {
    const dir = mkdtempSync(join(tmpdir(), "slipway-render-cli-"));
    try {
      const file = join(dir, "desired.json");
      writeFileSync(file, JSON.stringify(STATE));
      const ok = await runCli(["listener", "render", "--desired", file, "--output", "json"], {});
      assert.equal(ok.code, 0, ok.stderr);
      const list = JSON.parse(ok.stdout);
      assert.equal(list.kind, "List");
      assert.ok(list.items.some((o: { kind: string }) => o.kind === "StatefulSet"));
      writeFileSync(file, "{}");
      const bad = await runCli(["listener", "render", "--desired", file], {});
      assert.notEqual(bad.code, 0);
      assert.match(bad.stderr, /desired state/);
      assert.equal(bad.stdout, "");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("slipway listener flags", () => {
  const base = ["--url", "http://cp", "--api-key", "k", "--listener-id", LISTENER_ID];
  it("pod security, ingress namespace, health port and their defaults", () => {
    const o = parseListenerArgs(base, {}, () => {});
    assert.equal(o.manifests.podSecurity, "baseline");
    assert.equal(o.manifests.ingressNamespace, "ingress-nginx");
    assert.equal(o.healthPort, undefined);
    const r = parseListenerArgs(
      [...base, "--pod-security", "restricted", "--health-port", "8081", "--gateway", "gw/public"],
      {},
      () => {},
    );
    assert.equal(r.manifests.podSecurity, "restricted");
    assert.equal(r.manifests.ingressNamespace, "gw", "the Gateway's namespace by default");
    assert.equal(r.healthPort, 8081);
    assert.throws(
      () => parseListenerArgs([...base, "--pod-security", "privileged"], {}, () => {}),
      /baseline or restricted/,
    );
    assert.throws(() => parseListenerArgs([...base, "--health-port", "0"], {}, () => {}), /port number/);
    assert.throws(
      () => parseListenerArgs([...base, "--output", "json"], {}, () => {}),
      /unknown option --output/,
    );
  });
});
