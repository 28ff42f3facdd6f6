//! The two database backends behind one store: SQLite (embedded, the
//! default: one file under `--data-dir`) and PostgreSQL (`--database-url`:
//! several replicas share one database, one ledger).
//!
//! Why an enum of the two concrete pools rather than sqlx's `Any` driver:
//! `Any` decodes through its own value type (no `time`, no JSON, every value
//! copied), cannot express `BEGIN IMMEDIATE`, and takes SQLite's pragmas
//! (WAL, `synchronous = FULL`, busy timeout) only through a URL, so the
//! embedded default would no longer run exactly as it did. With the enum the
//! SQLite path keeps its typed `SqlitePool` and connect options untouched,
//! and Postgres gets its typed `PgPool`. Each store function is written once:
//! `with_db!` expands its body for each backend (so both are type-checked
//! against their driver), and the SQL text is shared — `$1, $2, ...`
//! placeholders, which both drivers read — except where a backend needs its
//! own statement (row locks, `SKIP LOCKED`, chunked rows), branched on the
//! `pg` flag the macro binds.

use sqlx::{PgConnection, PgPool, Postgres, Sqlite, SqliteConnection, SqlitePool, Transaction};

/// A connection pool on one of the two backends (cheap to clone).
#[derive(Clone, Debug)]
pub enum Db {
    /// The embedded SQLite file.
    Sqlite(SqlitePool),
    /// A shared PostgreSQL database.
    Postgres(PgPool),
}

impl Db {
    /// Whether this is the PostgreSQL backend.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres(_))
    }

    /// The backend's name, for logs and `/health`.
    pub fn backend(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// Close every connection (the pool's own `close`).
    pub async fn close(&self) {
        match self {
            Db::Sqlite(p) => p.close().await,
            Db::Postgres(p) => p.close().await,
        }
    }
}

/// A connection (usually a transaction's) on one of the two backends, for
/// the helpers that run inside a caller's transaction.
pub(crate) enum Conn<'c> {
    /// SQLite.
    Sqlite(&'c mut SqliteConnection),
    /// PostgreSQL.
    Postgres(&'c mut PgConnection),
}

impl<'c> From<&'c mut SqliteConnection> for Conn<'c> {
    fn from(c: &'c mut SqliteConnection) -> Self {
        Conn::Sqlite(c)
    }
}

impl<'c> From<&'c mut PgConnection> for Conn<'c> {
    fn from(c: &'c mut PgConnection) -> Self {
        Conn::Postgres(c)
    }
}

impl<'c> From<&'c mut Transaction<'_, Sqlite>> for Conn<'c> {
    fn from(tx: &'c mut Transaction<'_, Sqlite>) -> Self {
        Conn::Sqlite(tx)
    }
}

impl<'c> From<&'c mut Transaction<'_, Postgres>> for Conn<'c> {
    fn from(tx: &'c mut Transaction<'_, Postgres>) -> Self {
        Conn::Postgres(tx)
    }
}

/// Run `$body` with `$p` bound to the concrete pool (or connection) of
/// `$db` (a `&Db` or a `Conn`) and `$pg` to whether it is PostgreSQL. The
/// body is expanded once per backend, so `return` and `?` work as in the
/// enclosing function.
macro_rules! with_db {
    ($db:expr, |$p:ident, $pg:ident| $body:expr) => {
        match $db {
            $crate::store::Db::Sqlite($p) => {
                #[allow(unused_variables)]
                let $pg = false;
                $body
            }
            $crate::store::Db::Postgres($p) => {
                #[allow(unused_variables)]
                let $pg = true;
                $body
            }
        }
    };
}

/// [`with_db!`] for a [`Conn`].
macro_rules! with_conn {
    ($conn:expr, |$c:ident, $pg:ident| $body:expr) => {
        match $conn {
            $crate::store::db::Conn::Sqlite($c) => {
                #[allow(unused_variables)]
                let $pg = false;
                $body
            }
            $crate::store::db::Conn::Postgres($c) => {
                #[allow(unused_variables)]
                let $pg = true;
                $body
            }
        }
    };
}

pub(crate) use {with_conn, with_db};

/// The statement that opens a read-check-write transaction: on SQLite
/// `BEGIN IMMEDIATE` takes the database's write lock at once, so every such
/// transaction (in any process on the file) runs alone; on PostgreSQL a
/// plain `BEGIN` (read committed), and the transaction then locks the rows
/// it decides on (`SELECT ... FOR UPDATE`, see [`lock_dataset`]), after
/// which each of its statements reads everything committed before the lock.
pub(crate) fn begin_write(pg: bool) -> &'static str {
    if pg { "BEGIN" } else { "BEGIN IMMEDIATE" }
}

/// Lock a dataset's row until the transaction ends (PostgreSQL; a no-op on
/// SQLite, whose `BEGIN IMMEDIATE` already excludes every other writer).
/// `FOR NO KEY UPDATE` is the `FOR UPDATE` lock that does not block the
/// foreign-key checks of other transactions' inserts (a job's model, a
/// refund): two admissions still exclude each other, and a worker finishing
/// a job while the dataset is being deleted cannot deadlock with it.
/// Every transaction that admits a charge to, or changes the total of, a
/// dataset takes this lock first, so admissions to one dataset run one at a
/// time across all replicas, exactly as on SQLite, while admissions to
/// different datasets proceed in parallel. A refund needs no lock: it only
/// lowers what is spent, so an admission that misses a concurrent refund
/// decides on a larger spend than the truth and can only refuse (the
/// cancellation of a queued job refunds under its job row's lock alone,
/// which also avoids a job-then-dataset lock order against the workers).
pub(crate) async fn lock_dataset(
    conn: impl Into<Conn<'_>>,
    dataset_id: &str,
) -> Result<(), sqlx::Error> {
    if let Conn::Postgres(c) = conn.into() {
        sqlx::query("SELECT 1 FROM datasets WHERE id = $1 FOR NO KEY UPDATE")
            .bind(dataset_id)
            .execute(&mut *c)
            .await?;
    }
    Ok(())
}

/// Lock an API key's row until the transaction ends (PostgreSQL; no-op on
/// SQLite): serialises one key's read-check-write sequences that are not
/// tied to one dataset (its deployments, its count of active jobs).
pub(crate) async fn lock_key(conn: impl Into<Conn<'_>>, key_id: &str) -> Result<(), sqlx::Error> {
    if let Conn::Postgres(c) = conn.into() {
        sqlx::query("SELECT 1 FROM api_keys WHERE id = $1 FOR NO KEY UPDATE")
            .bind(key_id)
            .execute(&mut *c)
            .await?;
    }
    Ok(())
}
