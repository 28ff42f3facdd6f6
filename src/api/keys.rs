//! API keys: the admin creates, lists and revokes owner and analyst keys;
//! any key can ask who it is.

use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::response::IntoResponse;
use serde::Deserialize;
use serde_json::json;

use super::auth::Caller;
use super::error::{ApiError, AppJson, AppQuery, FieldError};
use super::{AppState, PageQuery, Routes, page_json};
use crate::store::keys::{self, Role};

pub(super) fn routes(r: Routes) -> Routes {
    r.at(Method::POST, "/v1/keys", create)
        .at(Method::GET, "/v1/keys", list)
        .at(Method::DELETE, "/v1/keys/{id}", revoke)
        .at(Method::GET, "/v1/me", me)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewKey {
    role: Role,
    name: String,
}

/// Longest key name.
const MAX_NAME: usize = 200;

async fn create(
    State(state): State<AppState>,
    caller: Caller,
    AppJson(body): AppJson<NewKey>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(&[Role::Admin], "creating keys")?;
    let mut errors = Vec::new();
    if body.role == Role::Admin {
        errors.push(FieldError::new("role", "must be owner or analyst"));
    }
    if body.name.trim().is_empty() || body.name.len() > MAX_NAME {
        errors.push(FieldError::new(
            "name",
            format!("must be 1 to {MAX_NAME} characters"),
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::Validation(errors));
    }
    let secret = keys::generate_secret()?;
    let info = keys::create(&state.pool, body.role, body.name.trim(), &secret).await?;
    let mut value = serde_json::to_value(&info).map_err(|e| ApiError::Internal(e.to_string()))?;
    // The secret is shown once, here, and never stored.
    value["key"] = json!(secret);
    Ok((
        StatusCode::CREATED,
        [(
            axum::http::header::LOCATION,
            format!("/v1/keys/{}", info.id),
        )],
        axum::Json(value),
    ))
}

async fn list(
    State(state): State<AppState>,
    caller: Caller,
    AppQuery(q): AppQuery<PageQuery>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(&[Role::Admin], "listing keys")?;
    let (after, size) = q.cursor()?;
    Ok(axum::Json(page_json(
        keys::list(&state.pool, after, size).await?,
    )))
}

async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<impl IntoResponse, ApiError> {
    caller.require(&[Role::Admin], "revoking keys")?;
    if id == caller.id {
        return Err(ApiError::Conflict("a key cannot revoke itself".into()));
    }
    if keys::revoke(&state.pool, &id).await? {
        // After the commit: the key's next request on this replica reads
        // the store and gets 401 (other replicas: `super::cache`).
        state.caches.keys.clear();
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("key"))
    }
}

async fn me(State(state): State<AppState>, caller: Caller) -> Result<impl IntoResponse, ApiError> {
    let info = keys::get(&state.pool, &caller.id)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    Ok(axum::Json(info))
}
