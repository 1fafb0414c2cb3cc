import { bigint, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";

const ts = (name: string) => timestamp(name, { withTimezone: true });

/** One row per scheduled backup (migration 0029; written by backup/store.ts only). */
export const scheduledBackups = pgTable("scheduled_backups", {
  id: uuid("id").primaryKey(),
  startedAt: ts("started_at").notNull().defaultNow(),
  finishedAt: ts("finished_at"),
  file: text("file").notNull(),
  rows: bigint("rows", { mode: "number" }),
  error: text("error"),
});
