//! Trained models: the JSON model file of [`crate::learn::Model`], keyed by
//! id, with the job and dataset that produced it. A model is a release, so
//! reading it costs nothing; access still follows the dataset's grants.

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
            select_models!("WHERE m.id = $1 AND "),
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
        Ok(sqlx::query_as(select_models!("WHERE m.id = $1"))
            .bind(id)
            .fetch_optional(pool)
            .await?)
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
            select_models!("WHERE m.seq > $1 AND "),
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
