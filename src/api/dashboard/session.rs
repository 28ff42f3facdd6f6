//! Dashboard sessions: an opaque token in an `HttpOnly`, `SameSite=Strict`
//! cookie, mapped server-side to the API key it was opened with.
//!
//! Why the key is kept (in memory only, never on disk, never in the cookie
//! or a URL): every page is rendered from the `/v1` answers to that key
//! (`super::Api`), so the dashboard applies exactly the API's authorization
//! and releases, and a revoked key's session dies at its next page (the
//! API answers 401 and the session is dropped). The cookie carries only a
//! random token of 256 bits from the OS CSPRNG; the map is keyed by its
//! SHA-256, so the map's keys are not tokens. Sessions end at log-out,
//! after [`SESSION_LIFETIME`], or when the process stops.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::http::header;

use crate::store::keys;

/// The cookie's name.
pub(super) const COOKIE: &str = "pb_dashboard";

/// A session's absolute lifetime: a working day; then log in again.
pub(super) const SESSION_LIFETIME: Duration = Duration::from_secs(8 * 3600);

/// Most open sessions; at the limit, expired ones are dropped, then the
/// oldest, so a flood of log-ins cannot grow memory without bound.
const MAX_SESSIONS: usize = 10_000;

/// What a session knows.
#[derive(Clone)]
pub(super) struct Session {
    /// The API key it was opened with (see the module comment).
    pub(super) secret: String,
    /// The key's id, role and label, as `/v1/me` answered at log-in.
    pub(super) key_id: String,
    pub(super) role: String,
    pub(super) key_name: String,
    expires: Instant,
}

/// The open sessions, by SHA-256 of the token.
#[derive(Default)]
pub(super) struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// Open a session; returns the token for the cookie.
    pub(super) fn open(
        &self,
        secret: String,
        key_id: String,
        role: String,
        key_name: String,
    ) -> Result<String, crate::store::StoreError> {
        let token = keys::generate_secret()?;
        let now = Instant::now();
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_SESSIONS {
            map.retain(|_, s| s.expires > now);
        }
        if map.len() >= MAX_SESSIONS
            && let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(
            keys::hash_key(&token),
            Session {
                secret,
                key_id,
                role,
                key_name,
                expires: now + SESSION_LIFETIME,
            },
        );
        Ok(token)
    }

    /// The live session of a request's cookie, if any.
    pub(super) fn get(&self, headers: &HeaderMap) -> Option<Session> {
        let token = cookie_token(headers)?;
        let hash = keys::hash_key(token);
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(&hash) {
            Some(s) if s.expires > Instant::now() => Some(s.clone()),
            Some(_) => {
                map.remove(&hash);
                None
            }
            None => None,
        }
    }

    /// End the session of a request's cookie (log-out, or a key the API
    /// no longer accepts).
    pub(super) fn close(&self, headers: &HeaderMap) {
        if let Some(token) = cookie_token(headers) {
            self.map
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&keys::hash_key(token));
        }
    }
}

/// The session token from the `Cookie` header(s).
fn cookie_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

/// `Set-Cookie` for a new session. `HttpOnly`: scripts cannot read it;
/// `SameSite=Strict`: no other site's page can make the browser send it
/// (the CSRF baseline, docs/service.md "Dashboard"); `Path=/dashboard`:
/// the API never sees it; `Secure` when the request came over HTTPS
/// through a proxy that says so (a plain-HTTP deployment on loopback
/// could not use a `Secure` cookie).
pub(super) fn set_cookie(token: &str, https: bool) -> String {
    format!(
        "{COOKIE}={token}; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age={}{}",
        SESSION_LIFETIME.as_secs(),
        if https { "; Secure" } else { "" }
    )
}

/// `Set-Cookie` that removes the cookie.
pub(super) fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_cookie(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::COOKIE, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn a_session_is_found_by_its_cookie_only_until_closed() {
        let s = Sessions::default();
        let token = s
            .open(
                "pb_secret".into(),
                "key_1".into(),
                "owner".into(),
                "a".into(),
            )
            .unwrap();
        let h = with_cookie(&format!("other=1; {COOKIE}={token}; x=y"));
        assert_eq!(s.get(&h).unwrap().key_id, "key_1");
        assert!(s.get(&with_cookie(&format!("{COOKIE}=pb_wrong"))).is_none());
        assert!(s.get(&HeaderMap::new()).is_none());
        s.close(&h);
        assert!(s.get(&h).is_none());
    }

    #[test]
    fn the_cookie_is_http_only_and_strict() {
        let c = set_cookie("t", false);
        assert!(c.contains("HttpOnly") && c.contains("SameSite=Strict"));
        assert!(!c.contains("Secure"));
        assert!(set_cookie("t", true).ends_with("; Secure"));
        assert!(clear_cookie().contains("Max-Age=0"));
    }
}
