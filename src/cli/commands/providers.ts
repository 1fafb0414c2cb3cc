// OAuth providers (list|get|create|delete) and listeners (list).
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
  ],
};

const COLUMNS = ["provider_id", "name", "client_id", "auth_url", "uses_pkce", "id"];

export async function providers(ctx: Context): Promise<void> {
  const { args } = ctx;
  const [action] = args.positionals;
  const actions = ["list", "get", "create", "delete"];
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
    throw actionError(action, ["list", "get", "create", "delete"]);
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
