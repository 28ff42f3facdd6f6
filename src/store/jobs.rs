//! Training jobs: submission with ledger admission, claiming by workers,
//! cancellation with refunds, completion, and recovery after a restart.
//!
//! States: `queued` -> `running` -> `succeeded` | `failed` | `cancelled`,
//! and `queued` -> `cancelled`. A job interrupted by a shutdown or a crash
//! goes back to `queued` with its `started_at` kept, which marks its charge
//! as final (it may have read rows), so it is re-run under the same charge
//! and never refunded.

use serde::Serialize;

use super::idempotency::{self, IdemRequest, Lookup, StoredResponse};
use super::ledger::{self, Amount, BudgetState};
use super::{Page, StoreError, new_id, now};
use crate::learn::binning::BinningSummary;
use crate::learn::{AlgorithmName, AlgorithmSpec, LearnError};
use crate::local_dp::LocalDp;
use crate::privacy::Budget;
use crate::privacy::budget_units::{DeltaUnits, EpsilonUnits, Requested};
use crate::privacy::filter::Charge;

/// The parameters of a job as stored: the learner with every default filled
/// in, and the job's budget.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JobParams {
    /// The learner and its resolved parameters (`"algorithm"` names it).
    #[serde(flatten)]
    pub spec: AlgorithmSpec,
    /// Total epsilon of the job.
    pub epsilon: f64,
    /// Total delta of the job.
    pub delta: f64,
    /// Whether the learner's default rule chose the parameters.
    pub defaults_used: bool,
    /// The private binning phase, when the dataset's schema asks for
    /// private bins (shown in the job resource; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binning: Option<BinningSummary>,
    /// The dataset's local-DP declaration, when its rows were randomized on
    /// the client: the job is post-processing, charged 0 (epsilon and
    /// delta above are 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_dp: Option<LocalDp>,
}

impl JobParams {
    /// Parse stored parameters. Jobs stored before the learner family have
    /// no `"algorithm"` field: they are LazyBB jobs.
    pub fn from_stored(text: &str) -> Result<JobParams, serde_json::Error> {
        let mut value: serde_json::Value = serde_json::from_str(text)?;
        if let Some(map) = value.as_object_mut() {
            map.entry("algorithm")
                .or_insert_with(|| AlgorithmName::Lazybb.as_str().into());
        }
        serde_json::from_value(value)
    }

    /// The budget the job runs at: the stored epsilon and delta quantised to
    /// the ledger's units, as at admission, and then the largest doubles not
    /// above them (`Requested`), so the worker plans exactly the run that
    /// was charged. On local-DP rows, the local epsilon (which the default
    /// rule reads; nothing central is spent).
    pub fn budget(&self) -> Result<Budget, LearnError> {
        match self.local_dp {
            Some(local) => Ok(Budget::new(local.epsilon, 0.0)?),
            None => Ok(Requested::new(self.epsilon, self.delta)?.run),
        }
    }
}

/// A job as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct JobRecord {
    /// Id.
    pub id: String,
    /// The dataset trained on.
    pub dataset_id: String,
    /// The key that submitted it.
    pub submitted_by: String,
    /// `queued`, `running`, `succeeded`, `failed` or `cancelled`.
    pub state: String,
    /// The checked parameters (JSON as submitted, with defaults filled in).
    pub params: serde_json::Value,
    /// Rounds of the run.
    pub tau: u32,
    /// Rounds done (the only progress reported, SPEC §2).
    pub rounds_done: u32,
    /// The charge admitted to the ledger.
    pub charge: Amount,
    /// The model, once succeeded.
    pub model_id: Option<String>,
    /// Why it failed or was cancelled (fixed text; never data-dependent).
    pub error: Option<String>,
    /// Whether a cancellation was requested.
    pub cancel_requested: bool,
    /// RFC 3339.
    pub created_at: String,
    /// When a worker first claimed it.
    pub started_at: Option<String>,
    /// When it reached a final state.
    pub finished_at: Option<String>,
}

#[derive(sqlx::FromRow)]
struct JobRow {
    seq: i64,
    id: String,
    dataset_id: String,
    submitted_by: String,
    state: String,
    params_json: String,
    tau: i64,
    rounds_done: i64,
    epsilon_units: i64,
    delta_units: i64,
    model_id: Option<String>,
    error: Option<String>,
    cancel_requested: i64,
    created_at: String,
    started_at: Option<String>,
    finished_at: Option<String>,
}

/// Stored job parameters as the API shows them: through
/// [`JobParams`] when they parse, so that jobs stored before the
/// parameter names were unified (`tau`, `lambda`, `kappa`) show today's names;
/// otherwise as stored.
fn stored_params(text: &str) -> Option<serde_json::Value> {
    JobParams::from_stored(text)
        .ok()
        .and_then(|p| serde_json::to_value(p).ok())
        .or_else(|| serde_json::from_str(text).ok())
}

impl JobRow {
    fn into_domain(self) -> Result<(i64, JobRecord), StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("job {what}"));
        Ok((
            self.seq,
            JobRecord {
                id: self.id,
                dataset_id: self.dataset_id,
                submitted_by: self.submitted_by,
                state: self.state,
                params: stored_params(&self.params_json).ok_or_else(|| corrupt("params"))?,
                tau: u32::try_from(self.tau).map_err(|_| corrupt("tau"))?,
                rounds_done: u32::try_from(self.rounds_done).map_err(|_| corrupt("rounds"))?,
                charge: Amount {
                    epsilon: EpsilonUnits::from_units(self.epsilon_units),
                    delta: DeltaUnits::from_units(self.delta_units),
                },
                model_id: self.model_id,
                error: self.error,
                cancel_requested: self.cancel_requested != 0,
                created_at: self.created_at,
                started_at: self.started_at,
                finished_at: self.finished_at,
            },
        ))
    }
}

macro_rules! select_jobs {
    ($rest:literal) => {
        concat!(
            "SELECT j.seq, j.id, j.dataset_id, j.submitted_by, j.state, j.params_json, j.tau, j.rounds_done, j.epsilon_units, j.delta_units, j.model_id, j.error, j.cancel_requested, j.created_at, j.started_at, j.finished_at FROM jobs j ",
            $rest
        )
    };
}

/// "The caller (bound twice) owns or was granted the job's dataset."
macro_rules! job_visible_to {
    ($a:literal, $b:literal) => {
        concat!(
            "EXISTS (SELECT 1 FROM datasets d WHERE d.id = j.dataset_id AND (d.owner_id = ",
            $a,
            " OR EXISTS (SELECT 1 FROM grants g WHERE g.dataset_id = d.id AND g.key_id = ",
            $b,
            ")))"
        )
    };
}

/// A job to admit.
pub(crate) struct NewJob<'a> {
    pub dataset_id: &'a str,
    pub submitted_by: &'a str,
    pub params_json: &'a str,
    pub tau: u32,
    /// The charge for the run's privacy loss (as its plan stated it,
    /// rounded up to the ledger's units); the ledger records its basic
    /// (epsilon, delta), kind and rho.
    pub charge: Charge,
    /// Refuse when the key already has this many queued or running jobs.
    pub max_active_per_key: u32,
}

/// What [`submit`] did.
pub(crate) enum Submitted {
    /// Admitted: the charge is in the ledger and the job is queued.
    New(JobRecord),
    /// A retry with the same idempotency key and body.
    Replay(StoredResponse),
    /// The idempotency key was used for another request.
    Mismatch,
    /// The charge does not fit; nothing was written.
    OverBudget {
        requested: Amount,
        budget: BudgetState,
    },
    /// The key has too many active jobs; nothing was written.
    TooManyActive,
    /// The dataset was deleted (or never had rows); nothing was written.
    DatasetGone,
}

/// Admit a job's charge and queue it, in one `BEGIN IMMEDIATE` transaction
/// (SPEC §2): SQLite takes the write lock at `BEGIN`, so no other
/// connection or process can admit a charge between our read of the budget
/// and our write of the charge. The caller has checked the parameters and
/// the caller's access to the dataset.
pub(crate) async fn submit(
    db: &super::Db,
    new: NewJob<'_>,
    idem: Option<&IdemRequest>,
    respond: impl FnOnce(&JobRecord) -> StoredResponse,
) -> Result<Submitted, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        if let Some(req) = idem {
            match idempotency::lookup(&mut tx, req).await? {
                Lookup::New => {}
                Lookup::Replay(r) => return Ok(Submitted::Replay(r)),
                Lookup::Mismatch => return Ok(Submitted::Mismatch),
            }
        }
        super::db::lock_dataset(&mut tx, new.dataset_id).await?;
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM datasets WHERE id = $1")
            .bind(new.dataset_id)
            .fetch_optional(&mut *tx)
            .await?;
        if state.as_deref() != Some("ready") {
            return Ok(Submitted::DatasetGone);
        }
        // The per-key limit counts across datasets: lock the key too.
        super::db::lock_key(&mut tx, new.submitted_by).await?;
        let active: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs WHERE submitted_by = $1 AND state IN ('queued', 'running')",
        )
        .bind(new.submitted_by)
        .fetch_one(&mut *tx)
        .await?;
        if active >= i64::from(new.max_active_per_key) {
            return Ok(Submitted::TooManyActive);
        }
        let budget = ledger::budget_on(&mut tx, new.dataset_id).await?;
        let charge = new.charge.basic();
        if !budget.admits(&new.charge) {
            // Dropping the transaction rolls it back: nothing changes.
            return Ok(Submitted::OverBudget {
                requested: charge,
                budget,
            });
        }
        let id = new_id("job");
        sqlx::query(
        "INSERT INTO jobs (id, dataset_id, submitted_by, state, params_json, tau, epsilon_units, delta_units, created_at) VALUES ($1, $2, $3, 'queued', $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(new.dataset_id)
    .bind(new.submitted_by)
    .bind(new.params_json)
    .bind(i64::from(new.tau))
    .bind(charge.epsilon.units())
    .bind(charge.delta.units())
    .bind(now())
    .execute(&mut *tx)
    .await?;
        ledger::append_charge(&mut tx, new.dataset_id, &id, &new.charge, new.submitted_by).await?;
        let row: JobRow = sqlx::query_as(select_jobs!("WHERE j.id = $1"))
            .bind(&id)
            .fetch_one(&mut *tx)
            .await?;
        let (_, job) = row.into_domain()?;
        if let Some(req) = idem {
            idempotency::record(&mut tx, req, &respond(&job)).await?;
        }
        tx.commit().await?;
        Ok(Submitted::New(job))
    })
}

/// A job a worker claimed. Only [`claim`] makes one, and only jobs whose
/// charge was admitted exist, so holding one proves the charge is in the
/// ledger; [`super::datasets::load_rows`] requires it.
#[derive(Debug)]
pub(crate) struct ClaimedJob {
    pub id: String,
    pub dataset_id: String,
    pub params_json: String,
    pub cancel_requested: bool,
    /// The claim's number (`attempts` after it): every later update of this
    /// run matches only while no other worker has re-claimed the job.
    pub attempt: i64,
    /// The charge the ledger holds for the job: the worker runs only a plan
    /// whose own charge it covers (`Charge::covers`).
    pub charge: Charge,
}

/// Seconds since the Unix epoch (the lease clock).
fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Claim the oldest queued job (one atomic statement, so two workers or two
/// processes never claim the same job). Sets `started_at` on first claim:
/// from here on the charge is final.
pub(crate) async fn claim(db: &super::Db) -> Result<Option<ClaimedJob>, StoreError> {
    super::with_db!(db, |pool, pg| {
        // On PostgreSQL the oldest queued job that no other replica is
        // claiming (or cancelling) right now: `SKIP LOCKED` passes over
        // rows locked by others instead of waiting for them.
        let row: Option<(String, String, String, i64, i64)> = sqlx::query_as(if pg {
            "UPDATE jobs SET state = 'running', started_at = COALESCE(started_at, $1), attempts = attempts + 1, rounds_done = 0, heartbeat = $2 \
             WHERE seq = (SELECT seq FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) AND state = 'queued' \
             RETURNING id, dataset_id, params_json, cancel_requested, attempts"
        } else {
            "UPDATE jobs SET state = 'running', started_at = COALESCE(started_at, $1), attempts = attempts + 1, rounds_done = 0, heartbeat = $2 \
             WHERE seq = (SELECT seq FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1) AND state = 'queued' \
             RETURNING id, dataset_id, params_json, cancel_requested, attempts"
        })
    .bind(now())
    .bind(unix_now())
    .fetch_optional(pool)
    .await?;
        let Some((id, dataset_id, params_json, cancel, attempt)) = row else {
            return Ok(None);
        };
        // Every job was admitted with its charge in the same transaction.
        let charge = ledger::charge_of(&mut *pool.acquire().await?, &id)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("job {id} has no charge")))?;
        Ok(Some(ClaimedJob {
            id,
            dataset_id,
            params_json,
            cancel_requested: cancel != 0,
            attempt,
            charge,
        }))
    })
}

/// Renew a running job's lease and record its progress. Returns
/// `Some(cancel_requested)` while the job is still this worker's, `None` if
/// the lease was lost (another worker re-claimed it, or it was cancelled).
pub(crate) async fn heartbeat(
    db: &super::Db,
    job: &ClaimedJob,
    rounds_done: u32,
) -> Result<Option<bool>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let row: Option<(i64,)> = sqlx::query_as(
        "UPDATE jobs SET heartbeat = $1, rounds_done = $2 WHERE id = $3 AND attempts = $4 AND state = 'running' RETURNING cancel_requested",
    )
    .bind(unix_now())
    .bind(i64::from(rounds_done))
    .bind(&job.id)
    .bind(job.attempt)
    .fetch_optional(pool)
    .await?;
        Ok(row.map(|(c,)| c != 0))
    })
}

/// Record success: finish the job and store its model in one transaction.
/// Returns false (and stores nothing) if this run lost its lease: at most
/// one model is ever released per job.
pub(crate) async fn succeed(
    db: &super::Db,
    job: &ClaimedJob,
    model_id: &str,
    model_json: &str,
    tau: u32,
) -> Result<bool, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        let created_at = now();
        let done = sqlx::query(
        "UPDATE jobs SET state = 'succeeded', model_id = $1, rounds_done = $2, finished_at = $3 WHERE id = $4 AND attempts = $5 AND state = 'running'",
    )
    .bind(model_id)
    .bind(i64::from(tau))
    .bind(&created_at)
    .bind(&job.id)
    .bind(job.attempt)
    .execute(&mut *tx)
    .await?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        sqlx::query("INSERT INTO models (id, job_id, dataset_id, model_json, created_at) VALUES ($1, $2, $3, $4, $5)")
        .bind(model_id)
        .bind(&job.id)
        .bind(&job.dataset_id)
        .bind(model_json)
        .bind(&created_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    })
}

/// Finish this run of a job as `failed` or `cancelled` with a fixed message.
pub(crate) async fn finish(
    db: &super::Db,
    job: &ClaimedJob,
    state: &'static str,
    rounds_done: u32,
    message: &str,
) -> Result<(), StoreError> {
    super::with_db!(db, |pool, pg| {
        sqlx::query(
        "UPDATE jobs SET state = $1, rounds_done = $2, error = $3, finished_at = $4 WHERE id = $5 AND attempts = $6 AND state = 'running'",
    )
    .bind(state)
    .bind(i64::from(rounds_done))
    .bind(message)
    .bind(now())
    .bind(&job.id)
    .bind(job.attempt)
    .execute(pool)
    .await?;
        Ok(())
    })
}

/// Put this run of a job back in the queue (shutdown): it keeps
/// `started_at`, so its charge stays final and it re-runs under it.
pub(crate) async fn requeue(db: &super::Db, job: &ClaimedJob) -> Result<(), StoreError> {
    super::with_db!(db, |pool, pg| {
        sqlx::query(
        "UPDATE jobs SET state = 'queued', rounds_done = 0, heartbeat = NULL WHERE id = $1 AND attempts = $2 AND state = 'running'",
    )
    .bind(&job.id)
    .bind(job.attempt)
    .execute(pool)
    .await?;
        Ok(())
    })
}

/// Re-queue `running` jobs whose lease expired (their process crashed or
/// was killed). Returns how many. They keep `started_at`: they re-run under
/// their existing charge.
pub(crate) async fn requeue_expired(
    db: &super::Db,
    lease: std::time::Duration,
) -> Result<u64, StoreError> {
    super::with_db!(db, |pool, pg| {
        let cutoff = unix_now() - i64::try_from(lease.as_secs()).unwrap_or(i64::MAX);
        let done = sqlx::query(
        "UPDATE jobs SET state = 'queued', rounds_done = 0, heartbeat = NULL WHERE state = 'running' AND (heartbeat IS NULL OR heartbeat < $1)",
    )
    .bind(cutoff)
    .execute(pool)
    .await?;
        Ok(done.rows_affected())
    })
}

/// A job if the caller can see its dataset.
pub(crate) async fn get_visible(
    db: &super::Db,
    id: &str,
    caller_id: &str,
) -> Result<Option<JobRecord>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let row: Option<JobRow> = sqlx::query_as(concat!(
            select_jobs!("WHERE j.id = $1 AND "),
            job_visible_to!("$2", "$3")
        ))
        .bind(id)
        .bind(caller_id)
        .bind(caller_id)
        .fetch_optional(pool)
        .await?;
        row.map(|r| r.into_domain().map(|(_, j)| j)).transpose()
    })
}

/// A page of the jobs on datasets the caller can see.
pub(crate) async fn list_visible(
    db: &super::Db,
    caller_id: &str,
    after: i64,
    page_size: u32,
) -> Result<Page<JobRecord>, StoreError> {
    super::visible_page(
        db,
        concat!(
            select_jobs!("WHERE j.seq > $1 AND "),
            job_visible_to!("$2", "$3"),
            " ORDER BY j.seq LIMIT $4"
        ),
        caller_id,
        after,
        page_size,
        JobRow::into_domain,
    )
    .await
}

/// What [`cancel`] did.
pub(crate) enum Cancelled {
    /// Queued and never started: cancelled, charge refunded.
    Refunded(JobRecord),
    /// Queued but started before (interrupted): cancelled, charge kept.
    Stopped(JobRecord),
    /// Running: asked to stop between rounds; the charge is kept.
    Requested(JobRecord),
    /// Already finished.
    AlreadyFinal(JobRecord),
}

/// Cancel a job (the caller has checked access).
pub(crate) async fn cancel(
    db: &super::Db,
    id: &str,
    by: &str,
) -> Result<Option<Cancelled>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        // On PostgreSQL the job's row stays locked until the decision is
        // written: a replica's claim skips it meanwhile, or went first and
        // the row reads as running.
        let Some(row) = sqlx::query_as::<_, JobRow>(if pg {
            select_jobs!("WHERE j.id = $1 FOR UPDATE")
        } else {
            select_jobs!("WHERE j.id = $1")
        })
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(None);
        };
        let (_, job) = row.into_domain()?;
        let outcome = match (job.state.as_str(), job.started_at.is_some()) {
            ("queued", false) => {
                sqlx::query("UPDATE jobs SET state = 'cancelled', cancel_requested = 1, error = 'cancelled before it started; charge refunded', finished_at = $1 WHERE id = $2")
                .bind(now())
                .bind(id)
                .execute(&mut *tx)
                .await?;
                ledger::append_refund(&mut tx, &job.dataset_id, id, Some(by)).await?;
                Cancelled::Refunded
            }
            ("queued", true) => {
                sqlx::query("UPDATE jobs SET state = 'cancelled', cancel_requested = 1, error = 'cancelled', finished_at = $1 WHERE id = $2")
                .bind(now())
                .bind(id)
                .execute(&mut *tx)
                .await?;
                Cancelled::Stopped
            }
            ("running", _) => {
                sqlx::query("UPDATE jobs SET cancel_requested = 1 WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                Cancelled::Requested
            }
            _ => Cancelled::AlreadyFinal,
        };
        let row: JobRow = sqlx::query_as(select_jobs!("WHERE j.id = $1"))
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        let (_, job) = row.into_domain()?;
        Ok(Some(outcome(job)))
    })
}

/// Number of jobs in each state (for /metrics).
pub(crate) async fn count_by_state(db: &super::Db) -> Result<Vec<(String, i64)>, StoreError> {
    super::with_db!(db, |pool, pg| {
        Ok(
            sqlx::query_as("SELECT state, COUNT(*) FROM jobs GROUP BY state ORDER BY state")
                .fetch_all(pool)
                .await?,
        )
    })
}

#[cfg(test)]
mod stored_params_tests {
    use super::JobParams;
    /// A LazyBB job stored before the names were unified reads with today's
    /// names; the values are unchanged.
    #[test]
    fn old_parameter_names_read_as_todays() {
        let old = r#"{"tau":15,"lambda":0.25,"kappa":0.5,"weak_learner":"dp-1r","epsilon":1.0,"delta":0.0,"defaults_used":true}"#;
        let v = super::stored_params(old).unwrap();
        assert_eq!(v["rounds"], 15, "{v}");
        assert_eq!(v["learning_rate"], 0.25, "{v}");
        assert_eq!(v["density"], 0.5, "{v}");
        assert_eq!(v["algorithm"], "lazybb", "{v}");
        assert!(v.get("tau").is_none(), "{v}");
        let p = JobParams::from_stored(old).unwrap();
        let again = JobParams::from_stored(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(p, again);
    }
}
