import assert from "node:assert/strict";
import { it } from "node:test";
import { loadConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/config.ts";

/** SLIPWAY_EDGE and its HAProxy settings, as `slipway serve` reads them (docs/edge.md). */

const base = { SLIPWAY_MASTER_KEY: Buffer.alloc(32, 7).toString("base64") };

it("defaults to auto with Debian's haproxy and a thread a core", () => {
  assert.deepEqual(loadConfig(base).apps.edge, {
    kind: "auto",
    haproxy: "/usr/sbin/haproxy",
    threads: "auto",
  });
  assert.deepEqual(
    loadConfig({
      ...base,
      SLIPWAY_EDGE: "HAProxy",
      SLIPWAY_EDGE_HAPROXY: "/opt/hp/sbin/haproxy",
      SLIPWAY_EDGE_THREADS: "2",
    }).apps.edge,
    { kind: "haproxy", haproxy: "/opt/hp/sbin/haproxy", threads: "2" },
  );
});

it("refuses a bad value with a sentence naming the variable", () => {
  for (const [env, message] of [
    [{ SLIPWAY_EDGE: "nginx" }, /SLIPWAY_EDGE must be one of auto, node, haproxy, got "nginx"/],
    [{ SLIPWAY_EDGE_THREADS: "0" }, /SLIPWAY_EDGE_THREADS must be auto or a count/],
    [{ SLIPWAY_EDGE_THREADS: "two" }, /SLIPWAY_EDGE_THREADS must be auto or a count/],
    [{ SLIPWAY_EDGE_HAPROXY: "haproxy" }, /SLIPWAY_EDGE_HAPROXY/],
    [
      { SLIPWAY_EDGE: "haproxy", SLIPWAY_APPS_TLS: "internal" },
      /SLIPWAY_EDGE=haproxy cannot be used with SLIPWAY_APPS_TLS on/,
    ],
  ] as const) {
    assert.throws(
      () => loadConfig({ ...base, ...env }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, message);
        return true;
      },
    );
  }
});
