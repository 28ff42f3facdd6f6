//! Private bins over HTTP: a schema with `"bins": {"private": k}` uploads,
//! every learner trains on it with the binning phase shown in the estimate,
//! the job and the model's statement, the model predicts from its stored cut
//! points, and bad `bins` values are refused before anything is stored.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

fn schema(bins: &str) -> String {
    format!(
        r#"{{"label": {{"column": "y", "positive": "1", "negative": "0"}},
            "columns": [
              {{"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": {bins}}},
              {{"name": "c", "type": "categorical", "categories": ["a", "b"]}}]}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_learner_trains_with_private_bins() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let body = expect_status(
        s.upload_form(
            &owner,
            "small",
            "20",
            &schema(r#"{"private": 4}"#),
            common::small_csv(600).into_bytes(),
            &[("delta", "1e-5")],
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    for (algorithm, delta, extra) in [
        ("lazybb", 0.0, json!({"rounds": 5})),
        ("dp-ebm", 1e-6, json!({"epochs": 5})),
        ("dp-linear", 0.0, json!({"epochs": 3})),
        (
            "dpboost",
            0.0,
            json!({"trees_per_ensemble": 5, "ensembles": 1}),
        ),
    ] {
        let mut request = json!({"dataset_id": dataset, "epsilon": 2.0, "delta": delta,
                                 "algorithm": algorithm});
        for (k, v) in extra.as_object().unwrap() {
            request[k] = v.clone();
        }
        let estimate = expect_status(
            s.post(&owner, "/v1/jobs/estimate", &request).await,
            StatusCode::OK,
        )
        .await;
        let binning = &estimate["noise"]["binning"];
        assert_eq!(binning["columns"], 1, "{algorithm}: {estimate}");
        assert!(binning["scale"].as_f64().unwrap() > 0.0);
        let charged = estimate["charge"]["epsilon"].as_f64().unwrap();
        assert!((charged - 2.0).abs() < 1e-9, "{algorithm}: {estimate}");
        let before = s.ledger(&owner, &dataset).await.len();
        let job = s.run_job(&owner, &request).await;
        assert_eq!(job["state"], "succeeded", "{algorithm}: {job}");
        assert_eq!(job["params"]["binning"]["columns"], 1, "{job}");
        assert_eq!(s.ledger(&owner, &dataset).await.len(), before + 1);
        let model_id = job["model_id"].as_str().unwrap();
        let model = expect_status(
            s.get(&owner, &format!("/v1/models/{model_id}")).await,
            StatusCode::OK,
        )
        .await;
        let privacy = &model["privacy"];
        assert_eq!(
            privacy["binning"]["columns"][0], "x",
            "{algorithm}: {privacy}"
        );
        assert!((privacy["epsilon"].as_f64().unwrap() - 2.0).abs() < 1e-9);
        let rows = json!({"rows": [{"x": 90, "c": "b"}, {"x": 10, "c": "a"}, {"x": 30, "c": "b"}]});
        let predicted = expect_status(
            s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
                .await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(
            predicted["predictions"].as_array().unwrap().len(),
            3,
            "{predicted}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_private_bins_are_refused_before_anything_is_stored() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    for (bins, message) in [
        (r#"{"private": 0}"#, "private must be between 2 and 250"),
        (r#"{"private": 251}"#, "private must be between 2 and 250"),
        (r#"{"private": "8"}"#, "private must be an integer"),
        (r#"{"privat": 8}"#, "unknown or repeated field `privat`"),
        (r#"{"private": 8}, "thresholds": [5]"#, "not both"),
    ] {
        let problem = expect_status(
            s.upload(
                &owner,
                "bad",
                1.0,
                &schema(bins),
                common::small_csv(50).into_bytes(),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert_eq!(problem["errors"][0]["field"], "schema", "{bins}: {problem}");
        let text = problem["errors"][0]["message"].as_str().unwrap();
        assert!(
            text.contains(message) && text.contains("\"x\""),
            "{bins}: {text}"
        );
    }
    // bins on a categorical column is an unknown field there.
    let categorical = r#"{"label": {"column": "y", "positive": "1"}, "columns": [
        {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4},
        {"name": "c", "type": "categorical", "categories": ["a", "b"], "bins": {"private": 4}}]}"#;
    let problem = expect_status(
        s.upload(
            &owner,
            "bad",
            1.0,
            categorical,
            common::small_csv(50).into_bytes(),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let text = problem["errors"][0]["message"].as_str().unwrap();
    assert!(text.contains("unknown field `bins`"), "{text}");
    let list = expect_status(s.get(&owner, "/v1/datasets").await, StatusCode::OK).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 0, "{list}");
}
