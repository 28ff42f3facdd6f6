//! PostgreSQL for the integration tests: `PRIVBOOST_TEST_POSTGRES_URL`
//! names a server (CI starts a throwaway cluster, `.ci/postgres`), and each
//! test gets its own new database on it. Without the variable the
//! PostgreSQL tests print a notice and pass, so `cargo test` needs no
//! PostgreSQL. With `PRIVBOOST_TEST_BACKEND=postgres` as well, the
//! in-process [`super::TestServer`] of every HTTP test runs on PostgreSQL.

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

/// The server for PostgreSQL tests, if configured.
pub const URL_ENV: &str = "PRIVBOOST_TEST_POSTGRES_URL";

/// The server URL, or `None` after printing that `test` is skipped.
pub fn server_url(test: &str) -> Option<String> {
    match std::env::var(URL_ENV) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!("notice: {test} skipped: it needs PostgreSQL ({URL_ENV} is not set)");
            None
        }
    }
}

/// Whether the in-process test servers run on PostgreSQL.
pub fn http_tests_on_postgres() -> bool {
    std::env::var("PRIVBOOST_TEST_BACKEND").is_ok_and(|b| b == "postgres")
        && std::env::var(URL_ENV).is_ok_and(|u| !u.is_empty())
}

/// `url` with its database replaced by `name` (query parameters kept).
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let (scheme, rest) = base.split_once("://").expect("a URL with a scheme");
    let authority = rest.split('/').next().unwrap_or("");
    let mut out = format!("{scheme}://{authority}/{name}");
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// Create database `name` on the server at `url` unless it exists; returns
/// its URL.
pub async fn database(url: &str, name: &str) -> String {
    let options: PgConnectOptions = url.parse().expect("the PostgreSQL URL parses");
    let mut admin = PgConnection::connect_with(&options)
        .await
        .expect("connect to PostgreSQL");
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(name)
            .fetch_one(&mut admin)
            .await
            .expect("look up the database");
    if !exists {
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut admin)
            .await
            .expect("create the test database");
    }
    admin.close().await.ok();
    with_database(url, name)
}

/// A new, empty database for one test; its URL.
pub async fn fresh_database(url: &str) -> String {
    let name = format!("privboost_it_{}", uuid::Uuid::new_v4().simple());
    database(url, &name).await
}

/// The database that stands for the SQLite file `path` in a test that
/// restarts a server "on the same file": the same path always maps to the
/// same database.
pub async fn database_for_path(url: &str, path: &std::path::Path) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(path.to_string_lossy().as_bytes());
    let name: String = hash[..10].iter().map(|b| format!("{b:02x}")).collect();
    database(url, &format!("privboost_it_{name}")).await
}

/// The flags that put a `privboost serve` child on the same database as a
/// [`super::TestServer`] started on `path`: none on SQLite (the child's
/// `--data-dir` holds the file), `--database-url` on PostgreSQL.
pub async fn child_args_for_path(path: &std::path::Path) -> Vec<String> {
    if !http_tests_on_postgres() {
        return Vec::new();
    }
    let url = std::env::var(URL_ENV).expect("checked");
    vec!["--database-url".into(), database_for_path(&url, path).await]
}

#[test]
fn database_names_are_replaced_in_urls() {
    assert_eq!(
        with_database("postgres://u:p@h:5432/postgres", "x"),
        "postgres://u:p@h:5432/x"
    );
    assert_eq!(
        with_database("postgres://u@h:1?sslmode=disable", "x"),
        "postgres://u@h:1/x?sslmode=disable"
    );
}
