-- The privacy unit (see ../0013_privacy_unit.sql).
ALTER TABLE datasets ADD COLUMN unit_column TEXT;
ALTER TABLE datasets ADD COLUMN unit_max_rows BIGINT NOT NULL DEFAULT 1
    CHECK (unit_max_rows >= 1);
