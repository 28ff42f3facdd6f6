//! Trained models: the JSON model file of [`crate::learn::Model`], keyed by
//! id, with the job and dataset that produced it. A model is a release, so
//! reading it costs nothing; access still follows the dataset's grants.
//!
//! A deleted model ([`delete`]) stays as a tombstone row (`deleted_at` set,
//! the file dropped): its id is never issued or served again, and every read
//! here skips it.

use super::{Page, StoreError};

/// A stored model.
#[derive(Debug, Clone, sqlx::FromRow)]
pub(crate) struct ModelRecord {
    pub seq: i64,
    pub id: String,
    pub job_id: String,
    pub dataset_id: String,
    pub model_json: String,
    pub created_at: String,
    /// For an edited version: the model it was edited from.
    pub parent_id: Option<String>,
}

macro_rules! select_models {
    ($rest:literal) => {
        concat!(
            "SELECT m.seq, m.id, m.job_id, m.dataset_id, m.model_json, m.created_at, m.parent_id FROM models m ",
            $rest
        )
    };
}

macro_rules! model_visible_to {
    ($a:literal, $b:literal) => {
        concat!(
            "EXISTS (SELECT 1 FROM datasets d WHERE d.id = m.dataset_id AND (d.owner_id = ",
            $a,
            " OR EXISTS (SELECT 1 FROM grants g WHERE g.dataset_id = d.id AND g.key_id = ",
            $b,
            ")))"
        )
    };
}

/// A model if the caller can see its dataset.
pub(crate) async fn get_visible(
    db: &super::Db,
    id: &str,
    caller_id: &str,
) -> Result<Option<ModelRecord>, StoreError> {
    super::with_db!(db, |pool, pg| {
        Ok(sqlx::query_as(concat!(
            select_models!("WHERE m.id = $1 AND m.deleted_at IS NULL AND "),
            model_visible_to!("$2", "$3")
        ))
        .bind(id)
        .bind(caller_id)
        .bind(caller_id)
        .fetch_optional(pool)
        .await?)
    })
}

/// A model by id, without an access check (deployments are public to every key).
pub(crate) async fn get(db: &super::Db, id: &str) -> Result<Option<ModelRecord>, StoreError> {
    super::with_db!(db, |pool, pg| {
        Ok(
            sqlx::query_as(select_models!("WHERE m.id = $1 AND m.deleted_at IS NULL"))
                .bind(id)
                .fetch_optional(pool)
                .await?,
        )
    })
}

/// A page of the models the caller can see.
pub(crate) async fn list_visible(
    db: &super::Db,
    caller_id: &str,
    after: i64,
    page_size: u32,
) -> Result<Page<ModelRecord>, StoreError> {
    super::visible_page(
        db,
        concat!(
            select_models!("WHERE m.seq > $1 AND m.deleted_at IS NULL AND "),
            model_visible_to!("$2", "$3"),
            " ORDER BY m.seq LIMIT $4"
        ),
        caller_id,
        after,
        page_size,
        |m: ModelRecord| Ok((m.seq, m)),
    )
    .await
}

/// Store an edited version of `parent` (post-processing of a released
/// model: no charge) under the new id `id`; returns it.
pub(crate) async fn insert_edit(
    db: &super::Db,
    parent: &ModelRecord,
    id: &str,
    model_json: &str,
    edited_by: &str,
) -> Result<ModelRecord, StoreError> {
    super::with_db!(db, |pool, pg| {
        let created_at = super::now();
        sqlx::query(
        "INSERT INTO models (id, job_id, dataset_id, model_json, created_at, parent_id, edited_by) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(id)
    .bind(&parent.job_id)
    .bind(&parent.dataset_id)
    .bind(model_json)
    .bind(&created_at)
    .bind(&parent.id)
    .bind(edited_by)
    .execute(pool)
    .await?;
        get(db, id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("the edited model vanished".into()))
    })
}

/// What [`delete`] did.
#[derive(Debug, PartialEq)]
pub(crate) enum Deleted {
    /// The model is a tombstone now.
    Done,
    /// Refused: these deployments (`created_by:name`) serve it.
    Deployed(Vec<String>),
    /// No such model (or it was deleted already).
    Missing,
}

/// Delete model `id` (the caller has checked who may): in one transaction,
/// mark it deleted and drop its file, unless a deployment serves it, in
/// which case nothing changes. On PostgreSQL the `UPDATE` locks the model's
/// row, and a deployment move takes a share lock on it before it points at
/// the model (`deployments::put`, `rollback`): so either the move went
/// first and is seen here, or it waits and then finds the model deleted.
/// SQLite's `BEGIN IMMEDIATE` serialises the two outright.
pub(crate) async fn delete(db: &super::Db, id: &str, by: &str) -> Result<Deleted, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        let done = sqlx::query(
            "UPDATE models SET deleted_at = $1, deleted_by = $2, model_json = '' WHERE id = $3 AND deleted_at IS NULL",
        )
        .bind(super::now())
        .bind(by)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() != 1 {
            return Ok(Deleted::Missing);
        }
        let serving: Vec<(String, String)> = sqlx::query_as(
            "SELECT created_by, name FROM deployments WHERE model_id = $1 ORDER BY seq",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await?;
        if !serving.is_empty() {
            // Dropping the transaction rolls the update back.
            return Ok(Deleted::Deployed(
                serving
                    .into_iter()
                    .map(|(by, name)| format!("{by}:{name}"))
                    .collect(),
            ));
        }
        tx.commit().await?;
        Ok(Deleted::Done)
    })
}

/// Whether model `id` exists and is not deleted, in a deployment move's
/// transaction; on PostgreSQL with a share lock on its row until the move
/// commits, so that a concurrent [`delete`] either is seen or waits.
pub(crate) async fn alive_in(
    conn: impl Into<super::db::Conn<'_>>,
    id: &str,
) -> Result<bool, StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        let row: Option<(i64,)> = sqlx::query_as(if pg {
            "SELECT 1::BIGINT FROM models WHERE id = $1 AND deleted_at IS NULL FOR SHARE"
        } else {
            "SELECT 1 FROM models WHERE id = $1 AND deleted_at IS NULL"
        })
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
        Ok(row.is_some())
    })
}
