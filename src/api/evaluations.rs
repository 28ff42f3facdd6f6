//! DP evaluation: `POST /v1/models/{id}/evaluate` releases a model's
//! accuracy and ROC AUC (classification) or RMSE (regression) on a dataset
//! the caller may spend, with epsilon-DP, charged to that dataset's ledger
//! before any row is read (`learn::private_metrics`; docs/privacy.md,
//! "Releasing a model's quality on private rows"). `GET /v1/evaluations/{id}`
//! reads a result again.
//!
//! On a dataset its owner declared public test data (`PATCH
//! /v1/datasets/{id}`), the evaluation returns the exact metrics instead:
//! no noise, no charge, epsilon 0 and `"public": true` in the resource and
//! its result, so that nobody mistakes it for a DP release
//! (`learn::exact_metrics`; docs/privacy.md, "Public test data").

use axum::extract::{Path, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::Caller;
use super::datasets::visible;
use super::error::{ApiError, AppJson, FieldError};
use super::models::visible_model;
use super::{AppState, Routes};
use crate::data::Schema;
use crate::learn::{check_private_metrics, exact_metrics, private_metrics};
use crate::privacy::budget_units::EpsilonUnits;
use crate::privacy::{NoiseRng, metrics};
use crate::store::evaluations::{self, Admission, EvaluationRecord};
use crate::store::keys::Role;

pub(super) fn routes(r: Routes) -> Routes {
    r.at(Method::POST, "/v1/models/{id}/evaluate", evaluate).at(
        Method::GET,
        "/v1/evaluations/{id}",
        get,
    )
}

/// `{"dataset_id": "...", "epsilon": 0.1}`; epsilon may be left out for a
/// dataset declared public test data (it is not spent there).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvaluateRequest {
    dataset_id: String,
    #[serde(default)]
    epsilon: Option<f64>,
}

/// The `mechanism` of an exact evaluation's result.
const PUBLIC_MECHANISM: &str = "none: exact metrics on rows their owner declared public test data (no noise, no ledger charge, no privacy guarantee)";

/// Largest epsilon one evaluation may spend (a larger one is almost surely
/// a mistake; the dataset's total bounds it anyway).
const MAX_EPSILON: f64 = 100.0;

/// An evaluation as JSON. Unless `precise` (the dataset's owner or an
/// admin, [`super::sees_precise_times`]), its times are whole seconds, as a
/// job's and a model's are: a charged evaluation reads the private rows,
/// and its precise duration would be a side channel (docs/privacy.md,
/// "Timing").
fn evaluation_json(e: &EvaluationRecord, precise: bool) -> Result<Value, ApiError> {
    let mut v = serde_json::to_value(e).map_err(|err| ApiError::Internal(err.to_string()))?;
    if !precise {
        for field in ["created_at", "finished_at"] {
            super::coarsen_time(&mut v[field]);
        }
    }
    v["result"] = match &e.result_json {
        Some(text) => {
            serde_json::from_str(text).map_err(|err| ApiError::Internal(err.to_string()))?
        }
        None => Value::Null,
    };
    Ok(v)
}

async fn evaluate(
    State(state): State<AppState>,
    caller: Caller,
    Path(model_id): Path<String>,
    AppJson(body): AppJson<Value>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Owner, Role::Analyst], "evaluating")?;
    let req: EvaluateRequest = serde_json::from_value(body)
        .map_err(|e| ApiError::Validation(vec![FieldError::new("body", e.to_string())]))?;
    // The charge (the requested epsilon quantised to the ledger's units)
    // and the epsilon the release runs at: the largest double not above it.
    let charged = match req.epsilon {
        None => None,
        Some(epsilon) => {
            let refuse =
                |message: String| ApiError::Validation(vec![FieldError::new("epsilon", message)]);
            if !(epsilon > 0.0 && epsilon <= MAX_EPSILON) {
                return Err(refuse(format!(
                    "epsilon must be in (0, {MAX_EPSILON}], got {epsilon}"
                )));
            }
            let units = EpsilonUnits::nearest(epsilon).map_err(|e| refuse(e.to_string()))?;
            // Every refusal comes before the charge: an epsilon whose noise
            // the exact sampler cannot draw (e.g. 5e-324) is a 422, not a
            // charged failure.
            metrics::check_epsilon(units.to_f64_down()).map_err(|e| refuse(e.to_string()))?;
            Some(units)
        }
    };
    let (record, loaded) = visible_model(&state, &caller, &model_id).await?;
    let dataset = visible(&state, &caller, &req.dataset_id).await?;
    if dataset.state != "ready" {
        return Err(ApiError::Conflict("the dataset was deleted".into()));
    }
    if dataset
        .local_dp
        .is_some_and(|l| l.protocol == crate::local_dp::Protocol::SampledColumn)
    {
        // Its rows are one column's report each, not rows a model predicts.
        return Err(ApiError::Validation(vec![FieldError::new(
            "dataset_id",
            "this dataset holds sampled-column local-DP reports (one randomized column per row), not rows to evaluate a model on",
        )]));
    }
    let schema = Schema::from_json(&dataset.schema.to_string())
        .map_err(|e| ApiError::Internal(format!("stored schema: {e}")))?;
    if &schema != loaded.model.schema() {
        return Err(ApiError::Validation(vec![FieldError::new(
            "dataset_id",
            "the dataset's schema differs from the model's: evaluate on rows with the schema the model was trained with",
        )]));
    }
    // Public test data: exact metrics, no charge. The flag is one-way, so
    // the admission (which checks it again in its transaction) agrees.
    let public = dataset.public_test_data;
    let admission = if public {
        evaluations::admit_public(&state.pool, &record.id, &dataset.id, &caller.id)
            .await?
            .ok_or_else(|| ApiError::Internal("public test data without the flag".into()))?
    } else {
        let Some(epsilon) = charged else {
            return Err(ApiError::Validation(vec![FieldError::new(
                "epsilon",
                "required: the epsilon to spend from the dataset's budget (only public test data is evaluated without it)",
            )]));
        };
        // The release's noise scale at this epsilon per row (after the
        // schema's privacy unit) is checked here, before the charge.
        check_private_metrics(&loaded.model, epsilon.to_f64_down())
            .map_err(|e| ApiError::Validation(vec![FieldError::new("epsilon", e.to_string())]))?;
        evaluations::admit(&state.pool, &record.id, &dataset.id, &caller.id, epsilon).await?
    };
    let admitted = match admission {
        Admission::New(a) => a,
        Admission::OverBudget { requested, budget } => {
            return Err(ApiError::BudgetExceeded {
                requested,
                remaining: budget.remaining,
                filter: budget.filter,
            });
        }
        Admission::DatasetGone => {
            return Err(ApiError::Conflict("the dataset was deleted".into()));
        }
    };
    // Charged: from here on, every outcome is recorded (the charge stays:
    // the rows may have been read).
    let outcome = match evaluations::load_rows(&state.pool, &admitted).await? {
        None => Err("the dataset's rows were deleted".to_owned()),
        Some((_, data)) => {
            let epsilon = charged.map(EpsilonUnits::to_f64_down);
            let model = loaded.clone();
            tokio::task::spawn_blocking(move || match epsilon.filter(|_| !public) {
                None => exact_metrics(&model.model, &data)
                    .map_err(|e| e.to_string())
                    .and_then(|m| serde_json::to_value(m).map_err(|e| e.to_string()))
                    .map(|mut v| {
                        v["epsilon"] = json!(0.0);
                        v["public"] = json!(true);
                        v["mechanism"] = json!(PUBLIC_MECHANISM);
                        v
                    }),
                Some(epsilon) => {
                    let mut rng = NoiseRng::from_os().map_err(|e| e.to_string())?;
                    private_metrics(&model.model, &data, epsilon, &mut rng)
                        .map_err(|e| e.to_string())
                        .and_then(|m| serde_json::to_value(m).map_err(|e| e.to_string()))
                }
            })
            .await
            .map_err(|e| ApiError::Internal(e.to_string()))?
        }
    };
    evaluations::finish(
        &state.pool,
        &admitted.id,
        outcome.as_ref().map_err(String::as_str),
    )
    .await?;
    if let Err(e) = outcome {
        return Err(ApiError::Internal(format!(
            "evaluation {} failed after its charge: {e}",
            admitted.id
        )));
    }
    let stored = evaluations::get_visible(&state.pool, &admitted.id, &caller.id)
        .await?
        .ok_or_else(|| ApiError::Internal("the evaluation just recorded is missing".into()))?;
    let precise = super::sees_precise_times(&state, &caller, &stored.dataset_id).await?;
    Ok((
        StatusCode::OK,
        [(header::LOCATION, format!("/v1/evaluations/{}", stored.id))],
        axum::Json(evaluation_json(&stored, precise)?),
    )
        .into_response())
}

async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let e = evaluations::get_visible(&state.pool, &id, &caller.id)
        .await?
        .ok_or(ApiError::NotFound("evaluation"))?;
    let precise = super::sees_precise_times(&state, &caller, &e.dataset_id).await?;
    Ok(axum::Json(json!(evaluation_json(&e, precise)?)))
}
