// Credentials and tenancy: login/logout (profiles), keys list|create|revoke, workspaces list|create.
import { createSlipway, unwrap } from "../../sdk/client.ts";
import { actionError, type FlagSpec, UsageError } from "../args.ts";
import { type Context, need } from "../context.ts";
import { configPath, readProfiles, writeProfiles } from "../profile.ts";

export const accountFlags: FlagSpec = { values: ["role", "description", "workspace-id"] };
export const loginFlags: FlagSpec = {};
export const logoutFlags: FlagSpec = {};

export async function login(ctx: Context): Promise<void> {
  const { args } = ctx;
  const url = args.value("url") ?? process.env.SLIPWAY_URL;
  if (!url) throw new UsageError("Give --url URL (or set SLIPWAY_URL).", true);
  let apiKey = args.value("api-key") ?? process.env.SLIPWAY_API_KEY;
  if (!apiKey) {
    if (!ctx.canPrompt)
      throw new UsageError("Give --api-key KEY (or SLIPWAY_API_KEY): there is no terminal to ask on.");
    apiKey = await ctx.promptHidden("API key (not shown as you type): ");
    if (!apiKey) throw new UsageError("No API key given.");
  }
  const workspace = args.value("workspace");
  // The key is checked before it is stored: a typo fails here (exit 3), not at the next command.
  const client = createSlipway({ baseUrl: url, apiKey, workspace });
  const workspaces = await unwrap(client.api.GET("/v1/workspaces", {}));
  const name = args.value("profile") ?? "default";
  const file = readProfiles();
  file.profiles[name] = {
    url: url.replace(/\/+$/, ""),
    api_key: apiKey,
    ...(workspace ? { workspace } : {}),
  };
  file.current = name;
  writeProfiles(file);
  ctx.out.line(
    `Logged in to ${url} as profile ${name} (${workspaces.length} workspace(s) visible); saved in ${configPath()}.`,
  );
  ctx.out.event({ event: "login", profile: name, url, path: configPath() });
}

export async function logout(ctx: Context): Promise<void> {
  const file = readProfiles();
  const name = ctx.args.value("profile") ?? file.current ?? "default";
  if (!file.profiles[name]) throw new UsageError(`No profile named ${name}.`);
  delete file.profiles[name];
  if (file.current === name) file.current = Object.keys(file.profiles)[0];
  writeProfiles(file);
  ctx.out.line(`Removed profile ${name}.`);
  ctx.out.event({ event: "logout", profile: name });
}

const ROLES = ["admin", "member", "viewer"] as const;

export async function keys(ctx: Context): Promise<void> {
  const [action] = ctx.args.positionals;
  // Checked before the credentials are: a typo is a usage error wherever it is typed.
  if (!action || !["list", "create", "revoke"].includes(action))
    throw actionError(action, ["list", "create", "revoke", "rotate"]);
  const client = ctx.client();
  if (action === "list") {
    const list = await unwrap(client.api.GET("/v1/api-keys", {}));
    ctx.out.result(list, {
      rows: list,
      columns: ["id", "prefix", "role", "description", "workspace_id", "revoked_at"],
    });
  } else if (action === "create") {
    const role = ctx.args.value("role") ?? "member";
    const valid = ROLES.find((r) => r === role);
    if (!valid) throw new UsageError(`--role must be one of ${ROLES.join(", ")}.`);
    const workspaceId = ctx.args.value("workspace-id");
    const created = await unwrap(
      client.api.POST("/v1/api-keys", {
        body: {
          role: valid,
          description: ctx.args.value("description") ?? "",
          ...(workspaceId ? { workspace_id: workspaceId } : {}),
        },
      }),
    );
    ctx.out.result(created, { rows: [created], columns: ["id", "role", "key"] });
    ctx.out.line("The key is shown this once; keep it safe.");
  } else if (action === "revoke") {
    const id = need(ctx, 1, "key ID");
    const revoked = await unwrap(client.api.DELETE("/v1/api-keys/{id}", { params: { path: { id } } }));
    ctx.out.result(revoked, { rows: [revoked], columns: ["id", "prefix", "revoked_at"] });
  } else {
    throw actionError(action, ["list", "create", "revoke", "rotate"]);
  }
}

export async function workspaces(ctx: Context): Promise<void> {
  const [action] = ctx.args.positionals;
  if (!action || !["list", "create"].includes(action)) throw actionError(action, ["list", "create"]);
  const client = ctx.client();
  if (action === "list") {
    const list = await unwrap(client.api.GET("/v1/workspaces", {}));
    ctx.out.result(list, { rows: list, columns: ["id", "name", "created_at"] });
  } else if (action === "create") {
    const name = need(ctx, 1, "workspace NAME");
    const created = await unwrap(client.api.POST("/v1/workspaces", { body: { name } }));
    ctx.out.result(created, { rows: [created], columns: ["id", "name"] });
  } else {
    throw actionError(action, ["list", "create"]);
  }
}
