-- Exact budget amounts: every epsilon, delta and rho becomes a BIGINT count
-- of fixed units (epsilon and rho in 1e-12, delta in 1e-18). See
-- ../0009_exact_amounts.sql for the columns replaced, the direction each old
-- double rounds in (charges up, totals down unless they read back as the
-- decimal the owner wrote) and why the arithmetic below is exact: it is the
-- same arithmetic on the same IEEE doubles, so both backends convert every
-- value to the same units.
--
-- PostgreSQL alters the tables in place (one transaction: sqlx runs each
-- migration in one): new columns are added and filled, then made NOT NULL
-- and checked, and the old ones dropped. The ledger's append-only trigger
-- is disabled for the one UPDATE that fills its new columns and enabled
-- again before the transaction ends; ALTER TABLE holds an ACCESS EXCLUSIVE
-- lock on the ledger until the commit, so no other session can write or
-- even read it in between.

-- Every distinct double to convert, with its exact floor (`down`) and
-- ceiling (`up`) in units and its reading as a total (`total`).
CREATE TEMP TABLE amounts_0009 ON COMMIT DROP AS
WITH v (x, s) AS (
        SELECT epsilon, 1e12::float8 FROM ledger
        UNION SELECT delta, 1e18::float8 FROM ledger
        UNION SELECT (loss_json::json ->> 'rho')::float8, 1e12::float8 FROM ledger
            WHERE loss_json::json ->> 'kind' = 'zcdp'
        UNION SELECT epsilon, 1e12::float8 FROM jobs
        UNION SELECT delta, 1e18::float8 FROM jobs
        UNION SELECT epsilon, 1e12::float8 FROM evaluations
    ),
    split (x, s, p, cx, cs) AS (
        SELECT x, s, x * s, 134217729.0::float8 * x, 134217729.0::float8 * s FROM v
    ),
    halves (x, s, p, xh, sh) AS (
        SELECT x, s, p, cx - (cx - x), cs - (cs - s) FROM split
    ),
    product (x, s, p, err) AS (
        SELECT x, s, p, CASE WHEN x < 1e-200 THEN 0.0::float8 ELSE
            (x - xh) * (s - sh) - (((p - xh * sh) - (x - xh) * sh) - xh * (s - sh)) END
        FROM halves
    ),
    rounded (x, s, p, down, up) AS (
        SELECT x, s, p,
            CASE WHEN p = floor(p) THEN p::bigint + floor(err)::bigint ELSE floor(p)::bigint END,
            CASE WHEN p = floor(p) THEN p::bigint + ceil(err)::bigint ELSE floor(p)::bigint + 1 END
        FROM product
    )
-- round(float8) rounds halves to even where SQLite's ROUND rounds them away
-- from zero; a half can only come up where neither neighbour reads back as
-- x (the doubles there are far finer than a unit), so both fall to `down`.
SELECT x, s, down, up,
    CASE WHEN round(p) / s = x THEN round(p)::bigint ELSE down END AS total
FROM rounded;
-- Each row below finds its amounts by value; statistics for the planner
-- (a temporary table is never analysed automatically).
CREATE INDEX amounts_0009_by_value ON amounts_0009 (x, s);
ANALYZE amounts_0009;

ALTER TABLE ledger
    ADD COLUMN epsilon_units BIGINT,
    ADD COLUMN delta_units BIGINT,
    ADD COLUMN loss_kind TEXT,
    ADD COLUMN rho_units BIGINT;
ALTER TABLE ledger DISABLE TRIGGER ledger_no_update;
UPDATE ledger l SET
    epsilon_units = c.eu,
    delta_units = c.du,
    loss_kind = c.loss_kind,
    rho_units = CASE c.loss_kind
        WHEN 'zcdp' THEN c.ru
        -- ceil(eu^2 / (2 10^12)), as in ../0009_exact_amounts.sql.
        WHEN 'pure' THEN (c.q * c.q) / 2 + (c.q * c.rem) / 1000000
            + (((c.q * c.q) % 2) * 1000000000000 + 2 * ((c.q * c.rem) % 1000000) * 1000000
               + c.rem * c.rem + 1999999999999) / 2000000000000
    END
FROM (
    SELECT l.seq, l.loss_json::json ->> 'kind' AS loss_kind,
        CASE l.kind WHEN 'total' THEN e.total ELSE e.up END AS eu,
        CASE l.kind WHEN 'total' THEN d.total ELSE d.up END AS du,
        r.up AS ru,
        e.up / 1000000 AS q, e.up % 1000000 AS rem
    FROM ledger l
    JOIN amounts_0009 e ON e.x = l.epsilon AND e.s = 1e12
    JOIN amounts_0009 d ON d.x = l.delta AND d.s = 1e18
    LEFT JOIN amounts_0009 r ON r.x = (l.loss_json::json ->> 'rho')::float8 AND r.s = 1e12
) c
WHERE c.seq = l.seq;
ALTER TABLE ledger ENABLE TRIGGER ledger_no_update;
ALTER TABLE ledger
    ALTER COLUMN epsilon_units SET NOT NULL,
    ALTER COLUMN delta_units SET NOT NULL,
    ADD CONSTRAINT ledger_epsilon_units CHECK (epsilon_units >= 0),
    ADD CONSTRAINT ledger_delta_units CHECK (delta_units >= 0),
    ADD CONSTRAINT ledger_rho_units CHECK (rho_units >= 0),
    ADD CONSTRAINT ledger_loss_kind CHECK (loss_kind IN ('pure', 'zcdp', 'approx')),
    -- A total has no loss description; a charge with one has a rho exactly
    -- when it is pure or zCDP; a pure charge has no delta.
    ADD CONSTRAINT ledger_total_has_no_loss
        CHECK (kind <> 'total' OR (loss_kind IS NULL AND rho_units IS NULL)),
    ADD CONSTRAINT ledger_rho_with_its_kind
        CHECK (loss_kind IS NULL OR (loss_kind IN ('pure', 'zcdp')) = (rho_units IS NOT NULL)),
    ADD CONSTRAINT ledger_pure_has_no_delta
        CHECK (loss_kind IS DISTINCT FROM 'pure' OR delta_units = 0),
    DROP COLUMN epsilon,
    DROP COLUMN delta,
    DROP COLUMN loss_json;

ALTER TABLE jobs
    ADD COLUMN epsilon_units BIGINT,
    ADD COLUMN delta_units BIGINT;
UPDATE jobs j SET epsilon_units = e.up, delta_units = d.up
FROM amounts_0009 e, amounts_0009 d
WHERE e.x = j.epsilon AND e.s = 1e12 AND d.x = j.delta AND d.s = 1e18;
ALTER TABLE jobs
    ALTER COLUMN epsilon_units SET NOT NULL,
    ALTER COLUMN delta_units SET NOT NULL,
    ADD CONSTRAINT jobs_epsilon_units CHECK (epsilon_units >= 0),
    ADD CONSTRAINT jobs_delta_units CHECK (delta_units >= 0),
    DROP COLUMN epsilon,
    DROP COLUMN delta;

ALTER TABLE evaluations ADD COLUMN epsilon_units BIGINT;
UPDATE evaluations v SET epsilon_units = e.up
FROM amounts_0009 e
WHERE e.x = v.epsilon AND e.s = 1e12;
ALTER TABLE evaluations
    ALTER COLUMN epsilon_units SET NOT NULL,
    ADD CONSTRAINT evaluations_epsilon_units CHECK (epsilon_units >= 0),
    DROP COLUMN epsilon;
