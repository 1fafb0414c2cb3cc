import { type Static, Type } from "@sinclair/typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { principalOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import { ProviderParams } from "../oauth-providers/schema.ts";
import { flowEnvOf } from "../oauth-tokens/env.ts";
import { AgentId, UserId } from "../oauth-tokens/schema.ts";
import { callerOf } from "../oauth-tokens/tenant.ts";
import { type ProxyAnswer, type ProxyCall, proxyCall } from "./proxy.ts";

const tags = ["oauth-proxy"];
/** The largest request body the proxy forwards (either form); more is 413. */
export const PROXY_BODY_LIMIT = 5 * 1024 * 1024;
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

const ProxyBody = Type.Object({
  user_id: Type.Optional(UserId),
  agent_id: Type.Optional(AgentId),
  method: Type.Union(
    METHODS.map((m) => Type.Literal(m)),
    { description: "The HTTP method of the call." },
  ),
  path: Type.String({
    minLength: 1,
    maxLength: 4096,
    description: "The path under the provider's API base URL; no `..` segments, not an absolute URL.",
  }),
  query: Type.Optional(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Array(Type.String())]), {
      description: "Query parameters of the call.",
    }),
  ),
  headers: Type.Optional(
    Type.Record(
      Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$" }),
      // What HTTP can carry in a value: no control characters but tab (a CR LF would end the
      // header and begin another), nothing past Latin-1.
      Type.String({ maxLength: 8192, pattern: "^[\\t\\x20-\\x7e\\x80-\\xff]*$" }),
      {
        description:
          "Headers of the call; X-Api-Key, Authorization, X-Tenant-Id, Cookie and hop-by-hop headers are dropped.",
      },
    ),
  ),
  body: Type.Optional(
    Type.Unknown({ description: "A string is sent as it is; any other JSON value is sent as JSON." }),
  ),
});
type ProxyBody = Static<typeof ProxyBody>;

const PassQuery = Type.Object({
  user_id: Type.Optional(UserId),
  agent_id: Type.Optional(AgentId),
});

const DESCRIPTION =
  "Sends the call to the provider's API base URL (its `api_base_url`, else its template's) with the " +
  "stored token the caller's tenant holds (narrowed by `user_id`; an agent's connection with " +
  "`agent_id`), renewed first when it expires within 60 s and once after a 401. The provider's " +
  "status, headers and body come back as they are, streamed (its 429 and Retry-After too); the " +
  "token never does. Redirects to another host are refused (502). Calls count against the key's rate limit.";

const RESPONSES = {
  200: { description: "The provider's answer, whatever its status.", content: { "*/*": { schema: {} } } },
  409: errorResponse("No usable token for the provider and user (authenticate first), or no api_base_url."),
  413: errorResponse("The request body is over the proxy's limit."),
  502: errorResponse("The provider could not be reached, or redirected to another host."),
};

function send(reply: FastifyReply, answer: ProxyAnswer): FastifyReply {
  return reply.code(answer.status).headers(answer.headers).send(answer.body);
}

function jsonBody(body: unknown, headers: Record<string, string>): Buffer | undefined {
  if (body === undefined) return undefined;
  if (typeof body === "string") return Buffer.from(body, "utf8");
  if (!Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) {
    headers["content-type"] = "application/json";
  }
  return Buffer.from(JSON.stringify(body), "utf8");
}

function encodeQuery(query: ProxyBody["query"]): string {
  const q = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) q.append(name, v);
  }
  return q.toString();
}

/** The raw query string without the proxy's own parameters (user_id, agent_id), kept as encoded. */
function forwardedQuery(rawUrl: string): string {
  const at = rawUrl.indexOf("?");
  if (at < 0) return "";
  return rawUrl
    .slice(at + 1)
    .split("&")
    .filter((pair) => {
      if (pair === "") return false;
      const name = pair.split("=")[0] ?? "";
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, " "));
      } catch {
        // Left as it is: the provider judges its own query.
      }
      return decoded !== "user_id" && decoded !== "agent_id";
    })
    .join("&");
}

function headerRecord(request: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return out;
}

/** POST /v2/auth/proxy/{provider_id}: the call described in JSON. */
async function jsonForm(app: App): Promise<void> {
  const { db } = app.deps;
  const env = flowEnvOf(app.deps);
  app.post(
    "/v2/auth/proxy/:provider_id",
    {
      bodyLimit: PROXY_BODY_LIMIT,
      schema: {
        tags,
        summary: "Call a provider's API with a user's stored token",
        description: DESCRIPTION,
        params: ProviderParams,
        body: ProxyBody,
        response: RESPONSES,
      },
    },
    async (request, reply) => {
      const b = request.body;
      const headers = { ...(b.headers ?? {}) };
      const call: ProxyCall = {
        providerSlug: request.params.provider_id,
        ...(b.user_id === undefined ? {} : { userId: b.user_id }),
        ...(b.agent_id === undefined ? {} : { agentId: b.agent_id }),
        method: b.method,
        path: b.path,
        query: encodeQuery(b.query),
        body: jsonBody(b.body, headers),
        headers,
        pathLoc: ["body", "path"],
      };
      return send(reply, await proxyCall(db.orm, env, callerOf(principalOf(request)), call));
    },
  );
}

/** /v2/auth/proxy/{provider_id}/{path…}: the caller's own request, passed through. */
async function passThrough(app: App): Promise<void> {
  const { db } = app.deps;
  const env = flowEnvOf(app.deps);
  // Any body, kept as bytes: it is forwarded as it came.
  const keep = (_r: FastifyRequest, body: Buffer, done: (err: Error | null, body?: Buffer) => void) =>
    done(null, body);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: PROXY_BODY_LIMIT }, keep);
  app.route({
    method: [...METHODS],
    url: "/v2/auth/proxy/:provider_id/*",
    bodyLimit: PROXY_BODY_LIMIT,
    // A GET too acts at the provider with a user's token: the member role, as the JSON form.
    config: { auth: { role: "member" } },
    schema: {
      tags,
      summary: "Pass a request through to a provider's API with a user's stored token",
      description: `${DESCRIPTION} \`user_id\` and \`agent_id\` are the proxy's query parameters and are not forwarded.`,
      querystring: PassQuery,
      response: RESPONSES,
    },
    handler: async (request, reply) => {
      const { provider_id: slug } = request.params as { provider_id: string };
      const q = request.query as Static<typeof PassQuery>;
      const raw = request.raw.url ?? "";
      const rawPath = raw.split("?")[0] ?? "";
      const marker = `/v2/auth/proxy/${slug}/`;
      const path = `/${rawPath.slice(rawPath.indexOf(marker) + marker.length)}`;
      const body = request.body instanceof Buffer && request.body.length > 0 ? request.body : undefined;
      const call: ProxyCall = {
        providerSlug: slug,
        ...(q.user_id === undefined ? {} : { userId: q.user_id }),
        ...(q.agent_id === undefined ? {} : { agentId: q.agent_id }),
        method: request.method,
        path,
        query: forwardedQuery(raw),
        body,
        headers: headerRecord(request),
        pathLoc: ["path", "*"],
      };
      return send(reply, await proxyCall(db.orm, env, callerOf(principalOf(request)), call));
    },
  });
}

/** The proxy's two forms, each in its own scope (the pass-through takes any body as bytes). */
export async function oauthProxyRoutes(app: App): Promise<void> {
  await app.register(jsonForm);
  await app.register(passThrough);
}
