-- privboost service schema, version 1. Never edit this file once released:
-- add a new numbered migration instead (sqlx records a checksum of each).
--
-- Every table has an integer `seq` (AUTOINCREMENT, so never reused) that
-- gives lists a stable order and cursor, and a random text `id` for the API.

-- API keys: only the SHA-256 of the key is stored.
CREATE TABLE api_keys (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL CHECK (role IN ('admin', 'owner', 'analyst')),
    name       TEXT NOT NULL,
    key_hash   TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);

-- Dataset metadata (public: schema and row count). A deleted dataset stays
-- as a tombstone so that its ledger remains readable and its id is never reused.
CREATE TABLE datasets (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    owner_id      TEXT NOT NULL REFERENCES api_keys (id),
    name          TEXT NOT NULL,
    schema_json   TEXT NOT NULL,
    n_rows        INTEGER NOT NULL,
    n_literals    INTEGER NOT NULL,
    rejected_rows INTEGER NOT NULL DEFAULT 0,
    state         TEXT NOT NULL CHECK (state IN ('ready', 'deleted')),
    created_at    TEXT NOT NULL,
    deleted_at    TEXT
);

-- The private rows, encoded (column-major bit words, little endian).
-- Deleting a dataset deletes its row here.
CREATE TABLE dataset_rows (
    dataset_id TEXT PRIMARY KEY REFERENCES datasets (id),
    n_rows     INTEGER NOT NULL,
    n_cols     INTEGER NOT NULL,
    features   BLOB NOT NULL,
    labels     BLOB NOT NULL
);

-- Analyst access granted by a dataset's owner.
CREATE TABLE grants (
    dataset_id TEXT NOT NULL REFERENCES datasets (id),
    key_id     TEXT NOT NULL REFERENCES api_keys (id),
    created_at TEXT NOT NULL,
    PRIMARY KEY (dataset_id, key_id)
);

-- The append-only privacy ledger (SPEC §2). Kinds:
--   total:  the dataset's total (epsilon, delta) was set to these values;
--   charge: a job's charge, admitted before the job could read rows;
--   refund: a charge returned because its job was cancelled before it started.
CREATE TABLE ledger (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id TEXT NOT NULL REFERENCES datasets (id),
    kind       TEXT NOT NULL CHECK (kind IN ('total', 'charge', 'refund')),
    job_id     TEXT,
    epsilon    REAL NOT NULL,
    delta      REAL NOT NULL,
    created_at TEXT NOT NULL,
    created_by TEXT
);
CREATE INDEX ledger_by_dataset ON ledger (dataset_id, seq);
-- At most one charge and one refund per job, whatever happens.
CREATE UNIQUE INDEX ledger_one_entry_per_job ON ledger (job_id, kind) WHERE job_id IS NOT NULL;
CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;

-- Training jobs. `started_at` is set when a worker first claims the job: from
-- then on the job may have read rows, so its charge is final (never refunded).
CREATE TABLE jobs (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    dataset_id       TEXT NOT NULL REFERENCES datasets (id),
    submitted_by     TEXT NOT NULL REFERENCES api_keys (id),
    state            TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    params_json      TEXT NOT NULL,
    tau              INTEGER NOT NULL,
    rounds_done      INTEGER NOT NULL DEFAULT 0,
    epsilon          REAL NOT NULL,
    delta            REAL NOT NULL,
    model_id         TEXT,
    error            TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    started_at       TEXT,
    finished_at      TEXT
);
CREATE INDEX jobs_by_state ON jobs (state, seq);

-- Trained models (released outputs of DP jobs).
CREATE TABLE models (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    job_id     TEXT NOT NULL UNIQUE REFERENCES jobs (id),
    dataset_id TEXT NOT NULL REFERENCES datasets (id),
    model_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);

-- Named deployments pointing at a model; re-pointed atomically by an UPDATE.
CREATE TABLE deployments (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL UNIQUE,
    model_id   TEXT NOT NULL REFERENCES models (id),
    created_by TEXT NOT NULL REFERENCES api_keys (id),
    updated_at TEXT NOT NULL
);

-- Stored responses of POSTs made with an Idempotency-Key.
CREATE TABLE idempotency (
    key_id       TEXT NOT NULL,
    idem_key     TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    status       INTEGER NOT NULL,
    location     TEXT,
    body         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    PRIMARY KEY (key_id, idem_key)
);
