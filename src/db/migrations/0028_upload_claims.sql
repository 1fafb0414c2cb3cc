-- Which server process receives an upload: the key of the advisory lock that process holds while
-- any of its uploads is in progress (resources/uploads/claims.ts). A started upload whose lock no
-- session holds was cut off by a crash, and the next PUT to its URL takes it over instead of being
-- told for the rest of the URL's life that an upload is in progress. Null on rows of releases
-- before 0.2.0, which keep their old meaning (in progress until the URL expires).
ALTER TABLE uploads ADD COLUMN claimed_by bigint;
