-- OAuth providers (organization scoped), authorization flows in progress, and end users' tokens.
-- Secrets (*_enc) are envelopes bound to their row id (src/crypto): ids are chosen by the app.
CREATE TABLE oauth_providers (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  provider_id text NOT NULL,
  name text NOT NULL,
  client_id text NOT NULL,
  client_secret_enc text,
  auth_url text NOT NULL,
  token_url text NOT NULL,
  uses_pkce boolean NOT NULL,
  code_challenge_method text CHECK (code_challenge_method IN ('S256', 'plain')),
  token_endpoint_auth_method text NOT NULL DEFAULT 'client_secret_post'
    CHECK (token_endpoint_auth_method IN ('client_secret_post', 'client_secret_basic', 'none')),
  provider_type text,
  mcp_server_url text,
  is_dynamic_client boolean NOT NULL DEFAULT false,
  -- The authorization server's issuer identifier when it was discovered (mcp-discover).
  issuer text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT oauth_providers_org_provider_id_key UNIQUE (organization_id, provider_id),
  CONSTRAINT oauth_providers_pkce_method_check CHECK (uses_pkce = (code_challenge_method IS NOT NULL))
);
CREATE INDEX oauth_providers_list_idx ON oauth_providers (organization_id, created_at, id);

-- One token set per (provider, user, agent); agent_id '' stands for "no agent" so the key is plain.
CREATE TABLE oauth_tokens (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  provider_ref uuid NOT NULL REFERENCES oauth_providers(id) ON DELETE CASCADE,
  user_id text NOT NULL,
  agent_id text NOT NULL DEFAULT '',
  scopes text[] NOT NULL DEFAULT '{}',
  token_type text NOT NULL,
  access_token_enc text NOT NULL,
  refresh_token_enc text,
  -- Issuer the tokens were validated against, reused when refreshing.
  issuer text NOT NULL,
  expires_at timestamptz,
  -- When the current access token was obtained: the refresh margin is a share of its lifetime.
  issued_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT oauth_tokens_subject_key UNIQUE (provider_ref, user_id, agent_id)
);
CREATE INDEX oauth_tokens_user_idx ON oauth_tokens (organization_id, user_id, created_at, id);

CREATE TABLE oauth_flows (
  id uuid PRIMARY KEY,
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  provider_ref uuid NOT NULL REFERENCES oauth_providers(id) ON DELETE CASCADE,
  user_id text NOT NULL,
  agent_id text NOT NULL DEFAULT '',
  scopes text[] NOT NULL DEFAULT '{}',
  -- SHA-256 of the state: the value itself exists only in the authorization URL.
  state_hash text NOT NULL,
  code_verifier_enc text,
  redirect_uri text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'completed', 'failed')),
  failure_reason text,
  token_ref uuid REFERENCES oauth_tokens(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  consumed_at timestamptz,
  finished_at timestamptz,
  CONSTRAINT oauth_flows_state_hash_key UNIQUE (state_hash)
);
CREATE INDEX oauth_flows_expires_idx ON oauth_flows (expires_at);
