-- no-transaction
-- Edited model versions (free post-processing of a released model, e.g. a
-- DP-EBM shape function made monotone): a new model row that names its
-- parent and the key that edited it, for the same job. So `job_id` is no
-- longer unique on its own: exactly one original model per job (parent_id
-- NULL), any number of edited versions.
--
-- SQLite cannot drop a UNIQUE constraint, so the table is rebuilt (the
-- procedure of https://www.sqlite.org/lang_altertable.html, section 7):
-- foreign keys off for this connection, one transaction, foreign keys back
-- on. Every copied row keeps its references, so none can dangle.
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;
CREATE TABLE models_new (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    job_id     TEXT NOT NULL REFERENCES jobs (id),
    dataset_id TEXT NOT NULL REFERENCES datasets (id),
    model_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    parent_id  TEXT REFERENCES models_new (id),
    edited_by  TEXT REFERENCES api_keys (id)
);
INSERT INTO models_new (seq, id, job_id, dataset_id, model_json, created_at)
    SELECT seq, id, job_id, dataset_id, model_json, created_at FROM models;
DROP TABLE models;
ALTER TABLE models_new RENAME TO models;
CREATE UNIQUE INDEX models_one_original_per_job ON models (job_id) WHERE parent_id IS NULL;
COMMIT;
PRAGMA foreign_keys = ON;
