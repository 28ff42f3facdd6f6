//! Operations: `/healthz` (the process answers), `/readyz` (the database
//! answers), `/metrics` (Prometheus text) and `/openapi.yaml`.
//!
//! On the main port `/metrics` needs an admin key: its per-route request
//! counts show which routes are busy, which is not for whoever can reach the
//! port. `serve --metrics-bind ADDR` serves it without a key on a separate
//! listener (e.g. loopback, for a local Prometheus) ([`metrics_router`]).

use std::fmt::Write;

use axum::extract::State;
use axum::http::{Method, header};
use axum::response::IntoResponse;
use serde_json::json;

use super::auth::Caller;
use super::error::ApiError;
use super::{AppState, Routes};
use crate::store;
use crate::store::keys::Role;

/// The API description, served as is.
const OPENAPI_YAML: &str = include_str!("../../openapi.yaml");

pub(super) fn routes(r: Routes) -> Routes {
    r.at(Method::GET, "/healthz", healthz)
        .at(Method::GET, "/readyz", readyz)
        .at(Method::GET, "/metrics", metrics)
        .at(Method::GET, "/openapi.yaml", openapi)
}

async fn healthz() -> impl IntoResponse {
    axum::Json(json!({"status": "ok"}))
}

async fn readyz(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    if !store::ready_within(&state.pool, store::READY_WITHIN).await {
        return Err(ApiError::Unavailable);
    }
    Ok(axum::Json(json!({"status": "ready"})))
}

/// `/metrics` on the main port: admin key only.
async fn metrics(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(&[Role::Admin], "metrics on the main port")?;
    metrics_text(State(state)).await
}

/// The router of the separate metrics listener: `GET /metrics` only, no key.
pub(super) fn metrics_router(state: AppState) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(metrics_text))
        .with_state(state)
}

/// The Prometheus text.
async fn metrics_text(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let mut out = String::new();
    state.metrics.render(&mut out);
    out.push_str("# HELP privboost_jobs Jobs by state (all processes sharing the database).\n");
    out.push_str("# TYPE privboost_jobs gauge\n");
    for (s, n) in store::jobs::count_by_state(&state.pool).await? {
        let _ = writeln!(out, "privboost_jobs{{state=\"{s}\"}} {n}");
    }
    out.push_str("# HELP privboost_jobs_training Jobs training in this process.\n");
    out.push_str("# TYPE privboost_jobs_training gauge\n");
    let _ = writeln!(
        out,
        "privboost_jobs_training {}",
        state.jobs.running_count()
    );
    out.push_str("# HELP privboost_budget_epsilon_charged Epsilon charged and not refunded, summed over all datasets.\n");
    out.push_str("# TYPE privboost_budget_epsilon_charged gauge\n");
    // The exact decimal of an integer sum of units (`Units`' Display).
    let _ = writeln!(
        out,
        "privboost_budget_epsilon_charged {}",
        store::ledger::charged_all(&state.pool).await?
    );
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out))
}

async fn openapi() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/yaml")], OPENAPI_YAML)
}
