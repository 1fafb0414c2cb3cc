-- The health path of a revision built into an image for a listener: the app config's
-- `healthcheck`, read when the image is built, so the cluster's probes ask what the app serves.
-- Null for images named by the user (they carry no app config): probes ask "/".
ALTER TABLE revisions ADD COLUMN health_path text;
