-- A dataset's rows in chunks (issue 13), as on PostgreSQL since its 0001:
-- `dataset_rows` keeps the header (n_rows, n_cols), and the bytes move to
-- `dataset_row_chunks`, each part ('features', 'labels') cut into chunks of
-- at most 1 MiB (1,048,576 bytes), numbered from 0. An upload writes one
-- chunk at a time from the matrix, so it never holds the whole encoding,
-- nor SQLite a record of the whole part (src/store/encoded.rs). Same bytes,
-- same order: the chunks of a part, laid end to end, are the old BLOB.
CREATE TABLE dataset_row_chunks (
    dataset_id TEXT NOT NULL REFERENCES dataset_rows (dataset_id) ON DELETE CASCADE,
    part       TEXT NOT NULL CHECK (part IN ('features', 'labels')),
    idx        INTEGER NOT NULL CHECK (idx >= 0),
    bytes      BLOB NOT NULL,
    PRIMARY KEY (dataset_id, part, idx)
);

-- Cut every stored part (an empty part has no chunk). `cut` carries lengths
-- only; the bytes are read once per chunk by substr, which counts bytes on
-- a BLOB and is 1-based.
WITH RECURSIVE cut (dataset_id, part, idx, len) AS (
    SELECT dataset_id, 'features', 0, length(features) FROM dataset_rows
    UNION ALL
    SELECT dataset_id, 'labels', 0, length(labels) FROM dataset_rows
    UNION ALL
    SELECT dataset_id, part, idx + 1, len FROM cut WHERE (idx + 1) * 1048576 < len
)
INSERT INTO dataset_row_chunks (dataset_id, part, idx, bytes)
SELECT c.dataset_id, c.part, c.idx,
       substr(CASE c.part WHEN 'features' THEN r.features ELSE r.labels END, c.idx * 1048576 + 1, 1048576)
FROM cut c JOIN dataset_rows r ON r.dataset_id = c.dataset_id
WHERE c.len > 0;

ALTER TABLE dataset_rows DROP COLUMN features;
ALTER TABLE dataset_rows DROP COLUMN labels;
