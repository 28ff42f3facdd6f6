-- A second upload of identical content (issue 29): the SHA-256 of an
-- upload's schema and data fields, as lowercase hex, so that the same owner
-- sending the same table again is told so (409, naming the first dataset)
-- instead of silently getting a second, fresh budget for the same rows.
-- Seen only by the store's duplicate check: no route returns it. NULL for
-- datasets stored before this migration (they are not compared).
ALTER TABLE datasets ADD COLUMN content_digest TEXT;
CREATE INDEX datasets_owner_digest ON datasets (owner_id, content_digest);
