//! The ledger: refusals change nothing, concurrent admissions never
//! overspend, and cancelling a job that never started refunds it.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_budget_job_gets_409_with_requested_and_remaining_and_changes_nothing() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let dataset = s.upload_small(&owner, 1.0, 300).await;
    let job = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.75}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    let before = s.ledger(&owner, &dataset).await;

    let refused = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.5}),
        )
        .await,
        StatusCode::CONFLICT,
    )
    .await;
    assert_eq!(refused["requested"], json!({"epsilon": 0.5, "delta": 0.0}));
    assert_eq!(refused["remaining"], json!({"epsilon": 0.25, "delta": 0.0}));
    assert_eq!(refused["type"], "/problems/budget-exceeded");
    assert_eq!(
        s.ledger(&owner, &dataset).await,
        before,
        "a refusal writes nothing"
    );
    let jobs = expect_status(s.get(&owner, "/v1/jobs").await, StatusCode::OK).await;
    assert_eq!(jobs["items"].as_array().unwrap().len(), 1);

    // The owner raises the total: recorded in the ledger; then it fits.
    let b = s
        .expect(
            StatusCode::OK,
            s.client
                .patch(s.at(&format!("/v1/datasets/{dataset}/budget")))
                .bearer_auth(&owner)
                .json(&json!({"epsilon": 2.0})),
        )
        .await;
    assert_eq!(b["remaining"]["epsilon"], 1.25);
    let entries = s.ledger(&owner, &dataset).await;
    assert_eq!(entries.last().unwrap()["kind"], "total");
    // Lowering below what is charged is refused.
    s.expect(
        StatusCode::CONFLICT,
        s.client
            .patch(s.at(&format!("/v1/datasets/{dataset}/budget")))
            .bearer_auth(&owner)
            .json(&json!({"epsilon": 0.5})),
    )
    .await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_submissions_admit_exactly_k() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    // Total 1.0, each job 0.125 (exact in binary): exactly 8 fit.
    let k = 8;
    let dataset = s.upload_small(&owner, 1.0, 200).await;
    let body = json!({"dataset_id": dataset, "epsilon": 0.125, "tau": 5});
    let accepted = s.submit_concurrently(&owner, &body, 20).await;
    assert_eq!(accepted, k);
    let entries = s.ledger(&owner, &dataset).await;
    let charges: Vec<f64> = entries
        .iter()
        .filter(|e| e["kind"] == "charge")
        .map(|e| e["epsilon"].as_f64().unwrap())
        .collect();
    assert_eq!(charges.len(), k);
    assert!(charges.iter().sum::<f64>() <= 1.0);
    let budget = expect_status(
        s.get(&owner, &format!("/v1/datasets/{dataset}/budget"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(budget["remaining"]["epsilon"], 0.0);

    // The job list pages through all k jobs in a stable order.
    let mut seen = Vec::new();
    let mut path = "/v1/jobs?page_size=3".to_owned();
    loop {
        let page = expect_status(s.get(&owner, &path).await, StatusCode::OK).await;
        for j in page["items"].as_array().unwrap() {
            seen.push(j["id"].as_str().unwrap().to_owned());
        }
        match page["next_page_token"].as_str() {
            Some(t) => path = format!("/v1/jobs?page_size=3&page_token={t}"),
            None => break,
        }
    }
    let charged: Vec<String> = entries
        .iter()
        .filter(|e| e["kind"] == "charge")
        .map(|e| e["job_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(seen, charged, "pages in submission order, each job once");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_file_never_overspend() {
    // Two independent servers (two pools, as two processes would have) on
    // the same SQLite file; BEGIN IMMEDIATE serialises their admissions.
    let a = TestServer::start().await;
    let (_, owner) = a.key("owner", "o").await;
    let dataset = a.upload_small(&owner, 1.0, 200).await;
    let b = TestServer::start_on(&a.db, |_| {}).await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let s = if i % 2 == 0 { &a } else { &b };
        let client = s.client.clone();
        let url = s.at("/v1/jobs");
        let owner = owner.clone();
        let body = json!({"dataset_id": dataset, "epsilon": 0.25, "tau": 5});
        tasks.push(tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(owner)
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    let mut accepted = 0;
    for t in tasks {
        if t.await.unwrap() == StatusCode::ACCEPTED {
            accepted += 1;
        }
    }
    assert_eq!(accepted, 4);
    let charges = a
        .ledger(&owner, &dataset)
        .await
        .iter()
        .filter(|e| e["kind"] == "charge")
        .count();
    assert_eq!(charges, 4);
    b.stop().await;
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_job_that_never_started_refunds_it() {
    // One worker, busy with a long job, so the next job stays queued.
    let s = TestServer::start_with(|c| c.workers = 1).await;
    let (_, owner) = s.key("owner", "o").await;
    let dataset = s.upload_mushroom(&owner, 10.0).await;
    let long = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 1.0, "tau": 9999}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let queued = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 2.0, "tau": 5}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let budget = expect_status(
        s.get(&owner, &format!("/v1/datasets/{dataset}/budget"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(budget["remaining"]["epsilon"], 7.0);
    let cancelled = expect_status(
        s.post(
            &owner,
            &format!("/v1/jobs/{}/cancel", queued["id"].as_str().unwrap()),
            &json!({}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(cancelled["state"], "cancelled");
    let entries = s.ledger(&owner, &dataset).await;
    let refund = entries
        .iter()
        .find(|e| e["kind"] == "refund")
        .expect("a refund entry");
    assert_eq!(refund["job_id"], queued["id"]);
    assert_eq!(refund["epsilon"], 2.0);
    // The running one is cancelled between rounds and keeps its charge.
    // Wait until it runs: on a slow claim (PostgreSQL in CI) it could still
    // be queued, and a queued job's cancel is refunded.
    let long_id = long["id"].as_str().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let j = expect_status(
            s.get(&owner, &format!("/v1/jobs/{long_id}")).await,
            StatusCode::OK,
        )
        .await;
        if j["state"] == "running" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the long job never ran: {j}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let r = s
        .post(&owner, &format!("/v1/jobs/{long_id}/cancel"), &json!({}))
        .await;
    assert!(
        r.status() == StatusCode::ACCEPTED || r.status() == StatusCode::OK,
        "{}",
        r.status()
    );
    let done = s.wait_job(&owner, long_id).await;
    assert_eq!(done["state"], "cancelled");
    let budget = expect_status(
        s.get(&owner, &format!("/v1/datasets/{dataset}/budget"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(budget["spent"]["epsilon"], 1.0);
    assert_eq!(budget["remaining"]["epsilon"], 9.0);
    s.stop().await;
}
