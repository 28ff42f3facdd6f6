-- The privacy unit (issue 28; docs/privacy.md, "The privacy unit").
-- Each dataset records its neighbouring relation, fixed for its life (no
-- route changes it): unit_column NULL and unit_max_rows 1 for rows (every
-- dataset created before this migration), else the schema's
-- privacy_unit column name and its public bound k on rows per unit. The
-- identifiers themselves are never stored.
ALTER TABLE datasets ADD COLUMN unit_column TEXT;
ALTER TABLE datasets ADD COLUMN unit_max_rows INTEGER NOT NULL DEFAULT 1
    CHECK (unit_max_rows >= 1);
