// Why over 300 lines: create, patch and delete of providers with the catalog's template filling and
// the URL checks they share; the template filling is the part to move out when this grows.
import { randomUUID } from "node:crypto";
import type { Config } from "../../config.ts";
import { inAuditedTransaction } from "../../core/audit/scope.ts";
import { conflict, FieldsInvalid, notFound } from "../../core/errors.ts";
import { iso } from "../../core/shapes.ts";
import type { Keyring } from "../../crypto/envelope.ts";
import { encryptionContext } from "../../crypto/envelope.ts";
import type { Executor } from "../../db/client.ts";
import { isUniqueViolation } from "../../db/errors.ts";
import type { CodeChallengeMethod, TokenEndpointAuthMethod } from "../../db/schema/oauth.ts";
import { expandTemplate, findTemplate, type TemplateQuirks } from "../../oauth/catalog.ts";
import type { ProviderClient } from "../../oauth/client.ts";
import { resolvedUrlProblems, settingsProblems } from "./rules.ts";
import type { CreateProviderBody, OAuthProvider, PatchProviderBody } from "./schema.ts";
import {
  deleteProviderRow,
  insertProviderRow,
  type ProviderRow,
  providerBySlug,
  providerRows,
  updateProviderRow,
} from "./store.ts";
import { resolveCreate } from "./template.ts";

export type { ProviderRow };

/** What provider services need besides the database. */
export interface ProviderEnv {
  config: Config;
  keyring: Keyring;
}

export function toProvider(row: ProviderRow): OAuthProvider {
  return {
    id: row.id,
    organization_id: row.organizationId,
    provider_id: row.providerId,
    name: row.name,
    client_id: row.clientId,
    auth_url: row.authUrl,
    token_url: row.tokenUrl,
    uses_pkce: row.usesPkce,
    code_challenge_method: row.codeChallengeMethod,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    provider_type: row.providerType,
    mcp_server_url: row.mcpServerUrl,
    token_endpoint_auth_method: row.tokenEndpointAuthMethod,
    is_dynamic_client: row.isDynamicClient,
    has_client_secret: row.clientSecretEnc !== null,
    // Only on providers that use them: the anchor's record is unchanged for every other one.
    ...(row.template === null ? {} : { template: row.template, template_params: row.templateParams }),
    ...(row.apiBaseUrl === null ? {} : { api_base_url: row.apiBaseUrl }),
  };
}

const secretContext = (id: string) => encryptionContext("oauth_providers", "client_secret_enc", id);

/** The stored client secret in the clear, for the token endpoint only. */
export function clientSecretOf(row: ProviderRow, keyring: Keyring): string | null {
  return row.clientSecretEnc === null ? null : keyring.decrypt(row.clientSecretEnc, secretContext(row.id));
}

/**
 * The provider's template quirks, if it has a template. A template's own refresh endpoint only
 * holds while the provider uses the template's token URL (one given explicitly has its own server).
 */
function quirksOf(row: ProviderRow): TemplateQuirks | null {
  const t = row.template === null ? undefined : findTemplate(row.template);
  if (!t) return null;
  if (t.quirks.refresh_url === undefined) return t.quirks;
  const expanded = expandTemplate(t, row.templateParams);
  if ("urls" in expanded && expanded.urls.tokenUrl === row.tokenUrl) return t.quirks;
  const { refresh_url: _dropped, ...rest } = t.quirks;
  return rest;
}

/** The OAuth client of a provider, its secret opened: what a flow, a refresh or a revocation calls with. */
export function providerClient(row: ProviderRow, keyring: Keyring): ProviderClient {
  return {
    clientId: row.clientId,
    clientSecret: clientSecretOf(row, keyring),
    authUrl: row.authUrl,
    tokenUrl: row.tokenUrl,
    tokenEndpointAuthMethod: row.tokenEndpointAuthMethod,
    usesPkce: row.usesPkce,
    codeChallengeMethod: row.codeChallengeMethod,
    issuer: row.issuer,
    mcpServerUrl: row.mcpServerUrl,
    quirks: quirksOf(row),
  };
}

const duplicate = (slug: string) =>
  conflict(`An OAuth provider with provider_id "${slug}" already exists in this organization.`);

export async function listProviders(exec: Executor, organizationId: string): Promise<OAuthProvider[]> {
  const list = await providerRows(exec, organizationId);
  return list.map(toProvider);
}

/** The provider row by slug; another organization's provider is not found. */
export function findProviderRow(
  exec: Executor,
  organizationId: string,
  slug: string,
): Promise<ProviderRow | undefined> {
  return providerBySlug(exec, organizationId, slug);
}

export async function getProviderRow(
  exec: Executor,
  organizationId: string,
  slug: string,
): Promise<ProviderRow> {
  const row = await findProviderRow(exec, organizationId, slug);
  if (!row) throw notFound(`OAuth provider "${slug}" not found.`);
  return row;
}

export async function providerExists(exec: Executor, organizationId: string, slug: string): Promise<boolean> {
  return (await findProviderRow(exec, organizationId, slug)) !== undefined;
}

/** Everything a new provider row holds; the secret in the clear (encrypted here). */
export interface NewProvider {
  providerId: string;
  name: string;
  clientId: string;
  clientSecret: string | null;
  authUrl: string;
  tokenUrl: string;
  usesPkce: boolean;
  codeChallengeMethod: CodeChallengeMethod | null;
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  providerType: string | null;
  mcpServerUrl: string | null;
  isDynamicClient: boolean;
  issuer: string | null;
  template?: string | null;
  templateParams?: Record<string, string>;
  apiBaseUrl?: string | null;
}

export async function insertProvider(
  exec: Executor,
  keyring: Keyring,
  organizationId: string,
  p: NewProvider,
): Promise<OAuthProvider> {
  const id = randomUUID();
  try {
    const row = await insertProviderRow(exec, {
      id,
      organizationId,
      providerId: p.providerId,
      name: p.name,
      clientId: p.clientId,
      clientSecretEnc: p.clientSecret === null ? null : keyring.encrypt(p.clientSecret, secretContext(id)),
      authUrl: p.authUrl,
      tokenUrl: p.tokenUrl,
      usesPkce: p.usesPkce,
      codeChallengeMethod: p.codeChallengeMethod,
      tokenEndpointAuthMethod: p.tokenEndpointAuthMethod,
      providerType: p.providerType,
      mcpServerUrl: p.mcpServerUrl,
      isDynamicClient: p.isDynamicClient,
      issuer: p.issuer,
      template: p.template ?? null,
      templateParams: p.templateParams ?? {},
      apiBaseUrl: p.apiBaseUrl ?? null,
    });
    return toProvider(row);
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicate(p.providerId);
    throw err;
  }
}

export async function createProvider(
  exec: Executor,
  env: ProviderEnv,
  organizationId: string,
  body: CreateProviderBody,
): Promise<OAuthProvider> {
  const r = resolveCreate(body);
  const usesPkce = r.usesPkce;
  const method = r.tokenEndpointAuthMethod;
  const secret = body.client_secret ?? null;
  const pkceMethod = body.code_challenge_method ?? (usesPkce ? "S256" : null);
  const problems = settingsProblems(
    {
      authUrl: r.authUrl,
      tokenUrl: r.tokenUrl,
      mcpServerUrl: body.mcp_server_url ?? null,
      apiBaseUrl: r.apiBaseUrl,
      tokenEndpointAuthMethod: method,
      hasClientSecret: secret !== null,
      secretGiven: secret !== null,
      usesPkce,
      codeChallengeMethod: pkceMethod,
    },
    env.config,
  );
  problems.push(
    ...(await resolvedUrlProblems(
      {
        auth_url: r.authUrl,
        token_url: r.tokenUrl,
        mcp_server_url: body.mcp_server_url,
        api_base_url: r.apiBaseUrl,
      },
      env.config,
    )),
  );
  if (problems.length > 0) throw new FieldsInvalid(problems);
  return inAuditedTransaction(
    exec,
    (tx) =>
      insertProvider(tx, env.keyring, organizationId, {
        providerId: body.provider_id,
        name: r.name,
        clientId: body.client_id,
        clientSecret: secret,
        authUrl: r.authUrl,
        tokenUrl: r.tokenUrl,
        usesPkce,
        codeChallengeMethod: pkceMethod,
        tokenEndpointAuthMethod: method,
        providerType: r.providerType,
        mcpServerUrl: body.mcp_server_url ?? null,
        isDynamicClient: false,
        issuer: null,
        template: r.template,
        templateParams: r.templateParams,
        apiBaseUrl: r.apiBaseUrl,
      }),
    (pr) => pr.id,
  );
}

export async function getProvider(
  exec: Executor,
  organizationId: string,
  slug: string,
): Promise<OAuthProvider> {
  return toProvider(await getProviderRow(exec, organizationId, slug));
}

/** Applies the non-null fields, checks the resulting record with the create rules, and saves it. */
export async function patchProvider(
  exec: Executor,
  env: ProviderEnv,
  organizationId: string,
  slug: string,
  body: PatchProviderBody,
): Promise<OAuthProvider> {
  const resolved = await resolvedUrlProblems(
    { auth_url: body.auth_url, token_url: body.token_url, api_base_url: body.api_base_url },
    env.config,
  );
  return inAuditedTransaction(exec, async (tx) => {
    const row = await providerBySlug(tx, organizationId, slug, true);
    if (!row) throw notFound(`OAuth provider "${slug}" not found.`);
    const usesPkce = body.uses_pkce ?? row.usesPkce;
    let pkceMethod: CodeChallengeMethod | null;
    if (body.code_challenge_method != null) pkceMethod = body.code_challenge_method;
    else if (!usesPkce) pkceMethod = null;
    else pkceMethod = row.codeChallengeMethod ?? "S256";
    const secret = body.client_secret ?? null;
    const authUrl = body.auth_url ?? row.authUrl;
    const tokenUrl = body.token_url ?? row.tokenUrl;
    const problems = settingsProblems(
      {
        authUrl,
        tokenUrl,
        mcpServerUrl: row.mcpServerUrl,
        apiBaseUrl: body.api_base_url ?? null,
        tokenEndpointAuthMethod: row.tokenEndpointAuthMethod,
        hasClientSecret: secret !== null || row.clientSecretEnc !== null,
        secretGiven: secret !== null,
        usesPkce,
        codeChallengeMethod: pkceMethod,
      },
      env.config,
    );
    problems.push(...resolved);
    if (problems.length > 0) throw new FieldsInvalid(problems);
    const updated = await updateProviderRow(tx, row.id, {
      name: body.name ?? row.name,
      clientId: body.client_id ?? row.clientId,
      clientSecretEnc:
        secret === null ? row.clientSecretEnc : env.keyring.encrypt(secret, secretContext(row.id)),
      authUrl,
      tokenUrl,
      usesPkce,
      codeChallengeMethod: pkceMethod,
      apiBaseUrl: body.api_base_url ?? row.apiBaseUrl,
    });
    return toProvider(updated ?? row);
  });
}

/** Deletes the provider with its tokens and flows; returns the record as it was. */
export async function deleteProvider(
  exec: Executor,
  organizationId: string,
  slug: string,
): Promise<OAuthProvider> {
  const row = await inAuditedTransaction(exec, (tx) => deleteProviderRow(tx, organizationId, slug));
  if (!row) throw notFound(`OAuth provider "${slug}" not found.`);
  return toProvider(row);
}
