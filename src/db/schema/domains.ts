import { integer, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

const ts = (name: string) => timestamp(name, { withTimezone: true });

/** Custom domains of deployments (migration 0030; written by resources/domains/store.ts only). */
export const customDomains = pgTable("custom_domains", {
  id: uuid("id").primaryKey().defaultRandom(),
  workspaceId: uuid("workspace_id").notNull(),
  deploymentId: uuid("deployment_id").notNull(),
  hostname: text("hostname").notNull(),
  token: text("token").notNull(),
  verificationStatus: text("verification_status").notNull().default("pending"),
  verificationReason: text("verification_reason"),
  verifiedAt: ts("verified_at"),
  failedChecks: integer("failed_checks").notNull().default(0),
  nextCheckAt: ts("next_check_at").notNull().defaultNow(),
  createdAt: ts("created_at").notNull().defaultNow(),
});
