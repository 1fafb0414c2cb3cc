-- Reconciler: revision logs, retry accounting, deletion leases, per-deployment database credentials.
CREATE TABLE revision_logs (
  id bigserial PRIMARY KEY,
  revision_id uuid NOT NULL REFERENCES revisions(id) ON DELETE CASCADE,
  stream text NOT NULL CHECK (stream IN ('build', 'deploy')),
  at timestamptz NOT NULL,
  line text NOT NULL
);
-- Reads (oldest first, per stream) and the cap (drop the oldest beyond N per revision and stream).
CREATE INDEX revision_logs_revision_idx ON revision_logs (revision_id, stream, id);

-- Faults (not build/deploy failures) retried with back-off; after a few the revision fails.
ALTER TABLE revisions ADD COLUMN attempts integer NOT NULL DEFAULT 0;

ALTER TABLE deployments
  -- Envelope (crypto/envelope.ts) of the app database role's password, bound to the row id.
  ADD COLUMN database_password_enc text,
  -- Lease on a deployment's teardown (AWAITING_DELETE), like the revisions' work lease.
  ADD COLUMN reconcile_owner text,
  ADD COLUMN reconcile_expires_at timestamptz;
CREATE INDEX deployments_awaiting_delete_idx ON deployments (reconcile_expires_at)
  WHERE status = 'AWAITING_DELETE';
