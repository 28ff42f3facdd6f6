//! Test support: a fresh store on each backend. PostgreSQL tests run when
//! `PRIVBOOST_TEST_POSTGRES_URL` names a server (CI starts a throwaway one,
//! `.ci/postgres`); without it they print a notice and pass, so the README's
//! `cargo test` needs no PostgreSQL.

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};

use super::{Db, migrate_postgres};

/// The environment variable that enables the PostgreSQL tests.
pub(crate) const POSTGRES_ENV: &str = "PRIVBOOST_TEST_POSTGRES_URL";

/// A store in a new, empty PostgreSQL database (migrated), or `None` with a
/// printed notice when no server is configured.
pub(crate) async fn fresh_postgres(test: &str, max_connections: u32) -> Option<Db> {
    let pool = empty_postgres(test, max_connections).await?;
    migrate_postgres(&pool).await.expect("migrations apply");
    Some(Db::Postgres(pool))
}

/// A new PostgreSQL database with no tables (for migration tests), or
/// `None` with a printed notice when no server is configured.
pub(crate) async fn empty_postgres(test: &str, max_connections: u32) -> Option<sqlx::PgPool> {
    let url = match std::env::var(POSTGRES_ENV) {
        Ok(url) if !url.is_empty() => url,
        _ => {
            eprintln!("notice: {test} skipped on PostgreSQL ({POSTGRES_ENV} is not set)");
            return None;
        }
    };
    let base: PgConnectOptions = url.parse().expect("PRIVBOOST_TEST_POSTGRES_URL parses");
    let name = format!("privboost_test_{}", uuid::Uuid::new_v4().simple());
    let mut admin = PgConnection::connect_with(&base)
        .await
        .expect("connect to PRIVBOOST_TEST_POSTGRES_URL");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .expect("create a test database");
    admin.close().await.ok();
    Some(
        PgPoolOptions::new()
            .max_connections(max_connections)
            .connect_with(base.database(&name))
            .await
            .expect("connect to the test database"),
    )
}

/// A store in an SQLite file in `dir`.
pub(crate) async fn fresh_sqlite(dir: &std::path::Path, max_connections: u32) -> Db {
    Db::Sqlite(
        super::open(&dir.join("t.db"), max_connections)
            .await
            .expect("open SQLite"),
    )
}

/// An SQLite store in `dir/old.db` migrated only up to `version` (for
/// migration tests), opened as the store opens it (foreign keys on).
pub(crate) async fn sqlite_at(dir: &std::path::Path, version: i64) -> sqlx::SqlitePool {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.join("old.db"))
        .create_if_missing(true)
        .foreign_keys(true);
    let pool = sqlx::sqlite::SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .unwrap();
    sqlx::migrate!("./migrations")
        .run_to(version, &pool)
        .await
        .unwrap();
    pool
}

/// Run `check` on a fresh SQLite store and then, when one is configured, on
/// a fresh PostgreSQL store (`test` names it in the notice otherwise).
pub(crate) async fn on_each_backend<F, Fut>(test: &str, check: F)
where
    F: Fn(Db) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    check(fresh_sqlite(dir.path(), 4).await).await;
    if let Some(db) = fresh_postgres(test, 4).await {
        check(db).await;
    }
}
