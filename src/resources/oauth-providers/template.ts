import { type FieldProblem, FieldsInvalid } from "../../core/errors.ts";
import type { TokenEndpointAuthMethod } from "../../db/schema/oauth.ts";
import { expandTemplate, findTemplate, type Template } from "../../oauth/catalog.ts";
import type { CreateProviderBody } from "./schema.ts";

/** A create body with a template's values filled in where the body gave none (given fields win). */
export interface ResolvedCreate {
  name: string;
  authUrl: string;
  tokenUrl: string;
  apiBaseUrl: string | null;
  usesPkce: boolean;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  providerType: string | null;
  template: string | null;
  templateParams: Record<string, string>;
}

const problem = (loc: (string | number)[], msg: string, type = "value_error"): FieldProblem => ({
  loc: ["body", ...loc],
  msg,
  type,
});

/**
 * Applies `template` (unknown: 422) with `template_params` (each placeholder required and matching
 * its pattern: 422 naming it). Without a template, name, auth_url and token_url are required.
 */
export function resolveCreate(body: CreateProviderBody): ResolvedCreate {
  const problems: FieldProblem[] = [];
  let t: Template | undefined;
  let urls: { authUrl: string; tokenUrl: string; apiBaseUrl: string } | undefined;
  if (body.template !== undefined) {
    t = findTemplate(body.template);
    if (!t)
      problems.push(
        problem(["template"], `No template "${body.template}" in the catalog (GET /v2/auth/catalog).`),
      );
    else {
      const expanded = expandTemplate(t, body.template_params ?? {});
      if ("problems" in expanded) {
        for (const p of expanded.problems)
          problems.push(problem(["template_params", p.param], p.msg, "missing"));
      } else urls = expanded.urls;
    }
  } else if (body.template_params !== undefined) {
    problems.push(problem(["template_params"], "Only applies with a template."));
  }
  const need = <T>(value: T | undefined, field: string): T | undefined => {
    if (value === undefined && body.template === undefined)
      problems.push(problem([field], "Field required.", "missing"));
    return value;
  };
  const name = need(body.name, "name") ?? t?.name;
  const authUrl = need(body.auth_url, "auth_url") ?? urls?.authUrl;
  const tokenUrl = need(body.token_url, "token_url") ?? urls?.tokenUrl;
  if (problems.length > 0 || name === undefined || authUrl === undefined || tokenUrl === undefined) {
    throw new FieldsInvalid(problems);
  }
  return {
    name,
    authUrl,
    tokenUrl,
    apiBaseUrl: body.api_base_url ?? urls?.apiBaseUrl ?? null,
    usesPkce: body.uses_pkce ?? t?.uses_pkce ?? true,
    tokenEndpointAuthMethod:
      body.token_endpoint_auth_method ?? t?.token_endpoint_auth_method ?? "client_secret_post",
    providerType: body.provider_type ?? t?.provider_type ?? null,
    template: t?.id ?? null,
    templateParams: body.template_params ?? {},
  };
}
