import { type Static, Type } from "@sinclair/typebox";
import { DateTime, Nullable, Uuid } from "../../core/shapes.ts";
import { AgentId } from "../oauth-tokens/schema.ts";

export const AgentParams = Type.Object({ agent_id: AgentId });
export const ConnectionParams = Type.Object({ agent_id: AgentId, connection_id: Uuid });

export const CreateAgentConnectionBody = Type.Object({
  oauth_token_id: {
    ...Uuid,
    description: "One of the caller's tokens (GET /v2/auth/tokens): the organization's or this workspace's.",
  },
});
export type CreateAgentConnectionBody = Static<typeof CreateAgentConnectionBody>;

export const AgentConnection = Type.Object(
  {
    id: Uuid,
    agent_id: Type.String(),
    oauth_token_id: Uuid,
    provider_id: Type.String(),
    created_by: Type.String({ description: "Who linked the token: the API key, `apikey:<key id>`." }),
    provider_account_label: Nullable(Type.String()),
    scopes: Type.Array(Type.String()),
    expires_at: Nullable(DateTime),
    created_at: DateTime,
  },
  { description: "An agent of the workspace uses this token for the token's provider." },
);
export type AgentConnection = Static<typeof AgentConnection>;

export const AgentConnectionList = Type.Object({ data: Type.Array(AgentConnection) });
