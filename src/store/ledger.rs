//! The per-dataset privacy ledger (SPEC §2): an append-only list of entries
//! and the budget derived from it.
//!
//! - `total` entries set the dataset's total (the latest one counts);
//! - `charge` entries are admitted by [`super::jobs::submit`] inside a
//!   `BEGIN IMMEDIATE` transaction, before the job can read rows;
//! - `refund` entries return a charge whose job was cancelled before it
//!   started.
//!
//! Composition across jobs is the dataset's [`Accounting`]: basic (epsilons
//! add, deltas add) or the zCDP privacy filter of [`crate::privacy::filter`].
//! Each charge records its privacy-loss kind and rho beside its (epsilon,
//! delta), so the filter can compose the tighter quantity.
//!
//! Every amount is an integer count of units
//! ([`crate::privacy::budget_units`]: epsilon and rho in 1e-12, delta in
//! 1e-18), in the columns `epsilon_units`, `delta_units` and `rho_units`:
//! sums and comparisons are exact, on both backends and in SQL.

use serde::Serialize;

use super::{Page, StoreError, now};
use crate::privacy::budget_units::{DeltaUnits, EpsilonUnits, RhoUnits};
use crate::privacy::filter::{Accounting, Charge, Charged, LossKind, rho_budget_units};

pub use crate::privacy::budget_units::Amount;

/// A dataset's budget.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BudgetState {
    /// The total the owner allows.
    pub total: Amount,
    /// Charges of jobs that may have read rows (final).
    pub spent: Amount,
    /// Charges of queued jobs that have not started (refundable on cancel).
    pub reserved: Amount,
    /// `total - spent - reserved`, under basic composition.
    pub remaining: Amount,
    /// How the dataset composes its charges.
    pub accounting: Accounting,
    /// Under the zCDP filter: the charges in rho terms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<FilterBudget>,
    /// Everything charged and not refunded, in the terms of both conditions
    /// of the filter (internal: admission reads it).
    #[serde(skip)]
    pub(crate) sums: Charged,
}

/// A zCDP-filter dataset's budget in rho terms (docs/privacy.md,
/// "Accounting across jobs").
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FilterBudget {
    /// The largest total rho the filter admits at the dataset's (epsilon,
    /// delta): `rho + 2 sqrt(rho ln(1/delta)) <= epsilon`, rounded down to
    /// the ledger's units; `null` when delta is 0 (then only pure charges by
    /// basic composition fit).
    pub rho_total: Option<RhoUnits>,
    /// The rho of every charge not refunded (pure epsilon counts as
    /// epsilon^2/2, rounded up); `null` if a charge has no zCDP description.
    pub rho_charged: Option<RhoUnits>,
    /// `rho_total - rho_charged`, when both are known.
    pub rho_remaining: Option<RhoUnits>,
    /// Whether every charge is pure, so that basic composition of the
    /// epsilons also applies (the filter takes the better of the two).
    pub pure_only: bool,
}

impl BudgetState {
    /// Everything charged and not refunded.
    pub fn charged(&self) -> Amount {
        Amount {
            epsilon: self.sums.epsilon,
            delta: self.sums.delta,
        }
    }

    /// Whether a new charge fits (exact integer comparisons).
    pub fn admits(&self, charge: &Charge) -> bool {
        self.sums
            .plus(charge)
            .is_some_and(|s| s.within(self.total, self.accounting))
    }

    /// Whether what is charged fits a (new) total.
    pub fn charged_fits(&self, total: Amount) -> bool {
        self.sums.within(total, self.accounting)
    }

    /// How many more charges of `charge` would fit now (at most `cap`).
    pub fn how_many_more(&self, charge: &Charge, cap: u64) -> u64 {
        self.sums
            .how_many_more(charge, self.total, self.accounting, cap)
    }
}

/// A ledger row's amounts as stored.
#[derive(Debug, sqlx::FromRow)]
struct StoredAmounts {
    epsilon_units: i64,
    delta_units: i64,
    loss_kind: Option<String>,
    rho_units: Option<i64>,
}

impl StoredAmounts {
    fn amount(&self) -> Amount {
        Amount {
            epsilon: EpsilonUnits::from_units(self.epsilon_units),
            delta: DeltaUnits::from_units(self.delta_units),
        }
    }

    /// The charge the entry describes; `None` for an entry older than the
    /// loss descriptions (and for totals).
    fn described(&self) -> Result<Option<Charge>, StoreError> {
        let Some(kind) = &self.loss_kind else {
            return Ok(None);
        };
        let kind = LossKind::parse(kind)
            .ok_or_else(|| StoreError::Corrupt(format!("ledger entry: loss kind {kind}")))?;
        let amount = self.amount();
        Ok(Some(Charge {
            kind,
            epsilon: amount.epsilon,
            delta: amount.delta,
            rho: self.rho_units.map(RhoUnits::from_units),
        }))
    }

    /// The charge the entry counts for: its description, or for an old
    /// entry its (epsilon, delta) under basic composition, as it always did.
    fn counted(&self) -> Result<Charge, StoreError> {
        match self.described()? {
            Some(c) => Ok(c),
            None => Charge::legacy(self.amount())
                .map_err(|e| StoreError::Corrupt(format!("ledger entry: {e}"))),
        }
    }
}

/// A charge or refund row, for the budget.
#[derive(sqlx::FromRow)]
struct MovementRow {
    kind: String,
    #[sqlx(flatten)]
    amounts: StoredAmounts,
}

fn overflow() -> StoreError {
    StoreError::Corrupt("the ledger's sums overflow 64 bits".into())
}

/// Read the budget inside a transaction (on a bare connection its reads
/// would see different snapshots).
pub(crate) async fn budget_on(
    conn: impl Into<super::db::Conn<'_>>,
    dataset_id: &str,
) -> Result<BudgetState, StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        let total: Option<(i64, i64)> = sqlx::query_as(
        "SELECT epsilon_units, delta_units FROM ledger WHERE dataset_id = $1 AND kind = 'total' ORDER BY seq DESC LIMIT 1",
    )
    .bind(dataset_id)
    .fetch_optional(&mut *conn)
    .await?;
        let (epsilon, delta) =
            total.ok_or_else(|| StoreError::Corrupt("dataset without a total".into()))?;
        let total = Amount {
            epsilon: EpsilonUnits::from_units(epsilon),
            delta: DeltaUnits::from_units(delta),
        };
        let accounting: Option<String> =
            sqlx::query_scalar("SELECT accounting FROM datasets WHERE id = $1")
                .bind(dataset_id)
                .fetch_optional(&mut *conn)
                .await?;
        let accounting = match accounting.as_deref() {
            Some(name) => Accounting::parse(name)
                .ok_or_else(|| StoreError::Corrupt(format!("unknown accounting {name}")))?,
            None => Accounting::Basic,
        };
        // Summed in Rust, because the filter needs each entry's kind as well
        // as its amounts; integer sums, so the order does not matter.
        let entries: Vec<MovementRow> = sqlx::query_as(
        "SELECT kind, epsilon_units, delta_units, loss_kind, rho_units FROM ledger WHERE dataset_id = $1 AND kind IN ('charge', 'refund') ORDER BY seq",
    )
    .bind(dataset_id)
    .fetch_all(&mut *conn)
    .await?;
        let mut sums = Charged::new();
        for entry in entries {
            let charge = entry.amounts.counted()?;
            sums = if entry.kind == "charge" {
                sums.plus(&charge)
            } else {
                sums.minus(&charge)
            }
            .ok_or_else(overflow)?;
        }
        let reserved: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT epsilon_units, delta_units FROM jobs WHERE dataset_id = $1 AND state = 'queued' AND started_at IS NULL ORDER BY seq",
    )
    .bind(dataset_id)
    .fetch_all(&mut *conn)
    .await?;
        let reserved = reserved
            .into_iter()
            .try_fold(Amount::ZERO, |acc, (epsilon, delta)| {
                acc.checked_add(Amount {
                    epsilon: EpsilonUnits::from_units(epsilon),
                    delta: DeltaUnits::from_units(delta),
                })
            })
            .ok_or_else(overflow)?;
        let charged = Amount {
            epsilon: sums.epsilon,
            delta: sums.delta,
        };
        let spent = charged.checked_sub(reserved).ok_or_else(overflow)?;
        let filter = (accounting == Accounting::ZcdpFilter).then(|| {
            let rho_total = rho_budget_units(total);
            FilterBudget {
                rho_total,
                rho_charged: sums.rho,
                rho_remaining: rho_total.zip(sums.rho).and_then(|(t, c)| t.checked_sub(c)),
                pure_only: sums.all_pure,
            }
        });
        Ok(BudgetState {
            total,
            spent,
            reserved,
            remaining: total.checked_sub(charged).ok_or_else(overflow)?,
            accounting,
            filter,
            sums,
        })
    })
}

/// Read the budget, from one snapshot: its three reads in one read
/// transaction, so that an admission or a claim committed in between
/// cannot make `spent` or `reserved` wrong (even negative).
pub(crate) async fn budget(db: &super::Db, dataset_id: &str) -> Result<BudgetState, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = if pg {
            // One snapshot for the three reads (PostgreSQL's default, read
            // committed, takes one per statement). Only for this read-only
            // view: admissions stay read committed behind the dataset's row
            // lock, so that they read what committed while they waited.
            pool.begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .await?
        } else {
            pool.begin().await?
        };
        let budget = budget_on(&mut tx, dataset_id).await?;
        tx.commit().await?;
        Ok(budget)
    })
}

/// Append a `total` entry.
pub(crate) async fn append_total(
    conn: impl Into<super::db::Conn<'_>>,
    dataset_id: &str,
    total: Amount,
    created_by: &str,
) -> Result<(), StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        insert(conn, dataset_id, "total", None, total, None, created_by).await
    })
}

/// Append a job's (or an evaluation's) `charge`, with its privacy-loss kind
/// and rho; the ledger's (epsilon, delta) is its basic-composition pair.
pub(crate) async fn append_charge(
    conn: impl Into<super::db::Conn<'_>>,
    dataset_id: &str,
    job_id: &str,
    charge: &Charge,
    created_by: &str,
) -> Result<(), StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        insert(
            conn,
            dataset_id,
            "charge",
            Some(job_id),
            charge.basic(),
            Some((charge.kind, charge.rho)),
            created_by,
        )
        .await
    })
}

/// One `INSERT` into the ledger (the only statement that writes it, with
/// [`append_refund`]'s copy of a charge).
async fn insert(
    conn: impl Into<super::db::Conn<'_>>,
    dataset_id: &str,
    kind: &str,
    job_id: Option<&str>,
    amount: Amount,
    loss: Option<(LossKind, Option<RhoUnits>)>,
    created_by: &str,
) -> Result<(), StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        sqlx::query(
        "INSERT INTO ledger (dataset_id, kind, job_id, epsilon_units, delta_units, loss_kind, rho_units, created_at, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(dataset_id)
    .bind(kind)
    .bind(job_id)
    .bind(amount.epsilon.units())
    .bind(amount.delta.units())
    .bind(loss.map(|(k, _)| k.as_str()))
    .bind(loss.and_then(|(_, rho)| rho).map(RhoUnits::units))
    .bind(now())
    .bind(created_by)
    .execute(&mut *conn)
    .await?;
        Ok(())
    })
}

/// Append the `refund` of a job's charge: the same amounts and loss as the
/// charge entry, copied from it so they cannot differ.
pub(crate) async fn append_refund(
    conn: impl Into<super::db::Conn<'_>>,
    dataset_id: &str,
    job_id: &str,
    created_by: Option<&str>,
) -> Result<(), StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        let done = sqlx::query(
        "INSERT INTO ledger (dataset_id, kind, job_id, epsilon_units, delta_units, loss_kind, rho_units, created_at, created_by) SELECT dataset_id, 'refund', job_id, epsilon_units, delta_units, loss_kind, rho_units, $1, $2 FROM ledger WHERE dataset_id = $3 AND job_id = $4 AND kind = 'charge'",
    )
    .bind(now())
    .bind(created_by)
    .bind(dataset_id)
    .bind(job_id)
    .execute(&mut *conn)
    .await?;
        if done.rows_affected() != 1 {
            return Err(StoreError::Corrupt(format!(
                "refund of {job_id}: no charge entry to return"
            )));
        }
        Ok(())
    })
}

/// The charge recorded for a job (or an evaluation), if any.
pub(crate) async fn charge_of(
    conn: impl Into<super::db::Conn<'_>>,
    job_id: &str,
) -> Result<Option<Charge>, StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        let row: Option<StoredAmounts> = sqlx::query_as(
            "SELECT epsilon_units, delta_units, loss_kind, rho_units FROM ledger WHERE job_id = $1 AND kind = 'charge'",
        )
        .bind(job_id)
        .fetch_optional(&mut *conn)
        .await?;
        row.as_ref().map(StoredAmounts::counted).transpose()
    })
}

/// What happened to a request to change the total.
#[derive(Debug)]
pub(crate) enum SetTotal {
    /// Recorded.
    Done(BudgetState),
    /// The new total is below what is already charged.
    BelowCharged(BudgetState),
    /// A zCDP-filter dataset with a charge in its ledger: the filter's
    /// parameters come from the total before the first release, so the
    /// total is fixed from then on (docs/privacy.md, "zCDP filter").
    FilterFixed,
}

/// Change a dataset's total (owner only; checked by the caller), recorded as
/// a `total` entry. Refused if the new total is below what is charged.
pub(crate) async fn set_total(
    db: &super::Db,
    dataset_id: &str,
    total: Amount,
    by: &str,
) -> Result<SetTotal, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        super::db::lock_dataset(&mut tx, dataset_id).await?;
        let before = budget_on(&mut tx, dataset_id).await?;
        if before.accounting == Accounting::ZcdpFilter {
            // Any charge, even one refunded since: the filter's proof fixes
            // its parameters before the first admission (issue 26, item 4).
            let charges: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM ledger WHERE dataset_id = $1 AND kind = 'charge'",
            )
            .bind(dataset_id)
            .fetch_one(&mut *tx)
            .await?;
            if charges > 0 {
                return Ok(SetTotal::FilterFixed);
            }
        }
        if !before.charged_fits(total) {
            return Ok(SetTotal::BelowCharged(before));
        }
        append_total(&mut tx, dataset_id, total, by).await?;
        let after = budget_on(&mut tx, dataset_id).await?;
        tx.commit().await?;
        Ok(SetTotal::Done(after))
    })
}

/// One ledger entry.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// Position in the dataset's ledger (global order).
    pub seq: i64,
    /// `total`, `charge` or `refund`.
    pub kind: String,
    /// The job charged or refunded.
    pub job_id: Option<String>,
    /// Epsilon of the entry (the new total for `total`).
    pub epsilon: EpsilonUnits,
    /// Delta of the entry.
    pub delta: DeltaUnits,
    /// RFC 3339.
    pub created_at: String,
    /// A charge's or refund's privacy-loss description (`null` for totals
    /// and for entries older than the descriptions).
    pub loss: Option<Charge>,
}

#[derive(sqlx::FromRow)]
struct EntryRow {
    seq: i64,
    kind: String,
    job_id: Option<String>,
    #[sqlx(flatten)]
    amounts: StoredAmounts,
    created_at: String,
}

impl EntryRow {
    fn into_domain(self) -> Result<Entry, StoreError> {
        let amount = self.amounts.amount();
        Ok(Entry {
            seq: self.seq,
            kind: self.kind,
            job_id: self.job_id,
            epsilon: amount.epsilon,
            delta: amount.delta,
            created_at: self.created_at,
            loss: self.amounts.described()?,
        })
    }
}

/// A page of a dataset's entries.
pub(crate) async fn entries(
    db: &super::Db,
    dataset_id: &str,
    after: i64,
    page_size: u32,
) -> Result<Page<Entry>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let rows: Vec<EntryRow> = sqlx::query_as(
        "SELECT seq, kind, job_id, epsilon_units, delta_units, loss_kind, rho_units, created_at FROM ledger WHERE dataset_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    )
    .bind(dataset_id)
    .bind(after)
    .bind(i64::from(page_size) + 1)
    .fetch_all(pool)
    .await?;
        let rows = rows
            .into_iter()
            .map(|r| r.into_domain().map(|e| (e.seq, e)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(rows, page_size))
    })
}

/// Epsilon charged (and not refunded) over all datasets, for /metrics: an
/// integer sum in SQL (PostgreSQL's SUM of BIGINT is NUMERIC, cast back;
/// either backend errors rather than wraps past 64 bits).
pub(crate) async fn charged_all(db: &super::Db) -> Result<EpsilonUnits, StoreError> {
    super::with_db!(db, |pool, pg| {
        let units: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(CASE kind WHEN 'charge' THEN epsilon_units ELSE -epsilon_units END), 0) AS BIGINT) FROM ledger WHERE kind IN ('charge', 'refund')",
    )
    .fetch_one(pool)
    .await?;
        Ok(EpsilonUnits::from_units(units))
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::data::{BitMatrix, BitVec, Dataset};
    use crate::privacy::filter::Loss;
    use crate::store::datasets::{self, Created, NewDataset};
    use crate::store::idempotency::StoredResponse;
    use crate::store::jobs::{self, NewJob, Submitted};
    use crate::store::keys::{self, Role};

    #[derive(Debug, Clone)]
    enum Op {
        Submit(Charge),
        Cancel(usize),
        SetTotal(f64),
    }

    /// The charge of a run whose loss is `loss` (rounded up to units).
    fn charge(loss: Loss) -> Charge {
        Charge::of(&loss).unwrap()
    }

    /// The charge of a job that asked for pure `epsilon`.
    fn pure(epsilon: f64) -> Charge {
        Charge::pure(EpsilonUnits::nearest(epsilon).unwrap()).unwrap()
    }

    /// A total as an owner sets it.
    fn total(epsilon: f64, delta: f64) -> Amount {
        crate::privacy::budget_units::total(epsilon, delta).unwrap()
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1u32..=8).prop_map(|k| Op::Submit(charge(Loss::Pure {
                epsilon: f64::from(k) * 0.1
            }))),
            (1u32..=8).prop_map(|k| Op::Submit(charge(Loss::Zcdp {
                rho: f64::from(k) * 0.002,
                epsilon: f64::from(k) * 0.05,
                delta: 1e-7,
            }))),
            (1u32..=8).prop_map(|k| Op::Submit(charge(Loss::Approx {
                epsilon: f64::from(k) * 0.1,
                delta: 1e-7,
            }))),
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
    /// (one literal, labels alternating) whose total is (epsilon, delta),
    /// composed by `accounting`.
    async fn pool_with_accounting(
        dir: &std::path::Path,
        n: usize,
        (epsilon, delta): (f64, f64),
        accounting: Accounting,
    ) -> (crate::store::Db, keys::KeyInfo, datasets::DatasetInfo) {
        let pool = crate::store::testing::fresh_sqlite(dir, 4).await;
        dataset_in(pool, n, (epsilon, delta), accounting).await
    }

    /// An owner key and one dataset as [`pool_with_accounting`], in `pool`.
    async fn dataset_in(
        pool: crate::store::Db,
        n: usize,
        (epsilon, delta): (f64, f64),
        accounting: Accounting,
    ) -> (crate::store::Db, keys::KeyInfo, datasets::DatasetInfo) {
        let owner = keys::create(&pool, Role::Owner, "o", "secret")
            .await
            .unwrap();
        let bits: Vec<bool> = (0..n).map(|i| i % 2 == 0).collect();
        let data = Dataset {
            features: BitMatrix::from_columns(n, &[BitVec::from_bools(&bits)]),
            labels: Some(BitVec::from_bools(&bits)),
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
            total: total(epsilon, delta),
            accounting,
            local_dp: None,
            content_digest: "",
            allow_duplicate: true,
        };
        let Created::New(d) = datasets::create(&pool, new, None, respond).await.unwrap() else {
            panic!("created")
        };
        (pool, owner, *d)
    }

    /// Run `ops` against a fresh file; after each one the charges fit the
    /// total under the dataset's accounting (recomputed here from the
    /// ledger's own rows), and a refused charge leaves the ledger as it was.
    async fn run(ops: Vec<Op>, accounting: Accounting) {
        let dir = tempfile::tempdir().unwrap();
        let pool = crate::store::testing::fresh_sqlite(dir.path(), 4).await;
        run_on(pool, ops, accounting).await;
    }

    /// [`run`] on PostgreSQL (a fresh database), when one is configured.
    async fn run_postgres(ops: Vec<Op>, accounting: Accounting) {
        if let Some(pool) = crate::store::testing::fresh_postgres("ledger property test", 4).await {
            run_on(pool, ops, accounting).await;
        }
    }

    /// [`run`] on a given store.
    async fn run_on(pool: crate::store::Db, ops: Vec<Op>, accounting: Accounting) {
        let (pool, owner, d) = dataset_in(pool, 3, (1.0, 1e-6), accounting).await;
        let mut job_ids = Vec::new();
        for op in ops {
            let before = entries(&pool, &d.id, 0, 1000).await.unwrap().items.len();
            match op {
                Op::Submit(charge) => {
                    let new = NewJob {
                        dataset_id: &d.id,
                        submitted_by: &owner.id,
                        params_json: "{}",
                        tau: 1,
                        charge,
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
                    set_total(&pool, &d.id, total(eps, 1e-6), &owner.id)
                        .await
                        .unwrap();
                }
            }
            let b = budget(&pool, &d.id).await.unwrap();
            let recomputed = recompute(&pool, &d.id).await;
            assert_eq!(recomputed, b.sums, "the SQL sums and the budget agree");
            assert!(recomputed.within(b.total, accounting), "overspent: {b:?}");
            if accounting == Accounting::Basic {
                assert!(b.charged().fits_within(b.total), "overspent: {b:?}");
                assert!(b.remaining.epsilon >= EpsilonUnits::ZERO, "{b:?}");
                assert!(b.remaining.delta >= DeltaUnits::ZERO, "{b:?}");
            }
        }
        pool.close().await;
    }

    /// The charges minus refunds, summed by the database itself: integer
    /// sums of the ledger's columns (`rho_units` summed over the rows that
    /// have one, and counted to see whether every row does).
    async fn recompute(db: &crate::store::Db, dataset_id: &str) -> Charged {
        crate::store::with_db!(db, |pool, pg| {
            let (epsilon, delta, rho, with_rho, rows, pure): (i64, i64, i64, i64, i64, i64) =
                sqlx::query_as(
                    "SELECT CAST(COALESCE(SUM(CASE kind WHEN 'charge' THEN epsilon_units ELSE -epsilon_units END), 0) AS BIGINT), \
                            CAST(COALESCE(SUM(CASE kind WHEN 'charge' THEN delta_units ELSE -delta_units END), 0) AS BIGINT), \
                            CAST(COALESCE(SUM(CASE kind WHEN 'charge' THEN rho_units ELSE -rho_units END), 0) AS BIGINT), \
                            COUNT(rho_units), COUNT(*), \
                            COUNT(CASE WHEN kind = 'charge' AND loss_kind = 'pure' THEN 1 END) - COUNT(CASE WHEN kind = 'charge' THEN 1 END) \
                     FROM ledger WHERE dataset_id = $1 AND kind IN ('charge', 'refund')",
                )
                .bind(dataset_id)
                .fetch_one(pool)
                .await
                .unwrap();
            Charged {
                epsilon: EpsilonUnits::from_units(epsilon),
                delta: DeltaUnits::from_units(delta),
                rho: (with_rho == rows).then_some(RhoUnits::from_units(rho)),
                all_pure: pure == 0,
            }
        })
    }

    /// Admit jobs of `charge` on a fresh dataset of total (1, 1e-6) until one
    /// is refused; how many were admitted.
    async fn admitted_until_refused(accounting: Accounting, charge: Charge) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let pool = crate::store::testing::fresh_sqlite(dir.path(), 4).await;
        admitted_until_refused_on(pool, accounting, charge).await
    }

    /// [`admitted_until_refused`] on a given store.
    async fn admitted_until_refused_on(
        pool: crate::store::Db,
        accounting: Accounting,
        charge: Charge,
    ) -> usize {
        let (pool, owner, d) = dataset_in(pool, 3, (1.0, 1e-6), accounting).await;
        let mut n = 0;
        loop {
            let new = NewJob {
                dataset_id: &d.id,
                submitted_by: &owner.id,
                params_json: "{}",
                tau: 1,
                charge,
                max_active_per_key: 100_000,
            };
            match jobs::submit(&pool, new, None, respond).await.unwrap() {
                Submitted::New(_) => n += 1,
                Submitted::OverBudget { .. } => break,
                _ => panic!("unexpected outcome"),
            }
        }
        pool.close().await;
        n
    }

    /// Issue 15: basic composition admits exactly 100 jobs of epsilon 0.01
    /// under a total of 1 (each charged 1e10 units, the total 1e12); in
    /// doubles the sum of 100 x 0.01 lands a hair above 1 and the count was
    /// 99 or 100. The filter admits 349: rho 5e-5 (5e7 units) each against
    /// the rho budget of (1, 1e-6), 0.0174689 rounded down to 17_468_904_751
    /// units, and 349 x 5e7 = 17_450_000_000 fits while 350 x 5e7 =
    /// 17_500_000_000 does not: the same count as in doubles, since the
    /// budget lies 0.38 of a job's rho above 349 jobs and 0.62 below 350,
    /// far beyond any rounding to units.
    #[tokio::test]
    async fn the_filter_admits_349_jobs_of_epsilon_001_where_basic_admits_exactly_100() {
        let job = pure(0.01);
        assert_eq!(admitted_until_refused(Accounting::Basic, job).await, 100);
        assert_eq!(
            admitted_until_refused(Accounting::ZcdpFilter, job).await,
            349
        );
    }

    /// The same counts on PostgreSQL: integer amounts, so both backends
    /// admit exactly the same jobs.
    #[tokio::test]
    async fn postgres_admits_exactly_what_sqlite_admits() {
        let job = pure(0.01);
        let Some(pool) = crate::store::testing::fresh_postgres("admission counts", 4).await else {
            return;
        };
        let basic = admitted_until_refused_on(pool.clone(), Accounting::Basic, job).await;
        assert_eq!(basic, 100);
        assert_eq!(basic, admitted_until_refused(Accounting::Basic, job).await);
        let pool = crate::store::testing::fresh_postgres("admission counts", 4)
            .await
            .unwrap();
        let filter = admitted_until_refused_on(pool, Accounting::ZcdpFilter, job).await;
        assert_eq!(filter, 349);
    }

    #[tokio::test]
    async fn a_filter_dataset_shows_its_rho_budget_and_refunds_rho() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, owner, d) =
            pool_with_accounting(dir.path(), 3, (1.0, 1e-6), Accounting::ZcdpFilter).await;
        let new = NewJob {
            dataset_id: &d.id,
            submitted_by: &owner.id,
            params_json: "{}",
            tau: 1,
            charge: charge(Loss::Zcdp {
                rho: 0.01,
                epsilon: 0.6,
                delta: 1e-7,
            }),
            max_active_per_key: 10,
        };
        let Submitted::New(job) = jobs::submit(&pool, new, None, respond).await.unwrap() else {
            panic!("admitted")
        };
        let b = budget(&pool, &d.id).await.unwrap();
        let f = b.filter.unwrap();
        // The double 0.01 is 2e-19 above 0.01: a Gaussian learner's rho of
        // that double is charged one unit more than the decimal.
        assert_eq!(f.rho_charged, Some(RhoUnits::from_units(10_000_000_001)));
        assert!((f.rho_total.unwrap().to_f64() - 0.0174689).abs() < 1e-7);
        assert!(!f.pure_only);
        // Pure 0.01 jobs that still fit: (0.0174689 - 0.01) / 5e-5 = 149.38.
        assert_eq!(b.how_many_more(&pure(0.01), 10_000), 149);
        jobs::cancel(&pool, &job.id, &owner.id).await.unwrap();
        let b = budget(&pool, &d.id).await.unwrap();
        assert_eq!(b.filter.unwrap().rho_charged, Some(RhoUnits::ZERO));
        let ledger = entries(&pool, &d.id, 0, 100).await.unwrap().items;
        let refund = ledger.iter().find(|e| e.kind == "refund").unwrap();
        assert_eq!(refund.loss, ledger[1].loss);
        assert!(refund.loss.is_some());
        pool.close().await;
    }

    /// A budget read while jobs are admitted must come from one snapshot:
    /// with no worker nothing ever starts, so `spent` is exactly zero. Read
    /// statement by statement, an admission landing between the read of the
    /// charges and the read of the queued jobs made `spent` negative.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_budget_read_is_one_snapshot_while_jobs_are_admitted() {
        let dir = tempfile::tempdir().unwrap();
        let pool = crate::store::testing::fresh_sqlite(dir.path(), 4).await;
        budget_reads_while_admitting(pool).await;
    }

    /// The same on PostgreSQL, where the read needs repeatable read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_budget_read_is_one_snapshot_on_postgres() {
        if let Some(pool) = crate::store::testing::fresh_postgres("budget snapshot", 4).await {
            budget_reads_while_admitting(pool).await;
        }
    }

    async fn budget_reads_while_admitting(pool: crate::store::Db) {
        let (pool, owner, d) = dataset_in(pool, 1, (1000.0, 0.0), Accounting::Basic).await;
        let writer = {
            let (pool, dataset, owner) = (pool.clone(), d.id.clone(), owner.id.clone());
            tokio::spawn(async move {
                for _ in 0..300 {
                    let new = NewJob {
                        dataset_id: &dataset,
                        submitted_by: &owner,
                        params_json: "{}",
                        tau: 1,
                        charge: pure(0.125),
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
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run(ops, Accounting::Basic));
        }

        #[test]
        fn no_sequence_of_operations_overspends_the_filter(ops in proptest::collection::vec(op(), 1..25)) {
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run(ops, Accounting::ZcdpFilter));
        }

        #[test]
        fn no_sequence_of_operations_overspends_on_postgres(ops in proptest::collection::vec(op(), 1..25), filter: bool) {
            let accounting = if filter { Accounting::ZcdpFilter } else { Accounting::Basic };
            tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run_postgres(ops, accounting));
        }
    }
}
