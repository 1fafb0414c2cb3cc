import {
  bigint,
  bigserial,
  boolean,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import { organizations, workspaces } from "./identity.ts";

const ts = (name: string) => timestamp(name, { withTimezone: true });

/** What happened in a workspace, in commit order once sequenced (migration 0012). */
export const events = pgTable("events", {
  pk: bigserial("pk", { mode: "number" }).primaryKey(),
  // Not indexed: nothing reads an event by its id (migration 0023).
  id: uuid("id").notNull(),
  // Unique among sequenced rows: a partial index, as is (workspace_id, seq) (migration 0023).
  seq: bigint("seq", { mode: "number" }),
  // No foreign keys: each check locked the same parent rows on every write (migration 0019).
  organizationId: uuid("organization_id").notNull(),
  workspaceId: uuid("workspace_id").notNull(),
  type: text("type").notNull(),
  body: text("body").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
});

export const webhooks = pgTable("webhooks", {
  id: uuid("id").primaryKey().defaultRandom(),
  organizationId: uuid("organization_id")
    .notNull()
    .references(() => organizations.id),
  workspaceId: uuid("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  url: text("url").notNull(),
  events: jsonb("events").$type<string[]>().notNull(),
  description: text("description").notNull().default(""),
  enabled: boolean("enabled").notNull().default(true),
  secretEnc: text("secret_enc").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
});

export const webhookDeliveries = pgTable("webhook_deliveries", {
  id: uuid("id").primaryKey().defaultRandom(),
  pk: bigserial("pk", { mode: "number" }).notNull().unique(),
  webhookId: uuid("webhook_id")
    .notNull()
    .references(() => webhooks.id),
  eventPk: bigint("event_pk", { mode: "number" })
    .notNull()
    .references(() => events.pk),
  status: text("status").$type<"pending" | "delivered" | "failed">().notNull().default("pending"),
  attempts: integer("attempts").notNull().default(0),
  nextAttemptAt: ts("next_attempt_at").notNull().defaultNow(),
  giveUpAt: ts("give_up_at").notNull(),
  leaseOwner: text("lease_owner"),
  leaseExpiresAt: ts("lease_expires_at"),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
});

export const webhookAttempts = pgTable("webhook_attempts", {
  id: bigserial("id", { mode: "number" }).primaryKey(),
  deliveryId: uuid("delivery_id")
    .notNull()
    .references(() => webhookDeliveries.id),
  at: ts("at").notNull(),
  statusCode: integer("status_code"),
  error: text("error"),
  durationMs: integer("duration_ms").notNull(),
});

export const auditLog = pgTable("audit_log", {
  id: uuid("id").primaryKey(),
  at: ts("at").notNull().defaultNow(),
  // No foreign key, as on events (migration 0019).
  organizationId: uuid("organization_id").notNull(),
  workspaceId: uuid("workspace_id"),
  keyId: uuid("key_id"),
  keyDescription: text("key_description").notNull().default(""),
  method: text("method").notNull(),
  route: text("route").notNull(),
  action: text("action").notNull(),
  resourceType: text("resource_type").notNull(),
  resourceId: text("resource_id"),
  statusCode: integer("status_code"),
  requestId: text("request_id").notNull(),
});
