// The API server's naming and resource rules as the API applies them to deployments on a listener
// (422 naming the field), while local deployments keep accepting the same bodies.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  checkListenerSpec,
  isDnsSubdomain,
  labelValueProblem,
  qualifiedNameProblem,
} from "../../../src/core/spec/kubernetes-names.ts";
import { call, type Deployment, locs, uniqueName } from "../../helpers/deployments.ts";
import { forEachDatabase } from "../../helpers/harness.ts";

describe("Kubernetes name rules", () => {
  it("qualified names: label and annotation keys", () => {
    for (const ok of [
      "team",
      "app.kubernetes.io/name",
      "a",
      "A_b.c-1",
      "example.com/x",
      `${"a".repeat(63)}`,
    ]) {
      assert.equal(qualifiedNameProblem(ok), undefined, ok);
    }
    for (const bad of [
      "",
      "-team",
      "team-",
      "a/b/c",
      "Example.com/x",
      "/x",
      "x/",
      `${"a".repeat(64)}`,
      "a b",
      "ä",
    ]) {
      assert.ok(qualifiedNameProblem(bad), bad);
    }
  });

  it("label values: empty, or up to 63 with alphanumeric ends", () => {
    for (const ok of ["", "v1", "a.b_c-d", "x".repeat(63)])
      assert.equal(labelValueProblem(ok), undefined, ok);
    for (const bad of ["-a", "a-", "x".repeat(64), "a/b", "a b"]) assert.ok(labelValueProblem(bad), bad);
  });

  it("DNS subdomains", () => {
    assert.ok(isDnsSubdomain("example.com"));
    assert.ok(!isDnsSubdomain("Example.com"));
    assert.ok(!isDnsSubdomain(`${"a".repeat(64)}.com`));
    assert.ok(!isDnsSubdomain("a..b"));
  });

  it("a spec: every problem named at its field", () => {
    const items = checkListenerSpec(
      {
        labels: { "bad key!": "v", ok: "-bad-value", fine: "yes" },
        annotations: { "a/b/c": "x", "prometheus.io/scrape": "true" },
        cpu: 1,
        cpu_limit: 0.5,
        memory_mb: 512,
        memory_limit_mb: 1024,
        db_memory_mb: 256,
        db_memory_limit_mb: 128,
        db_storage_gi: 5,
      },
      { name: "shop-", previous: { db_storage_gi: 10 } },
    );
    assert.deepEqual(items.map((i) => i.loc.join(".")).sort(), [
      "body.name",
      "body.source_config.resource_spec.annotations.a/b/c",
      "body.source_config.resource_spec.cpu_limit",
      "body.source_config.resource_spec.db_memory_limit_mb",
      "body.source_config.resource_spec.db_storage_gi",
      "body.source_config.resource_spec.labels.bad key!",
      "body.source_config.resource_spec.labels.ok",
    ]);
    assert.deepEqual(
      checkListenerSpec({ db_storage_gi: 20 }, { name: "shop", previous: { db_storage_gi: 10 } }),
      [],
    );
  });
});

forEachDatabase("listener deployments are validated as the cluster would", (suite) => {
  const post = (body: Record<string, unknown>) =>
    call<Deployment>(suite.ctx, "POST", "/v2/deployments", body);
  const onListener = (name: string, spec: Record<string, unknown>) => ({
    name,
    source: "external_docker",
    source_config: {
      listener_id: suite.ctx.listenerId,
      listener_config: { k8s_namespace: "seeded" },
      resource_spec: spec,
    },
    source_revision_config: { image_uri: "registry.example/app:1" },
  });
  const local = (name: string, spec: Record<string, unknown>) => ({
    name,
    source: "external_docker",
    source_config: { resource_spec: spec },
    source_revision_config: { image_uri: "registry.example/app:1" },
  });

  it("a name ending in '-', bad label keys and a limit below its request: 422 on a listener, 201 locally", async () => {
    const spec = { labels: { "team/a/b": "x" }, cpu: 1, cpu_limit: 0.5 };
    const name = `${uniqueName("k")}-`;
    const refused = await post(onListener(name, spec));
    assert.deepEqual(locs(refused).sort(), [
      "body.name",
      "body.source_config.resource_spec.cpu_limit",
      "body.source_config.resource_spec.labels.team/a/b",
    ]);
    const list = await call<{ deployments: Deployment[] }>(suite.ctx, "GET", `/v2/deployments?name=${name}`);
    assert.ok(!JSON.stringify(list.body).includes(name), "nothing was created");
    const accepted = await post(local(name, spec));
    assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
  });

  it("db_storage_gi: a later revision may grow it (201/200) but not shrink it (422, nothing changed)", async () => {
    const created = await post(onListener(uniqueName("db"), { db_storage_gi: 10 }));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const patch = (gi: number) =>
      call<Deployment>(suite.ctx, "PATCH", `/v2/deployments/${created.body.id}`, {
        source_config: { resource_spec: { db_storage_gi: gi } },
        source_revision_config: { image_uri: "registry.example/app:2" },
      });
    assert.deepEqual(locs(await patch(5)), ["body.source_config.resource_spec.db_storage_gi"]);
    const after = await call<Deployment>(suite.ctx, "GET", `/v2/deployments/${created.body.id}`);
    assert.equal(after.body.latest_revision_id, created.body.latest_revision_id, "no revision made");
    const grown = await patch(20);
    assert.equal(grown.status, 200, JSON.stringify(grown.body));
    const plain = await post(local(uniqueName("db"), { db_storage_gi: 10 }));
    assert.equal(plain.status, 201, JSON.stringify(plain.body));
  });
});
