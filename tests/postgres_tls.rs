//! TLS to PostgreSQL (issue 29): `serve --database-url
//! 'postgres://...?sslmode=verify-full&sslrootcert=CA'` serves with the
//! root certificate that signed the server's, over TLS, and refuses to
//! start with a wrong one, saying why.
//!
//! Needs the throwaway cluster of `.ci/postgres`, which turns TLS on with a
//! certificate for 127.0.0.1 made at run time and names its CA and a
//! second, unrelated CA in `PRIVBOOST_TEST_POSTGRES_CA` and
//! `PRIVBOOST_TEST_POSTGRES_WRONG_CA`. Without them the tests print a
//! notice and pass.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::process::ChildServer;
use reqwest::StatusCode;
use sqlx::{Connection, PgConnection};

/// The cluster's URL (a fresh database) and the two root certificates.
async fn setup(test: &str) -> Option<(String, String, String)> {
    let server = common::postgres::server_url(test)?;
    let (Ok(ca), Ok(wrong)) = (
        std::env::var("PRIVBOOST_TEST_POSTGRES_CA"),
        std::env::var("PRIVBOOST_TEST_POSTGRES_WRONG_CA"),
    ) else {
        eprintln!("notice: {test} skipped: PRIVBOOST_TEST_POSTGRES_CA is not set (.ci/postgres)");
        return None;
    };
    let db = common::postgres::fresh_database(&server).await;
    Some((db, ca, wrong))
}

/// `url` with verify-full against `root` (the URL has no query yet).
fn verify_full(url: &str, root: &str) -> String {
    assert!(!url.contains('?'), "{url}");
    format!("{url}?sslmode=verify-full&sslrootcert={root}")
}

#[tokio::test]
async fn verify_full_with_the_right_root_certificate_serves_over_tls() {
    let Some((db, ca, _)) = setup("verify_full_with_the_right_root_certificate").await else {
        return;
    };
    let url = verify_full(&db, &ca);
    // The connection sqlx makes with these options is encrypted.
    let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
    let mut conn = PgConnection::connect_with(&options).await.unwrap();
    let ssl: bool = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!(ssl, "the connection is not encrypted");
    conn.close().await.unwrap();
    // The service starts on it and uses it.
    let dir = tempfile::tempdir().unwrap();
    let server = ChildServer::start(
        &dir.path().join("data"),
        &dir.path().join("server.log"),
        &["--database-url", &url],
    );
    let client = reqwest::Client::new();
    let r = client
        .get(format!("{}/readyz", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    common::create_key(&client, &server.url, common::ADMIN_KEY, "owner", "tls").await;
    server.terminate();
}

#[tokio::test]
async fn verify_full_with_a_wrong_root_certificate_is_refused_at_start() {
    let Some((db, _, wrong)) = setup("verify_full_with_a_wrong_root_certificate").await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--admin-key",
            common::ADMIN_KEY,
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--database-url", &verify_full(&db, &wrong)])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the server started (or hung) with a wrong root certificate");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot connect to") && stderr.contains("certificate"),
        "the refusal does not say why: {stderr}"
    );
}
