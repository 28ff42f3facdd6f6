//! Store: everything the service keeps, in one SQLite file (SPEC §6) or,
//! for several replicas, in one PostgreSQL database ([`Db`]).
//!
//! On the data path this sits between the library (which knows no SQL) and
//! the API (which knows no SQL either): datasets and their encoded rows, the
//! privacy ledger, jobs, models, deployments, API keys and idempotency
//! records. Functions take a `&Db` for one statement, or open their own
//! transaction when they read, check and write; the ledger admission runs in
//! a `BEGIN IMMEDIATE` transaction on SQLite, and on PostgreSQL in a
//! transaction that first locks the dataset's row (`db::lock_dataset`), so
//! that concurrent requests, even from several server processes, can never
//! overspend (SPEC §2).

pub(crate) mod datasets;
pub mod db;
pub(crate) mod deployments;
pub(crate) mod encoded;
pub(crate) mod evaluations;
pub(crate) mod idempotency;
pub(crate) mod jobs;
pub(crate) mod keys;
pub(crate) mod ledger;
#[cfg(test)]
mod migration_0010_tests;
#[cfg(test)]
mod migration_tests;
pub(crate) mod models;
#[cfg(test)]
mod pg_tests;
#[cfg(test)]
pub(crate) mod testing;

use std::path::Path;
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

pub use db::Db;
pub(crate) use db::{with_conn, with_db};

/// How long a connection waits for another writer (possibly another
/// process) before giving up with "database is locked". Admission
/// transactions are short, so a few seconds covers heavy contention.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Errors of the store. The API maps them to responses; the variants that
/// carry `sqlx` errors become a generic 500 whose cause is only logged.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A database error.
    #[error("database: {0}")]
    Sqlx(#[from] sqlx::Error),
    /// A migration failed at start.
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A stored value could not be decoded (a bug or a corrupted file).
    #[error("corrupt stored value: {0}")]
    Corrupt(String),
    /// The database URL is not one the store can open.
    #[error("{0}")]
    BadUrl(String),
    /// The database server could not be reached or refused the login.
    #[error("{0}")]
    Connect(String),
}

impl StoreError {
    /// Whether the error says the database is unreachable or overloaded
    /// for now (a restart, a stall, a full pool, a busy SQLite file), not
    /// that the request or the stored data is wrong: the same statement may
    /// succeed later. The API answers these with 503 and `Retry-After`; a
    /// worker retries saving a trained model on them.
    pub fn is_transient(&self) -> bool {
        let StoreError::Sqlx(e) = self else {
            return false;
        };
        match e {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => true,
            sqlx::Error::Database(db) => db.code().is_some_and(|code| transient_code(&code)),
            _ => false,
        }
    }
}

/// Database error codes that mean "not now" rather than "never":
/// PostgreSQL's SQLSTATE class 08 (connection exception), 57P01-57P03
/// (administrator shutdown, crash shutdown, cannot connect now), 53300 (too
/// many connections), 40001 and 40P01 (serialization failure, deadlock:
/// the transaction was rolled back and may be retried); SQLite's primary
/// codes 5 and 6 (`SQLITE_BUSY`, `SQLITE_LOCKED`, with extended codes).
fn transient_code(code: &str) -> bool {
    if code.starts_with("08")
        || ["57P01", "57P02", "57P03", "53300", "40001", "40P01"].contains(&code)
    {
        return true;
    }
    // SQLite reports its (extended) result code as a decimal number; the
    // primary code is its low byte.
    code.parse::<u32>().is_ok_and(|c| matches!(c & 0xff, 5 | 6))
}

/// Where the store lives.
#[derive(Debug, Clone)]
pub enum Location {
    /// An SQLite file (the embedded default).
    SqliteFile(std::path::PathBuf),
    /// A PostgreSQL URL (`postgres://user:password@host:port/database`, or
    /// `postgres:///database?host=/socket/dir`).
    Postgres(String),
}

impl Location {
    /// Parse a `--database-url`: only `postgres://` and `postgresql://`
    /// (SQLite is chosen with `--data-dir`).
    pub fn from_url(url: &str) -> Result<Location, StoreError> {
        let scheme = url.split_once("://").map(|(s, _)| s);
        match scheme {
            Some("postgres" | "postgresql") => {
                url.parse::<PgConnectOptions>().map_err(|e| {
                    StoreError::BadUrl(format!("--database-url is not a valid PostgreSQL URL: {e}"))
                })?;
                Ok(Location::Postgres(url.to_owned()))
            }
            _ => Err(StoreError::BadUrl(
                "--database-url must start with postgres:// or postgresql:// (SQLite is the default: use --data-dir)".into(),
            )),
        }
    }
}

/// A PostgreSQL URL as logs may show it: user, host, port and database,
/// never the password.
pub fn describe_url(url: &str) -> String {
    match url.parse::<PgConnectOptions>() {
        Ok(o) => format!(
            "postgres://{}@{}:{}/{}",
            o.get_username(),
            o.get_host(),
            o.get_port(),
            o.get_database().unwrap_or("")
        ),
        Err(_) => "an invalid PostgreSQL URL".into(),
    }
}

/// How long a new PostgreSQL connection may take before the store gives up
/// (a wrong host should fail the start quickly, with the cause).
const PG_CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Open the store at `location` and apply its backend's migrations.
pub async fn connect(location: &Location, max_connections: u32) -> Result<Db, StoreError> {
    match location {
        Location::SqliteFile(path) => Ok(Db::Sqlite(open(path, max_connections).await?)),
        Location::Postgres(url) => {
            let options: PgConnectOptions = url.parse()?;
            // One connection first: the pool would report a refused
            // connection or a wrong password only as a timeout.
            let first =
                tokio::time::timeout(PG_CONNECT_TIMEOUT, PgConnection::connect_with(&options))
                    .await
                    .map_err(|_| {
                        StoreError::Connect(format!(
                            "cannot connect to {}: no answer within {} s",
                            describe_url(url),
                            PG_CONNECT_TIMEOUT.as_secs()
                        ))
                    })?
                    .map_err(|e| {
                        StoreError::Connect(format!("cannot connect to {}: {e}", describe_url(url)))
                    })?;
            first.close().await.ok();
            let pool = PgPoolOptions::new()
                .max_connections(max_connections)
                .acquire_timeout(PG_CONNECT_TIMEOUT)
                .connect_with(options)
                .await?;
            migrate_postgres(&pool).await?;
            Ok(Db::Postgres(pool))
        }
    }
}

/// Apply the PostgreSQL migrations (`migrations/postgres`, kept in step with
/// the SQLite ones). Replicas starting together serialise on sqlx's
/// migration lock (an advisory lock), so each version is applied once.
pub async fn migrate_postgres(pool: &sqlx::PgPool) -> Result<(), StoreError> {
    sqlx::migrate!("./migrations/postgres").run(pool).await?;
    Ok(())
}

/// Open (creating if needed) the SQLite file at `path` in WAL mode and apply
/// the embedded migrations.
pub async fn open(path: &Path, max_connections: u32) -> Result<sqlx::SqlitePool, StoreError> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // FULL: every commit (a ledger admission above all) is on disk
        // before the response says it happened, even across a power loss.
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(BUSY_TIMEOUT);
    let pool = SqlitePoolOptions::new()
        .max_connections(max_connections)
        .connect_with(options)
        .await?;
    sqlx::migrate!("./migrations").run(&pool).await?;
    Ok(pool)
}

/// Check the database answers.
pub(crate) async fn ping(db: &Db) -> Result<(), StoreError> {
    with_db!(db, |pool, pg| {
        sqlx::query("SELECT 1").execute(pool).await?;
    });
    Ok(())
}

/// How long a readiness check waits for the database: load balancers' health
/// checks time out after 1 to 5 s, and a database that has not answered a
/// `SELECT 1` in a second is not ready to serve (the pool's own wait is 15 s).
pub(crate) const READY_WITHIN: Duration = Duration::from_secs(1);

/// Whether the database answers within `limit` (`/readyz`, OIP's ready).
pub(crate) async fn ready_within(db: &Db, limit: Duration) -> bool {
    matches!(tokio::time::timeout(limit, ping(db)).await, Ok(Ok(())))
}

/// The current time as RFC 3339 (UTC).
pub(crate) fn now() -> String {
    // Invariant: formatting an OffsetDateTime as RFC 3339 fails only for years
    // outside 0..=9999, which the system clock does not produce.
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .expect("the current time formats as RFC 3339")
}

/// A new random identifier with a readable prefix, e.g. `ds_...`.
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// One page of a list, in stable `seq` order.
#[derive(Debug)]
pub(crate) struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// The `seq` of the last item when more may follow.
    pub next_after: Option<i64>,
}

/// A page of the items a caller can see, for the list queries of datasets,
/// jobs and models: `sql` binds `$1` (the cursor: rows with `seq` after
/// it), `$2` and `$3` (the caller's key id, twice: owner or grantee) and
/// `$4` (the limit), and orders by `seq`; `into_item` maps a row to its
/// `seq` and item.
pub(crate) async fn visible_page<R, T>(
    db: &Db,
    sql: &'static str,
    caller_id: &str,
    after: i64,
    page_size: u32,
    into_item: impl Fn(R) -> Result<(i64, T), StoreError>,
) -> Result<Page<T>, StoreError>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
        + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
        + Send
        + Unpin,
{
    let rows: Vec<R> = with_db!(db, |pool, pg| {
        sqlx::query_as(sql)
            .bind(after)
            .bind(caller_id)
            .bind(caller_id)
            .bind(i64::from(page_size) + 1)
            .fetch_all(pool)
            .await?
    });
    let rows = rows
        .into_iter()
        .map(into_item)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Page::from_rows(rows, page_size))
}

impl<T> Page<T> {
    /// Build a page from up to `page_size + 1` rows (the extra one tells
    /// whether another page follows).
    pub(crate) fn from_rows(mut rows: Vec<(i64, T)>, page_size: u32) -> Page<T> {
        let more = rows.len() > page_size as usize;
        rows.truncate(page_size as usize);
        let next_after = if more {
            rows.last().map(|(s, _)| *s)
        } else {
            None
        };
        Page {
            items: rows.into_iter().map(|(_, t)| t).collect(),
            next_after,
        }
    }
}

#[cfg(test)]
mod transient_tests {
    use super::*;

    /// A PostgreSQL server that accepts connections and never answers (a
    /// frozen database, `kill -STOP`): readiness says no within its bound,
    /// not after the pool's 15 s.
    #[tokio::test]
    async fn readiness_answers_within_its_bound_when_the_database_is_frozen() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        let options: PgConnectOptions = format!("postgres://u:p@127.0.0.1:{port}/db")
            .parse()
            .unwrap();
        let pool = PgPoolOptions::new()
            .acquire_timeout(PG_CONNECT_TIMEOUT)
            .connect_lazy_with(options);
        let db = Db::Postgres(pool);
        let answer =
            tokio::time::timeout(Duration::from_secs(5), ready_within(&db, READY_WITHIN)).await;
        assert_eq!(answer, Ok(false), "not ready, and said so within 5 s");
        frozen.abort();
    }

    #[test]
    fn connection_trouble_is_transient_and_bad_data_is_not() {
        assert!(StoreError::Sqlx(sqlx::Error::PoolTimedOut).is_transient());
        assert!(StoreError::Sqlx(sqlx::Error::PoolClosed).is_transient());
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        assert!(StoreError::Sqlx(sqlx::Error::Io(io)).is_transient());
        assert!(!StoreError::Sqlx(sqlx::Error::RowNotFound).is_transient());
        assert!(!StoreError::Corrupt("x".into()).is_transient());
        for code in [
            "08006", "08001", "57P01", "57P03", "53300", "40001", "40P01", "5", "517", "6",
        ] {
            assert!(transient_code(code), "{code}");
        }
        // Unique violation, foreign key, syntax; SQLite CONSTRAINT (19) and
        // its extended unique code (2067).
        for code in ["23505", "23503", "42601", "19", "2067", "1"] {
            assert!(!transient_code(code), "{code}");
        }
    }

    /// A real SQLite "database is locked": another connection holds the
    /// write lock past the busy timeout.
    #[tokio::test]
    async fn a_locked_sqlite_file_is_transient() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db");
        let holder = open(&path, 1).await.unwrap();
        let mut tx = holder.begin_with("BEGIN IMMEDIATE").await.unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&mut *tx)
            .await
            .unwrap();
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .busy_timeout(Duration::from_millis(50));
        let mut other = sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap();
        let e = sqlx::query("CREATE TABLE u (x INTEGER)")
            .execute(&mut other)
            .await
            .unwrap_err();
        assert!(StoreError::Sqlx(e).is_transient());
        tx.rollback().await.unwrap();
    }
}
