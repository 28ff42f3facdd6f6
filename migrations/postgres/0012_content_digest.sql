-- The content digest of an upload (see migrations/0012_content_digest.sql,
-- kept in step).
ALTER TABLE datasets ADD COLUMN content_digest TEXT;
CREATE INDEX datasets_owner_digest ON datasets (owner_id, content_digest);
