import assert from "node:assert/strict";
import { createPublicKey, generateKeyPairSync, verify, X509Certificate } from "node:crypto";
import { rmSync } from "node:fs";
import { after, describe, it } from "node:test";
import { RegistryTokenError, RegistryTokenSigner } from "../../src/crypto/registry-token.ts";
import { jwtParts, makeTokenKeys } from "../helpers/registry-token-keys.ts";

const ec = makeTokenKeys("ec");
const rsa = makeTokenKeys("rsa");
after(() => {
  for (const k of [ec, rsa]) rmSync(k.dir, { recursive: true, force: true });
});

/** Checks a JWT's signature as the registry does: with the public key of the x5c certificate. */
function verifiedByItsCertificate(token: string): boolean {
  const { header } = jwtParts(token);
  const x5c = header.x5c as string[];
  const cert = new X509Certificate(Buffer.from(x5c[0] ?? "", "base64"));
  const [h, c, s] = token.split(".");
  const ecdsa = header.alg === "ES256";
  return verify(
    "sha256",
    Buffer.from(`${h}.${c}`),
    { key: cert.publicKey, ...(ecdsa ? { dsaEncoding: "ieee-p1363" as const } : {}) },
    Buffer.from(s ?? "", "base64url"),
  );
}

const GRANT = {
  subject: "deployment:d1",
  workspaceId: "ws1",
  deploymentId: "d1",
  repository: "ws1/app",
  actions: ["pull", "push"] as ("pull" | "push")[],
};

describe("registry bearer tokens", () => {
  for (const [kind, keys, alg] of [
    ["EC P-256", ec, "ES256"],
    ["RSA", rsa, "RS256"],
  ] as const) {
    it(`${kind}: ${alg}, the certificate in x5c, the claims the registry checks`, () => {
      const signer = new RegistryTokenSigner(keys.keyPem, keys.certPem, "my-registry");
      const now = Date.now();
      const access = [{ type: "repository" as const, name: "ws1/app", actions: ["pull" as const] }];
      const token = signer.bearer("deployment:d1", access, 300, now);
      const { header, claims } = jwtParts(token);
      assert.equal(header.alg, alg);
      assert.equal(header.typ, "JWT");
      assert.equal((header.x5c as string[])[0], new X509Certificate(keys.certPem).raw.toString("base64"));
      assert.equal(claims.iss, "slipway");
      assert.equal(claims.aud, "my-registry");
      assert.equal(claims.sub, "deployment:d1");
      assert.equal(claims.exp, Math.floor(now / 1000) + 300);
      assert.equal(claims.nbf, Math.floor(now / 1000));
      assert.deepEqual(claims.access, access);
      assert.equal(typeof claims.jti, "string");
      assert.ok(verifiedByItsCertificate(token));
    });
  }

  it("a tampered token does not verify (the check above can fail)", () => {
    const signer = new RegistryTokenSigner(ec.keyPem, ec.certPem, "r");
    const token = signer.bearer("s", [], 300);
    const [h, , s] = token.split(".");
    const forged = Buffer.from(
      JSON.stringify({ iss: "slipway", aud: "r", access: [{ name: "*" }] }),
    ).toString("base64url");
    assert.equal(verifiedByItsCertificate(`${h}.${forged}.${s}`), false);
  });
});

describe("push tokens", () => {
  const signer = new RegistryTokenSigner(ec.keyPem, ec.certPem, "my-registry");

  it("read back: subject, deployment, repository, actions, expiry", () => {
    const now = Date.now();
    const { token, expiresAt } = signer.pushToken(GRANT, 900, now);
    assert.equal(expiresAt.getTime(), (Math.floor(now / 1000) + 900) * 1000);
    assert.deepEqual(signer.readPushToken(token, now), { ...GRANT, expiresAt });
  });

  it("expired, tampered, another key's, or a registry bearer: not a push token", () => {
    const now = Date.now();
    const { token } = signer.pushToken(GRANT, 900, now);
    assert.equal(signer.readPushToken(token, now + 901_000), undefined);
    const [h, c, s] = token.split(".");
    const claims = JSON.parse(Buffer.from(c ?? "", "base64url").toString("utf8")) as Record<string, unknown>;
    const wider = Buffer.from(JSON.stringify({ ...claims, repository: "ws2/other" })).toString("base64url");
    assert.equal(signer.readPushToken(`${h}.${wider}.${s}`, now), undefined);
    const other = new RegistryTokenSigner(rsa.keyPem, rsa.certPem, "my-registry");
    assert.equal(signer.readPushToken(other.pushToken(GRANT, 900, now).token, now), undefined);
    // Same key, but the registry's audience: a bearer is never a login.
    assert.equal(signer.readPushToken(signer.bearer("s", [], 300, now), now), undefined);
    for (const junk of ["", "a.b", "a.b.c", "x".repeat(500)])
      assert.equal(signer.readPushToken(junk, now), undefined);
  });

  it("a push token's audience is not the registry's: the registry would refuse it as a bearer", () => {
    const { claims } = jwtParts(signer.pushToken(GRANT, 900).token);
    assert.notEqual(claims.aud, "my-registry");
  });
});

describe("key and certificate checks", () => {
  it("a certificate of another key, a non-PEM key or certificate, an Ed25519 key: RegistryTokenError", () => {
    assert.throws(() => new RegistryTokenSigner(ec.keyPem, rsa.certPem, "r"), RegistryTokenError);
    assert.throws(() => new RegistryTokenSigner("nope", ec.certPem, "r"), /not a PEM private key/);
    assert.throws(() => new RegistryTokenSigner(ec.keyPem, "nope", "r"), /not a PEM certificate/);
    const ed = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
    assert.throws(() => new RegistryTokenSigner(ed, ec.certPem, "r"), /EC P-256 or an RSA/);
    // The public half of the right key is not a private key.
    const pub = createPublicKey(ec.keyPem).export({ type: "spki", format: "pem" }).toString();
    assert.throws(() => new RegistryTokenSigner(pub, ec.certPem, "r"), RegistryTokenError);
  });
});
