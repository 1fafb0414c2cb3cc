import { type Static, Type } from "@sinclair/typebox";
import { Count, DateTime, Nullable, QueryLimit, QueryOffset, StringEnum, Uuid } from "../../core/shapes.ts";
import { EventTypeSchema } from "../events/schema.ts";

const Url = Type.String({ minLength: 1, maxLength: 2048, description: "Where events are POSTed (https)." });
const Events = Type.Array(EventTypeSchema, { minItems: 1, maxItems: 16, uniqueItems: true });
const Description = Type.String({ maxLength: 500 });

export const Webhook = Type.Object({
  id: Uuid,
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.String(),
  enabled: Type.Boolean(),
  tenant_id: Uuid,
  created_at: DateTime,
  updated_at: DateTime,
});
export type Webhook = Static<typeof Webhook>;

/** A webhook with its signing secret: only in the answers to create and rotate. */
export const WebhookWithSecret = Type.Composite([
  Webhook,
  Type.Object({
    secret: Type.String({ description: "Standard Webhooks secret (`whsec_…`); shown this once." }),
  }),
]);
export type WebhookWithSecret = Static<typeof WebhookWithSecret>;

export const CreateWebhookBody = Type.Object(
  {
    url: Url,
    events: Events,
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const PatchWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    description: Type.Optional(Description),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type PatchWebhookBody = Static<typeof PatchWebhookBody>;

export const ListWebhooksQuery = Type.Object({ limit: QueryLimit(100, 100), offset: QueryOffset() });

export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;

export const DeliveryAttempt = Type.Object({
  at: DateTime,
  status_code: Nullable(Type.Integer()),
  error: Nullable(Type.String()),
  duration_ms: Count(),
});

export const Delivery = Type.Object({
  id: Uuid,
  webhook_id: Uuid,
  event_id: Type.String({ description: "The `webhook-id` header of every attempt." }),
  event_type: Type.String(),
  status: StringEnum(DELIVERY_STATUSES),
  attempts: Count(),
  next_attempt_at: Nullable(DateTime),
  created_at: DateTime,
  updated_at: DateTime,
  history: Type.Array(DeliveryAttempt, { description: "Every attempt, oldest first." }),
});
export type Delivery = Static<typeof Delivery>;

export const ListDeliveriesQuery = Type.Object({
  status: Type.Optional(StringEnum(DELIVERY_STATUSES)),
  limit: QueryLimit(100, 50),
  offset: QueryOffset(),
});
export type ListDeliveriesQuery = Static<typeof ListDeliveriesQuery>;

export const DeliveryParams = Type.Object({ id: Uuid, delivery_id: Uuid });
