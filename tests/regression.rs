//! Regression over HTTP on the shipped Abalone data (a numeric label with
//! public bounds): a learner that cannot do regression is refused before any
//! charge; DP-EBM trains, predicts `value`, and its model can be edited into
//! a new version that serves like any other.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

fn abalone() -> (String, Vec<u8>) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/abalone");
    (
        std::fs::read_to_string(dir.join("schema.json")).unwrap(),
        std::fs::read(dir.join("abalone.csv")).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_that_cannot_regress_is_refused_before_any_charge() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let (schema, csv) = abalone();
    let body = expect_status(
        s.upload(&owner, "abalone", 2.0, &schema, csv).await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    assert_eq!(body["dataset"]["n_rows"], 4177);
    let before = s.ledger(&owner, &dataset).await;
    for route in ["/v1/jobs/estimate", "/v1/jobs"] {
        let request = json!({"dataset_id": dataset, "epsilon": 1.0, "algorithm": "lazybb"});
        let problem = expect_status(
            s.post(&owner, route, &request).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert_eq!(problem["errors"][0]["field"], "algorithm", "{problem}");
        let message = problem["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("cannot do regression"), "{message}");
    }
    assert_eq!(s.ledger(&owner, &dataset).await, before, "nothing charged");
}
