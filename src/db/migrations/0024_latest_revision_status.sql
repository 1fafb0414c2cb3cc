-- What users need to see of a deployment (issue 25): the state of its latest revision, beside the
-- deployment's own status (which is the hosted service's and stays READY while a newer revision
-- fails). Stored on the deployment row so a list needs no extra request and can filter on it, and
-- written with every status change of that revision: the revision writer sets QUEUED when it points
-- the deployment at a new revision (deployments/store.ts, commitRevision); every later move of that
-- revision's status, by whichever writer, reaches the row through the trigger below.
--
-- Each revision record also gains `number`: its 1-based creation order in its deployment (`seq`),
-- so "#5" means the same revision in the console, the CLI and the API.
ALTER TABLE deployments ADD COLUMN latest_revision_status text;
UPDATE deployments d SET latest_revision_status = r.status FROM revisions r WHERE r.id = d.latest_revision_id;

CREATE FUNCTION slipway_latest_revision_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE deployments SET latest_revision_status = NEW.status
   WHERE id = NEW.deployment_id AND latest_revision_id = NEW.id
     AND latest_revision_status IS DISTINCT FROM NEW.status;
  RETURN NULL;
END $$;

CREATE TRIGGER revisions_latest_status AFTER UPDATE OF status ON revisions
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION slipway_latest_revision_status();

-- The records, redefined with the new fields. The generated columns are made again from the new
-- functions; the read cache's triggers (0021) name `record` in their WHEN clauses, so they go with
-- the old columns and are made again as 0021 left them.
DROP TRIGGER deployments_notify_update ON deployments;
DROP TRIGGER revisions_notify_update ON revisions;
-- `status_message` holds the reason alone from now on (clients print "<STATUS>: <message>" and
-- showed the status twice); stored messages lose their "<STATUS>: " prefix, and a bare status
-- becomes the sentence reconciler/states.ts says for it.
UPDATE revisions SET status_message = CASE
    WHEN status_message LIKE status || ': %' THEN substr(status_message, length(status) + 3)
    WHEN status = 'CREATE_FAILED' THEN 'The source could not be resolved.'
    WHEN status = 'BUILD_FAILED' THEN 'The build failed.'
    WHEN status = 'DEPLOY_FAILED' THEN 'The app did not start.'
    WHEN status = 'UNKNOWN' THEN 'The data plane stopped reporting.'
    WHEN status = 'INTERRUPTED' THEN 'Interrupted by request.'
    WHEN status = 'SKIPPED' THEN 'A newer revision was queued before this one started.'
    ELSE status_message END
 WHERE status_message LIKE status || ': %' OR status_message = status;

ALTER TABLE deployments DROP COLUMN record;
ALTER TABLE revisions DROP COLUMN record;
DROP FUNCTION slipway_deployment_record(uuid, text, text, text, jsonb, text, text, uuid, uuid, uuid,
  timestamptz, timestamptz, jsonb);
DROP FUNCTION slipway_revision_record(uuid, timestamptz, timestamptz, text, text, jsonb, uuid, jsonb, text);

CREATE FUNCTION slipway_deployment_record(
  d_id uuid, d_name text, d_source text, d_type text, sc jsonb, d_image_version text, d_status text,
  d_latest uuid, d_latest_status text, d_active uuid, d_workspace uuid, d_created timestamptz,
  d_updated timestamptz, latest jsonb
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
  'latest_revision_status', d_latest_status,
  'active_revision_id', d_active,
  'secret_references', latest->'secret_references',
  'image_version', d_image_version,
  'deployment_type', d_type)::text; END $$;

ALTER TABLE deployments ADD COLUMN record text GENERATED ALWAYS AS (slipway_deployment_record(
  id, name, source, deployment_type, source_config, image_version, status, latest_revision_id,
  latest_revision_status, active_revision_id, workspace_id, created_at, updated_at,
  latest_revision_content)) STORED;

CREATE FUNCTION slipway_revision_record(
  r_id uuid, r_number int, r_created timestamptz, r_updated timestamptz, r_status text, r_source text,
  config jsonb, r_deployment uuid, history jsonb, message text
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
  'status_message', message,
  'number', r_number)::text; END $$;

ALTER TABLE revisions ADD COLUMN record text GENERATED ALWAYS AS (slipway_revision_record(
  id, seq, created_at, updated_at, status, source, source_revision_config, deployment_id, status_history,
  status_message)) STORED;

CREATE TRIGGER deployments_notify_update AFTER UPDATE ON deployments
  FOR EACH ROW WHEN ((OLD.record IS DISTINCT FROM NEW.record
                      OR OLD.remote_reconciled IS DISTINCT FROM NEW.remote_reconciled)
                     AND current_setting('slipway.announced', true) IS DISTINCT FROM NEW.id::text)
  EXECUTE FUNCTION slipway_notify_deployment();

CREATE TRIGGER revisions_notify_update AFTER UPDATE ON revisions
  FOR EACH ROW WHEN ((OLD.record IS DISTINCT FROM NEW.record OR OLD.listener_id IS DISTINCT FROM NEW.listener_id)
                     AND current_setting('slipway.announced', true) IS DISTINCT FROM NEW.deployment_id::text)
  EXECUTE FUNCTION slipway_notify_child();

-- The list filter on the latest revision's state walks the list order and tests the column, as the
-- status filter does (0008): no index needed beyond it.
