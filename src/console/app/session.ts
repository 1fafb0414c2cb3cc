// The signed-in key lives in this tab's session storage only; signing out removes it.
import { createSlipway, type Slipway, unwrap } from "../../sdk/client.ts";

const KEY = "slipway.apiKey";
const WORKSPACE = "slipway.workspace";

/** The API's URL: everything before `/console` in this page's path (so SLIPWAY_BASE_PATH works). */
export function apiBase(): string {
  const path = location.pathname;
  const at = path.lastIndexOf("/console");
  return location.origin + (at >= 0 ? path.slice(0, at) : "");
}

/**
 * The server's public URL and base path (what OAuth callback URLs are made of), from the page's
 * `slipway-public-base` meta tag; where a page has none, this page's own origin and base path.
 */
export function publicBase(): string {
  const meta = document.querySelector<HTMLMetaElement>('meta[name="slipway-public-base"]');
  return meta?.content || apiBase();
}

export type Role = "admin" | "member" | "viewer";

export interface Session {
  client: Slipway;
  role: Role;
  /** The workspace every request names (`X-Tenant-Id`); undefined: the key's own default. */
  workspace?: string;
}

export const storedKey = (): string | null => sessionStorage.getItem(KEY);
export const signOut = (): void => {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(WORKSPACE);
};

/** The session acting in `workspace` (undefined: the key's default), remembered for this tab. */
export function inWorkspace(session: Session, apiKey: string, workspace: string | undefined): Session {
  if (workspace) sessionStorage.setItem(WORKSPACE, workspace);
  else sessionStorage.removeItem(WORKSPACE);
  return { ...session, workspace, client: createSlipway({ baseUrl: apiBase(), apiKey, workspace }) };
}

/**
 * Checks the key and finds its role without changing anything: the key list answers admins only,
 * and an empty tag-key create is refused by role (403) before its body is checked (422).
 */
export async function signIn(apiKey: string): Promise<Session> {
  const workspace = sessionStorage.getItem(WORKSPACE) ?? undefined;
  const client = createSlipway({ baseUrl: apiBase(), apiKey, workspace });
  await unwrap(client.api.GET("/v1/workspaces", {}));
  sessionStorage.setItem(KEY, apiKey);
  const keys = await client.api.GET("/v1/api-keys", {});
  if (keys.response.ok) return { client, role: "admin", workspace };
  const probe = await client.fetch(`${apiBase()}/v2/tags/keys`, {
    method: "POST",
    headers: { ...client.headers, "content-type": "application/json" },
    body: "{}",
  });
  return { client, role: probe.status === 403 ? "viewer" : "member", workspace };
}
