import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, StringEnum, Uuid } from "../../core/shapes.ts";
import { ProviderSlug } from "../oauth-providers/schema.ts";

/** An end user's id as the application names it: printable text, no control characters. */
export const UserId = Type.String({
  minLength: 1,
  maxLength: 256,
  pattern: "^[^\\x00-\\x1f\\x7f]+$",
  description:
    "The end user, as the application names them: a label of the tenant's tokens. Given, it narrows " +
    "to that user's tokens. Tokens obtained without one are the tenant's own, labelled " +
    "`organization:<id>` or `workspace:<id>`.",
});
/**
 * An agent's id (the anchor's are uuids; any short id of these characters is accepted). At most
 * 100 characters: the router's limit for a path parameter.
 */
export const AgentId = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: "^[A-Za-z0-9][A-Za-z0-9._:@-]*$",
  description: "Letters, digits and . _ : @ -, starting with a letter or digit; 1 to 100 characters.",
});
const AccountLabel = Type.String({
  maxLength: 200,
  pattern: "^[^\\x00-\\x1f\\x7f]*$",
  description: "Which account the token is for, as the user wants it shown; an empty string clears it.",
});

export const OAuthTokenSummary = Type.Object(
  {
    id: Uuid,
    provider_id: Type.String(),
    provider_account_label: Nullable(Type.String()),
    scopes: Type.Array(Type.String()),
    expires_at: Nullable(DateTime),
    is_default: Type.Boolean({
      description: "The token authenticate hands out for its tenant, user and agent.",
    }),
    created_at: DateTime,
    updated_at: DateTime,
    user_id: Type.String({ description: "The end user's label." }),
    workspace_id: Type.Union([Uuid, Type.Null()], {
      description:
        "The workspace whose token it is (obtained with a key bound to it); null: the organization's.",
    }),
    agent_id: Nullable(Type.String()),
    token_type: Type.String(),
    has_refresh_token: Type.Boolean(),
    status: Type.Optional(
      StringEnum(["ok", "expired", "broken"] as const, {
        description:
          "With include_status: broken when the provider refused a refresh for good (see broken_reason), " +
          "expired when it lapsed and cannot be refreshed, else ok.",
      }),
    ),
    broken_at: Type.Optional(Nullable(DateTime)),
    broken_reason: Type.Optional(Nullable(Type.String({ description: "The provider's reason." }))),
    last_refreshed_at: Type.Optional(Nullable(DateTime)),
    last_error: Type.Optional(Nullable(Type.String())),
    last_error_at: Type.Optional(Nullable(DateTime)),
  },
  { description: "A stored token of the tenant; never its value." },
);
export type OAuthTokenSummary = Static<typeof OAuthTokenSummary>;

const OwnerField = { user_id: Type.Optional(UserId) };

export const OwnerQuery = Type.Object(OwnerField);
export type OwnerQuery = Static<typeof OwnerQuery>;

export const TokensQuery = Type.Object({
  provider_id: Type.Optional(ProviderSlug),
  provider: Type.Optional({ ...ProviderSlug, description: "Older name of provider_id." }),
  agent_id: Type.Optional(AgentId),
  include_status: Type.Optional(
    Type.Boolean({ description: "Add status, broken_reason, last refresh and last error to each token." }),
  ),
  ...OwnerField,
});
export type TokensQuery = Static<typeof TokensQuery>;

export const ProviderTokensQuery = Type.Object({ provider_id: ProviderSlug, ...OwnerField });
export type ProviderTokensQuery = Static<typeof ProviderTokensQuery>;

export const TokenParams = Type.Object({ token_id: Uuid });

export const TokenMetadataBody = Type.Object({
  provider_account_label: Type.Optional(Nullable(AccountLabel)),
  is_default: Type.Optional(
    Nullable(Type.Boolean({ description: "true makes it the default (the previous one stops being)." })),
  ),
});
export type TokenMetadataBody = Static<typeof TokenMetadataBody>;

export const OAuthTokenStatus = Type.Object({ has_token: Type.Boolean() });

export const TokensDeleted = Type.Object({
  message: Type.String(),
  provider_id: Type.String(),
  deleted: Type.Integer({ description: "How many tokens were revoked and deleted." }),
});

export const SlackTokensDeleted = Type.Object({
  message: Type.String(),
  deleted: Type.Integer({ description: "How many tokens were revoked and deleted." }),
});
