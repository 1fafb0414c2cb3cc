-- Several tokens per (provider, user, agent) — one per account the user connects — with one
-- default among them; a label and the workspace the token was obtained in. Agent connections
-- link a workspace's agent to one stored token per provider.
ALTER TABLE oauth_tokens DROP CONSTRAINT oauth_tokens_subject_key;
ALTER TABLE oauth_tokens
  ADD COLUMN is_default boolean NOT NULL DEFAULT false,
  ADD COLUMN provider_account_label text,
  ADD COLUMN workspace_id uuid REFERENCES workspaces(id) ON DELETE SET NULL;
-- Until now each subject had exactly one token: it is that subject's default.
UPDATE oauth_tokens SET is_default = true;
CREATE INDEX oauth_tokens_subject_idx ON oauth_tokens (provider_ref, user_id, agent_id);
CREATE UNIQUE INDEX oauth_tokens_default_key ON oauth_tokens (provider_ref, user_id, agent_id) WHERE is_default;
CREATE INDEX oauth_tokens_workspace_idx ON oauth_tokens (workspace_id) WHERE workspace_id IS NOT NULL;

-- What a flow produces: a new token, or new grants for the token it names (re-consent).
ALTER TABLE oauth_flows
  ADD COLUMN target_token_ref uuid REFERENCES oauth_tokens(id) ON DELETE SET NULL,
  ADD COLUMN make_default boolean NOT NULL DEFAULT true,
  ADD COLUMN workspace_id uuid REFERENCES workspaces(id) ON DELETE SET NULL;

CREATE TABLE agent_connections (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  agent_id text NOT NULL,
  oauth_token_ref uuid NOT NULL REFERENCES oauth_tokens(id) ON DELETE CASCADE,
  -- The token's provider, copied so that an agent has at most one connection per provider.
  provider_ref uuid NOT NULL REFERENCES oauth_providers(id) ON DELETE CASCADE,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT agent_connections_agent_provider_key UNIQUE (workspace_id, agent_id, provider_ref)
);
CREATE INDEX agent_connections_token_idx ON agent_connections (oauth_token_ref);
