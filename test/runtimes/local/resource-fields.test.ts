import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  enforcedHere,
  type Situation,
  unenforcedWarnings,
} from "../../../src/runtimes/local/resource-fields.ts";

const here: Situation = { image: false, cpuCgroup: false, appDatabase: false };

describe("local runtime: what each resource_spec field does here", () => {
  it("a set field that is not enforced here gets one warning naming it and why; enforced and default fields none", () => {
    const warnings = unenforcedWarnings(
      {
        min_scale: 2,
        memory_mb: 256,
        memory_limit_mb: 512,
        queue_min_scale: 1,
        queue_memory_limit_mb: 128,
        labels: { a: "b" },
        sidecars: [],
      },
      here,
    );
    assert.deepEqual(warnings, [
      "slipway: warning: resource_spec.labels is not enforced locally: a Kubernetes setting; the local runtime runs no pods",
    ]);
    assert.deepEqual(unenforcedWarnings(null, here), []);
    assert.deepEqual(unenforcedWarnings({ queue_max_scale: null }, here), []);
  });

  it("cpu_limit is enforced for images and where (queue_cpu_limit: only where) the cpu controller is writable; db fields only with an app database", () => {
    assert.equal(enforcedHere("cpu_limit", here), false);
    assert.equal(enforcedHere("cpu_limit", { ...here, image: true }), true);
    assert.equal(enforcedHere("cpu_limit", { ...here, cpuCgroup: true }), true);
    assert.equal(enforcedHere("redis_cpu_limit", { ...here, image: true }), false);
    assert.equal(enforcedHere("queue_cpu_limit", here), false);
    assert.equal(enforcedHere("queue_cpu_limit", { ...here, cpuCgroup: true }), true);
    assert.equal(enforcedHere("queue_max_scale", here), true);
    assert.match(
      unenforcedWarnings({ queue_cpu_limit: 0.5 }, here)[0] ?? "",
      /queue_cpu_limit is not enforced locally: the kernel's cpu controller is not writable here/,
    );
    assert.equal(enforcedHere("db_max_connections", here), false);
    assert.equal(enforcedHere("db_max_connections", { ...here, appDatabase: true }), true);
    assert.equal(enforcedHere("db_storage_gi", { ...here, appDatabase: true }), true);
    assert.equal(enforcedHere("db_cpu", { ...here, appDatabase: true }), false);
    assert.equal(enforcedHere("no_such_field", here), false);
    assert.match(
      unenforcedWarnings({ db_max_connections: 5 }, here)[0] ?? "",
      /db_max_connections is not enforced locally: this machine gives apps no database/,
    );
  });
});
