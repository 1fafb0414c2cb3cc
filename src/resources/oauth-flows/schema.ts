import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, StringEnum, Uuid } from "../../core/shapes.ts";
import { ProviderSlug } from "../oauth-providers/schema.ts";
import { AgentId, UserId } from "../oauth-tokens/schema.ts";

/** RFC 6749 §3.3 scope-token. */
const ScopeToken = Type.String({ pattern: "^[\\x21\\x23-\\x5B\\x5D-\\x7E]{1,256}$" });

export const AuthenticateBody = Type.Object({
  provider: ProviderSlug,
  scopes: Type.Array(ScopeToken, { maxItems: 50 }),
  user_id: Type.Optional(Nullable(UserId)),
  ls_user_id: Type.Optional(Nullable({ ...UserId, description: "Used as user_id when user_id is absent." })),
  agent_id: Type.Optional(
    Nullable({
      ...AgentId,
      description:
        "The agent acting. If the agent has a connection for this provider (in the request's " +
        "workspace), its token is used; otherwise tokens are kept per user and agent.",
    }),
  ),
  token_id: Type.Optional(Nullable({ ...Uuid, description: "Use this one of the user's tokens." })),
  force_new: Type.Optional(
    Type.Boolean({ default: false, description: "Start a new flow even when a usable token exists." }),
  ),
  is_default: Type.Optional(
    Type.Boolean({
      default: true,
      description: "Make the token a new flow produces the user's default for this provider.",
    }),
  ),
  use_agent_builder_public_oauth: Type.Optional(
    Type.Boolean({ default: false, description: "Accepted for compatibility; has no effect." }),
  ),
});
export type AuthenticateBody = Static<typeof AuthenticateBody>;

const TokenFields = {
  token: Type.Optional(Nullable(Type.String({ description: "The access token." }))),
  token_id: Type.Optional(Uuid),
  token_type: Type.Optional(Type.String()),
  expires_at: Type.Optional(Nullable(DateTime)),
  scopes: Type.Optional(Type.Array(Type.String())),
};

export const AUTH_STATUSES = ["completed", "pending", "connection_required", "token_expired"] as const;
export type AuthStatus = (typeof AUTH_STATUSES)[number];

export const AuthenticateResult = Type.Object({
  status: StringEnum(AUTH_STATUSES, {
    description:
      "completed: `token` is usable. pending: open `url`, then wait on `auth_id`. For an agent " +
      "connection that cannot serve: connection_required (its token lacks scopes) or " +
      "token_expired (its token expired and cannot be renewed); link a new token to the agent.",
  }),
  url: Type.Optional(Nullable(Type.String({ description: "Where the user authorizes (pending)." }))),
  auth_id: Type.Optional(Nullable(Uuid)),
  user_id: Type.Optional(Nullable(Type.String({ description: "The user whose token this is." }))),
  metadata: Type.Optional(
    Nullable(
      Type.Object(
        {
          agent_id: Type.Optional(Type.String()),
          connection_id: Type.Optional(Uuid),
          missing_scopes: Type.Optional(Type.Array(Type.String())),
        },
        { description: "Which agent connection answered, when one did." },
      ),
    ),
  ),
  ...TokenFields,
});
export type AuthenticateResult = Static<typeof AuthenticateResult>;

export const WAIT_STATUSES = ["completed", "pending", "timeout", "not_found", "failed"] as const;
export type WaitStatus = (typeof WAIT_STATUSES)[number];

export const WaitResult = Type.Object({
  status: StringEnum(WAIT_STATUSES),
  auth_id: Uuid,
  reason: Type.Optional(Type.String({ description: "Why the flow failed." })),
  ...TokenFields,
});
export type WaitResult = Static<typeof WaitResult>;

export const WaitParams = Type.Object({ auth_id: Uuid });
export const WaitQuery = Type.Object({
  timeout: Type.Integer({ minimum: 0, maximum: 60, default: 30, description: "Seconds to wait." }),
});

/** The second form of the callback: a page of the application posts what the browser brought back. */
export const FinalizeBody = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 4096 }),
  state: Type.String({ minLength: 1, maxLength: 512 }),
});
export type FinalizeBody = Static<typeof FinalizeBody>;

export const FinalizeResult = Type.Object({
  status: Type.Literal("completed"),
  auth_id: Uuid,
});

const QueryText = (max: number) => Type.Optional(Type.String({ maxLength: max }));

/** Where a code-host app's installation lands; `state` ties it to a flow when there is one. */
export const SetupQuery = Type.Object({
  code: QueryText(4096),
  state: QueryText(512),
  setup_action: QueryText(64),
  error: QueryText(256),
  error_description: QueryText(1024),
  installation_id: Type.Optional(Type.Integer({ minimum: 0 })),
});
export type SetupQuery = Static<typeof SetupQuery>;
