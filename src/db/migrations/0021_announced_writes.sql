-- Writes that announce their change themselves, after commit (issue 13).
--
-- A transaction that sends NOTIFY commits under a database-wide lock that PostgreSQL holds through
-- the commit's WAL flush, so all such transactions commit one at a time. A revision-creating PATCH
-- therefore no longer notifies inside its transaction: it names its deployment in the
-- transaction-local setting `slipway.announced` (set_config(…, true), before its first row is
-- written) and sends the notifications by a statement of its own once committed
-- (deployments/store.ts, commitRevision). The read cache's triggers (0018) stay silent for that
-- deployment's rows in that transaction; every other write, by this code or by hand, still
-- announces itself through them.
DROP TRIGGER deployments_notify_update ON deployments;
CREATE TRIGGER deployments_notify_update AFTER UPDATE ON deployments
  FOR EACH ROW WHEN ((OLD.record IS DISTINCT FROM NEW.record
                      OR OLD.remote_reconciled IS DISTINCT FROM NEW.remote_reconciled)
                     AND current_setting('slipway.announced', true) IS DISTINCT FROM NEW.id::text)
  EXECUTE FUNCTION slipway_notify_deployment();

DROP TRIGGER revisions_notify_insert_delete ON revisions;
CREATE TRIGGER revisions_notify_insert AFTER INSERT ON revisions
  FOR EACH ROW WHEN (current_setting('slipway.announced', true) IS DISTINCT FROM NEW.deployment_id::text)
  EXECUTE FUNCTION slipway_notify_child();
CREATE TRIGGER revisions_notify_delete AFTER DELETE ON revisions
  FOR EACH ROW EXECUTE FUNCTION slipway_notify_child();

DROP TRIGGER revisions_notify_update ON revisions;
CREATE TRIGGER revisions_notify_update AFTER UPDATE ON revisions
  FOR EACH ROW WHEN ((OLD.record IS DISTINCT FROM NEW.record OR OLD.listener_id IS DISTINCT FROM NEW.listener_id)
                     AND current_setting('slipway.announced', true) IS DISTINCT FROM NEW.deployment_id::text)
  EXECUTE FUNCTION slipway_notify_child();
