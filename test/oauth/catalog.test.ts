import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  CATALOG,
  expandTemplate,
  findTemplate,
  placeholdersOf,
  type Template,
  templateProblems,
} from "../../src/oauth/catalog.ts";
import { grantedScopes, normalizeTokenBody } from "../../src/oauth/quirks.ts";

const DIR = join(import.meta.dirname, "../../src/oauth/catalog");
const files = readdirSync(DIR).filter((f) => f.endsWith(".json"));
const REQUIRED = [
  "github",
  "gitlab",
  "bitbucket",
  "google",
  "microsoft",
  "slack",
  "notion",
  "linear",
  "atlassian",
  "asana",
  "figma",
  "dropbox",
  "box",
  "zoom",
  "discord",
  "salesforce",
  "hubspot",
  "intercom",
  "zendesk",
  "airtable",
  "calendly",
  "spotify",
  "x",
  "shopify",
  "stripe",
];
/** The table: what the provider documents, held exactly. */
const FACTS: Record<string, [string, string]> = {
  github: ["https://github.com/login/oauth/authorize", "https://github.com/login/oauth/access_token"],
  google: ["https://accounts.google.com/o/oauth2/v2/auth", "https://oauth2.googleapis.com/token"],
  slack: ["https://slack.com/oauth/v2/authorize", "https://slack.com/api/oauth.v2.access"],
  notion: ["https://api.notion.com/v1/oauth/authorize", "https://api.notion.com/v1/oauth/token"],
  linear: ["https://linear.app/oauth/authorize", "https://api.linear.app/oauth/token"],
  microsoft: [
    "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/authorize",
    "https://login.microsoftonline.com/{tenant}/oauth2/v2.0/token",
  ],
};

const read = (file: string): unknown => JSON.parse(readFileSync(join(DIR, file), "utf8"));

describe("the provider catalog", () => {
  it("has at least 25 templates, every one the issue names, one file each, all loaded", () => {
    assert.ok(files.length >= 25, `${files.length} files`);
    for (const id of REQUIRED) assert.ok(files.includes(`${id}.json`), `${id}.json exists`);
    assert.deepEqual(
      CATALOG.map((t) => `${t.id}.json`).sort(),
      [...files].sort(),
      "every file is in the catalog",
    );
  });

  for (const file of files) {
    it(`${file}: passes the schema (https URLs, known auth method, placeholders declared)`, () => {
      const doc = read(file);
      assert.deepEqual(templateProblems(doc, file.replace(/\.json$/, "")), []);
      const t = doc as Template;
      for (const url of [t.auth_url, t.token_url, t.api_base_url, t.docs_url]) {
        assert.match(url, /^https:\/\//);
        // With every placeholder filled, each is a real absolute URL.
        const filled = url.replace(/\{[a-z_]+\}/g, "example");
        assert.equal(new URL(filled).protocol, "https:");
      }
      assert.ok(["client_secret_post", "client_secret_basic", "none"].includes(t.token_endpoint_auth_method));
      for (const [name, spec] of Object.entries(t.params)) {
        const used = [t.auth_url, t.token_url, t.api_base_url].some((u) => placeholdersOf(u).includes(name));
        assert.ok(used, `${name} is used`);
        // A parameter's pattern never lets a value add a host, a path or a port.
        for (const evil of ["a.evil.com/x", "a/b", "a:1", "a@b", "", "a#b", "a?b"]) {
          assert.equal(new RegExp(spec.pattern).test(evil), false, `${name} refuses ${JSON.stringify(evil)}`);
        }
      }
    });
  }

  it("holds the documented authorization and token URLs of the issue's table", () => {
    for (const [id, [auth, token]] of Object.entries(FACTS)) {
      const t = findTemplate(id);
      assert.ok(t, id);
      assert.equal(t.auth_url, auth, `${id} auth_url`);
      assert.equal(t.token_url, token, `${id} token_url`);
    }
  });

  it("records the documented quirks", () => {
    assert.equal(findTemplate("slack")?.quirks.scope_param, "user_scope");
    assert.equal(findTemplate("slack")?.quirks.token_path, "authed_user");
    assert.equal(findTemplate("notion")?.token_endpoint_auth_method, "client_secret_basic");
    assert.deepEqual(findTemplate("google")?.quirks.auth_params, {
      access_type: "offline",
      prompt: "consent",
    });
    assert.equal(findTemplate("atlassian")?.quirks.auth_params?.audience, "api.atlassian.com");
    assert.deepEqual(Object.keys(findTemplate("microsoft")?.params ?? {}), ["tenant"]);
    assert.match(findTemplate("github")?.quirks.notes.join(" ") ?? "", /expiring/);
  });

  it("refuses documents that break the rules", () => {
    const good = read("microsoft.json") as Template;
    const cases: [unknown, RegExp][] = [
      [{ ...good, auth_url: "http://login.microsoftonline.com/{tenant}/x" }, /auth_url/],
      [{ ...good, token_endpoint_auth_method: "private_key_jwt" }, /token_endpoint_auth_method/],
      [{ ...good, params: {} }, /placeholder \{tenant\} is not declared/],
      [
        { ...good, params: { ...good.params, region: { description: "r", pattern: "^a$" } } },
        /region: declared but used/,
      ],
      [{ ...good, extra: true }, /extra|additional/i],
      [{ ...good, params: { tenant: { description: "t", pattern: "[a-z]+" } } }, /pattern/],
    ];
    for (const [doc, expected] of cases) assert.match(templateProblems(doc).join("\n"), expected);
    assert.match(templateProblems(good, "other").join("\n"), /not the file's name/);
  });

  it("fills placeholders from parameters, each required and checked", () => {
    const ms = findTemplate("microsoft");
    assert.ok(ms);
    const ok = expandTemplate(ms, { tenant: "contoso.onmicrosoft.com" });
    assert.ok("urls" in ok);
    assert.equal(
      ok.urls.authUrl,
      "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/authorize",
    );
    assert.equal(
      ok.urls.tokenUrl,
      "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token",
    );
    const missing = expandTemplate(ms, {});
    assert.ok("problems" in missing);
    assert.deepEqual(
      missing.problems.map((p) => p.param),
      ["tenant"],
    );
    const extra = expandTemplate(ms, { tenant: "common", region: "eu" });
    assert.ok("problems" in extra);
    const shop = findTemplate("shopify");
    assert.ok(shop);
    const evil = expandTemplate(shop, { shop: "evil.example/x" });
    assert.ok("problems" in evil);
  });
});

describe("token response quirks", () => {
  const slack = findTemplate("slack")?.quirks;
  const github = findTemplate("github")?.quirks;
  const shopify = findTemplate("shopify")?.quirks;
  assert.ok(slack && github && shopify);

  it("Slack: the user token nested under authed_user, scopes comma separated", () => {
    const out = normalizeTokenBody(
      200,
      {
        ok: true,
        app_id: "A1",
        authed_user: { id: "U1", scope: "users:read,chat:write", access_token: "xoxp-1", token_type: "user" },
        team: { id: "T1" },
      },
      slack,
    );
    assert.equal(out.status, 200);
    assert.deepEqual(out.body, {
      id: "U1",
      scope: "users:read chat:write",
      access_token: "xoxp-1",
      token_type: "bearer",
    });
  });

  it("Slack and GitHub: errors with HTTP 200 become 400 with the OAuth code", () => {
    const s = normalizeTokenBody(200, { ok: false, error: "invalid_refresh_token" }, slack);
    assert.equal(s.status, 400);
    assert.equal(s.body.error, "invalid_grant");
    assert.match(String(s.body.error_description), /invalid_refresh_token/);
    const g = normalizeTokenBody(
      200,
      { error: "bad_verification_code", error_description: "expired" },
      github,
    );
    assert.equal(g.status, 400);
    assert.equal(g.body.error, "invalid_grant");
    const other = normalizeTokenBody(200, { error: "incorrect_client_credentials" }, github);
    assert.equal(other.status, 400);
    assert.equal(other.body.error, "incorrect_client_credentials");
  });

  it("scopes a provider grants under another name (Google) or silently (Microsoft) count as granted", () => {
    const google = findTemplate("google")?.quirks;
    const microsoft = findTemplate("microsoft")?.quirks;
    assert.deepEqual(
      grantedScopes(
        ["openid", "email"],
        ["openid", "https://www.googleapis.com/auth/userinfo.email"],
        google,
      ),
      ["openid", "https://www.googleapis.com/auth/userinfo.email", "email"],
    );
    assert.deepEqual(
      grantedScopes(["openid", "email"], ["openid"], google),
      ["openid"],
      "not granted: not claimed",
    );
    assert.deepEqual(
      grantedScopes(["openid", "offline_access", "User.Read"], ["User.Read"], microsoft).sort(),
      ["User.Read", "offline_access", "openid"],
    );
    assert.deepEqual(grantedScopes(["a"], null, microsoft), ["a"], "none named: what was asked");
    assert.deepEqual(grantedScopes(["a", "b"], ["a"], null), ["a"], "no template: as granted");
  });

  it("a token response without token_type (Shopify) is a bearer token; id_token is dropped", () => {
    const out = normalizeTokenBody(
      200,
      { access_token: "shpat_1", scope: "read_products", id_token: "x.y.z" },
      shopify,
    );
    assert.deepEqual(out.body, { access_token: "shpat_1", scope: "read_products", token_type: "bearer" });
  });
});
