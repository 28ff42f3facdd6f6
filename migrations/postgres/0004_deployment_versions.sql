-- Deployment versions (see ../0004_deployment_versions.sql): names scoped
-- per key, a version column, and the append-only history.
ALTER TABLE deployments DROP CONSTRAINT deployments_name_key;
ALTER TABLE deployments ADD COLUMN version BIGINT NOT NULL DEFAULT 1 CHECK (version >= 1);
ALTER TABLE deployments ADD COLUMN created_at TEXT;
UPDATE deployments SET created_at = updated_at;
ALTER TABLE deployments ALTER COLUMN created_at SET NOT NULL;
ALTER TABLE deployments ADD CONSTRAINT deployments_owner_name UNIQUE (created_by, name);
CREATE INDEX deployments_by_name ON deployments (name, seq);

CREATE TABLE deployment_versions (
    deployment_seq BIGINT NOT NULL REFERENCES deployments (seq),
    version        BIGINT NOT NULL CHECK (version >= 1),
    model_id       TEXT NOT NULL REFERENCES models (id),
    moved_by       TEXT NOT NULL REFERENCES api_keys (id),
    created_at     TEXT NOT NULL,
    rollback_of    BIGINT,
    PRIMARY KEY (deployment_seq, version)
);
INSERT INTO deployment_versions (deployment_seq, version, model_id, moved_by, created_at)
    SELECT seq, 1, model_id, created_by, updated_at FROM deployments;
CREATE TRIGGER deployment_versions_no_update BEFORE UPDATE OR DELETE ON deployment_versions
    FOR EACH ROW EXECUTE FUNCTION refuse_append_only('deployment history');
CREATE TRIGGER deployment_versions_no_truncate BEFORE TRUNCATE ON deployment_versions
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_append_only('deployment history');
