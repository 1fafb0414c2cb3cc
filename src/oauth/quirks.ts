import type { TemplateQuirks } from "./catalog.ts";
import type { SafeFetch } from "./safe-fetch.ts";

/**
 * Token endpoints that do not answer the way RFC 6749 says, made to: a catalog template's quirks
 * rewrite the response before oauth4webapi reads it. Only providers made from a template get this.
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The answer as a standard token (or error) response. */
export function normalizeTokenBody(
  status: number,
  body: Json,
  quirks: TemplateQuirks,
): { status: number; body: Json } {
  let out: Json = { ...body };
  let code = status;
  const hasToken = typeof out.access_token === "string";
  const nested = quirks.token_path === undefined ? undefined : out[quirks.token_path];
  const nestedToken = isObject(nested) && typeof nested.access_token === "string";
  // GitHub and Slack say "no" with HTTP 200 and an `error` (Slack: `ok: false`).
  if (
    quirks.error_in_ok_response === true &&
    code >= 200 &&
    code < 300 &&
    !hasToken &&
    !nestedToken &&
    (typeof out.error === "string" || out.ok === false)
  ) {
    code = 400;
    if (typeof out.error !== "string") out.error = "invalid_request";
  }
  if (typeof out.error === "string") {
    const mapped = quirks.error_codes?.[out.error];
    if (mapped !== undefined) {
      const said = typeof out.error_description === "string" ? `: ${out.error_description}` : "";
      out = { ...out, error: mapped, error_description: `${out.error}${said}` };
    }
    return { status: code, body: out };
  }
  if (code < 200 || code >= 300) return { status: code, body: out };
  // Slack's user token is nested under authed_user (the top level is the bot's, if any).
  if (isObject(nested) && nestedToken) {
    out = { ...nested };
  }
  // Some say "bot", "user" or nothing at all; the token is used as a bearer token either way.
  const type = typeof out.token_type === "string" ? out.token_type.toLowerCase() : "";
  if (type !== "bearer" && type !== "dpop") out.token_type = "bearer";
  // Not an OpenID sign-in: an ID token would only be checked against an issuer we never learn.
  delete out.id_token;
  if (typeof out.scope === "string" && quirks.scope_separator === ",") {
    out.scope = out.scope.split(",").filter(Boolean).join(" ");
  }
  return { status: code, body: out };
}

/** A fetch for a templated provider's token endpoint that hands oauth4webapi standard answers. */
export function quirkyFetch(fetch: SafeFetch, quirks: TemplateQuirks | null): SafeFetch {
  if (quirks === null) return fetch;
  return async (url, init) => {
    const res = await fetch(url, init);
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return new Response(text, { status: res.status, statusText: res.statusText, headers: res.headers });
    }
    if (!isObject(parsed)) return new Response(text, { status: res.status, headers: res.headers });
    const { status, body } = normalizeTokenBody(res.status, parsed, quirks);
    const headers = new Headers(res.headers);
    headers.delete("content-length");
    headers.set("content-type", "application/json");
    return new Response(JSON.stringify(body), { status, headers });
  };
}

/**
 * The scopes a token holds: what the token response granted, or, when it names none, what was
 * asked for. A template's provider may name a granted scope otherwise (`scope_aliases`) or not at
 * all (`unechoed_scopes`); those asked for are counted as granted, so the next request for the
 * same scopes finds the token instead of starting a flow.
 */
export function grantedScopes(
  requested: string[],
  granted: string[] | null,
  quirks: TemplateQuirks | null | undefined,
): string[] {
  if (granted === null) return requested;
  if (!quirks) return granted;
  const out = new Set(granted);
  for (const scope of requested) {
    if (quirks.unechoed_scopes?.includes(scope)) out.add(scope);
    const alias = quirks.scope_aliases?.[scope];
    if (alias !== undefined && out.has(alias)) out.add(scope);
  }
  return [...out];
}
