import { sql } from "drizzle-orm";
import { boolean, integer, jsonb, pgTable, primaryKey, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { organizations, workspaces } from "./identity.ts";

const ts = (name: string) => timestamp(name, { withTimezone: true });

export const deployments = pgTable("deployments", {
  id: uuid("id").primaryKey().defaultRandom(),
  organizationId: uuid("organization_id")
    .notNull()
    .references(() => organizations.id),
  workspaceId: uuid("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  name: text("name").notNull(),
  source: text("source").notNull(),
  deploymentType: text("deployment_type").notNull().default("dev"),
  sourceConfig: jsonb("source_config").$type<Record<string, unknown>>().notNull().default({}),
  imageVersion: text("image_version"),
  status: text("status").notNull().default("AWAITING_DATABASE"),
  remoteReconciled: boolean("remote_reconciled").notNull().default(false),
  latestRevisionId: uuid("latest_revision_id"),
  /** Its latest revision's status, kept by the revision writer and a trigger (migration 0024). */
  latestRevisionStatus: text("latest_revision_status"),
  activeRevisionId: uuid("active_revision_id"),
  databaseName: text("database_name"),
  revisionCount: integer("revision_count").notNull().default(0),
  pendingRevision: jsonb("pending_revision").$type<Record<string, unknown> | null>(),
  pendingSecretsEnc: text("pending_secrets_enc"),
  /** Envelope of the app database role's password, bound to the row id (migration 0005). */
  databasePasswordEnc: text("database_password_enc"),
  /** Envelope of the password of the deployment's own Redis (migration 0010). */
  redisPasswordEnc: text("redis_password_enc"),
  /** The last request the apps router passed to it; what UNUSED is decided from (migration 0010). */
  lastRequestAt: ts("last_request_at"),
  /** Why its database is over `db_storage_gi`, null while within it (migration 0010). */
  storageNote: text("storage_note"),
  /** Lease on the deployment's teardown (AWAITING_DELETE), like the revisions' work lease. */
  reconcileOwner: text("reconcile_owner"),
  reconcileExpiresAt: ts("reconcile_expires_at"),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
  /** What the record shows of the latest revision (migration 0008). */
  latestRevisionContent: jsonb("latest_revision_content").$type<Record<string, unknown> | null>(),
  /** The API record as JSON text: a generated column, defined in migration 0024 (its ETag: slipway_etag, 0016). */
  record: text("record").generatedAlwaysAs(sql`slipway_deployment_record(...)`),
});

export interface StatusChange {
  status: string;
  at: string;
  message?: string;
}

export const revisions = pgTable("revisions", {
  id: uuid("id").primaryKey().defaultRandom(),
  deploymentId: uuid("deployment_id")
    .notNull()
    .references(() => deployments.id),
  seq: integer("seq").notNull(),
  status: text("status").notNull(),
  source: text("source").notNull(),
  sourceRevisionConfig: jsonb("source_revision_config")
    .$type<Record<string, unknown>>()
    .notNull()
    .default({}),
  resourceSpec: jsonb("resource_spec").$type<Record<string, unknown> | null>(),
  secretReferences: jsonb("secret_references").$type<Record<string, unknown>[] | null>(),
  buildConfig: jsonb("build_config").$type<Record<string, unknown>>().notNull().default({}),
  statusHistory: jsonb("status_history").$type<StatusChange[]>().notNull().default([]),
  statusMessage: text("status_message"),
  interruptRequested: boolean("interrupt_requested").notNull().default(false),
  leaseOwner: text("lease_owner"),
  leaseExpiresAt: ts("lease_expires_at"),
  /** Faults retried with back-off; after a few the revision fails (migration 0005). */
  attempts: integer("attempts").notNull().default(0),
  /** The listener that serves the revision, the image built for it, its last report (migration 0011). */
  listenerId: uuid("listener_id"),
  imageRef: text("image_ref"),
  /** The built image's health path, from its app config (migration 0017). */
  healthPath: text("health_path"),
  remoteState: text("remote_state"),
  /** The revision whose secret rows are this one's (unchanged since it); null: its own (migration 0022). */
  secretsRevisionId: uuid("secrets_revision_id"),
  remoteReason: text("remote_reason"),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
  /** The API record as JSON text: a generated column, defined in migration 0024. */
  record: text("record").generatedAlwaysAs(sql`slipway_revision_record(...)`),
});

export const revisionSecrets = pgTable("revision_secrets", {
  id: uuid("id").primaryKey().defaultRandom(),
  revisionId: uuid("revision_id")
    .notNull()
    .references(() => revisions.id),
  name: text("name").notNull(),
  valueEnc: text("value_enc").notNull(),
  position: integer("position").notNull(),
  /** The envelope is bound to this deployment and the name; null: to the row id (rows before 0008). */
  deploymentId: uuid("deployment_id"),
});

export const tracingProjects = pgTable("tracing_projects", {
  id: uuid("id").primaryKey().defaultRandom(),
  workspaceId: uuid("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  name: text("name").notNull(),
  deploymentId: uuid("deployment_id"),
  createdAt: ts("created_at").notNull().defaultNow(),
});

export const tagKeys = pgTable("tag_keys", {
  id: uuid("id").primaryKey().defaultRandom(),
  workspaceId: uuid("workspace_id").notNull(),
  key: text("key").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
});

export const tagValues = pgTable("tag_values", {
  id: uuid("id").primaryKey().defaultRandom(),
  tagKeyId: uuid("tag_key_id").notNull(),
  value: text("value").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
});

export const deploymentTags = pgTable(
  "deployment_tags",
  {
    deploymentId: uuid("deployment_id").notNull(),
    tagValueId: uuid("tag_value_id").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.deploymentId, t.tagValueId] })],
);

export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    workspaceId: uuid("workspace_id").notNull(),
    key: text("key").notNull(),
    requestHash: text("request_hash").notNull(),
    statusCode: integer("status_code"),
    response: jsonb("response"),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.key] })],
);
