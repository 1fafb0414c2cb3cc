import { boolean, integer, jsonb, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { organizations, workspaces } from "./identity.ts";

const ts = (name: string) => timestamp(name, { withTimezone: true });

/** Agents that run a workspace's deployments on a Kubernetes cluster (migration 0011). */
export const listeners = pgTable("listeners", {
  id: uuid("id").primaryKey().defaultRandom(),
  organizationId: uuid("organization_id")
    .notNull()
    .references(() => organizations.id),
  workspaceId: uuid("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  computeType: text("compute_type").notNull().default("k8s"),
  computeId: text("compute_id").notNull(),
  computeConfig: jsonb("compute_config").$type<Record<string, unknown>>().notNull().default({}),
  version: text("version"),
  lastSeenAt: ts("last_seen_at"),
  desiredVersion: integer("desired_version").notNull().default(0),
  desiredHash: text("desired_hash").notNull().default(""),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
});

/** Each listener deployment's latest pods report and its serving state (migration 0032). */
export const deploymentPods = pgTable("deployment_pods", {
  deploymentId: uuid("deployment_id").primaryKey(),
  listenerId: uuid("listener_id")
    .notNull()
    .references(() => listeners.id),
  revisionId: uuid("revision_id").notNull(),
  pods: jsonb("pods").$type<unknown[]>().notNull().default([]),
  serving: boolean("serving").notNull(),
  reason: text("reason"),
  unhealthySince: ts("unhealthy_since"),
  unhealthyReason: text("unhealthy_reason"),
  reportedAt: ts("reported_at").notNull().defaultNow(),
});
