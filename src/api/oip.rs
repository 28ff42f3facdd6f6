//! The Open Inference Protocol v2 (KServe v2) for deployments: health and
//! readiness, server and model metadata, inference (plain and versioned),
//! the `outputs` selection and the binary tensor data extension.
//!
//! Errors on every `/v2` route are `{"error": "..."}` (rewritten from the
//! problem documents by [`super::error::normalize_errors`]). Request bodies
//! are JSON with or without `Content-Type`; with an
//! `Inference-Header-Content-Length` header the JSON is followed by the
//! binary tensors.
//!
//! Access: health and server metadata are public (they say nothing of any
//! model). Model readiness, metadata and inference take any valid key, as
//! `/v1/deployments/{name}/predict` does: a deployment is a publication.
//! Model metadata exposes only the schema's public column names, their
//! datatypes and the task's outputs. A version is a version number of the
//! deployment or a model id: any model the deployment ever served is
//! public; another model id is served only to a caller who may see that
//! model (else 404).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::auth::Caller;
use super::error::{ApiError, FieldError};
use super::models::{Loaded, PredictionOut, deployed, predict_runs, visible_model};
use super::oip_inputs::{Columns, InferInput};
use super::{AppState, Routes};
use crate::data::{Column, Task};
use crate::store::deployments;
use crate::store::models::{self, ModelRecord};

/// The binary extension's header: length of the JSON part of the body.
const HEADER_LENGTH: &str = "inference-header-content-length";

pub(super) fn routes(r: Routes) -> Routes {
    r.at(Method::GET, "/v2", server_metadata)
        .at(Method::GET, "/v2/health/live", live)
        .at(Method::GET, "/v2/health/ready", ready)
        .at(Method::GET, "/v2/models/{name}", model_metadata)
        .at(Method::GET, "/v2/models/{name}/ready", model_ready)
        .at(Method::POST, "/v2/models/{name}/infer", infer)
        .at(
            Method::GET,
            "/v2/models/{name}/versions/{version}",
            model_metadata_version,
        )
        .at(
            Method::GET,
            "/v2/models/{name}/versions/{version}/ready",
            model_ready_version,
        )
        .at(
            Method::POST,
            "/v2/models/{name}/versions/{version}/infer",
            infer_version,
        )
}

async fn server_metadata() -> impl IntoResponse {
    axum::Json(json!({
        "name": "privboost",
        "version": env!("CARGO_PKG_VERSION"),
        "extensions": ["binary_tensor_data"],
    }))
}

async fn live() -> impl IntoResponse {
    axum::Json(json!({"live": true}))
}

async fn ready(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    if !crate::store::ready_within(&state.pool, crate::store::READY_WITHIN).await {
        return Err(ApiError::Unavailable);
    }
    Ok(axum::Json(json!({"ready": true})))
}

/// The model behind `name`, or behind `name` at `version`: a version
/// number of the deployment (`1`, `2`...) or a model id. Any model the
/// deployment ever served is public like the deployment; another model id
/// only to a caller who may see that model. Anything else is 404. Also
/// the version number this is (for a model id: the latest version that
/// served it; `None` for a model the deployment never served).
async fn resolve(
    state: &AppState,
    caller: &Caller,
    name: &str,
    version: Option<&str>,
) -> Result<(Option<i64>, Arc<ModelRecord>, Arc<Loaded>), ApiError> {
    let (d, record, loaded) = deployed(state, caller, name).await?;
    let Some(v) = version.filter(|v| *v != record.id) else {
        return Ok((Some(d.version), record, loaded));
    };
    let not_found = || ApiError::NotFound("model version");
    let (number, model_id) = if let Ok(n) = v.parse::<i64>() {
        let version = deployments::version(&state.pool, d.seq, n)
            .await?
            .ok_or_else(not_found)?;
        (n, version.model_id)
    } else if let Some(n) = deployments::latest_serving(&state.pool, d.seq, v).await? {
        (n, v.to_owned())
    } else {
        let (record, loaded) = visible_model(state, caller, v)
            .await
            .map_err(|_| not_found())?;
        return Ok((None, Arc::new(record), loaded));
    };
    let record = models::get(&state.pool, &model_id)
        .await?
        .ok_or_else(not_found)?;
    let loaded = state.models.load(&record)?;
    Ok((Some(number), Arc::new(record), loaded))
}

/// The protocol datatype of a column.
fn column_datatype(c: &Column) -> Option<&'static str> {
    match c {
        Column::Numeric(_) => Some("FP64"),
        Column::Categorical(_) => Some("BYTES"),
        Column::Boolean(_) => Some("BOOL"),
        Column::Ignore(_) => None,
    }
}

/// The output names and datatypes of a task. A multiclass model answers
/// the class (BYTES, shape `[n]`) and its probabilities (FP64, shape
/// `[n, k]`, one column per class in the schema's order).
fn task_outputs(task: Task) -> &'static [(&'static str, &'static str)] {
    match task {
        Task::Binary => &[
            ("class", "BYTES"),
            ("score", "FP64"),
            ("probability", "FP64"),
        ],
        Task::Regression { .. } => &[("value", "FP64")],
        Task::Multiclass { .. } => &[("class", "BYTES"), ("probabilities", "FP64")],
    }
}

fn metadata(name: &str, number: Option<i64>, record: &ModelRecord, loaded: &Loaded) -> Value {
    let versions: Vec<String> = std::iter::once(record.id.clone())
        .chain(number.map(|n| n.to_string()))
        .collect();
    let inputs: Vec<Value> = loaded
        .model
        .schema()
        .columns
        .iter()
        .filter_map(|c| {
            column_datatype(c).map(|t| json!({"name": c.name(), "datatype": t, "shape": [-1]}))
        })
        .collect();
    // A multiclass model's class names, in the order of the probabilities'
    // second dimension, in each output's `parameters.classes` (the v2
    // protocol's metadata tensor has no field for them; MLServer and
    // Triton carry extra facts in `parameters`).
    let classes = match loaded.model.task() {
        Task::Multiclass { .. } => Some(loaded.model.schema().class_names().to_vec()),
        _ => None,
    };
    let outputs: Vec<Value> = task_outputs(loaded.model.task())
        .iter()
        .map(|(n, t)| {
            let mut o = json!({"name": n, "datatype": t, "shape": [-1]});
            if let Some(classes) = &classes {
                if *n == "probabilities" {
                    o["shape"] = json!([-1, classes.len()]);
                }
                o["parameters"] = json!({ "classes": classes });
            }
            o
        })
        .collect();
    json!({
        "name": name,
        // This version as its model id and as its number (the current one
        // unless the route named another); any earlier number or model id
        // of the deployment is served too.
        "versions": versions,
        "platform": "privboost",
        "inputs": inputs,
        "outputs": outputs,
    })
}

async fn model_metadata(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    let (number, record, loaded) = resolve(&state, &caller, &name, None).await?;
    Ok(axum::Json(metadata(&name, number, &record, &loaded)))
}

async fn model_metadata_version(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, version)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    let (number, record, loaded) = resolve(&state, &caller, &name, Some(&version)).await?;
    Ok(axum::Json(metadata(&name, number, &record, &loaded)))
}

async fn model_ready(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    resolve(&state, &caller, &name, None).await?;
    Ok(axum::Json(json!({"name": name, "ready": true})))
}

async fn model_ready_version(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, version)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    resolve(&state, &caller, &name, Some(&version)).await?;
    Ok(axum::Json(json!({"name": name, "ready": true})))
}

/// An inference request (the JSON part), borrowing its strings from the
/// body.
#[derive(Debug, Deserialize)]
struct InferRequest<'a> {
    id: Option<String>,
    #[serde(borrow)]
    inputs: Vec<InferInput<'a>>,
    #[serde(default)]
    parameters: Option<Map<String, Value>>,
    #[serde(default)]
    outputs: Option<Vec<RequestedOutput>>,
}

#[derive(Debug, Deserialize)]
struct RequestedOutput {
    name: String,
    #[serde(default)]
    parameters: Option<Map<String, Value>>,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::BadRequest(message.into())
}

fn param_bool(p: &Option<Map<String, Value>>, key: &str) -> bool {
    p.as_ref()
        .and_then(|m| m.get(key))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Split a body into the JSON request and its binary part.
fn parse_body<'a>(
    headers: &HeaderMap,
    body: &'a Bytes,
) -> Result<(InferRequest<'a>, &'a [u8]), ApiError> {
    let json_len = match headers.get(HEADER_LENGTH) {
        None => body.len(),
        Some(v) => v
            .to_str()
            .ok()
            .and_then(|t| t.trim().parse::<usize>().ok())
            .filter(|n| *n <= body.len())
            .ok_or_else(|| {
                bad("Inference-Header-Content-Length is not a length within the body")
            })?,
    };
    let request: InferRequest = super::error::from_json_bytes(&body[..json_len]).map_err(|e| {
        if e.is_data() {
            ApiError::Validation(vec![FieldError::new("body", e.to_string())])
        } else {
            bad(format!("the request is not valid JSON: {e}"))
        }
    })?;
    Ok((request, &body[json_len..]))
}

/// One output tensor: its values (row-major), borrowed from the
/// predictions where they are strings, and for a matrix its number of
/// columns.
enum Tensor<'p> {
    Bytes(Vec<&'p str>),
    Fp64(Vec<f64>),
    Fp64Matrix(Vec<f64>, usize),
}

fn output_tensor<'p>(name: &str, predictions: &'p [PredictionOut<'_>]) -> Option<Tensor<'p>> {
    let fp = |f: fn(&PredictionOut<'_>) -> Option<f64>| {
        predictions.iter().map(f).collect::<Option<Vec<f64>>>()
    };
    match name {
        "class" => predictions
            .iter()
            .map(|p| match p {
                PredictionOut::Class { class, .. } => Some(*class),
                PredictionOut::Classes { class, .. } => Some(class.as_str()),
                PredictionOut::Value { .. } => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(Tensor::Bytes),
        "score" => fp(|p| match p {
            PredictionOut::Class { score, .. } => Some(*score),
            PredictionOut::Value { .. } | PredictionOut::Classes { .. } => None,
        })
        .map(Tensor::Fp64),
        "probability" => fp(|p| match p {
            PredictionOut::Class { probability, .. } => Some(*probability),
            PredictionOut::Value { .. } | PredictionOut::Classes { .. } => None,
        })
        .map(Tensor::Fp64),
        "probabilities" => {
            let k = match predictions.first()? {
                PredictionOut::Classes { probabilities, .. } => probabilities.len(),
                _ => return None,
            };
            let mut flat = Vec::with_capacity(predictions.len() * k);
            for p in predictions {
                match p {
                    PredictionOut::Classes { probabilities, .. } if probabilities.len() == k => {
                        flat.extend_from_slice(probabilities)
                    }
                    _ => return None,
                }
            }
            Some(Tensor::Fp64Matrix(flat, k))
        }
        "value" => fp(|p| match p {
            PredictionOut::Value { value } => Some(*value),
            PredictionOut::Class { .. } | PredictionOut::Classes { .. } => None,
        })
        .map(Tensor::Fp64),
        _ => None,
    }
}

impl Tensor<'_> {
    fn datatype(&self) -> &'static str {
        match self {
            Tensor::Bytes(_) => "BYTES",
            Tensor::Fp64(_) | Tensor::Fp64Matrix(..) => "FP64",
        }
    }

    /// The shape for `n` rows: `[n]`, or `[n, k]` for a matrix.
    fn shape(&self, n: usize) -> Vec<usize> {
        match self {
            Tensor::Fp64Matrix(_, k) => vec![n, *k],
            Tensor::Bytes(_) | Tensor::Fp64(_) => vec![n],
        }
    }

    /// Append the values little-endian, BYTES as 4-byte length-prefixed
    /// strings; returns how many bytes were appended.
    fn write_binary(&self, out: &mut Vec<u8>) -> usize {
        let before = out.len();
        match self {
            Tensor::Bytes(v) => {
                for s in v {
                    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    out.extend_from_slice(s.as_bytes());
                }
            }
            Tensor::Fp64(v) | Tensor::Fp64Matrix(v, _) => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        }
        out.len() - before
    }
}

/// The values flattened in row-major order, as the protocol's JSON tensor
/// data allows (written straight from the predictions, no JSON tree).
impl Serialize for Tensor<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Tensor::Bytes(v) => v.serialize(s),
            Tensor::Fp64(v) | Tensor::Fp64Matrix(v, _) => v.serialize(s),
        }
    }
}

/// An inference answer (the JSON part).
#[derive(Serialize)]
struct InferResponse<'a> {
    model_name: &'a str,
    model_version: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    outputs: Vec<OutputTensor<'a>>,
}

#[derive(Serialize)]
struct OutputTensor<'a> {
    name: &'a str,
    datatype: &'static str,
    shape: Vec<usize>,
    /// The values, unless they are in the binary part.
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Tensor<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<BinaryDataSize>,
}

#[derive(Serialize)]
struct BinaryDataSize {
    binary_data_size: usize,
}

async fn infer(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    run_infer(&state, &caller, &name, None, &headers, &body).await
}

async fn infer_version(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    run_infer(&state, &caller, &name, Some(&version), &headers, &body).await
}

async fn run_infer(
    state: &AppState,
    caller: &Caller,
    name: &str,
    version: Option<&str>,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Response, ApiError> {
    let (_, record, loaded) = resolve(state, caller, name, version).await?;
    let (request, binary) = parse_body(headers, body)?;
    let InferRequest {
        id,
        inputs,
        parameters,
        outputs,
    } = request;
    let mut columns = Columns::new(inputs, binary, &loaded.encoder)?;
    let predictions = predict_runs(
        &loaded,
        columns.n_rows(),
        state.config.max_predict_rows,
        |count, rows| columns.encode_next(&loaded.encoder, count, rows),
    )?;
    let all_binary = param_bool(&parameters, "binary_data_output");
    let wanted: Vec<(&str, bool)> = match &outputs {
        Some(outputs) => outputs
            .iter()
            .map(|o| {
                let binary = o
                    .parameters
                    .as_ref()
                    .and_then(|p| p.get("binary_data"))
                    .and_then(Value::as_bool)
                    .unwrap_or(all_binary);
                (o.name.as_str(), binary)
            })
            .collect(),
        None => task_outputs(loaded.model.task())
            .iter()
            .map(|(n, _)| (*n, all_binary))
            .collect(),
    };
    let n = predictions.len();
    let mut outputs = Vec::with_capacity(wanted.len());
    let mut blob = Vec::new();
    for (out_name, as_binary) in &wanted {
        let tensor = output_tensor(out_name, &predictions)
            .ok_or_else(|| bad(format!("unknown output {out_name:?} for this model")))?;
        let mut o = OutputTensor {
            name: out_name,
            datatype: tensor.datatype(),
            shape: tensor.shape(n),
            data: None,
            parameters: None,
        };
        if *as_binary {
            let size = tensor.write_binary(&mut blob);
            o.parameters = Some(BinaryDataSize {
                binary_data_size: size,
            });
        } else {
            o.data = Some(tensor);
        }
        outputs.push(o);
    }
    let doc = InferResponse {
        model_name: name,
        model_version: &record.id,
        id: id.as_deref(),
        outputs,
    };
    // Invariant: every field serializes (strings, finite or null floats).
    let text = serde_json::to_vec(&doc).expect("an inference answer serializes");
    if blob.is_empty() {
        return Ok((
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            text,
        )
            .into_response());
    }
    let json_len = text.len();
    let mut bytes = text;
    bytes.extend_from_slice(&blob);
    let mut response = (StatusCode::OK, bytes).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    response
        .headers_mut()
        .insert(HEADER_LENGTH, HeaderValue::from(json_len));
    Ok(response)
}
