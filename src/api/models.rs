//! Models, deployments and predictions: list and get models (with the
//! privacy statement and the inspection), predict on a model or a named
//! deployment, re-point a deployment (the Open Inference Protocol v2 routes
//! are in `oip`, MLflow-style scoring in `invocations`). All of it is post-processing of released models:
//! no budget is spent and no row is read.
//!
//! Access: a model is visible to whoever can see its dataset; a deployment
//! is a publication, so any valid key may read it and predict with it, and
//! only its creator may re-point it (to a model the creator can see).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::auth::Caller;
use super::error::{ApiError, AppJson, AppQuery, FieldError};
use super::{AppState, PageQuery, Routes, page_json};
use crate::data::Encoder;
use crate::learn::{Model, ModelEdit, ModelPredictor, Output};
use crate::store::deployments::{self, Put};
use crate::store::keys::Role;
use crate::store::models::{self, ModelRecord};

pub(super) fn routes(r: Routes) -> Routes {
    r.at(Method::GET, "/v1/models", list)
        .at(Method::GET, "/v1/models/{id}", get)
        .at(Method::POST, "/v1/models/{id}/predict", predict_model)
        .at(Method::POST, "/v1/models/{id}/edits", edit_model)
        .at(Method::GET, "/v1/deployments", list_deployments)
        .at(Method::GET, "/v1/deployments/{name}", get_deployment)
        .at(Method::PUT, "/v1/deployments/{name}", put_deployment)
        .at(
            Method::POST,
            "/v1/deployments/{name}/predict",
            predict_deployment,
        )
}

/// A model ready to predict: parsed once, then shared.
pub(crate) struct Loaded {
    pub(super) model: Model,
    encoder: Encoder,
    predictor: ModelPredictor,
    positive: String,
    negative: String,
}

/// Loaded models by id. Models never change, so entries never go stale;
/// the map is cleared when it reaches [`MODEL_CACHE_SIZE`].
#[derive(Default)]
pub(crate) struct ModelCache {
    map: Mutex<HashMap<String, Arc<Loaded>>>,
}

/// Models kept loaded.
const MODEL_CACHE_SIZE: usize = 256;

impl ModelCache {
    fn load(&self, record: &ModelRecord) -> Result<Arc<Loaded>, ApiError> {
        if let Some(l) = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&record.id)
        {
            return Ok(l.clone());
        }
        let model = Model::from_json(&record.model_json)
            .map_err(|e| ApiError::Internal(format!("stored model: {e}")))?;
        let encoder = model
            .encoder()
            .map_err(|e| ApiError::Internal(format!("stored model: {e}")))?;
        let predictor = model.predictor();
        let label = &model.schema().label;
        let loaded = Arc::new(Loaded {
            positive: label.positive.clone(),
            negative: label
                .negative
                .clone()
                .unwrap_or_else(|| format!("not {}", label.positive)),
            model,
            encoder,
            predictor,
        });
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MODEL_CACHE_SIZE {
            map.clear();
        }
        map.insert(record.id.clone(), loaded.clone());
        Ok(loaded)
    }
}

/// A model's summary; unless `precise` (the dataset's owner or an admin),
/// its time is whole seconds (docs/privacy.md, "Timing").
fn summary(record: &ModelRecord, model: &Model, precise: bool) -> Value {
    let mut v = json!({
        "id": record.id,
        "job_id": record.job_id,
        "parent_id": record.parent_id,
        "dataset_id": record.dataset_id,
        "created_at": record.created_at,
        "algorithm": model.algorithm(),
        "task": model.task(),
        "params": model.params_json(),
        "privacy": model.privacy_json(),
    });
    if !precise {
        super::coarsen_time(&mut v["created_at"]);
    }
    v
}

pub(super) async fn visible_model(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<(ModelRecord, Arc<Loaded>), ApiError> {
    let record = models::get_visible(&state.pool, id, &caller.id)
        .await?
        .ok_or(ApiError::NotFound("model"))?;
    let loaded = state.models.load(&record)?;
    Ok((record, loaded))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    AppQuery(q): AppQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let (after, size) = q.cursor()?;
    let page = models::list_visible(&state.pool, &caller.id, after, size).await?;
    let mut precise = std::collections::HashMap::new();
    let mut items = Vec::with_capacity(page.items.len());
    for r in &page.items {
        let p = match precise.get(&r.dataset_id) {
            Some(&p) => p,
            None => {
                let p = super::sees_precise_times(&state, &caller, &r.dataset_id).await?;
                precise.insert(r.dataset_id.clone(), p);
                p
            }
        };
        items.push(summary(r, &state.models.load(r)?.model, p));
    }
    Ok(axum::Json(json!({
        "items": items,
        "next_page_token": page.next_after.map(|s| format!("after-{s}")),
    })))
}

async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (record, loaded) = visible_model(&state, &caller, &id).await?;
    let precise = super::sees_precise_times(&state, &caller, &record.dataset_id).await?;
    let mut body = summary(&record, &loaded.model, precise);
    body["inspection"] = serde_json::to_value(loaded.model.inspect(&loaded.encoder))
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    body["model"] =
        serde_json::from_str(&record.model_json).map_err(|e| ApiError::Internal(e.to_string()))?;
    if !precise {
        super::coarsen_time(&mut body["model"]["created_at"]);
    }
    Ok(axum::Json(body))
}

/// `{"rows": [{column: value, ...}, ...]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PredictRequest {
    rows: Vec<Map<String, Value>>,
}

/// One prediction as JSON: a class with its score (classification) or a
/// value (regression).
#[derive(serde::Serialize)]
#[serde(untagged)]
pub(super) enum PredictionOut<'a> {
    Class {
        class: &'a str,
        positive: bool,
        score: f64,
        probability: f64,
    },
    Value {
        value: f64,
    },
}

/// Predict rows with a loaded model. Errors name the row and the column.
pub(super) fn predict_rows<'a>(
    loaded: &'a Loaded,
    rows: &[Map<String, Value>],
    limit: usize,
) -> Result<Vec<PredictionOut<'a>>, ApiError> {
    if rows.is_empty() {
        return Err(ApiError::Validation(vec![FieldError::new(
            "rows",
            "at least one row is required",
        )]));
    }
    if rows.len() > limit {
        return Err(ApiError::TooLarge(format!(
            "at most {limit} rows per request; got {}",
            rows.len()
        )));
    }
    let mut active = Vec::new();
    let mut out = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        loaded
            .encoder
            .encode_json_row(row, i + 1, &mut active)
            .map_err(|e| {
                ApiError::Validation(vec![FieldError::new(format!("rows[{i}]"), e.to_string())])
            })?;
        out.push(match loaded.predictor.predict(&active) {
            Output::Class(p) => PredictionOut::Class {
                class: if p.positive {
                    &loaded.positive
                } else {
                    &loaded.negative
                },
                positive: p.positive,
                score: p.score,
                probability: p.probability,
            },
            Output::Value(value) => PredictionOut::Value { value },
        });
    }
    Ok(out)
}

async fn predict_model(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    AppJson(body): AppJson<PredictRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let (record, loaded) = visible_model(&state, &caller, &id).await?;
    let predictions = predict_rows(&loaded, &body.rows, state.config.max_predict_rows)?;
    Ok(axum::Json(
        json!({ "model_id": record.id, "predictions": predictions }),
    ))
}

/// `POST /v1/models/{id}/edits`: a new version of a model with a
/// post-processing edit (DP-EBM paper §5). It reads only the released
/// model, never the rows, so it charges nothing; the new version records the
/// edit in its privacy statement and serves like any other model.
async fn edit_model(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    AppJson(edit): AppJson<ModelEdit>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Owner, Role::Analyst], "editing a model")?;
    let (record, loaded) = visible_model(&state, &caller, &id).await?;
    let edited = loaded.model.edited(&edit).map_err(|e| {
        let field = match &edit {
            ModelEdit::SetValues { .. } if e.to_string().contains("values") => "values",
            _ => "feature",
        };
        ApiError::Validation(vec![FieldError::new(field, e.to_string())])
    })?;
    let precise = super::sees_precise_times(&state, &caller, &record.dataset_id).await?;
    let new_id = crate::store::new_id("model");
    let stored =
        models::insert_edit(&state.pool, &record, &new_id, &edited.to_json(), &caller.id).await?;
    let loaded = state.models.load(&stored)?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, format!("/v1/models/{}", stored.id))],
        axum::Json(summary(&stored, &loaded.model, precise)),
    )
        .into_response())
}

/// Deployment names: 1 to 100 of `[A-Za-z0-9._-]`.
fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ApiError::Validation(vec![FieldError::new(
            "name",
            "1 to 100 characters from A-Z a-z 0-9 . _ -",
        )]))
    }
}

pub(super) async fn deployed(
    state: &AppState,
    name: &str,
) -> Result<(ModelRecord, Arc<Loaded>), ApiError> {
    let d = deployments::get(&state.pool, name)
        .await?
        .ok_or(ApiError::NotFound("deployment"))?;
    let record = models::get(&state.pool, &d.model_id)
        .await?
        .ok_or(ApiError::NotFound("deployment"))?;
    let loaded = state.models.load(&record)?;
    Ok((record, loaded))
}

async fn list_deployments(
    State(state): State<AppState>,
    _caller: Caller,
    AppQuery(q): AppQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let (after, size) = q.cursor()?;
    Ok(axum::Json(page_json(
        deployments::list(&state.pool, after, size).await?,
    )))
}

async fn get_deployment(
    State(state): State<AppState>,
    _caller: Caller,
    Path(name): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let d = deployments::get(&state.pool, &name)
        .await?
        .ok_or(ApiError::NotFound("deployment"))?;
    Ok(axum::Json(d))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PutDeployment {
    model_id: String,
}

async fn put_deployment(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    AppJson(body): AppJson<PutDeployment>,
) -> Result<impl IntoResponse, ApiError> {
    check_name(&name)?;
    // The caller must see the model (else 404, as for any foreign resource).
    visible_model(&state, &caller, &body.model_id).await?;
    match deployments::put(&state.pool, &name, &body.model_id, &caller.id).await? {
        Put::Created(d) => Ok((StatusCode::CREATED, axum::Json(d))),
        Put::Updated(d) => Ok((StatusCode::OK, axum::Json(d))),
        Put::Foreign => Err(ApiError::Conflict(
            "this deployment name belongs to another key".into(),
        )),
    }
}

async fn predict_deployment(
    State(state): State<AppState>,
    _caller: Caller,
    Path(name): Path<String>,
    AppJson(body): AppJson<PredictRequest>,
) -> Result<impl IntoResponse, ApiError> {
    let (record, loaded) = deployed(&state, &name).await?;
    let predictions = predict_rows(&loaded, &body.rows, state.config.max_predict_rows)?;
    Ok(axum::Json(json!({
        "deployment": name,
        "model_id": record.id,
        "predictions": predictions,
    })))
}
