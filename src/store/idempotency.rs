//! Stored responses of POSTs sent with an `Idempotency-Key` (SPEC §6).
//!
//! The lookup and the record are written in the same transaction as the
//! resource the POST creates, so a retried request can never create (or
//! charge) twice, even when the two copies race.

use sha2::{Digest, Sha256};

use super::{StoreError, keys::hex, now};

/// The idempotency key of a request, scoped to the API key that sent it.
#[derive(Debug, Clone)]
pub(crate) struct IdemRequest {
    /// The caller's key id.
    pub key_id: String,
    /// The `Idempotency-Key` header.
    pub idem_key: String,
    /// SHA-256 of the method, path and canonical body.
    pub request_hash: String,
}

impl IdemRequest {
    /// Hash a request's identity: method, path and body bytes.
    pub(crate) fn new(
        key_id: &str,
        idem_key: &str,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> IdemRequest {
        let mut h = Sha256::new();
        h.update(method.as_bytes());
        h.update([0]);
        h.update(path.as_bytes());
        h.update([0]);
        h.update(body);
        IdemRequest {
            key_id: key_id.to_owned(),
            idem_key: idem_key.to_owned(),
            request_hash: hex(&h.finalize()),
        }
    }
}

/// A response to store or replay.
#[derive(Debug, Clone)]
pub(crate) struct StoredResponse {
    /// HTTP status.
    pub status: u16,
    /// `Location` header, if any.
    pub location: Option<String>,
    /// JSON body.
    pub body: String,
}

/// What a lookup found.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// First use of the key.
    New,
    /// The same request was made before: replay this.
    Replay(StoredResponse),
    /// The key was used with a different request.
    Mismatch,
}

/// Look the key up (inside the creating transaction).
pub(crate) async fn lookup(
    conn: impl Into<super::db::Conn<'_>>,
    req: &IdemRequest,
) -> Result<Lookup, StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        if pg {
            // Two copies of a request racing on different replicas: the
            // second waits here until the first commits, then replays it
            // (SQLite's BEGIN IMMEDIATE already runs them one at a time).
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1 || ' ' || $2, 0))")
                .bind(&req.key_id)
                .bind(&req.idem_key)
                .execute(&mut *conn)
                .await?;
        }
        let row: Option<(String, i64, Option<String>, String)> = sqlx::query_as(
        "SELECT request_hash, status, location, body FROM idempotency WHERE key_id = $1 AND idem_key = $2",
    )
    .bind(&req.key_id)
    .bind(&req.idem_key)
    .fetch_optional(&mut *conn)
    .await?;
        Ok(match row {
            None => Lookup::New,
            Some((hash, _, _, _)) if hash != req.request_hash => Lookup::Mismatch,
            Some((_, status, location, body)) => Lookup::Replay(StoredResponse {
                status: u16::try_from(status).map_err(|_| StoreError::Corrupt("status".into()))?,
                location,
                body,
            }),
        })
    })
}

/// Record the response (inside the creating transaction).
pub(crate) async fn record(
    conn: impl Into<super::db::Conn<'_>>,
    req: &IdemRequest,
    response: &StoredResponse,
) -> Result<(), StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        sqlx::query(
        "INSERT INTO idempotency (key_id, idem_key, request_hash, status, location, body, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&req.key_id)
    .bind(&req.idem_key)
    .bind(&req.request_hash)
    .bind(i64::from(response.status))
    .bind(&response.location)
    .bind(&response.body)
    .bind(now())
    .execute(&mut *conn)
    .await?;
        Ok(())
    })
}
