import { Type } from "@sinclair/typebox";
import { IdParams } from "../../core/shapes.ts";
import { workspaceOf } from "../../http/auth.ts";
import type { App } from "../../http/types.ts";
import {
  CreateWebhookBody,
  Delivery,
  DeliveryParams,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  PatchWebhookBody,
  Webhook,
  WebhookWithSecret,
} from "./schema.ts";
import {
  createWebhook,
  getWebhook,
  patchWebhook,
  redeliver,
  removeWebhook,
  rotateWebhookSecret,
  type WebhookEnv,
} from "./service.ts";
import { listDeliveries, listWebhooks } from "./store.ts";

const tags = ["webhooks"];

export async function webhookRoutes(app: App): Promise<void> {
  const { db, keyring, config } = app.deps;
  const orm = db.orm;
  const env: WebhookEnv = { orm, keyring, allowPrivate: config.webhooks.allowPrivate };

  app.get(
    "/v2/webhooks",
    {
      schema: {
        tags,
        summary: "List the workspace's webhooks (newest first)",
        querystring: ListWebhooksQuery,
        response: { 200: Type.Array(Webhook) },
      },
    },
    async (request) =>
      listWebhooks(orm, workspaceOf(request).workspaceId, request.query.limit, request.query.offset),
  );

  app.post(
    "/v2/webhooks",
    {
      schema: {
        tags,
        summary: "Create a webhook (its signing secret is shown once)",
        body: CreateWebhookBody,
        response: { 201: WebhookWithSecret },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await createWebhook(env, workspaceOf(request), request.body)),
  );

  app.get(
    "/v2/webhooks/:id",
    { schema: { tags, summary: "Get a webhook", params: IdParams, response: { 200: Webhook } } },
    async (request) => getWebhook(orm, workspaceOf(request), request.params.id),
  );

  app.patch(
    "/v2/webhooks/:id",
    {
      schema: {
        tags,
        summary:
          "Change a webhook's URL, events, description or enabled flag (disabling drops queued deliveries)",
        params: IdParams,
        body: PatchWebhookBody,
        response: { 200: Webhook },
      },
    },
    async (request) => patchWebhook(env, workspaceOf(request), request.params.id, request.body),
  );

  app.delete(
    "/v2/webhooks/:id",
    {
      schema: {
        tags,
        summary: "Delete a webhook and its delivery log",
        params: IdParams,
        response: { 204: Type.Null() },
      },
    },
    async (request, reply) => {
      await removeWebhook(orm, workspaceOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    "/v2/webhooks/:id/rotate-secret",
    {
      schema: {
        tags,
        summary: "Replace the signing secret (shown once; the old one stops signing at once)",
        params: IdParams,
        response: { 200: WebhookWithSecret },
      },
    },
    async (request) => rotateWebhookSecret(env, workspaceOf(request), request.params.id),
  );

  app.get(
    "/v2/webhooks/:id/deliveries",
    {
      schema: {
        tags,
        summary: "A webhook's deliveries, newest first, with every attempt's status code and duration",
        params: IdParams,
        querystring: ListDeliveriesQuery,
        response: { 200: Type.Array(Delivery) },
      },
    },
    async (request) => {
      const caller = workspaceOf(request);
      await getWebhook(orm, caller, request.params.id);
      return listDeliveries(orm, caller.workspaceId, request.params.id, request.query);
    },
  );

  app.post(
    "/v2/webhooks/:id/deliveries/:delivery_id/redeliver",
    {
      schema: {
        tags,
        summary: "Send a delivery again now (same webhook-id and body), with a fresh 24 hours of retries",
        params: DeliveryParams,
        response: { 202: Delivery },
      },
    },
    async (request, reply) =>
      reply
        .code(202)
        .send(await redeliver(orm, workspaceOf(request), request.params.id, request.params.delivery_id)),
  );
}
