//! DP evaluations of a model on a dataset: admission (the charge enters the
//! dataset's ledger in the same `BEGIN IMMEDIATE` transaction that checks the
//! budget, as for jobs), the rows (only for an admitted evaluation), and the
//! released result.

use serde::Serialize;

use super::ledger::{self, Amount, BudgetState};
use super::{StoreError, new_id, now};
use crate::data::Dataset;
use crate::privacy::budget_units::EpsilonUnits;
use crate::privacy::filter::Charge;

/// A stored evaluation.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub(crate) struct EvaluationRecord {
    pub id: String,
    pub model_id: String,
    pub dataset_id: String,
    pub requested_by: String,
    /// The charge (0 for public test data).
    #[sqlx(try_from = "i64")]
    pub epsilon: EpsilonUnits,
    /// Exact metrics on public test data (epsilon 0, no ledger entry), not
    /// a DP release.
    pub public: bool,
    /// `admitted` (charged; the result is being computed), `done` or
    /// `failed`.
    pub state: String,
    #[serde(skip)]
    pub result_json: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
}

/// Proof that an evaluation's charge is in the ledger, or that its dataset
/// is public test data: only [`admit`] and [`admit_public`] make one, and
/// only it opens the rows ([`load_rows`]).
#[derive(Debug)]
pub(crate) struct AdmittedEvaluation {
    pub id: String,
    dataset_id: String,
}

/// What happened to a request to evaluate.
#[derive(Debug)]
pub(crate) enum Admission {
    /// Charged and recorded.
    New(AdmittedEvaluation),
    /// The charge does not fit; nothing was written.
    OverBudget {
        requested: Amount,
        budget: BudgetState,
    },
    /// The dataset was deleted; nothing was written.
    DatasetGone,
}

/// Charge `epsilon` (pure DP) to `dataset_id`'s ledger and record the
/// evaluation, in one `BEGIN IMMEDIATE` transaction (see `jobs::submit`).
/// The release must then run at `epsilon.to_f64_down()`, not above the
/// charge.
pub(crate) async fn admit(
    db: &super::Db,
    model_id: &str,
    dataset_id: &str,
    requested_by: &str,
    epsilon: EpsilonUnits,
) -> Result<Admission, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        super::db::lock_dataset(&mut tx, dataset_id).await?;
        let state: Option<String> = sqlx::query_scalar("SELECT state FROM datasets WHERE id = $1")
            .bind(dataset_id)
            .fetch_optional(&mut *tx)
            .await?;
        if state.as_deref() != Some("ready") {
            return Ok(Admission::DatasetGone);
        }
        let budget = ledger::budget_on(&mut tx, dataset_id).await?;
        // The metric releases are pure epsilon-DP (privacy::metrics).
        let charge = Charge::pure(epsilon).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        if !budget.admits(&charge) {
            return Ok(Admission::OverBudget {
                requested: charge.basic(),
                budget,
            });
        }
        let id = new_id("eval");
        sqlx::query(
        "INSERT INTO evaluations (id, model_id, dataset_id, requested_by, epsilon_units, state, created_at) VALUES ($1, $2, $3, $4, $5, 'admitted', $6)",
    )
    .bind(&id)
    .bind(model_id)
    .bind(dataset_id)
    .bind(requested_by)
    .bind(epsilon.units())
    .bind(now())
    .execute(&mut *tx)
    .await?;
        ledger::append_charge(&mut tx, dataset_id, &id, &charge, requested_by).await?;
        tx.commit().await?;
        Ok(Admission::New(AdmittedEvaluation {
            id,
            dataset_id: dataset_id.to_owned(),
        }))
    })
}

/// Record an evaluation on public test data: no charge, no ledger entry,
/// `public` set and epsilon 0. `DatasetGone` if the dataset is deleted;
/// `None` if it is not (or no longer visible as) public test data.
pub(crate) async fn admit_public(
    db: &super::Db,
    model_id: &str,
    dataset_id: &str,
    requested_by: &str,
) -> Result<Option<Admission>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        let row: Option<(String, Option<String>)> =
            sqlx::query_as("SELECT state, public_test_data_at FROM datasets WHERE id = $1")
                .bind(dataset_id)
                .fetch_optional(&mut *tx)
                .await?;
        match row {
            Some((state, _)) if state != "ready" => return Ok(Some(Admission::DatasetGone)),
            None => return Ok(Some(Admission::DatasetGone)),
            Some((_, None)) => return Ok(None),
            Some((_, Some(_))) => {}
        }
        let id = new_id("eval");
        sqlx::query(
        "INSERT INTO evaluations (id, model_id, dataset_id, requested_by, epsilon_units, public, state, created_at) VALUES ($1, $2, $3, $4, 0, 1, 'admitted', $5)",
    )
    .bind(&id)
    .bind(model_id)
    .bind(dataset_id)
    .bind(requested_by)
    .bind(now())
    .execute(&mut *tx)
    .await?;
        tx.commit().await?;
        Ok(Some(Admission::New(AdmittedEvaluation {
            id,
            dataset_id: dataset_id.to_owned(),
        })))
    })
}

/// The rows of an admitted evaluation's dataset, with its schema JSON
/// (`None` when the rows were deleted since).
pub(crate) async fn load_rows(
    db: &super::Db,
    evaluation: &AdmittedEvaluation,
) -> Result<Option<(String, Dataset)>, StoreError> {
    super::datasets::rows_of(db, &evaluation.dataset_id).await
}

/// Record the outcome: the released result, or why there is none (the
/// charge stays: the rows may have been read).
pub(crate) async fn finish(
    db: &super::Db,
    id: &str,
    outcome: Result<&serde_json::Value, &str>,
) -> Result<(), StoreError> {
    super::with_db!(db, |pool, pg| {
        let (state, result, error) = match outcome {
            Ok(v) => ("done", Some(v.to_string()), None),
            Err(e) => ("failed", None, Some(e.to_owned())),
        };
        sqlx::query(
        "UPDATE evaluations SET state = $1, result_json = $2, error = $3, finished_at = $4 WHERE id = $5 AND state = 'admitted'",
    )
    .bind(state)
    .bind(result)
    .bind(error)
    .bind(now())
    .bind(id)
    .execute(pool)
    .await?;
        Ok(())
    })
}

/// An evaluation, if the caller requested it or owns its dataset.
pub(crate) async fn get_visible(
    db: &super::Db,
    id: &str,
    caller_id: &str,
) -> Result<Option<EvaluationRecord>, StoreError> {
    super::with_db!(db, |pool, pg| {
        Ok(sqlx::query_as(
        "SELECT e.id, e.model_id, e.dataset_id, e.requested_by, e.epsilon_units AS epsilon, (e.public <> 0) AS public, e.state, e.result_json, e.error, e.created_at, e.finished_at FROM evaluations e JOIN datasets d ON d.id = e.dataset_id WHERE e.id = $1 AND (e.requested_by = $2 OR d.owner_id = $3)",
    )
    .bind(id)
    .bind(caller_id)
    .bind(caller_id)
    .fetch_optional(pool)
    .await?)
    })
}
