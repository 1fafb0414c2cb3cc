import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { describe, it } from "node:test";
import { loadConfig } from "../src/config/load.ts";
import { ConfigError } from "../src/config.ts";
import { makeTokenKeys, tokenEnv } from "./helpers/registry-token-keys.ts";

describe("config", () => {
  it("has the documented defaults", () => {
    const c = loadConfig({});
    assert.equal(c.port, 8080);
    assert.equal(c.host, "127.0.0.1");
    assert.equal(c.database.kind, "pglite");
    assert.match(c.dataDir, /\.slipway$/);
    assert.equal(c.basePath, "");
    assert.equal(c.logLevel, "info");
    assert.equal(c.bodyLimitBytes, 1024 * 1024);
    assert.equal(c.uploadLimitBytes, 100 * 1024 * 1024);
    assert.equal(c.apps.port, 8081);
    assert.equal(c.apps.domain, "localhost");
    assert.equal(c.oauth.allowInsecureLoopback, false);
    assert.equal(c.publicUrl, "http://127.0.0.1:8080");
    assert.deepEqual(c.limits, {
      sourceBytes: 1024 ** 3,
      sourceMaxFiles: 100_000,
      buildDiskBytes: 4096 * 1024 * 1024,
      buildCacheBytes: 2048 * 1024 * 1024,
      buildTimeoutMs: 900_000,
      buildsPerWorkspace: 2,
      logLinesPerS: 1000,
    });
  });

  it("reads the Redis binary and the UNUSED period", () => {
    const d = loadConfig({});
    assert.equal(d.apps.redisServer, "/usr/bin/redis-server");
    assert.equal(d.reconciler.unusedAfterS, 604_800);
    const c = loadConfig({
      SLIPWAY_REDIS_SERVER: "/opt/redis/bin/redis-server",
      SLIPWAY_UNUSED_AFTER_S: "60",
    });
    assert.equal(c.apps.redisServer, "/opt/redis/bin/redis-server");
    assert.equal(c.reconciler.unusedAfterS, 60);
  });

  it("reads SLIPWAY_LOCAL_GIT_POLL_S: 5 by default, 0 turns the poller off, nonsense fails", () => {
    assert.equal(loadConfig({}).localGitPollS, 5);
    assert.equal(loadConfig({ SLIPWAY_LOCAL_GIT_POLL_S: "0" }).localGitPollS, 0);
    assert.equal(loadConfig({ SLIPWAY_LOCAL_GIT_POLL_S: "30" }).localGitPollS, 30);
    for (const bad of ["-1", "soon", "1.5", "100000"]) {
      assert.throws(() => loadConfig({ SLIPWAY_LOCAL_GIT_POLL_S: bad }), ConfigError, bad);
    }
  });

  it("reads the source and build disk limits", () => {
    const c = loadConfig({
      SLIPWAY_SOURCE_LIMIT_BYTES: "2048",
      SLIPWAY_SOURCE_MAX_FILES: "10",
      SLIPWAY_BUILD_DISK_LIMIT_MB: "5",
      SLIPWAY_BUILD_CACHE_MB: "0",
    });
    assert.equal(c.limits.buildCacheBytes, 0, "0 keeps no dependency cache");
    assert.deepEqual(
      {
        sourceBytes: c.limits.sourceBytes,
        sourceMaxFiles: c.limits.sourceMaxFiles,
        buildDiskBytes: c.limits.buildDiskBytes,
      },
      { sourceBytes: 2048, sourceMaxFiles: 10, buildDiskBytes: 5 * 1024 * 1024 },
    );
    assert.equal(c.sandbox.mode, "auto");
    assert.deepEqual(c.sandbox.uidRange, { first: 200000, last: 265535 });
  });

  it("reads SLIPWAY_TRUST_PROXY: off by default, true, or proxy addresses and ranges", () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.equal(loadConfig({ SLIPWAY_TRUST_PROXY: "true" }).trustProxy, true);
    assert.deepEqual(loadConfig({ SLIPWAY_TRUST_PROXY: "10.0.0.1, 192.168.0.0/16,::1" }).trustProxy, [
      "10.0.0.1",
      "192.168.0.0/16",
      "::1",
    ]);
  });

  it("reads SLIPWAY_SANDBOX and SLIPWAY_APP_UID_RANGE", () => {
    const c = loadConfig({ SLIPWAY_SANDBOX: "BWRAP", SLIPWAY_APP_UID_RANGE: " 300000 - 300009 " });
    assert.deepEqual(c.sandbox, {
      mode: "bwrap",
      uidRange: { first: 300000, last: 300009 },
      pidsMax: 512,
      egress: "internet",
      egressAllow: [],
      mirrors: [],
    });
    assert.equal(loadConfig({ SLIPWAY_SANDBOX: "none" }).sandbox.mode, "none");
    assert.deepEqual(loadConfig({ SLIPWAY_APP_UID_RANGE: "5000-5000" }).sandbox.uidRange, {
      first: 5000,
      last: 5000,
    });
  });

  it("reads the tenant limits: pids, egress and its allowed ranges, build time and concurrency, log rate", () => {
    const c = loadConfig({
      SLIPWAY_APP_PIDS_MAX: "64",
      SLIPWAY_APP_EGRESS: "none",
      SLIPWAY_APP_EGRESS_ALLOW: " 10.1.0.0/16, fd00::/8 ",
      SLIPWAY_BUILD_TIMEOUT_S: "60",
      SLIPWAY_BUILDS_PER_WORKSPACE: "3",
      SLIPWAY_LOG_LINES_PER_S: "200",
    });
    assert.equal(c.sandbox.pidsMax, 64);
    assert.equal(c.sandbox.egress, "none");
    assert.deepEqual(c.sandbox.egressAllow, ["10.1.0.0/16", "fd00::/8"]);
    assert.equal(c.limits.buildTimeoutMs, 60_000);
    assert.equal(c.limits.buildsPerWorkspace, 3);
    assert.equal(c.limits.logLinesPerS, 200);
    const m = loadConfig({
      SLIPWAY_NPM_REGISTRY: "http://10.0.0.5:4873",
      SLIPWAY_PIP_INDEX_URL: "https://pypi.internal/simple/",
    });
    assert.deepEqual(m.sandbox.mirrors, ["http://10.0.0.5:4873/", "https://pypi.internal/simple/"]);
    const d = loadConfig({});
    assert.equal(d.limits.buildTimeoutMs, 900_000);
    assert.equal(d.limits.buildsPerWorkspace, 2);
  });

  it("reads the database target from DATABASE_URL", () => {
    assert.deepEqual(loadConfig({ DATABASE_URL: "memory://" }).database, { kind: "pglite-memory" });
    assert.deepEqual(loadConfig({ DATABASE_URL: "postgres://u@h:5432/d" }).database, {
      kind: "postgres",
      url: "postgres://u@h:5432/d",
    });
    const embedded = loadConfig({ SLIPWAY_DATA_DIR: "/tmp/sw-data" }).database;
    assert.deepEqual(embedded, { kind: "pglite", dataDir: "/tmp/sw-data/db" });
  });

  it("normalizes the base path", () => {
    assert.equal(loadConfig({ SLIPWAY_BASE_PATH: "api/" }).basePath, "/api");
    assert.equal(loadConfig({ SLIPWAY_BASE_PATH: "/a/b" }).basePath, "/a/b");
    assert.equal(loadConfig({ SLIPWAY_BASE_PATH: "/" }).basePath, "");
  });

  const bad: [Record<string, string>, RegExp][] = [
    [{ PORT: "http" }, /^PORT must be a whole number/],
    [{ PORT: "70000" }, /^PORT must be between/],
    [{ DATABASE_URL: "mysql://x" }, /^DATABASE_URL must be/],
    [
      { SLIPWAY_MASTER_KEY: "c2hvcnQ=" },
      /^SLIPWAY_MASTER_KEY must be the base64 encoding of exactly 32 bytes/,
    ],
    [{ SLIPWAY_PREVIOUS_MASTER_KEYS: "nope" }, /^SLIPWAY_PREVIOUS_MASTER_KEYS/],
    [{ SLIPWAY_BASE_PATH: "/a b" }, /^SLIPWAY_BASE_PATH/],
    [{ LOG_LEVEL: "loud" }, /^LOG_LEVEL must be one of/],
    [{ SLIPWAY_SOURCE_LIMIT_BYTES: "1G" }, /^SLIPWAY_SOURCE_LIMIT_BYTES must be a whole number/],
    [{ SLIPWAY_SOURCE_LIMIT_BYTES: "10" }, /^SLIPWAY_SOURCE_LIMIT_BYTES must be between/],
    [{ SLIPWAY_SOURCE_MAX_FILES: "0" }, /^SLIPWAY_SOURCE_MAX_FILES must be between/],
    [{ SLIPWAY_BUILD_DISK_LIMIT_MB: "-5" }, /^SLIPWAY_BUILD_DISK_LIMIT_MB must be a whole number/],
    [{ SLIPWAY_TRUST_PROXY: "yes" }, /^SLIPWAY_TRUST_PROXY must be/],
    [{ SLIPWAY_TRUST_PROXY: "10.0.0.0/33" }, /^SLIPWAY_TRUST_PROXY must be/],
    [{ SLIPWAY_SANDBOX: "docker" }, /^SLIPWAY_SANDBOX must be one of auto, bwrap, none/],
    [{ SLIPWAY_APP_EGRESS: "all" }, /^SLIPWAY_APP_EGRESS must be one of internet, none/],
    [{ SLIPWAY_APP_EGRESS_ALLOW: "10.0.0.0" }, /^SLIPWAY_APP_EGRESS_ALLOW: "10.0.0.0" is not a CIDR range/],
    [{ SLIPWAY_APP_EGRESS_ALLOW: "10.0.0.0/8,10.0.0.0/33" }, /^SLIPWAY_APP_EGRESS_ALLOW: "10.0.0.0\/33"/],
    [{ SLIPWAY_APP_EGRESS_ALLOW: "example.com/8" }, /^SLIPWAY_APP_EGRESS_ALLOW: "example.com\/8"/],
    [{ SLIPWAY_NPM_REGISTRY: "registry.npmjs.org" }, /^SLIPWAY_NPM_REGISTRY must be an http\(s\) URL/],
    [{ SLIPWAY_PIP_INDEX_URL: "ftp://x/simple" }, /^SLIPWAY_PIP_INDEX_URL must be an http\(s\) URL/],
    [{ SLIPWAY_APP_PIDS_MAX: "8" }, /^SLIPWAY_APP_PIDS_MAX must be between 16 and/],
    [{ SLIPWAY_BUILD_TIMEOUT_S: "0" }, /^SLIPWAY_BUILD_TIMEOUT_S must be between 1 and/],
    [{ SLIPWAY_BUILDS_PER_WORKSPACE: "0" }, /^SLIPWAY_BUILDS_PER_WORKSPACE must be between 1 and/],
    [{ SLIPWAY_APP_UID_RANGE: "200000" }, /^SLIPWAY_APP_UID_RANGE must be "<first>-<last>"/],
    [{ SLIPWAY_APP_UID_RANGE: "0-65535" }, /^SLIPWAY_APP_UID_RANGE must be/],
    [{ SLIPWAY_APP_UID_RANGE: "300000-200000" }, /^SLIPWAY_APP_UID_RANGE must be/],
    [{ SLIPWAY_APP_UID_RANGE: "200000-4294967295" }, /^SLIPWAY_APP_UID_RANGE must be/],
    [{ SLIPWAY_BOOTSTRAP_API_KEY: "short" }, /^SLIPWAY_BOOTSTRAP_API_KEY/],
    [{ SLIPWAY_REDIS_SERVER: "redis-server" }, /^SLIPWAY_REDIS_SERVER must be an absolute path/],
    [{ SLIPWAY_UNUSED_AFTER_S: "0" }, /^SLIPWAY_UNUSED_AFTER_S must be between 1 and/],
    [{ SLIPWAY_UNUSED_AFTER_S: "7d" }, /^SLIPWAY_UNUSED_AFTER_S must be a whole number/],
    [
      { SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK: "maybe" },
      /^SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK must be true or false/,
    ],
  ];
  for (const [env, message] of bad) {
    it(`refuses ${Object.keys(env)[0]}=${Object.values(env)[0]} with a sentence naming it`, () => {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) => err instanceof ConfigError && message.test(err.message),
      );
    });
  }

  it("accepts a 32-byte base64 master key", () => {
    const key = Buffer.alloc(32, 7).toString("base64");
    assert.equal(loadConfig({ SLIPWAY_MASTER_KEY: key }).masterKey, key);
  });

  it("reads the container settings, refusing unknown engines and networks", () => {
    assert.deepEqual(loadConfig({}).containers, {
      engine: "auto",
      network: "bridge",
      secretRefsDir: undefined,
    });
    assert.deepEqual(
      loadConfig({
        SLIPWAY_CONTAINER_ENGINE: "docker",
        SLIPWAY_CONTAINER_NETWORK: "host",
        SLIPWAY_SECRET_REFS_DIR: "/run/refs/",
      }).containers,
      { engine: "docker", network: "host", secretRefsDir: "/run/refs" },
    );
    assert.throws(
      () => loadConfig({ SLIPWAY_CONTAINER_ENGINE: "lxc" }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /^SLIPWAY_CONTAINER_ENGINE must be one of auto, podman, docker, got "lxc"\.$/.test(err.message),
    );
    assert.throws(
      () => loadConfig({ SLIPWAY_CONTAINER_NETWORK: "none" }),
      /SLIPWAY_CONTAINER_NETWORK must be one of/,
    );
  });
  it("registry settings: credentials together, insecure a boolean, the base image a reference", () => {
    const c = loadConfig({
      SLIPWAY_REGISTRY_URL: "http://127.0.0.1:5000/",
      SLIPWAY_REGISTRY_USERNAME: "u",
      SLIPWAY_REGISTRY_PASSWORD: "p w",
      SLIPWAY_REGISTRY_INSECURE: "true",
      SLIPWAY_BUILD_BASE_IMAGE: "localhost/base:1",
      SLIPWAY_BUILD_BASE_IMAGE_PYTHON: "localhost/python-base:1",
    });
    assert.equal(c.listeners.registryUrl, "127.0.0.1:5000");
    assert.equal(c.listeners.registryUsername, "u");
    assert.equal(c.listeners.registryPassword, "p w");
    assert.equal(c.listeners.registryInsecure, true);
    assert.equal(c.listeners.buildBaseImage, "localhost/base:1");
    assert.equal(c.listeners.buildBaseImagePython, "localhost/python-base:1");
    const d = loadConfig({});
    assert.equal(d.listeners.registryInsecure, false);
    assert.equal(d.listeners.registryUsername, undefined);
    assert.equal(d.listeners.buildBaseImage, "docker.io/library/node:22-bookworm-slim");
    assert.equal(d.listeners.buildBaseImagePython, "docker.io/library/python:3.11-slim-bookworm");
    assert.throws(
      () => loadConfig({ SLIPWAY_BUILD_BASE_IMAGE_PYTHON: "not an image" }),
      /SLIPWAY_BUILD_BASE_IMAGE_PYTHON/,
    );
    assert.throws(() => loadConfig({ SLIPWAY_REGISTRY_USERNAME: "u" }), /must be set together/);
    assert.throws(() => loadConfig({ SLIPWAY_REGISTRY_PASSWORD: "p" }), /must be set together/);
    assert.throws(
      () => loadConfig({ SLIPWAY_REGISTRY_USERNAME: "a:b", SLIPWAY_REGISTRY_PASSWORD: "p" }),
      /must not contain spaces or colons/,
    );
    assert.throws(() => loadConfig({ SLIPWAY_REGISTRY_INSECURE: "maybe" }), /SLIPWAY_REGISTRY_INSECURE/);
    assert.equal(d.listeners.registryToken, undefined);
    // Registry token auth: both files, a registry, no static credential, a key that fits its cert.
    const keys = makeTokenKeys();
    const other = makeTokenKeys();
    try {
      const t = loadConfig({ ...tokenEnv(keys, "127.0.0.1:5000"), SLIPWAY_REGISTRY_PUSH_TOKEN_TTL_S: "120" });
      assert.equal(t.listeners.registryToken?.signer.service, "slipway-registry");
      assert.equal(t.listeners.registryToken?.pushTtlS, 120);
      assert.equal(t.listeners.registryToken?.pullTtlS, 86_400);
      const named = loadConfig({ ...tokenEnv(keys, "127.0.0.1:5000"), SLIPWAY_REGISTRY_TOKEN_SERVICE: "r1" });
      assert.equal(named.listeners.registryToken?.signer.service, "r1");
      const env = tokenEnv(keys, "127.0.0.1:5000");
      assert.throws(
        () => loadConfig({ SLIPWAY_REGISTRY_TOKEN_KEY_FILE: keys.keyFile }),
        /SLIPWAY_REGISTRY_TOKEN_KEY_FILE and SLIPWAY_REGISTRY_TOKEN_CERT_FILE must be set together/,
      );
      assert.throws(() => loadConfig({ ...env, SLIPWAY_REGISTRY_URL: "" }), /needs SLIPWAY_REGISTRY_URL/);
      assert.throws(
        () => loadConfig({ ...env, SLIPWAY_REGISTRY_USERNAME: "u", SLIPWAY_REGISTRY_PASSWORD: "p" }),
        /exclude each other/,
      );
      assert.throws(
        () => loadConfig({ ...env, SLIPWAY_REGISTRY_TOKEN_CERT_FILE: `${keys.dir}/missing.crt` }),
        /SLIPWAY_REGISTRY_TOKEN_CERT_FILE cannot be read \(ENOENT\)/,
      );
      assert.throws(
        () => loadConfig({ ...env, SLIPWAY_REGISTRY_TOKEN_CERT_FILE: other.certFile }),
        /not the certificate of its key/,
      );
      assert.throws(
        () => loadConfig({ ...env, SLIPWAY_REGISTRY_PUSH_TOKEN_TTL_S: "5" }),
        /SLIPWAY_REGISTRY_PUSH_TOKEN_TTL_S/,
      );
    } finally {
      rmSync(keys.dir, { recursive: true, force: true });
      rmSync(other.dir, { recursive: true, force: true });
    }
    for (const bad of ["node 22", "FROM x\nRUN y", "a//b", "-x"]) {
      assert.throws(
        () => loadConfig({ SLIPWAY_BUILD_BASE_IMAGE: bad }),
        /SLIPWAY_BUILD_BASE_IMAGE must be an image/,
      );
    }
  });
});
