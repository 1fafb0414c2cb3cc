import { Type } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import { forbidden } from "../../core/errors.ts";
import { principalOf, workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { flowEnvOf } from "./env.ts";
import type { Removal } from "./revoke.ts";
import {
  OAuthTokenStatus,
  OAuthTokenSummary,
  OwnerQuery,
  ProviderTokensQuery,
  SlackTokensDeleted,
  TokenMetadataBody,
  TokenParams,
  TokensDeleted,
  TokensQuery,
} from "./schema.ts";
import {
  deleteProviderTokens,
  deleteSlackTokens,
  deleteToken,
  hasSlackToken,
  hasToken,
  listTokens,
  patchMetadata,
} from "./service.ts";
import { tenantOfPrincipal, scopeOf as tokenScopeOf } from "./tenant.ts";

const tags = ["oauth-tokens"];
const TENANT_NOTE =
  " The caller is the tenant its API key acts for: a workspace-bound key's workspace, else the " +
  "organization (which sees its workspaces' tokens too); `user_id` narrows to one end user.";
const KEPT = errorResponse("A provider could not be reached or refused the revocation: its token was kept.");
const REVOKE_NOTE =
  " Each token is revoked at its provider first (RFC 7009, endpoint from the provider's metadata); " +
  "a provider without a revocation endpoint only has the token forgotten. When a provider cannot be " +
  "reached or refuses, its token is kept and the answer is 502.";

function logRemoval(request: FastifyRequest, removal: Removal): void {
  if (removal.notRevocable > 0) {
    request.log.info(
      { not_revocable: removal.notRevocable },
      "oauth tokens deleted without revocation: the provider publishes no revocation endpoint",
    );
  }
}

/** The request's tokens, narrowed to one end user when `userId` is given. */
function scopeOf(request: FastifyRequest, userId?: string) {
  return tokenScopeOf(principalOf(request), userId);
}

/** A tenant's stored tokens: listing, labels and the default, revocation, and workspace Slack tokens. */
export async function oauthTokenRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;
  const env = flowEnvOf(app.deps);

  app.get(
    "/v2/auth/tokens",
    {
      schema: {
        tags,
        summary: "List the caller's stored tokens (never their values)",
        description: `Oldest first.${TENANT_NOTE}`,
        querystring: TokensQuery,
        response: { 200: Type.Array(OAuthTokenSummary) },
      },
    },
    async (request) => listTokens(orm, scopeOf(request, request.query.user_id), request.query),
  );

  app.get(
    "/v2/auth/tokens/exists",
    {
      schema: {
        tags,
        summary: "Whether the caller holds a token for a provider",
        description: `False for an unknown provider.${TENANT_NOTE}`,
        querystring: ProviderTokensQuery,
        response: { 200: OAuthTokenStatus },
      },
    },
    async (request) => ({
      has_token: await hasToken(orm, scopeOf(request, request.query.user_id), request.query.provider_id),
    }),
  );

  app.delete(
    "/v2/auth/tokens",
    {
      schema: {
        tags,
        summary: "Revoke and delete all of the caller's tokens for a provider, across agents",
        description:
          "Without `user_id` (every end user's tokens) it needs the admin role. 404 when the " +
          `organization has no such provider.${TENANT_NOTE}${REVOKE_NOTE}`,
        querystring: ProviderTokensQuery,
        response: { 200: TokensDeleted, 502: KEPT },
      },
    },
    async (request) => {
      const slug = request.query.provider_id;
      if (request.query.user_id === undefined && principalOf(request).role !== "admin") {
        throw forbidden(
          "Deleting every user's tokens of a provider needs the admin role; name a user_id to delete that user's.",
        );
      }
      const removal = await deleteProviderTokens(orm, env, scopeOf(request, request.query.user_id), slug);
      logRemoval(request, removal);
      return {
        message: `Deleted ${removal.deleted} token(s) for provider "${slug}".`,
        provider_id: slug,
        deleted: removal.deleted,
      };
    },
  );

  app.patch(
    "/v2/auth/tokens/:token_id/metadata",
    {
      schema: {
        tags,
        summary: "Set a token's account label or make it the default",
        description:
          "Omitted or null fields are left as they are. `is_default: true` makes it the one token " +
          "authenticate hands out for its tenant, user and agent; the previous default stops being " +
          `one. Another tenant's token, or another user's when \`user_id\` is given, is 404.${TENANT_NOTE}`,
        params: TokenParams,
        querystring: OwnerQuery,
        body: TokenMetadataBody,
        response: { 200: OAuthTokenSummary },
      },
    },
    async (request) =>
      patchMetadata(orm, scopeOf(request, request.query.user_id), request.params.token_id, request.body),
  );

  app.delete(
    "/v2/auth/tokens/:token_id",
    {
      schema: {
        tags,
        summary: "Revoke a token at its provider, then delete it",
        description: `Its agent connections go with it. Another tenant's token is 404.${TENANT_NOTE}${REVOKE_NOTE}`,
        params: TokenParams,
        querystring: OwnerQuery,
        response: { 204: { type: "null", description: "Revoked and deleted." }, 502: KEPT },
      },
    },
    async (request, reply) => {
      const scope = scopeOf(request, request.query.user_id);
      logRemoval(request, await deleteToken(orm, env, scope, request.params.token_id));
      return reply.code(204).send();
    },
  );

  app.get(
    "/v2/auth/tokens/workspace/slack/exists",
    {
      schema: {
        tags,
        summary: "Whether anyone obtained a token of a Slack provider in this workspace",
        description:
          'Slack providers are those with `provider_type: "slack"`. A workspace-bound key counts ' +
          "its workspace's own tokens only.",
        response: { 200: OAuthTokenStatus },
      },
    },
    async (request) => {
      const { workspaceId } = workspaceOf(request);
      return { has_token: await hasSlackToken(orm, tenantOfPrincipal(principalOf(request)), workspaceId) };
    },
  );

  app.delete(
    "/v2/auth/tokens/workspace/slack",
    {
      config: { auth: { role: "admin" } },
      schema: {
        tags,
        summary: "Revoke and delete every Slack token obtained in this workspace (admin)",
        description: `Whoever obtained them; a workspace-bound key deletes its workspace's own.${REVOKE_NOTE}`,
        response: { 200: SlackTokensDeleted, 502: KEPT },
      },
    },
    async (request) => {
      const { workspaceId } = workspaceOf(request);
      const removal = await deleteSlackTokens(orm, env, tenantOfPrincipal(principalOf(request)), workspaceId);
      logRemoval(request, removal);
      return {
        message: `Deleted ${removal.deleted} Slack token(s) of this workspace.`,
        deleted: removal.deleted,
      };
    },
  );
}
