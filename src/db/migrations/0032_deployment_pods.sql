-- The latest pods report of each deployment a listener runs (POST /v2/listeners/{id}/status,
-- docs/kubernetes.md): what GET /v2/deployments/{id}/processes lists for it, and whether its
-- active revision serves. `unhealthy_since` is set when the active revision stops serving (a
-- deployment.unhealthy event) and cleared when it serves again (deployment.healthy), so each
-- transition is emitted once. Written by resources/listeners/store.ts only.
CREATE TABLE deployment_pods (
  deployment_id uuid PRIMARY KEY REFERENCES deployments(id) ON DELETE CASCADE,
  listener_id uuid NOT NULL REFERENCES listeners(id) ON DELETE CASCADE,
  -- The revision the listener runs for the deployment (its desired one) when it reported.
  revision_id uuid NOT NULL,
  pods jsonb NOT NULL DEFAULT '[]'::jsonb,
  serving boolean NOT NULL,
  reason text,
  unhealthy_since timestamptz,
  unhealthy_reason text,
  reported_at timestamptz NOT NULL DEFAULT now()
);
