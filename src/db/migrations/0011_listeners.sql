-- Listeners: outbound-only agents that run a workspace's deployments on a Kubernetes cluster.
CREATE TABLE listeners (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  compute_type text NOT NULL DEFAULT 'k8s' CHECK (compute_type IN ('k8s')),
  compute_id text NOT NULL,
  compute_config jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- User-chosen label (the anchor's `version`), not the desired-state version below.
  version text,
  -- Last desired poll or status report: CONNECTED while younger than SLIPWAY_LISTENER_TIMEOUT_S.
  last_seen_at timestamptz,
  -- The desired-state version the listener polls, bumped when the hash of its (deployment,
  -- revision) pairs changes.
  desired_version integer NOT NULL DEFAULT 0,
  desired_hash text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT listeners_workspace_compute_key UNIQUE (workspace_id, compute_id)
);
CREATE INDEX listeners_list_idx ON listeners (workspace_id, created_at DESC, id DESC);

-- Listener-scoped API keys: role 'listener' exactly when listener_id is set.
ALTER TABLE api_keys ADD COLUMN listener_id uuid REFERENCES listeners(id) ON DELETE CASCADE;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_role_check;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_role_check
  CHECK (role IN ('admin', 'member', 'viewer', 'listener') AND ((role = 'listener') = (listener_id IS NOT NULL)));

-- A revision served by a listener (copied from its deployment: runtimeNameOf reads it), the image
-- built and pushed for it (sources that are not images), and the listener's last report of it.
ALTER TABLE revisions ADD COLUMN listener_id uuid REFERENCES listeners(id);
ALTER TABLE revisions ADD COLUMN image_ref text;
ALTER TABLE revisions ADD COLUMN remote_state text;
ALTER TABLE revisions ADD COLUMN remote_reason text;
CREATE INDEX revisions_listener_idx ON revisions (listener_id) WHERE listener_id IS NOT NULL;
