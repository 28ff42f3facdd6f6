//! The test harness: a real server on 127.0.0.1:0 with a tempfile SQLite
//! database, and HTTP helpers whose failures say what was sent and received.
#![allow(dead_code)]

pub mod invariants;
pub mod parquet;
pub mod postgres;
pub mod process;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use privboost::api::{self, Config, Server};
use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a poll waits for a job before the test fails.
pub const JOB_DEADLINE: Duration = Duration::from_secs(90);

/// The shipped Mushroom data.
pub fn mushroom_csv() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mushroom/mushroom.csv")
}

/// The shipped Mushroom schema.
pub fn mushroom_schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mushroom/schema.json")
}

/// A small synthetic schema: numeric `x`, categorical `c`, label `y`.
pub const SMALL_SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "1", "negative": "0"},
  "columns": [
    {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4},
    {"name": "c", "type": "categorical", "categories": ["a", "b"]}
  ]
}"#;

/// `n` rows for [`SMALL_SCHEMA`], deterministic.
pub fn small_csv(n: usize) -> String {
    let mut s = String::from("x,c,y\n");
    for i in 0..n {
        let x = (i * 37) % 100;
        let c = if i % 3 == 0 { "a" } else { "b" };
        let y = u8::from(x > 50 || c == "a");
        s.push_str(&format!("{x},{c},{y}\n"));
    }
    s
}

/// A running server.
pub struct TestServer {
    pub url: String,
    pub admin: String,
    pub client: Client,
    pub db: PathBuf,
    dir: Option<tempfile::TempDir>,
    shutdown: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<std::io::Result<()>>>,
}

/// A fixed admin key for tests (the generated one is printed, not returned).
pub const ADMIN_KEY: &str = "pb_test_admin_key_0123456789abcdef";

impl TestServer {
    /// A fresh server on a new tempfile database.
    pub async fn start() -> TestServer {
        TestServer::start_with(|_| {}).await
    }

    /// A fresh server, with the config adjusted by `tweak`.
    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("privboost.db");
        let mut s = TestServer::start_on(&db, tweak).await;
        s.dir = Some(dir);
        s
    }

    /// A server on an existing database file.
    pub async fn start_on(db: &Path, tweak: impl FnOnce(&mut Config)) -> TestServer {
        let mut config = Config::new(db.to_owned());
        if postgres::http_tests_on_postgres() {
            let url = std::env::var(postgres::URL_ENV).expect("checked");
            config.database_url = Some(postgres::database_for_path(&url, db).await);
        }
        config.workers = 2;
        config.admin_key = Some(ADMIN_KEY.into());
        tweak(&mut config);
        let server = Server::open(config).await.expect("server opens");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(api::serve(listener, server, async {
            let _ = rx.await;
        }));
        TestServer {
            url,
            admin: ADMIN_KEY.into(),
            client: Client::new(),
            db: db.to_owned(),
            dir: None,
            shutdown: Some(tx),
            handle: Some(handle),
        }
    }

    /// Graceful stop (as on SIGTERM); returns the temp dir so that the
    /// database can be reopened.
    pub async fn stop(mut self) -> (PathBuf, Option<tempfile::TempDir>) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            h.await.expect("server task").expect("server stops cleanly");
        }
        (self.db.clone(), self.dir.take())
    }

    pub fn at(&self, path: &str) -> String {
        format!("{}{}", self.url, path)
    }

    /// Create a key; returns (id, secret).
    pub async fn key(&self, role: &str, name: &str) -> (String, String) {
        create_key(&self.client, &self.url, &self.admin, role, name).await
    }

    /// Upload a dataset (multipart); returns the raw response.
    pub async fn upload(
        &self,
        key: &str,
        name: &str,
        epsilon: f64,
        schema: &str,
        csv: Vec<u8>,
    ) -> Response {
        self.upload_form(key, name, &epsilon.to_string(), schema, csv, &[])
            .await
    }

    /// Upload with extra text fields (sent before `data`).
    pub async fn upload_form(
        &self,
        key: &str,
        name: &str,
        epsilon: &str,
        schema: &str,
        csv: Vec<u8>,
        extra: &[(&str, &str)],
    ) -> Response {
        let mut form = reqwest::multipart::Form::new()
            .text("name", name.to_owned())
            .text("epsilon", epsilon.to_owned())
            .text("schema", schema.to_owned());
        for (k, v) in extra {
            form = form.text(k.to_string(), v.to_string());
        }
        form = form.part(
            "data",
            reqwest::multipart::Part::bytes(csv).file_name("data.csv"),
        );
        self.client
            .post(self.at("/v1/datasets"))
            .bearer_auth(key)
            .multipart(form)
            .send()
            .await
            .expect("upload sent")
    }

    /// Upload the shipped Mushroom data with the given total epsilon; returns the dataset id.
    pub async fn upload_mushroom(&self, key: &str, epsilon: f64) -> String {
        let schema = std::fs::read_to_string(mushroom_schema()).unwrap();
        let csv = std::fs::read(mushroom_csv()).unwrap();
        let r = self.upload(key, "mushroom", epsilon, &schema, csv).await;
        let body = expect_status(r, StatusCode::CREATED).await;
        body["dataset"]["id"].as_str().unwrap().into()
    }

    /// Upload a second copy of the shipped Mushroom data (the duplicate
    /// check would refuse it without `allow_duplicate`); returns its id.
    pub async fn upload_mushroom_copy(&self, key: &str, epsilon: f64) -> String {
        let schema = std::fs::read_to_string(mushroom_schema()).unwrap();
        let csv = std::fs::read(mushroom_csv()).unwrap();
        let r = self
            .upload_form(
                key,
                "mushroom-copy",
                &epsilon.to_string(),
                &schema,
                csv,
                &[("allow_duplicate", "true")],
            )
            .await;
        let body = expect_status(r, StatusCode::CREATED).await;
        body["dataset"]["id"].as_str().unwrap().into()
    }

    /// Upload the small synthetic data; returns the dataset id.
    pub async fn upload_small(&self, key: &str, epsilon: f64, rows: usize) -> String {
        let r = self
            .upload(
                key,
                "small",
                epsilon,
                SMALL_SCHEMA,
                small_csv(rows).into_bytes(),
            )
            .await;
        let body = expect_status(r, StatusCode::CREATED).await;
        body["dataset"]["id"].as_str().unwrap().into()
    }

    pub async fn get(&self, key: &str, path: &str) -> Response {
        self.client
            .get(self.at(path))
            .bearer_auth(key)
            .send()
            .await
            .expect("sent")
    }

    pub async fn post(&self, key: &str, path: &str, body: &Value) -> Response {
        self.client
            .post(self.at(path))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .expect("sent")
    }

    /// Send and check the status; returns the JSON body.
    pub async fn expect(&self, status: StatusCode, req: reqwest::RequestBuilder) -> Value {
        expect_status(req.send().await.expect("sent"), status).await
    }

    /// Poll a job until it reaches a final state (or the deadline passes).
    pub async fn wait_job(&self, key: &str, job_id: &str) -> Value {
        let deadline = Instant::now() + JOB_DEADLINE;
        loop {
            let job = expect_status(
                self.get(key, &format!("/v1/jobs/{job_id}")).await,
                StatusCode::OK,
            )
            .await;
            let state = job["state"].as_str().unwrap().to_owned();
            if ["succeeded", "failed", "cancelled"].contains(&state.as_str()) {
                return job;
            }
            assert!(
                Instant::now() < deadline,
                "job {job_id} still {state} at the deadline: {job}"
            );
            tokio::task::yield_now().await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Submit a job (`POST /v1/jobs`, 202) and wait until it is final.
    pub async fn run_job(&self, key: &str, body: &Value) -> Value {
        let job = expect_status(self.post(key, "/v1/jobs", body).await, StatusCode::ACCEPTED).await;
        self.wait_job(key, job["id"].as_str().expect("a job id"))
            .await
    }

    /// The model a finished job made (`GET /v1/models/{job.model_id}`, 200).
    pub async fn model_of(&self, key: &str, job: &Value) -> Value {
        let id = job["model_id"].as_str().expect("a job with a model");
        expect_status(
            self.get(key, &format!("/v1/models/{id}")).await,
            StatusCode::OK,
        )
        .await
    }

    /// The ledger entries of a dataset.
    pub async fn ledger(&self, key: &str, dataset: &str) -> Vec<Value> {
        let body = expect_status(
            self.get(
                key,
                &format!("/v1/datasets/{dataset}/ledger?page_size=1000"),
            )
            .await,
            StatusCode::OK,
        )
        .await;
        body["items"].as_array().unwrap().clone()
    }

    /// Send `count` copies of a job submission at once; how many were
    /// admitted (202). Anything but 202 or 409 (over budget) fails the test.
    pub async fn submit_concurrently(&self, key: &str, body: &Value, count: usize) -> usize {
        let mut tasks = Vec::new();
        for _ in 0..count {
            let (client, url) = (self.client.clone(), self.at("/v1/jobs"));
            let (key, body) = (key.to_owned(), body.clone());
            tasks.push(tokio::spawn(async move {
                let r = client.post(url).bearer_auth(key).json(&body).send().await;
                r.expect("sent").status()
            }));
        }
        let mut accepted = 0;
        for t in tasks {
            match t.await.expect("task") {
                StatusCode::ACCEPTED => accepted += 1,
                StatusCode::CONFLICT => {}
                other => panic!("unexpected status {other}"),
            }
        }
        accepted
    }
}

/// Create a key with `admin` on the server at `base` (also a child process's
/// URL); returns (id, secret).
pub async fn create_key(
    client: &Client,
    base: &str,
    admin: &str,
    role: &str,
    name: &str,
) -> (String, String) {
    let r = client
        .post(format!("{base}/v1/keys"))
        .bearer_auth(admin)
        .json(&json!({"role": role, "name": name}))
        .send()
        .await
        .expect("POST /v1/keys");
    let body = expect_status(r, StatusCode::CREATED).await;
    (
        body["id"].as_str().unwrap().into(),
        body["key"].as_str().unwrap().into(),
    )
}

/// GET `url` with `key` on any server (also a child process's URL); the
/// JSON body, whatever the status.
pub async fn get_json(client: &Client, url: &str, key: &str) -> Value {
    client
        .get(url)
        .bearer_auth(key)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: not JSON: {e}"))
}

/// Check the status; returns the JSON body (Null when empty). A failure
/// prints the body.
pub async fn expect_status(r: Response, status: StatusCode) -> Value {
    let got = r.status();
    let content_type = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or("").to_owned())
        .unwrap_or_default();
    let text = r.text().await.expect("body");
    assert_eq!(got, status, "expected {status}, got {got}; body: {text}");
    if got.is_client_error() || got.is_server_error() {
        assert_eq!(
            content_type, "application/problem+json",
            "error without problem+json: {text}"
        );
    }
    if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

/// Check a k-class `predictions` answer: row `i` predicts `want[i]` with
/// one probability per class, summing to 1. Returns each row's
/// probabilities.
pub fn expect_classes(predicted: &Value, want: &[&str], k: usize) -> Vec<Vec<f64>> {
    want.iter()
        .enumerate()
        .map(|(i, want)| {
            let p = &predicted["predictions"][i];
            assert_eq!(p["class"], *want, "{predicted}");
            let probabilities: Vec<f64> = p["probabilities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert_eq!(probabilities.len(), k, "{p}");
            assert!(
                (probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9,
                "{p}"
            );
            probabilities
        })
        .collect()
}
