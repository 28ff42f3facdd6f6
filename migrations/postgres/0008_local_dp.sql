-- Local-DP collection: the owner's declaration, as JSON (see
-- migrations/0008_local_dp.sql, kept in step). NULL: raw rows.
ALTER TABLE datasets ADD COLUMN local_dp_json TEXT;
