//! Multiclass over HTTP (issue 27): a table with a three-class label
//! uploads (a value outside the class list is refused with its row and
//! without the value), learners that cannot do multiclass are refused
//! before any charge, dp-linear trains and predicts a class with one
//! probability per class summing to 1, and a private evaluation of the
//! model is refused before its charge.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

const SCHEMA: &str = r#"{
  "label": {"column": "grade", "classes": ["low", "mid", "high"]},
  "columns": [
    {"name": "level", "type": "categorical", "categories": ["a", "b", "c"]},
    {"name": "flag", "type": "boolean"}
  ]
}"#;

/// 3000 rows whose `level` decides the grade (a -> low, b -> mid, c ->
/// high), one in ten shifted to the next grade.
fn table() -> Vec<u8> {
    let mut csv = String::from("level,flag,grade\n");
    for i in 0..3000usize {
        let c = i % 3;
        let y = if i % 10 == 0 { (c + 1) % 3 } else { c };
        csv.push_str(&format!(
            "{},{},{}\n",
            ["a", "b", "c"][c],
            i / 3 % 2,
            ["low", "mid", "high"][y]
        ));
    }
    csv.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multiclass_table_trains_predicts_and_refuses_before_any_charge() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;

    // A label outside the class list: the row and column, not the value.
    let bad = b"level,flag,grade\na,1,low\nb,0,medium\n".to_vec();
    let problem = s.upload(&owner, "bad", 2.0, SCHEMA, bad).await;
    assert_eq!(problem.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let text = problem.text().await.unwrap();
    assert!(text.contains("row 2"), "{text}");
    assert!(text.contains("not one of the schema's classes"), "{text}");
    assert!(!text.contains("medium"), "the value is echoed: {text}");

    let body = expect_status(
        s.upload(&owner, "grades", 4.0, SCHEMA, table()).await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    assert_eq!(body["dataset"]["n_rows"], 3000);

    let before = s.ledger(&owner, &dataset).await;
    for algorithm in ["dp-ebm", "lazybb", "dpboost", "auto"] {
        let request = json!({"dataset_id": dataset, "epsilon": 1.0, "algorithm": algorithm});
        let problem = expect_status(
            s.post(&owner, "/v1/jobs", &request).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        let message = problem["errors"][0]["message"].as_str().unwrap();
        assert!(
            message.contains("cannot do multiclass classification"),
            "{algorithm}: {message}"
        );
    }
    assert_eq!(s.ledger(&owner, &dataset).await, before, "nothing charged");

    let request = json!({"dataset_id": dataset, "epsilon": 2.0, "algorithm": "dp-linear"});
    let job = expect_status(
        s.post(&owner, "/v1/jobs", &request).await,
        StatusCode::ACCEPTED,
    )
    .await;
    let job = s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model_id = job["model_id"].as_str().unwrap().to_owned();

    let rows = json!({"rows": [
        {"level": "a", "flag": "1"}, {"level": "b", "flag": "0"}, {"level": "c", "flag": "1"}]});
    let predicted = expect_status(
        s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    for (i, want) in ["low", "mid", "high"].iter().enumerate() {
        let p = &predicted["predictions"][i];
        assert_eq!(p["class"], *want, "{predicted}");
        let probabilities: Vec<f64> = p["probabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(probabilities.len(), 3);
        assert!(
            (probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9,
            "{p}"
        );
        assert!(probabilities[i] > 0.5, "{p}");
    }

    // Its quality cannot be released privately yet: refused, not charged.
    let before = s.ledger(&owner, &dataset).await;
    let problem = expect_status(
        s.post(
            &owner,
            &format!("/v1/models/{model_id}/evaluate"),
            &json!({"dataset_id": dataset, "epsilon": 0.5}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem.to_string().contains("multiclass"), "{problem}");
    assert_eq!(s.ledger(&owner, &dataset).await, before, "nothing charged");
}
