-- SQLite's 0010 moves its rows into `dataset_row_chunks`, the layout
-- PostgreSQL has had since its 0001 (see ../0010_row_chunks.sql). Nothing
-- changes here; the comment records what the table holds.
COMMENT ON TABLE dataset_row_chunks IS
    'A dataset''s encoded rows: parts features and labels, each cut into chunks of at most 1 MiB numbered from 0 (src/store/encoded.rs).';
