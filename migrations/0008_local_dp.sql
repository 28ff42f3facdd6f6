-- Local-DP collection (docs/privacy.md, "Local DP collection").
-- A dataset whose rows the owner randomized on the client (`privboost
-- randomize`) records its declaration as JSON: {"epsilon", "label_epsilon"},
-- the per-row local epsilon and the label's share of it (the rest is split
-- equally over the feature columns). NULL: the rows are raw (central DP), as
-- for every dataset created before this migration. Set at upload, never
-- changed; the server cannot check it.
ALTER TABLE datasets ADD COLUMN local_dp_json TEXT;
