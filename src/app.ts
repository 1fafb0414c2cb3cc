import { randomUUID } from "node:crypto";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, { LogController } from "fastify";
import { completeAuditRecord, insertAuditRecord } from "./core/audit/store.ts";
import type { AppDeps } from "./deps.ts";
import { registerAudit } from "./http/audit.ts";
import { registerAuth } from "./http/auth.ts";
import { registerEdgeMetrics } from "./http/edge-metrics.ts";
import { registerErrorHandling } from "./http/errors.ts";
import { lazySerializerFactory } from "./http/lazy-schemas.ts";
import { requestLogFields } from "./http/log-redaction.ts";
import { registerMetrics } from "./http/metrics.ts";
import { registerDocsUi, registerOpenApi } from "./http/openapi.ts";
import { registerPromptClose } from "./http/prompt-close.ts";
import { registerAuthFailureLimit, registerRateLimit } from "./http/rate-limit.ts";
import { registerReadCache } from "./http/read-cache.ts";
import { registerMinimumBodyRate, serverTimeoutOptions } from "./http/slow-clients.ts";
import type { App } from "./http/types.ts";
import { registerValidation } from "./http/validation.ts";
import { hashApiKey } from "./resources/api-keys/key-material.ts";
import { keyByHash } from "./resources/api-keys/store.ts";
import { routes } from "./routes.ts";

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface BuildOptions {
  /** false for no logs; otherwise overrides of the level or a log file (tests write to one). */
  logger?: false | { level?: string; file?: string; stream?: { write(line: string): void } };
}

/** Builds the whole app without listening: the server and the tests both use this. */
export async function buildApp(deps: AppDeps, opts: BuildOptions = {}): Promise<App> {
  const { config } = deps;
  const app = Fastify({
    logger:
      opts.logger === false
        ? false
        : {
            level: config.logLevel,
            // Fastify's request serializer logs no headers; this guards any object that carries them.
            redact: {
              paths: [
                'req.headers["x-api-key"]',
                "req.headers.authorization",
                "req.headers.cookie",
                "*.client_secret",
              ],
              censor: "[redacted]",
            },
            // Signed URLs carry their credential in the query string (uploads, OAuth callbacks).
            serializers: { req: requestLogFields },
            ...opts.logger,
          },
    bodyLimit: config.bodyLimitBytes,
    // Behind a reverse proxy the client address (rate limits, logs) comes from X-Forwarded-For.
    trustProxy: config.trustProxy,
    logController: new LogController({ requestIdLogLabel: "request_id" }),
    requestIdHeader: false,
    // A caller's X-Request-Id is kept when it is a plain token, so traces join up across services.
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    },
    ajv: { customOptions: { allErrors: true } },
    // Response serializers are built on each route's first response, not all at start.
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory } },
    routerOptions: { ignoreTrailingSlash: true },
    forceCloseConnections: "idle",
    ...serverTimeoutOptions(config.timeouts),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate("deps", deps);
  // Only JSON bodies by default; routes that take other media types add their own parser.
  app.removeContentTypeParser("text/plain");
  // Clients that always send Content-Type: application/json also send it on body-less requests
  // (DELETE, redeploy); an empty body then means "no body", not broken JSON.
  const jsonParser = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    if (text === "") return done(null, undefined);
    return jsonParser(request, text, done);
  });
  registerValidation(app);
  registerErrorHandling(app);
  registerMinimumBodyRate(app, config.timeouts);
  registerPromptClose(app);
  // Before auth: an address over its failed-authentication limit costs no key lookup.
  registerAuthFailureLimit(app, config.authFailLimitPerMinute);
  await registerAuth(app, deps.db, {
    hash: hashApiKey,
    find: (hash, tenant) => keyByHash(deps.db, hash, tenant),
  });
  // After auth: the limit counts per API key.
  registerRateLimit(app, config.rateLimitPerMinute);
  // After auth: every write by a known caller is recorded (http/audit.ts).
  registerAudit(
    app,
    {
      complete: (id, status, resourceId) => completeAuditRecord(deps.db.orm, id, status, resourceId),
      insert: (scope, status) => insertAuditRecord(deps.db.orm, scope, status),
    },
    config.basePath,
  );
  const metrics = registerMetrics(app, deps.db);
  if (config.metricsPerDeployment) registerEdgeMetrics(metrics);
  await registerReadCache(app, deps.db, config.readCacheBytes);
  app.addHook("onSend", (request, reply, payload, done) => {
    reply.header("x-request-id", request.id);
    // 204 and 304 carry no body, whatever a handler's serializer made of its null.
    done(null, reply.statusCode === 204 || reply.statusCode === 304 ? "" : payload);
  });
  await registerOpenApi(app, config.basePath);
  await app.register(
    async (scope) => {
      await registerDocsUi(scope);
      await routes(scope as App, { metrics });
    },
    { prefix: config.basePath },
  );
  return app as App;
}
