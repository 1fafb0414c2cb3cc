-- The local data plane's services (issue 11): each deployment's Redis password, when it last served
-- a request (UNUSED), and a database storage note of the leader's health pass.
ALTER TABLE deployments
  -- Envelope (crypto/envelope.ts) of the password of the deployment's own Redis, bound to the row id.
  ADD COLUMN redis_password_enc text,
  -- The last request the apps router passed to it (any Slipway process); null: none yet.
  ADD COLUMN last_request_at timestamptz,
  -- Why its database is over `db_storage_gi` (the leader's check); null while it is within it.
  ADD COLUMN storage_note text;
