//! Deployments: a name pointing at a model, with its history.
//!
//! Names are scoped per key: a deployment is unique per `(created_by, name)`,
//! so two owners can both have `prod` (docs/service.md, "Deployments").
//! Every move (re-pointing, or a rollback) is one `BEGIN IMMEDIATE`
//! transaction that appends the next version to `deployment_versions` and
//! updates the deployment, so a reader sees either the old model or the new
//! one, and concurrent moves are numbered one after the other: none is lost.

use serde::Serialize;

use super::{Page, StoreError, now};

/// A deployment.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct Deployment {
    #[serde(skip)]
    pub(crate) seq: i64,
    /// The name (unique for its creator).
    pub name: String,
    /// The model it serves.
    pub model_id: String,
    /// The version it serves (1, 2, 3... for this deployment).
    pub version: i64,
    /// The key that created it (only it may move it).
    pub created_by: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: the last move.
    pub updated_at: String,
}

impl Deployment {
    /// `created_by:name`: addresses this deployment whoever asks.
    pub fn qualified_name(&self) -> String {
        format!("{}:{}", self.created_by, self.name)
    }
}

/// One version of a deployment.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct DeploymentVersion {
    /// 1, 2, 3... per deployment.
    pub version: i64,
    /// The model this version serves.
    pub model_id: String,
    /// The key that made the move.
    pub moved_by: String,
    /// RFC 3339.
    pub created_at: String,
    /// For a rollback: the version whose model it restored.
    pub rollback_of: Option<i64>,
}

macro_rules! select_deployments {
    ($rest:literal) => {
        concat!(
            "SELECT seq, name, model_id, version, created_by, created_at, updated_at FROM deployments ",
            $rest
        )
    };
}

/// What [`put`] did.
pub(crate) enum Put {
    /// A new deployment (version 1).
    Created(Deployment),
    /// Moved: a version was appended.
    Updated(Deployment),
    /// Nothing changed: the model was deleted (`models::delete`).
    ModelGone,
}

/// Append version `version` and point the deployment at it, in `tx`.
async fn append(
    conn: impl Into<super::db::Conn<'_>>,
    seq: i64,
    version: i64,
    model_id: &str,
    by: &str,
    rollback_of: Option<i64>,
) -> Result<Deployment, StoreError> {
    super::with_conn!(conn.into(), |conn, pg| {
        let at = now();
        sqlx::query(
        "INSERT INTO deployment_versions (deployment_seq, version, model_id, moved_by, created_at, rollback_of) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(seq)
    .bind(version)
    .bind(model_id)
    .bind(by)
    .bind(&at)
    .bind(rollback_of)
    .execute(&mut *conn)
    .await?;
        sqlx::query(
            "UPDATE deployments SET model_id = $1, version = $2, updated_at = $3 WHERE seq = $4",
        )
        .bind(model_id)
        .bind(version)
        .bind(&at)
        .bind(seq)
        .execute(&mut *conn)
        .await?;
        Ok(sqlx::query_as(select_deployments!("WHERE seq = $1"))
            .bind(seq)
            .fetch_one(&mut *conn)
            .await?)
    })
}

/// Create `owner`'s deployment `name` at `model_id`, or move it there
/// (appending a version, even when it already serves that model: the
/// history records every move). The caller has checked access to the model.
pub(crate) async fn put(
    db: &super::Db,
    owner: &str,
    name: &str,
    model_id: &str,
) -> Result<Put, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        // PostgreSQL: one move of this owner's deployments at a time, so
        // two PUTs of a new name cannot both insert it.
        super::db::lock_key(&mut tx, owner).await?;
        if !super::models::alive_in(&mut tx, model_id).await? {
            return Ok(Put::ModelGone);
        }
        // ...and its row locked against a rollback computing the same
        // next version.
        let current: Option<Deployment> = sqlx::query_as(if pg {
            select_deployments!("WHERE created_by = $1 AND name = $2 FOR UPDATE")
        } else {
            select_deployments!("WHERE created_by = $1 AND name = $2")
        })
        .bind(owner)
        .bind(name)
        .fetch_optional(&mut *tx)
        .await?;
        let out = match current {
            Some(d) => {
                Put::Updated(append(&mut tx, d.seq, d.version + 1, model_id, owner, None).await?)
            }
            None => {
                let at = now();
                let seq: i64 = sqlx::query_scalar(
                "INSERT INTO deployments (name, model_id, version, created_by, created_at, updated_at) VALUES ($1, $2, 1, $3, $4, $5) RETURNING seq",
            )
            .bind(name)
            .bind(model_id)
            .bind(owner)
            .bind(&at)
            .bind(&at)
            .fetch_one(&mut *tx)
            .await?;
                Put::Created(append(&mut tx, seq, 1, model_id, owner, None).await?)
            }
        };
        tx.commit().await?;
        Ok(out)
    })
}

/// What [`rollback`] did.
pub(crate) enum Rollback {
    /// A version was appended that serves the target's model.
    Done(Deployment),
    /// No target given and the deployment is at version 1.
    NoPrevious,
    /// The target version does not exist.
    UnknownVersion,
    /// The deployment vanished (cannot happen today: deployments are never deleted).
    Gone,
    /// The target version's model was deleted (`models::delete`).
    ModelGone,
}

/// Roll `seq` back to version `to` (default: the version before the
/// current one) by appending a new version serving that version's model.
pub(crate) async fn rollback(
    db: &super::Db,
    seq: i64,
    to: Option<i64>,
    by: &str,
) -> Result<Rollback, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        // PostgreSQL: the deployment's row stays locked until the new
        // version is written (a concurrent move waits, then numbers after it).
        let Some(current): Option<Deployment> = sqlx::query_as(if pg {
            select_deployments!("WHERE seq = $1 FOR UPDATE")
        } else {
            select_deployments!("WHERE seq = $1")
        })
        .bind(seq)
        .fetch_optional(&mut *tx)
        .await?
        else {
            return Ok(Rollback::Gone);
        };
        let target = match to {
            Some(v) => v,
            None if current.version <= 1 => return Ok(Rollback::NoPrevious),
            None => current.version - 1,
        };
        let model: Option<String> = sqlx::query_scalar(
            "SELECT model_id FROM deployment_versions WHERE deployment_seq = $1 AND version = $2",
        )
        .bind(seq)
        .bind(target)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(model) = model else {
            return Ok(Rollback::UnknownVersion);
        };
        if !super::models::alive_in(&mut tx, &model).await? {
            return Ok(Rollback::ModelGone);
        }
        let d = append(&mut tx, seq, current.version + 1, &model, by, Some(target)).await?;
        tx.commit().await?;
        Ok(Rollback::Done(d))
    })
}

/// The deployment a path's `name` means to `caller_id`:
/// - `key_id:name` is that key's deployment `name`;
/// - a plain `name` is the caller's own deployment of that name if it has
///   one, else the first deployment ever created with that name (so a later
///   owner choosing the same name cannot take over the traffic of keys that
///   use the plain name).
pub(crate) async fn resolve(
    db: &super::Db,
    name: &str,
    caller_id: &str,
) -> Result<Option<Deployment>, StoreError> {
    super::with_db!(db, |pool, pg| {
        if let Some((owner, plain)) = name.split_once(':') {
            return Ok(
                sqlx::query_as(select_deployments!("WHERE created_by = $1 AND name = $2"))
                    .bind(owner)
                    .bind(plain)
                    .fetch_optional(pool)
                    .await?,
            );
        }
        Ok(sqlx::query_as(select_deployments!(
            "WHERE name = $1 ORDER BY created_by = $2 DESC, seq LIMIT 1"
        ))
        .bind(name)
        .bind(caller_id)
        .fetch_optional(pool)
        .await?)
    })
}

/// One version of a deployment.
pub(crate) async fn version(
    db: &super::Db,
    seq: i64,
    version: i64,
) -> Result<Option<DeploymentVersion>, StoreError> {
    super::with_db!(db, |pool, pg| {
        Ok(sqlx::query_as(
        "SELECT version, model_id, moved_by, created_at, rollback_of FROM deployment_versions WHERE deployment_seq = $1 AND version = $2",
    )
    .bind(seq)
    .bind(version)
    .fetch_optional(pool)
    .await?)
    })
}

/// The latest version of deployment `seq` that served `model_id`, if any.
pub(crate) async fn latest_serving(
    db: &super::Db,
    seq: i64,
    model_id: &str,
) -> Result<Option<i64>, StoreError> {
    super::with_db!(db, |pool, pg| {
        Ok(sqlx::query_scalar::<_, Option<i64>>(
        "SELECT MAX(version) FROM deployment_versions WHERE deployment_seq = $1 AND model_id = $2",
    )
    .bind(seq)
    .bind(model_id)
    .fetch_one(pool)
    .await?)
    })
}

/// A page of a deployment's history, oldest first (`after` is a version).
pub(crate) async fn history(
    db: &super::Db,
    seq: i64,
    after: i64,
    page_size: u32,
) -> Result<Page<DeploymentVersion>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let rows: Vec<DeploymentVersion> = sqlx::query_as(
        "SELECT version, model_id, moved_by, created_at, rollback_of FROM deployment_versions WHERE deployment_seq = $1 AND version > $2 ORDER BY version LIMIT $3",
    )
    .bind(seq)
    .bind(after)
    .bind(i64::from(page_size) + 1)
    .fetch_all(pool)
    .await?;
        Ok(Page::from_rows(
            rows.into_iter().map(|v| (v.version, v)).collect(),
            page_size,
        ))
    })
}

/// A page of deployments.
pub(crate) async fn list(
    db: &super::Db,
    after: i64,
    page_size: u32,
) -> Result<Page<Deployment>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let rows: Vec<Deployment> =
            sqlx::query_as(select_deployments!("WHERE seq > $1 ORDER BY seq LIMIT $2"))
                .bind(after)
                .bind(i64::from(page_size) + 1)
                .fetch_all(pool)
                .await?;
        Ok(Page::from_rows(
            rows.into_iter().map(|d| (d.seq, d)).collect(),
            page_size,
        ))
    })
}

#[cfg(test)]
mod tests {
    use sqlx::sqlite::SqlitePoolOptions;

    /// Migration 0004 on a database with a deployment made before it: the
    /// deployment keeps its seq, name and model, becomes version 1 of itself,
    /// and another key may now use the same name.
    #[tokio::test]
    async fn migration_makes_each_old_deployment_its_own_version_1() {
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect("sqlite::memory:")
            .await
            .unwrap();
        for sql in [
            include_str!("../../migrations/0001_init.sql"),
            include_str!("../../migrations/0002_job_lease.sql"),
            include_str!("../../migrations/0003_model_versions.sql"),
            "INSERT INTO api_keys (id, role, name, key_hash, created_at) VALUES ('key_a', 'owner', 'a', 'ha', 't'), ('key_b', 'owner', 'b', 'hb', 't');
             INSERT INTO datasets (id, owner_id, name, schema_json, n_rows, n_literals, state, created_at) VALUES ('ds', 'key_a', 'd', '{}', 1, 1, 'ready', 't');
             INSERT INTO jobs (id, dataset_id, submitted_by, state, params_json, tau, epsilon, delta, created_at) VALUES ('job', 'ds', 'key_a', 'succeeded', '{}', 1, 1, 0, 't');
             INSERT INTO models (id, job_id, dataset_id, model_json, created_at) VALUES ('m', 'job', 'ds', '{}', 't');
             INSERT INTO deployments (seq, name, model_id, created_by, updated_at) VALUES (7, 'prod', 'm', 'key_a', '2026-01-01T00:00:00Z');",
            include_str!("../../migrations/0004_deployment_versions.sql"),
            // Today's `put` checks the model is not deleted (its column
            // comes with 0011, independent of 0005 to 0010).
            include_str!("../../migrations/0011_model_deletion.sql"),
        ] {
            sqlx::raw_sql(sql).execute(&pool).await.unwrap();
        }
        let db = crate::store::Db::Sqlite(pool.clone());
        let d = super::resolve(&db, "prod", "key_b").await.unwrap().unwrap();
        assert_eq!((d.seq, d.version, d.model_id.as_str()), (7, 1, "m"));
        assert_eq!(d.created_at, "2026-01-01T00:00:00Z");
        let v = super::version(&db, 7, 1).await.unwrap().unwrap();
        assert_eq!((v.model_id.as_str(), v.moved_by.as_str()), ("m", "key_a"));
        // Another key's `prod` is a new deployment; the plain name still
        // means the first one to everyone but its creator.
        let super::Put::Created(b) = super::put(&db, "key_b", "prod", "m").await.unwrap() else {
            panic!("expected a new deployment");
        };
        assert!(b.seq > 7);
        let seen = super::resolve(&db, "prod", "key_x").await.unwrap().unwrap();
        assert_eq!(seen.seq, 7);
        let own = super::resolve(&db, "prod", "key_b").await.unwrap().unwrap();
        assert_eq!(own.seq, b.seq);
        // The history is append-only.
        assert!(
            sqlx::query("DELETE FROM deployment_versions")
                .execute(&pool)
                .await
                .is_err()
        );
    }
}
