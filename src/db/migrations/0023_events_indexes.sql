-- Fewer index entries per event (issue 13): a revision-creating PATCH records two events, and each
-- wrote six index entries.
--
-- `seq` is given after commit, by the sequencer (resources/events/store.ts); until then it is
-- NULL, and the two indexes on it only need the sequenced rows. Every query on them names a
-- sequenced row (`seq > n`, or max(seq), which skips NULLs), so partial indexes serve them alike,
-- and uniqueness is unchanged (NULLs never conflicted).
--
-- `id` is never looked up: it is a random UUID written with the row, and nothing reads an event by
-- it, so it keeps no index.
ALTER TABLE events DROP CONSTRAINT events_id_key;
ALTER TABLE events DROP CONSTRAINT events_seq_key;
CREATE UNIQUE INDEX events_seq_key ON events (seq) WHERE seq IS NOT NULL;
DROP INDEX events_workspace_seq_idx;
CREATE INDEX events_workspace_seq_idx ON events (workspace_id, seq) WHERE seq IS NOT NULL;
