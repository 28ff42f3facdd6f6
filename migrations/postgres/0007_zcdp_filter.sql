-- Accounting across jobs (see ../0007_zcdp_filter.sql).
ALTER TABLE datasets ADD COLUMN accounting TEXT NOT NULL DEFAULT 'basic'
    CHECK (accounting IN ('basic', 'zcdp-filter'));
ALTER TABLE ledger ADD COLUMN loss_json TEXT;
