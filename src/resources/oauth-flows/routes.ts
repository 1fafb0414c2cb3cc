import type { FastifyReply, FastifyRequest } from "fastify";
import { DomainError } from "../../core/errors.ts";
import { principalOf } from "../../http/auth.ts";
import { errorResponse, statusOf } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { McpDiscoverBody, OAuthProvider, ProviderParams } from "../oauth-providers/schema.ts";
import { flowEnvOf } from "../oauth-tokens/env.ts";
import { callerOf, tenantOfPrincipal } from "../oauth-tokens/tenant.ts";
import { authenticate } from "./authenticate.ts";
import { type CallbackOutcome, handleCallback } from "./callback.ts";
import { mcpDiscover } from "./mcp-discover.ts";
import { callbackPage, PAGE_HEADERS } from "./page.ts";
import {
  AuthenticateBody,
  AuthenticateResult,
  FinalizeBody,
  FinalizeResult,
  SetupQuery,
  WaitParams,
  WaitQuery,
  WaitResult,
} from "./schema.ts";
import { setupLanding } from "./setup.ts";
import { FlowWaiters, waitForFlow } from "./wait.ts";

const tags = ["oauth-flows"];
const HTML_ERRORS = {
  400: {
    description:
      "The state is missing, unknown, used, expired or of another provider, or the provider refused.",
  },
  502: { description: "The token endpoint could not be reached or failed." },
};
const HTML_PAGE = {
  description: "A small HTML page saying what happened (also for 400 and 502).",
  content: { "text/html": { schema: { type: "string" } } },
};

function logFailure(request: FastifyRequest, outcome: CallbackOutcome): void {
  if (!outcome.ok) {
    request.log.warn(
      { auth_id: outcome.flowId, refusal: outcome.refusal },
      `oauth callback: ${outcome.message}`,
    );
  }
}

function sendPage(reply: FastifyReply, outcome: CallbackOutcome): FastifyReply {
  return reply
    .code(outcome.refusal === null ? 200 : statusOf(outcome.refusal))
    .headers(PAGE_HEADERS)
    .send(callbackPage(outcome.ok, outcome.title, outcome.message));
}

/** Authorization-code flows for an application's end users, and MCP client registration. */
export async function oauthFlowRoutes(app: App): Promise<void> {
  const { db } = app.deps;
  const env = flowEnvOf(app.deps);
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
          '(refreshed first if it expired), else `{status: "pending", url, auth_id}`: open `url`, then `wait`. ' +
          "The token is the tenant's that the key acts for (a workspace-bound key's workspace, else the " +
          "organization), labelled with the end user `user_id` (else `ls_user_id`; without either: " +
          "the tenant's own, `organization:<id>` or `workspace:<id>`).",
        body: AuthenticateBody,
        response: {
          200: AuthenticateResult,
          502: errorResponse("Renewing the stored token failed at the provider."),
        },
      },
    },
    async (request) => authenticate(db.orm, env, callerOf(principalOf(request)), request.body),
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
        response: { 200: HTML_PAGE, ...HTML_ERRORS },
      },
    },
    async (request, reply) => {
      const query = request.raw.url?.split("?")[1] ?? "";
      const outcome = await handleCallback(db, env, request.params.provider_id, new URLSearchParams(query));
      logFailure(request, outcome);
      return sendPage(reply, outcome);
    },
  );

  app.post(
    "/v2/auth/callback/:provider_id",
    {
      logLevel: "warn",
      schema: {
        tags,
        summary: "Finish a flow from what the browser brought back (code, state)",
        description:
          "The second form of the callback, for an application page that received the redirect. " +
          "Only flows the caller's tenant sees match (a workspace-bound key: its workspace's). 400 when the state is unknown, used, " +
          "expired or of another provider; 502 when the token endpoint fails. `wait` reports the outcome too.",
        params: ProviderParams,
        body: FinalizeBody,
        response: {
          200: FinalizeResult,
          400: errorResponse("The state is unknown, used, expired or of another provider."),
          502: errorResponse("The token endpoint could not be reached or failed."),
        },
      },
    },
    async (request) => {
      const params = new URLSearchParams({ code: request.body.code, state: request.body.state });
      const tenant = tenantOfPrincipal(principalOf(request));
      const outcome = await handleCallback(db, env, request.params.provider_id, params, tenant);
      logFailure(request, outcome);
      if (!outcome.ok || outcome.flowId === null) {
        throw new DomainError(outcome.refusal ?? "bad_request", outcome.message);
      }
      return { status: "completed" as const, auth_id: outcome.flowId };
    },
  );

  app.get(
    "/v2/auth/setup/:provider_id",
    {
      // Public like the callback: a code-host app's installation sends the browser here.
      config: { auth: { public: true } },
      logLevel: "warn",
      schema: {
        tags,
        summary: "Landing page after installing a code-host app; finishes the flow its state names",
        description:
          "With `state` and `code` (or `error`) it does what the callback does; otherwise " +
          "(`setup_action=update`, or nothing to finish) it only says so and changes nothing.",
        params: ProviderParams,
        querystring: SetupQuery,
        produces: ["text/html"],
        response: { 200: HTML_PAGE, ...HTML_ERRORS },
      },
    },
    async (request, reply) => {
      const outcome = await setupLanding(db, env, request.params.provider_id, request.query);
      logFailure(request, outcome);
      return sendPage(reply, outcome);
    },
  );

  app.get(
    "/v2/auth/wait/:auth_id",
    {
      schema: {
        tags,
        summary: "Wait for an authorization flow to finish (long poll)",
        description:
          "Another tenant's flow (another organization's, another workspace's for a bound key) is `not_found`.",
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
        tenantOfPrincipal(principalOf(request)),
        request.params.auth_id,
        request.query.timeout,
      ),
  );

  app.post(
    "/v2/auth/providers/mcp-discover",
    {
      schema: {
        tags: ["oauth-providers"],
        summary: "Create a provider for an MCP server by discovery and dynamic client registration",
        body: McpDiscoverBody,
        response: {
          200: OAuthProvider,
          409: errorResponse("A provider with this provider_id exists in the organization."),
          502: errorResponse("The MCP server or its authorization server could not be reached."),
        },
      },
    },
    async (request) => mcpDiscover(db.orm, env, principalOf(request).organizationId, request.body),
  );
}
