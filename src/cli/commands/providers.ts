// OAuth providers (list|get|create|delete|catalog) and listeners (list).
import { SlipwayError, unwrap } from "../../sdk/client.ts";
import { actionError, type FlagSpec, UsageError } from "../args.ts";
import { type Context, need } from "../context.ts";

export const providerFlags: FlagSpec = {
  booleans: ["pkce"],
  values: [
    "provider-id",
    "name",
    "client-id",
    "client-secret",
    "auth-url",
    "token-url",
    "provider-type",
    "token-endpoint-auth-method",
    "template",
    "param",
    "api-base-url",
  ],
};

type Template = { id: string; name: string; auth_url: string; token_url: string; docs_url: string };

/** `--param tenant=contoso.onmicrosoft.com`, repeatable: a template's URL placeholders. */
function templateParams(ctx: Context): Record<string, string> | undefined {
  const given = ctx.args.values("param");
  if (given.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const pair of given) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new UsageError(`--param takes NAME=VALUE, not "${pair}".`, true);
    out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}

/** `providers create --template T`: the template fills what the flags leave out. */
async function createFromTemplate(ctx: Context): Promise<Record<string, unknown>> {
  const { args } = ctx;
  const missing = (["provider-id", "client-id"] as const).filter((f) => !args.value(f));
  if (missing.length)
    throw new UsageError(`providers create needs ${missing.map((m) => `--${m}`).join(", ")}.`, true);
  const optional: Record<string, string | undefined> = {
    name: args.value("name"),
    client_secret: args.value("client-secret"),
    auth_url: args.value("auth-url"),
    token_url: args.value("token-url"),
    provider_type: args.value("provider-type"),
    token_endpoint_auth_method: args.value("token-endpoint-auth-method"),
    api_base_url: args.value("api-base-url"),
  };
  const params = templateParams(ctx);
  const body = {
    provider_id: args.value("provider-id"),
    client_id: args.value("client-id"),
    template: args.value("template"),
    ...(params === undefined ? {} : { template_params: params }),
    ...(args.bool("pkce") ? { uses_pkce: true } : {}),
    ...Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined)),
  };
  // `raw`: the template fields may be newer than this SDK's generated types.
  return ctx.client().raw<Record<string, unknown>>("POST", "/v2/auth/providers", body);
}

const COLUMNS = ["provider_id", "name", "client_id", "auth_url", "uses_pkce", "id"];

export async function providers(ctx: Context): Promise<void> {
  const { args } = ctx;
  const [action] = args.positionals;
  const actions = ["list", "get", "create", "delete", "catalog"];
  if (!action || !actions.includes(action)) throw actionError(action, actions);
  const client = ctx.client();
  if (action === "list") {
    const list = await unwrap(client.api.GET("/v2/auth/providers", {}));
    ctx.out.result(list, { rows: list, columns: COLUMNS });
  } else if (action === "get") {
    const provider_id = need(ctx, 1, "provider ID");
    const p = await unwrap(
      client.api.GET("/v2/auth/providers/{provider_id}", { params: { path: { provider_id } } }),
    );
    ctx.out.result(p);
  } else if (action === "catalog") {
    const id = args.positionals[1];
    if (id !== undefined) {
      const t = await client.raw<Template>("GET", `/v2/auth/catalog/${encodeURIComponent(id)}`);
      ctx.out.result(t);
    } else {
      const list = await client.raw<Template[]>("GET", "/v2/auth/catalog");
      ctx.out.result(list, { rows: list, columns: ["id", "name", "auth_url", "docs_url"] });
    }
  } else if (action === "create" && args.value("template")) {
    const p = await createFromTemplate(ctx);
    ctx.out.result(p, { rows: [p], columns: COLUMNS });
  } else if (action === "create") {
    const required = ["provider-id", "name", "client-id", "auth-url", "token-url"] as const;
    const missing = required.filter((f) => !args.value(f));
    if (missing.length)
      throw new UsageError(`providers create needs ${missing.map((m) => `--${m}`).join(", ")}.`, true);
    const method = args.value("token-endpoint-auth-method");
    const p = await unwrap(
      client.api.POST("/v2/auth/providers", {
        body: {
          provider_id: args.value("provider-id") ?? "",
          name: args.value("name") ?? "",
          client_id: args.value("client-id") ?? "",
          auth_url: args.value("auth-url") ?? "",
          token_url: args.value("token-url") ?? "",
          uses_pkce: args.bool("pkce"),
          ...(args.bool("pkce") ? { code_challenge_method: "S256" } : {}),
          ...(args.value("client-secret") ? { client_secret: args.value("client-secret") } : {}),
          ...(args.value("provider-type") ? { provider_type: args.value("provider-type") } : {}),
          ...(method ? { token_endpoint_auth_method: method as "client_secret_post" } : {}),
        },
      }),
    );
    ctx.out.result(p, { rows: [p], columns: COLUMNS });
  } else if (action === "delete") {
    const provider_id = need(ctx, 1, "provider ID");
    const p = await unwrap(
      client.api.DELETE("/v2/auth/providers/{provider_id}", { params: { path: { provider_id } } }),
    );
    ctx.out.result(p, { rows: [p], columns: ["provider_id", "name"] });
  } else {
    throw actionError(action, actions);
  }
}

type Listener = {
  id: string;
  compute_type: string;
  compute_id: string;
  version: string | null;
  compute_config: unknown;
  created_at: string;
};

export async function listeners(ctx: Context): Promise<void> {
  const [action] = ctx.args.positionals;
  if (action !== "list") throw actionError(action, ["list"]);
  // `raw`: the listeners routes may be newer than this SDK's generated types.
  const page = await ctx
    .client()
    .raw<{ resources: Listener[]; offset: number }>("GET", "/v2/listeners?limit=100")
    .catch((err: unknown) => {
      if (err instanceof SlipwayError && err.status === 404 && !err.message.startsWith("Listener")) {
        throw new SlipwayError(404, "This server has no listeners (GET /v2/listeners is not there).");
      }
      throw err;
    });
  ctx.out.result(page, {
    rows: page.resources,
    columns: ["id", "compute_type", "compute_id", "version", "created_at"],
  });
}
