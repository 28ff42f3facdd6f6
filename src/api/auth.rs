//! Authentication: the [`Caller`] extractor.
//!
//! `Authorization: Bearer <key>`; the key is hashed (SHA-256) and looked up
//! (in the key cache of `super::cache`, else in the store).
//! Missing, malformed or unknown keys get 401; a known key over its rate
//! limit gets 429 (`rate_limit`). The key itself is never
//! logged or stored. What a caller may touch is checked by each handler
//! against the resource (a resource outside the caller's reach is a 404).

use axum::extract::FromRequestParts;
use axum::http::{header, request::Parts};

use super::error::ApiError;
use super::{AppState, rate_limit};
use crate::store::keys::{self, Role};

/// The authenticated key of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Key id.
    pub id: String,
    /// Role.
    pub role: Role,
}

impl Caller {
    /// Refuse (403) unless the caller has one of `roles`.
    pub fn require(&self, roles: &[Role], what: &str) -> Result<(), ApiError> {
        if roles.contains(&self.role) {
            Ok(())
        } else {
            let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
            Err(ApiError::Forbidden(format!(
                "{what} needs a key with role {}",
                names.join(" or ")
            )))
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .ok_or(ApiError::Unauthorized)?
            .to_str()
            .map_err(|_| ApiError::Unauthorized)?;
        let secret = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .ok_or(ApiError::Unauthorized)?
            .trim();
        if secret.is_empty() {
            return Err(ApiError::Unauthorized);
        }
        let digest = keys::digest_key(secret);
        // A verified key is cached for at most `cache::CACHE_TTL`; an
        // unknown or revoked one is read from the store every time, and
        // revoking a key clears the cache (`super::cache`).
        let (id, role) = match state.caches.keys.get(&digest) {
            Some(known) => known,
            None => {
                let ticket = state.caches.keys.ticket();
                let key = keys::find_by_hash(&state.pool, &keys::hex(&digest))
                    .await?
                    .ok_or(ApiError::Unauthorized)?;
                state
                    .caches
                    .keys
                    .insert(ticket, digest, (key.id.clone(), key.role));
                (key.id, key.role)
            }
        };
        if let Some(limiter) = &state.limiter {
            limiter.check(&id).map_err(|wait| ApiError::RateLimited {
                retry_after: rate_limit::retry_after_secs(wait),
            })?;
        }
        Ok(Caller { id, role })
    }
}
