-- The cost of a revision-creating PATCH (issue 13).
--
-- 1. A new revision skips the deployment's older ones that have not started building
-- (revisions/store.ts, revisionStatusStatement, which writes these statuses as literals so a
-- prepared statement's generic plan can use this index). Without it that UPDATE read every
-- revision the deployment ever had: at a few hundred it was a third of a PATCH's database time.
-- Few rows are ever in these states, so the index stays small.
CREATE INDEX revisions_supersedable_idx ON revisions (deployment_id) WHERE status IN ('QUEUED', 'AWAITING_BUILD');

-- 2. The event and audit logs keep their organization and workspace without foreign keys. Every
-- write in a workspace appends to them, and each foreign key check took a KEY SHARE lock on the
-- same organization and workspace rows: with writes in flight at once PostgreSQL made a new
-- MultiXact for every one of them (WAL, SLRU pages, a rewritten parent tuple). Rows are only ever
-- written with the ids of an organization and workspace the writer has just read; what the keys'
-- ON DELETE CASCADE did, for an operator deleting those rows by hand, the triggers below do.
ALTER TABLE events DROP CONSTRAINT events_organization_id_fkey, DROP CONSTRAINT events_workspace_id_fkey;
ALTER TABLE audit_log DROP CONSTRAINT audit_log_organization_id_fkey;

CREATE FUNCTION slipway_forget_organizations() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM events WHERE organization_id IN (SELECT id FROM gone);
  DELETE FROM audit_log WHERE organization_id IN (SELECT id FROM gone);
  RETURN NULL;
END $$;
CREATE TRIGGER organizations_forget_logs AFTER DELETE ON organizations
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION slipway_forget_organizations();

CREATE FUNCTION slipway_forget_workspaces() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM events WHERE workspace_id IN (SELECT id FROM gone);
  RETURN NULL;
END $$;
CREATE TRIGGER workspaces_forget_logs AFTER DELETE ON workspaces
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION slipway_forget_workspaces();
