import assert from "node:assert/strict";
import { lookup } from "node:dns/promises";
import { hostname } from "node:os";
import { describe, it } from "node:test";
import { refusedAddressReason } from "../../src/oauth/address-policy.ts";
import { storedUrlProblem, urlProblem } from "../../src/oauth/url-policy.ts";
import { forEachDatabase, type TestContext } from "../helpers/harness.ts";
import { detailLocs, send } from "../helpers/oauth.ts";

/** Item 15: provider URLs are checked when stored, not only when fetched. */

const provider = (over: Record<string, unknown> = {}) => ({
  provider_id: "store-check",
  name: "Store check",
  client_id: "client",
  client_secret: "secret",
  auth_url: "https://idp.example.com/authorize",
  token_url: "https://idp.example.com/token",
  ...over,
});

const NON_PUBLIC: [string, RegExp][] = [
  ["https://10.0.0.1/x", /10\.0\.0\.1 is a private address/],
  ["https://192.168.1.1/x", /private address/],
  ["https://169.254.169.254/latest/meta-data/", /metadata address/],
  ["https://[fd00:ec2::254]/", /metadata address/],
  ["https://169.254.10.10/x", /link-local address/],
  ["https://[fe80::1]/x", /link-local address/],
  ["https://[::ffff:10.0.0.1]/x", /private address/],
  ["https://0x7f000001/x", /loopback address/],
  ["https://127.0.0.1/x", /loopback address/],
  ["https://[::1]/x", /loopback address/],
  ["https://localhost/x", /localhost resolves to a loopback address/],
  ["https://app.localhost/x", /loopback address/],
  ["https://0.0.0.0/x", /unspecified address/],
];

/** This machine's own name: on any host it resolves to loopback or a private address. */
async function ownNameAddresses(): Promise<string[]> {
  try {
    return (await lookup(hostname(), { all: true })).map((a) => a.address);
  } catch {
    return [];
  }
}

async function count(ctx: TestContext): Promise<number> {
  const res = await ctx.app.inject({
    method: "GET",
    url: "/v2/auth/providers",
    headers: ctx.headers(ctx.keys.admin),
  });
  return (res.json() as unknown[]).length;
}

describe("store-time URL rules", () => {
  it("literal non-public addresses are refused; loopback only when allowed", () => {
    for (const [url, reason] of NON_PUBLIC) assert.match(urlProblem(url, false) ?? "", reason, url);
    for (const url of [
      "https://127.0.0.1/x",
      "https://[::1]/x",
      "https://localhost/x",
      "http://localhost:9/x",
    ]) {
      assert.equal(urlProblem(url, true), null, url);
    }
    assert.match(urlProblem("https://10.0.0.1/x", true) ?? "", /private/);
    assert.match(urlProblem("https://169.254.169.254/", true) ?? "", /metadata/);
    assert.equal(urlProblem("https://93.184.216.34/x", false), null);
  });

  it("host names are resolved with the fetch's rules; a name that does not resolve is left to the fetch", async (t) => {
    const own = await ownNameAddresses();
    if (own.length === 0) return t.skip("this machine's name does not resolve");
    assert.ok(
      own.some((a) => refusedAddressReason(a, false) !== null),
      `${hostname()} → ${own.join(", ")}`,
    );
    assert.match(
      (await storedUrlProblem(`https://${hostname()}/x`, false)) ?? "",
      new RegExp(`${hostname()} resolves to a .* address`),
    );
    assert.equal(await storedUrlProblem("https://no-such-host.invalid/x", false), null);
  });
});

forEachDatabase("OAuth provider URLs are checked when stored", (suite) => {
  it("create: https only and no loopback, private, link-local or metadata address (422 naming the field)", async () => {
    const ctx = suite.ctx;
    const before = await count(ctx);
    for (const [url, reason] of NON_PUBLIC) {
      for (const field of ["auth_url", "token_url"]) {
        const res = await send(ctx, "POST", "/v2/auth/providers", provider({ [field]: url }));
        assert.equal(res.statusCode, 422, `${field}=${url}: ${res.body}`);
        assert.deepEqual(detailLocs(res), [`body.${field}`]);
        assert.match(res.body, reason);
      }
    }
    assert.equal(await count(ctx), before);
  });

  it("create and patch: a host name resolving to a non-public address is refused", async (t) => {
    const ctx = suite.ctx;
    if ((await ownNameAddresses()).length === 0) return t.skip("this machine's name does not resolve");
    const own = `https://${hostname()}/token`;
    const created = await send(ctx, "POST", "/v2/auth/providers", provider({ token_url: own }));
    assert.equal(created.statusCode, 422, created.body);
    assert.deepEqual(detailLocs(created), ["body.token_url"]);
    assert.match(created.body, /resolves to a/);
    const ok = await send(ctx, "POST", "/v2/auth/providers", provider({ provider_id: "patched" }));
    assert.equal(ok.statusCode, 200, ok.body);
    const patched = await send(ctx, "PATCH", "/v2/auth/providers/patched", { auth_url: own });
    assert.equal(patched.statusCode, 422, patched.body);
    assert.deepEqual(detailLocs(patched), ["body.auth_url"]);
  });

  it("patch: a literal private address is refused and nothing changes", async () => {
    const ctx = suite.ctx;
    await send(ctx, "POST", "/v2/auth/providers", provider({ provider_id: "kept" }));
    const res = await send(ctx, "PATCH", "/v2/auth/providers/kept", { token_url: "https://10.1.2.3/token" });
    assert.equal(res.statusCode, 422, res.body);
    assert.deepEqual(detailLocs(res), ["body.token_url"]);
    const got = await send(ctx, "GET", "/v2/auth/providers/kept");
    assert.equal((got.json() as { token_url: string }).token_url, "https://idp.example.com/token");
  });
});

forEachDatabase(
  "OAuth provider URLs with insecure loopback allowed",
  (suite) => {
    it("loopback addresses are stored; private and metadata addresses still are not", async () => {
      const ctx = suite.ctx;
      const ok = await send(
        ctx,
        "POST",
        "/v2/auth/providers",
        provider({ auth_url: "https://127.0.0.1:9000/auth", token_url: "http://localhost:9000/token" }),
      );
      assert.equal(ok.statusCode, 200, ok.body);
      const res = await send(
        ctx,
        "POST",
        "/v2/auth/providers",
        provider({ provider_id: "p2", token_url: "https://169.254.169.254/token" }),
      );
      assert.equal(res.statusCode, 422, res.body);
      assert.deepEqual(detailLocs(res), ["body.token_url"]);
    });
  },
  { env: { SLIPWAY_OAUTH_ALLOW_INSECURE_LOOPBACK: "true" } },
);
