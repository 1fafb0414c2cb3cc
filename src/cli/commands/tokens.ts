// Stored OAuth tokens of the caller's tenant (ls|revoke): which users hold one, and their state.
import { actionError, type FlagSpec } from "../args.ts";
import { type Context, need } from "../context.ts";

export const tokenFlags: FlagSpec = { values: ["provider", "user"] };

type Token = {
  id: string;
  provider_id: string;
  user_id: string;
  scopes: string[];
  expires_at: string | null;
  status?: string;
  broken_reason?: string | null;
  last_refreshed_at?: string | null;
  last_error?: string | null;
};

export async function tokens(ctx: Context): Promise<void> {
  const { args } = ctx;
  const [action] = args.positionals;
  const actions = ["ls", "revoke"];
  if (!action || !actions.includes(action)) throw actionError(action, actions);
  const client = ctx.client();
  const provider = args.value("provider");
  const user = args.value("user");
  if (action === "ls") {
    const q = new URLSearchParams({ include_status: "true" });
    if (provider) q.set("provider_id", provider);
    if (user) q.set("user_id", user);
    // `raw`: the status fields may be newer than this SDK's generated types.
    const list = await client.raw<Token[]>("GET", `/v2/auth/tokens?${q}`);
    const rows = list.map((t) => ({
      ...t,
      scopes: t.scopes.join(" "),
      why: t.broken_reason ?? t.last_error ?? "",
    }));
    ctx.out.result(list, {
      rows,
      columns: ["provider_id", "user_id", "status", "scopes", "expires_at", "last_refreshed_at", "why", "id"],
    });
  } else {
    const id = need(ctx, 1, "token ID");
    const q = user ? `?${new URLSearchParams({ user_id: user })}` : "";
    await client.raw<null>("DELETE", `/v2/auth/tokens/${encodeURIComponent(id)}${q}`);
    ctx.out.result({ id, revoked: true }, { rows: [{ id, revoked: "yes" }], columns: ["id", "revoked"] });
  }
}
