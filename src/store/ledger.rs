//! The per-dataset privacy ledger (SPEC §2): an append-only list of entries
//! and the budget derived from it.
//!
//! - `total` entries set the dataset's total (the latest one counts);
//! - `charge` entries are admitted by [`super::jobs::submit`] inside a
//!   `BEGIN IMMEDIATE` transaction, before the job can read rows;
//! - `refund` entries return a charge whose job was cancelled before it
//!   started.
//!
//! Composition across jobs is basic: epsilons add, deltas add.

use serde::Serialize;
use sqlx::{SqliteConnection, SqlitePool};

use super::{Page, StoreError, now};

/// An (epsilon, delta) pair.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct Amount {
    /// Epsilon.
    pub epsilon: f64,
    /// Delta.
    pub delta: f64,
}

impl Amount {
    /// Zero.
    pub const ZERO: Amount = Amount {
        epsilon: 0.0,
        delta: 0.0,
    };

    fn minus(self, other: Amount) -> Amount {
        Amount {
            epsilon: self.epsilon - other.epsilon,
            delta: self.delta - other.delta,
        }
    }

    /// Whether `self` fits within `limit` in both coordinates (exact float
    /// comparison: a rounding error can only refuse, never overspend).
    pub fn fits_within(self, limit: Amount) -> bool {
        self.epsilon <= limit.epsilon && self.delta <= limit.delta
    }

    fn plus(self, other: Amount) -> Amount {
        Amount {
            epsilon: self.epsilon + other.epsilon,
            delta: self.delta + other.delta,
        }
    }
}

/// A dataset's budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BudgetState {
    /// The total the owner allows.
    pub total: Amount,
    /// Charges of jobs that may have read rows (final).
    pub spent: Amount,
    /// Charges of queued jobs that have not started (refundable on cancel).
    pub reserved: Amount,
    /// `total - spent - reserved`.
    pub remaining: Amount,
}

impl BudgetState {
    /// Everything charged and not refunded.
    pub fn charged(&self) -> Amount {
        self.spent.plus(self.reserved)
    }
}

/// Read the budget inside a transaction (on a bare connection its reads
/// would see different snapshots).
pub(crate) async fn budget_on(
    conn: &mut SqliteConnection,
    dataset_id: &str,
) -> Result<BudgetState, StoreError> {
    let total: Option<(f64, f64)> = sqlx::query_as(
        "SELECT epsilon, delta FROM ledger WHERE dataset_id = ? AND kind = 'total' ORDER BY seq DESC LIMIT 1",
    )
    .bind(dataset_id)
    .fetch_optional(&mut *conn)
    .await?;
    let (epsilon, delta) =
        total.ok_or_else(|| StoreError::Corrupt("dataset without a total".into()))?;
    let total = Amount { epsilon, delta };
    // Summed in Rust in ledger order, so the result does not depend on
    // SQLite's summation.
    let entries: Vec<(String, f64, f64)> = sqlx::query_as(
        "SELECT kind, epsilon, delta FROM ledger WHERE dataset_id = ? AND kind IN ('charge', 'refund') ORDER BY seq",
    )
    .bind(dataset_id)
    .fetch_all(&mut *conn)
    .await?;
    let mut charged = Amount::ZERO;
    for (kind, epsilon, delta) in entries {
        let a = Amount { epsilon, delta };
        charged = if kind == "charge" {
            charged.plus(a)
        } else {
            charged.minus(a)
        };
    }
    let reserved: Vec<(f64, f64)> = sqlx::query_as(
        "SELECT epsilon, delta FROM jobs WHERE dataset_id = ? AND state = 'queued' AND started_at IS NULL ORDER BY seq",
    )
    .bind(dataset_id)
    .fetch_all(&mut *conn)
    .await?;
    let reserved = reserved
        .into_iter()
        .fold(Amount::ZERO, |acc, (epsilon, delta)| {
            acc.plus(Amount { epsilon, delta })
        });
    let spent = charged.minus(reserved);
    Ok(BudgetState {
        total,
        spent,
        reserved,
        remaining: total.minus(charged),
    })
}

/// Read the budget, from one snapshot: its three reads in one read
/// transaction, so that an admission or a claim committed in between
/// cannot make `spent` or `reserved` wrong (even negative).
pub(crate) async fn budget(pool: &SqlitePool, dataset_id: &str) -> Result<BudgetState, StoreError> {
    let mut tx = pool.begin().await?;
    let budget = budget_on(&mut tx, dataset_id).await?;
    tx.commit().await?;
    Ok(budget)
}

/// Append an entry.
pub(crate) async fn append(
    conn: &mut SqliteConnection,
    dataset_id: &str,
    kind: &str,
    job_id: Option<&str>,
    amount: Amount,
    created_by: Option<&str>,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO ledger (dataset_id, kind, job_id, epsilon, delta, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(dataset_id)
    .bind(kind)
    .bind(job_id)
    .bind(amount.epsilon)
    .bind(amount.delta)
    .bind(now())
    .bind(created_by)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// What happened to a request to change the total.
#[derive(Debug)]
pub(crate) enum SetTotal {
    /// Recorded.
    Done(BudgetState),
    /// The new total is below what is already charged.
    BelowCharged(BudgetState),
}

/// Change a dataset's total (owner only; checked by the caller), recorded as
/// a `total` entry. Refused if the new total is below what is charged.
pub(crate) async fn set_total(
    pool: &SqlitePool,
    dataset_id: &str,
    total: Amount,
    by: &str,
) -> Result<SetTotal, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let before = budget_on(&mut tx, dataset_id).await?;
    if !before.charged().fits_within(total) {
        return Ok(SetTotal::BelowCharged(before));
    }
    append(&mut tx, dataset_id, "total", None, total, Some(by)).await?;
    let after = budget_on(&mut tx, dataset_id).await?;
    tx.commit().await?;
    Ok(SetTotal::Done(after))
}

/// One ledger entry.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Entry {
    /// Position in the dataset's ledger (global order).
    pub seq: i64,
    /// `total`, `charge` or `refund`.
    pub kind: String,
    /// The job charged or refunded.
    pub job_id: Option<String>,
    /// Epsilon of the entry (the new total for `total`).
    pub epsilon: f64,
    /// Delta of the entry.
    pub delta: f64,
    /// RFC 3339.
    pub created_at: String,
}

/// A page of a dataset's entries.
pub(crate) async fn entries(
    pool: &SqlitePool,
    dataset_id: &str,
    after: i64,
    page_size: u32,
) -> Result<Page<Entry>, StoreError> {
    let rows: Vec<Entry> = sqlx::query_as(
        "SELECT seq, kind, job_id, epsilon, delta, created_at FROM ledger WHERE dataset_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    )
    .bind(dataset_id)
    .bind(after)
    .bind(i64::from(page_size) + 1)
    .fetch_all(pool)
    .await?;
    Ok(Page::from_rows(
        rows.into_iter().map(|e| (e.seq, e)).collect(),
        page_size,
    ))
}

/// Epsilon charged (and not refunded) over all datasets, for /metrics.
pub(crate) async fn charged_all(pool: &SqlitePool) -> Result<f64, StoreError> {
    Ok(sqlx::query_scalar(
        "SELECT COALESCE(SUM(CASE kind WHEN 'charge' THEN epsilon ELSE -epsilon END), 0.0) FROM ledger WHERE kind IN ('charge', 'refund')",
    )
    .fetch_one(pool)
    .await?)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::data::{BitMatrix, BitVec, Dataset};
    use crate::store::datasets::{self, Created, NewDataset};
    use crate::store::idempotency::StoredResponse;
    use crate::store::jobs::{self, NewJob, Submitted};
    use crate::store::keys::{self, Role};

    #[derive(Debug, Clone)]
    enum Op {
        Submit(f64),
        Cancel(usize),
        SetTotal(f64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1u32..=8).prop_map(|k| Op::Submit(f64::from(k) * 0.1)),
            (0usize..8).prop_map(Op::Cancel),
            (1u32..=30).prop_map(|k| Op::SetTotal(f64::from(k) * 0.1)),
        ]
    }

    fn respond(_: &impl serde::Serialize) -> StoredResponse {
        StoredResponse {
            status: 200,
            location: None,
            body: String::new(),
        }
    }

    /// A fresh store in `dir` with an owner key and one dataset of `n` rows
    /// (one literal, labels alternating) whose total is `epsilon`.
    async fn pool_with_dataset(
        dir: &std::path::Path,
        n: usize,
        epsilon: f64,
    ) -> (SqlitePool, keys::KeyInfo, datasets::DatasetInfo) {
        let pool = crate::store::open(&dir.join("t.db"), 4).await.unwrap();
        let owner = keys::create(&pool, Role::Owner, "o", "secret")
            .await
            .unwrap();
        let bits: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
        let data = Dataset {
            features: BitMatrix::from_columns(n, &[BitVec::from_bools(&bits)]),
            labels: Some(BitVec::from_bools(&bits)),
            targets: None,
            one_hot_groups: vec![],
        };
        let new = NewDataset {
            owner_id: &owner.id,
            name: "d",
            schema_json: "{}",
            data: &data,
            rejected_rows: 0,
            total: Amount {
                epsilon,
                delta: 0.0,
            },
        };
        let Created::New(d) = datasets::create(&pool, new, None, respond).await.unwrap() else {
            panic!("created")
        };
        (pool, owner, d)
    }

    /// Run `ops` against a fresh file; after each one the charges fit the
    /// total, and a refused charge leaves the ledger as it was.
    async fn run(ops: Vec<Op>) {
        let dir = tempfile::tempdir().unwrap();
        let (pool, owner, d) = pool_with_dataset(dir.path(), 3, 1.0).await;
        let mut job_ids = Vec::new();
        for op in ops {
            let before = entries(&pool, &d.id, 0, 1000).await.unwrap().items.len();
            match op {
                Op::Submit(eps) => {
                    let new = NewJob {
                        dataset_id: &d.id,
                        submitted_by: &owner.id,
                        params_json: "{}",
                        tau: 1,
                        charge: Amount {
                            epsilon: eps,
                            delta: 0.0,
                        },
                        max_active_per_key: 1000,
                    };
                    match jobs::submit(&pool, new, None, respond).await.unwrap() {
                        Submitted::New(j) => job_ids.push(j.id),
                        Submitted::OverBudget { .. } => {
                            let after = entries(&pool, &d.id, 0, 1000).await.unwrap().items.len();
                            assert_eq!(before, after, "a refusal writes nothing");
                        }
                        _ => panic!("unexpected outcome"),
                    }
                }
                Op::Cancel(i) => {
                    if let Some(id) = job_ids.get(i) {
                        jobs::cancel(&pool, id, &owner.id).await.unwrap();
                    }
                }
                Op::SetTotal(eps) => {
                    set_total(
                        &pool,
                        &d.id,
                        Amount {
                            epsilon: eps,
                            delta: 0.0,
                        },
                        &owner.id,
                    )
                    .await
                    .unwrap();
                }
            }
            let b = budget(&pool, &d.id).await.unwrap();
            assert!(b.charged().fits_within(b.total), "overspent: {b:?}");
            assert!(b.remaining.epsilon >= 0.0, "{b:?}");
        }
        pool.close().await;
    }

    /// A budget read while jobs are admitted must come from one snapshot:
    /// with no worker nothing ever starts, so `spent` is exactly zero. Read
    /// statement by statement, an admission landing between the read of the
    /// charges and the read of the queued jobs made `spent` negative.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_budget_read_is_one_snapshot_while_jobs_are_admitted() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, owner, d) = pool_with_dataset(dir.path(), 1, 1000.0).await;
        let writer = {
            let (pool, dataset, owner) = (pool.clone(), d.id.clone(), owner.id.clone());
            tokio::spawn(async move {
                for _ in 0..300 {
                    let new = NewJob {
                        dataset_id: &dataset,
                        submitted_by: &owner,
                        params_json: "{}",
                        tau: 1,
                        charge: Amount {
                            epsilon: 0.125,
                            delta: 0.0,
                        },
                        max_active_per_key: 10_000,
                    };
                    let outcome = jobs::submit(&pool, new, None, respond).await.unwrap();
                    assert!(matches!(outcome, Submitted::New(_)));
                }
            })
        };
        let mut reads = 0;
        while !writer.is_finished() {
            let b = budget(&pool, &d.id).await.unwrap();
            assert_eq!(b.spent, Amount::ZERO, "after {reads} reads: {b:?}");
            reads += 1;
        }
        writer.await.unwrap();
        assert!(reads > 0);
        pool.close().await;
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn no_sequence_of_operations_overspends(ops in proptest::collection::vec(op(), 1..25)) {
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run(ops));
        }
    }
}
