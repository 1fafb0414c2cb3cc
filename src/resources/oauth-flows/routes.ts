import { Type } from "@sinclair/typebox";
import { principalOf } from "../../http/auth.ts";
import { IdParams } from "../../http/schemas.ts";
import type { App } from "../../http/types.ts";
import { createSafeFetch } from "../../oauth/safe-fetch.ts";
import { McpDiscoverBody, OAuthProvider, ProviderParams } from "../oauth-providers/schema.ts";
import { authenticate } from "./authenticate.ts";
import { handleCallback } from "./callback.ts";
import type { FlowEnv } from "./env.ts";
import { mcpDiscover } from "./mcp-discover.ts";
import { callbackPage, PAGE_HEADERS } from "./page.ts";
import {
  AuthenticateBody,
  AuthenticateResult,
  OAuthToken,
  TokensQuery,
  WaitParams,
  WaitQuery,
  WaitResult,
} from "./schema.ts";
import { deleteToken, listTokens } from "./token-store.ts";
import { FlowWaiters, waitForFlow } from "./wait.ts";

const tags = ["oauth-flows"];

/** Authorization-code flows for an application's end users, their tokens, and MCP client registration. */
export async function oauthFlowRoutes(app: App): Promise<void> {
  const { db, config, keyring } = app.deps;
  const env: FlowEnv = {
    config,
    keyring,
    fetch: createSafeFetch({ allowLoopback: config.oauth.allowInsecureLoopback }),
  };
  const waiters = new FlowWaiters(db);
  app.addHook("onClose", async () => waiters.close());

  app.post(
    "/v2/auth/authenticate",
    {
      schema: {
        tags,
        summary: "Get a user's token for a provider, or start an authorization flow",
        description:
          'Returns `{status: "completed", token}` when a valid token covering the scopes is stored ' +
          '(refreshed first if it expired), else `{status: "pending", url, auth_id}`: open `url`, then `wait`.',
        body: AuthenticateBody,
        response: { 200: AuthenticateResult },
      },
    },
    async (request) => authenticate(db.orm, env, principalOf(request).organizationId, request.body),
  );

  app.get(
    "/v2/auth/callback/:provider_id",
    {
      // Public: the provider redirects the user's browser here. The query carries the code and
      // state, so this route's request lines are kept out of the info log.
      config: { auth: { public: true } },
      logLevel: "warn",
      schema: {
        tags,
        summary: "Browser redirect target of the provider (code, state); answers with a small page",
        params: ProviderParams,
        produces: ["text/html"],
      },
    },
    async (request, reply) => {
      const query = request.raw.url?.split("?")[1] ?? "";
      const outcome = await handleCallback(db, env, request.params.provider_id, new URLSearchParams(query));
      if (!outcome.ok) {
        request.log.warn(
          { auth_id: outcome.flowId, status: outcome.status },
          `oauth callback: ${outcome.message}`,
        );
      }
      return reply
        .code(outcome.status)
        .headers(PAGE_HEADERS)
        .send(callbackPage(outcome.ok, outcome.title, outcome.message));
    },
  );

  app.get(
    "/v2/auth/wait/:auth_id",
    {
      schema: {
        tags,
        summary: "Wait for an authorization flow to finish (long poll)",
        params: WaitParams,
        querystring: WaitQuery,
        response: { 200: WaitResult },
      },
    },
    async (request) =>
      waitForFlow(
        db,
        env,
        waiters,
        principalOf(request).organizationId,
        request.params.auth_id,
        request.query.timeout,
      ),
  );

  app.get(
    "/v2/auth/tokens",
    {
      schema: {
        tags,
        summary: "List a user's stored tokens (never their values)",
        querystring: TokensQuery,
        response: { 200: Type.Array(OAuthToken) },
      },
    },
    async (request) => listTokens(db.orm, principalOf(request).organizationId, request.query),
  );

  app.delete(
    "/v2/auth/tokens/:id",
    {
      schema: {
        tags,
        summary: "Forget a stored token (the provider is not told)",
        params: IdParams,
        response: { 200: OAuthToken },
      },
    },
    async (request) => deleteToken(db.orm, principalOf(request).organizationId, request.params.id),
  );

  app.post(
    "/v2/auth/providers/mcp-discover",
    {
      schema: {
        tags: ["oauth-providers"],
        summary: "Create a provider for an MCP server by discovery and dynamic client registration",
        body: McpDiscoverBody,
        response: { 201: OAuthProvider },
      },
    },
    async (request, reply) => {
      const created = await mcpDiscover(db.orm, env, principalOf(request).organizationId, request.body);
      return reply.code(201).send(created);
    },
  );
}
