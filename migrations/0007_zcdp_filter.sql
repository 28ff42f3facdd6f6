-- Accounting across jobs (docs/privacy.md, "Accounting across jobs").
-- A dataset composes its charges by basic composition ('basic', the default,
-- which every dataset created before this migration keeps) or by the zCDP
-- privacy filter ('zcdp-filter'), chosen by the owner at upload and never
-- changed afterwards.
ALTER TABLE datasets ADD COLUMN accounting TEXT NOT NULL DEFAULT 'basic'
    CHECK (accounting IN ('basic', 'zcdp-filter'));

-- Each charge (and the refund that returns it) records its privacy-loss
-- description as JSON: {"kind": "pure", "epsilon"}, {"kind": "zcdp", "rho",
-- "epsilon", "delta"} or {"kind": "approx", "epsilon", "delta"}. Entries
-- written before this migration have NULL and count as they did: their
-- (epsilon, delta) under basic composition.
ALTER TABLE ledger ADD COLUMN loss_json TEXT;
