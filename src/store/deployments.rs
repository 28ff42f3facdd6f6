//! Deployments: a name pointing at a model. Re-pointing is one UPDATE, so a
//! reader sees either the old model or the new one, never a mix.

use serde::Serialize;
use sqlx::SqlitePool;

use super::{Page, StoreError, now};

/// A deployment.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Deployment {
    #[serde(skip)]
    pub(crate) seq: i64,
    /// The name.
    pub name: String,
    /// The model it serves.
    pub model_id: String,
    /// The key that created it (only it may re-point it).
    pub created_by: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// What [`put`] did.
pub(crate) enum Put {
    /// A new name.
    Created(Deployment),
    /// Re-pointed.
    Updated(Deployment),
    /// The name belongs to another key.
    Foreign,
}

/// Create or re-point a deployment (the caller has checked access to the model).
pub(crate) async fn put(
    pool: &SqlitePool,
    name: &str,
    model_id: &str,
    by: &str,
) -> Result<Put, StoreError> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    let owner: Option<String> =
        sqlx::query_scalar("SELECT created_by FROM deployments WHERE name = ?")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
    let created = match owner {
        Some(owner) if owner != by => return Ok(Put::Foreign),
        Some(_) => {
            sqlx::query("UPDATE deployments SET model_id = ?, updated_at = ? WHERE name = ?")
                .bind(model_id)
                .bind(now())
                .bind(name)
                .execute(&mut *tx)
                .await?;
            false
        }
        None => {
            sqlx::query("INSERT INTO deployments (name, model_id, created_by, updated_at) VALUES (?, ?, ?, ?)")
                .bind(name)
                .bind(model_id)
                .bind(by)
                .bind(now())
                .execute(&mut *tx)
                .await?;
            true
        }
    };
    let d: Deployment = sqlx::query_as(
        "SELECT seq, name, model_id, created_by, updated_at FROM deployments WHERE name = ?",
    )
    .bind(name)
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(if created {
        Put::Created(d)
    } else {
        Put::Updated(d)
    })
}

/// A deployment by name.
pub(crate) async fn get(pool: &SqlitePool, name: &str) -> Result<Option<Deployment>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT seq, name, model_id, created_by, updated_at FROM deployments WHERE name = ?",
    )
    .bind(name)
    .fetch_optional(pool)
    .await?)
}

/// A page of deployments.
pub(crate) async fn list(
    pool: &SqlitePool,
    after: i64,
    page_size: u32,
) -> Result<Page<Deployment>, StoreError> {
    let rows: Vec<Deployment> = sqlx::query_as(
        "SELECT seq, name, model_id, created_by, updated_at FROM deployments WHERE seq > ? ORDER BY seq LIMIT ?",
    )
    .bind(after)
    .bind(i64::from(page_size) + 1)
    .fetch_all(pool)
    .await?;
    Ok(Page::from_rows(
        rows.into_iter().map(|d| (d.seq, d)).collect(),
        page_size,
    ))
}
