//! API: the HTTP layer of the service (SPEC §6).
//!
//! The last step of the data path: routes and thin handlers that extract the
//! caller, the path and the body, validate, call [`crate::store`] and
//! [`crate::jobs`], and map the result to a response. Only this module
//! knows HTTP; it knows nothing of the algorithms' insides.
//!
//! - [`error`]: [`ApiError`] and problem+json everywhere;
//! - [`auth`]: the [`Caller`](auth::Caller) extractor;
//! - `keys`, `datasets`, `jobs`, `models`, `ops`: one file per area, each with
//!   its routes;
//! - `metrics`: the Prometheus counters.
//!
//! Start-up order ([`Server::open`]): pool (SQLite: WAL, busy timeout; or
//! PostgreSQL with `Config::database_url`) and migrations, the admin key, recovery of interrupted jobs, workers. Then
//! [`serve`] binds nothing itself: the caller passes the listener and the
//! shutdown future, so tests run on port 0.

pub mod auth;
pub mod error;

mod cache;
mod dashboard;
mod datasets;
mod evaluations;
mod invocations;
mod jobs;
mod keys;
mod listen;
mod metrics;
mod models;
mod oip;
mod oip_inputs;
mod ops;
mod rate_limit;

use std::future::Future;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::http::{Method, StatusCode};
use axum::routing::{MethodFilter, MethodRouter, on};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceBuilder;
use tower_http::LatencyUnit;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::info;

use crate::jobs::{JobQueue, Workers};
use crate::store::{self, StoreError, keys::Role};

pub use cache::CACHE_TTL;
pub use error::ApiError;
pub use rate_limit::RateLimit;

/// Checked service settings (built by `privboost serve` from flags and env).
#[derive(Debug, Clone)]
pub struct Config {
    /// The SQLite file (the embedded default).
    pub db_path: PathBuf,
    /// A PostgreSQL URL: when set, the store is that database (shared by
    /// every replica started with the same URL) and `db_path` is unused.
    pub database_url: Option<String>,
    /// Training workers (concurrent trainings).
    pub workers: usize,
    /// Threads each training may use (a pool per worker: at most
    /// `workers x threads_per_job` compute at once).
    pub threads_per_job: usize,
    /// Use this admin key instead of generating one on first start.
    pub admin_key: Option<String>,
    /// Largest JSON request body, in bytes.
    pub max_body_bytes: usize,
    /// Largest dataset upload (multipart body), in bytes.
    pub max_upload_bytes: usize,
    /// Most rows in one upload.
    pub max_upload_rows: usize,
    /// Most rows in one prediction request.
    pub max_predict_rows: usize,
    /// Most queued or running jobs per key.
    pub max_active_jobs_per_key: u32,
    /// Time limit of one request (uploads included).
    pub request_timeout: Duration,
    /// Time limit for a client to send a request's headers (slow clients).
    pub header_read_timeout: Duration,
    /// Requests per key; `None` disables the limit. Off in [`Config::new`]
    /// (in-process users such as tests and benchmarks opt in); `privboost
    /// serve` turns it on with [`DEFAULT_RATE_LIMIT`] unless told otherwise.
    pub rate_limit: Option<RateLimit>,
    /// A running job whose worker stopped renewing its lease this long ago
    /// (its process died) is re-queued by any process sharing the file.
    pub job_lease: Duration,
}

impl Config {
    /// Defaults for everything but the file (the rate limit is off).
    pub fn new(db_path: PathBuf) -> Config {
        Config {
            db_path,
            database_url: None,
            workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            threads_per_job: 1,
            admin_key: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
            max_upload_rows: DEFAULT_MAX_UPLOAD_ROWS,
            max_predict_rows: DEFAULT_MAX_PREDICT_ROWS,
            max_active_jobs_per_key: DEFAULT_MAX_ACTIVE_JOBS_PER_KEY,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            rate_limit: None,
            job_lease: crate::jobs::DEFAULT_LEASE,
        }
    }
}

/// 8 MiB: a prediction batch of 10,000 rows of ~25 columns fits; a runaway
/// client cannot make the server buffer more.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 << 20;
/// 1 GiB: uploads are streamed into the encoder, so memory never holds the
/// CSV text; it grows with the rows: about 6 copies of the bit matrix
/// (n * (d + 1) / 8 bytes) at the peak, while building, encoding and storing
/// it (tests/limits.rs, docs/reliability.md). The row limit stops
/// an upload while it streams.
pub const DEFAULT_MAX_UPLOAD_BYTES: usize = 1 << 30;
/// 20 million rows: 20M x 200 literals is 500 MB of bits, within a 2-core,
/// 24 GiB machine with room for training's per-row arrays (SPEC §7).
pub const DEFAULT_MAX_UPLOAD_ROWS: usize = 20_000_000;
/// 10,000 rows per prediction request: answers in a few milliseconds.
pub const DEFAULT_MAX_PREDICT_ROWS: usize = 10_000;
/// 32 queued or running jobs per key: one analyst cannot fill the queue.
pub const DEFAULT_MAX_ACTIVE_JOBS_PER_KEY: u32 = 32;
/// 300 s: an upload of the maximum size on a slow link; also bounds how long
/// graceful shutdown waits for in-flight requests.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

/// 10 s to send the request line and headers: a client that trickles them
/// (slowloris) is disconnected instead of holding a connection.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// 50 requests per second per key, bursts of 100: far above what a client
/// of a training service needs (a prediction request carries up to 10,000
/// rows), low enough that one key cannot monopolise the request path.
pub const DEFAULT_RATE_LIMIT: RateLimit = RateLimit {
    per_second: NonZeroU32::new(50).unwrap(),
    burst: NonZeroU32::new(100).unwrap(),
};

/// Largest epsilon accepted for a job or a dataset's total. Far above any
/// meaningful guarantee (e^1000); a larger value is a typo, and it keeps the
/// noise calibration finite.
pub const MAX_EPSILON: f64 = 1000.0;

/// What handlers share.
#[derive(Clone)]
pub struct AppState {
    pool: crate::store::Db,
    jobs: JobQueue,
    config: Arc<Config>,
    metrics: Arc<metrics::Metrics>,
    models: Arc<models::ModelCache>,
    /// Verified keys and resolved deployments (`cache`).
    caches: Arc<cache::Caches>,
    limiter: Option<Arc<rate_limit::KeyLimiter>>,
    /// Becomes `true` when the server stops (long-lived responses such as
    /// job event streams end then, so draining does not wait for them).
    shutdown: watch::Receiver<bool>,
}

/// Errors at start-up.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Opening or migrating the database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// An opened service: database migrated, workers running, not yet serving.
pub struct Server {
    state: AppState,
    workers: Workers,
    shutdown_tx: watch::Sender<bool>,
    /// The admin key generated on first start (to print once), if any.
    pub new_admin_key: Option<String>,
}

impl Server {
    /// Open the database, apply migrations, make sure an admin key exists,
    /// re-queue jobs a crash left running, and start the workers.
    pub async fn open(config: Config) -> Result<Server, StartError> {
        // One connection per worker for writing results, plus request traffic.
        let location = match &config.database_url {
            Some(url) => store::Location::from_url(url)?,
            None => store::Location::SqliteFile(config.db_path.clone()),
        };
        let pool = store::connect(&location, (config.workers as u32 + 8).max(8)).await?;
        let new_admin_key = bootstrap_admin(&pool, config.admin_key.as_deref()).await?;
        let recovered = store::jobs::requeue_expired(&pool, config.job_lease).await?;
        if recovered > 0 {
            info!(
                jobs = recovered,
                "re-queued jobs interrupted by a previous stop; they re-run under their charges"
            );
        }
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let (jobs, workers) = JobQueue::start(
            pool.clone(),
            config.workers,
            config.threads_per_job,
            config.job_lease,
            shutdown_rx.clone(),
        );
        jobs.wake();
        let limiter = config
            .rate_limit
            .map(|l| Arc::new(rate_limit::KeyLimiter::new(l)));
        let state = AppState {
            pool,
            jobs,
            limiter,
            config: Arc::new(config),
            metrics: Arc::new(metrics::Metrics::default()),
            models: Arc::new(models::ModelCache::default()),
            caches: Arc::new(cache::Caches::default()),
            shutdown: shutdown_rx,
        };
        Ok(Server {
            state,
            workers,
            shutdown_tx,
            new_admin_key,
        })
    }
}

/// A configured admin key shorter than this gets a warning at start-up.
const MIN_CONFIGURED_ADMIN_KEY_LEN: usize = 32;

async fn bootstrap_admin(
    pool: &crate::store::Db,
    configured: Option<&str>,
) -> Result<Option<String>, StoreError> {
    if let Some(secret) = configured {
        // Keys are hashed with a fast hash because a generated key has 256
        // bits of entropy; a short hand-picked one does not (the key itself
        // is never logged).
        if secret.len() < MIN_CONFIGURED_ADMIN_KEY_LEN {
            tracing::warn!(
                "the configured admin key is shorter than {MIN_CONFIGURED_ADMIN_KEY_LEN} characters; use a random one such as `pb_` and 64 hex digits"
            );
        }
        if !store::keys::secret_exists(pool, secret).await? {
            store::keys::create(pool, Role::Admin, "admin (configured)", secret).await?;
        }
        return Ok(None);
    }
    if store::keys::admin_exists(pool).await? {
        return Ok(None);
    }
    let secret = store::keys::generate_secret()?;
    store::keys::create(pool, Role::Admin, "admin", &secret).await?;
    Ok(Some(secret))
}

/// Serve until `shutdown` completes, then drain requests, stop the workers
/// (running trainings stop at their next round and go back to the queue)
/// and wait for them.
pub async fn serve(
    listener: TcpListener,
    server: Server,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with_metrics(listener, None, server, shutdown).await
}

/// [`serve`], and when `metrics` is given, `GET /metrics` without a key on
/// that listener too (`serve --metrics-bind`; docs/service.md, "Operations").
pub async fn serve_with_metrics(
    listener: TcpListener,
    metrics: Option<TcpListener>,
    server: Server,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let Server {
        state,
        workers,
        shutdown_tx,
        ..
    } = server;
    let jobs = state.jobs.clone();
    let pool = state.pool.clone();
    let header_read_timeout = state.config.header_read_timeout;
    // In-flight requests end within the request timeout; a little more
    // for the responses to be written.
    let drain = state.config.request_timeout + Duration::from_secs(5);
    let metrics_task = metrics.map(|l| {
        let app = ops::metrics_router(state.clone());
        let mut rx = shutdown_tx.subscribe();
        tokio::spawn(async move {
            listen::serve_http1(l, app, header_read_timeout, drain, async move {
                let _ = rx.wait_for(|stop| *stop).await;
            })
            .await
        })
    });
    let app = router(state);
    let mut rx = shutdown_tx.subscribe();
    // One signal, fanned out: the HTTP server and the workers both watch it.
    tokio::spawn(async move {
        shutdown.await;
        jobs.stop();
        let _ = shutdown_tx.send(true);
    });
    let result = listen::serve_http1(listener, app, header_read_timeout, drain, async move {
        let _ = rx.wait_for(|stop| *stop).await;
    })
    .await;
    if let Some(task) = metrics_task {
        match task.await {
            Ok(Err(e)) => tracing::warn!(error = %e, "the metrics listener stopped"),
            Err(e) => tracing::warn!(error = %e, "the metrics listener panicked"),
            Ok(Ok(())) => {}
        }
    }
    workers.join().await;
    pool.close().await;
    result
}

/// The route table: every route with its method, so that the router and
/// `openapi.yaml` can be compared (tests/openapi.rs).
pub(crate) struct Routes {
    router: Router<AppState>,
    list: Vec<(Method, &'static str)>,
}

impl Routes {
    fn new() -> Routes {
        Routes {
            router: Router::new(),
            list: Vec::new(),
        }
    }

    /// Add `handler` for `method` at `path`.
    pub(crate) fn at<H, T>(self, method: Method, path: &'static str, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        // Invariant: callers pass the standard methods (GET, POST, PUT,
        // PATCH, DELETE), which all have a filter.
        let filter = MethodFilter::try_from(method.clone()).expect("a standard method");
        self.at_router(method, path, on(filter, handler))
    }

    /// Add a prepared method router (with its own layers) for `method`.
    pub(crate) fn at_router(
        mut self,
        method: Method,
        path: &'static str,
        mr: MethodRouter<AppState>,
    ) -> Routes {
        self.list.push((method, path));
        self.router = self.router.route(path, mr);
        self
    }
}

fn routes(config: &Config) -> Routes {
    let r = Routes::new();
    let r = keys::routes(r);
    let r = datasets::routes(r, config);
    let r = jobs::routes(r);
    let r = models::routes(r);
    let r = evaluations::routes(r);
    let r = oip::routes(r);
    let r = invocations::routes(r);
    ops::routes(r)
}

/// Every `(METHOD, path)` the router serves.
pub fn route_list() -> Vec<(String, String)> {
    let api = routes(&Config::new(PathBuf::new())).list;
    api.into_iter()
        .map(|(m, p)| (m.to_string(), p.to_owned()))
        .chain(
            dashboard::ROUTES
                .iter()
                .map(|&(m, p)| (m.to_owned(), p.to_owned())),
        )
        .collect()
}

/// The application with all layers. Order, outermost first: request id
/// (so every log line and response carries it), tracing, metrics, the
/// problem+json normaliser (so errors made by the inner layers are problem
/// documents too), the timeout, and the default body limit (raised only on
/// the upload route).
pub fn router(state: AppState) -> Router {
    let config = state.config.clone();
    let routes = routes(&config);
    // Each `Router::layer` call wraps every route in one more boxed service,
    // cloned on every request (tower's BoxCloneSyncService): the layers go
    // in as two ServiceBuilders, one box each, instead of one per layer.
    // ServiceBuilder lists them outermost first.
    routes
        .router
        .fallback(|| async { StatusCode::NOT_FOUND })
        .layer(
            ServiceBuilder::new()
                .layer(axum::middleware::from_fn(error::normalize_errors))
                .layer(TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    config.request_timeout,
                ))
                .layer(DefaultBodyLimit::max(config.max_body_bytes)),
        )
        // The web dashboard (HTML; its error pages stay HTML, so it joins
        // inside the request-id, tracing and metrics layers but outside the
        // problem+json normaliser; it sets its own body limit and timeout).
        .merge(dashboard::router(state.clone()))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(|req: &axum::http::Request<_>| {
                            let path = req
                                .extensions()
                                .get::<axum::extract::MatchedPath>()
                                .map_or("unmatched", |p| p.as_str());
                            let request_id = req
                                .headers()
                                .get("x-request-id")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("");
                            tracing::info_span!("request", method = %req.method(), path, request_id)
                        })
                        // One INFO line per response: status and latency, nothing else.
                        .on_response(
                            DefaultOnResponse::new()
                                .level(tracing::Level::INFO)
                                .latency_unit(LatencyUnit::Micros),
                        ),
                )
                .layer(PropagateRequestIdLayer::x_request_id())
                .layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    metrics::record,
                )),
        )
        .with_state(state)
}

/// Cursor pagination query (`page_size`, `page_token`).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageQuery {
    page_size: Option<u32>,
    page_token: Option<String>,
}

/// Largest page.
const MAX_PAGE_SIZE: u32 = 1000;
/// Page size when none is given.
const DEFAULT_PAGE_SIZE: u32 = 100;

impl PageQuery {
    /// `(after, page_size)`, checked.
    pub(crate) fn cursor(&self) -> Result<(i64, u32), ApiError> {
        let size = self.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if size == 0 || size > MAX_PAGE_SIZE {
            return Err(ApiError::Validation(vec![error::FieldError::new(
                "page_size",
                format!("must be between 1 and {MAX_PAGE_SIZE}"),
            )]));
        }
        let after = match &self.page_token {
            None => 0,
            Some(t) => t
                .strip_prefix("after-")
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| {
                    ApiError::Validation(vec![error::FieldError::new(
                        "page_token",
                        "not a token this server issued",
                    )])
                })?,
        };
        Ok((after, size))
    }
}

/// A page of items as JSON: `{"items": [...], "next_page_token": ...}`.
pub(crate) fn page_json<T: serde::Serialize>(page: store::Page<T>) -> serde_json::Value {
    serde_json::json!({
        "items": page.items,
        "next_page_token": page.next_after.map(|s| format!("after-{s}")),
    })
}

/// The `Idempotency-Key` header, if present (1 to 255 visible characters).
pub(crate) fn idempotency_key(headers: &axum::http::HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .ok()
        .filter(|t| !t.is_empty() && t.len() <= 255);
    match text {
        Some(t) => Ok(Some(t.to_owned())),
        None => Err(ApiError::Validation(vec![error::FieldError::new(
            "Idempotency-Key",
            "must be 1 to 255 visible ASCII characters",
        )])),
    }
}

/// Replay a stored response.
pub(crate) fn replay(stored: store::idempotency::StoredResponse) -> axum::response::Response {
    use axum::response::IntoResponse;
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    let mut response = (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        stored.body,
    )
        .into_response();
    if let Some(location) = stored
        .location
        .and_then(|l| axum::http::HeaderValue::from_str(&l).ok())
    {
        response
            .headers_mut()
            .insert(axum::http::header::LOCATION, location);
    }
    response.headers_mut().insert(
        "idempotent-replayed",
        axum::http::HeaderValue::from_static("true"),
    );
    response
}

/// Serialise a response body (our own types always serialise).
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value).map_err(|e| ApiError::Internal(e.to_string()))
}

/// Whether the caller sees a job's or model's times precisely: the
/// dataset's owner and admins do; everyone else (an analyst with a grant)
/// sees whole seconds and progress in coarse steps (docs/privacy.md,
/// "Timing": defence in depth against timing training from the API).
pub(crate) async fn sees_precise_times(
    state: &AppState,
    caller: &auth::Caller,
    dataset_id: &str,
) -> Result<bool, ApiError> {
    if caller.role == Role::Admin {
        return Ok(true);
    }
    Ok(
        store::datasets::get_visible(&state.pool, dataset_id, &caller.id)
            .await?
            .is_some_and(|d| d.owner_id == caller.id),
    )
}

/// An RFC 3339 time (a JSON string) truncated to whole seconds; other
/// values are left alone.
pub(crate) fn coarsen_time(v: &mut serde_json::Value) {
    use time::format_description::well_known::Rfc3339;
    let Some(text) = v.as_str() else { return };
    if let Ok(t) = time::OffsetDateTime::parse(text, &Rfc3339)
        && let Ok(t) = t.replace_nanosecond(0)
        && let Ok(s) = t.format(&Rfc3339)
    {
        *v = serde_json::Value::String(s);
    }
}

/// Rounds done as a non-owner sees them: floored to a multiple of
/// `ceil(tau / 4)` while the job runs (so polling cannot time single
/// rounds), exact once it is final.
pub(crate) fn coarse_rounds(rounds_done: u32, tau: u32, running: bool) -> u32 {
    if !running || tau == 0 {
        return rounds_done;
    }
    let step = tau.div_ceil(COARSE_PROGRESS_STEPS);
    rounds_done / step * step
}

/// How many steps of progress a non-owner sees in a job's run.
pub(crate) const COARSE_PROGRESS_STEPS: u32 = 4;

#[cfg(test)]
mod coarse_tests {
    use super::*;

    #[test]
    fn times_lose_their_fraction_and_rounds_move_in_quarters() {
        let mut v = serde_json::json!("2026-11-22T18:51:04.123456789Z");
        coarsen_time(&mut v);
        assert_eq!(v, "2026-11-22T18:51:04Z");
        let mut null = serde_json::Value::Null;
        coarsen_time(&mut null);
        assert!(null.is_null());
        let seen: Vec<u32> = (0..=15).map(|r| coarse_rounds(r, 15, true)).collect();
        assert_eq!(
            seen.iter().collect::<std::collections::BTreeSet<_>>().len(),
            4
        );
        assert!(seen.iter().zip(0..).all(|(&s, r)| s <= r && s % 4 == 0));
        assert_eq!(coarse_rounds(15, 15, false), 15);
        assert_eq!(coarse_rounds(1, 1, true), 1);
    }
}
