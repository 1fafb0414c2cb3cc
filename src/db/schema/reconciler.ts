import { bigserial, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { revisions } from "./deployments.ts";

/** Build and deploy output of a revision, capped per revision and stream (oldest dropped first). */
export const revisionLogs = pgTable("revision_logs", {
  id: bigserial("id", { mode: "number" }).primaryKey(),
  revisionId: uuid("revision_id")
    .notNull()
    .references(() => revisions.id),
  stream: text("stream").$type<"build" | "deploy">().notNull(),
  at: timestamp("at", { withTimezone: true }).notNull(),
  line: text("line").notNull(),
});
