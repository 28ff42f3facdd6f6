-- no-transaction
-- Exact budget amounts (issue 14; docs/deploy.md, "Exact amounts"). Every
-- epsilon, delta and rho becomes an INTEGER count of fixed units
-- (src/privacy/budget_units.rs): epsilon and rho in units of 1e-12, delta
-- in units of 1e-18. Sums are then integer sums: exact, in any order, and
-- the same on SQLite and PostgreSQL (postgres/0009_exact_amounts.sql makes
-- the same conversion with the same arithmetic).
--
-- Columns replaced:
--   ledger.epsilon, ledger.delta (REAL)  -> epsilon_units, delta_units;
--   ledger.loss_json (JSON)              -> loss_kind ('pure', 'zcdp' or
--       'approx'; NULL for totals and for entries written before 0007, which
--       count as they always did, by their (epsilon, delta)) and rho_units
--       (a pure charge's epsilon^2 / 2, a zCDP charge's rho; NULL for totals,
--       'approx' charges and those old entries);
--   jobs.epsilon, jobs.delta             -> epsilon_units, delta_units (the
--       job's charge, as in its ledger entry);
--   evaluations.epsilon                  -> epsilon_units (its charge).
--
-- Which way each old double rounds (the exact value of the double, never
-- x * 1e12 rounded in floating point):
--   - a charge or refund, and a job's or evaluation's copy of it, rounds UP:
--     its mechanism already ran at that double, and the ledger must never
--     record less than was spent. (The double 0.01 is 2e-19 above 0.01, so
--     an old charge of 0.01 becomes 0.010000000001.) A pure charge's rho is
--     then its epsilon units squared over 2, rounded up; a zCDP charge's rho
--     its double rounded up;
--   - a total is the decimal the owner wrote when the grid decimal nearest
--     to it reads back as the same double (the rule the API applies to a new
--     total, Units::total), and otherwise rounds DOWN: the ledger never
--     grants more than was allowed.
-- So an old dataset's remaining budget can only shrink, by at most a unit
-- per entry.
--
-- The exact rounding of x * 10^d (d = 12 or 18; both scales are exact
-- doubles): p = x * s is the product rounded to a double, and Dekker's
-- two-product (Veltkamp splitting by 2^27 + 1, exact in binary64 without
-- overflow or underflow; T. J. Dekker 1971, "A floating-point technique for
-- extending the available precision") gives err, a double with
-- x * s = p + err exactly. If p is an integer, floor(x * s) = p + floor(err);
-- otherwise no integer lies between p and the exact product (p is the double
-- nearest to it, and every integer below 2^53 is a double), so the floor is
-- trunc(p) and the product is not an integer. Values below 1e-200 are far
-- below one unit: their err is not computed (it could underflow).
--
-- SQLite cannot drop or retype a column in place while keeping NOT NULL
-- without a default, nor alter the append-only ledger's rows (its triggers
-- refuse UPDATE), so the three tables are rebuilt as in 0003 (the procedure
-- of https://www.sqlite.org/lang_altertable.html, section 7): foreign keys
-- off for this connection, one transaction, each table copied with its
-- converted amounts into a new one that replaces it, its indexes (and the
-- ledger's triggers) created again, AUTOINCREMENT counters kept.
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

-- Every distinct double to convert, with its exact floor (`down`) and
-- ceiling (`up`) in units and its reading as a total (`total`).
CREATE TEMP TABLE amounts_0009 AS
WITH v (x, s) AS (
        SELECT epsilon, 1e12 FROM ledger
        UNION SELECT delta, 1e18 FROM ledger
        UNION SELECT json_extract(loss_json, '$.rho'), 1e12 FROM ledger
            WHERE json_extract(loss_json, '$.kind') = 'zcdp'
        UNION SELECT epsilon, 1e12 FROM jobs
        UNION SELECT delta, 1e18 FROM jobs
        UNION SELECT epsilon, 1e12 FROM evaluations
    ),
    split (x, s, p, cx, cs) AS (
        SELECT x, s, x * s, 134217729.0 * x, 134217729.0 * s FROM v
    ),
    halves (x, s, p, xh, sh) AS (
        SELECT x, s, p, cx - (cx - x), cs - (cs - s) FROM split
    ),
    product (x, s, p, err) AS (
        SELECT x, s, p, CASE WHEN x < 1e-200 THEN 0.0 ELSE
            (x - xh) * (s - sh) - (((p - xh * sh) - (x - xh) * sh) - xh * (s - sh)) END
        FROM halves
    ),
    parts (x, s, p, err, t, et) AS (
        SELECT x, s, p, err, CAST(p AS INTEGER), CAST(err AS INTEGER) FROM product
    ),
    rounded (x, s, p, down, up) AS (
        SELECT x, s, p,
            CASE WHEN p = t THEN t + et - (err < et) ELSE t END,
            CASE WHEN p = t THEN t + et + (err > et) ELSE t + 1 END
        FROM parts
    )
SELECT x, s, down, up,
    CASE WHEN ROUND(p) / s = x THEN CAST(ROUND(p) AS INTEGER) ELSE down END AS total
FROM rounded;
-- Each row below finds its amounts by value.
CREATE INDEX temp.amounts_0009_by_value ON amounts_0009 (x, s);

CREATE TABLE ledger_new (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id    TEXT NOT NULL REFERENCES datasets (id),
    kind          TEXT NOT NULL CHECK (kind IN ('total', 'charge', 'refund')),
    job_id        TEXT,
    epsilon_units INTEGER NOT NULL CHECK (typeof(epsilon_units) = 'integer' AND epsilon_units >= 0),
    delta_units   INTEGER NOT NULL CHECK (typeof(delta_units) = 'integer' AND delta_units >= 0),
    loss_kind     TEXT CHECK (loss_kind IN ('pure', 'zcdp', 'approx')),
    rho_units     INTEGER CHECK (typeof(rho_units) IN ('integer', 'null') AND rho_units >= 0),
    created_at    TEXT NOT NULL,
    created_by    TEXT,
    -- A total has no loss description; a charge with one has a rho exactly
    -- when it is pure or zCDP; a pure charge has no delta.
    CHECK (kind <> 'total' OR (loss_kind IS NULL AND rho_units IS NULL)),
    CHECK (loss_kind IS NULL OR (loss_kind IN ('pure', 'zcdp')) = (rho_units IS NOT NULL)),
    CHECK (loss_kind IS NOT 'pure' OR delta_units = 0)
);
INSERT INTO ledger_new (seq, dataset_id, kind, job_id, epsilon_units, delta_units,
                        loss_kind, rho_units, created_at, created_by)
SELECT seq, dataset_id, kind, job_id, eu, du, loss_kind,
    CASE loss_kind
        WHEN 'zcdp' THEN ru
        -- ceil(eu^2 / (2 10^12)) (RhoUnits::of_pure) without overflowing 64
        -- bits: with eu = q 10^6 + rem, q^2 = 2a + b and q rem = 10^6 c + d,
        -- it is a + c + ceil((b 10^12 + 2 d 10^6 + rem^2) / (2 10^12)), every
        -- term below 2^63 for epsilon up to 3000 (the API allows 1000).
        WHEN 'pure' THEN (q * q) / 2 + (q * rem) / 1000000
            + (((q * q) % 2) * 1000000000000 + 2 * ((q * rem) % 1000000) * 1000000 + rem * rem
               + 1999999999999) / 2000000000000
    END,
    created_at, created_by
FROM (
    SELECT l.*, json_extract(l.loss_json, '$.kind') AS loss_kind,
        CASE l.kind WHEN 'total' THEN e.total ELSE e.up END AS eu,
        CASE l.kind WHEN 'total' THEN d.total ELSE d.up END AS du,
        r.up AS ru,
        e.up / 1000000 AS q, e.up % 1000000 AS rem
    FROM ledger l
    JOIN amounts_0009 e ON e.x = l.epsilon AND e.s = 1e12
    JOIN amounts_0009 d ON d.x = l.delta AND d.s = 1e18
    LEFT JOIN amounts_0009 r ON r.x = json_extract(l.loss_json, '$.rho') AND r.s = 1e12
)
ORDER BY seq;
DELETE FROM sqlite_sequence WHERE name = 'ledger_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'ledger_new', seq FROM sqlite_sequence WHERE name = 'ledger';
DROP TABLE ledger;
ALTER TABLE ledger_new RENAME TO ledger;
CREATE INDEX ledger_by_dataset ON ledger (dataset_id, seq);
CREATE UNIQUE INDEX ledger_one_entry_per_job ON ledger (job_id, kind) WHERE job_id IS NOT NULL;
CREATE TRIGGER ledger_no_update BEFORE UPDATE ON ledger
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER ledger_no_delete BEFORE DELETE ON ledger
BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;

CREATE TABLE jobs_new (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    dataset_id       TEXT NOT NULL REFERENCES datasets (id),
    submitted_by     TEXT NOT NULL REFERENCES api_keys (id),
    state            TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    params_json      TEXT NOT NULL,
    tau              INTEGER NOT NULL,
    rounds_done      INTEGER NOT NULL DEFAULT 0,
    epsilon_units    INTEGER NOT NULL CHECK (typeof(epsilon_units) = 'integer' AND epsilon_units >= 0),
    delta_units      INTEGER NOT NULL CHECK (typeof(delta_units) = 'integer' AND delta_units >= 0),
    model_id         TEXT,
    error            TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    started_at       TEXT,
    finished_at      TEXT,
    heartbeat        INTEGER
);
INSERT INTO jobs_new (seq, id, dataset_id, submitted_by, state, params_json, tau, rounds_done,
                      epsilon_units, delta_units, model_id, error, attempts, cancel_requested,
                      created_at, started_at, finished_at, heartbeat)
SELECT j.seq, j.id, j.dataset_id, j.submitted_by, j.state, j.params_json, j.tau, j.rounds_done,
       e.up, d.up, j.model_id, j.error, j.attempts, j.cancel_requested,
       j.created_at, j.started_at, j.finished_at, j.heartbeat
FROM jobs j
JOIN amounts_0009 e ON e.x = j.epsilon AND e.s = 1e12
JOIN amounts_0009 d ON d.x = j.delta AND d.s = 1e18
ORDER BY j.seq;
DELETE FROM sqlite_sequence WHERE name = 'jobs_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'jobs_new', seq FROM sqlite_sequence WHERE name = 'jobs';
DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
CREATE INDEX jobs_by_state ON jobs (state, seq);

CREATE TABLE evaluations_new (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    model_id      TEXT NOT NULL REFERENCES models (id),
    dataset_id    TEXT NOT NULL REFERENCES datasets (id),
    requested_by  TEXT NOT NULL REFERENCES api_keys (id),
    epsilon_units INTEGER NOT NULL CHECK (typeof(epsilon_units) = 'integer' AND epsilon_units >= 0),
    state         TEXT NOT NULL CHECK (state IN ('admitted', 'done', 'failed')),
    result_json   TEXT,
    error         TEXT,
    created_at    TEXT NOT NULL,
    finished_at   TEXT,
    public        INTEGER NOT NULL DEFAULT 0 CHECK (public IN (0, 1))
);
INSERT INTO evaluations_new (seq, id, model_id, dataset_id, requested_by, epsilon_units, state,
                             result_json, error, created_at, finished_at, public)
SELECT v.seq, v.id, v.model_id, v.dataset_id, v.requested_by, e.up, v.state,
       v.result_json, v.error, v.created_at, v.finished_at, v.public
FROM evaluations v
JOIN amounts_0009 e ON e.x = v.epsilon AND e.s = 1e12
ORDER BY v.seq;
DELETE FROM sqlite_sequence WHERE name = 'evaluations_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'evaluations_new', seq FROM sqlite_sequence WHERE name = 'evaluations';
DROP TABLE evaluations;
ALTER TABLE evaluations_new RENAME TO evaluations;
CREATE INDEX evaluations_by_dataset ON evaluations (dataset_id, seq);

DROP TABLE temp.amounts_0009;
COMMIT;
PRAGMA foreign_keys = ON;
