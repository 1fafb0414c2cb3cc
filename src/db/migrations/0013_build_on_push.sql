-- Build on push: code-host webhook secrets, the deliveries already handled, and the branch heads
-- the local_git poller last saw. resources/integrations/store.ts owns all three.

-- An envelope (crypto/envelope.ts) bound to the integration's id; null until one is generated
-- (integrations made before this migration get one when an admin rotates it).
ALTER TABLE integrations ADD COLUMN webhook_secret_enc text;

-- Delivery ids (X-GitHub-Delivery) per integration: a redelivered push does nothing. Kept for a
-- bounded time (the store prunes old ones as new ones arrive).
CREATE TABLE codehost_deliveries (
  integration_id uuid NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
  delivery_id text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (integration_id, delivery_id)
);
CREATE INDEX codehost_deliveries_received_idx ON codehost_deliveries (received_at);

-- The head of each watched branch of a local_git repository, as the poller last saw it.
CREATE TABLE local_git_heads (
  integration_id uuid NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
  repo_url text NOT NULL,
  branch text NOT NULL,
  sha text NOT NULL,
  seen_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (integration_id, repo_url, branch)
);
