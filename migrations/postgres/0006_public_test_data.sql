-- Public test data (see ../0006_public_test_data.sql).
ALTER TABLE datasets ADD COLUMN public_test_data_at TEXT;
ALTER TABLE evaluations ADD COLUMN public BIGINT NOT NULL DEFAULT 0 CHECK (public IN (0, 1));
