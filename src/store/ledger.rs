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

/// Read the budget inside a transaction (or on any connection).
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

/// Read the budget.
pub(crate) async fn budget(pool: &SqlitePool, dataset_id: &str) -> Result<BudgetState, StoreError> {
    let mut conn = pool.acquire().await?;
    budget_on(&mut conn, dataset_id).await
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
