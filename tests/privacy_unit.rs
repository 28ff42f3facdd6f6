//! The privacy unit over real HTTP (issue 28): a table whose units have 1..10
//! rows is bounded at upload (the owner is told how many rows were dropped,
//! analysts never see it), the job is charged the per-unit budget and its
//! plan is the per-row plan at epsilon / k, the statement is per person, and
//! a bad unit is refused before anything is stored or charged.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

const UNIT_SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "1", "negative": "0"},
  "columns": [
    {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4},
    {"name": "c", "type": "categorical", "categories": ["a", "b"]}
  ],
  "privacy_unit": {"column": "patient_id", "max_rows": 4}
}"#;

/// Units p1..p60 with 1..10 rows each (unit u has 1 + u % 10 rows), rows
/// interleaved; `(csv, rows kept at max_rows 4)`.
fn unit_csv() -> (String, usize) {
    let mut s = String::from("patient_id,x,c,y\n");
    let size = |u: usize| 1 + u % 10;
    for round in 0..10 {
        for u in 0..60 {
            if round < size(u) {
                let x = (u * 37 + round * 11) % 100;
                let c = if (u + round) % 3 == 0 { "a" } else { "b" };
                let y = u8::from(x > 50 || c == "a");
                s.push_str(&format!("p{u},{x},{c},{y}\n"));
            }
        }
    }
    let kept = (0..60).map(|u| size(u).min(4)).sum();
    (s, kept)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_are_bounded_charged_and_stated_per_person() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let (analyst_id, analyst) = s.key("analyst", "a").await;
    let (csv, kept) = unit_csv();
    let total: usize = csv.lines().count() - 1;
    let r = s
        .upload(&owner, "visits", 2.0, UNIT_SCHEMA, csv.clone().into_bytes())
        .await;
    let body = expect_status(r, StatusCode::CREATED).await;
    // The owner who uploaded sees the bounded count and how many rows the
    // bound dropped; the identifier is nowhere.
    assert_eq!(body["accepted_rows"], kept);
    assert_eq!(body["unit_dropped_rows"], total - kept);
    assert!(!body.to_string().contains("\"p1\""));
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .put(s.at(&format!("/v1/datasets/{dataset}/grants/{analyst_id}")))
            .bearer_auth(&owner),
    )
    .await;
    // Analysts: n (public) but no dropped count, no identifiers.
    let seen = expect_status(
        s.get(&analyst, &format!("/v1/datasets/{dataset}")).await,
        StatusCode::OK,
    )
    .await;
    let text = seen.to_string();
    assert!(!text.contains("dropped"), "{text}");
    assert!(!text.contains("\"p1\""), "{text}");

    // The estimate: charged per unit; the noise is the row plan's at 1/4.
    let request = json!({"dataset_id": dataset, "epsilon": 1.0, "rounds": 5});
    let estimate = expect_status(
        s.post(&analyst, "/v1/jobs/estimate", &request).await,
        StatusCode::OK,
    )
    .await;
    let text = estimate.to_string();
    assert!(text.contains("privacy_unit"), "{text}");
    assert!(text.contains("\"max_rows\":4"), "{text}");
    // The per-round epsilon of LazyBB with 5 rounds: the rounds get 0.8 of
    // the per-row 1/4 (the vote threshold 0.2 of it, 0.05): 0.2 / 5 = 0.04.
    // (The rounds' share is rounded down by one step: a hair below 0.04.)
    let per_round = estimate["noise"]["epsilon_per_round"].as_f64().unwrap();
    assert!((per_round - 0.04).abs() < 1e-15, "{text}");
    assert!(text.contains("\"epsilon_vote_threshold\":0.05"), "{text}");

    let job = s.run_job(&analyst, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let budget = expect_status(
        s.get(&analyst, &format!("/v1/datasets/{dataset}/budget"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(budget["remaining"]["epsilon"], 1.0, "{budget}");
    assert_eq!(budget["privacy_unit"]["max_rows"], 4, "{budget}");
    assert!(
        budget["privacy_unit"]["statement"]
            .as_str()
            .unwrap()
            .contains("per person (unit `patient_id`, at most 4 rows each"),
        "{budget}"
    );
    assert_eq!(seen["unit_column"], "patient_id");
    assert_eq!(seen["unit_max_rows"], 4);
    let model_id = job["model_id"].as_str().unwrap();
    let model = expect_status(
        s.get(&analyst, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(model["privacy"]["epsilon"], 1.0);
    let neighbouring = model["privacy"]["neighbouring"].as_str().unwrap();
    assert!(
        neighbouring.starts_with("per person (unit `patient_id`, at most 4 rows each"),
        "{neighbouring}"
    );
    let per_round = model["privacy"]["epsilon_per_round"].as_f64().unwrap();
    assert!((per_round - 0.04).abs() < 1e-15, "{model}");
    assert_eq!(model["privacy"]["vote_threshold"]["epsilon"], 0.05);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_units_are_refused_before_anything_is_stored() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let (csv, _) = unit_csv();
    let schema = |unit: &str, columns: &str| {
        format!(
            r#"{{"label": {{"column": "y", "positive": "1"}}, "columns": [{{"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4}}, {{"name": "c", "type": "categorical", "categories": ["a", "b"]}}{columns}], "privacy_unit": {unit}}}"#
        )
    };
    for (schema, status, needle) in [
        (
            schema(r#"{"column": "patient_id", "max_rows": 0}"#, ""),
            StatusCode::UNPROCESSABLE_ENTITY,
            "max_rows",
        ),
        (
            schema(r#"{"column": "patient_id", "max_rows": 2.5}"#, ""),
            StatusCode::UNPROCESSABLE_ENTITY,
            "",
        ),
        (
            schema(
                r#"{"column": "patient_id", "max_rows": 3}"#,
                r#", {"name": "patient_id", "type": "ignore"}"#,
            ),
            StatusCode::UNPROCESSABLE_ENTITY,
            "must not also be listed in columns",
        ),
        (
            schema(r#"{"column": "y", "max_rows": 3}"#, ""),
            StatusCode::UNPROCESSABLE_ENTITY,
            "is the label",
        ),
        (
            schema(r#"{"column": "person", "max_rows": 3}"#, ""),
            StatusCode::UNPROCESSABLE_ENTITY,
            "the privacy unit column \\\"person\\\" is not in the CSV",
        ),
    ] {
        let r = s
            .upload(&owner, "bad", 1.0, &schema, csv.clone().into_bytes())
            .await;
        let got = r.status();
        let body = r.text().await.unwrap();
        assert_eq!(got, status, "{schema}: {body}");
        assert!(body.contains(needle), "{schema}: {body}");
    }
    let list = expect_status(s.get(&owner, "/v1/datasets").await, StatusCode::OK).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 0, "{list}");
}
