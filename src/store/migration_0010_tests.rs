//! Migration 0010 (rows in chunks) on an SQLite store written before it:
//! every stored part is cut into 1 MiB chunks that, laid end to end, are the
//! old BLOB, the store reads them back as the same dataset, and the BLOB
//! columns are gone. (PostgreSQL's 0010 changes nothing: its rows were
//! always in chunks, tested in `pg_tests`.)

use rand::{RngExt, SeedableRng};

use super::Db;
use super::datasets;

/// The last version with rows in one BLOB per part.
const BEFORE: i64 = 9;

/// A dataset with `n_rows` rows (a multiple of 64, so any word is valid)
/// and `n_cols` columns of random words, stored as at version 9; returns
/// its feature and label words.
async fn old_rows(
    pool: &sqlx::SqlitePool,
    id: &str,
    n_rows: usize,
    n_cols: usize,
) -> (Vec<u64>, Vec<u64>) {
    assert_eq!(n_rows % 64, 0);
    let mut rng = rand::rngs::StdRng::seed_from_u64(n_cols as u64);
    let words = n_rows / 64;
    let features: Vec<u64> = (0..words * n_cols).map(|_| rng.random()).collect();
    let labels: Vec<u64> = (0..words).map(|_| rng.random()).collect();
    let bytes = |w: &[u64]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    sqlx::query("INSERT INTO api_keys (id, role, name, key_hash, created_at) VALUES ($1, 'owner', 'o', $2, 't')")
        .bind(format!("key_{id}"))
        .bind(format!("hash_{id}"))
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO datasets (id, owner_id, name, schema_json, n_rows, n_literals, state, created_at) VALUES ($1, $2, 'd', '{}', $3, $4, 'ready', 't')")
        .bind(id)
        .bind(format!("key_{id}"))
        .bind(n_rows as i64)
        .bind(n_cols as i64)
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("INSERT INTO dataset_rows (dataset_id, n_rows, n_cols, features, labels) VALUES ($1, $2, $3, $4, $5)")
        .bind(id)
        .bind(n_rows as i64)
        .bind(n_cols as i64)
        .bind(bytes(&features))
        .bind(bytes(&labels))
        .execute(pool)
        .await
        .unwrap();
    (features, labels)
}

#[tokio::test]
async fn old_rows_are_cut_into_chunks_that_read_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let pool = super::testing::sqlite_at(dir.path(), BEFORE).await;
    // 40,000 words a column: 8 columns are 2.56 MB (chunks of 1 MiB, 1 MiB
    // and the rest), the labels 320 KB (one chunk); no columns: no chunk.
    let n_rows = 64 * 40_000;
    let wide = old_rows(&pool, "ds_wide", n_rows, 8).await;
    let none = old_rows(&pool, "ds_none", 64, 0).await;
    sqlx::migrate!("./migrations").run(&pool).await.unwrap();

    let sizes: Vec<(String, String, i64, i64)> = sqlx::query_as(
        "SELECT dataset_id, part, idx, length(bytes) FROM dataset_row_chunks ORDER BY dataset_id, part, idx",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    let mib = 1 << 20;
    let s = |id: &str, part: &str, idx: i64, len: i64| (id.to_string(), part.to_string(), idx, len);
    assert_eq!(
        sizes,
        vec![
            s("ds_none", "labels", 0, 8),
            s("ds_wide", "features", 0, mib),
            s("ds_wide", "features", 1, mib),
            s("ds_wide", "features", 2, 8 * 8 * 40_000 - 2 * mib),
            s("ds_wide", "labels", 0, 8 * 40_000),
        ]
    );
    let columns: Vec<String> =
        sqlx::query_scalar("SELECT name FROM pragma_table_info('dataset_rows') ORDER BY cid")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(columns, ["dataset_id", "n_rows", "n_cols"]);

    let db = Db::Sqlite(pool);
    for (id, n, (features, labels)) in [("ds_wide", n_rows, wide), ("ds_none", 64, none)] {
        let (_, rows) = datasets::stored_rows(&db, id).await.unwrap().unwrap();
        let back = rows.finish_with(super::encoded::LabelLayout::Bits).unwrap();
        assert_eq!(back.n_rows(), n);
        let stored: Vec<u64> = (0..back.features.n_cols())
            .flat_map(|j| back.features.column(j).to_vec())
            .collect();
        assert_eq!(stored, features, "{id}");
        assert_eq!(back.labels.unwrap().words(), &labels[..], "{id}");
    }
}
