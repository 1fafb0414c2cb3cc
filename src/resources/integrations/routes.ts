import { Type } from "@sinclair/typebox";
import { principalOf } from "../../http/auth.ts";
import { errorResponse } from "../../http/errors.ts";
import type { App } from "../../http/types.ts";
import {
  CodehostRepository,
  CreateIntegrationBody,
  Integration,
  IntegrationParams,
  IntegrationWithSecret,
  WebhookAnswer,
} from "./schema.ts";
import {
  createIntegration,
  deleteIntegration,
  listIntegrationRepositories,
  listIntegrations,
  rotateWebhookSecret,
} from "./service.ts";
import { receiveWebhook } from "./webhook.ts";

const admin = { auth: { role: "admin" as const } };
const tags = ["integrations"];
const BASE = "/v1/integrations/forge/codehost";
const LEGACY_BASE = "/v1/integrations/codehost";
const UPSTREAM = { 502: errorResponse("The code host could not be read; `detail` says why.") };
/** GitHub sends push payloads of up to 25 MB; a big push of a monorepo is a few MB. */
const WEBHOOK_BODY_LIMIT = 8 * 1024 * 1024;

const header = (value: string | string[] | undefined): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;

/**
 * The code host's push webhook: public (the signature is the credential), and its JSON body is
 * kept as raw bytes, since the signature covers exactly those; the service parses it after.
 */
async function webhookRoute(app: App): Promise<void> {
  const { db, keyring, config } = app.deps;
  app.removeAllContentTypeParsers();
  // Any media type is taken as bytes: a form-encoded delivery then fails as "not JSON", after its signature.
  const keep = (_request: unknown, body: string | Buffer, done: (err: null, body: Buffer) => void) =>
    done(null, Buffer.isBuffer(body) ? body : Buffer.from(body));
  app.addContentTypeParser("application/json", { parseAs: "buffer", bodyLimit: WEBHOOK_BODY_LIMIT }, keep);
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: WEBHOOK_BODY_LIMIT }, keep);
  const inherited = app.validatorCompiler;
  if (!inherited) throw new Error("the app's validator compiler must be set before the webhook route");
  app.post(
    `${BASE}/:integration_id/webhook`,
    {
      config: { auth: { public: true } },
      bodyLimit: WEBHOOK_BODY_LIMIT,
      // The body is raw bytes the signature covers; the schema below only documents it.
      validatorCompiler: (route) => (route.httpPart === "body" ? () => true : inherited(route)),
      schema: {
        tags,
        summary: "Receive a code host's push webhook (GitHub's format): build the pushed commit",
        description:
          "No API key: the request must be signed with the integration's webhook secret (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body), with `X-GitHub-Event` and `X-GitHub-Delivery`. A push to branch B of repository R makes a revision at the pushed commit for each deployment of this integration with `repo_url` R, `repo_ref` B and `build_on_push: true`, unless its app config's `watch_paths` match none of the changed paths. Tags and deleted branches build nothing; a delivery id seen before does nothing; `ping` is answered.",
        consumes: ["application/json"],
        params: IntegrationParams,
        body: Type.Unsafe<Buffer | undefined>({ type: "object", description: "The event's JSON payload." }),
        response: {
          200: WebhookAnswer,
          202: WebhookAnswer,
          400: errorResponse("Signed, but not a readable event (headers or payload)."),
          401: errorResponse("Unsigned, mis-signed, or the integration has no webhook secret yet."),
          404: errorResponse("No such integration."),
          413: errorResponse("The payload is over the limit."),
          ...UPSTREAM,
        },
      },
    },
    async (request, reply) => {
      const h = request.headers;
      const result = await receiveWebhook({ db, keyring, config }, request.params.integration_id, {
        event: header(h["x-github-event"]),
        deliveryId: header(h["x-github-delivery"]),
        signature: header(h["x-hub-signature-256"]),
        body: Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0),
      });
      return reply.code(result.status).send(result.answer);
    },
  );
}

export async function integrationRoutes(app: App): Promise<void> {
  const { orm } = app.deps.db;
  const { config, keyring } = app.deps;

  app.post(
    BASE,
    {
      config: admin,
      schema: {
        tags,
        summary: "Add a code-host integration (a local git directory or a GitHub App installation)",
        description:
          'The answer carries `webhook_secret`, the push webhook\'s secret, this once (docs/codehost.md, "Build on push").',
        body: CreateIntegrationBody,
        response: { 201: IntegrationWithSecret, 409: errorResponse("Already integrated."), ...UPSTREAM },
      },
    },
    async (request, reply) => {
      const created = await createIntegration(orm, { config, keyring }, principalOf(request), request.body);
      return reply.code(201).send(created);
    },
  );

  app.post(
    `${BASE}/:integration_id/webhook-secret`,
    {
      config: admin,
      schema: {
        tags,
        summary: "Generate a new push webhook secret (the old one stops working at once)",
        description: "The answer carries the new `webhook_secret` this once.",
        params: IntegrationParams,
        response: { 200: IntegrationWithSecret, 404: errorResponse("No such integration.") },
      },
    },
    async (request) => rotateWebhookSecret(orm, keyring, principalOf(request), request.params.integration_id),
  );

  await app.register(webhookRoute);

  app.delete(
    `${BASE}/:integration_id`,
    {
      config: admin,
      schema: {
        tags,
        summary: "Remove a code-host integration",
        params: IntegrationParams,
        response: { 200: Integration, 409: errorResponse("A deployment still builds from it.") },
      },
    },
    async (request) => deleteIntegration(orm, principalOf(request), request.params.integration_id),
  );

  // The hosted service answers both reads at a `forge/` path and at a legacy twin without it.
  for (const [base, twin] of [
    [BASE, ""],
    [LEGACY_BASE, ` (legacy twin of ${BASE}; the same answers)`],
  ] as const) {
    app.get(
      `${base}/install`,
      {
        schema: {
          tags,
          summary: `List the organization's code-host integrations${twin}`,
          response: { 200: Type.Array(Integration) },
        },
      },
      async (request) => listIntegrations(orm, principalOf(request)),
    );

    app.get(
      `${base}/:integration_id/repos`,
      {
        schema: {
          tags,
          summary: `List the repositories an integration makes available to deploy (every page, no envelope)${twin}`,
          params: IntegrationParams,
          response: { 200: Type.Array(CodehostRepository), ...UPSTREAM },
        },
      },
      async (request) =>
        listIntegrationRepositories(orm, config, principalOf(request), request.params.integration_id),
    );
  }
}
