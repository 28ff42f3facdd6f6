//! The serving caches (issue 30; `src/api/cache.rs`, docs/performance.md
//! "Serving caches") never outlive a change: on the server that makes it,
//! a revoked key, a re-pointed or rolled-back deployment and a deleted
//! model take effect at the next request, on both prediction routes; on
//! another process sharing the database (the SQLite file, or PostgreSQL
//! when `PRIVBOOST_TEST_POSTGRES_URL` is set) within `CACHE_TTL`, checked
//! by polling with a generous deadline (no timed assertion).

mod common;

use std::time::{Duration, Instant};

use common::process::ChildServer;
use common::{ADMIN_KEY, SMALL_SCHEMA, TestServer, create_key, expect_status, small_csv};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

/// Predictions to send before a change, so that every cache holds it.
const WARM_UP: usize = 5;

/// How long a replica may take to see a change before the test fails: far
/// above `CACHE_TTL` (1 s), so a slow machine does not fail it.
const REPLICA_DEADLINE: Duration = Duration::from_secs(30);

fn row() -> Value {
    json!({"rows": [{"x": 42, "c": "b"}]})
}

fn oip_row() -> Value {
    json!({"inputs": [
        {"name": "x", "shape": [1], "datatype": "FP64", "data": [42.0]},
        {"name": "c", "shape": [1], "datatype": "BYTES", "data": ["b"]}
    ]})
}

/// POST `body` to `url` with `key`: the status and the JSON body (Null if
/// none).
async fn post(client: &Client, url: &str, key: &str, body: &Value) -> (StatusCode, Value) {
    let r = client
        .post(url)
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = r.status();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The model `name` serves to `key` (or the refusal's status), asked on
/// `/v1/deployments/{name}/predict` and on OIP infer, in that order.
type Answers = (Result<String, StatusCode>, Result<String, StatusCode>);

async fn answers(client: &Client, base: &str, key: &str, name: &str) -> Answers {
    let (status, v1) = post(
        client,
        &format!("{base}/v1/deployments/{name}/predict"),
        key,
        &row(),
    )
    .await;
    let (oip_status, v2) = post(
        client,
        &format!("{base}/v2/models/{name}/infer"),
        key,
        &oip_row(),
    )
    .await;
    let model = |status: StatusCode, v: &Value, field: &str| {
        if status == StatusCode::OK {
            Ok(v[field]
                .as_str()
                .unwrap_or_else(|| panic!("{v}"))
                .to_owned())
        } else {
            Err(status)
        }
    };
    (
        model(status, &v1, "model_id"),
        model(oip_status, &v2, "model_version"),
    )
}

/// [`answers`] on a server whose caches the change went through: both
/// routes must agree.
async fn served(client: &Client, base: &str, key: &str, name: &str) -> Result<String, StatusCode> {
    let (v1, v2) = answers(client, base, key, name).await;
    assert_eq!(v1, v2, "the routes disagree");
    v1
}

/// Ask `served` `WARM_UP` times, expecting `model` each time.
async fn warm(client: &Client, base: &str, key: &str, name: &str, model: &str) {
    for _ in 0..WARM_UP {
        assert_eq!(
            served(client, base, key, name).await.as_deref(),
            Ok(model),
            "warming up {name}"
        );
    }
}

/// Poll [`answers`] until both routes answer `want` (between two polls
/// one route's cache entry may expire before the other's); fails after
/// [`REPLICA_DEADLINE`].
async fn until_served(
    client: &Client,
    base: &str,
    key: &str,
    name: &str,
    want: Result<&str, StatusCode>,
) {
    let deadline = Instant::now() + REPLICA_DEADLINE;
    loop {
        let got = answers(client, base, key, name).await;
        let is = |r: &Result<String, StatusCode>| r.as_deref().map_err(|s| *s) == want;
        if is(&got.0) && is(&got.1) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{base}: {name} still answers {got:?}, not {want:?}, at the deadline"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Upload the small dataset with `owner` and train two models on it.
async fn two_models(client: &Client, base: &str, owner: &str) -> (String, String) {
    let form = reqwest::multipart::Form::new()
        .text("name", "small")
        .text("epsilon", "1000")
        .text("schema", SMALL_SCHEMA)
        .part(
            "data",
            reqwest::multipart::Part::bytes(small_csv(300).into_bytes()).file_name("data.csv"),
        );
    let r = client
        .post(format!("{base}/v1/datasets"))
        .bearer_auth(owner)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let ds = expect_status(r, StatusCode::CREATED).await["dataset"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut models = Vec::new();
    // Different tau: two different models (the test tells them apart by id).
    for tau in [2, 3] {
        let (status, job) = post(
            client,
            &format!("{base}/v1/jobs"),
            owner,
            &json!({"dataset_id": ds, "epsilon": 1.0, "tau": tau}),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{job}");
        let url = format!("{base}/v1/jobs/{}", job["id"].as_str().unwrap());
        let deadline = Instant::now() + common::JOB_DEADLINE;
        let model = loop {
            let job = common::get_json(client, &url, owner).await;
            match job["state"].as_str().unwrap() {
                "succeeded" => break job["model_id"].as_str().unwrap().to_owned(),
                "failed" | "cancelled" => panic!("training failed: {job}"),
                _ => {}
            }
            assert!(Instant::now() < deadline, "job still running: {job}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        models.push(model);
    }
    (models[0].clone(), models[1].clone())
}

async fn deploy(client: &Client, base: &str, owner: &str, name: &str, model: &str) {
    let r = client
        .put(format!("{base}/v1/deployments/{name}"))
        .bearer_auth(owner)
        .json(&json!({"model_id": model}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "deploying: {}", r.status());
}

async fn rollback(client: &Client, base: &str, owner: &str, name: &str) {
    let r = client
        .post(format!("{base}/v1/deployments/{name}/rollback"))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap();
    expect_status(r, StatusCode::OK).await;
}

async fn revoke(client: &Client, base: &str, key_id: &str) {
    let r = client
        .delete(format!("{base}/v1/keys/{key_id}"))
        .bearer_auth(ADMIN_KEY)
        .send()
        .await
        .unwrap();
    expect_status(r, StatusCode::NO_CONTENT).await;
}

async fn delete_model(client: &Client, base: &str, owner: &str, model: &str) -> StatusCode {
    client
        .delete(format!("{base}/v1/models/{model}"))
        .bearer_auth(owner)
        .send()
        .await
        .unwrap()
        .status()
}

/// Direct prediction with a model by id: its status.
async fn predict_model(client: &Client, base: &str, owner: &str, model: &str) -> StatusCode {
    post(
        client,
        &format!("{base}/v1/models/{model}/predict"),
        owner,
        &row(),
    )
    .await
    .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_is_seen_by_the_next_request_on_the_same_server() {
    let s = TestServer::start().await;
    let c = &s.client;
    let base = s.url.as_str();
    let (_, owner) = s.key("owner", "owner").await;
    let (analyst_id, analyst) = s.key("analyst", "reader").await;
    let (m1, m2) = two_models(c, base, &owner).await;
    assert_ne!(m1, m2);
    deploy(c, base, &owner, "prod", &m1).await;
    // Any valid key predicts with a deployment: the analyst's warms the
    // key cache, both keys the deployment cache.
    warm(c, base, &analyst, "prod", &m1).await;
    warm(c, base, &owner, "prod", &m1).await;

    // Re-pointed: the next prediction comes from the new model.
    deploy(c, base, &owner, "prod", &m2).await;
    assert_eq!(served(c, base, &analyst, "prod").await.as_deref(), Ok(&*m2));
    assert_eq!(served(c, base, &owner, "prod").await.as_deref(), Ok(&*m2));
    warm(c, base, &analyst, "prod", &m2).await;

    // Rolled back: the next prediction comes from the earlier model.
    rollback(c, base, &owner, "prod").await;
    assert_eq!(served(c, base, &analyst, "prod").await.as_deref(), Ok(&*m1));
    warm(c, base, &owner, "prod", &m1).await;

    // Deleted: a deployed model cannot be deleted; the one no longer
    // deployed stops answering at once, also loaded in the model cache
    // and by its id as a version of the deployment that once served it.
    assert_eq!(predict_model(c, base, &owner, &m2).await, StatusCode::OK);
    let versioned = format!("{base}/v2/models/prod/versions/{m2}/infer");
    assert_eq!(
        post(c, &versioned, &owner, &oip_row()).await.0,
        StatusCode::OK
    );
    assert_eq!(
        delete_model(c, base, &owner, &m1).await,
        StatusCode::CONFLICT
    );
    assert_eq!(
        delete_model(c, base, &owner, &m2).await,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        predict_model(c, base, &owner, &m2).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        post(c, &versioned, &owner, &oip_row()).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(served(c, base, &owner, "prod").await.as_deref(), Ok(&*m1));

    // Revoked: the key's next request is refused, on both routes.
    warm(c, base, &analyst, "prod", &m1).await;
    revoke(c, base, &analyst_id).await;
    assert_eq!(
        served(c, base, &analyst, "prod").await,
        Err(StatusCode::UNAUTHORIZED)
    );
    let me = c
        .get(format!("{base}/v1/me"))
        .bearer_auth(&analyst)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), StatusCode::UNAUTHORIZED);
    // The other keys are still served.
    assert_eq!(served(c, base, &owner, "prod").await.as_deref(), Ok(&*m1));
    s.stop().await;
}

/// Two processes on one database: every change made on the first is
/// seen by the second (whose caches hold the old answer) within the
/// bound. `extra(i)` are replica `i`'s flags.
async fn replicas_see_every_change(dir: &tempfile::TempDir, extra: impl Fn(usize) -> Vec<String>) {
    let start = |i: usize| {
        let args = extra(i);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ChildServer::start(
            &dir.path().join("data"),
            &dir.path().join(format!("replica-{i}.log")),
            &args,
        )
    };
    let (a, b) = (start(0), start(1));
    let c = &Client::new();
    let (_, owner) = create_key(c, &a.url, ADMIN_KEY, "owner", "owner").await;
    let (analyst_id, analyst) = create_key(c, &a.url, ADMIN_KEY, "analyst", "reader").await;
    let (m1, m2) = two_models(c, &a.url, &owner).await;
    deploy(c, &a.url, &owner, "prod", &m1).await;
    warm(c, &b.url, &analyst, "prod", &m1).await;

    deploy(c, &a.url, &owner, "prod", &m2).await;
    until_served(c, &b.url, &analyst, "prod", Ok(m2.as_str())).await;

    rollback(c, &a.url, &owner, "prod").await;
    until_served(c, &b.url, &analyst, "prod", Ok(m1.as_str())).await;

    // The direct route reads the store on every request: a model deleted
    // on one replica is gone from the other at once.
    assert_eq!(predict_model(c, &b.url, &owner, &m2).await, StatusCode::OK);
    assert_eq!(
        delete_model(c, &a.url, &owner, &m2).await,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        predict_model(c, &b.url, &owner, &m2).await,
        StatusCode::NOT_FOUND
    );

    warm(c, &b.url, &analyst, "prod", &m1).await;
    revoke(c, &a.url, &analyst_id).await;
    until_served(c, &b.url, &analyst, "prod", Err(StatusCode::UNAUTHORIZED)).await;
    // And it stays refused (no cache brings it back).
    for _ in 0..WARM_UP {
        assert_eq!(
            served(c, &b.url, &analyst, "prod").await,
            Err(StatusCode::UNAUTHORIZED)
        );
    }
    a.terminate();
    b.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_sharing_the_sqlite_file_sees_every_change_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    replicas_see_every_change(&dir, |_| Vec::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_replica_sees_every_change_within_the_bound() {
    let Some(server) = common::postgres::server_url("serving_caches") else {
        return;
    };
    let db = common::postgres::fresh_database(&server).await;
    let dir = tempfile::tempdir().unwrap();
    replicas_see_every_change(&dir, |_| vec!["--database-url".into(), db.clone()]).await;
}
