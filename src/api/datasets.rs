//! Datasets: upload (schema + CSV, streamed into the encoder), list, get
//! (metadata and schema only, never rows), delete (rows purged, ledger kept),
//! budget and ledger, and analyst grants.
//!
//! # Upload
//!
//! `POST /v1/datasets` takes `multipart/form-data` with the text fields
//! `name`, `epsilon`, `delta` (optional, default 0), `skip_bad_rows`
//! (optional, `true` to store the valid rows and report the others),
//! `accounting` (optional: `basic`, the default, or `zcdp-filter`; fixed for
//! the dataset's life), `local_dp_epsilon` and `local_dp_label_epsilon`
//! (optional: the owner's declaration that the rows were randomized on the
//! client with `privboost randomize`; jobs on them spend no central budget),
//! `local_dp_protocol` (optional, with `local_dp_epsilon`: `all-columns`, the
//! default, or `sampled-column`, whose data is a report file,
//! `local_dp::sampled_column`) and `schema` (the schema JSON), then the file field `data` (the CSV)
//! last.
//! The CSV is streamed through a bounded channel into the encoder on a
//! blocking thread, so memory holds the bit matrix and a few chunks, never
//! the file. Nothing is stored unless the whole upload is valid; the
//! rejected-row positions go only to the uploading owner, in the response.

use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Bytes;
use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodFilter;
use axum::routing::on;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::auth::Caller;
use super::error::{ApiError, AppJson, AppQuery, FieldError};
use super::{AppState, Config, MAX_EPSILON, PageQuery, Routes, idempotency_key, page_json, replay};
use crate::data::{
    DataError, Encoder, Format, LabelMode, OnBadRow, ReadOptions, Schema, read_arrow_ipc_with,
    read_csv_with, read_parquet_with,
};
use crate::local_dp::sampled_column::{SampledColumn, read_reports};
use crate::local_dp::{LocalDp, Protocol};
use crate::privacy::budget_units::{self, DeltaUnits, EpsilonUnits, RhoUnits};
use crate::privacy::filter::{Accounting, Charge, LossKind};
use crate::store::datasets::{self, Created, DatasetInfo, MarkPublic, NewDataset};
use crate::store::idempotency::{IdemRequest, StoredResponse};
use crate::store::keys::Role;
use crate::store::ledger::{self, Amount, SetTotal};

pub(super) fn routes(r: Routes, config: &Config) -> Routes {
    r.at_router(
        Method::POST,
        "/v1/datasets",
        on(MethodFilter::POST, upload).layer(DefaultBodyLimit::max(config.max_upload_bytes)),
    )
    .at(Method::GET, "/v1/datasets", list)
    .at(Method::GET, "/v1/datasets/{id}", get)
    .at(Method::DELETE, "/v1/datasets/{id}", delete)
    .at(Method::PATCH, "/v1/datasets/{id}", patch)
    .at(Method::GET, "/v1/datasets/{id}/budget", budget)
    .at(Method::PATCH, "/v1/datasets/{id}/budget", set_budget)
    .at(Method::GET, "/v1/datasets/{id}/ledger", ledger_entries)
    .at(Method::GET, "/v1/datasets/{id}/grants", grants)
    .at(Method::PUT, "/v1/datasets/{id}/grants/{key_id}", grant)
    .at(
        Method::DELETE,
        "/v1/datasets/{id}/grants/{key_id}",
        revoke_grant,
    )
}

/// Largest text field of an upload (the schema JSON is the big one).
const MAX_TEXT_FIELD: usize = 1 << 20;
/// Row errors reported to the owner.
const MAX_REPORTED_ERRORS: usize = 20;
/// Chunks buffered between the network and the encoder.
const UPLOAD_CHANNEL_CHUNKS: usize = 8;

/// The text fields of an upload.
#[derive(Default)]
struct UploadMeta {
    name: Option<String>,
    epsilon: Option<String>,
    delta: Option<String>,
    skip_bad_rows: Option<String>,
    accounting: Option<String>,
    local_dp_epsilon: Option<String>,
    local_dp_label_epsilon: Option<String>,
    local_dp_protocol: Option<String>,
    allow_duplicate: Option<String>,
    schema: Option<String>,
}

/// The checked text fields.
struct CheckedMeta {
    name: String,
    total: Amount,
    accounting: Accounting,
    local_dp: Option<LocalDp>,
    skip: bool,
    allow_duplicate: bool,
    schema: Schema,
    schema_json: String,
}

impl UploadMeta {
    fn check(&self) -> Result<CheckedMeta, ApiError> {
        let mut errors = Vec::new();
        let name = self.name.clone().unwrap_or_default().trim().to_owned();
        if name.is_empty() || name.len() > 200 {
            errors.push(FieldError::new("name", "required, 1 to 200 characters"));
        }
        let epsilon = match self.epsilon.as_deref().map(|t| t.trim().parse::<f64>()) {
            Some(Ok(e)) => Some(e),
            Some(Err(_)) => {
                errors.push(FieldError::new("epsilon", "must be a number"));
                None
            }
            None => {
                errors.push(FieldError::new(
                    "epsilon",
                    "required: the dataset's total privacy budget",
                ));
                None
            }
        };
        let delta = match self.delta.as_deref().map(|t| t.trim().parse::<f64>()) {
            None => Some(0.0),
            Some(Ok(d)) => Some(d),
            Some(Err(_)) => {
                errors.push(FieldError::new("delta", "must be a number"));
                None
            }
        };
        let total = match (epsilon, delta) {
            (Some(e), Some(_)) if e > MAX_EPSILON => {
                errors.push(FieldError::new(
                    "epsilon",
                    format!("must be at most {MAX_EPSILON}"),
                ));
                None
            }
            (Some(e), Some(d)) => match budget_units::total(e, d) {
                Ok(total) => Some(total),
                Err(err) => {
                    errors.push(FieldError::new(budget_field(&err), err.to_string()));
                    None
                }
            },
            _ => None,
        };
        let accounting = match self.accounting.as_deref().map(str::trim) {
            None => Accounting::Basic,
            Some(name) => Accounting::parse(name).unwrap_or_else(|| {
                errors.push(FieldError::new(
                    "accounting",
                    "must be basic or zcdp-filter",
                ));
                Accounting::Basic
            }),
        };
        let skip = match self.skip_bad_rows.as_deref().map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                errors.push(FieldError::new("skip_bad_rows", "must be true or false"));
                false
            }
        };
        let allow_duplicate = match self.allow_duplicate.as_deref().map(str::trim) {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => {
                errors.push(FieldError::new("allow_duplicate", "must be true or false"));
                false
            }
        };
        let schema = match self.schema.as_deref() {
            None => {
                errors.push(FieldError::new("schema", "required, before the data field"));
                None
            }
            Some(text) => match Schema::from_json(text) {
                Ok(s) => Some(s),
                Err(e) => {
                    errors.push(FieldError::new("schema", e.to_string()));
                    None
                }
            },
        };
        let number = |field: &str, text: Option<&str>, errors: &mut Vec<FieldError>| {
            text.map(|t| t.trim().parse::<f64>()).and_then(|r| {
                r.map_err(|_| errors.push(FieldError::new(field, "must be a number")))
                    .ok()
            })
        };
        let local_epsilon = number(
            "local_dp_epsilon",
            self.local_dp_epsilon.as_deref(),
            &mut errors,
        );
        let label_epsilon = number(
            "local_dp_label_epsilon",
            self.local_dp_label_epsilon.as_deref(),
            &mut errors,
        );
        if label_epsilon.is_some() && self.local_dp_epsilon.is_none() {
            errors.push(FieldError::new(
                "local_dp_label_epsilon",
                "only with local_dp_epsilon",
            ));
        }
        let protocol = match self.local_dp_protocol.as_deref().map(str::trim) {
            None => Protocol::AllColumns,
            Some(_) if self.local_dp_epsilon.is_none() => {
                errors.push(FieldError::new(
                    "local_dp_protocol",
                    "only with local_dp_epsilon",
                ));
                Protocol::AllColumns
            }
            Some(name) => Protocol::parse(name).unwrap_or_else(|| {
                errors.push(FieldError::new(
                    "local_dp_protocol",
                    "must be all-columns or sampled-column",
                ));
                Protocol::AllColumns
            }),
        };
        if local_epsilon.is_some() && schema.as_ref().is_some_and(|s| s.privacy_unit.is_some()) {
            // The client-side randomizer's guarantee is per row; a unit's
            // several rows would need its own statement (issue 28).
            errors.push(FieldError::new(
                "local_dp_epsilon",
                "a schema with a privacy_unit cannot be declared local DP (its guarantee is per row)",
            ));
        }
        let local_dp = match (&schema, local_epsilon) {
            (Some(schema), Some(e)) => LocalDp::with_protocol(protocol, schema, e, label_epsilon)
                .map_err(|err| {
                    let field = if label_epsilon.is_some() && protocol == Protocol::SampledColumn {
                        "local_dp_label_epsilon"
                    } else {
                        "local_dp_epsilon"
                    };
                    errors.push(FieldError::new(field, err.to_string()))
                })
                .ok(),
            _ => None,
        };
        match (errors.is_empty(), total, schema) {
            (true, Some(total), Some(schema)) => {
                let schema_json = serde_json::to_string(&schema)
                    .map_err(|e| ApiError::Internal(e.to_string()))?;
                Ok(CheckedMeta {
                    name,
                    total,
                    accounting,
                    local_dp,
                    skip,
                    allow_duplicate,
                    schema,
                    schema_json,
                })
            }
            _ => Err(ApiError::Validation(errors)),
        }
    }
}

/// The field a budget error is about (the message names it).
fn budget_field(e: &crate::privacy::PrivacyError) -> &'static str {
    if e.to_string().contains("delta") {
        "delta"
    } else {
        "epsilon"
    }
}

fn multipart_error(e: MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::TooLarge("the upload is larger than the limit".into())
    } else {
        ApiError::BadRequest(format!("malformed multipart body: {}", e.body_text()))
    }
}

/// A blocking `Read` over chunks arriving on a channel.
///
/// It also stops an upload with too many rows while it streams, instead of
/// after the whole file was encoded: memory grows with the rows, so the row
/// limit must bound it, not only the byte limit. It counts line breaks, an
/// upper bound of the records (header included), and fails the read once
/// they exceed `max_lines`; the exact row count is checked again at the end.
struct ChannelReader {
    rx: mpsc::Receiver<Bytes>,
    current: Bytes,
    lines: usize,
    max_lines: usize,
    /// Set when the line limit stopped the read (read by the handler).
    too_many_lines: Arc<AtomicBool>,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.rx.blocking_recv() {
                Some(chunk) => self.current = chunk,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        self.lines += buf[..n].iter().filter(|b| **b == b'\n').count();
        if self.lines > self.max_lines {
            self.too_many_lines.store(true, Ordering::Relaxed);
            return Err(std::io::Error::other("the upload has too many rows"));
        }
        Ok(n)
    }
}

/// What the upload produced.
struct Parsed {
    data: crate::data::Dataset,
    skipped: usize,
    /// Rows dropped by the privacy unit's bound: for the uploading owner's
    /// response only, never stored nor shown to analysts.
    unit_dropped: usize,
    errors: Vec<String>,
}

async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<Response, ApiError> {
    caller.require(&[Role::Owner], "uploading a dataset")?;
    let idem_key = idempotency_key(&headers)?;
    let mut multipart = multipart.map_err(|_| {
        ApiError::UnsupportedMediaType(
            "expected multipart/form-data with fields name, epsilon, delta, schema, data".into(),
        )
    })?;
    let mut meta = UploadMeta::default();
    let mut hasher = Sha256::new();
    // The content digest: schema and data only (not the name or the budget),
    // to recognise the same table sent again by the same owner.
    let mut content = Sha256::new();
    let mut parsed: Option<(CheckedMeta, Parsed)> = None;
    while let Some(mut field) = multipart.next_field().await.map_err(multipart_error)? {
        let field_name = field.name().unwrap_or_default().to_owned();
        hasher.update(field_name.as_bytes());
        hasher.update([0]);
        if field_name == "data" {
            if parsed.is_some() {
                return Err(ApiError::Validation(vec![FieldError::new(
                    "data",
                    "given twice",
                )]));
            }
            let checked = meta.check()?;
            content.update(checked.schema_json.as_bytes());
            content.update([0]);
            let encoder = Encoder::new(&checked.schema).map_err(|e| {
                ApiError::Validation(vec![FieldError::new("schema", e.to_string())])
            })?;
            let options = ReadOptions {
                label: LabelMode::Required,
                on_bad_row: if checked.skip {
                    OnBadRow::Skip
                } else {
                    OnBadRow::Refuse
                },
                max_errors: MAX_REPORTED_ERRORS,
            };
            // The format: the part's Content-Type if it tells one, else
            // the first bytes (`PAR1`, `ARROW1`), else CSV.
            let declared = field.content_type().and_then(Format::from_media_type);
            let mut head: Vec<Bytes> = Vec::new();
            let mut head_len = 0;
            while declared.is_none() && head_len < 6 {
                match field.chunk().await.map_err(multipart_error)? {
                    Some(chunk) => {
                        head_len += chunk.len();
                        head.push(chunk);
                    }
                    None => break,
                }
            }
            let format = declared.unwrap_or_else(|| {
                let bytes: Vec<u8> = head
                    .iter()
                    .flat_map(|c| c.iter().copied())
                    .take(6)
                    .collect();
                Format::sniff(&bytes)
            });
            let (tx, rx) = mpsc::channel::<Bytes>(UPLOAD_CHANNEL_CHUNKS);
            let too_many_lines = Arc::new(AtomicBool::new(false));
            let mut channel_reader = ChannelReader {
                rx,
                current: Bytes::new(),
                lines: 0,
                // The header line, then one line per row (a CSV's; a
                // Parquet or Arrow file's row count is in its footer).
                max_lines: match format {
                    Format::Csv => state.config.max_upload_rows.saturating_add(1),
                    _ => usize::MAX,
                },
                too_many_lines: too_many_lines.clone(),
            };
            let sampled = checked
                .local_dp
                .filter(|l| l.protocol == Protocol::SampledColumn)
                .map(|l| SampledColumn::new(&checked.schema, l.epsilon))
                .transpose()
                .map_err(|e| ApiError::Internal(format!("sampled-column protocol: {e}")))?;
            if sampled.is_some() && format != Format::Csv {
                return Err(ApiError::Validation(vec![FieldError::new(
                    "data",
                    "a sampled-column report file is CSV (privboost randomize writes it)",
                )]));
            }
            let max_rows = state.config.max_upload_rows;
            let reader = tokio::task::spawn_blocking(move || match (format, sampled) {
                // A sampled-column upload is a report file (one column's
                // pair per row), stored with marker literals.
                (_, Some(protocol)) => read_reports(channel_reader, &encoder, &protocol, &options),
                (Format::Csv, None) => read_csv_with(channel_reader, &encoder, &options),
                // Parquet and Arrow files are read from their footer, so
                // they are spooled to an unnamed temporary file (within the
                // upload's byte limit; the kernel frees it whatever happens
                // to the process, so a killed upload leaves nothing), then
                // read batch by batch like a file on disk.
                (format, None) => {
                    let mut spool = tempfile::tempfile()?;
                    std::io::copy(&mut channel_reader, &mut spool)?;
                    drop(channel_reader);
                    spool.seek(SeekFrom::Start(0))?;
                    if format == Format::Parquet {
                        read_parquet_with(spool, &encoder, &options, max_rows)
                    } else {
                        read_arrow_ipc_with(spool, &encoder, &options, max_rows)
                    }
                }
            });
            let mut streamed = Ok(());
            for chunk in head {
                hasher.update(&chunk);
                content.update(&chunk);
                if tx.send(chunk).await.is_err() {
                    break;
                }
            }
            loop {
                match field.chunk().await {
                    Ok(Some(chunk)) => {
                        hasher.update(&chunk);
                        content.update(&chunk);
                        // A closed channel means the reader stopped early
                        // (a refused row): stop sending, the result says why.
                        if tx.send(chunk).await.is_err() {
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        streamed = Err(multipart_error(e));
                        break;
                    }
                }
            }
            drop(tx);
            let result = reader
                .await
                .map_err(|e| ApiError::Internal(format!("CSV reader: {e}")))?;
            streamed?;
            let too_many_rows = || {
                ApiError::TooLarge(format!(
                    "the upload has more than {} rows",
                    state.config.max_upload_rows
                ))
            };
            if too_many_lines.load(Ordering::Relaxed) {
                return Err(too_many_rows());
            }
            let report = result.map_err(|e| match (e, format) {
                (DataError::TooManyRows { .. }, _) => too_many_rows(),
                (e, Format::Csv) => {
                    ApiError::InvalidData(format!("the CSV was refused, nothing was stored: {e}"))
                }
                (e, Format::Parquet) => ApiError::InvalidData(format!(
                    "the Parquet file was refused, nothing was stored: {e}"
                )),
                (e, Format::ArrowIpc) => ApiError::InvalidData(format!(
                    "the Arrow IPC file was refused, nothing was stored: {e}"
                )),
            })?;
            if report.dataset.n_rows() > state.config.max_upload_rows {
                return Err(too_many_rows());
            }
            parsed = Some((
                checked,
                Parsed {
                    data: report.dataset,
                    skipped: report.skipped,
                    unit_dropped: report.unit_dropped,
                    errors: report.errors.iter().map(ToString::to_string).collect(),
                },
            ));
            continue;
        }
        let slot = match field_name.as_str() {
            "name" => &mut meta.name,
            "epsilon" => &mut meta.epsilon,
            "delta" => &mut meta.delta,
            "skip_bad_rows" => &mut meta.skip_bad_rows,
            "accounting" => &mut meta.accounting,
            "local_dp_epsilon" => &mut meta.local_dp_epsilon,
            "local_dp_label_epsilon" => &mut meta.local_dp_label_epsilon,
            "local_dp_protocol" => &mut meta.local_dp_protocol,
            "schema" => &mut meta.schema,
            "allow_duplicate" => &mut meta.allow_duplicate,
            other => {
                return Err(ApiError::Validation(vec![FieldError::new(
                    other,
                    "unknown field (expected name, epsilon, delta, skip_bad_rows, accounting, local_dp_epsilon, local_dp_label_epsilon, local_dp_protocol, allow_duplicate, schema, data)",
                )]));
            }
        };
        if parsed.is_some() {
            return Err(ApiError::Validation(vec![FieldError::new(
                field_name,
                "must come before the data field",
            )]));
        }
        let mut text = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
            if text.len() + chunk.len() > MAX_TEXT_FIELD {
                return Err(ApiError::TooLarge(format!(
                    "field {field_name} is larger than {MAX_TEXT_FIELD} bytes"
                )));
            }
            text.extend_from_slice(&chunk);
        }
        hasher.update(&text);
        hasher.update([0]);
        *slot = Some(String::from_utf8(text).map_err(|_| {
            ApiError::Validation(vec![FieldError::new(field_name.clone(), "not UTF-8")])
        })?);
    }
    let Some((checked, parsed)) = parsed else {
        // Report the missing metadata too, if any.
        meta.check()?;
        return Err(ApiError::Validation(vec![FieldError::new(
            "data",
            "required: the CSV file, last",
        )]));
    };
    let idem = idem_key
        .map(|k| IdemRequest::new(&caller.id, &k, "POST", "/v1/datasets", &hasher.finalize()));
    let accepted = parsed.data.n_rows();
    let unit_dropped = parsed.unit_dropped;
    let make_body = |info: &DatasetInfo| {
        let mut body = json!({
            "dataset": info,
            "accepted_rows": accepted,
            "rejected_rows": parsed.skipped,
            "rejected": parsed.errors,
        });
        // The owner who uploaded the file may see how many rows the privacy
        // unit's bound dropped (data-dependent, so nowhere else: not stored
        // with the dataset, not in any analyst's view).
        if checked.schema.privacy_unit.is_some() {
            body["unit_dropped_rows"] = json!(unit_dropped);
        }
        body
    };
    let created = datasets::create(
        &state.pool,
        NewDataset {
            owner_id: &caller.id,
            name: &checked.name,
            schema_json: &checked.schema_json,
            data: &parsed.data,
            rejected_rows: parsed.skipped,
            total: checked.total,
            accounting: checked.accounting,
            local_dp: checked.local_dp,
            content_digest: &hex(&content.finalize()),
            allow_duplicate: checked.allow_duplicate,
        },
        idem.as_ref(),
        |info| StoredResponse {
            status: 201,
            location: Some(format!("/v1/datasets/{}", info.id)),
            body: make_body(info).to_string(),
        },
    )
    .await?;
    match created {
        Created::New(info) => Ok((
            StatusCode::CREATED,
            [(header::LOCATION, format!("/v1/datasets/{}", info.id))],
            axum::Json(make_body(&info)),
        )
            .into_response()),
        Created::Replay(r) => Ok(replay(r)),
        Created::Mismatch => Err(ApiError::IdempotencyMismatch),
        Created::Duplicate { id, name } => Err(ApiError::Conflict(format!(
            "this key already uploaded the same schema and data as dataset {id} ({name:?}); a second copy would give the same rows a second, fresh budget. Train on {id}, or send the field allow_duplicate=true if you mean to store it again"
        ))),
    }
}

/// Lowercase hex of a digest.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The dataset if visible to the caller, else 404.
pub(super) async fn visible(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<DatasetInfo, ApiError> {
    datasets::get_visible(&state.pool, id, &caller.id)
        .await?
        .ok_or(ApiError::NotFound("dataset"))
}

/// The dataset if the caller owns it; 404 if invisible, 403 if only granted.
async fn owned(
    state: &AppState,
    caller: &Caller,
    id: &str,
    what: &str,
) -> Result<DatasetInfo, ApiError> {
    let d = visible(state, caller, id).await?;
    if d.owner_id != caller.id {
        return Err(ApiError::Forbidden(format!(
            "{what} is for the dataset's owner"
        )));
    }
    Ok(d)
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    AppQuery(q): AppQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let (after, size) = q.cursor()?;
    Ok(axum::Json(page_json(
        datasets::list_visible(&state.pool, &caller.id, after, size).await?,
    )))
}

async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    Ok(axum::Json(visible(&state, &caller, &id).await?))
}

async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    owned(&state, &caller, &id, "deleting").await?;
    for job in datasets::delete(&state.pool, &id, &caller.id).await? {
        state.jobs.cancel(&job);
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `PATCH /v1/datasets/{id}`: `{"public_test_data": true}` declares the
/// rows public test data (owner only, one-way): evaluations on them are then
/// exact and uncharged, and the rows have no privacy guarantee any more
/// (docs/privacy.md, "Public test data").
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DatasetPatch {
    public_test_data: bool,
}

async fn patch(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    AppJson(body): AppJson<serde_json::Value>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(&[Role::Owner], "declaring public test data")?;
    let body: DatasetPatch = serde_json::from_value(body)
        .map_err(|e| ApiError::Validation(vec![FieldError::new("body", e.to_string())]))?;
    owned(&state, &caller, &id, "declaring public test data").await?;
    if !body.public_test_data {
        return Err(ApiError::Validation(vec![FieldError::new(
            "public_test_data",
            "only true is accepted: the declaration is one-way (exact metrics may already have been released)",
        )]));
    }
    match datasets::mark_public_test_data(&state.pool, &id, &caller.id).await? {
        MarkPublic::Marked(d) => Ok(axum::Json(*d)),
        MarkPublic::NotOwned => Err(ApiError::NotFound("dataset")),
        MarkPublic::Deleted => Err(ApiError::Conflict("the dataset was deleted".into())),
    }
}

/// `GET /v1/datasets/{id}/budget?job_epsilon=` (a pure job) or `?job_rho=`
/// (a zCDP job): how many more such jobs the dataset's accounting admits.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FitsQuery {
    job_epsilon: Option<f64>,
    job_rho: Option<f64>,
}

/// The most jobs `fits` counts (a tiny job size would count for ever).
const MAX_FITS: u64 = 1_000_000;

impl FitsQuery {
    /// The charge of the job size asked about, if any. A pure job of
    /// `job_epsilon` is charged it (quantised as a job's request is); a zCDP
    /// job's ledger charge is its conversion at the dataset's delta, so only
    /// its rho is needed.
    fn charge(&self, total: Amount) -> Result<Option<Charge>, ApiError> {
        let refuse = |field: &str, message: String| {
            ApiError::Validation(vec![FieldError::new(field, message)])
        };
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v <= MAX_EPSILON {
                Ok(v)
            } else {
                Err(refuse(
                    field,
                    format!("must be a number in (0, {MAX_EPSILON}]"),
                ))
            }
        };
        match (self.job_epsilon, self.job_rho) {
            (Some(_), Some(_)) => Err(refuse(
                "job_rho",
                "give job_epsilon (a pure job) or job_rho (a zCDP job), not both".into(),
            )),
            (Some(e), None) => {
                let epsilon = EpsilonUnits::nearest(positive("job_epsilon", e)?)
                    .map_err(|e| refuse("job_epsilon", e.to_string()))?;
                Charge::pure(epsilon)
                    .map(Some)
                    .map_err(|e| refuse("job_epsilon", e.to_string()))
            }
            (None, Some(r)) => {
                let rho = RhoUnits::nearest(positive("job_rho", r)?)
                    .map_err(|e| refuse("job_rho", e.to_string()))?;
                if total.delta <= DeltaUnits::ZERO {
                    return Err(refuse(
                        "job_rho",
                        "a zCDP job needs a dataset whose total delta is > 0".into(),
                    ));
                }
                // Converted at the largest double not above the total's
                // delta (a smaller delta, a larger epsilon), rounded up.
                let delta = total.delta.to_f64_down();
                let epsilon = crate::privacy::zcdp::epsilon_of(rho.to_f64(), delta)
                    .and_then(EpsilonUnits::up)
                    .map_err(|e| refuse("job_rho", e.to_string()))?;
                Ok(Some(Charge {
                    kind: LossKind::Zcdp,
                    epsilon,
                    delta: total.delta,
                    rho: Some(rho),
                }))
            }
            (None, None) => Ok(None),
        }
    }
}

async fn budget(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    AppQuery(q): AppQuery<FitsQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let info = visible(&state, &caller, &id).await?;
    let budget = ledger::budget(&state.pool, &id).await?;
    let mut body = serde_json::to_value(budget).map_err(|e| ApiError::Internal(e.to_string()))?;
    // Who the amounts protect, when it is not one row (the dataset's fixed
    // neighbouring relation; absent for rows, so those bodies are unchanged).
    if let Some(column) = &info.unit_column {
        let k = u32::try_from(info.unit_max_rows).unwrap_or(u32::MAX);
        let unit = crate::privacy::Neighbouring::units(k)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        body["privacy_unit"] = json!({
            "column": column,
            "max_rows": k,
            "statement": format!("the budget is {}", unit.describe(Some(column))),
        });
    }
    if let Some(charge) = q.charge(budget.total)? {
        body["fits"] = json!({
            "job": charge,
            "jobs": budget.how_many_more(&charge, MAX_FITS),
            "at_most": MAX_FITS,
        });
    }
    Ok(axum::Json(body))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewTotal {
    epsilon: f64,
    #[serde(default)]
    delta: f64,
}

async fn set_budget(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    AppJson(body): AppJson<NewTotal>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(&[Role::Owner], "changing a budget")?;
    owned(&state, &caller, &id, "changing the budget").await?;
    if body.epsilon > MAX_EPSILON {
        return Err(ApiError::Validation(vec![FieldError::new(
            "epsilon",
            format!("must be at most {MAX_EPSILON}"),
        )]));
    }
    let total = budget_units::total(body.epsilon, body.delta).map_err(|e| {
        ApiError::Validation(vec![FieldError::new(budget_field(&e), e.to_string())])
    })?;
    match ledger::set_total(&state.pool, &id, total, &caller.id).await? {
        SetTotal::Done(b) => Ok(axum::Json(b)),
        SetTotal::BelowCharged(b) => Err(ApiError::Conflict(format!(
            "the new total is below what is already charged (epsilon {}, delta {})",
            b.charged().epsilon,
            b.charged().delta
        ))),
        SetTotal::FilterFixed => Err(ApiError::Conflict(
            "this dataset composes its charges with the zCDP filter, whose parameters are fixed by the total in force at the first charge: the total cannot change once anything was charged (docs/privacy.md, \"zCDP filter\")".into(),
        )),
    }
}

async fn ledger_entries(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    AppQuery(q): AppQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    visible(&state, &caller, &id).await?;
    let (after, size) = q.cursor()?;
    Ok(axum::Json(page_json(
        ledger::entries(&state.pool, &id, after, size).await?,
    )))
}

async fn grants(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    owned(&state, &caller, &id, "listing grants").await?;
    Ok(axum::Json(
        json!({ "analysts": datasets::grants(&state.pool, &id).await? }),
    ))
}

async fn grant(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    owned(&state, &caller, &id, "granting access").await?;
    if datasets::grant(&state.pool, &id, &key_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("analyst key"))
    }
}

async fn revoke_grant(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, key_id)): Path<(String, String)>,
) -> Result<impl IntoResponse, ApiError> {
    owned(&state, &caller, &id, "revoking access").await?;
    if datasets::revoke_grant(&state.pool, &id, &key_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("grant"))
    }
}
