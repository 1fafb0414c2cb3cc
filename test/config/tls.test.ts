import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { loadConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/config.ts";

/** SLIPWAY_APPS_TLS and its companions (config/tls.ts): defaults, each mode, bad values refused at start. */

const dir = mkdtempSync(join(tmpdir(), "slipway-tls-config-"));
const ca = join(dir, "ca.pem");
writeFileSync(ca, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
const notPem = join(dir, "not.pem");
writeFileSync(notPem, "hello");
after(() => rmSync(dir, { recursive: true, force: true }));

describe("config: HTTPS on the apps listener", () => {
  it("is off by default, on port 8443", () => {
    const c = loadConfig({});
    assert.equal(c.apps.tls.mode, "off");
    assert.equal(c.apps.tls.port, 8443);
    assert.equal(c.apps.tls.handshakeTimeoutMs, 10_000);
    assert.equal(c.apps.tls.checkEveryMs, 60_000);
  });

  it("reads each mode and what it needs", () => {
    const acme = loadConfig({
      SLIPWAY_APPS_TLS: "acme",
      SLIPWAY_APPS_TLS_PORT: "443",
      SLIPWAY_ACME_DIRECTORY_URL: "https://acme.example.com/dir",
      SLIPWAY_ACME_CA_FILE: ca,
      SLIPWAY_ACME_EMAIL: "ops@example.com",
    });
    assert.equal(acme.apps.tls.mode, "acme");
    assert.equal(acme.apps.tls.port, 443);
    assert.deepEqual(acme.apps.tls.acme, {
      directoryUrl: "https://acme.example.com/dir",
      ca: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
      email: "ops@example.com",
    });
    assert.equal(loadConfig({ SLIPWAY_APPS_TLS: "INTERNAL" }).apps.tls.mode, "internal");
    const files = loadConfig({ SLIPWAY_APPS_TLS: "files", SLIPWAY_APPS_TLS_DIR: dir });
    assert.equal(files.apps.tls.dir, dir);
  });

  const refused: [Record<string, string>, RegExp][] = [
    [{ SLIPWAY_APPS_TLS: "yes" }, /SLIPWAY_APPS_TLS must be one of off, internal, acme, files, got "yes"/],
    [{ SLIPWAY_APPS_TLS: "acme" }, /SLIPWAY_APPS_TLS=acme needs SLIPWAY_ACME_DIRECTORY_URL/],
    [
      { SLIPWAY_APPS_TLS: "acme", SLIPWAY_ACME_DIRECTORY_URL: "http://acme.example.com/dir" },
      /SLIPWAY_ACME_DIRECTORY_URL must be an https URL/,
    ],
    [
      { SLIPWAY_APPS_TLS: "acme", SLIPWAY_ACME_DIRECTORY_URL: "not a url" },
      /SLIPWAY_ACME_DIRECTORY_URL must be an https URL, got "not a url"/,
    ],
    [{ SLIPWAY_ACME_CA_FILE: join(dir, "missing.pem") }, /SLIPWAY_ACME_CA_FILE cannot be read/],
    [{ SLIPWAY_ACME_CA_FILE: notPem }, /SLIPWAY_ACME_CA_FILE must hold PEM certificates/],
    [{ SLIPWAY_ACME_EMAIL: "nobody" }, /SLIPWAY_ACME_EMAIL must be an email address/],
    [{ SLIPWAY_APPS_TLS: "files" }, /SLIPWAY_APPS_TLS=files needs SLIPWAY_APPS_TLS_DIR/],
    [{ SLIPWAY_APPS_TLS_PORT: "70000" }, /SLIPWAY_APPS_TLS_PORT must be between 0 and 65535/],
    [{ SLIPWAY_APPS_TLS_PORT: "https" }, /SLIPWAY_APPS_TLS_PORT must be a whole number/],
    [
      { SLIPWAY_APPS_TLS: "internal", SLIPWAY_APPS_PORT: "9000", SLIPWAY_APPS_TLS_PORT: "9000" },
      /SLIPWAY_APPS_TLS_PORT must differ from SLIPWAY_APPS_PORT/,
    ],
    [{ SLIPWAY_APPS_TLS_HANDSHAKE_TIMEOUT_MS: "5" }, /SLIPWAY_APPS_TLS_HANDSHAKE_TIMEOUT_MS must be between/],
    [{ SLIPWAY_CERT_CHECK_MS: "-1" }, /SLIPWAY_CERT_CHECK_MS must be a whole number/],
  ];
  for (const [env, sentence] of refused) {
    it(`refuses ${JSON.stringify(env)} with a sentence naming it`, () => {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) => err instanceof ConfigError && sentence.test(err.message),
      );
    });
  }
});
