-- Deleting a model (issue 26, item 3): `DELETE /v1/models/{id}` by the
-- dataset's owner or an admin. The row stays as a tombstone, so its id is
-- never issued or served again and the rows that name it (the job's
-- `model_id`, evaluations, deployment history, edited versions'
-- `parent_id`) keep a valid reference; the model file is dropped
-- (`model_json` becomes ''), and every read of models skips a row with
-- `deleted_at` set. NULL until deleted.
ALTER TABLE models ADD COLUMN deleted_at TEXT;
ALTER TABLE models ADD COLUMN deleted_by TEXT REFERENCES api_keys (id);
