import { type Static, type TSchema, Type } from "@sinclair/typebox";
import { DateTime, DisplayName, Nullable, OrNull, StringEnum, Uuid } from "../../core/shapes.ts";

/** A string enum that may also be null: one JSON-Schema `enum`, so a bad value gives one clear 422 item. */
const nullableEnum = <const T extends readonly string[]>(values: T, description?: string) =>
  OrNull(StringEnum(values, description === undefined ? {} : { description }));

export const AUTH_METHODS = ["client_secret_post", "client_secret_basic", "none"] as const;
export const PKCE_METHODS = ["S256", "plain"] as const;

/** Organization-unique slug used in paths. */
export const ProviderSlug = Type.String({
  pattern: "^[a-z0-9_-]{1,64}$",
  description: "Lowercase letters, digits, '-' and '_', 1 to 64 characters; unique in the organization.",
});
const OAuthUrl = Type.String({ minLength: 1, maxLength: 2048, description: "Absolute https URL." });
const ClientId = Type.String({ minLength: 1, maxLength: 512 });
const ClientSecret = Type.String({
  minLength: 1,
  maxLength: 4096,
  description: "Write only: stored encrypted, never returned.",
});
const ProviderType = Type.String({ pattern: "^[a-z0-9][a-z0-9_.-]{0,63}$" });

export const OAuthProvider = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    provider_id: Type.String(),
    name: Type.String(),
    client_id: Type.String(),
    auth_url: Type.String(),
    token_url: Type.String(),
    uses_pkce: Type.Boolean(),
    code_challenge_method: Nullable(Type.String()),
    created_at: DateTime,
    updated_at: DateTime,
    provider_type: Nullable(Type.String()),
    mcp_server_url: Nullable(Type.String()),
    token_endpoint_auth_method: Type.String(),
    is_dynamic_client: Type.Boolean(),
    has_client_secret: Type.Boolean(),
    template: Type.Optional(
      Nullable(Type.String({ description: "The catalog template it was made from (GET /v2/auth/catalog)." })),
    ),
    template_params: Type.Optional(Type.Record(Type.String(), Type.String())),
    api_base_url: Type.Optional(
      Nullable(Type.String({ description: "Where the proxy sends API calls (else the template's)." })),
    ),
  },
  { description: "An OAuth provider configuration; client_secret is never returned." },
);
export type OAuthProvider = Static<typeof OAuthProvider>;

const optional = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));

const TemplateId = Type.String({
  pattern: "^[a-z0-9][a-z0-9-]{0,31}$",
  description: "A catalog template (GET /v2/auth/catalog): fills every field not given explicitly.",
});
const TemplateParams = Type.Record(
  Type.String({ pattern: "^[a-z_]{1,32}$" }),
  Type.String({ minLength: 1, maxLength: 200 }),
  {
    maxProperties: 10,
    description: 'Values of the template\'s URL placeholders, e.g. {"tenant": "contoso.onmicrosoft.com"}.',
  },
);

export const CreateProviderBody = Type.Object({
  provider_id: ProviderSlug,
  name: Type.Optional({ ...DisplayName, description: "Required unless a template gives it." }),
  client_id: ClientId,
  client_secret: optional(ClientSecret),
  auth_url: Type.Optional({
    ...OAuthUrl,
    description: "Absolute https URL; required unless a template gives it.",
  }),
  token_url: Type.Optional({
    ...OAuthUrl,
    description: "Absolute https URL; required unless a template gives it.",
  }),
  template: Type.Optional(TemplateId),
  template_params: Type.Optional(TemplateParams),
  api_base_url: optional({ ...OAuthUrl, description: "The proxy's base URL; SSRF-checked like the others." }),
  uses_pkce: optional(Type.Boolean({ description: "Default true." })),
  code_challenge_method: Type.Optional(
    nullableEnum(PKCE_METHODS, "Default S256 when uses_pkce; plain only if the server allows it."),
  ),
  token_endpoint_auth_method: Type.Optional(nullableEnum(AUTH_METHODS, "Default client_secret_post.")),
  provider_type: optional(ProviderType),
  mcp_server_url: optional(OAuthUrl),
});
export type CreateProviderBody = Static<typeof CreateProviderBody>;

/** The interface's PATCH fields; omitted and null both leave a field as it is. */
export const PatchProviderBody = Type.Object({
  name: optional(DisplayName),
  client_id: optional(ClientId),
  client_secret: optional(ClientSecret),
  auth_url: optional(OAuthUrl),
  token_url: optional(OAuthUrl),
  uses_pkce: optional(Type.Boolean()),
  code_challenge_method: Type.Optional(nullableEnum(PKCE_METHODS)),
  api_base_url: optional({ ...OAuthUrl, description: "The proxy's base URL; SSRF-checked like the others." }),
});
export type PatchProviderBody = Static<typeof PatchProviderBody>;

export const ProviderParams = Type.Object({ provider_id: Type.String({ minLength: 1, maxLength: 200 }) });

export const McpDiscoverBody = Type.Object({
  provider_id: ProviderSlug,
  name: DisplayName,
  mcp_server_url: OAuthUrl,
});
export type McpDiscoverBody = Static<typeof McpDiscoverBody>;

export const DeletedProvider = Type.Composite([OAuthProvider, Type.Object({ message: Type.String() })], {
  description: "The deleted provider's record and a sentence saying so.",
});
