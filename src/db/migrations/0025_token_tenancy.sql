-- OAuth tokens belong to the tenant they were obtained in: the organization, and the workspace of a
-- workspace-bound key. Not to the API key that obtained them (rotating a key keeps them), nor to
-- the end user: user_id is a label that narrows. A tenant's own tokens (authenticate without
-- user_id) are labelled 'organization:<id>' or 'workspace:<id>'. Flows carry the tenant they store
-- their token for. A workspace that goes takes its tokens and flows with it.
ALTER TABLE oauth_tokens ADD COLUMN tenant_workspace_id uuid REFERENCES workspaces(id) ON DELETE CASCADE;
ALTER TABLE oauth_flows ADD COLUMN tenant_workspace_id uuid REFERENCES workspaces(id) ON DELETE CASCADE;

-- Defaults are per tenant from now on; the old index would also refuse the relabelling below.
DROP INDEX oauth_tokens_default_key;

-- A key's own tokens ('apikey:<key id>') become its tenant's own: the key's workspace if it is
-- bound to one, else the organization, under that tenant's label, so that every key of the tenant
-- (a rotated key's successor too) finds them the way the key found them. Tokens of a key that no
-- longer exists keep their label and stay the organization's.
UPDATE oauth_tokens t
SET tenant_workspace_id = k.workspace_id,
    user_id = CASE WHEN k.workspace_id IS NULL THEN 'organization:' || t.organization_id::text
                   ELSE 'workspace:' || k.workspace_id::text END
FROM api_keys k
WHERE t.user_id LIKE 'apikey:%' AND k.id::text = substr(t.user_id, 8)
  AND k.organization_id = t.organization_id;
UPDATE oauth_flows f
SET tenant_workspace_id = k.workspace_id,
    user_id = CASE WHEN k.workspace_id IS NULL THEN 'organization:' || f.organization_id::text
                   ELSE 'workspace:' || k.workspace_id::text END
FROM api_keys k
WHERE f.user_id LIKE 'apikey:%' AND k.id::text = substr(f.user_id, 8)
  AND k.organization_id = f.organization_id;
-- Tokens of named end users stay the organization's (tenant_workspace_id NULL). Until now any key
-- of the organization could act for a named user, and the organization's tenant keeps exactly that
-- for its organization-level keys. Which key obtained them was never recorded, so a
-- workspace-bound key's application has its users authorize once more.

-- Several keys of one tenant may each have had a default for a provider and agent: the most
-- recently renewed stays the default (the one authenticate handed out last), the others remain
-- as further accounts.
UPDATE oauth_tokens t SET is_default = false
FROM (
  SELECT id, row_number() OVER (
    PARTITION BY provider_ref, tenant_workspace_id, user_id, agent_id ORDER BY updated_at DESC, id
  ) AS n
  FROM oauth_tokens WHERE is_default
) d
WHERE t.id = d.id AND d.n > 1;

-- NULL (the organization) counts as one tenant: COALESCE, since NULLS NOT DISTINCT needs PostgreSQL 15.
CREATE UNIQUE INDEX oauth_tokens_default_key ON oauth_tokens
  (provider_ref, (COALESCE(tenant_workspace_id, '00000000-0000-0000-0000-000000000000'::uuid)), user_id, agent_id)
  WHERE is_default;
CREATE INDEX oauth_tokens_tenant_idx ON oauth_tokens (organization_id, tenant_workspace_id, created_at, id);
