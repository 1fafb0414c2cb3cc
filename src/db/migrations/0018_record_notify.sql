-- Read cache invalidation (issue 13): every committed change to what GET and list of deployments
-- and revisions answer announces its workspace on `slipway_records`. Each process keeps the
-- answers it sent per workspace and drops a workspace's on its notification. NOTIFY folds equal
-- payloads of one transaction into one, so a bulk change sends one per workspace. Changes that
-- leave the record (and the list filters outside it: remote_reconciled, listener_id) as they were, such as a
-- deployment's last-request time, send nothing.
CREATE FUNCTION slipway_notify_deployment() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('slipway_records', OLD.workspace_id::text); END IF;
  IF TG_OP <> 'DELETE' THEN PERFORM pg_notify('slipway_records', NEW.workspace_id::text); END IF;
  RETURN NULL;
END $$;

-- A revision's or a tagging's workspace is its deployment's; when that deployment is gone in the
-- same statement (a cascade), the deployment's own trigger has announced it.
CREATE FUNCTION slipway_notify_child() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  d uuid := CASE WHEN TG_OP = 'DELETE' THEN OLD.deployment_id ELSE NEW.deployment_id END;
  w uuid;
BEGIN
  SELECT workspace_id INTO w FROM deployments WHERE id = d;
  IF w IS NOT NULL THEN PERFORM pg_notify('slipway_records', w::text); END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER deployments_notify_insert_delete AFTER INSERT OR DELETE ON deployments
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_deployment();
CREATE TRIGGER deployments_notify_update AFTER UPDATE ON deployments
  FOR EACH ROW WHEN (OLD.record IS DISTINCT FROM NEW.record
                     OR OLD.remote_reconciled IS DISTINCT FROM NEW.remote_reconciled)
  EXECUTE FUNCTION slipway_notify_deployment();

CREATE TRIGGER revisions_notify_insert_delete AFTER INSERT OR DELETE ON revisions
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_child();
CREATE TRIGGER revisions_notify_update AFTER UPDATE ON revisions
  FOR EACH ROW WHEN (OLD.record IS DISTINCT FROM NEW.record OR OLD.listener_id IS DISTINCT FROM NEW.listener_id)
  EXECUTE FUNCTION slipway_notify_child();

CREATE TRIGGER deployment_tags_notify AFTER INSERT OR DELETE OR UPDATE ON deployment_tags
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_child();
