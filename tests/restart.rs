//! Jobs survive a restart: queued ones run, running ones re-run under their
//! existing charge; the ledger has exactly one charge per job.

mod common;

use std::time::{Duration, Instant};

use common::{ADMIN_KEY, TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Rounds of the long job: long enough (seconds) to be running when the
/// server stops.
const LONG_TAU: u32 = 4001;

async fn assert_one_charge_per_job(s: &TestServer, key: &str, dataset: &str, jobs: &[String]) {
    let entries = s.ledger(key, dataset).await;
    for job in jobs {
        let charges = entries
            .iter()
            .filter(|e| e["kind"] == "charge" && e["job_id"] == job.as_str())
            .count();
        assert_eq!(charges, 1, "job {job}: {entries:?}");
    }
    assert_eq!(
        entries.iter().filter(|e| e["kind"] == "charge").count(),
        jobs.len()
    );
    assert!(
        !entries.iter().any(|e| e["kind"] == "refund"),
        "no refunds: {entries:?}"
    );
}

async fn submit(s: &TestServer, key: &str, dataset: &str, tau: u32) -> String {
    let job = expect_status(
        s.post(
            key,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.5, "tau": tau}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    job["id"].as_str().unwrap().to_owned()
}

/// Poll until the job is running with at least one round done.
async fn wait_running(s: &TestServer, key: &str, job: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let j = expect_status(s.get(key, &format!("/v1/jobs/{job}")).await, StatusCode::OK).await;
        if j["state"] == "running" && j["progress"]["rounds_done"].as_u64().unwrap() > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "job never ran: {j}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_restart_with_queued_and_running_jobs() {
    let s = TestServer::start_with(|c| c.workers = 1).await;
    let (_, owner) = s.key("owner", "o").await;
    let dataset = s.upload_mushroom(&owner, 10.0).await;
    let long = submit(&s, &owner, &dataset, LONG_TAU).await;
    let queued = vec![
        submit(&s, &owner, &dataset, 5).await,
        submit(&s, &owner, &dataset, 7).await,
    ];
    wait_running(&s, &owner, &long).await;
    let (db, dir) = s.stop().await;

    let s = TestServer::start_on(&db, |c| c.workers = 1).await;
    let mut all = vec![long.clone()];
    all.extend(queued);
    let before = expect_status(
        s.get(&owner, &format!("/v1/jobs/{long}")).await,
        StatusCode::OK,
    )
    .await;
    assert!(
        before["state"] == "queued" || before["state"] == "running",
        "{before}"
    );
    for job in &all {
        let done = s.wait_job(&owner, job).await;
        assert_eq!(done["state"], "succeeded", "{done}");
    }
    assert_one_charge_per_job(&s, &owner, &dataset, &all).await;
    let budget = expect_status(
        s.get(&owner, &format!("/v1/datasets/{dataset}/budget"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(budget["spent"]["epsilon"], 1.5);
    s.stop().await;
    drop(dir);
}

/// A free port (bound and released; the server binds it right after).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_with_running_job_reruns_under_the_same_charge() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let database = common::postgres::child_args_for_path(&dir.path().join("privboost.db")).await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args([
            "serve",
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--workers",
            "1",
            "--admin-key",
            ADMIN_KEY,
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .args(&database)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.get(format!("{url}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Drive the child with the same helpers by pointing a TestServer-like
    // client at it.
    let (_, owner) = common::create_key(&client, &url, ADMIN_KEY, "owner", "o").await;
    let schema = std::fs::read_to_string(common::mushroom_schema()).unwrap();
    let form = reqwest::multipart::Form::new()
        .text("name", "m")
        .text("epsilon", "10")
        .text("schema", schema)
        .part(
            "data",
            reqwest::multipart::Part::bytes(std::fs::read(common::mushroom_csv()).unwrap()),
        );
    let up: Value = client
        .post(format!("{url}/v1/datasets"))
        .bearer_auth(&owner)
        .multipart(form)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let dataset = up["dataset"]["id"].as_str().unwrap().to_owned();
    let mut jobs = Vec::new();
    for tau in [LONG_TAU, 5] {
        let j: Value = client
            .post(format!("{url}/v1/jobs"))
            .bearer_auth(&owner)
            .json(&json!({"dataset_id": dataset, "epsilon": 0.5, "tau": tau}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        jobs.push(j["id"].as_str().unwrap().to_owned());
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let j: Value =
            common::get_json(&client, &format!("{url}/v1/jobs/{}", jobs[0]), &owner).await;
        if j["state"] == "running" && j["progress"]["rounds_done"].as_u64().unwrap() > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "job never ran: {j}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // SIGKILL: no graceful shutdown, the job is left "running" in the file.
    child.kill().unwrap();
    child.wait().unwrap();

    // The killed process stopped renewing its job's lease; with a 2 s lease
    // the new server takes the job over within seconds.
    let s = TestServer::start_on(&dir.path().join("privboost.db"), |c| {
        c.workers = 1;
        c.job_lease = Duration::from_secs(2);
    })
    .await;
    for job in &jobs {
        let done = s.wait_job(&owner, job).await;
        assert_eq!(done["state"], "succeeded", "{done}");
    }
    assert_one_charge_per_job(&s, &owner, &dataset, &jobs).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_on_the_file_sees_progress_and_cancels_across_processes() {
    let lease = |c: &mut privboost::api::Config| {
        c.workers = 1;
        c.job_lease = Duration::from_secs(2);
    };
    let a = TestServer::start_with(lease).await;
    let (_, owner) = a.key("owner", "o").await;
    let dataset = a.upload_mushroom(&owner, 10.0).await;
    let job = submit(&a, &owner, &dataset, 9999).await;
    wait_running(&a, &owner, &job).await;
    // B starts while A trains: A's lease is live, so B leaves the job alone.
    let b = TestServer::start_on(&a.db, lease).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let j = expect_status(
            b.get(&owner, &format!("/v1/jobs/{job}")).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(j["state"], "running", "{j}");
        if j["progress"]["rounds_done"].as_u64().unwrap() > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no progress seen through B: {j}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Cancel through B; A's worker sees it at its next heartbeat.
    let r = b
        .post(&owner, &format!("/v1/jobs/{job}/cancel"), &json!({}))
        .await;
    expect_status(r, StatusCode::ACCEPTED).await;
    let done = a.wait_job(&owner, &job).await;
    assert_eq!(done["state"], "cancelled", "{done}");
    assert_one_charge_per_job(&a, &owner, &dataset, std::slice::from_ref(&job)).await;
    b.stop().await;
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_binary_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args([
            "serve",
            "--bind",
            &format!("127.0.0.1:{port}"),
            "--admin-key",
            ADMIN_KEY,
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.get(format!("{url}/readyz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(exit.success(), "exit status {exit}");
}
