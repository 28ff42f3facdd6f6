//! `Idempotency-Key`: a retried POST replays the stored response and never
//! charges twice; the same key with another body is refused.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_post_twice_yields_one_job_and_one_charge() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let dataset = s.upload_small(&owner, 1.0, 200).await;
    let body = json!({"dataset_id": dataset, "epsilon": 0.25, "tau": 5});
    let send = |b: serde_json::Value, key: &'static str| {
        s.client
            .post(s.at("/v1/jobs"))
            .bearer_auth(&owner)
            .header("Idempotency-Key", key)
            .json(&b)
            .send()
    };
    let first = expect_status(
        send(body.clone(), "retry-1").await.unwrap(),
        StatusCode::ACCEPTED,
    )
    .await;
    let second = send(body.clone(), "retry-1").await.unwrap();
    assert_eq!(second.headers()["idempotent-replayed"], "true");
    let second = expect_status(second, StatusCode::ACCEPTED).await;
    assert_eq!(first["id"], second["id"]);
    // Key order in the body does not matter.
    let reordered: serde_json::Value = serde_json::from_str(&format!(
        r#"{{"tau": 5, "epsilon": 0.25, "dataset_id": "{dataset}"}}"#
    ))
    .unwrap();
    let third = expect_status(
        send(reordered, "retry-1").await.unwrap(),
        StatusCode::ACCEPTED,
    )
    .await;
    assert_eq!(first["id"], third["id"]);
    // The same key with another body is refused and charges nothing.
    let other = json!({"dataset_id": dataset, "epsilon": 0.5, "tau": 5});
    let refused = expect_status(
        send(other, "retry-1").await.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(refused["type"], "/problems/idempotency-key-reused");

    // Concurrent retries of a new key: still one job.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let req = s
            .client
            .post(s.at("/v1/jobs"))
            .bearer_auth(&owner)
            .header("Idempotency-Key", "burst")
            .json(&body);
        tasks.push(tokio::spawn(async move {
            req.send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for t in tasks {
        ids.insert(t.await.unwrap()["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids.len(), 1);

    let charges = s
        .ledger(&owner, &dataset)
        .await
        .iter()
        .filter(|e| e["kind"] == "charge")
        .count();
    assert_eq!(charges, 2);
    let jobs = expect_status(s.get(&owner, "/v1/jobs").await, StatusCode::OK).await;
    assert_eq!(jobs["items"].as_array().unwrap().len(), 2);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retried_upload_stores_one_dataset() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let csv = common::small_csv(50);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let form = reqwest::multipart::Form::new()
            .text("name", "small")
            .text("epsilon", "1")
            .text("schema", common::SMALL_SCHEMA)
            .part(
                "data",
                reqwest::multipart::Part::bytes(csv.clone().into_bytes()),
            );
        let r = s
            .client
            .post(s.at("/v1/datasets"))
            .bearer_auth(&owner)
            .header("Idempotency-Key", "upload-1")
            .multipart(form)
            .send()
            .await
            .unwrap();
        let body = expect_status(r, StatusCode::CREATED).await;
        ids.push(body["dataset"]["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(ids[0], ids[1]);
    let list = expect_status(s.get(&owner, "/v1/datasets").await, StatusCode::OK).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    s.stop().await;
}

/// The same owner uploading the same schema and data again is told so (409,
/// naming the first dataset) instead of getting a second, fresh budget for
/// the same rows; `allow_duplicate=true` stores it; another owner, other
/// rows or another schema are not duplicates; an idempotent retry still
/// replays (issue 29).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_upload_of_the_same_content_is_refused_unless_allowed() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let (_, other_owner) = s.key("owner", "p").await;
    let first = s.upload_small(&owner, 1.0, 200).await;
    let csv = || common::small_csv(200).into_bytes();
    // Another name and budget, the same schema and rows: refused.
    let r = s
        .upload(&owner, "again", 5.0, common::SMALL_SCHEMA, csv())
        .await;
    let problem = expect_status(r, StatusCode::CONFLICT).await;
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains(&first) && detail.contains("allow_duplicate"),
        "{detail}"
    );
    let datasets = expect_status(s.get(&owner, "/v1/datasets").await, StatusCode::OK).await;
    assert_eq!(
        datasets["items"].as_array().unwrap().len(),
        1,
        "nothing stored"
    );
    // The owner who means it.
    let r = s
        .upload_form(
            &owner,
            "again",
            "5",
            common::SMALL_SCHEMA,
            csv(),
            &[("allow_duplicate", "true")],
        )
        .await;
    let copy = expect_status(r, StatusCode::CREATED).await;
    assert_ne!(copy["dataset"]["id"], first.as_str());
    // Not duplicates: other rows, another owner.
    expect_status(
        s.upload(
            &owner,
            "more",
            1.0,
            common::SMALL_SCHEMA,
            common::small_csv(201).into_bytes(),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    expect_status(
        s.upload(&other_owner, "small", 1.0, common::SMALL_SCHEMA, csv())
            .await,
        StatusCode::CREATED,
    )
    .await;
    // A bad value of the field is a 422 naming it.
    let r = s
        .upload_form(
            &owner,
            "x",
            "1",
            common::SMALL_SCHEMA,
            csv(),
            &[("allow_duplicate", "yes")],
        )
        .await;
    let problem = expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem.to_string().contains("allow_duplicate"), "{problem}");
}
