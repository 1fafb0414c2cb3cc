-- revisions_list_idx (deployment_id, seq DESC) repeated the index of revisions_deployment_seq_key
-- (deployment_id, seq), which a scan reads backwards just as well for a deployment's revisions
-- newest first. Every revision insert, and every status change of one (each changes an indexed
-- column, so none is a HOT update), wrote an entry into both (issue 13).
DROP INDEX revisions_list_idx;
