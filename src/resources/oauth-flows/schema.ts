import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, Uuid } from "../../http/schemas.ts";
import { ProviderSlug } from "../oauth-providers/schema.ts";

/** RFC 6749 §3.3 scope-token. */
const ScopeToken = Type.String({ pattern: "^[\\x21\\x23-\\x5B\\x5D-\\x7E]{1,256}$" });
const UserId = Type.String({ minLength: 1, maxLength: 256 });

export const AuthenticateBody = Type.Object({
  user_id: UserId,
  provider: ProviderSlug,
  scopes: Type.Array(ScopeToken, { maxItems: 50 }),
  agent_id: Type.Optional(Nullable(UserId)),
});
export type AuthenticateBody = Static<typeof AuthenticateBody>;

const TokenFields = {
  token: Type.Optional(Type.String({ description: "The access token." })),
  token_id: Type.Optional(Uuid),
  token_type: Type.Optional(Type.String()),
  expires_at: Type.Optional(Nullable(DateTime)),
  scopes: Type.Optional(Type.Array(Type.String())),
};

export const AuthenticateResult = Type.Object({
  status: Type.Unsafe<"completed" | "pending">({ type: "string", enum: ["completed", "pending"] }),
  url: Type.Optional(Type.String({ description: "Where the user authorizes (pending)." })),
  auth_id: Type.Optional(Uuid),
  ...TokenFields,
});
export type AuthenticateResult = Static<typeof AuthenticateResult>;

export const WAIT_STATUSES = ["completed", "pending", "timeout", "not_found", "failed"] as const;
export type WaitStatus = (typeof WAIT_STATUSES)[number];

export const WaitResult = Type.Object({
  status: Type.Unsafe<WaitStatus>({ type: "string", enum: [...WAIT_STATUSES] }),
  auth_id: Uuid,
  reason: Type.Optional(Type.String({ description: "Why the flow failed." })),
  ...TokenFields,
});
export type WaitResult = Static<typeof WaitResult>;

export const WaitParams = Type.Object({ auth_id: Uuid });
export const WaitQuery = Type.Object({
  timeout: Type.Integer({ minimum: 0, maximum: 60, default: 30, description: "Seconds to wait." }),
});

export const OAuthToken = Type.Object({
  id: Uuid,
  provider_id: Type.String(),
  user_id: Type.String(),
  agent_id: Nullable(Type.String()),
  scopes: Type.Array(Type.String()),
  token_type: Type.String(),
  expires_at: Nullable(DateTime),
  has_refresh_token: Type.Boolean(),
  created_at: DateTime,
  updated_at: DateTime,
});
export type OAuthToken = Static<typeof OAuthToken>;

export const TokensQuery = Type.Object({
  user_id: UserId,
  provider: Type.Optional(ProviderSlug),
  agent_id: Type.Optional(UserId),
});
export type TokensQuery = Static<typeof TokensQuery>;
