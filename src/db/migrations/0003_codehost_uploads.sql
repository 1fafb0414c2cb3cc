-- Code-host integrations (organization scoped) and uploaded source tarballs (DESIGN §3).
CREATE TABLE integrations (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('local_git', 'github')),
  -- local_git: {"path": "<real path>"}; github: {"installation_id": <integer>}
  config jsonb NOT NULL,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT integrations_org_kind_config_key UNIQUE (organization_id, kind, config)
);
CREATE INDEX integrations_org_idx ON integrations (organization_id, created_at, id);

-- One signed upload URL; the tarball lives in upload_chunks so every replica can read it.
CREATE TABLE uploads (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  deployment_id uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  source_tarball_path text NOT NULL,
  -- SHA-256 of the URL's random token: the token itself is never stored.
  token_hash text NOT NULL,
  expires_at timestamptz NOT NULL,
  -- Set when a PUT starts: a second PUT is refused while one runs or after one completed.
  started_at timestamptz,
  completed_at timestamptz,
  size_bytes bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT uploads_source_tarball_path_key UNIQUE (source_tarball_path)
);
CREATE INDEX uploads_deployment_idx ON uploads (deployment_id, created_at);

CREATE TABLE upload_chunks (
  upload_id uuid NOT NULL REFERENCES uploads(id) ON DELETE CASCADE,
  seq integer NOT NULL,
  data bytea NOT NULL,
  PRIMARY KEY (upload_id, seq)
);
