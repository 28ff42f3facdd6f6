//! DP evaluation over HTTP: `POST /v1/models/{id}/evaluate` charges the
//! evaluation dataset's ledger before it reads a row, releases noisy metrics
//! near the true ones, refuses over budget with 409 (nothing charged), and
//! refuses a dataset whose schema differs from the model's.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluation_is_charged_released_and_refused_over_budget() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let train = s.upload_mushroom(&owner, 5.0).await;
    // A second copy stands for held-out rows with the same schema.
    let test = s.upload_mushroom_copy(&owner, 2.0).await;
    let job = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": train, "epsilon": 4.0, "tau": 9}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let job = s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model = job["model_id"].as_str().unwrap().to_owned();
    let route = format!("/v1/models/{model}/evaluate");

    let before = s.ledger(&owner, &test).await;
    let e = expect_status(
        s.post(&owner, &route, &json!({"dataset_id": test, "epsilon": 1.5}))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(e["state"], "done", "{e}");
    let result = &e["result"];
    assert_eq!(result["task"], "classification", "{e}");
    assert_eq!(result["n_rows"], 8124);
    // Noise of scale 2/1.5 per cell moves accuracy by well under 0.01 on
    // 8,124 rows; LazyBB at epsilon 4 on Mushroom is far above chance.
    let accuracy = result["accuracy"].as_f64().unwrap();
    let auc = result["roc_auc"].as_f64().unwrap();
    assert!(accuracy > 0.8 && accuracy <= 1.0, "{e}");
    assert!(auc > 0.8 && auc <= 1.0, "{e}");

    // The charge is in the evaluation dataset's ledger, named by the
    // evaluation's id; the training dataset's ledger is untouched by it.
    let after = s.ledger(&owner, &test).await;
    assert_eq!(after.len(), before.len() + 1);
    let charge = after.last().unwrap();
    assert_eq!(charge["kind"], "charge", "{charge}");
    assert_eq!(charge["epsilon"], 1.5);
    assert_eq!(charge["job_id"], e["id"]);

    // Readable again.
    let again = expect_status(
        s.get(
            &owner,
            &format!("/v1/evaluations/{}", e["id"].as_str().unwrap()),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(again["result"], e["result"]);

    // 0.5 is left: 0.6 is refused with 409 and charges nothing.
    let p = expect_status(
        s.post(&owner, &route, &json!({"dataset_id": test, "epsilon": 0.6}))
            .await,
        StatusCode::CONFLICT,
    )
    .await;
    assert!(p["type"].as_str().unwrap().contains("budget"), "{p}");
    assert_eq!(s.ledger(&owner, &test).await.len(), after.len());

    // Bad epsilon, unknown fields and another schema are refused before any
    // charge.
    for body in [
        json!({"dataset_id": test, "epsilon": 0.0}),
        json!({"dataset_id": test, "epsilon": 5e-324}),
        json!({"dataset_id": test, "epsilon": 0.1, "extra": 1}),
    ] {
        expect_status(
            s.post(&owner, &route, &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    }
    let other = s.upload_small(&owner, 1.0, 200).await;
    let p = expect_status(
        s.post(
            &owner,
            &route,
            &json!({"dataset_id": other, "epsilon": 0.1}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "dataset_id", "{p}");
    assert_eq!(s.ledger(&owner, &test).await.len(), after.len());

    // Another key cannot see the model or the dataset: 404, nothing charged.
    let (_, stranger) = s.key("analyst", "mallory").await;
    expect_status(
        s.post(
            &stranger,
            &route,
            &json!({"dataset_id": test, "epsilon": 0.1}),
        )
        .await,
        StatusCode::NOT_FOUND,
    )
    .await;
    expect_status(
        s.get(
            &stranger,
            &format!("/v1/evaluations/{}", e["id"].as_str().unwrap()),
        )
        .await,
        StatusCode::NOT_FOUND,
    )
    .await;
}
