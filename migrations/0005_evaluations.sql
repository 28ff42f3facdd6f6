-- DP evaluations of a model on a dataset (POST /v1/models/{id}/evaluate).
-- Each is charged to the dataset's ledger before any row is read: a 'charge'
-- entry whose job_id column holds the evaluation's id (eval_...), so the
-- ledger's one-charge-per-id index covers evaluations too. The result is the
-- DP release (noisy accuracy and ROC AUC, or noisy RMSE), kept so that a
-- client that lost the response can read it again.
CREATE TABLE evaluations (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    model_id     TEXT NOT NULL REFERENCES models (id),
    dataset_id   TEXT NOT NULL REFERENCES datasets (id),
    requested_by TEXT NOT NULL REFERENCES api_keys (id),
    epsilon      REAL NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('admitted', 'done', 'failed')),
    result_json  TEXT,
    error        TEXT,
    created_at   TEXT NOT NULL,
    finished_at  TEXT
);
CREATE INDEX evaluations_by_dataset ON evaluations (dataset_id, seq);
