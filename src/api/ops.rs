//! Operations: `/healthz` (the process answers), `/readyz` (the database
//! answers), `/metrics` (Prometheus text) and `/openapi.yaml`.

use std::fmt::Write;

use axum::extract::State;
use axum::http::{Method, header};
use axum::response::IntoResponse;
use serde_json::json;

use super::error::ApiError;
use super::{AppState, Routes};
use crate::store;

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
    sqlx::query("SELECT 1")
        .execute(&state.pool)
        .await
        .map_err(|_| ApiError::Unavailable)?;
    Ok(axum::Json(json!({"status": "ready"})))
}

async fn metrics(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
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
