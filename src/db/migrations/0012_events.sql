-- Outgoing events (webhooks, the event stream) and the audit log.

-- One row per event, written in the transaction of the change it reports. `seq` is the stream's
-- event id: given after commit, in commit order, by one sequencer at a time (resources/events/store.ts),
-- so a follower that read up to N never later sees an event below N appear.
CREATE TABLE events (
  pk bigserial PRIMARY KEY,
  id uuid NOT NULL UNIQUE,
  seq bigint UNIQUE,
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  type text NOT NULL,
  -- The exact JSON sent to receivers and on the stream: byte for byte the same on every attempt.
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_unsequenced_idx ON events (pk) WHERE seq IS NULL;
CREATE INDEX events_workspace_seq_idx ON events (workspace_id, seq);
CREATE INDEX events_created_idx ON events (created_at);

-- Receivers of a workspace's events.
CREATE TABLE webhooks (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  url text NOT NULL,
  events jsonb NOT NULL,
  description text NOT NULL DEFAULT '',
  enabled boolean NOT NULL DEFAULT true,
  -- Envelope (crypto/envelope.ts) of the `whsec_…` signing secret, bound to the row id.
  secret_enc text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_workspace_idx ON webhooks (workspace_id, created_at);

-- One event for one webhook: a durable queue, leased like revisions (SKIP LOCKED).
CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- Queue order: a webhook's deliveries go out one after the other, oldest first.
  pk bigserial NOT NULL UNIQUE,
  webhook_id uuid NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
  event_pk bigint NOT NULL REFERENCES events(pk) ON DELETE CASCADE,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  -- Retries stop after this (24 hours after the event, or after a redeliver).
  give_up_at timestamptz NOT NULL,
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (webhook_id, pk) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, pk);

-- Each try of a delivery: what the receiver answered and how long it took.
CREATE TABLE webhook_attempts (
  id bigserial PRIMARY KEY,
  delivery_id uuid NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  at timestamptz NOT NULL,
  status_code integer,
  error text,
  duration_ms integer NOT NULL
);
CREATE INDEX webhook_attempts_delivery_idx ON webhook_attempts (delivery_id, id);

-- Every write through the API: who, what, when, and how it ended. Never bodies or secrets.
CREATE TABLE audit_log (
  id uuid PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  workspace_id uuid,
  key_id uuid,
  key_description text NOT NULL DEFAULT '',
  method text NOT NULL,
  route text NOT NULL,
  action text NOT NULL,
  resource_type text NOT NULL,
  resource_id text,
  -- Null while the change's transaction has committed but the response is not yet sent.
  status_code integer,
  request_id text NOT NULL
);
CREATE INDEX audit_log_org_at_idx ON audit_log (organization_id, at DESC, id DESC);
CREATE INDEX audit_log_at_idx ON audit_log (at);
