//! `GET /v1/models/{id}/export?format=onnx` (issue 29, item 2): whoever may
//! read a model may export it (the owner, a granted analyst), anyone else
//! gets 404 as for reading it; the file is the library's export of the
//! stored model, with the privacy statement in its metadata; an unknown
//! format is refused with 422, and nothing is charged.

mod common;

use common::{TestServer, expect_status, small_csv};
use privboost::export::proto::ModelProto;
use privboost::learn::Model;
use prost::Message;
use reqwest::StatusCode;
use serde_json::json;

const SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "1", "negative": "0"},
  "columns": [
    {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4, "missing": ["?"]},
    {"name": "c", "type": "categorical", "categories": ["a", "b"]}
  ]
}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_follows_model_access_and_charges_nothing() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "olga").await;
    let (analyst_id, analyst) = s.key("analyst", "ann").await;
    let (_, stranger) = s.key("analyst", "sam").await;
    let r = s
        .upload(&owner, "ds", 10.0, SCHEMA, small_csv(300).into_bytes())
        .await;
    let ds = expect_status(r, StatusCode::CREATED).await["dataset"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .put(s.at(&format!("/v1/datasets/{ds}/grants/{analyst_id}")))
            .bearer_auth(&owner),
    )
    .await;
    let r = s
        .post(
            &analyst,
            "/v1/jobs",
            &json!({"dataset_id": ds, "epsilon": 1.0, "algorithm": "dpboost"}),
        )
        .await;
    let job = expect_status(r, StatusCode::ACCEPTED).await;
    let job = s.wait_job(&analyst, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model_id = job["model_id"].as_str().unwrap().to_owned();
    let spent = s.ledger(&owner, &ds).await.len();

    let stored = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let model = Model::from_json(&stored["model"].to_string()).unwrap();
    let expected =
        privboost::export::export(&model, privboost::export::ExportFormat::Onnx).unwrap();

    for key in [&owner, &analyst] {
        let r = s
            .get(key, &format!("/v1/models/{model_id}/export?format=onnx"))
            .await;
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(
            r.headers()["content-type"].to_str().unwrap(),
            "application/octet-stream"
        );
        assert!(
            r.headers()["content-disposition"]
                .to_str()
                .unwrap()
                .contains(&format!("{model_id}.onnx"))
        );
        let bytes = r.bytes().await.unwrap();
        assert_eq!(bytes.as_ref(), expected.as_slice());
        let proto = ModelProto::decode(bytes.as_ref()).unwrap();
        let privacy = proto
            .metadata_props
            .iter()
            .find(|e| e.key.as_deref() == Some("privboost.privacy"))
            .and_then(|e| e.value.clone())
            .unwrap();
        let privacy: serde_json::Value = serde_json::from_str(&privacy).unwrap();
        assert_eq!(privacy, stored["privacy"]);
    }

    // An analyst without a grant: as for reading the model, 404.
    let r = s
        .get(
            &stranger,
            &format!("/v1/models/{model_id}/export?format=onnx"),
        )
        .await;
    let problem = expect_status(r, StatusCode::NOT_FOUND).await;
    assert_eq!(problem["status"], 404, "{problem}");
    let r = s
        .get(&owner, "/v1/models/model_nonexistent/export?format=onnx")
        .await;
    expect_status(r, StatusCode::NOT_FOUND).await;

    // An unknown format: 422 naming the field and the formats.
    let r = s
        .get(&owner, &format!("/v1/models/{model_id}/export?format=pmml"))
        .await;
    let problem = expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(problem.to_string().contains("onnx"), "{problem}");

    // Post-processing: nothing charged.
    assert_eq!(s.ledger(&owner, &ds).await.len(), spent);
}
