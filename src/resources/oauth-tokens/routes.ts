import { Type } from "@sinclair/typebox";
import type { FastifyRequest } from "fastify";
import { workspaceOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { flowEnvOf } from "../oauth-flows/env.ts";
import { ownerOf } from "./owner.ts";
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

const tags = ["oauth-tokens"];
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

/** A user's stored tokens: listing, labels and the default, revocation, and workspace Slack tokens. */
export async function oauthTokenRoutes(app: App): Promise<void> {
  const orm = app.deps.db.orm;
  const env = flowEnvOf(app.deps);

  app.get(
    "/v2/auth/tokens",
    {
      schema: {
        tags,
        summary: "List the caller's stored tokens (never their values)",
        description: "The tokens of `user_id` (default: the calling key's own user), oldest first.",
        querystring: TokensQuery,
        response: { 200: Type.Array(OAuthTokenSummary) },
      },
    },
    async (request) => listTokens(orm, ownerOf(request, request.query.user_id), request.query),
  );

  app.get(
    "/v2/auth/tokens/exists",
    {
      schema: {
        tags,
        summary: "Whether the caller holds a token for a provider",
        querystring: ProviderTokensQuery,
        response: { 200: OAuthTokenStatus },
      },
    },
    async (request) => ({
      has_token: await hasToken(orm, ownerOf(request, request.query.user_id), request.query.provider_id),
    }),
  );

  app.delete(
    "/v2/auth/tokens",
    {
      schema: {
        tags,
        summary: "Revoke and delete all of the caller's tokens for a provider, across agents",
        description: `404 when the organization has no such provider.${REVOKE_NOTE}`,
        querystring: ProviderTokensQuery,
        response: { 200: TokensDeleted, 502: KEPT },
      },
    },
    async (request) => {
      const slug = request.query.provider_id;
      const removal = await deleteProviderTokens(orm, env, ownerOf(request, request.query.user_id), slug);
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
        summary: "Set a token's account label or make it the default (owner only)",
        description:
          "Omitted or null fields are left as they are. `is_default: true` makes it the one token " +
          "authenticate hands out for its user and agent; the previous default stops being one.",
        params: TokenParams,
        querystring: OwnerQuery,
        body: TokenMetadataBody,
        response: { 200: OAuthTokenSummary },
      },
    },
    async (request) =>
      patchMetadata(orm, ownerOf(request, request.query.user_id), request.params.token_id, request.body),
  );

  app.delete(
    "/v2/auth/tokens/:token_id",
    {
      schema: {
        tags,
        summary: "Revoke a token at its provider, then delete it (owner only)",
        description: `Its agent connections go with it.${REVOKE_NOTE}`,
        params: TokenParams,
        querystring: OwnerQuery,
        response: { 204: { type: "null", description: "Revoked and deleted." }, 502: KEPT },
      },
    },
    async (request, reply) => {
      const owner = ownerOf(request, request.query.user_id);
      logRemoval(request, await deleteToken(orm, env, owner, request.params.token_id));
      return reply.code(204).send();
    },
  );

  app.get(
    "/v2/auth/tokens/workspace/slack/exists",
    {
      schema: {
        tags,
        summary: "Whether anyone obtained a token of a Slack provider in this workspace",
        description: 'Slack providers are those with `provider_type: "slack"`.',
        response: { 200: OAuthTokenStatus },
      },
    },
    async (request) => {
      const { organizationId, workspaceId } = workspaceOf(request);
      return { has_token: await hasSlackToken(orm, organizationId, workspaceId) };
    },
  );

  app.delete(
    "/v2/auth/tokens/workspace/slack",
    {
      config: { auth: { role: "admin" } },
      schema: {
        tags,
        summary: "Revoke and delete every Slack token obtained in this workspace (admin)",
        description: `Whoever owns them.${REVOKE_NOTE}`,
        response: { 200: SlackTokensDeleted, 502: KEPT },
      },
    },
    async (request) => {
      const { organizationId, workspaceId } = workspaceOf(request);
      const removal = await deleteSlackTokens(orm, env, organizationId, workspaceId);
      logRemoval(request, removal);
      return {
        message: `Deleted ${removal.deleted} Slack token(s) of this workspace.`,
        deleted: removal.deleted,
      };
    },
  );
}
