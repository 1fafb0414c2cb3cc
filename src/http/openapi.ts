import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance, RouteOptions } from "fastify";
import { slipwayVersion } from "../config/version.ts";
import { errorResponse } from "./errors.ts";

const ERRORS: Record<string, string> = {
  "401": "Missing, unknown or revoked API key.",
  "403": "The key's role, workspace binding or X-Tenant-Id does not allow this.",
  "404": "Not found (also for another tenant's resources).",
  "408":
    "The headers or the body did not arrive in time (SLIPWAY_HEADERS_TIMEOUT_MS, " +
    "SLIPWAY_REQUEST_TIMEOUT_MS); the connection is closed.",
  "422":
    "The request does not satisfy the schema or a field rule; `detail` lists each field. Also: a NUL " +
    "byte or invalid Unicode in any string, JSON nested over 32 levels, numbers beyond ±2^53, numeric " +
    "query parameters not in plain decimal digits or beyond their range, array-form parameters (`limit[]`).",
  "429":
    "Too many requests for this API key, or too many failed authentications (401) from this client " +
    "address; retry after Retry-After seconds.",
  "500": "A fault on the server; the body never carries internals.",
};
const BODY_ERRORS: Record<string, string> = {
  "413": "Request body over the limit.",
  "415": "Content-Type is not application/json.",
};

type SchemaWithResponse = {
  response?: Record<string, unknown>;
  hide?: boolean;
  security?: unknown;
  body?: unknown;
};

/** Every operation documents the error responses it can give and whether it needs a key. */
function documentErrors(route: RouteOptions): void {
  const schema = route.schema as SchemaWithResponse | undefined;
  if (!schema || schema.hide) return;
  const isPublic = route.config && (route.config as { auth?: { public?: boolean } }).auth?.public;
  const response = { ...(schema.response ?? {}) };
  for (const [code, description] of Object.entries({ ...ERRORS, ...(schema.body ? BODY_ERRORS : {}) })) {
    if (isPublic && (code === "401" || code === "403" || code === "429")) continue;
    if (!(code in response)) response[code] = errorResponse(description);
  }
  schema.response = response;
  if (isPublic) schema.security = [];
}

export async function registerOpenApi(app: FastifyInstance, basePath: string): Promise<void> {
  app.addHook("onRoute", documentErrors);
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Slipway",
        version: slipwayVersion(),
        description:
          "Deployments, revisions and OAuth provider configurations. Authenticate with `X-Api-Key` " +
          "(or `Authorization: Bearer`); pick the workspace with `X-Tenant-Id`.",
      },
      servers: [{ url: basePath || "/" }],
      components: {
        securitySchemes: {
          ApiKey: { type: "apiKey", in: "header", name: "X-Api-Key" },
          Bearer: { type: "http", scheme: "bearer" },
        },
      },
      security: [{ ApiKey: [] }, { Bearer: [] }],
    },
    // Paths are documented relative to the server URL, which carries the base path.
    transform: ({ schema, url }) => ({
      schema,
      url: basePath && url.startsWith(basePath) ? url.slice(basePath.length) || "/" : url,
    }),
  });
}

/** The docs page needs no key: its routes are marked public inside their own scope. */
export async function registerDocsUi(app: FastifyInstance): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook("onRoute", (route) => {
      route.config = { ...(route.config ?? {}), auth: { public: true } };
    });
    await scope.register(swaggerUi, { routePrefix: "/docs", uiConfig: { docExpansion: "list" } });
  });
}
