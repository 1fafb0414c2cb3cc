import assert from "node:assert/strict";
import { it } from "node:test";
import { findProviderRow, providerClient } from "../../../src/resources/oauth-providers/service.ts";
import { authMatrix } from "../../helpers/auth-matrix.ts";
import { forEachDatabase } from "../../helpers/harness.ts";
import { detailLocs, send } from "../../helpers/oauth.ts";

interface Provider {
  provider_id: string;
  name: string;
  auth_url: string;
  token_url: string;
  uses_pkce: boolean;
  code_challenge_method: string | null;
  token_endpoint_auth_method: string;
  provider_type: string | null;
  template?: string | null;
  template_params?: Record<string, string>;
  api_base_url?: string | null;
  has_client_secret: boolean;
}
interface TemplateDoc {
  id: string;
  name: string;
  docs_url: string;
  auth_url: string;
  params: Record<string, unknown>;
  quirks: { notes: string[] };
}

forEachDatabase("oauth providers from catalog templates", (suite) => {
  const create = (body: Record<string, unknown>, key?: string) =>
    send(suite.ctx, "POST", "/v2/auth/providers", body, key);
  const count = async () => ((await send(suite.ctx, "GET", "/v2/auth/providers")).json() as unknown[]).length;

  it("GET /v2/auth/catalog lists every template with its documentation page and quirks", async () => {
    const res = await send(suite.ctx, "GET", "/v2/auth/catalog", undefined, suite.ctx.keys.viewer);
    assert.equal(res.statusCode, 200, res.body);
    const list = res.json() as TemplateDoc[];
    assert.ok(list.length >= 25);
    const github = list.find((t) => t.id === "github");
    assert.equal(github?.auth_url, "https://github.com/login/oauth/authorize");
    assert.match(github?.docs_url ?? "", /^https:\/\/docs\.github\.com\//);
    assert.ok(list.find((t) => t.id === "microsoft")?.params.tenant);
    const one = await send(suite.ctx, "GET", "/v2/auth/catalog/slack");
    assert.equal(one.statusCode, 200);
    assert.equal((one.json() as TemplateDoc).name, "Slack");
    assert.equal((await send(suite.ctx, "GET", "/v2/auth/catalog/nope")).statusCode, 404);
  });

  authMatrix(suite, { method: "GET", url: () => "/v2/auth/catalog" });

  it("POST {provider_id, template, client_id, client_secret} fills the rest from the template", async () => {
    const res = await create({
      provider_id: "gh",
      template: "github",
      client_id: "Iv1.x",
      client_secret: "s",
    });
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json() as Provider;
    assert.equal(p.name, "GitHub");
    assert.equal(p.auth_url, "https://github.com/login/oauth/authorize");
    assert.equal(p.token_url, "https://github.com/login/oauth/access_token");
    assert.equal(p.token_endpoint_auth_method, "client_secret_post");
    assert.equal(p.template, "github");
    assert.equal(p.api_base_url, "https://api.github.com");
    const read = (await send(suite.ctx, "GET", "/v2/auth/providers/gh")).json() as Provider;
    assert.equal(read.template, "github");
  });

  it("fields given explicitly win over the template's", async () => {
    const res = await create({
      provider_id: "notion-custom",
      template: "notion",
      name: "Our Notion",
      client_id: "c",
      client_secret: "s",
      token_url: "https://notion.example.com/token",
      uses_pkce: true,
      api_base_url: "https://notion-api.example.com",
    });
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json() as Provider;
    assert.equal(p.name, "Our Notion");
    assert.equal(p.auth_url, "https://api.notion.com/v1/oauth/authorize");
    assert.equal(p.token_url, "https://notion.example.com/token");
    assert.equal(p.token_endpoint_auth_method, "client_secret_basic", "the template's");
    assert.equal(p.uses_pkce, true);
    assert.equal(p.api_base_url, "https://notion-api.example.com");
  });

  it("Slack's template makes a Slack provider (provider_type slack)", async () => {
    const res = await create({
      provider_id: "slack",
      template: "slack",
      client_id: "1.2",
      client_secret: "s",
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((res.json() as Provider).provider_type, "slack");
  });

  it("template_params fill placeholders (Microsoft's tenant)", async () => {
    const res = await create({
      provider_id: "entra",
      template: "microsoft",
      template_params: { tenant: "contoso.onmicrosoft.com" },
      client_id: "c",
      client_secret: "s",
    });
    assert.equal(res.statusCode, 200, res.body);
    const p = res.json() as Provider;
    assert.equal(
      p.auth_url,
      "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize",
    );
    assert.equal(p.token_url, "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token");
    assert.deepEqual(p.template_params, { tenant: "contoso.onmicrosoft.com" });
  });

  it("an unknown template, a missing or bad parameter, or parameters without a template: 422, nothing stored", async () => {
    const before = await count();
    const cases: [Record<string, unknown>, string[]][] = [
      [{ provider_id: "u1", template: "myspace", client_id: "c", client_secret: "s" }, ["body.template"]],
      [
        { provider_id: "u2", template: "microsoft", client_id: "c", client_secret: "s" },
        ["body.template_params.tenant"],
      ],
      [
        {
          provider_id: "u3",
          template: "shopify",
          template_params: { shop: "evil.example.com/x" },
          client_id: "c",
          client_secret: "s",
        },
        ["body.template_params.shop"],
      ],
      [
        {
          provider_id: "u4",
          template: "github",
          template_params: { tenant: "x" },
          client_id: "c",
          client_secret: "s",
        },
        ["body.template_params.tenant"],
      ],
      [
        {
          provider_id: "u5",
          name: "n",
          auth_url: "https://a.example.com",
          token_url: "https://a.example.com/t",
          template_params: { a: "b" },
          client_id: "c",
          client_secret: "s",
        },
        ["body.template_params"],
      ],
      [
        { provider_id: "u6", client_id: "c", client_secret: "s" },
        ["body.auth_url", "body.name", "body.token_url"],
      ],
      [{ provider_id: "u7", template: "github", client_id: "c" }, ["body.client_secret"]],
    ];
    for (const [body, locs] of cases) {
      const res = await create(body);
      assert.equal(res.statusCode, 422, `${JSON.stringify(body)} → ${res.body}`);
      assert.deepEqual(detailLocs(res).sort(), locs, res.body);
    }
    assert.equal(await count(), before);
  });

  it("api_base_url is SSRF-checked like the other URLs (create and patch)", async () => {
    for (const url of [
      "http://api.example.com",
      "https://127.0.0.1/api",
      "https://10.0.0.8",
      "https://169.254.169.254/latest",
      "https://[::1]/",
      "https://user:pw@api.example.com",
      "https://localhost/x",
    ]) {
      const res = await create({
        provider_id: "ssrf",
        template: "github",
        client_id: "c",
        client_secret: "s",
        api_base_url: url,
      });
      assert.equal(res.statusCode, 422, `${url}: ${res.body}`);
      assert.deepEqual(detailLocs(res), ["body.api_base_url"]);
      const patch = await send(suite.ctx, "PATCH", "/v2/auth/providers/gh", { api_base_url: url });
      assert.equal(patch.statusCode, 422, `${url}: ${patch.body}`);
    }
    const read = (await send(suite.ctx, "GET", "/v2/auth/providers/gh")).json() as Provider;
    assert.equal(read.api_base_url, "https://api.github.com", "unchanged");
    const ok = await send(suite.ctx, "PATCH", "/v2/auth/providers/gh", {
      api_base_url: "https://ghe.example.com/api/v3",
    });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal((ok.json() as Provider).api_base_url, "https://ghe.example.com/api/v3");
  });

  it("a provider made without a template shows the interface's record, nothing added", async () => {
    const res = await create({
      provider_id: "plain",
      name: "Plain",
      client_id: "c",
      client_secret: "s",
      auth_url: "https://idp.example.com/authorize",
      token_url: "https://idp.example.com/token",
    });
    assert.equal(res.statusCode, 200, res.body);
    const keys = Object.keys(res.json() as object);
    for (const k of ["template", "template_params", "api_base_url"]) assert.ok(!keys.includes(k), k);
  });

  it("a template's own refresh endpoint (Figma's) holds only while the template's token URL does", async () => {
    const made = async (slug: string, extra: Record<string, unknown>) => {
      const res = await create({
        provider_id: slug,
        template: "figma",
        client_id: "c",
        client_secret: "s",
        ...extra,
      });
      assert.equal(res.statusCode, 200, res.body);
      const row = await findProviderRow(suite.ctx.db.orm, suite.ctx.orgId, slug);
      assert.ok(row);
      return providerClient(row, suite.ctx.keyring);
    };
    const figma = await made("figma", {});
    assert.equal(figma.tokenUrl, "https://api.figma.com/v1/oauth/token");
    assert.equal(figma.quirks?.refresh_url, "https://api.figma.com/v1/oauth/refresh");
    const own = await made("figma-own", { token_url: "https://figma-proxy.example.com/token" });
    assert.equal(own.quirks?.refresh_url, undefined, "an explicit token URL is refreshed at itself");
    assert.ok(own.quirks?.notes.length);
  });

  it("a viewer cannot create from a template", async () => {
    const res = await create(
      { provider_id: "v", template: "github", client_id: "c", client_secret: "s" },
      suite.ctx.keys.viewer,
    );
    assert.equal(res.statusCode, 403);
  });
});
