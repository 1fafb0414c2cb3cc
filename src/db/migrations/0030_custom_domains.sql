-- Custom domains of deployments (docs/domains.md): a hostname outside SLIPWAY_APPS_DOMAIN that
-- serves one deployment once a DNS TXT record `_slipway.<hostname>` holds its token. A hostname is
-- claimed once on the whole server (one edge serves it), hence the unique index. Written by
-- resources/domains/store.ts only.
CREATE TABLE custom_domains (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
  deployment_id uuid NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  hostname text NOT NULL,
  token text NOT NULL,
  -- pending (not seen yet; the last failed check's reason in verification_reason) or verified.
  verification_status text NOT NULL DEFAULT 'pending' CHECK (verification_status IN ('pending', 'verified')),
  verification_reason text,
  verified_at timestamptz,
  -- Back-off of the pending checks: failed checks so far, and when the next one is due.
  failed_checks integer NOT NULL DEFAULT 0,
  next_check_at timestamptz NOT NULL DEFAULT now(),
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT custom_domains_hostname_key UNIQUE (hostname)
);
CREATE INDEX custom_domains_deployment_idx ON custom_domains (deployment_id, created_at, id);
CREATE INDEX custom_domains_due_idx ON custom_domains (next_check_at) WHERE verification_status = 'pending';
