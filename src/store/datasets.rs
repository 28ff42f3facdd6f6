//! Datasets: public metadata (schema, row count), the encoded private rows,
//! and the analysts an owner granted access to.

use serde::Serialize;

use super::encoded::{self, Decoder, PARTS};
use super::idempotency::{self, IdemRequest, Lookup, StoredResponse};
use super::jobs::ClaimedJob;
use super::ledger::{self, Amount};
use super::{Page, StoreError, new_id, now};
use crate::data::Dataset;
use crate::local_dp::LocalDp;
use crate::privacy::filter::Accounting;

/// A dataset's public record. Never contains rows.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetInfo {
    /// Id.
    pub id: String,
    /// The owner's key id.
    pub owner_id: String,
    /// A label.
    pub name: String,
    /// The owner's schema (public).
    pub schema: serde_json::Value,
    /// Rows stored (public under substitution neighbours).
    pub n_rows: i64,
    /// Literals of the encoding.
    pub n_literals: i64,
    /// `ready` or `deleted` (a tombstone: rows purged, ledger kept).
    pub state: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, when deleted.
    pub deleted_at: Option<String>,
    /// Whether the owner declared the rows public test data: evaluations
    /// on it are exact and uncharged, and the rows have no privacy
    /// guarantee (docs/privacy.md, "Public test data").
    pub public_test_data: bool,
    /// RFC 3339, when the owner declared it public test data.
    pub public_test_data_at: Option<String>,
    /// How the ledger composes the jobs' charges (`basic` or `zcdp-filter`).
    pub accounting: String,
    /// The owner's declaration that the rows were randomized on the client
    /// (`privboost randomize`): the local epsilons. `null` for raw rows.
    pub local_dp: Option<LocalDp>,
    /// The neighbouring relation, fixed for the dataset's life: the privacy
    /// unit's column and bound (`null` and 1: one row is the unit).
    pub unit_column: Option<String>,
    /// The public bound on rows per unit (1 without a unit).
    pub unit_max_rows: i64,
}

#[derive(sqlx::FromRow)]
struct DatasetRow {
    seq: i64,
    id: String,
    owner_id: String,
    name: String,
    schema_json: String,
    n_rows: i64,
    n_literals: i64,
    state: String,
    created_at: String,
    deleted_at: Option<String>,
    public_test_data_at: Option<String>,
    accounting: String,
    local_dp_json: Option<String>,
    unit_column: Option<String>,
    unit_max_rows: i64,
}

impl DatasetRow {
    fn into_domain(self) -> Result<(i64, DatasetInfo), StoreError> {
        let schema = serde_json::from_str(&self.schema_json)
            .map_err(|e| StoreError::Corrupt(format!("schema: {e}")))?;
        let local_dp = self
            .local_dp_json
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("local_dp: {e}")))?;
        Ok((
            self.seq,
            DatasetInfo {
                id: self.id,
                owner_id: self.owner_id,
                name: self.name,
                schema,
                n_rows: self.n_rows,
                n_literals: self.n_literals,
                state: self.state,
                created_at: self.created_at,
                deleted_at: self.deleted_at,
                public_test_data: self.public_test_data_at.is_some(),
                public_test_data_at: self.public_test_data_at,
                accounting: self.accounting,
                local_dp,
                unit_column: self.unit_column,
                unit_max_rows: self.unit_max_rows,
            },
        ))
    }
}

/// `SELECT <all dataset columns> FROM datasets d <rest>`, as one literal.
macro_rules! select_datasets {
    ($rest:literal) => {
        concat!(
            "SELECT d.seq, d.id, d.owner_id, d.name, d.schema_json, d.n_rows, d.n_literals, d.state, d.created_at, d.deleted_at, d.public_test_data_at, d.accounting, d.local_dp_json, d.unit_column, d.unit_max_rows FROM datasets d ",
            $rest
        )
    };
}

/// The condition "the caller (bound twice) owns or was granted `d`".
macro_rules! visible_to {
    ($a:literal, $b:literal) => {
        concat!(
            "(d.owner_id = ",
            $a,
            " OR EXISTS (SELECT 1 FROM grants g WHERE g.dataset_id = d.id AND g.key_id = ",
            $b,
            "))"
        )
    };
}

/// A new dataset to store.
pub(crate) struct NewDataset<'a> {
    pub owner_id: &'a str,
    pub name: &'a str,
    pub schema_json: &'a str,
    pub data: &'a Dataset,
    pub rejected_rows: usize,
    pub total: Amount,
    pub accounting: Accounting,
    pub local_dp: Option<LocalDp>,
    /// SHA-256 of the upload's schema and data, hex: a dataset of the same
    /// owner with the same digest makes [`create`] answer
    /// [`Created::Duplicate`] unless `allow_duplicate`.
    pub content_digest: &'a str,
    /// The owner means to store the same content again.
    pub allow_duplicate: bool,
}

/// What [`create`] did.
pub(crate) enum Created {
    /// Stored; the response was recorded under the idempotency key, if any.
    New(Box<DatasetInfo>),
    /// A retry: replay this.
    Replay(StoredResponse),
    /// The idempotency key was used for another request.
    Mismatch,
    /// Nothing stored: the owner already has a dataset (not deleted) with
    /// the same content, this one (id, name).
    Duplicate { id: String, name: String },
}

/// Store a dataset, its rows and its initial total in one transaction.
/// `respond` builds the response to record under the idempotency key.
pub(crate) async fn create(
    db: &super::Db,
    new: NewDataset<'_>,
    idem: Option<&IdemRequest>,
    respond: impl FnOnce(&DatasetInfo) -> StoredResponse,
) -> Result<Created, StoreError> {
    super::with_db!(db, |pool, pg| {
        let (n_rows, n_cols) = (new.data.n_rows(), new.data.features.n_cols());
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        if let Some(req) = idem {
            match idempotency::lookup(&mut tx, req).await? {
                Lookup::New => {}
                Lookup::Replay(r) => return Ok(Created::Replay(r)),
                Lookup::Mismatch => return Ok(Created::Mismatch),
            }
        }
        // Checked inside the write transaction (SQLite's is exclusive), after
        // the idempotency lookup so that a retry still gets its replay.
        if !new.allow_duplicate {
            let first: Option<(String, String)> = sqlx::query_as(
                "SELECT id, name FROM datasets WHERE owner_id = $1 AND content_digest = $2 AND deleted_at IS NULL ORDER BY created_at LIMIT 1",
            )
            .bind(new.owner_id)
            .bind(new.content_digest)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some((id, name)) = first {
                return Ok(Created::Duplicate { id, name });
            }
        }
        let id = new_id("ds");
        // The neighbouring relation, from the schema the rows were bounded
        // with; recorded once, never updated.
        // (Only that field is read: the API checked the whole schema.)
        let unit: Option<crate::data::PrivacyUnitSpec> =
            serde_json::from_str::<serde_json::Value>(new.schema_json)
                .ok()
                .and_then(|v| v.get("privacy_unit").cloned())
                .map(serde_json::from_value)
                .transpose()
                .map_err(|e| StoreError::Corrupt(format!("privacy_unit: {e}")))?;
        sqlx::query(
        "INSERT INTO datasets (id, owner_id, name, schema_json, n_rows, n_literals, rejected_rows, state, created_at, accounting, local_dp_json, content_digest, unit_column, unit_max_rows) VALUES ($1, $2, $3, $4, $5, $6, $7, 'ready', $8, $9, $10, $11, $12, $13)",
    )
    .bind(&id)
    .bind(new.owner_id)
    .bind(new.name)
    .bind(new.schema_json)
    .bind(n_rows as i64)
    .bind(n_cols as i64)
    .bind(new.rejected_rows as i64)
    .bind(now())
    .bind(new.accounting.as_str())
    .bind(
        new.local_dp
            .map(|l| serde_json::to_string(&l))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("local_dp: {e}")))?,
    )
    .bind(new.content_digest)
    .bind(unit.as_ref().map(|u| u.column.clone()))
    .bind(unit.as_ref().map_or(1, |u| i64::from(u.max_rows)))
    .execute(&mut *tx)
    .await?;
        // A header row, then the bytes one chunk at a time, each made from
        // the matrix just before it is written and moved into its statement:
        // the upload never holds a second copy of the rows (issue 13;
        // `encoded` says why chunks).
        sqlx::query("INSERT INTO dataset_rows (dataset_id, n_rows, n_cols) VALUES ($1, $2, $3)")
            .bind(&id)
            .bind(n_rows as i64)
            .bind(n_cols as i64)
            .execute(&mut *tx)
            .await?;
        for part in PARTS {
            let mut idx = 0;
            while let Some(bytes) = encoded::chunk(new.data, part, idx)? {
                sqlx::query("INSERT INTO dataset_row_chunks (dataset_id, part, idx, bytes) VALUES ($1, $2, $3, $4)")
                    .bind(&id)
                    .bind(part.as_str())
                    .bind(idx as i64)
                    .bind(bytes)
                    .execute(&mut *tx)
                    .await?;
                idx += 1;
            }
        }
        ledger::append_total(&mut tx, &id, new.total, new.owner_id).await?;
        let row: DatasetRow = sqlx::query_as(select_datasets!("WHERE d.id = $1"))
            .bind(&id)
            .fetch_one(&mut *tx)
            .await?;
        let (_, info) = row.into_domain()?;
        if let Some(req) = idem {
            idempotency::record(&mut tx, req, &respond(&info)).await?;
        }
        tx.commit().await?;
        Ok(Created::New(Box::new(info)))
    })
}

/// The dataset if the caller owns it or was granted it; `None` otherwise
/// (the API answers 404 either way, SPEC §6).
pub(crate) async fn get_visible(
    db: &super::Db,
    id: &str,
    caller_id: &str,
) -> Result<Option<DatasetInfo>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let row: Option<DatasetRow> = sqlx::query_as(concat!(
            select_datasets!("WHERE d.id = $1 AND "),
            visible_to!("$2", "$3")
        ))
        .bind(id)
        .bind(caller_id)
        .bind(caller_id)
        .fetch_optional(pool)
        .await?;
        row.map(|r| r.into_domain().map(|(_, d)| d)).transpose()
    })
}

/// What [`mark_public_test_data`] did.
pub(crate) enum MarkPublic {
    /// Marked now, or already marked (idempotent): the dataset as it is.
    Marked(Box<DatasetInfo>),
    /// No such dataset owned by the caller.
    NotOwned,
    /// The dataset was deleted.
    Deleted,
}

/// Declare `id` public test data, if `owner_id` owns it and it is not
/// deleted. One-way: the time of the first declaration stays.
pub(crate) async fn mark_public_test_data(
    db: &super::Db,
    id: &str,
    owner_id: &str,
) -> Result<MarkPublic, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        let row: Option<DatasetRow> =
            sqlx::query_as(select_datasets!("WHERE d.id = $1 AND d.owner_id = $2"))
                .bind(id)
                .bind(owner_id)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(row) = row else {
            return Ok(MarkPublic::NotOwned);
        };
        if row.state != "ready" {
            return Ok(MarkPublic::Deleted);
        }
        sqlx::query(
        "UPDATE datasets SET public_test_data_at = $1 WHERE id = $2 AND public_test_data_at IS NULL",
    )
    .bind(now())
    .bind(id)
    .execute(&mut *tx)
    .await?;
        let row: DatasetRow = sqlx::query_as(select_datasets!("WHERE d.id = $1"))
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(MarkPublic::Marked(Box::new(row.into_domain()?.1)))
    })
}

/// A page of the datasets the caller owns or was granted.
pub(crate) async fn list_visible(
    db: &super::Db,
    caller_id: &str,
    after: i64,
    page_size: u32,
) -> Result<Page<DatasetInfo>, StoreError> {
    super::visible_page(
        db,
        concat!(
            select_datasets!("WHERE d.seq > $1 AND "),
            visible_to!("$2", "$3"),
            " ORDER BY d.seq LIMIT $4"
        ),
        caller_id,
        after,
        page_size,
        DatasetRow::into_domain,
    )
    .await
}

/// Delete a dataset: purge its rows, keep the record and the ledger as a
/// tombstone, cancel (and refund) its queued jobs that never started, and
/// ask its running jobs to stop. Returns the ids of the jobs asked to stop.
pub(crate) async fn delete(db: &super::Db, id: &str, by: &str) -> Result<Vec<String>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let mut tx = pool.begin_with(super::db::begin_write(pg)).await?;
        super::db::lock_dataset(&mut tx, id).await?;
        for table in ["dataset_row_chunks", "dataset_rows"] {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DELETE FROM {table} WHERE dataset_id = $1"
            )))
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        sqlx::query(
        "UPDATE datasets SET state = 'deleted', deleted_at = $1 WHERE id = $2 AND state <> 'deleted'",
    )
    .bind(now())
    .bind(id)
    .execute(&mut *tx)
    .await?;
        // On PostgreSQL the rows are locked, so a worker's claim or a
        // cancel of one of them either went first (and the row no longer
        // matches once its lock is released) or waits for this delete.
        let refundable: Vec<(String,)> = sqlx::query_as(if pg {
            "SELECT id FROM jobs WHERE dataset_id = $1 AND state = 'queued' AND started_at IS NULL ORDER BY seq FOR UPDATE"
        } else {
            "SELECT id FROM jobs WHERE dataset_id = $1 AND state = 'queued' AND started_at IS NULL ORDER BY seq"
        })
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
        for (job_id,) in refundable {
            sqlx::query("UPDATE jobs SET state = 'cancelled', finished_at = $1, error = 'the dataset was deleted' WHERE id = $2")
            .bind(now())
            .bind(&job_id)
            .execute(&mut *tx)
            .await?;
            ledger::append_refund(&mut tx, id, &job_id, Some(by)).await?;
        }
        let stopping: Vec<(String,)> = sqlx::query_as(
        "UPDATE jobs SET cancel_requested = 1 WHERE dataset_id = $1 AND state IN ('queued', 'running') RETURNING id",
    )
    .bind(id)
    .fetch_all(&mut *tx)
    .await?;
        tx.commit().await?;
        Ok(stopping.into_iter().map(|(j,)| j).collect())
    })
}

/// Grant an analyst key access; false if the key is not an active analyst.
pub(crate) async fn grant(
    db: &super::Db,
    dataset_id: &str,
    key_id: &str,
) -> Result<bool, StoreError> {
    super::with_db!(db, |pool, pg| {
        let done = sqlx::query(
        if pg {
            "INSERT INTO grants (dataset_id, key_id, created_at) SELECT $1, id, $2 FROM api_keys WHERE id = $3 AND role = 'analyst' AND revoked_at IS NULL ON CONFLICT DO NOTHING"
        } else {
            "INSERT OR IGNORE INTO grants (dataset_id, key_id, created_at) SELECT $1, id, $2 FROM api_keys WHERE id = $3 AND role = 'analyst' AND revoked_at IS NULL"
        },
    )
    .bind(dataset_id)
    .bind(now())
    .bind(key_id)
    .execute(pool)
    .await?;
        if done.rows_affected() == 1 {
            return Ok(true);
        }
        // Already granted counts as success (PUT is idempotent).
        let n: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM grants WHERE dataset_id = $1 AND key_id = $2")
                .bind(dataset_id)
                .bind(key_id)
                .fetch_one(pool)
                .await?;
        Ok(n == 1)
    })
}

/// Remove a grant; false if there was none.
pub(crate) async fn revoke_grant(
    db: &super::Db,
    dataset_id: &str,
    key_id: &str,
) -> Result<bool, StoreError> {
    super::with_db!(db, |pool, pg| {
        let done = sqlx::query("DELETE FROM grants WHERE dataset_id = $1 AND key_id = $2")
            .bind(dataset_id)
            .bind(key_id)
            .execute(pool)
            .await?;
        Ok(done.rows_affected() == 1)
    })
}

/// The analyst key ids granted access.
pub(crate) async fn grants(db: &super::Db, dataset_id: &str) -> Result<Vec<String>, StoreError> {
    super::with_db!(db, |pool, pg| {
        let rows: Vec<(String,)> = sqlx::query_as(
            "SELECT key_id FROM grants WHERE dataset_id = $1 ORDER BY created_at, key_id",
        )
        .bind(dataset_id)
        .fetch_all(pool)
        .await?;
        Ok(rows.into_iter().map(|(k,)| k).collect())
    })
}

/// The training rows of a claimed job's dataset, with its schema JSON.
/// Only a [`ClaimedJob`] (whose charge was admitted) opens rows. `None` when
/// the rows were deleted.
pub(crate) async fn load_rows(
    db: &super::Db,
    job: &ClaimedJob,
) -> Result<Option<(String, Dataset)>, StoreError> {
    rows_of(db, &job.dataset_id).await
}

/// The rows of a dataset. Private to the store: callers outside it hold a
/// proof that a charge was admitted ([`ClaimedJob`], or an admitted
/// evaluation in `super::evaluations`).
pub(super) async fn rows_of(
    db: &super::Db,
    dataset_id: &str,
) -> Result<Option<(String, Dataset)>, StoreError> {
    let Some((schema_json, rows)) = stored_rows(db, dataset_id).await? else {
        return Ok(None);
    };
    let schema = crate::data::Schema::from_json(&schema_json)
        .map_err(|e| StoreError::Corrupt(format!("stored schema: {e}")))?;
    let layout = super::encoded::LabelLayout::of(schema.task());
    Ok(Some((schema_json, rows.finish_with(layout)?)))
}

/// A dataset's schema JSON and its stored chunks, read into a [`Decoder`]
/// as they arrive. One statement, so the header and every chunk come from
/// one snapshot on both backends (a concurrent delete is seen whole or not
/// at all).
pub(super) async fn stored_rows(
    db: &super::Db,
    dataset_id: &str,
) -> Result<Option<(String, Decoder)>, StoreError> {
    use futures_util::TryStreamExt;
    type Row = (
        String,
        i64,
        i64,
        Option<String>,
        Option<i64>,
        Option<Vec<u8>>,
    );
    super::with_db!(db, |pool, pg| {
        let mut chunks = sqlx::query_as::<_, Row>(
            "SELECT d.schema_json, r.n_rows, r.n_cols, c.part, c.idx, c.bytes \
             FROM dataset_rows r JOIN datasets d ON d.id = r.dataset_id \
             LEFT JOIN dataset_row_chunks c ON c.dataset_id = r.dataset_id \
             WHERE r.dataset_id = $1 ORDER BY c.part, c.idx",
        )
        .bind(dataset_id)
        .fetch(pool);
        let mut read: Option<(String, Decoder)> = None;
        while let Some((schema_json, n_rows, n_cols, part, idx, bytes)) = chunks.try_next().await? {
            let (_, decoder) = match &mut read {
                Some(r) => r,
                None => read.insert((schema_json, Decoder::new(n_rows, n_cols)?)),
            };
            if let (Some(part), Some(idx), Some(bytes)) = (part, idx, bytes) {
                decoder.push(&part, idx, &bytes)?;
            }
        }
        Ok(read)
    })
}
