-- Responses stored ready to send (issue 13): each deployment and revision keeps its API record as
-- JSON text, computed by PostgreSQL whenever the row changes (generated columns), so reads send
-- bytes as they are and a list page is one string_agg. The functions below are the one definition
-- of both records (key order as the interface lists them; secret values masked).

-- Helpers, declared STABLE (what they are) so the planner inlines them into the record
-- functions below, which are plain expressions: no per-row function executor, no subquery.
-- ISO 8601 in UTC with milliseconds, as the API prints every timestamp.
CREATE FUNCTION slipway_iso(t timestamptz) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- A JSON string as itself, anything else as SQL NULL (null in the record).
CREATE FUNCTION slipway_str(v jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT CASE WHEN jsonb_typeof(v) = 'string' THEN v END $$;

-- SourceRevisionConfig: its five keys, in order, strings or null.
CREATE FUNCTION slipway_revision_config(c jsonb) RETURNS json LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT json_build_object(
  'repo_ref', slipway_str(c->'repo_ref'),
  'framework_config_path', slipway_str(c->'framework_config_path'),
  'image_uri', slipway_str(c->'image_uri'),
  'source_tarball_path', slipway_str(c->'source_tarball_path'),
  'repo_commit_sha', slipway_str(c->'repo_commit_sha')) $$;

-- What a deployment's record shows of its latest revision, kept beside latest_revision_id by the
-- deployments store: {source_revision_config, resource_spec, secret_references, secrets}, the
-- secrets as the record lists them (names, values masked).
ALTER TABLE deployments ADD COLUMN latest_revision_content jsonb;
UPDATE deployments d SET latest_revision_content = jsonb_build_object(
    'source_revision_config', r.source_revision_config,
    'resource_spec', r.resource_spec,
    'secret_references', r.secret_references,
    'secrets', coalesce((SELECT jsonb_agg(jsonb_build_object('name', s.name, 'value', '********') ORDER BY s.position)
                           FROM revision_secrets s WHERE s.revision_id = r.id), '[]'::jsonb))
  FROM revisions r WHERE r.id = d.latest_revision_id;

-- The record functions are IMMUTABLE so that generated columns may call them: their output depends
-- on their arguments only (to_char with this pattern and json output of text, uuid and jsonb do
-- not depend on any setting). PL/pgSQL evaluates the one expression on its fast path.
CREATE FUNCTION slipway_deployment_record(
  d_id uuid, d_name text, d_source text, d_type text, sc jsonb, d_image_version text, d_status text,
  d_latest uuid, d_active uuid, d_workspace uuid, d_created timestamptz, d_updated timestamptz, latest jsonb
) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$ BEGIN RETURN json_build_object(
  'name', d_name,
  'source', d_source,
  'source_config', json_build_object(
    'integration_id', sc->'integration_id',
    'repo_url', sc->'repo_url',
    'build_on_push', sc->'build_on_push',
    'custom_url', sc->'custom_url',
    'resource_spec', latest->'resource_spec',
    'listener_id', sc->'listener_id',
    'listener_config', sc->'listener_config',
    'install_command', sc->'install_command',
    'build_command', sc->'build_command'),
  'source_revision_config', slipway_revision_config(latest->'source_revision_config'),
  'secrets', coalesce(latest->'secrets', '[]'::jsonb),
  'id', d_id,
  'tenant_id', d_workspace,
  'created_at', slipway_iso(d_created),
  'updated_at', slipway_iso(d_updated),
  'status', d_status,
  'latest_revision_id', d_latest,
  'active_revision_id', d_active,
  'secret_references', latest->'secret_references',
  'image_version', d_image_version,
  'deployment_type', d_type)::text; END $$;

-- The record and its strong ETag (a hash of the record: any change of any field changes it).
ALTER TABLE deployments
  ADD COLUMN record text GENERATED ALWAYS AS (slipway_deployment_record(
    id, name, source, deployment_type, source_config, image_version, status, latest_revision_id,
    active_revision_id, workspace_id, created_at, updated_at, latest_revision_content)) STORED,
  ADD COLUMN etag text GENERATED ALWAYS AS ('"' || md5(slipway_deployment_record(
    id, name, source, deployment_type, source_config, image_version, status, latest_revision_id,
    active_revision_id, workspace_id, created_at, updated_at, latest_revision_content)) || '"') STORED;

CREATE FUNCTION slipway_revision_record(
  r_id uuid, r_created timestamptz, r_updated timestamptz, r_status text, r_source text, config jsonb,
  r_deployment uuid, history jsonb, message text
) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$ BEGIN RETURN json_build_object(
  'id', r_id,
  'created_at', slipway_iso(r_created),
  'updated_at', slipway_iso(r_updated),
  'status', r_status,
  'source', r_source,
  'source_revision_config', slipway_revision_config(config),
  'deployment_id', r_deployment,
  'status_history', history,
  'status_message', message)::text; END $$;

ALTER TABLE revisions ADD COLUMN record text GENERATED ALWAYS AS (slipway_revision_record(
  id, created_at, updated_at, status, source, source_revision_config, deployment_id, status_history,
  status_message)) STORED;

-- Secrets written from now on are bound to their deployment and name (not their row), so a new
-- revision copies an unchanged value's envelope as it is. NULL: an older row, bound to its id.
ALTER TABLE revision_secrets ADD COLUMN deployment_id uuid;

-- List filters at 1M rows: a tag filter is one EXISTS per tag key, probing deployment_tags by
-- (deployment_id, tag_value_id) (its primary key) or, from the value's side, deployment_tags_value_idx.
-- Several statuses at once walk the list order and test the status: no index needed beyond it.
