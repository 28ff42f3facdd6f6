-- Deleting a model (see ../0011_model_deletion.sql): a tombstone row with
-- the model file dropped; every read of models skips it.
ALTER TABLE models ADD COLUMN deleted_at TEXT;
ALTER TABLE models ADD COLUMN deleted_by TEXT REFERENCES api_keys (id);
