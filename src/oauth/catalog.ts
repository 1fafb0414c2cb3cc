import { type Static, Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import airtable from "./catalog/airtable.json" with { type: "json" };
import asana from "./catalog/asana.json" with { type: "json" };
import atlassian from "./catalog/atlassian.json" with { type: "json" };
import bitbucket from "./catalog/bitbucket.json" with { type: "json" };
import box from "./catalog/box.json" with { type: "json" };
import calendly from "./catalog/calendly.json" with { type: "json" };
import discord from "./catalog/discord.json" with { type: "json" };
import dropbox from "./catalog/dropbox.json" with { type: "json" };
import figma from "./catalog/figma.json" with { type: "json" };
import github from "./catalog/github.json" with { type: "json" };
import gitlab from "./catalog/gitlab.json" with { type: "json" };
import google from "./catalog/google.json" with { type: "json" };
import hubspot from "./catalog/hubspot.json" with { type: "json" };
import intercom from "./catalog/intercom.json" with { type: "json" };
import linear from "./catalog/linear.json" with { type: "json" };
import microsoft from "./catalog/microsoft.json" with { type: "json" };
import notion from "./catalog/notion.json" with { type: "json" };
import salesforce from "./catalog/salesforce.json" with { type: "json" };
import shopify from "./catalog/shopify.json" with { type: "json" };
import slack from "./catalog/slack.json" with { type: "json" };
import spotify from "./catalog/spotify.json" with { type: "json" };
import stripe from "./catalog/stripe.json" with { type: "json" };
import x from "./catalog/x.json" with { type: "json" };
import zendesk from "./catalog/zendesk.json" with { type: "json" };
import zoom from "./catalog/zoom.json" with { type: "json" };

/**
 * The provider catalog: one JSON document per provider in ./catalog/ (data, each with the page of
 * the provider's documentation it was taken from), checked against TemplateSchema when this module
 * loads. Imported rather than read from disk so the build carries the files along.
 */

/** An https URL, possibly with `{param}` placeholders in its host or path. */
const TemplateUrl = Type.String({ pattern: "^https://[^\\s#?]+$", maxLength: 2048 });
/** A documentation page: any https URL (query strings are part of some providers' addresses). */
const DocsUrl = Type.String({ pattern: "^https://[^\\s#]+$", maxLength: 2048 });
const Header = Type.String({ pattern: "^[A-Za-z0-9-]{1,64}$" });

export const TemplateQuirks = Type.Object(
  {
    auth_params: Type.Optional(
      Type.Record(Type.String({ pattern: "^[a-z_]{1,64}$" }), Type.String({ maxLength: 200 }), {
        description: "Added to the authorization URL (Google's access_type=offline, Atlassian's audience).",
      }),
    ),
    scope_param: Type.Optional(
      Type.Union([Type.Literal("scope"), Type.Literal("user_scope")], {
        description: "The authorization parameter scopes go in (Slack's user_scope for user tokens).",
      }),
    ),
    scope_separator: Type.Optional(Type.Union([Type.Literal(" "), Type.Literal(",")])),
    token_path: Type.Optional(
      Type.String({
        pattern: "^[a-z_]{1,64}$",
        description: "The member of the token response the token is nested in (Slack's authed_user).",
      }),
    ),
    error_in_ok_response: Type.Optional(
      Type.Boolean({ description: "The token endpoint reports errors with HTTP 200 (GitHub, Slack)." }),
    ),
    error_codes: Type.Optional(
      Type.Record(Type.String({ pattern: "^[a-z_]{1,64}$" }), Type.Literal("invalid_grant"), {
        description: "The provider's own error codes that mean what invalid_grant means.",
      }),
    ),
    api_headers: Type.Optional(Type.Record(Header, Type.String({ maxLength: 200 }))),
    token_header: Type.Optional({
      ...Header,
      description: "The header the proxy sends the token in, bare, instead of Authorization: Bearer.",
    }),
    scope_aliases: Type.Optional(
      Type.Record(
        Type.String({ minLength: 1, maxLength: 200 }),
        Type.String({ minLength: 1, maxLength: 200 }),
        {
          description:
            "Scopes the token response names otherwise (Google's email is its userinfo.email URL).",
        },
      ),
    ),
    unechoed_scopes: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200 }), {
        description: "Scopes granted without being named in the token response (Microsoft's offline_access).",
      }),
    ),
    refresh_url: Type.Optional({
      ...TemplateUrl,
      description:
        "Where refresh tokens are used, when not at the token URL (Figma's); only with the template's token URL.",
    }),
    notes: Type.Array(Type.String({ minLength: 1, maxLength: 400 })),
  },
  { additionalProperties: false },
);

export const TemplateParam = Type.Object(
  {
    description: Type.String({ minLength: 1 }),
    pattern: Type.String({
      pattern: "^\\^.*\\$$",
      description: "Anchored: a value can never add a host or path.",
    }),
  },
  { additionalProperties: false },
);

export const TemplateSchema = Type.Object(
  {
    id: Type.String({ pattern: "^[a-z0-9][a-z0-9-]{0,31}$" }),
    name: Type.String({ minLength: 1, maxLength: 100 }),
    docs_url: DocsUrl,
    auth_url: TemplateUrl,
    token_url: TemplateUrl,
    api_base_url: TemplateUrl,
    default_scopes: Type.Array(Type.String({ minLength: 1, maxLength: 200 })),
    uses_pkce: Type.Boolean(),
    token_endpoint_auth_method: Type.Union([
      Type.Literal("client_secret_post"),
      Type.Literal("client_secret_basic"),
      Type.Literal("none"),
    ]),
    provider_type: Type.Union([Type.String({ pattern: "^[a-z0-9][a-z0-9_.-]{0,63}$" }), Type.Null()]),
    params: Type.Record(Type.String({ pattern: "^[a-z_]{1,32}$" }), TemplateParam),
    quirks: TemplateQuirks,
  },
  { additionalProperties: false, description: "A provider template of the catalog." },
);
export type Template = Static<typeof TemplateSchema>;
export type TemplateQuirks = Static<typeof TemplateQuirks>;

const PLACEHOLDER = /\{([a-z_]+)\}/g;

/** The placeholders a URL uses. */
export const placeholdersOf = (url: string): string[] =>
  [...url.matchAll(PLACEHOLDER)].map((m) => m[1] ?? "");

/**
 * What is wrong with a catalog document: the schema's errors, then the rules the schema cannot
 * say (every placeholder declared and every declared one used, the id its file's name).
 */
export function templateProblems(doc: unknown, fileId?: string): string[] {
  if (!Value.Check(TemplateSchema, doc)) {
    return [...Value.Errors(TemplateSchema, doc)].map((e) => `${e.path || "/"}: ${e.message}`);
  }
  const problems: string[] = [];
  if (fileId !== undefined && doc.id !== fileId) problems.push(`/id: ${doc.id} is not the file's name`);
  const used = new Set([doc.auth_url, doc.token_url, doc.api_base_url].flatMap(placeholdersOf));
  for (const name of used) {
    if (!(name in doc.params)) problems.push(`placeholder {${name}} is not declared in params`);
  }
  for (const name of Object.keys(doc.params)) {
    if (!used.has(name)) problems.push(`/params/${name}: declared but used by no URL`);
  }
  if (placeholdersOf(doc.docs_url).length > 0) problems.push("/docs_url: has a placeholder");
  return problems;
}

/** The catalog's documents as loaded (unchecked); `CATALOG` is the checked list. */
export const CATALOG_DOCUMENTS: Record<string, unknown> = {
  airtable,
  asana,
  atlassian,
  bitbucket,
  box,
  calendly,
  discord,
  dropbox,
  figma,
  github,
  gitlab,
  google,
  hubspot,
  intercom,
  linear,
  microsoft,
  notion,
  salesforce,
  shopify,
  slack,
  spotify,
  stripe,
  x,
  zendesk,
  zoom,
};

function checkedCatalog(): Template[] {
  const list: Template[] = [];
  for (const [id, doc] of Object.entries(CATALOG_DOCUMENTS)) {
    const problems = templateProblems(doc, id);
    // A broken catalog file is a build fault: refuse to start rather than serve it.
    if (problems.length > 0) throw new Error(`OAuth catalog template ${id}: ${problems.join("; ")}`);
    list.push(doc as Template);
  }
  return list.sort((a, b) => a.id.localeCompare(b.id));
}

/** Every template, by id. */
export const CATALOG: readonly Template[] = checkedCatalog();
const byId = new Map(CATALOG.map((t) => [t.id, t]));

export function findTemplate(id: string): Template | undefined {
  return byId.get(id);
}

/** A template's URLs with its placeholders filled in. */
export interface TemplateUrls {
  authUrl: string;
  tokenUrl: string;
  apiBaseUrl: string;
}

export type ParamProblem = { param: string; msg: string };

/**
 * Fills a template's placeholders from `params`. Every declared parameter is required and must
 * match its pattern (so a value can never add a host, port or path); an undeclared one is refused.
 */
export function expandTemplate(
  t: Template,
  params: Record<string, string>,
): { urls: TemplateUrls } | { problems: ParamProblem[] } {
  const problems: ParamProblem[] = [];
  for (const [name, spec] of Object.entries(t.params)) {
    const value = params[name];
    if (value === undefined)
      problems.push({ param: name, msg: `Required by template ${t.id}: ${spec.description}` });
    else if (!new RegExp(spec.pattern).test(value)) {
      problems.push({ param: name, msg: `Does not match ${spec.pattern}.` });
    }
  }
  for (const name of Object.keys(params)) {
    if (!(name in t.params))
      problems.push({ param: name, msg: `Template ${t.id} has no parameter ${name}.` });
  }
  if (problems.length > 0) return { problems };
  const fill = (url: string) => url.replace(PLACEHOLDER, (_m, name: string) => params[name] ?? "");
  return {
    urls: { authUrl: fill(t.auth_url), tokenUrl: fill(t.token_url), apiBaseUrl: fill(t.api_base_url) },
  };
}
