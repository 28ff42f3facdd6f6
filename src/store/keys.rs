//! API keys: random 256-bit secrets, stored as their SHA-256 only.
//!
//! A key has 256 bits of entropy, so a fast hash is enough: there is nothing
//! to brute-force, unlike a password, and lookups stay cheap on every request.

use rand::TryRng;
use rand::rngs::SysRng;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{Page, StoreError, new_id, now};

/// The roles of SPEC §1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Creates owner and analyst keys.
    Admin,
    /// Uploads datasets, sets budgets, grants analysts.
    Owner,
    /// Trains on granted datasets, deploys and predicts.
    Analyst,
}

impl Role {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Owner => "owner",
            Role::Analyst => "analyst",
        }
    }

    fn parse(text: &str) -> Result<Role, StoreError> {
        match text {
            "admin" => Ok(Role::Admin),
            "owner" => Ok(Role::Owner),
            "analyst" => Ok(Role::Analyst),
            other => Err(StoreError::Corrupt(format!("unknown role {other:?}"))),
        }
    }
}

/// A key's public record (never the secret).
#[derive(Debug, Clone, Serialize)]
pub struct KeyInfo {
    /// Key id (not secret).
    pub id: String,
    /// Role.
    pub role: Role,
    /// A label chosen by the admin.
    pub name: String,
    /// RFC 3339.
    pub created_at: String,
    /// When revoked, if it was.
    pub revoked_at: Option<String>,
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    seq: i64,
    id: String,
    role: String,
    name: String,
    created_at: String,
    revoked_at: Option<String>,
}

impl KeyRow {
    fn into_domain(self) -> Result<(i64, KeyInfo), StoreError> {
        Ok((
            self.seq,
            KeyInfo {
                id: self.id,
                role: Role::parse(&self.role)?,
                name: self.name,
                created_at: self.created_at,
                revoked_at: self.revoked_at,
            },
        ))
    }
}

/// SHA-256 of a key, hex.
pub(crate) fn hash_key(secret: &str) -> String {
    hex(&digest_key(secret))
}

/// SHA-256 of a key, raw: what the API's key cache is keyed by.
pub(crate) fn digest_key(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// Lower-case hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(2 * bytes.len());
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// A fresh secret: `pb_` and 64 hex digits from the OS CSPRNG.
pub(crate) fn generate_secret() -> Result<String, StoreError> {
    let mut bytes = [0u8; 32];
    SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| StoreError::Corrupt(format!("the OS random source failed: {e}")))?;
    Ok(format!("pb_{}", hex(&bytes)))
}

/// Store a key with the given secret; returns its record.
pub(crate) async fn create(
    db: &super::Db,
    role: Role,
    name: &str,
    secret: &str,
) -> Result<KeyInfo, StoreError> {
    super::with_db!(db, |pool, pg| {
        let id = new_id("key");
        let created_at = now();
        sqlx::query(
        "INSERT INTO api_keys (id, role, name, key_hash, created_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&id)
    .bind(role.as_str())
    .bind(name)
    .bind(hash_key(secret))
    .bind(&created_at)
    .execute(pool)
    .await?;
        Ok(KeyInfo {
            id,
            role,
            name: name.to_owned(),
            created_at,
            revoked_at: None,
        })
    })
}

/// Whether any admin key exists (first start creates one).
pub(crate) async fn admin_exists(db: &super::Db) -> Result<bool, StoreError> {
    super::with_db!(db, |pool, pg| {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM api_keys WHERE role = 'admin' AND revoked_at IS NULL",
        )
        .fetch_one(pool)
        .await?;
        Ok(n > 0)
    })
}

/// Whether a key with this secret exists (active or not).
pub(crate) async fn secret_exists(db: &super::Db, secret: &str) -> Result<bool, StoreError> {
    super::with_db!(db, |pool, pg| {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM api_keys WHERE key_hash = $1")
            .bind(hash_key(secret))
            .fetch_one(pool)
            .await?;
        Ok(n > 0)
    })
}

/// The active key with this hash.
pub(crate) async fn find_by_hash(
    db: &super::Db,
    hash: &str,
) -> Result<Option<KeyInfo>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let row: Option<KeyRow> = sqlx::query_as(
        "SELECT seq, id, role, name, created_at, revoked_at FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL",
    )
    .bind(hash)
    .fetch_optional(pool)
    .await?;
        row.map(|r| r.into_domain().map(|(_, k)| k)).transpose()
    })
}

/// One key by id.
pub(crate) async fn get(db: &super::Db, id: &str) -> Result<Option<KeyInfo>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let row: Option<KeyRow> = sqlx::query_as(
            "SELECT seq, id, role, name, created_at, revoked_at FROM api_keys WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await?;
        row.map(|r| r.into_domain().map(|(_, k)| k)).transpose()
    })
}

/// A page of keys.
pub(crate) async fn list(
    db: &super::Db,
    after: i64,
    page_size: u32,
) -> Result<Page<KeyInfo>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let rows: Vec<KeyRow> = sqlx::query_as(
        "SELECT seq, id, role, name, created_at, revoked_at FROM api_keys WHERE seq > $1 ORDER BY seq LIMIT $2",
    )
    .bind(after)
    .bind(i64::from(page_size) + 1)
    .fetch_all(pool)
    .await?;
        let rows = rows
            .into_iter()
            .map(KeyRow::into_domain)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(rows, page_size))
    })
}

/// Revoke a key; false if there is no such active key.
pub(crate) async fn revoke(db: &super::Db, id: &str) -> Result<bool, StoreError> {
    super::with_db!(db, |pool, pg| {
        let done =
            sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
                .bind(now())
                .bind(id)
                .execute(pool)
                .await?;
        Ok(done.rows_affected() == 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_hashes_to_the_lower_case_hex_of_its_sha256() {
        // FIPS 180-2's example: stored hashes must keep this exact form.
        assert_eq!(
            hash_key("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hex(&digest_key("abc")), hash_key("abc"));
        assert_eq!(hex(&[0x00, 0x0f, 0xf0, 0xff]), "000ff0ff");
    }
}
