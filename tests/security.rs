//! Security review checks that need the real binary: no API key and no row
//! value ever reaches the logs (at debug level, every crate), and the CSV
//! reader's error messages name rows and columns, never cell values.

mod common;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::SMALL_SCHEMA;
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

/// A distinctive admin key, given through the environment.
const ADMIN: &str = "pb_admin_SECRET_d0c4f2e1a9b8c7d6e5f4a3b2c1d0e9f8";
/// A numeric cell value that appears in no log line by chance.
const CELL_NUMBER: &str = "13.371337";
/// A categorical cell value outside the schema (a refused row).
const CELL_BAD: &str = "zqxSECRETcellzq";
/// A value sent for prediction.
const PREDICT_NUMBER: &str = "77.123457";
const PREDICT_BAD: &str = "qqPREDICTcellqq";

struct Served {
    child: Child,
    log: std::path::PathBuf,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn serve_with_debug_logs(admin: &str) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let out = std::fs::File::create(&log).unwrap();
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args([
            "serve",
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--workers",
            "1",
        ])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("PRIVBOOST_ADMIN_KEY", admin)
        // Everything at debug: the server's own lines, tower-http, hyper, sqlx.
        .env("RUST_LOG", "debug")
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .spawn()
        .expect("the privboost binary starts");
    let url = format!("http://127.0.0.1:{port}");
    let client = Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(r) = client.get(format!("{url}/healthz")).send().await
            && r.status() == StatusCode::OK
        {
            break;
        }
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Served {
        child,
        log,
        url,
        _dir: dir,
    }
}

async fn upload(
    client: &Client,
    url: &str,
    key: &str,
    csv: String,
    skip: bool,
) -> (StatusCode, Value) {
    let form = reqwest::multipart::Form::new()
        .text("name", "logs")
        .text("epsilon", "10")
        .text("skip_bad_rows", skip.to_string())
        .text("schema", SMALL_SCHEMA)
        .part(
            "data",
            reqwest::multipart::Part::bytes(csv.into_bytes()).file_name("d.csv"),
        );
    let r = client
        .post(format!("{url}/v1/datasets"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    (r.status(), r.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_and_no_row_value_reaches_the_logs_or_the_csv_errors() {
    let s = serve_with_debug_logs(ADMIN).await;
    let c = Client::new();
    let url = &s.url;
    let (_, owner_key) = common::create_key(&c, url, ADMIN, "owner", "logs").await;

    let mut csv = common::small_csv(200);
    csv.push_str(&format!("{CELL_NUMBER},a,1\n"));
    let bad = format!("{csv}5,{CELL_BAD},0\n");
    // Refused upload: the detail names the row and column only.
    let (status, refused) = upload(&c, url, &owner_key, bad.clone(), false).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    // Skipped row: reported by position only.
    let (status, body) = upload(&c, url, &owner_key, bad, true).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["rejected_rows"], 1, "{body}");
    for text in [refused.to_string(), body.to_string()] {
        assert!(
            !text.contains(CELL_BAD),
            "a CSV error echoes a cell: {text}"
        );
        assert!(!text.contains(CELL_NUMBER), "{text}");
    }
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();

    // A bad key (close to a real one) and a missing one.
    let wrong = format!("{owner_key}x");
    let r = c
        .get(format!("{url}/v1/me"))
        .bearer_auth(&wrong)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    // Train, then predict with distinctive values (valid and invalid).
    let job: Value = c
        .post(format!("{url}/v1/jobs"))
        .bearer_auth(&owner_key)
        .json(&json!({"dataset_id": dataset, "epsilon": 1.0, "tau": 3}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let job_id = job["id"].as_str().expect("a job").to_owned();
    let deadline = Instant::now() + common::JOB_DEADLINE;
    let model = loop {
        let j: Value = c
            .get(format!("{url}/v1/jobs/{job_id}"))
            .bearer_auth(&owner_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if j["state"] == "succeeded" {
            break j["model_id"].as_str().unwrap().to_owned();
        }
        assert!(
            j["state"] == "queued" || j["state"] == "running",
            "job ended {j}"
        );
        assert!(Instant::now() < deadline, "job too slow: {j}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let x: f64 = PREDICT_NUMBER.parse().unwrap();
    for rows in [
        json!([{"x": x, "c": "a"}]),
        json!([{"x": 1, "c": PREDICT_BAD}]),
    ] {
        let r = c
            .post(format!("{url}/v1/models/{model}/predict"))
            .bearer_auth(&owner_key)
            .json(&json!({ "rows": rows }))
            .send()
            .await
            .unwrap();
        assert!(r.status() == StatusCode::OK || r.status() == StatusCode::UNPROCESSABLE_ENTITY);
    }

    // Stop and read everything the process wrote.
    drop(c);
    let mut s = s;
    let _ = s.child.kill();
    let _ = s.child.wait();
    let mut log = String::new();
    std::fs::File::open(&s.log)
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    // The capture works: the request lines are there.
    assert!(log.contains("privboost serving"), "no start line: {log}");
    assert!(log.contains("/v1/datasets"), "no request lines: {log}");
    assert!(log.contains("DEBUG"), "debug logging is not on: {log}");
    for secret in [
        ADMIN,
        owner_key.as_str(),
        wrong.as_str(),
        CELL_NUMBER,
        CELL_BAD,
        PREDICT_NUMBER,
        PREDICT_BAD,
    ] {
        assert!(
            !log.contains(secret),
            "the log contains {secret:?}:\n{}",
            log.lines()
                .filter(|l| l.contains(secret))
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    // Nor the admin key's distinctive middle part (e.g. a truncated print).
    assert!(!log.contains("SECRET"), "log mentions SECRET");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_configured_admin_key_is_warned_about_without_printing_it() {
    let short = "pbshortXYZ";
    let mut s = serve_with_debug_logs(short).await;
    let r = Client::new()
        .get(format!("{}/v1/me", s.url))
        .bearer_auth(short)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let _ = s.child.kill();
    let _ = s.child.wait();
    let log = std::fs::read_to_string(&s.log).unwrap();
    assert!(
        log.contains("admin key is shorter than 32 characters"),
        "{log}"
    );
    assert!(!log.contains(short), "the log contains the key");
}
