import {
  bigint,
  customType,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";
import { deployments } from "./deployments.ts";
import { organizations } from "./identity.ts";

const ts = (name: string) => timestamp(name, { withTimezone: true });

export type IntegrationKind = "local_git" | "github";
export type IntegrationConfig = { path: string } | { installation_id: number };

export const integrations = pgTable("integrations", {
  id: uuid("id").primaryKey().defaultRandom(),
  organizationId: uuid("organization_id")
    .notNull()
    .references(() => organizations.id),
  kind: text("kind").$type<IntegrationKind>().notNull(),
  config: jsonb("config").$type<IntegrationConfig>().notNull(),
  name: text("name").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
  /** Envelope of the push webhook's secret, bound to the row id; null until generated (migration 0013). */
  webhookSecretEnc: text("webhook_secret_enc"),
});

/** Push deliveries already handled, per integration (migration 0013). */
export const codehostDeliveries = pgTable(
  "codehost_deliveries",
  {
    integrationId: uuid("integration_id")
      .notNull()
      .references(() => integrations.id),
    deliveryId: text("delivery_id").notNull(),
    receivedAt: ts("received_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.integrationId, t.deliveryId] })],
);

/** Branch heads the local_git poller last saw (migration 0013). */
export const localGitHeads = pgTable(
  "local_git_heads",
  {
    integrationId: uuid("integration_id")
      .notNull()
      .references(() => integrations.id),
    repoUrl: text("repo_url").notNull(),
    branch: text("branch").notNull(),
    sha: text("sha").notNull(),
    seenAt: ts("seen_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.integrationId, t.repoUrl, t.branch] })],
);

export const uploads = pgTable("uploads", {
  id: uuid("id").primaryKey().defaultRandom(),
  deploymentId: uuid("deployment_id")
    .notNull()
    .references(() => deployments.id),
  sourceTarballPath: text("source_tarball_path").notNull(),
  tokenHash: text("token_hash").notNull(),
  expiresAt: ts("expires_at").notNull(),
  startedAt: ts("started_at"),
  /** The advisory lock key of the process receiving it (migration 0028). */
  claimedBy: bigint("claimed_by", { mode: "number" }),
  completedAt: ts("completed_at"),
  sizeBytes: bigint("size_bytes", { mode: "number" }),
  createdAt: ts("created_at").notNull().defaultNow(),
});

/** bytea as a Buffer on both drivers (pg gives Buffer, PGlite a Uint8Array). */
const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => "bytea",
  fromDriver: (value) => Buffer.from(value),
});

export const uploadChunks = pgTable(
  "upload_chunks",
  {
    uploadId: uuid("upload_id")
      .notNull()
      .references(() => uploads.id),
    seq: integer("seq").notNull(),
    data: bytea("data").notNull(),
  },
  (t) => [primaryKey({ columns: [t.uploadId, t.seq] })],
);
