-- A revision whose secrets are an earlier revision's, unchanged (every envelope copied as it is,
-- same names and order), points at that revision's rows instead of copying them (issue 13): a
-- PATCH that leaves the secrets alone, the usual one, writes no secret rows. NULL: the revision's
-- own rows. The pointer is always to a revision that holds its own rows (never a chain), of the
-- same deployment.
--
-- No foreign key: its check would cost every revision insert, and it could not protect anything.
-- Revisions are never deleted one by one, only with their deployment, which takes all of them
-- and, through revision_secrets' own key, all their rows.
ALTER TABLE revisions ADD COLUMN secrets_revision_id uuid;
