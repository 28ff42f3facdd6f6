//! The store on PostgreSQL: what only that backend does (row locks, `SKIP
//! LOCKED` claims, the append-only trigger), the chunked rows (on both
//! backends since SQLite's migration 0010) and list pages on both, and that its
//! migrations stay in step with SQLite's. Each test runs in a fresh database
//! when `PRIVBOOST_TEST_POSTGRES_URL` is set (see `testing`), and prints a
//! notice and passes otherwise.

use std::collections::BTreeSet;

use super::datasets::{self, Created, NewDataset};
use super::idempotency::StoredResponse;
use super::jobs::{self, NewJob, Submitted};
use super::keys::{self, KeyInfo, Role};
use super::ledger::Amount;
use super::testing::{fresh_postgres, on_each_backend};
use super::{Db, with_db};
use crate::data::{BitMatrix, BitVec, Dataset};
use crate::privacy::budget_units::{DeltaUnits, EpsilonUnits};
use crate::privacy::filter::{Accounting, Charge};

fn respond(_: &impl serde::Serialize) -> StoredResponse {
    StoredResponse {
        status: 200,
        location: None,
        body: String::new(),
    }
}

/// An owner and a dataset of `n` rows and `cols` columns of total `epsilon`.
async fn dataset(db: &Db, n: usize, cols: usize, epsilon: f64) -> (KeyInfo, datasets::DatasetInfo) {
    let owner = keys::create(db, Role::Owner, "o", &keys::generate_secret().unwrap())
        .await
        .unwrap();
    let columns: Vec<BitVec> = (0..cols)
        .map(|j| BitVec::from_bools(&(0..n).map(|i| (i * 7 + j) % 3 == 0).collect::<Vec<_>>()))
        .collect();
    let data = Dataset {
        features: BitMatrix::from_columns(n, &columns),
        labels: Some(BitVec::from_bools(
            &(0..n).map(|i| i % 5 == 0).collect::<Vec<_>>(),
        )),
        targets: None,
        classes: None,
        one_hot_groups: vec![],
    };
    let new = NewDataset {
        owner_id: &owner.id,
        name: "d",
        schema_json: "{}",
        data: &data,
        rejected_rows: 0,
        total: Amount {
            epsilon: EpsilonUnits::total(epsilon).unwrap(),
            delta: DeltaUnits::ZERO,
        },
        accounting: Accounting::Basic,
        local_dp: None,
        content_digest: "",
        allow_duplicate: true,
    };
    let Created::New(d) = datasets::create(db, new, None, respond).await.unwrap() else {
        panic!("created")
    };
    (owner, *d)
}

fn job<'a>(d: &'a str, by: &'a str, epsilon: f64) -> NewJob<'a> {
    NewJob {
        dataset_id: d,
        submitted_by: by,
        params_json: "{}",
        tau: 1,
        charge: Charge::pure(EpsilonUnits::nearest(epsilon).unwrap()).unwrap(),
        max_active_per_key: 1_000_000,
    }
}

/// The migration versions in a directory (`0001_init.sql` is 1).
fn versions(dir: &str) -> BTreeSet<i64> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().ok()?;
            (e.file_type().ok()?.is_file() && name.ends_with(".sql"))
                .then(|| name.split('_').next()?.parse().ok())?
        })
        .collect()
}

/// Every SQLite migration has its PostgreSQL counterpart and the other way
/// round (runs without PostgreSQL: it reads the two directories).
#[test]
fn migrations_are_kept_in_step() {
    let root = env!("CARGO_MANIFEST_DIR");
    let sqlite = versions(&format!("{root}/migrations"));
    let postgres = versions(&format!("{root}/migrations/postgres"));
    assert!(!sqlite.is_empty());
    assert_eq!(
        sqlite, postgres,
        "a migration exists for one backend only: add its counterpart (migrations/ for SQLite, migrations/postgres/ for PostgreSQL)"
    );
}

/// 200 concurrent submissions of epsilon 0.25 from 8 keys against a total
/// of 10 on 16 connections: exactly 40 admitted, and the ledger's own sum
/// (in SQL) stays within the total. (From several keys, so that only the
/// dataset's row lock orders them, not the per-key one.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_admissions_never_overspend() {
    let Some(db) = fresh_postgres("concurrent admissions", 16).await else {
        return;
    };
    let (_, d) = dataset(&db, 10, 1, 10.0).await;
    let mut analysts = Vec::new();
    for _ in 0..8 {
        let secret = keys::generate_secret().unwrap();
        analysts.push(
            keys::create(&db, Role::Analyst, "a", &secret)
                .await
                .unwrap()
                .id,
        );
    }
    let mut tasks = Vec::new();
    for i in 0..200 {
        let (db, d, o) = (db.clone(), d.id.clone(), analysts[i % 8].clone());
        tasks.push(tokio::spawn(async move {
            match jobs::submit(&db, job(&d, &o, 0.25), None, respond)
                .await
                .unwrap()
            {
                Submitted::New(_) => 1,
                Submitted::OverBudget { .. } => 0,
                _ => panic!("unexpected outcome"),
            }
        }));
    }
    let mut admitted = 0;
    for t in tasks {
        admitted += t.await.unwrap();
    }
    assert_eq!(admitted, 40);
    let Db::Postgres(pool) = &db else {
        unreachable!()
    };
    // An integer sum in SQL: 40 x 0.25 is exactly 10 (10^13 units).
    let (sum, n): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(epsilon_units), 0) AS BIGINT), COUNT(*) FROM ledger WHERE dataset_id = $1 AND kind = 'charge'",
    )
    .bind(&d.id)
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(n, 40);
    assert_eq!(sum, 10_000_000_000_000);
}

/// Two claimers racing over 50 queued jobs: each job is claimed once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_skip_locked_jobs_and_never_share_one() {
    let Some(db) = fresh_postgres("claims", 8).await else {
        return;
    };
    let (owner, d) = dataset(&db, 10, 1, 100.0).await;
    for _ in 0..50 {
        let out = jobs::submit(&db, job(&d.id, &owner.id, 0.1), None, respond)
            .await
            .unwrap();
        assert!(matches!(out, Submitted::New(_)));
    }
    let claimer = |db: Db| {
        tokio::spawn(async move {
            let mut ids = Vec::new();
            while let Some(j) = jobs::claim(&db).await.unwrap() {
                ids.push(j.id);
            }
            ids
        })
    };
    let (a, b, c) = (
        claimer(db.clone()),
        claimer(db.clone()),
        claimer(db.clone()),
    );
    let mut all: Vec<String> = a.await.unwrap();
    all.extend(b.await.unwrap());
    all.extend(c.await.unwrap());
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(all.len(), 50);
    assert_eq!(distinct.len(), 50);
}

/// A cancel racing a claim: the job is either refunded (never started) or
/// asked to stop (running), never both; one refund at most.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_claim_decide_each_job_once() {
    let Some(db) = fresh_postgres("cancel vs claim", 8).await else {
        return;
    };
    let (owner, d) = dataset(&db, 10, 1, 100.0).await;
    let mut ids = Vec::new();
    for _ in 0..30 {
        let Submitted::New(j) = jobs::submit(&db, job(&d.id, &owner.id, 0.1), None, respond)
            .await
            .unwrap()
        else {
            panic!("admitted")
        };
        ids.push(j.id);
    }
    let claims = {
        let db = db.clone();
        tokio::spawn(async move {
            let mut n = 0;
            while jobs::claim(&db).await.unwrap().is_some() {
                n += 1;
            }
            n
        })
    };
    let mut refunded = 0;
    for id in &ids {
        if let Some(jobs::Cancelled::Refunded(_)) = jobs::cancel(&db, id, &owner.id).await.unwrap()
        {
            refunded += 1;
        }
    }
    let claimed = claims.await.unwrap();
    assert_eq!(
        claimed + refunded,
        30,
        "claimed {claimed}, refunded {refunded}"
    );
    let Db::Postgres(pool) = &db else {
        unreachable!()
    };
    let refunds: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM ledger WHERE dataset_id = $1 AND kind = 'refund'")
            .bind(&d.id)
            .fetch_one(pool)
            .await
            .unwrap();
    assert_eq!(refunds, refunded);
}

/// Rows larger than one chunk come back word for word, and deleting the
/// dataset removes every chunk. Both backends store rows this way.
async fn rows_are_stored_in_chunks_and_read_back_whole(db: Db) {
    // 3 columns of 3,000,000 rows: 1.1 MB of feature words, two chunks.
    let n = 3_000_000;
    let (owner, d) = dataset(&db, n, 3, 1.0).await;
    let count = |part: &'static str| {
        let (db, id) = (&db, d.id.clone());
        async move {
            with_db!(db, |pool, pg| {
                let n: i64 = sqlx::query_scalar(
                    "SELECT COUNT(*) FROM dataset_row_chunks WHERE dataset_id = $1 AND part = $2",
                )
                .bind(&id)
                .bind(part)
                .fetch_one(pool)
                .await
                .unwrap();
                n
            })
        }
    };
    assert_eq!((count("features").await, count("labels").await), (2, 1));
    let (_, rows) = datasets::stored_rows(&db, &d.id).await.unwrap().unwrap();
    let back = rows.finish_with(super::encoded::LabelLayout::Bits).unwrap();
    assert_eq!(back.n_rows(), n);
    for j in 0..3 {
        let expected =
            BitVec::from_bools(&(0..n).map(|i| (i * 7 + j) % 3 == 0).collect::<Vec<_>>());
        assert_eq!(back.features.column(j), expected.words(), "column {j}");
    }
    let labels = BitVec::from_bools(&(0..n).map(|i| i % 5 == 0).collect::<Vec<_>>());
    assert_eq!(back.labels, Some(labels));
    datasets::delete(&db, &d.id, &owner.id).await.unwrap();
    assert_eq!((count("features").await, count("labels").await), (0, 0));
    assert!(datasets::stored_rows(&db, &d.id).await.unwrap().is_none());
}

#[tokio::test]
async fn rows_are_chunked_on_each_backend() {
    on_each_backend(
        "chunked rows",
        rows_are_stored_in_chunks_and_read_back_whole,
    )
    .await;
}

/// The database itself refuses to change or remove ledger entries.
#[tokio::test]
async fn the_ledger_is_append_only_in_the_database() {
    let Some(db) = fresh_postgres("append-only ledger", 4).await else {
        return;
    };
    let (_, d) = dataset(&db, 10, 1, 1.0).await;
    with_db!(&db, |pool, pg| {
        for sql in [
            "UPDATE ledger SET epsilon_units = 100",
            "DELETE FROM ledger",
            "TRUNCATE ledger CASCADE",
        ] {
            let err = sqlx::query(sql).execute(pool).await.unwrap_err();
            assert!(err.to_string().contains("append-only"), "{sql}: {err}");
        }
    });
    let b = super::ledger::budget(&db, &d.id).await.unwrap();
    assert_eq!(b.total.epsilon.to_f64(), 1.0);
}

/// Lists page by `seq` and show only what the caller owns or was granted
/// (`super::visible_page`, shared by the dataset, job and model lists).
async fn lists_page_through_what_the_caller_may_see(db: Db) {
    let (owner, first) = dataset(&db, 10, 1, 1.0).await;
    let (_, other) = dataset(&db, 10, 1, 1.0).await;
    let analyst = keys::create(&db, Role::Analyst, "a", &keys::generate_secret().unwrap())
        .await
        .unwrap();
    assert!(datasets::grant(&db, &other.id, &analyst.id).await.unwrap());
    let ids = |page: &super::Page<datasets::DatasetInfo>| {
        page.items.iter().map(|d| d.id.clone()).collect::<Vec<_>>()
    };
    // The owner sees only its own; the analyst only the one granted.
    let page = datasets::list_visible(&db, &owner.id, 0, 10).await.unwrap();
    assert_eq!(
        (ids(&page), page.next_after),
        (vec![first.id.clone()], None)
    );
    let page = datasets::list_visible(&db, &analyst.id, 0, 10)
        .await
        .unwrap();
    assert_eq!(
        (ids(&page), page.next_after),
        (vec![other.id.clone()], None)
    );
    assert!(datasets::grant(&db, &first.id, &analyst.id).await.unwrap());
    // Two visible, pages of one: the cursor moves on, then ends.
    let page = datasets::list_visible(&db, &analyst.id, 0, 1)
        .await
        .unwrap();
    assert_eq!(ids(&page), vec![first.id.clone()]);
    let after = page.next_after.expect("a second page");
    let page = datasets::list_visible(&db, &analyst.id, after, 1)
        .await
        .unwrap();
    assert_eq!(
        (ids(&page), page.next_after),
        (vec![other.id.clone()], None)
    );
}

#[tokio::test]
async fn lists_page_on_each_backend() {
    on_each_backend("list pages", lists_page_through_what_the_caller_may_see).await;
}
