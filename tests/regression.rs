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

/// DP-EBM regression over HTTP: estimate shows the zCDP cost, the job
/// trains, the model predicts `value`, and an edit makes a new version that
/// predicts too and names its parent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dp_ebm_regression_end_to_end_with_an_edit() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let (schema, csv) = abalone();
    // DP-EBM spends delta too: the owner's total has some.
    let body = expect_status(
        s.upload_form(&owner, "abalone", "2", &schema, csv, &[("delta", "1e-5")])
            .await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    // delta 0 plans the pure-DP variant (discrete Laplace): a pure cost.
    let pure = json!({"dataset_id": dataset, "epsilon": 1.0, "algorithm": "dp-ebm"});
    let estimate = expect_status(
        s.post(&owner, "/v1/jobs/estimate", &pure).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(estimate["cost"]["kind"], "pure", "{estimate}");
    assert!(
        estimate["noise"]["mechanism"]
            .as_str()
            .unwrap()
            .contains("Laplace"),
        "{estimate}"
    );
    // A LazyBB parameter is refused for DP-EBM.
    let foreign = json!({"dataset_id": dataset, "epsilon": 1.0, "delta": 1e-6,
                         "algorithm": "dp-ebm", "tau": 9});
    let p = expect_status(
        s.post(&owner, "/v1/jobs", &foreign).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "tau", "{p}");

    let request = json!({"dataset_id": dataset, "epsilon": 1.0, "delta": 1e-6,
                         "algorithm": "dp-ebm", "epochs": 20});
    let estimate = expect_status(
        s.post(&owner, "/v1/jobs/estimate", &request).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(estimate["cost"]["kind"], "zcdp", "{estimate}");
    assert!(estimate["cost"]["rho"].as_f64().unwrap() > 0.0);
    assert_eq!(estimate["charge"]["epsilon"], 1.0);
    assert_eq!(estimate["params"]["epochs"], 20);
    let job = s.run_job(&owner, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["tau"], 20, "progress steps are the epochs");
    let model_id = job["model_id"].as_str().unwrap().to_owned();
    let model = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(model["algorithm"], "dp-ebm");
    assert_eq!(model["task"]["kind"], "regression");
    assert!(model["inspection"]["shapes"].as_array().unwrap().len() == 8);

    let rows = json!({"rows": [
        {"Sex": "M", "Length": 0.455, "Diameter": 0.365, "Height": 0.095, "Whole weight": 0.514,
         "Shucked weight": 0.2245, "Viscera weight": 0.101, "Shell weight": 0.15}]});
    let predicted = expect_status(
        s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    let value = predicted["predictions"][0]["value"].as_f64().unwrap();
    assert!((0.0..=30.0).contains(&value), "{predicted}");
    assert!(predicted["predictions"][0].get("class").is_none());

    // Edits: monotone on a numeric column makes a new version; a categorical
    // column has no order; the ledger is unchanged by edits.
    let before = s.ledger(&owner, &dataset).await;
    let edited = expect_status(
        s.post(
            &owner,
            &format!("/v1/models/{model_id}/edits"),
            &json!({"kind": "monotone", "feature": "Shell weight", "increasing": true}),
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(edited["parent_id"], model_id.as_str());
    let new_id = edited["id"].as_str().unwrap();
    assert_ne!(new_id, model_id);
    let p = expect_status(
        s.post(
            &owner,
            &format!("/v1/models/{model_id}/edits"),
            &json!({"kind": "monotone", "feature": "Sex", "increasing": true}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        p["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("no order"),
        "{p}"
    );
    let again = expect_status(
        s.post(&owner, &format!("/v1/models/{new_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    assert!(again["predictions"][0]["value"].as_f64().is_some());
    let detail = expect_status(
        s.get(&owner, &format!("/v1/models/{new_id}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(detail["model"]["edits"][0]["kind"], "monotone");
    assert_eq!(s.ledger(&owner, &dataset).await, before, "edits are free");
}

/// dp-linear over HTTP (issue 11, item 2), pure DP on Abalone: a parameter
/// of another learner is refused by name; the estimate shows a pure cost and
/// the zCDP one with delta > 0; the job charges exactly its epsilon and
/// delta 0 to the ledger, trains, and the model predicts `value` and shows
/// its coefficients by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dp_linear_regression_end_to_end() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let (schema, csv) = abalone();
    let body = expect_status(
        s.upload_form(&owner, "abalone", "2", &schema, csv, &[("delta", "1e-5")])
            .await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    let foreign = json!({"dataset_id": dataset, "epsilon": 1.0,
                         "algorithm": "dp-linear", "max_bins": 8});
    let p = expect_status(
        s.post(&owner, "/v1/jobs", &foreign).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "max_bins", "{p}");
    let bad = json!({"dataset_id": dataset, "epsilon": 1.0,
                     "algorithm": "dp-linear", "ridge": -1.0});
    let p = expect_status(
        s.post(&owner, "/v1/jobs", &bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "ridge", "{p}");

    let zcdp = json!({"dataset_id": dataset, "epsilon": 1.0, "delta": 1e-6,
                      "algorithm": "dp-linear"});
    let estimate = expect_status(
        s.post(&owner, "/v1/jobs/estimate", &zcdp).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(estimate["cost"]["kind"], "zcdp", "{estimate}");
    assert!(
        estimate["noise"]["rho"].as_f64().unwrap() > 0.0,
        "{estimate}"
    );

    let before = s.ledger(&owner, &dataset).await;
    let request = json!({"dataset_id": dataset, "epsilon": 1.0,
                         "algorithm": "dp-linear", "epochs": 3});
    let estimate = expect_status(
        s.post(&owner, "/v1/jobs/estimate", &request).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(estimate["cost"]["kind"], "pure", "{estimate}");
    assert_eq!(estimate["params"]["epochs"], 3);
    assert_eq!(estimate["params"]["numeric_features"], "linear");
    assert!(estimate["noise"]["sigma_gradient"].as_f64().unwrap() > 0.0);
    assert!(estimate["noise"].get("rho").is_none(), "pure: no rho");
    assert_eq!(
        s.ledger(&owner, &dataset).await,
        before,
        "estimates are free"
    );
    let job = s.run_job(&owner, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["tau"], 3, "progress steps are the epochs");
    let ledger = s.ledger(&owner, &dataset).await;
    assert_eq!(ledger.len(), before.len() + 1, "{ledger:?}");
    let entry = ledger.last().unwrap();
    assert_eq!(entry["kind"], "charge", "{entry}");
    assert_eq!(entry["epsilon"], 1.0, "{entry}");
    assert_eq!(entry["delta"], 0.0, "{entry}");

    let model_id = job["model_id"].as_str().unwrap().to_owned();
    let model = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(model["algorithm"], "dp-linear");
    assert_eq!(model["task"]["kind"], "regression");
    assert_eq!(model["privacy"]["mechanisms"][0], "discrete-laplace");
    let coefficients = model["inspection"]["coefficients"].as_array().unwrap();
    assert!(
        coefficients.iter().any(|c| c["feature"] == "Shell weight"),
        "{coefficients:?}"
    );
    let rows = json!({"rows": [
        {"Sex": "M", "Length": 0.455, "Diameter": 0.365, "Height": 0.095, "Whole weight": 0.514,
         "Shucked weight": 0.2245, "Viscera weight": 0.101, "Shell weight": 0.15}]});
    let predicted = expect_status(
        s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    let value = predicted["predictions"][0]["value"].as_f64().unwrap();
    assert!(value.is_finite(), "{predicted}");
    assert!(predicted["predictions"][0].get("class").is_none());
}
