-- Performance (issue 13, second pass).
--
-- A deployment's ETag is the hash of its stored record, computed when it is read rather than kept
-- as a second generated column: that column evaluated the whole record function a second time on
-- every insert and update of a deployment (half the CPU of writing a row; measured at 1M rows in
-- the scale bench). md5 of a record of under 1 kB costs about a microsecond on the one row a GET
-- or PATCH returns.
ALTER TABLE deployments DROP COLUMN etag;

-- The one definition of a deployment's strong ETag from its record.
CREATE FUNCTION slipway_etag(record text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT '"' || md5(record) || '"' $$;
