//! Public test data over HTTP: only the owner may declare a dataset public
//! test data (`PATCH /v1/datasets/{id}`, one-way); the flag shows in the
//! dataset resource; an evaluation on it returns the exact metrics (equal to
//! the library's own computation on the same model and rows, as `privboost
//! eval` computes them), marked `"public": true`, with no ledger entry; an
//! evaluation on a dataset that is not public is still charged.

mod common;

use common::{TestServer, expect_status, mushroom_csv, mushroom_schema};
use privboost::data::{Encoder, LabelMode, Schema, read_csv};
use privboost::learn::{Model, Output, metrics};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The exact accuracy and ROC AUC of `model` on the shipped Mushroom rows,
/// as `privboost eval` computes its test figures.
fn exact_on_mushroom(model: &Model) -> (f64, f64) {
    let schema = Schema::from_json(&std::fs::read_to_string(mushroom_schema()).unwrap()).unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let file = std::fs::File::open(mushroom_csv()).unwrap();
    let data = read_csv(std::io::BufReader::new(file), &encoder, LabelMode::Required).unwrap();
    let labels = data.labels.as_ref().unwrap();
    let y: Vec<bool> = (0..data.n_rows()).map(|i| labels.get(i)).collect();
    let mut scores = Vec::new();
    let mut correct = 0usize;
    for (o, &label) in model.predictor().predict_all(&data).iter().zip(&y) {
        let Output::Class(p) = o else {
            panic!("a classifier")
        };
        scores.push(p.score);
        correct += usize::from(p.positive == label);
    }
    (
        correct as f64 / y.len() as f64,
        metrics::roc_auc(&scores, &y),
    )
}

async fn patch(s: &TestServer, key: &str, dataset: &str, body: &Value) -> reqwest::Response {
    s.client
        .patch(s.at(&format!("/v1/datasets/{dataset}")))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .expect("sent")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_test_data_is_exact_uncharged_and_only_the_owner_declares_it() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let (analyst_id, analyst) = s.key("analyst", "bob").await;
    let train = s.upload_mushroom(&owner, 5.0).await;
    let public = s.upload_mushroom_copy(&owner, 1.0).await;
    let private = s.upload_mushroom_copy(&owner, 1.0).await;
    // The analyst sees the public dataset and the model (trained on `train`).
    for d in [&public, &train] {
        s.expect(
            StatusCode::NO_CONTENT,
            s.client
                .put(s.at(&format!("/v1/datasets/{d}/grants/{analyst_id}")))
                .bearer_auth(&owner),
        )
        .await;
    }

    // The flag starts false and shows in the resource.
    let d = expect_status(
        s.get(&owner, &format!("/v1/datasets/{public}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(d["public_test_data"], false, "{d}");

    // Only the owner declares it: an analyst with a grant gets 403, a
    // stranger 404; `false` and unknown fields are 422.
    expect_status(
        patch(&s, &analyst, &public, &json!({"public_test_data": true})).await,
        StatusCode::FORBIDDEN,
    )
    .await;
    let (_, stranger) = s.key("owner", "mallory").await;
    expect_status(
        patch(&s, &stranger, &public, &json!({"public_test_data": true})).await,
        StatusCode::NOT_FOUND,
    )
    .await;
    for body in [
        json!({"public_test_data": false}),
        json!({"public_test_data": true, "name": "x"}),
        json!({}),
    ] {
        let p = expect_status(
            patch(&s, &owner, &public, &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert!(p["errors"][0]["field"].is_string(), "{p}");
    }
    let d = expect_status(
        s.get(&analyst, &format!("/v1/datasets/{public}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(d["public_test_data"], false, "{d}");
    let d = expect_status(
        patch(&s, &owner, &public, &json!({"public_test_data": true})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(d["public_test_data"], true, "{d}");
    let at = d["public_test_data_at"].as_str().unwrap().to_owned();
    // Idempotent: the first declaration's time stays.
    let again = expect_status(
        patch(&s, &owner, &public, &json!({"public_test_data": true})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(again["public_test_data_at"], at.as_str());
    let d = expect_status(
        s.get(&analyst, &format!("/v1/datasets/{public}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(d["public_test_data"], true, "{d}");

    let job = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": train, "epsilon": 2.0, "rounds": 9}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let job = s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model_id = job["model_id"].as_str().unwrap().to_owned();
    let route = format!("/v1/models/{model_id}/evaluate");
    let body = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let model = Model::from_json(&body["model"].to_string()).unwrap();
    let (accuracy, auc) = exact_on_mushroom(&model);

    // Exact, uncharged, marked public; epsilon may be left out.
    let before = s.ledger(&owner, &public).await;
    let e = expect_status(
        s.post(&analyst, &route, &json!({"dataset_id": public}))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(e["state"], "done", "{e}");
    assert_eq!(e["public"], true, "{e}");
    assert_eq!(e["epsilon"], 0.0, "{e}");
    let result = &e["result"];
    assert_eq!(result["public"], true, "{e}");
    assert_eq!(result["n_rows"], 8124, "{e}");
    assert_eq!(result["accuracy"].as_f64().unwrap(), accuracy, "{e}");
    assert_eq!(result["roc_auc"].as_f64().unwrap(), auc, "{e}");
    assert!(result["mechanism"].as_str().unwrap().starts_with("none"));
    // A given epsilon is not spent on public test data.
    let e2 = expect_status(
        s.post(
            &owner,
            &route,
            &json!({"dataset_id": public, "epsilon": 0.5}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(e2["result"], e["result"]);
    assert_eq!(s.ledger(&owner, &public).await, before);
    let read = expect_status(
        s.get(
            &owner,
            &format!("/v1/evaluations/{}", e["id"].as_str().unwrap()),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(read["public"], true);
    assert_eq!(read["result"], e["result"]);

    // A dataset that is not public still charges, and still needs epsilon.
    let p = expect_status(
        s.post(&owner, &route, &json!({"dataset_id": private}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "epsilon", "{p}");
    let before = s.ledger(&owner, &private).await;
    let e = expect_status(
        s.post(
            &owner,
            &route,
            &json!({"dataset_id": private, "epsilon": 0.4}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(e["public"], false, "{e}");
    assert_eq!(e["epsilon"], 0.4, "{e}");
    let after = s.ledger(&owner, &private).await;
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().unwrap()["epsilon"], 0.4);
    assert_eq!(after.last().unwrap()["job_id"], e["id"]);
}
