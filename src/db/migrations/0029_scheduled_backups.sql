-- One row per scheduled backup (SLIPWAY_BACKUP_DIR, docs/operations.md#scheduled-backups): the
-- reconciler's leader inserts it under the leader lock only when none was started within the
-- period, so servers sharing a database take one backup a period between them. Written by
-- backup/store.ts only.
CREATE TABLE scheduled_backups (
  id uuid PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  file text NOT NULL,
  rows bigint,
  error text
);
CREATE INDEX scheduled_backups_started_idx ON scheduled_backups (started_at);
