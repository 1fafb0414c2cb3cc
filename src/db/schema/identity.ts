import { boolean, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

const createdAt = () => timestamp("created_at", { withTimezone: true }).notNull().defaultNow();

export const organizations = pgTable("organizations", {
  id: uuid("id").primaryKey().defaultRandom(),
  name: text("name").notNull(),
  defaultWorkspaceId: uuid("default_workspace_id"),
  createdAt: createdAt(),
});

export const workspaces = pgTable("workspaces", {
  id: uuid("id").primaryKey().defaultRandom(),
  organizationId: uuid("organization_id")
    .notNull()
    .references(() => organizations.id),
  name: text("name").notNull(),
  createdAt: createdAt(),
});

export const apiKeys = pgTable("api_keys", {
  id: uuid("id").primaryKey().defaultRandom(),
  organizationId: uuid("organization_id")
    .notNull()
    .references(() => organizations.id),
  workspaceId: uuid("workspace_id").references(() => workspaces.id),
  role: text("role").$type<Role>().notNull(),
  isSystem: boolean("is_system").notNull().default(false),
  description: text("description").notNull().default(""),
  prefix: text("prefix").notNull(),
  keyHash: text("key_hash").notNull(),
  createdAt: createdAt(),
  revokedAt: timestamp("revoked_at", { withTimezone: true }),
  /** Set exactly for role `listener` (migration 0011): the listener the key acts for. */
  listenerId: uuid("listener_id"),
});

/** `listener` keys reach only their listener's desired-state and status routes. */
export type Role = "admin" | "member" | "viewer" | "listener";
