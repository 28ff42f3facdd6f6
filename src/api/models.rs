//! Models, deployments and predictions: list and get models (with the
//! privacy statement and the inspection), predict on a model or a named
//! deployment, re-point a deployment (the Open Inference Protocol v2 routes
//! are in `oip`, MLflow-style scoring in `invocations`). All of it is post-processing of released models:
//! no budget is spent and no row is read.
//!
//! Access: a model is visible to whoever can see its dataset; a deployment
//! is a publication, so any valid key may read it (with its model's input
//! schema, task and privacy statement), its history, and predict with it;
//! only its creator may move it or roll it back (to a model the creator can
//! see). Names are per key: `name` is the caller's own deployment, else the
//! first one created with that name; `key_id:name` is always exact.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::auth::Caller;
use super::error::{ApiError, AppJson, AppQuery, FieldError, JsonBody};
use super::{AppState, PageQuery, Routes, page_json};
use crate::data::{ColumnError, DataError, Encoder, LiteralRows, Row};
use crate::export::{ExportError, ExportFormat, export};
use crate::learn::{Model, ModelEdit, ModelPredictor, Output};
use crate::store::deployments::{self, Deployment, Put, Rollback};
use crate::store::keys::Role;
use crate::store::models::{self, ModelRecord};

pub(super) fn routes(r: Routes) -> Routes {
    r.at(Method::GET, "/v1/models", list)
        .at(Method::GET, "/v1/models/{id}", get)
        .at(Method::GET, "/v1/models/{id}/export", export_model)
        .at(Method::DELETE, "/v1/models/{id}", delete_model)
        .at(Method::POST, "/v1/models/{id}/predict", predict_model)
        .at(Method::POST, "/v1/models/{id}/edits", edit_model)
        .at(Method::GET, "/v1/deployments", list_deployments)
        .at(Method::GET, "/v1/deployments/{name}", get_deployment)
        .at(Method::PUT, "/v1/deployments/{name}", put_deployment)
        .at(
            Method::POST,
            "/v1/deployments/{name}/rollback",
            rollback_deployment,
        )
        .at(
            Method::GET,
            "/v1/deployments/{name}/versions",
            deployment_versions,
        )
        .at(
            Method::POST,
            "/v1/deployments/{name}/predict",
            predict_deployment,
        )
}

/// A model ready to predict: parsed once, then shared.
pub(crate) struct Loaded {
    pub(super) model: Model,
    pub(super) encoder: Encoder,
    predictor: ModelPredictor,
    positive: String,
    negative: String,
}

/// Loaded models by id, with their stored records. Models never change
/// (an edit is a new model), so entries never go stale; the map is cleared
/// when it reaches [`MODEL_CACHE_SIZE`]. A deleted model's entry is removed
/// on the replica that deleted it; on another replica it may linger, but
/// every route reaches the cache only through a store read that skips
/// deleted models, or through a deployment (which a deleted model never
/// has: the delete is refused while one serves it). A deployment may come
/// from the deployment cache (`super::cache`), at most `CACHE_TTL` old, so
/// another replica may serve a deleted model for at most `CACHE_TTL` after
/// the move away from it; the replica that deletes it, never.
#[derive(Default)]
pub(crate) struct ModelCache {
    map: Mutex<HashMap<String, Cached>>,
}

/// A cached model: its record (shared: it holds the whole model file) and
/// the model loaded.
type Cached = (Arc<ModelRecord>, Arc<Loaded>);

/// Models kept loaded.
const MODEL_CACHE_SIZE: usize = 256;

impl ModelCache {
    /// The record and loaded model of `id` if they are loaded: what a
    /// prediction needs without a database read. Shared, not copied: the
    /// record holds the whole model file, which a warm prediction must not
    /// copy.
    fn get(&self, id: &str) -> Option<Cached> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    fn forget(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    pub(super) fn load(&self, record: &ModelRecord) -> Result<Arc<Loaded>, ApiError> {
        if let Some((_, l)) = self
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
            negative: label.negative_name(),
            model,
            encoder,
            predictor,
        });
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MODEL_CACHE_SIZE {
            map.clear();
        }
        map.insert(
            record.id.clone(),
            (Arc::new(record.clone()), loaded.clone()),
        );
        Ok(loaded)
    }
}

/// A model's summary; unless `precise` (the dataset's owner or an admin),
/// its time is whole seconds (docs/privacy.md, "Timing"). A stored model
/// that does not load (`None`) shows what the record says, `"unreadable":
/// true`, and null for what only the file could say.
fn summary(record: &ModelRecord, model: Option<&Model>, precise: bool) -> Value {
    let mut v = json!({
        "id": record.id,
        "job_id": record.job_id,
        "parent_id": record.parent_id,
        "dataset_id": record.dataset_id,
        "created_at": record.created_at,
        "algorithm": model.map(Model::algorithm),
        "task": model.map(Model::task),
        "params": model.map(Model::params_json),
        "privacy": model.map(Model::privacy_json),
    });
    if model.is_none() {
        v["unreadable"] = json!(true);
    }
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
        // One model that cannot be read must not take the list down: it
        // is listed as unreadable (so its owner can delete it) and logged.
        items.push(match state.models.load(r) {
            Ok(loaded) => summary(r, Some(&loaded.model), p),
            Err(e) => {
                tracing::error!(model_id = %r.id, dataset_id = %r.dataset_id, error = %e, "a stored model cannot be read; listed as unreadable");
                summary(r, None, p)
            }
        });
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
    let mut body = summary(&record, Some(&loaded.model), precise);
    body["inspection"] = serde_json::to_value(loaded.model.inspect(&loaded.encoder))
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    body["model"] =
        serde_json::from_str(&record.model_json).map_err(|e| ApiError::Internal(e.to_string()))?;
    if !precise {
        super::coarsen_time(&mut body["model"]["created_at"]);
    }
    Ok(axum::Json(body))
}

/// `?format=onnx`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    format: Option<String>,
}

/// `GET /v1/models/{id}/export?format=onnx`: the model as a file for
/// another runtime (docs/export.md). Whoever may read the model may export
/// it (404 otherwise, as for reading it); export reads only the released
/// model and its public schema, so it charges nothing. A model or format
/// that cannot be exported is refused with 422 naming why.
async fn export_model(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    AppQuery(q): AppQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let (record, loaded) = visible_model(&state, &caller, &id).await?;
    let name = q.format.as_deref().unwrap_or("onnx");
    let format = ExportFormat::parse(name)
        .map_err(|e| ApiError::Validation(vec![FieldError::new("format", e.to_string())]))?;
    let bytes = export(&loaded.model, format).map_err(|e| match e {
        ExportError::Unsupported(m) => ApiError::Validation(vec![FieldError::new("model", m)]),
        ExportError::Model(e) => ApiError::Internal(format!("stored model: {e}")),
    })?;
    Ok((
        [
            (header::CONTENT_TYPE, format.media_type().to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"{}.{}\"",
                    record.id,
                    format.extension()
                ),
            ),
        ],
        bytes,
    )
        .into_response())
}

/// `{"rows": [{column: value, ...}, ...]}`, borrowing from the body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PredictRequest<'a> {
    #[serde(borrow)]
    rows: Vec<Row<'a>>,
}

impl PredictRequest<'_> {
    /// The predictions for every row (errors name the row and column).
    fn predict<'m>(
        &self,
        loaded: &'m Loaded,
        limit: usize,
    ) -> Result<Vec<PredictionOut<'m>>, ApiError> {
        predict_each(loaded, self.rows.len(), limit, |i, active| {
            loaded.encoder.encode_row(&self.rows[i], i + 1, active)
        })
    }
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
    /// Multiclass: the predicted class and one probability per class, in
    /// the schema's class order.
    Classes {
        class: String,
        probabilities: Vec<f64>,
    },
}

/// A predict route's answer, serialised straight from the predictions (a
/// 10,000-row answer is 10,000 objects: no JSON tree is built first). The
/// deployment's fields are there on its route only.
#[derive(serde::Serialize, Default)]
pub(super) struct PredictAnswer<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qualified_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<&'a str>,
    pub predictions: &'a [PredictionOut<'a>],
}

/// Predict rows with a loaded model. Errors name the row and the column.
pub(super) fn predict_rows<'a>(
    loaded: &'a Loaded,
    rows: &[Map<String, Value>],
    limit: usize,
) -> Result<Vec<PredictionOut<'a>>, ApiError> {
    predict_each(loaded, rows.len(), limit, |i, active| {
        loaded.encoder.encode_json_row(&rows[i], i + 1, active)
    })
}

/// Refuse an empty request or one over the row limit.
fn check_rows(n: usize, limit: usize) -> Result<(), ApiError> {
    if n == 0 {
        return Err(ApiError::Validation(vec![FieldError::new(
            "rows",
            "at least one row is required",
        )]));
    }
    if n > limit {
        return Err(ApiError::TooLarge(format!(
            "at most {limit} rows per request; got {n}"
        )));
    }
    Ok(())
}

/// A row that cannot be encoded (0-based `i`): 422 naming it.
fn row_error(i: usize, e: DataError) -> ApiError {
    ApiError::Validation(vec![FieldError::new(format!("rows[{i}]"), e.to_string())])
}

/// One row's prediction from its active literals.
fn predict_one<'a>(loaded: &'a Loaded, active: &[u32]) -> PredictionOut<'a> {
    match loaded.predictor.predict(active) {
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
        Output::Classes(p) => PredictionOut::Classes {
            class: p.class,
            probabilities: p.probabilities,
        },
    }
}

/// Predict `n` rows with a loaded model, row `i` (0-based) encoded into the
/// active literals by `encode(i, active)`. Errors name the row and the
/// column.
pub(super) fn predict_each<'a>(
    loaded: &'a Loaded,
    n: usize,
    limit: usize,
    mut encode: impl FnMut(usize, &mut Vec<u32>) -> Result<(), DataError>,
) -> Result<Vec<PredictionOut<'a>>, ApiError> {
    check_rows(n, limit)?;
    let mut active = Vec::new();
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        encode(i, &mut active).map_err(|e| row_error(i, e))?;
        out.push(predict_one(loaded, &active));
    }
    Ok(out)
}

/// Literals per run of rows encoded at once by [`predict_runs`] (1 MiB of
/// slots: a 10,000-row request of a few dozen columns is one run, and a
/// schema of wide threshold columns still takes bounded memory).
const RUN_LITERALS: usize = 1 << 18;

/// Predict `n` rows with a loaded model, encoded a run of rows at a time
/// by `encode(count, rows)` (the next `count` rows into `rows`; a column at
/// a time, see [`crate::data::LiteralRows`]). The same predictions and
/// errors as [`predict_each`].
pub(super) fn predict_runs<'a>(
    loaded: &'a Loaded,
    n: usize,
    limit: usize,
    mut encode: impl FnMut(usize, &mut LiteralRows) -> Result<(), ColumnError>,
) -> Result<Vec<PredictionOut<'a>>, ApiError> {
    check_rows(n, limit)?;
    let run = (RUN_LITERALS / loaded.encoder.max_row_literals().max(1)).max(1);
    let mut rows = LiteralRows::default();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let count = run.min(n - out.len());
        encode(count, &mut rows).map_err(|e| row_error(e.row, e.error))?;
        out.extend((0..count).map(|i| predict_one(loaded, rows.row(i))));
    }
    Ok(out)
}

async fn predict_model(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: JsonBody,
) -> Result<impl IntoResponse, ApiError> {
    let request: PredictRequest<'_> = body.parse()?;
    let (record, loaded) = visible_model(&state, &caller, &id).await?;
    let predictions = request.predict(&loaded, state.config.max_predict_rows)?;
    Ok(axum::Json(PredictAnswer {
        model_id: Some(&record.id),
        predictions: &predictions,
        ..PredictAnswer::default()
    })
    .into_response())
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
    // Fully validated before anything is stored: the values' range, and the
    // edited model's every number finite and its file loading again
    // (`Model::edited`); the store is then one INSERT.
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
        axum::Json(summary(&stored, Some(&loaded.model), precise)),
    )
        .into_response())
}

/// `DELETE /v1/models/{id}`: the dataset's owner, or an admin (who reads no
/// dataset, so it deletes by id: an unreadable model is logged with its
/// id). 404 for a model the caller cannot see (or a deleted one), 403 for
/// an analyst, 409 while a deployment serves it. The id never comes back:
/// the row stays as a tombstone (`store::models::delete`).
async fn delete_model(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if caller.role != Role::Admin {
        let record = models::get_visible(&state.pool, &id, &caller.id)
            .await?
            .ok_or(ApiError::NotFound("model"))?;
        caller.require(&[Role::Owner], "deleting a model")?;
        let owns = crate::store::datasets::get_visible(&state.pool, &record.dataset_id, &caller.id)
            .await?
            .is_some_and(|d| d.owner_id == caller.id);
        if !owns {
            return Err(ApiError::Forbidden(
                "deleting a model is for its dataset's owner".into(),
            ));
        }
    }
    match models::delete(&state.pool, &id, &caller.id).await? {
        models::Deleted::Done => {
            state.models.forget(&id);
            // A deployment never serves a deleted model (the delete is
            // refused while one does), but a cached one may predate the
            // move away from it: forget those too.
            state.caches.deployments.clear();
            tracing::info!(model_id = %id, by = %caller.id, "model deleted");
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        models::Deleted::Missing => Err(ApiError::NotFound("model")),
        models::Deleted::Deployed(names) => Err(ApiError::Conflict(format!(
            "model {id} is served by deployment {}: move or roll back the deployment first",
            names.join(", ")
        ))),
    }
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
            "1 to 100 characters from A-Z a-z 0-9 . _ - (or key_id:name for your own key)",
        )]))
    }
}

/// The deployment `name` means to the caller (`store::deployments::resolve`).
pub(super) async fn deployment(
    state: &AppState,
    caller: &Caller,
    name: &str,
) -> Result<Deployment, ApiError> {
    deployments::resolve(&state.pool, name, &caller.id)
        .await?
        .ok_or(ApiError::NotFound("deployment"))
}

/// [`deployment`] through the deployment cache: for serving, where an
/// answer at most `cache::CACHE_TTL` old from another replica is fine.
/// Moves (`put`, `rollback`) read the store itself.
async fn cached_deployment(
    state: &AppState,
    caller: &Caller,
    name: &str,
) -> Result<Deployment, ApiError> {
    let key = super::cache::deployment_key(&caller.id, name);
    if let Some(d) = state.caches.deployments.get(&key) {
        return Ok(d);
    }
    let ticket = state.caches.deployments.ticket();
    let d = deployment(state, caller, name).await?;
    state.caches.deployments.insert(ticket, key, d.clone());
    Ok(d)
}

/// The deployment `name` means to the caller and the model it serves now.
pub(super) async fn deployed(
    state: &AppState,
    caller: &Caller,
    name: &str,
) -> Result<(Deployment, Arc<ModelRecord>, Arc<Loaded>), ApiError> {
    let d = cached_deployment(state, caller, name).await?;
    // The deployment may move between versions, so it is cached briefly
    // and forgotten on every move (`super::cache`); the model it points to
    // never changes, so a loaded one needs no read.
    if let Some((record, loaded)) = state.models.get(&d.model_id) {
        return Ok((d, record, loaded));
    }
    let record = models::get(&state.pool, &d.model_id)
        .await?
        .ok_or(ApiError::NotFound("deployment"))?;
    let loaded = state.models.load(&record)?;
    Ok((d, Arc::new(record), loaded))
}

/// A deployment as JSON, with its qualified name.
fn deployment_json(d: &Deployment) -> Result<Value, ApiError> {
    let mut v = super::to_json(d)?;
    v["qualified_name"] = json!(d.qualified_name());
    Ok(v)
}

async fn list_deployments(
    State(state): State<AppState>,
    _caller: Caller,
    AppQuery(q): AppQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let (after, size) = q.cursor()?;
    let page = deployments::list(&state.pool, after, size).await?;
    let items = page
        .items
        .iter()
        .map(deployment_json)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(axum::Json(json!({
        "items": items,
        "next_page_token": page.next_after.map(|s| format!("after-{s}")),
    })))
}

/// The deployment with the metadata of the model it serves: what a key
/// that may predict with it needs (input schema, task, privacy statement),
/// never the model's insides. Times are whole seconds unless the caller
/// owns the model's dataset.
async fn get_deployment(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (d, record, loaded) = deployed(&state, &caller, &name).await?;
    let precise = super::sees_precise_times(&state, &caller, &record.dataset_id).await?;
    let mut body = deployment_json(&d)?;
    body["model"] = model_metadata(&record, &loaded.model, precise)?;
    Ok(axum::Json(body))
}

/// What anyone who may predict with a deployment may read about its model.
pub(super) fn model_metadata(
    record: &ModelRecord,
    model: &Model,
    precise: bool,
) -> Result<Value, ApiError> {
    let mut v = json!({
        "id": record.id,
        "created_at": record.created_at,
        "algorithm": model.algorithm(),
        "task": model.task(),
        "schema": super::to_json(model.schema())?,
        "privacy": model.privacy_json(),
    });
    if !precise {
        super::coarsen_time(&mut v["created_at"]);
    }
    Ok(v)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PutDeployment {
    model_id: String,
}

/// The caller's own deployment name from a path: `name`, or `key_id:name`
/// where `key_id` must be the caller's (403 otherwise: only a deployment's
/// creator moves it).
fn own_name<'a>(caller: &Caller, name: &'a str) -> Result<&'a str, ApiError> {
    let plain = match name.split_once(':') {
        Some((owner, plain)) if owner == caller.id => plain,
        Some(_) => {
            return Err(ApiError::Forbidden(format!(
                "only the key that created deployment '{name}' may move it"
            )));
        }
        None => name,
    };
    check_name(plain)?;
    Ok(plain)
}

/// `PUT /v1/deployments/{name}`: create the caller's deployment `name`
/// (201) or move it to another model (200); either appends a version.
async fn put_deployment(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    AppJson(body): AppJson<PutDeployment>,
) -> Result<impl IntoResponse, ApiError> {
    let plain = own_name(&caller, &name)?;
    // The caller must see the model (else 404, as for any foreign resource).
    visible_model(&state, &caller, &body.model_id).await?;
    let put = deployments::put(&state.pool, &caller.id, plain, &body.model_id).await?;
    // After the commit, whatever it did: a new deployment can change what
    // a plain name means to its creator, a move what it serves.
    state.caches.deployments.clear();
    match put {
        Put::Created(d) => Ok((StatusCode::CREATED, axum::Json(deployment_json(&d)?))),
        Put::Updated(d) => Ok((StatusCode::OK, axum::Json(deployment_json(&d)?))),
        // Deleted between the check above and the move.
        Put::ModelGone => Err(ApiError::NotFound("model")),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RollbackRequest {
    /// The version to go back to; default: the one before the current.
    version: Option<i64>,
}

/// `POST /v1/deployments/{name}/rollback`: append a version that serves the
/// model of an earlier version (the previous one by default).
async fn rollback_deployment(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let req: RollbackRequest = if body.iter().all(u8::is_ascii_whitespace) {
        RollbackRequest::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::Validation(vec![FieldError::new("body", e.to_string())]))?
    };
    let d = deployment(&state, &caller, &name).await?;
    if d.created_by != caller.id {
        return Err(ApiError::Forbidden(format!(
            "only the key that created deployment '{}' may roll it back",
            d.qualified_name()
        )));
    }
    let target = match req.version {
        Some(v) if v < 1 => {
            return Err(ApiError::Validation(vec![FieldError::new(
                "version",
                "a version number is 1 or more",
            )]));
        }
        Some(v) => v,
        None if d.version <= 1 => {
            return Err(ApiError::Conflict(format!(
                "deployment '{}' is at version 1: there is no previous version to roll back to",
                d.qualified_name()
            )));
        }
        None => d.version - 1,
    };
    let v = deployments::version(&state.pool, d.seq, target)
        .await?
        .ok_or(ApiError::NotFound("deployment version"))?;
    // Only to a model the caller may still see.
    visible_model(&state, &caller, &v.model_id).await?;
    let rolled = deployments::rollback(&state.pool, d.seq, Some(target), &caller.id).await?;
    state.caches.deployments.clear();
    match rolled {
        Rollback::Done(d) => Ok(axum::Json(deployment_json(&d)?)),
        Rollback::UnknownVersion | Rollback::Gone => Err(ApiError::NotFound("deployment version")),
        Rollback::ModelGone => Err(ApiError::NotFound("model")),
        Rollback::NoPrevious => Err(ApiError::Conflict(
            "there is no previous version to roll back to".into(),
        )),
    }
}

/// `GET /v1/deployments/{name}/versions`: the history, oldest first; the
/// page token is `after-{version}`.
async fn deployment_versions(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    AppQuery(q): AppQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let (after, size) = q.cursor()?;
    let d = deployment(&state, &caller, &name).await?;
    let page = deployments::history(&state.pool, d.seq, after, size).await?;
    let mut body = page_json(page);
    body["deployment"] = json!(d.qualified_name());
    body["version"] = json!(d.version);
    Ok(axum::Json(body))
}

async fn predict_deployment(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    body: JsonBody,
) -> Result<impl IntoResponse, ApiError> {
    let request: PredictRequest<'_> = body.parse()?;
    let (d, record, loaded) = deployed(&state, &caller, &name).await?;
    let predictions = request.predict(&loaded, state.config.max_predict_rows)?;
    Ok(axum::Json(PredictAnswer {
        deployment: Some(&name),
        qualified_name: Some(d.qualified_name()),
        version: Some(d.version),
        model_id: Some(&record.id),
        predictions: &predictions,
    })
    .into_response())
}
