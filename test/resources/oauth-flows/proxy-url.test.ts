import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FieldsInvalid } from "../../../src/core/errors.ts";
import { apiBaseOf, targetUrl } from "../../../src/resources/oauth-flows/proxy.ts";
import type { ProviderRow } from "../../../src/resources/oauth-providers/store.ts";

const LOC = ["body", "path"];

const row = (over: Partial<ProviderRow>): ProviderRow => ({
  id: "00000000-0000-4000-8000-000000000001",
  organizationId: "00000000-0000-4000-8000-000000000002",
  providerId: "p",
  name: "P",
  clientId: "c",
  clientSecretEnc: null,
  authUrl: "https://idp.example.com/a",
  tokenUrl: "https://idp.example.com/t",
  usesPkce: true,
  codeChallengeMethod: "S256",
  tokenEndpointAuthMethod: "client_secret_post",
  providerType: null,
  mcpServerUrl: null,
  isDynamicClient: false,
  issuer: null,
  template: null,
  templateParams: {},
  apiBaseUrl: null,
  createdAt: new Date(),
  updatedAt: new Date(),
  ...over,
});

describe("the proxy's target URL", () => {
  it("appends the path under the base, keeping the base's own path and the query as encoded", () => {
    assert.equal(
      targetUrl("https://api.example.com/v2/", "/repos/a/b", "", LOC).href,
      "https://api.example.com/v2/repos/a/b",
    );
    assert.equal(
      targetUrl("https://api.example.com/v2", "repos/a%2Fb", "x=1&y=%2F", LOC).href,
      "https://api.example.com/v2/repos/a%2Fb?x=1&y=%2F",
    );
    assert.equal(
      targetUrl("https://api.example.com", "/v1/projects/p:run", "", LOC).pathname,
      "/v1/projects/p:run",
    );
  });

  it("refuses what would leave the base: absolute and scheme-relative URLs, . and .. (encoded too), backslashes, ? #, control characters", () => {
    for (const path of [
      "https://evil.example/x",
      "javascript:alert(1)",
      "//evil.example/x",
      "/../x",
      "/a/..",
      "/./a",
      "/%2e%2E/x",
      "/a/..%2fb",
      "/a/%2e%2e%5cb",
      "/a\\b",
      "/a?b=1",
      "/a#b",
      "/a b",
      "/a\u0000b",
      "/%zz",
    ]) {
      assert.throws(
        () => targetUrl("https://api.example.com/v2", path, "", LOC),
        (err: unknown) => err instanceof FieldsInvalid && err.items[0]?.loc.join(".") === "body.path",
        path,
      );
    }
  });
});

describe("the proxy's API base URL", () => {
  it("is the provider's own, else its template's with the placeholders filled, else none", () => {
    assert.equal(
      apiBaseOf(row({ apiBaseUrl: "https://ghe.example.com/api/v3", template: "github" })),
      "https://ghe.example.com/api/v3",
    );
    assert.equal(apiBaseOf(row({ template: "github" })), "https://api.github.com");
    assert.equal(
      apiBaseOf(row({ template: "zendesk", templateParams: { subdomain: "acme" } })),
      "https://acme.zendesk.com/api/v2",
    );
    assert.equal(apiBaseOf(row({})), null);
  });
});
