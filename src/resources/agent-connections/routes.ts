import type { FastifyRequest } from "fastify";
import { principalOf, workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { OwnerQuery } from "../oauth-tokens/schema.ts";
import { keyLabel, scopeOf as tokenScopeOf } from "../oauth-tokens/tenant.ts";
import {
  AgentConnection,
  AgentConnectionList,
  AgentParams,
  ConnectionParams,
  CreateAgentConnectionBody,
} from "./schema.ts";
import { type AgentScope, createConnection, deleteConnection, listConnections } from "./service.ts";

const tags = ["agent-connections"];

function scopeOf(request: FastifyRequest, agentId: string): AgentScope {
  return { ...workspaceOf(request), agentId };
}

/** Which stored token each agent of a workspace uses, per provider. */
export async function agentConnectionRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;

  app.get(
    "/v2/auth/agents/:agent_id/connections",
    {
      schema: {
        tags,
        summary: "List an agent's connections (oldest first)",
        params: AgentParams,
        response: { 200: AgentConnectionList },
      },
    },
    async (request) => ({ data: await listConnections(orm, scopeOf(request, request.params.agent_id)) }),
  );

  app.post(
    "/v2/auth/agents/:agent_id/connections",
    {
      schema: {
        tags,
        summary: "Link one of the caller's tokens to an agent",
        description:
          "The token must be one the caller's tenant sees (of the end user `user_id`, when given) and " +
          "the organization's or this workspace's, else 404. An agent has at most one connection per " +
          "provider (409). `authenticate` with this `agent_id` then hands out this token.",
        params: AgentParams,
        querystring: OwnerQuery,
        body: CreateAgentConnectionBody,
        response: {
          201: AgentConnection,
          409: errorResponse("The agent already has a connection for this provider."),
        },
      },
    },
    async (request, reply) => {
      const created = await createConnection(
        orm,
        scopeOf(request, request.params.agent_id),
        tokenScopeOf(principalOf(request), request.query.user_id),
        keyLabel(principalOf(request)),
        request.body.oauth_token_id,
      );
      return reply.code(201).send(created);
    },
  );

  app.delete(
    "/v2/auth/agents/:agent_id/connections/:connection_id",
    {
      schema: {
        tags,
        summary: "Unlink a token from an agent (the token stays)",
        params: ConnectionParams,
        response: { 204: { type: "null", description: "Deleted." } },
      },
    },
    async (request, reply) => {
      await deleteConnection(orm, scopeOf(request, request.params.agent_id), request.params.connection_id);
      return reply.code(204).send();
    },
  );
}
