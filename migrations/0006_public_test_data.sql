-- Public test data (issue 11, item 4): the owner may declare a dataset's rows
-- public test data (PATCH /v1/datasets/{id} {"public_test_data": true}).
-- Evaluations on such a dataset return exact metrics without noise and
-- without a ledger charge; the dataset then has no privacy guarantee at all
-- (docs/privacy.md, "Public test data"). One-way: NULL until declared, then
-- the time of the declaration, never cleared (exact metrics may have left).
ALTER TABLE datasets ADD COLUMN public_test_data_at TEXT;
-- 1 for an evaluation on public test data: exact metrics, epsilon 0, no
-- ledger entry; 0 for a DP release charged to the dataset's ledger.
ALTER TABLE evaluations ADD COLUMN public INTEGER NOT NULL DEFAULT 0 CHECK (public IN (0, 1));
