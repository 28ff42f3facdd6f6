//! MLflow-style scoring: `POST /v1/deployments/{name}/invocations` with a
//! `dataframe_split`, `dataframe_records`, `instances` or `inputs` body,
//! answered with `{"predictions": [...]}` (the same prediction objects as
//! `/v1/deployments/{name}/predict`). Access as for predict: any valid key.
//!
//! JSON has no NaN, but Python's `json` writes a bare `NaN` for a float NaN
//! and pandas writes `null`: both become JSON null, which the encoder maps to
//! the column's missing literal when the schema declares missing tokens (and
//! refuses otherwise). Errors are problem documents, as on all of `/v1`.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, header};
use axum::response::IntoResponse;
use serde_json::{Map, Value};

use super::auth::Caller;
use super::error::{ApiError, FieldError};
use super::models::{PredictAnswer, deployed, predict_rows};
use super::{AppState, Routes};

pub(super) fn routes(r: Routes) -> Routes {
    r.at(
        Method::POST,
        "/v1/deployments/{name}/invocations",
        invocations,
    )
}

/// Replace bare `NaN` tokens outside strings by `null`.
pub(crate) fn nan_to_null(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < body.len() {
        let b = body[i];
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
            out.push(b);
        } else if body[i..].starts_with(b"NaN") {
            out.extend_from_slice(b"null");
            i += 3;
            continue;
        } else {
            out.push(b);
        }
        i += 1;
    }
    out
}

fn invalid(field: &str, message: &str) -> ApiError {
    ApiError::Validation(vec![FieldError::new(field, message)])
}

fn records(v: &Value, field: &str) -> Result<Vec<Map<String, Value>>, ApiError> {
    v.as_array()
        .ok_or_else(|| invalid(field, "expected a list of records"))?
        .iter()
        .map(|r| {
            r.as_object()
                .cloned()
                .ok_or_else(|| invalid(field, "expected a list of objects keyed by column"))
        })
        .collect()
}

/// The rows of an MLflow scoring body.
///
/// MLflow's `params` (inference parameters, which its `dump_input_data`
/// writes beside the data) is accepted when null or empty: privboost's
/// models take none, so a non-empty one is refused by name rather than
/// silently ignored.
fn rows_of(body: &Map<String, Value>) -> Result<Vec<Map<String, Value>>, ApiError> {
    match body.get("params") {
        None | Some(Value::Null) => {}
        Some(Value::Object(p)) if p.is_empty() => {}
        Some(Value::Object(p)) => {
            let names: Vec<&str> = p.keys().map(String::as_str).collect();
            return Err(invalid(
                "params",
                &format!(
                    "privboost models take no inference parameters; remove {}",
                    names.join(", ")
                ),
            ));
        }
        Some(_) => {
            return Err(invalid(
                "params",
                "expected an object of inference parameters (privboost models take none)",
            ));
        }
    }
    let data: Vec<(&String, &Value)> = body.iter().filter(|(k, _)| *k != "params").collect();
    let [(key, value)] = data[..] else {
        return Err(invalid(
            "body",
            "exactly one of dataframe_split, dataframe_records, instances, inputs (besides an optional empty params)",
        ));
    };
    match key.as_str() {
        "dataframe_split" => {
            let columns: Vec<String> = value["columns"]
                .as_array()
                .and_then(|c| c.iter().map(|x| x.as_str().map(str::to_owned)).collect())
                .ok_or_else(|| invalid("dataframe_split.columns", "expected column names"))?;
            let data = value["data"]
                .as_array()
                .ok_or_else(|| invalid("dataframe_split.data", "expected a list of rows"))?;
            data.iter()
                .enumerate()
                .map(|(i, row)| {
                    let cells = row.as_array().filter(|r| r.len() == columns.len());
                    let cells = cells.ok_or_else(|| {
                        invalid(
                            &format!("dataframe_split.data[{i}]"),
                            "expected one value per column",
                        )
                    })?;
                    Ok(columns.iter().cloned().zip(cells.iter().cloned()).collect())
                })
                .collect()
        }
        "dataframe_records" | "instances" => records(value, key),
        "inputs" => match value {
            Value::Object(cols) => {
                let n = cols
                    .values()
                    .next()
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let mut rows = vec![Map::new(); n];
                for (name, col) in cols {
                    let col = col
                        .as_array()
                        .filter(|c| c.len() == n)
                        .ok_or_else(|| invalid("inputs", "every column needs one value per row"))?;
                    for (row, v) in rows.iter_mut().zip(col) {
                        row.insert(name.clone(), v.clone());
                    }
                }
                Ok(rows)
            }
            other => records(other, "inputs"),
        },
        _ => Err(invalid(
            "body",
            "expected dataframe_split, dataframe_records, instances or inputs",
        )),
    }
}

async fn invocations(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("");
        if !ct.trim_start().starts_with("application/json") {
            return Err(ApiError::UnsupportedMediaType(
                "expected a request with Content-Type: application/json".into(),
            ));
        }
    }
    let (_, _, loaded) = deployed(&state, &caller, &name).await?;
    let parsed: Value = serde_json::from_slice(&nan_to_null(&body))
        .map_err(|e| ApiError::BadRequest(format!("the request is not valid JSON: {e}")))?;
    let object = parsed
        .as_object()
        .ok_or_else(|| invalid("body", "expected a JSON object"))?;
    let rows = rows_of(object)?;
    let predictions = predict_rows(&loaded, &rows, state.config.max_predict_rows)?;
    Ok(axum::Json(PredictAnswer {
        predictions: &predictions,
        ..PredictAnswer::default()
    })
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::nan_to_null;

    #[test]
    fn bare_nan_becomes_null_but_not_inside_strings() {
        let out = nan_to_null(br#"{"a": [NaN, 1.5], "b": "NaN \" NaN"}"#);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"a": [null, 1.5], "b": "NaN \" NaN"}"#
        );
    }
}
