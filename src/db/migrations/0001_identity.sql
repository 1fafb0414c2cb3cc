-- Identity and tenancy: organizations own workspaces and API keys (DESIGN §3).
CREATE TABLE organizations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name text NOT NULL,
  default_workspace_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT organizations_name_key UNIQUE (name)
);

CREATE TABLE workspaces (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT workspaces_org_name_key UNIQUE (organization_id, name)
);

ALTER TABLE organizations
  ADD CONSTRAINT organizations_default_workspace_fk
  FOREIGN KEY (default_workspace_id) REFERENCES workspaces(id) ON DELETE SET NULL;

CREATE TABLE api_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  workspace_id uuid REFERENCES workspaces(id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
  is_system boolean NOT NULL DEFAULT false,
  description text NOT NULL DEFAULT '',
  prefix text NOT NULL,
  key_hash text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz,
  CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash)
);
CREATE INDEX api_keys_org_idx ON api_keys (organization_id, created_at);
