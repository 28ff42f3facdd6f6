-- Deployment versions (issue 12, item 3): a deployment keeps its history,
-- and names are scoped per key so that two owners cannot collide.
--
-- `deployments` loses its global UNIQUE (name) for UNIQUE (created_by, name)
-- and gains `version` (the version it serves now) and `created_at`. SQLite
-- cannot drop a UNIQUE constraint, so the table is rebuilt; nothing
-- references it yet, so no foreign key can dangle. Every existing
-- deployment becomes version 1 of itself.
--
-- `deployment_versions` is append-only: one row per move (a PUT or a
-- rollback), numbered 1, 2, 3... per deployment. The primary key makes two
-- concurrent moves that computed the same number fail instead of one
-- overwriting the other (the store also takes the write lock first).
CREATE TABLE deployments_new (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    model_id   TEXT NOT NULL REFERENCES models (id),
    created_by TEXT NOT NULL REFERENCES api_keys (id),
    updated_at TEXT NOT NULL,
    version    INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1),
    created_at TEXT NOT NULL,
    UNIQUE (created_by, name)
);
INSERT INTO deployments_new (seq, name, model_id, created_by, updated_at, version, created_at)
    SELECT seq, name, model_id, created_by, updated_at, 1, updated_at FROM deployments;
DROP TABLE deployments;
ALTER TABLE deployments_new RENAME TO deployments;
CREATE INDEX deployments_by_name ON deployments (name, seq);

CREATE TABLE deployment_versions (
    deployment_seq INTEGER NOT NULL REFERENCES deployments (seq),
    version        INTEGER NOT NULL CHECK (version >= 1),
    model_id       TEXT NOT NULL REFERENCES models (id),
    moved_by       TEXT NOT NULL REFERENCES api_keys (id),
    created_at     TEXT NOT NULL,
    -- For a rollback: the version whose model it restored.
    rollback_of    INTEGER,
    PRIMARY KEY (deployment_seq, version)
);
INSERT INTO deployment_versions (deployment_seq, version, model_id, moved_by, created_at)
    SELECT seq, 1, model_id, created_by, updated_at FROM deployments;
CREATE TRIGGER deployment_versions_no_update BEFORE UPDATE ON deployment_versions
BEGIN SELECT RAISE(ABORT, 'deployment history is append-only'); END;
CREATE TRIGGER deployment_versions_no_delete BEFORE DELETE ON deployment_versions
BEGIN SELECT RAISE(ABORT, 'deployment history is append-only'); END;
