-- Edited model versions (see ../0003_model_versions.sql). PostgreSQL can
-- drop the UNIQUE constraint in place: no table rebuild.
ALTER TABLE models DROP CONSTRAINT models_job_id_key;
ALTER TABLE models ADD COLUMN parent_id TEXT REFERENCES models (id);
ALTER TABLE models ADD COLUMN edited_by TEXT REFERENCES api_keys (id);
CREATE UNIQUE INDEX models_one_original_per_job ON models (job_id) WHERE parent_id IS NULL;
