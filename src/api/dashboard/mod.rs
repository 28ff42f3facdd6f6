//! The web dashboard (issue 12, item 5): server-rendered pages under
//! `/dashboard` for a person with an API key (docs/service.md,
//! "Dashboard").
//!
//! Design: every page is rendered from the `/v1` API's own answers to the
//! session's key. [`Api`] sends an in-process request through the same
//! route table as the public listener (no socket), with the key as its
//! bearer token, so the dashboard cannot show more than the API releases
//! to that key: the same visibility rules (a stranger's dataset is a 404),
//! the same coarse times and progress for non-owners, the same rate limit.
//! It adds no query and reads no row. HTML pages are not part of the JSON
//! API, so these routes are outside `Routes` and its problem+json layer;
//! [`ROUTES`] lists them for `openapi.yaml` (tag `dashboard`).
//!
//! - [`session`]: log-in sessions (cookie, server-side map);
//! - [`pages`]: the maud templates;
//! - [`inspection`]: a model's inspection (vote tables, shapes, trees);
//! - [`svg`]: the charts.

mod inspection;
mod pages;
mod session;
mod svg;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Form, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::Markup;
use serde_json::Value;
use tower::ServiceExt;
use tower_http::timeout::TimeoutLayer;

use super::AppState;
use session::{Session, Sessions};

/// The shipped results of `privboost experiment paper` (docs/results.md),
/// embedded so that the curves need no file at run time.
const RESULTS_JSON: &str = include_str!("../../../docs/results/results.json");

/// Largest API answer the dashboard reads (a model document with its
/// inspection is well under this).
const MAX_API_BODY: usize = 64 << 20;

/// Largest log-in form: a key is under 300 bytes.
const MAX_FORM_BYTES: usize = 4096;

/// How many items of each list the overview shows (the API's largest page).
const LIST_SIZE: u32 = 1000;

/// What the dashboard's handlers share.
#[derive(Clone)]
struct Dash {
    api: Api,
    sessions: Arc<Sessions>,
}

/// The `/v1` routes, called in-process.
#[derive(Clone)]
struct Api {
    router: Router,
}

/// What an API call can end in, besides a document.
enum Miss {
    /// 404: no such resource for this key.
    NotFound,
    /// 401: the key is no longer valid (revoked).
    Unauthorized,
    /// Anything else: the status and the problem's detail.
    Other(StatusCode, String),
}

impl Api {
    /// `GET path` as the key `secret`; the raw response (for streams).
    async fn raw(&self, secret: &str, path: &str) -> Response {
        let mut req = Request::get(path)
            .body(Body::empty())
            .unwrap_or_else(|_| Request::new(Body::empty()));
        if let Ok(v) = HeaderValue::from_str(&format!("Bearer {secret}")) {
            req.headers_mut().insert(header::AUTHORIZATION, v);
        }
        match self.router.clone().oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        }
    }

    /// `GET path` as the key `secret`, as JSON.
    async fn get(&self, secret: &str, path: &str) -> Result<Value, Miss> {
        let response = self.raw(secret, path).await;
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_API_BODY)
            .await
            .map_err(|e| Miss::Other(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let doc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        match status {
            s if s.is_success() => Ok(doc),
            StatusCode::NOT_FOUND => Err(Miss::NotFound),
            StatusCode::UNAUTHORIZED => Err(Miss::Unauthorized),
            s => Err(Miss::Other(
                s,
                doc["detail"]
                    .as_str()
                    .unwrap_or("the API refused")
                    .to_owned(),
            )),
        }
    }

    /// The items of a list route's first page.
    async fn items(&self, secret: &str, path: &str) -> Result<Vec<Value>, Miss> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let doc = self
            .get(secret, &format!("{path}{sep}page_size={LIST_SIZE}"))
            .await?;
        Ok(doc["items"].as_array().cloned().unwrap_or_default())
    }
}

/// The dashboard's routes, with their own state; merged by
/// [`super::router`] inside the request-id, tracing and metrics layers but
/// outside the problem+json normaliser (its error pages are HTML).
/// The dashboard's routes (method, path), for `api::route_list` and so for
/// the test that `openapi.yaml` documents every route; keep it in step with
/// [`router`] just below (`tests/openapi.rs` fails when they differ from the
/// document).
pub(super) const ROUTES: &[(&str, &str)] = &[
    ("GET", "/dashboard"),
    ("GET", "/dashboard/"),
    ("GET", "/dashboard/login"),
    ("POST", "/dashboard/login"),
    ("POST", "/dashboard/logout"),
    ("GET", "/dashboard/datasets/{id}"),
    ("GET", "/dashboard/jobs/{id}"),
    ("GET", "/dashboard/jobs/{id}/events"),
    ("GET", "/dashboard/models/{id}"),
    ("GET", "/dashboard/deployments/{name}"),
    ("GET", "/dashboard/experiments"),
    ("GET", "/dashboard/static/style.css"),
    ("GET", "/dashboard/static/live.js"),
    ("GET", "/dashboard/static/favicon.svg"),
    ("GET", "/favicon.ico"),
];

pub(super) fn router(state: AppState) -> Router<AppState> {
    let timeout = state.config.request_timeout;
    let api = Api {
        router: super::routes(&state.config).router.with_state(state),
    };
    let dash = Dash {
        api,
        sessions: Arc::new(Sessions::default()),
    };
    Router::new()
        .route("/dashboard", get(overview))
        .route("/dashboard/", get(|| async { Redirect::to("/dashboard") }))
        .route("/dashboard/login", get(login_form).post(login))
        .route("/dashboard/logout", post(logout))
        .route("/dashboard/datasets/{id}", get(dataset))
        .route("/dashboard/jobs/{id}", get(job))
        .route("/dashboard/jobs/{id}/events", get(job_events))
        .route("/dashboard/models/{id}", get(model))
        .route("/dashboard/deployments/{name}", get(deployment))
        .route("/dashboard/experiments", get(experiments))
        .route("/dashboard/static/style.css", get(style))
        .route("/dashboard/static/live.js", get(live_js))
        .route("/dashboard/static/favicon.svg", get(favicon))
        .route("/favicon.ico", get(favicon))
        // A browser pointed at the server lands on the dashboard (which
        // sends it on to the log-in page without a session), not on a 404
        // problem document (issue 29).
        .route("/", get(|| async { Redirect::to("/dashboard") }))
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        .with_state(dash)
}

/// Headers of every page: no caching (pages show a key's private view), no
/// framing, a referrer only within this site (`no-referrer` would make the
/// browser send `Origin: null` on our own forms, which [`same_origin`]
/// refuses; ids in our URLs are not secrets), and a CSP that allows only this server's own
/// stylesheet and script (no inline script or style, nothing from
/// elsewhere), so that even an escaping bug could not run a script.
fn page(status: StatusCode, markup: Markup) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            ),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "same-origin"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        markup.into_string(),
    )
        .into_response()
}

/// To the log-in page (no session, or it ended).
fn to_login() -> Response {
    Redirect::to("/dashboard/login").into_response()
}

/// A page for an API miss: 404 page, back to log-in (a revoked key's
/// session is closed), or an error page with the API's status.
fn miss(dash: &Dash, headers: &HeaderMap, who: &Session, m: Miss, what: &str) -> Response {
    match m {
        Miss::NotFound => page(StatusCode::NOT_FOUND, pages::not_found(who, what)),
        Miss::Unauthorized => {
            dash.sessions.close(headers);
            to_login()
        }
        Miss::Other(status, detail) => page(status, pages::failure(Some(who), &detail)),
    }
}

/// Whether a state-changing POST comes from this site: with a
/// `SameSite=Strict` cookie a cross-site form already arrives without the
/// session; this also refuses a cross-site log-in (login CSRF). Browsers
/// send `Origin` on every POST; when it is there it must name the host the
/// browser asked: `X-Forwarded-Host` when a reverse proxy sets it (the proxy
/// may rewrite `Host`), else `Host`. A cross-site form cannot set either
/// header, so trusting the forwarded one gives an attacker nothing.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get("x-forwarded-host")
        .or_else(|| headers.get(header::HOST))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let origin_host = origin.split_once("://").map_or("", |(_, rest)| rest);
    !host.is_empty() && origin_host == host
}

fn https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"https"))
}

async fn login_form(State(dash): State<Dash>, headers: HeaderMap) -> Response {
    if dash.sessions.get(&headers).is_some() {
        return Redirect::to("/dashboard").into_response();
    }
    page(StatusCode::OK, pages::login(None))
}

#[derive(serde::Deserialize)]
struct LoginForm {
    key: String,
}

/// `POST /dashboard/login`: check the key with `/v1/me`; on success open a
/// session and set its cookie (303 to the overview); else the form again
/// with a message (401, or 429 over the rate limit).
async fn login(
    State(dash): State<Dash>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, axum::extract::rejection::FormRejection>,
) -> Response {
    if !same_origin(&headers) {
        return page(
            StatusCode::FORBIDDEN,
            pages::login(Some("This log-in came from another site and was refused.")),
        );
    }
    let Ok(Form(form)) = form else {
        return page(
            StatusCode::BAD_REQUEST,
            pages::login(Some("Send the form with an API key.")),
        );
    };
    let secret = form.key.trim().to_owned();
    if secret.is_empty() {
        return page(
            StatusCode::UNPROCESSABLE_ENTITY,
            pages::login(Some("Enter an API key.")),
        );
    }
    let me = match dash.api.get(&secret, "/v1/me").await {
        Ok(me) => me,
        Err(Miss::Unauthorized | Miss::NotFound) => {
            return page(
                StatusCode::UNAUTHORIZED,
                pages::login(Some(
                    "That API key is not valid (unknown or revoked). Check it and try again.",
                )),
            );
        }
        Err(Miss::Other(status, detail)) => {
            return page(status, pages::login(Some(&detail)));
        }
    };
    let opened = dash.sessions.open(
        secret,
        pages::text(&me["id"]),
        pages::text(&me["role"]),
        pages::text(&me["name"]),
    );
    match opened {
        Ok(token) => (
            StatusCode::SEE_OTHER,
            [
                (header::LOCATION, "/dashboard".to_owned()),
                (
                    header::SET_COOKIE,
                    session::set_cookie(&token, https(&headers)),
                ),
                (header::CACHE_CONTROL, "no-store".to_owned()),
            ],
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "dashboard session");
            page(
                StatusCode::INTERNAL_SERVER_ERROR,
                pages::failure(None, "internal error"),
            )
        }
    }
}

/// `POST /dashboard/logout`: end the session, clear the cookie.
async fn logout(State(dash): State<Dash>, headers: HeaderMap) -> Response {
    if !same_origin(&headers) {
        return StatusCode::FORBIDDEN.into_response();
    }
    dash.sessions.close(&headers);
    (
        StatusCode::SEE_OTHER,
        [
            (header::LOCATION, "/dashboard/login".to_owned()),
            (header::SET_COOKIE, session::clear_cookie()),
        ],
    )
        .into_response()
}

async fn overview(State(dash): State<Dash>, headers: HeaderMap) -> Response {
    let Some(who) = dash.sessions.get(&headers) else {
        return to_login();
    };
    let k = &who.secret;
    let lists = async {
        Ok::<_, Miss>((
            dash.api.items(k, "/v1/datasets").await?,
            dash.api.items(k, "/v1/jobs").await?,
            dash.api.items(k, "/v1/models").await?,
            dash.api.items(k, "/v1/deployments").await?,
        ))
    };
    match lists.await {
        Ok((datasets, jobs, models, deployments)) => page(
            StatusCode::OK,
            pages::overview(&who, &datasets, &jobs, &models, &deployments),
        ),
        Err(m) => miss(&dash, &headers, &who, m, "list"),
    }
}

async fn dataset(State(dash): State<Dash>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let Some(who) = dash.sessions.get(&headers) else {
        return to_login();
    };
    let k = &who.secret;
    let id = encode(&id);
    let parts = async {
        let d = dash.api.get(k, &format!("/v1/datasets/{id}")).await?;
        let budget = dash
            .api
            .get(k, &format!("/v1/datasets/{id}/budget"))
            .await?;
        let ledger = dash
            .api
            .items(k, &format!("/v1/datasets/{id}/ledger"))
            .await?;
        let on_this = |v: &Value| v["dataset_id"] == d["id"];
        let jobs: Vec<Value> = dash
            .api
            .items(k, "/v1/jobs")
            .await?
            .into_iter()
            .filter(on_this)
            .collect();
        let models: Vec<Value> = dash
            .api
            .items(k, "/v1/models")
            .await?
            .into_iter()
            .filter(on_this)
            .collect();
        Ok::<_, Miss>(pages::dataset(&who, &d, &budget, &ledger, &jobs, &models))
    };
    match parts.await {
        Ok(markup) => page(StatusCode::OK, markup),
        Err(m) => miss(&dash, &headers, &who, m, "dataset"),
    }
}

async fn job(State(dash): State<Dash>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let Some(who) = dash.sessions.get(&headers) else {
        return to_login();
    };
    let id = encode(&id);
    match dash.api.get(&who.secret, &format!("/v1/jobs/{id}")).await {
        Ok(j) => page(
            StatusCode::OK,
            pages::job(&who, &j, &format!("/dashboard/jobs/{id}/events")),
        ),
        Err(m) => miss(&dash, &headers, &who, m, "job"),
    }
}

/// The job's server-sent events: the API's own stream for this key, passed
/// through (same documents, same coarse ticks for non-owners).
async fn job_events(
    State(dash): State<Dash>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let Some(who) = dash.sessions.get(&headers) else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let response = dash
        .api
        .raw(&who.secret, &format!("/v1/jobs/{}/events", encode(&id)))
        .await;
    if response.status() == StatusCode::UNAUTHORIZED {
        dash.sessions.close(&headers);
    }
    response
}

async fn model(State(dash): State<Dash>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    let Some(who) = dash.sessions.get(&headers) else {
        return to_login();
    };
    let k = &who.secret;
    let id = encode(&id);
    let parts = async {
        let m = dash.api.get(k, &format!("/v1/models/{id}")).await?;
        let deployments: Vec<Value> = dash
            .api
            .items(k, "/v1/deployments")
            .await?
            .into_iter()
            .filter(|d| d["model_id"] == m["id"])
            .collect();
        Ok::<_, Miss>(pages::model(&who, &m, &deployments))
    };
    match parts.await {
        Ok(markup) => page(StatusCode::OK, markup),
        Err(m) => miss(&dash, &headers, &who, m, "model"),
    }
}

async fn deployment(
    State(dash): State<Dash>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Response {
    let Some(who) = dash.sessions.get(&headers) else {
        return to_login();
    };
    let k = &who.secret;
    let name = encode(&name);
    let parts = async {
        let d = dash.api.get(k, &format!("/v1/deployments/{name}")).await?;
        let versions = dash
            .api
            .items(k, &format!("/v1/deployments/{name}/versions"))
            .await?;
        Ok::<_, Miss>(pages::deployment(&who, &d, &versions))
    };
    match parts.await {
        Ok(markup) => page(StatusCode::OK, markup),
        Err(m) => miss(&dash, &headers, &who, m, "deployment"),
    }
}

async fn experiments(State(dash): State<Dash>, headers: HeaderMap) -> Response {
    let Some(who) = dash.sessions.get(&headers) else {
        return to_login();
    };
    let results: Value = serde_json::from_str(RESULTS_JSON).unwrap_or(Value::Null);
    page(StatusCode::OK, pages::experiments(&who, &results))
}

async fn style() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        pages::STYLE,
    )
}

/// The tab icon: a small SVG (browsers that ask for `/favicon.ico` take an
/// SVG served with its own content type).
async fn favicon() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "max-age=86400"),
        ],
        include_str!("favicon.svg"),
    )
}

async fn live_js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        pages::LIVE_JS,
    )
}

/// A path segment from the browser, percent-encoded again for the
/// in-process API request (axum decoded it; a `/` or `?` in it must not
/// change which API route is asked).
fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~:".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoded_segment_cannot_reach_another_api_route() {
        assert_eq!(encode("ds_1"), "ds_1");
        assert_eq!(encode("../keys?x=1"), "..%2Fkeys%3Fx%3D1");
        assert_eq!(encode("key_1:name"), "key_1:name");
    }

    #[test]
    fn a_cross_site_post_is_refused() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8080"));
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8080"),
        );
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://evil.example"),
        );
        assert!(!same_origin(&h));
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_origin(&h));
        // Behind a proxy that rewrites Host: the forwarded host counts.
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://privboost.example"),
        );
        assert!(!same_origin(&h));
        h.insert(
            "x-forwarded-host",
            HeaderValue::from_static("privboost.example"),
        );
        assert!(same_origin(&h));
    }
}
