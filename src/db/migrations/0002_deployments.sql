-- Deployments, their immutable revisions, revision secrets, tracing projects, tags, idempotency.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE deployments (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name text NOT NULL,
  source text NOT NULL,
  deployment_type text NOT NULL DEFAULT 'dev' CHECK (deployment_type IN ('dev_free', 'dev', 'prod')),
  -- SourceConfig fields that change in place or never (not resource_spec: that is per revision).
  source_config jsonb NOT NULL DEFAULT '{}'::jsonb,
  image_version text,
  status text NOT NULL DEFAULT 'AWAITING_DATABASE',
  remote_reconciled boolean NOT NULL DEFAULT false,
  latest_revision_id uuid,
  active_revision_id uuid,
  -- Per-deployment database (reconciler): name of the database/role when provisioned.
  database_name text,
  revision_count integer NOT NULL DEFAULT 0,
  -- Values given at create when no revision could be made yet (internal_source without a tarball,
  -- internal_docker without an image): {source_revision_config, resource_spec}; the first revision
  -- starts from them. The secrets are one envelope of their JSON list (crypto/registry.ts).
  pending_revision jsonb,
  pending_secrets_enc text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT deployments_workspace_name_key UNIQUE (workspace_id, name)
);
-- List order (newest first, ties by id) within a workspace, and the filters.
CREATE INDEX deployments_list_idx ON deployments (workspace_id, created_at DESC, id DESC);
CREATE INDEX deployments_status_idx ON deployments (workspace_id, status, created_at DESC, id DESC);
CREATE INDEX deployments_type_idx ON deployments (workspace_id, deployment_type, created_at DESC, id DESC);
CREATE INDEX deployments_image_version_idx ON deployments (workspace_id, image_version, created_at DESC, id DESC);
CREATE INDEX deployments_remote_idx ON deployments (workspace_id, remote_reconciled, created_at DESC, id DESC);
CREATE INDEX deployments_name_trgm_idx ON deployments USING gin (lower(name) gin_trgm_ops);

CREATE TABLE revisions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  deployment_id uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  -- Per-deployment sequence: newest-first order and "is there a newer revision" checks.
  seq integer NOT NULL,
  status text NOT NULL,
  source text NOT NULL,
  -- repo_ref, framework_config_path, image_uri, source_tarball_path, repo_commit_sha
  source_revision_config jsonb NOT NULL DEFAULT '{}'::jsonb,
  resource_spec jsonb,
  secret_references jsonb,
  -- The in-place SourceConfig fields as they were when the revision was made (build commands).
  build_config jsonb NOT NULL DEFAULT '{}'::jsonb,
  status_history jsonb NOT NULL DEFAULT '[]'::jsonb,
  status_message text,
  interrupt_requested boolean NOT NULL DEFAULT false,
  -- Reconciler lease: which worker drives the revision, until when.
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT revisions_deployment_seq_key UNIQUE (deployment_id, seq)
);
CREATE INDEX revisions_list_idx ON revisions (deployment_id, seq DESC);
-- Work queue: revisions not yet terminal.
CREATE INDEX revisions_pending_idx ON revisions (status, lease_expires_at)
  WHERE status NOT IN ('DEPLOYED', 'CREATE_FAILED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SKIPPED', 'INTERRUPTED');

ALTER TABLE deployments
  ADD CONSTRAINT deployments_latest_revision_fk FOREIGN KEY (latest_revision_id) REFERENCES revisions(id) ON DELETE SET NULL,
  ADD CONSTRAINT deployments_active_revision_fk FOREIGN KEY (active_revision_id) REFERENCES revisions(id) ON DELETE SET NULL;

-- A revision's secrets; each value is an envelope (crypto/envelope.ts) bound to the row id.
CREATE TABLE revision_secrets (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  revision_id uuid NOT NULL REFERENCES revisions(id) ON DELETE CASCADE,
  name text NOT NULL,
  value_enc text NOT NULL,
  position integer NOT NULL,
  CONSTRAINT revision_secrets_name_key UNIQUE (revision_id, name)
);

CREATE TABLE tracing_projects (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  name text NOT NULL,
  deployment_id uuid REFERENCES deployments(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT tracing_projects_workspace_name_key UNIQUE (workspace_id, name)
);
CREATE INDEX tracing_projects_deployment_idx ON tracing_projects (deployment_id);

CREATE TABLE tag_keys (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  key text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT tag_keys_workspace_key_key UNIQUE (workspace_id, key)
);

CREATE TABLE tag_values (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  tag_key_id uuid NOT NULL REFERENCES tag_keys(id) ON DELETE CASCADE,
  value text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT tag_values_key_value_key UNIQUE (tag_key_id, value)
);

CREATE TABLE deployment_tags (
  deployment_id uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  tag_value_id uuid NOT NULL REFERENCES tag_values(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (deployment_id, tag_value_id)
);
CREATE INDEX deployment_tags_value_idx ON deployment_tags (tag_value_id, deployment_id);

-- Replays of POST /v2/deployments with the same Idempotency-Key within 24 h.
CREATE TABLE idempotency_keys (
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  key text NOT NULL,
  request_hash text NOT NULL,
  status_code integer,
  response jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, key)
);
