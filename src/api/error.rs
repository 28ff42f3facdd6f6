//! The one error type of the API and its mapping to `application/problem+json`
//! (RFC 9457).
//!
//! Every error response of the service is a problem document: handler
//! errors through [`ApiError`], extractor rejections through [`AppJson`] and
//! [`AppQuery`], and responses made by layers (body limit, timeout, unknown
//! route, wrong method) through [`normalize_errors`]. A 5xx body is generic;
//! its cause is logged. Details say where, never what: no row values.

use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{HeaderValue, StatusCode, header, request::Parts};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tracing::{error, warn};

use crate::store::StoreError;
use crate::store::ledger::{Amount, FilterBudget};

/// Media type of problem documents.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// One invalid field of a request (422).
#[derive(Debug, Clone, Serialize)]
pub struct FieldError {
    /// The field, e.g. `epsilon` or `rows[3].odor`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// A field error.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Every error an API handler can return.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No or unknown API key (401).
    #[error("a valid API key is required (Authorization: Bearer <key>)")]
    Unauthorized,
    /// The key's role may not do this (403).
    #[error("{0}")]
    Forbidden(String),
    /// Not found, or not visible to this key (404; never says which).
    #[error("{}", not_found_detail(.0))]
    NotFound(&'static str),
    /// Malformed request (400).
    #[error("{0}")]
    BadRequest(String),
    /// Invalid fields (422).
    #[error("the request has invalid fields")]
    Validation(Vec<FieldError>),
    /// Invalid uploaded data: owner-only (the uploader sees row/column positions) (422).
    #[error("{0}")]
    InvalidData(String),
    /// The request conflicts with the resource's state (409).
    #[error("{0}")]
    Conflict(String),
    /// The charge does not fit the remaining budget (409).
    #[error("the requested charge exceeds the dataset's remaining privacy budget")]
    BudgetExceeded {
        /// The charge asked for.
        requested: Amount,
        /// What is left under basic composition.
        remaining: Amount,
        /// A zCDP-filter dataset's budget in rho terms (its admission rule).
        filter: Option<FilterBudget>,
    },
    /// The Idempotency-Key was used for a different request (422).
    #[error("this Idempotency-Key was already used with a different request")]
    IdempotencyMismatch,
    /// A size limit was exceeded (413).
    #[error("{0}")]
    TooLarge(String),
    /// Wrong content type (415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// Too many active jobs for this key (429).
    #[error("{0}")]
    TooManyRequests(String),
    /// This key sent more requests than its rate limit allows (429, with
    /// `Retry-After` in whole seconds).
    #[error("this API key sent too many requests; retry after {retry_after} s")]
    RateLimited {
        /// Seconds to wait.
        retry_after: u64,
    },
    /// Not ready (503).
    #[error("the service is not ready")]
    Unavailable,
    /// Anything else (500); the cause is logged, never returned.
    #[error("internal error")]
    Internal(String),
}

/// The detail of a 404. For a dataset it names the other possible cause,
/// a missing grant, and how to get one: the same words whether the dataset
/// exists or not, so nothing about its existence leaks (issue 29).
fn not_found_detail(what: &str) -> String {
    match what {
        "dataset" => "dataset not found: no such dataset, or this key has no grant on it (its owner grants one with PUT /v1/datasets/{id}/grants/{key_id})".to_owned(),
        other => format!("{other} not found"),
    }
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Validation(_) | ApiError::InvalidData(_) | ApiError::IdempotencyMismatch => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            ApiError::Conflict(_) | ApiError::BudgetExceeded { .. } => StatusCode::CONFLICT,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooManyRequests(_) | ApiError::RateLimited { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn slug(&self) -> &'static str {
        match self {
            ApiError::Unauthorized => "unauthorized",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) => "not-found",
            ApiError::BadRequest(_) => "bad-request",
            ApiError::Validation(_) => "validation",
            ApiError::InvalidData(_) => "invalid-data",
            ApiError::Conflict(_) => "conflict",
            ApiError::BudgetExceeded { .. } => "budget-exceeded",
            ApiError::IdempotencyMismatch => "idempotency-key-reused",
            ApiError::TooLarge(_) => "too-large",
            ApiError::UnsupportedMediaType(_) => "unsupported-media-type",
            ApiError::TooManyRequests(_) => "too-many-requests",
            ApiError::RateLimited { .. } => "rate-limited",
            ApiError::Unavailable => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }
}

/// A problem document body.
pub(crate) fn problem(status: StatusCode, slug: &str, detail: &str, extensions: Value) -> Response {
    let mut body = json!({
        "type": format!("/problems/{slug}"),
        "title": status.canonical_reason().unwrap_or("Error"),
        "status": status.as_u16(),
        "detail": detail,
    });
    if let (Value::Object(b), Value::Object(ext)) = (&mut body, extensions) {
        b.extend(ext);
    }
    let mut response = (status, body.to_string()).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let detail = self.to_string();
        let extensions = match &self {
            ApiError::Validation(errors) => json!({ "errors": errors }),
            ApiError::BudgetExceeded {
                requested,
                remaining,
                filter,
            } => match filter {
                None => json!({ "requested": requested, "remaining": remaining }),
                Some(f) => json!({
                    "requested": requested,
                    "remaining": remaining,
                    "accounting": "zcdp-filter",
                    "filter": f,
                }),
            },
            ApiError::RateLimited { retry_after } => json!({ "retry_after": retry_after }),
            ApiError::Internal(cause) => {
                error!(cause = %cause, "internal error");
                json!({})
            }
            _ => json!({}),
        };
        let mut response = problem(status, self.slug(), &detail, extensions);
        match self {
            ApiError::Unauthorized => {
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            ApiError::RateLimited { retry_after } => {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
            }
            ApiError::Unavailable => {
                response.headers_mut().insert(
                    header::RETRY_AFTER,
                    HeaderValue::from(UNAVAILABLE_RETRY_AFTER),
                );
            }
            _ => {}
        }
        response
    }
}

impl From<StoreError> for ApiError {
    /// A database that is down, stalled or overloaded is 503 with
    /// `Retry-After` (the client may retry; nothing is wrong with its
    /// request); anything else is a 500 whose cause is only logged.
    fn from(e: StoreError) -> ApiError {
        if e.is_transient() {
            warn!(error = %e, "the database is unavailable");
            return ApiError::Unavailable;
        }
        ApiError::Internal(e.to_string())
    }
}

/// `Retry-After` (seconds) of a 503: long enough for a database restart or a
/// failover to be over for most clients' next try, short enough not to
/// idle them.
pub(crate) const UNAVAILABLE_RETRY_AFTER: u64 = 5;

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        match r {
            JsonRejection::JsonDataError(e) => {
                ApiError::Validation(vec![FieldError::new("body", e.body_text())])
            }
            JsonRejection::JsonSyntaxError(e) => ApiError::BadRequest(e.body_text()),
            JsonRejection::MissingJsonContentType(_) => ApiError::UnsupportedMediaType(
                "expected a request with Content-Type: application/json".into(),
            ),
            JsonRejection::BytesRejection(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                ApiError::TooLarge("the request body is larger than the limit".into())
            }
            other => ApiError::BadRequest(other.body_text()),
        }
    }
}

/// `Json` whose rejections are problem documents.
pub struct AppJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for AppJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(AppJson(v)),
            Err(r) => Err(r.into()),
        }
    }
}

/// A JSON body kept as its bytes, so that a handler can deserialize it
/// borrowing its strings ([`JsonBody::parse`]: a prediction batch then
/// builds no owned string per value). Rejections and errors as [`AppJson`]'s.
pub struct JsonBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(ApiError::UnsupportedMediaType(
                "expected a request with Content-Type: application/json".into(),
            ));
        }
        match Bytes::from_request(req, state).await {
            Ok(bytes) => Ok(JsonBody(bytes)),
            Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => Err(ApiError::TooLarge(
                "the request body is larger than the limit".into(),
            )),
            Err(e) => Err(ApiError::BadRequest(e.body_text())),
        }
    }
}

impl JsonBody {
    /// The body as a `T` borrowing from it: a value of the wrong shape is a
    /// 422 on `body`, invalid JSON a 400 (as [`AppJson`]).
    pub fn parse<'a, T: Deserialize<'a>>(&'a self) -> Result<T, ApiError> {
        from_json_bytes(&self.0).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => ApiError::Validation(vec![FieldError::new(
                "body",
                format!("Failed to deserialize the JSON body into the target type: {e}"),
            )]),
            _ => ApiError::BadRequest(format!("Failed to parse the request body as JSON: {e}")),
        })
    }
}

/// `serde_json::from_slice` with the UTF-8 check done once for the whole
/// body: `from_slice` checks every string it reads on its own, a fixed
/// cost per string that a single-row prediction (tens of short strings)
/// pays over and over; `from_str` on text already checked skips it. The
/// same value and the same errors: a body that is not UTF-8 goes through
/// `from_slice`, whose error names the place.
pub(crate) fn from_json_bytes<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// `application/json` or any `application/*+json`, parameters allowed (what
/// axum's `Json` accepts).
fn json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.split_once('/') {
        Some(("application", subtype)) => subtype == "json" || subtype.ends_with("+json"),
        _ => false,
    }
}

/// `Query` whose rejections are problem documents (422).
pub struct AppQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for AppQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(AppQuery(v)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => Err(ApiError::Validation(
                vec![FieldError::new("query", e.body_text())],
            )),
            Err(other) => Err(ApiError::BadRequest(other.body_text())),
        }
    }
}

/// Middleware: turn any error response that is not yet a problem document
/// (made by a layer, a fallback or an extractor we do not wrap) into one,
/// with a generic detail for its status. The original body is dropped, so
/// nothing a layer wrote can leak.
///
/// Under `/v2` (the Open Inference Protocol) every error is then rewritten
/// to the protocol's shape, `{"error": "<message>"}`, by `oip_error`.
pub async fn normalize_errors(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let oip = path == "/v2" || path.starts_with("/v2/");
    let response = problem_errors(next.run(req).await);
    if oip && (response.status().is_client_error() || response.status().is_server_error()) {
        return oip_error(response).await;
    }
    response
}

fn problem_errors(response: Response) -> Response {
    let status = response.status();
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    if !(status.is_client_error() || status.is_server_error()) || is_problem {
        return response;
    }
    let (slug, detail) = match status {
        StatusCode::NOT_FOUND => ("not-found", "no such route"),
        StatusCode::METHOD_NOT_ALLOWED => (
            "method-not-allowed",
            "this route does not accept that method",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => ("too-large", "the request body is larger than the limit"),
        StatusCode::REQUEST_TIMEOUT => (
            "timeout",
            "the request took longer than the server's time limit",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            ("unsupported-media-type", "unsupported Content-Type")
        }
        s if s.is_server_error() => ("internal", "internal error"),
        _ => ("bad-request", "the request could not be processed"),
    };
    let mut out = problem(status, slug, detail, json!({}));
    // Keep headers such as Allow on 405.
    for (name, value) in response.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            out.headers_mut().insert(name.clone(), value.clone());
        }
    }
    out
}

/// Largest problem document read back when rewriting it for `/v2`.
const MAX_PROBLEM_BYTES: usize = 1 << 20;

/// Rewrite a problem document as an Open Inference Protocol error:
/// `{"error": "<detail>"}` (with the field errors of a 422 appended as
/// `field: message`), status and headers kept.
async fn oip_error(response: Response) -> Response {
    let (mut parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_PROBLEM_BYTES)
        .await
        .unwrap_or_default();
    let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let mut message = doc["detail"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| {
            parts
                .status
                .canonical_reason()
                .unwrap_or("error")
                .to_owned()
        });
    if let Some(errors) = doc["errors"].as_array() {
        let fields: Vec<String> = errors
            .iter()
            .map(|e| {
                format!(
                    "{}: {}",
                    e["field"].as_str().unwrap_or(""),
                    e["message"].as_str().unwrap_or("")
                )
            })
            .collect();
        if !fields.is_empty() {
            message = format!("{message}: {}", fields.join("; "));
        }
    }
    let body = json!({ "error": message }).to_string();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, axum::body::Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The once-checked path gives what `from_slice` gives: the same value
    /// (escapes and non-ASCII text included), the same error for bad JSON,
    /// and for bytes that are not UTF-8 `from_slice`'s own error.
    #[test]
    fn json_bytes_parse_as_from_slice_does() {
        type Doc<'a> = std::collections::BTreeMap<std::borrow::Cow<'a, str>, serde_json::Value>;
        let good = "{\"a\": \"x\\ny\", \"é\": [1, 2.5, null], \"b\": \"\\u00e9\"}".as_bytes();
        let ours: Doc = from_json_bytes(good).unwrap();
        let theirs: Doc = serde_json::from_slice(good).unwrap();
        assert_eq!(ours, theirs);
        for bad in [&b"{\"a\": [1,}"[..], b"{\"a\": \"\xff\"}", b"[1] x"] {
            let ours = from_json_bytes::<serde_json::Value>(bad)
                .unwrap_err()
                .to_string();
            let theirs = serde_json::from_slice::<serde_json::Value>(bad)
                .unwrap_err()
                .to_string();
            assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn json_content_types_are_those_axum_accepts() {
        let accepts = |value: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_str(value).unwrap());
            json_content_type(&headers)
        };
        for yes in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON",
            "application/problem+json",
        ] {
            assert!(accepts(yes), "{yes}");
        }
        for no in [
            "text/json",
            "application/jsonx",
            "text/plain",
            "",
            "application",
        ] {
            assert!(!accepts(no), "{no}");
        }
        assert!(!json_content_type(&axum::http::HeaderMap::new()));
    }

    #[test]
    fn json_bodies_parse_borrowed_with_appjson_statuses() {
        #[derive(Debug, Deserialize)]
        struct Body<'a> {
            name: &'a str,
        }
        let ok = JsonBody(Bytes::from_static(br#"{"name": "x"}"#));
        assert_eq!(ok.parse::<Body<'_>>().unwrap().name, "x");
        let wrong = JsonBody(Bytes::from_static(br#"{"name": 1}"#));
        assert!(matches!(
            wrong.parse::<Body<'_>>(),
            Err(ApiError::Validation(_))
        ));
        let broken = JsonBody(Bytes::from_static(br#"{"name": "#));
        assert!(matches!(
            broken.parse::<Body<'_>>(),
            Err(ApiError::BadRequest(_))
        ));
    }

    /// Issue 26, item 8: a database that is down answered 500
    /// `/problems/internal` without `Retry-After`, like a bug.
    #[test]
    fn an_unavailable_database_is_503_with_retry_after_and_a_bug_is_500() {
        let down = ApiError::from(StoreError::Sqlx(sqlx::Error::PoolTimedOut)).into_response();
        assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            down.headers()[header::RETRY_AFTER],
            UNAVAILABLE_RETRY_AFTER.to_string()
        );
        assert_eq!(down.headers()[header::CONTENT_TYPE], PROBLEM_JSON);
        let bug = ApiError::from(StoreError::Corrupt("x".into())).into_response();
        assert_eq!(bug.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!bug.headers().contains_key(header::RETRY_AFTER));
    }
}
