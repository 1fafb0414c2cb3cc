-- The latest-revision-status trigger (0024) need not run for a revision moving to SKIPPED: only an
-- older revision is skipped (a newer one was queued), so it is never the deployment's latest and
-- the trigger's UPDATE matched nothing. A PATCH that skips queued revisions paid one call per row.
DROP TRIGGER revisions_latest_status ON revisions;
CREATE TRIGGER revisions_latest_status AFTER UPDATE OF status ON revisions
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status <> 'SKIPPED')
  EXECUTE FUNCTION slipway_latest_revision_status();
