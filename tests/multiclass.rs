//! Multiclass over HTTP (issue 27): a table with a three-class label
//! uploads (a value outside the class list is refused with its row and
//! without the value), dp-linear trains and predicts a class with one
//! probability per class summing to 1, the model serves on the Open
//! Inference Protocol and the MLflow-style route alike, and a private
//! evaluation releases its accuracy, macro-F1 and a noisy confusion matrix
//! for one charge.

mod common;

use common::{TestServer, expect_classes, expect_status};
use reqwest::StatusCode;
use serde_json::{Value, json};

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
async fn a_multiclass_table_trains_predicts_and_evaluates() {
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

    let request = json!({"dataset_id": dataset, "epsilon": 2.0, "algorithm": "dp-linear"});
    let job = s.run_job(&owner, &request).await;
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
    let probabilities = expect_classes(&predicted, &["low", "mid", "high"], 3);
    for (i, p) in probabilities.iter().enumerate() {
        assert!(p[i] > 0.5, "{predicted}");
    }

    serves_over_oip_and_mlflow(&s, &owner, &model_id, &predicted).await;

    // The model resource's inspection shows every class's coefficients.
    let resource = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let classes = resource["inspection"]["classes"].as_array().unwrap();
    let names: Vec<&str> = classes
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["low", "mid", "high"], "{resource}");
    assert!(
        classes
            .iter()
            .all(|c| !c["coefficients"].as_array().unwrap().is_empty())
    );

    // `auto` trains k classes: the prior's multiclass order (DP-EBM first
    // at delta = 0), with the rule recorded in the model.
    let request = json!({"dataset_id": dataset, "epsilon": 1.0, "algorithm": "auto"});
    let job = s.run_job(&owner, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let auto_id = job["model_id"].as_str().unwrap().to_owned();
    let auto = expect_status(
        s.get(&owner, &format!("/v1/models/{auto_id}")).await,
        StatusCode::OK,
    )
    .await;
    let selection = &auto["model"]["selection"];
    assert_eq!(selection["candidates"][0]["label"], "dp-ebm", "{auto}");
    assert!(
        selection["rule"]
            .as_str()
            .unwrap()
            .contains("fitted on the benchmark suite's 7 multiclass sets"),
        "{auto}"
    );
    let predicted_auto = expect_status(
        s.post(&owner, &format!("/v1/models/{auto_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        predicted_auto["predictions"][2]["class"], "high",
        "{predicted_auto}"
    );

    // Its quality released privately: accuracy, macro-F1 and a noisy 3 x 3
    // confusion matrix, charged once to the dataset's ledger.
    let before = s.ledger(&owner, &dataset).await;
    let e = expect_status(
        s.post(
            &owner,
            &format!("/v1/models/{model_id}/evaluate"),
            &json!({"dataset_id": dataset, "epsilon": 0.5}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(e["state"], "done", "{e}");
    let result = &e["result"];
    assert_eq!(result["task"], "multiclass", "{e}");
    assert_eq!(result["n_rows"], 3000);
    assert_eq!(result["classes"], json!(["low", "mid", "high"]));
    // The model is right on the 2700 unshifted rows: noise of scale 4 per
    // cell moves the accuracy by well under 0.02 on 3000 rows.
    let accuracy = result["accuracy"].as_f64().unwrap();
    assert!((accuracy - 0.9).abs() < 0.02, "{e}");
    let f1 = result["macro_f1"].as_f64().unwrap();
    assert!((f1 - 0.9).abs() < 0.03, "{e}");
    let confusion = result["confusion"].as_array().unwrap();
    assert_eq!(confusion.len(), 3);
    // Actual "low" rows are predicted "low" 900 times (+ noise).
    assert!((confusion[0][0].as_i64().unwrap() - 900).abs() < 60, "{e}");
    let after = s.ledger(&owner, &dataset).await;
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().unwrap()["epsilon"], 0.5);

    // An epsilon whose noise the sampler cannot draw: refused, not charged.
    let problem = expect_status(
        s.post(
            &owner,
            &format!("/v1/models/{model_id}/evaluate"),
            &json!({"dataset_id": dataset, "epsilon": 5e-324}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(problem.to_string().contains("epsilon"), "{problem}");
    assert_eq!(s.ledger(&owner, &dataset).await, after, "nothing charged");
}

/// The model deployed as `grades` answers the same classes and
/// probabilities on the Open Inference Protocol (JSON and binary outputs,
/// probabilities as an [n, 3] tensor, the class names in the metadata) and
/// on the MLflow-style invocations route as on `/predict`.
async fn serves_over_oip_and_mlflow(
    s: &TestServer,
    owner: &str,
    model_id: &str,
    predicted: &Value,
) {
    let r = s
        .client
        .put(s.at("/v1/deployments/grades"))
        .bearer_auth(owner)
        .json(&json!({"model_id": model_id}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let (_, analyst) = s.key("analyst", "bob").await;
    let classes = json!(["low", "mid", "high"]);

    let meta = expect_status(s.get(&analyst, "/v2/models/grades").await, StatusCode::OK).await;
    assert_eq!(
        meta["outputs"],
        json!([
            {"name": "class", "datatype": "BYTES", "shape": [-1], "parameters": {"classes": classes}},
            {"name": "probabilities", "datatype": "FP64", "shape": [-1, 3], "parameters": {"classes": classes}},
        ]),
        "{meta}"
    );

    let want_class: Vec<Value> = (0..3)
        .map(|i| predicted["predictions"][i]["class"].clone())
        .collect();
    let want_probabilities: Vec<f64> = (0..3)
        .flat_map(|i| {
            predicted["predictions"][i]["probabilities"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let inputs = json!([
        {"name": "level", "datatype": "BYTES", "shape": [3], "data": ["a", "b", "c"]},
        {"name": "flag", "datatype": "BOOL", "shape": [3], "data": [true, false, true]},
    ]);
    let out = expect_status(
        s.post(
            &analyst,
            "/v2/models/grades/infer",
            &json!({"inputs": inputs}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(out["outputs"][0]["name"], "class");
    assert_eq!(out["outputs"][0]["shape"], json!([3]));
    assert_eq!(out["outputs"][0]["data"], json!(want_class));
    assert_eq!(out["outputs"][1]["name"], "probabilities");
    assert_eq!(out["outputs"][1]["datatype"], "FP64");
    assert_eq!(out["outputs"][1]["shape"], json!([3, 3]));
    assert_eq!(out["outputs"][1]["data"], json!(want_probabilities));

    // Binary outputs: the probabilities are 9 little-endian f64, row-major.
    let request = json!({
        "inputs": inputs,
        "outputs": [{"name": "probabilities", "parameters": {"binary_data": true}}],
    });
    let r = s.post(&analyst, "/v2/models/grades/infer", &request).await;
    assert_eq!(r.status(), 200);
    let json_len: usize = r.headers()["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let bytes = r.bytes().await.unwrap();
    let head: Value = serde_json::from_slice(&bytes[..json_len]).unwrap();
    assert_eq!(head["outputs"][0]["shape"], json!([3, 3]));
    assert_eq!(head["outputs"][0]["parameters"]["binary_data_size"], 72);
    let got: Vec<f64> = bytes[json_len..]
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, want_probabilities);

    let body = json!({"dataframe_split": {"columns": ["level", "flag"],
        "data": [["a", "1"], ["b", "0"], ["c", "1"]]}});
    let r = s
        .client
        .post(s.at("/v1/deployments/grades/invocations"))
        .bearer_auth(&analyst)
        .json(&body)
        .send()
        .await
        .unwrap();
    let got = expect_status(r, StatusCode::OK).await;
    assert_eq!(got["predictions"], predicted["predictions"], "{got}");
}

/// LazyBB for k classes over HTTP (one-vs-rest, docs/privacy.md "LazyBB for
/// k classes"): a density whose per-fit scale is unusable is refused by the
/// estimate and the job routes before any charge; the default job trains 3
/// fits, predicts each level's class with probabilities summing to 1,
/// states the split, inspects per class, and is charged its epsilon once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lazybb_trains_one_fit_per_class() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let body = expect_status(
        s.upload(&owner, "grades", 4.0, SCHEMA, table()).await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();

    let before = s.ledger(&owner, &dataset).await;
    let bad = json!({"dataset_id": dataset, "epsilon": 1.0, "algorithm": "lazybb",
        "rounds": 5, "density": 1e-311});
    for route in ["/v1/jobs/estimate", "/v1/jobs"] {
        let p = expect_status(
            s.post(&owner, route, &bad).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        let message = p["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("kappa"), "{route}: {p}");
    }
    assert_eq!(s.ledger(&owner, &dataset).await, before, "nothing charged");

    let request = json!({"dataset_id": dataset, "epsilon": 3.0, "algorithm": "lazybb"});
    let job = s.run_job(&owner, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model_id = job["model_id"].as_str().unwrap().to_owned();
    let after = s.ledger(&owner, &dataset).await;
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().unwrap()["epsilon"], 3.0);

    let rows = json!({"rows": [
        {"level": "a", "flag": "1"}, {"level": "b", "flag": "0"}, {"level": "c", "flag": "1"}]});
    let predicted = expect_status(
        s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    expect_classes(&predicted, &["low", "mid", "high"], 3);

    let resource = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let statement = &resource["model"]["privacy"]["one_vs_rest"];
    assert_eq!(statement["fits"], 3, "{resource}");
    assert_eq!(statement["epsilon_per_fit"], 1.0, "{resource}");
    let classes = resource["inspection"]["classes"].as_array().unwrap();
    let names: Vec<&str> = classes
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["low", "mid", "high"], "{resource}");
    assert!(
        classes
            .iter()
            .all(|c| !c["rules"]["vote_table"].as_array().unwrap().is_empty()),
        "{resource}"
    );
}

/// DP-EBM on the same three-class table (issue 27): trained over HTTP with
/// delta > 0 (zCDP, one charge of the requested budget), it predicts the
/// column's class with three probabilities summing to 1, serves the same
/// on the Open Inference Protocol and the MLflow-style route, and the model
/// resource's inspection shows one shape function per class.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multiclass_dp_ebm_trains_serves_and_inspects() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let body = expect_status(
        s.upload_form(&owner, "grades", "4", SCHEMA, table(), &[("delta", "1e-5")])
            .await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    let before = s.ledger(&owner, &dataset).await;
    let request =
        json!({"dataset_id": dataset, "epsilon": 2.0, "delta": 1e-6, "algorithm": "dp-ebm"});
    let job = s.run_job(&owner, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let after = s.ledger(&owner, &dataset).await;
    assert_eq!(after.len(), before.len() + 1, "one charge");
    assert_eq!(after.last().unwrap()["epsilon"], 2.0);
    let model_id = job["model_id"].as_str().unwrap().to_owned();

    let rows = json!({"rows": [
        {"level": "a", "flag": "1"}, {"level": "b", "flag": "0"}, {"level": "c", "flag": "1"}]});
    let predicted = expect_status(
        s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    expect_classes(&predicted, &["low", "mid", "high"], 3);

    serves_over_oip_and_mlflow(&s, &owner, &model_id, &predicted).await;

    let resource = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let inspection = &resource["inspection"];
    assert_eq!(
        inspection["classes"],
        json!(["low", "mid", "high"]),
        "{resource}"
    );
    assert_eq!(inspection["intercepts"].as_array().unwrap().len(), 3);
    let level = inspection["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["feature"] == "level")
        .unwrap();
    for bin in level["bins"].as_array().unwrap() {
        assert_eq!(bin["values"].as_array().unwrap().len(), 3, "{bin}");
    }
}

/// DPBoost for k classes over HTTP (one-vs-rest, docs/privacy.md "DPBoost
/// for k classes"): an `init_share` whose per-fit scale is unusable is
/// refused by the estimate and the job routes before any charge, naming the
/// split; the estimate states the k fits; the default job trains 3 fits,
/// predicts each level's class with probabilities summing to 1, serves the
/// same on the Open Inference Protocol and the MLflow-style route, states
/// the split, inspects per class, is charged its epsilon once, and refuses
/// ONNX export by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dpboost_trains_one_fit_per_class() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let body = expect_status(
        s.upload(&owner, "grades", 4.0, SCHEMA, table()).await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();

    let before = s.ledger(&owner, &dataset).await;
    let bad = json!({"dataset_id": dataset, "epsilon": 0.01, "algorithm": "dpboost",
        "init_share": 1e-15});
    for route in ["/v1/jobs/estimate", "/v1/jobs"] {
        let p = expect_status(
            s.post(&owner, route, &bad).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        let message = p["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains("out of range"), "{route}: {p}");
        assert!(message.contains("3 one-vs-rest fits"), "{route}: {p}");
    }
    assert_eq!(s.ledger(&owner, &dataset).await, before, "nothing charged");

    let request = json!({"dataset_id": dataset, "epsilon": 3.0, "algorithm": "dpboost"});
    let estimate = expect_status(
        s.post(&owner, "/v1/jobs/estimate", &request).await,
        StatusCode::OK,
    )
    .await;
    let text = estimate.to_string();
    assert!(text.contains("\"one_vs_rest_fits\":3"), "{estimate}");
    assert!(text.contains("one-vs-rest over 3 classes"), "{estimate}");

    let job = s.run_job(&owner, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model_id = job["model_id"].as_str().unwrap().to_owned();
    let after = s.ledger(&owner, &dataset).await;
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(after.last().unwrap()["epsilon"], 3.0);

    let rows = json!({"rows": [
        {"level": "a", "flag": "1"}, {"level": "b", "flag": "0"}, {"level": "c", "flag": "1"}]});
    let predicted = expect_status(
        s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    expect_classes(&predicted, &["low", "mid", "high"], 3);

    serves_over_oip_and_mlflow(&s, &owner, &model_id, &predicted).await;

    let resource = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let statement = &resource["model"]["privacy"]["one_vs_rest"];
    assert_eq!(statement["fits"], 3, "{resource}");
    assert_eq!(statement["epsilon_per_fit"], 1.0, "{resource}");
    assert_eq!(
        resource["model"]["one_vs_rest"].as_array().unwrap().len(),
        3,
        "{resource}"
    );
    let classes = resource["inspection"]["classes"].as_array().unwrap();
    let names: Vec<&str> = classes
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["low", "mid", "high"], "{resource}");
    assert!(
        classes
            .iter()
            .all(|c| c["trees"].as_array().unwrap().len() == 10),
        "{resource}"
    );

    let r = s
        .get(&owner, &format!("/v1/models/{model_id}/export?format=onnx"))
        .await;
    let status = r.status();
    let text = r.text().await.unwrap();
    assert!(status.is_client_error(), "{status}: {text}");
    assert!(text.contains("multiclass"), "{text}");
}
