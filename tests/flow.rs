//! The full flow on the shipped Mushroom data: upload -> estimate -> train
//! -> poll -> inspect -> deploy -> predict (one row and 1,000), with
//! predictions equal to `privboost predict` on the same model file.

mod common;

use common::{TestServer, expect_status, mushroom_csv};
use reqwest::StatusCode;
use serde_json::{Map, Value, json};

/// The first `n` data rows of the Mushroom CSV as JSON objects, and as CSV text.
fn mushroom_rows(n: usize) -> (Vec<Map<String, Value>>, String) {
    let text = std::fs::read_to_string(mushroom_csv()).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let mut rows = Vec::new();
    let mut csv = header.join(",");
    csv.push('\n');
    for line in lines.take(n) {
        csv.push_str(line);
        csv.push('\n');
        let row: Map<String, Value> = header
            .iter()
            .zip(line.split(','))
            .filter(|(h, _)| **h != "class")
            .map(|(h, v)| (h.to_string(), json!(v)))
            .collect();
        rows.push(row);
    }
    (rows, csv)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_flow_on_mushroom_matches_the_cli() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let (analyst_id, analyst) = s.key("analyst", "ann").await;
    let dataset = s.upload_mushroom(&owner, 2.0).await;
    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .put(s.at(&format!("/v1/datasets/{dataset}/grants/{analyst_id}")))
            .bearer_auth(&owner),
    )
    .await;

    // Estimate: the charge and the noise, nothing spent.
    let request =
        json!({"dataset_id": dataset, "epsilon": 1.0, "tau": 15, "lambda": 0.25, "kappa": 0.25});
    let estimate = expect_status(
        s.post(&analyst, "/v1/jobs/estimate", &request).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(estimate["charge"]["epsilon"], 1.0);
    assert_eq!(estimate["noise"]["n_rows"], 8124);
    assert!(estimate["noise"]["eta"].as_f64().unwrap() > 0.0);
    assert_eq!(estimate["admissible"], true);
    let budget = expect_status(
        s.get(&analyst, &format!("/v1/datasets/{dataset}/budget"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        budget["remaining"]["epsilon"], 2.0,
        "an estimate spends nothing"
    );

    // Train and poll.
    let r = s.post(&analyst, "/v1/jobs", &request).await;
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    assert!(r.headers().contains_key("retry-after"));
    let job = expect_status(r, StatusCode::ACCEPTED).await;
    assert_eq!(
        location,
        format!("/v1/jobs/{}", job["id"].as_str().unwrap())
    );
    let job = s.wait_job(&analyst, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["progress"], json!({"rounds_done": 15, "tau": 15}));
    let model_id = job["model_id"].as_str().unwrap().to_owned();

    // Inspect: privacy statement and vote table.
    let model = expect_status(
        s.get(&analyst, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(model["privacy"]["epsilon"], 1.0);
    assert!(
        model["privacy"]["neighbouring"]
            .as_str()
            .unwrap()
            .contains("substitution")
    );
    assert!(
        !model["inspection"]["vote_table"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(model["inspection"]["features_used"].as_array().is_some());
    let listed = expect_status(s.get(&analyst, "/v1/models").await, StatusCode::OK).await;
    assert_eq!(listed["items"][0]["id"], model_id.as_str());

    // Deploy and predict.
    let d = s
        .expect(
            StatusCode::CREATED,
            s.client
                .put(s.at("/v1/deployments/mushroom"))
                .bearer_auth(&analyst)
                .json(&json!({"model_id": model_id})),
        )
        .await;
    assert_eq!(d["model_id"], model_id.as_str());
    let (rows, csv) = mushroom_rows(1000);
    let one = expect_status(
        s.post(
            &analyst,
            "/v1/deployments/mushroom/predict",
            &json!({"rows": [rows[0]]}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(one["predictions"].as_array().unwrap().len(), 1);
    let batch = expect_status(
        s.post(
            &analyst,
            "/v1/deployments/mushroom/predict",
            &json!({"rows": rows}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let served = batch["predictions"].as_array().unwrap();
    assert_eq!(served.len(), 1000);
    assert_eq!(served[0], one["predictions"][0]);
    let by_model = expect_status(
        s.post(
            &analyst,
            &format!("/v1/models/{model_id}/predict"),
            &json!({"rows": rows}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(&by_model["predictions"], &batch["predictions"]);

    // The CLI on the same model file and rows.
    let dir = tempfile::tempdir().unwrap();
    let model_path = dir.path().join("model.json");
    let data_path = dir.path().join("rows.csv");
    std::fs::write(
        &model_path,
        serde_json::to_string_pretty(&model["model"]).unwrap(),
    )
    .unwrap();
    std::fs::write(&data_path, csv).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args(["predict", "--model"])
        .arg(&model_path)
        .arg("--data")
        .arg(&data_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "CLI failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let cli: Vec<Vec<String>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect();
    assert_eq!(cli.len(), 1000);
    for (i, (c, p)) in cli.iter().zip(served).enumerate() {
        assert_eq!(c[0], p["class"].as_str().unwrap(), "row {i}");
        assert_eq!(
            c[1].parse::<f64>().unwrap(),
            p["score"].as_f64().unwrap(),
            "row {i}"
        );
        assert_eq!(
            c[2].parse::<f64>().unwrap(),
            p["probability"].as_f64().unwrap(),
            "row {i}"
        );
    }

    // Open Inference Protocol v2: one tensor per column.
    let columns: Vec<&String> = rows[0].keys().collect();
    let inputs: Vec<Value> = columns
        .iter()
        .map(|c| json!({"name": c, "shape": [3], "datatype": "BYTES", "data": rows[..3].iter().map(|r| r[*c].clone()).collect::<Vec<_>>()}))
        .collect();
    let infer = expect_status(
        s.post(
            &analyst,
            "/v2/models/mushroom/infer",
            &json!({"id": "r1", "inputs": inputs}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(infer["model_name"], "mushroom");
    let scores = &infer["outputs"][1]["data"];
    for i in 0..3 {
        assert_eq!(scores[i], served[i]["score"]);
    }

    // Re-pointing a deployment is one atomic update.
    let second = s
        .post(
            &analyst,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.5}),
        )
        .await;
    let second = expect_status(second, StatusCode::ACCEPTED).await;
    let second = s.wait_job(&analyst, second["id"].as_str().unwrap()).await;
    let updated = s
        .expect(
            StatusCode::OK,
            s.client
                .put(s.at("/v1/deployments/mushroom"))
                .bearer_auth(&analyst)
                .json(&json!({"model_id": second["model_id"]})),
        )
        .await;
    assert_eq!(updated["model_id"], second["model_id"]);
    let budget = expect_status(
        s.get(&owner, &format!("/v1/datasets/{dataset}/budget"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(budget["spent"]["epsilon"], 1.5);
    assert_eq!(budget["remaining"]["epsilon"], 0.5);
    s.stop().await;
}

/// The first 200 Mushroom rows predicted by `model_id` over HTTP and by
/// `privboost predict` on its file (`model`: the model route's body): the
/// CLI's (class, score, probability) per row, the route's answer, and the
/// rows as CSV.
async fn served_and_cli(
    s: &TestServer,
    key: &str,
    model_id: &str,
    model: &Value,
) -> (Vec<(String, f64, f64)>, Value, String) {
    let (rows, csv) = mushroom_rows(200);
    let served = expect_status(
        s.post(
            key,
            &format!("/v1/models/{model_id}/predict"),
            &json!({"rows": rows}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    (cli_predict(&model["model"], &csv), served, csv)
}

/// Run `privboost predict` on a model file and rows; returns (class, score, probability) per row.
fn cli_predict(model: &Value, csv: &str) -> Vec<(String, f64, f64)> {
    let dir = tempfile::tempdir().unwrap();
    let model_path = dir.path().join("model.json");
    let data_path = dir.path().join("rows.csv");
    std::fs::write(&model_path, serde_json::to_string_pretty(model).unwrap()).unwrap();
    std::fs::write(&data_path, csv).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args(["predict", "--model"])
        .arg(&model_path)
        .arg("--data")
        .arg(&data_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "CLI failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].to_owned(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_down_trees_train_and_predict_like_the_cli() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let dataset = s.upload_mushroom(&owner, 2.0).await;
    let request = json!({"dataset_id": dataset, "epsilon": 1.0, "tau": 9, "weak_learner": "dp-top-down", "internal_nodes": 2});
    let estimate = expect_status(
        s.post(&owner, "/v1/jobs/estimate", &request).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(estimate["params"]["internal_nodes"], 2);
    assert!(
        estimate["noise"]["leaf_scale"].as_f64().unwrap() > 0.0,
        "{estimate}"
    );
    let job = s.run_job(&owner, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model_id = job["model_id"].as_str().unwrap();
    let model = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let (cli, served, _) = served_and_cli(&s, &owner, model_id, &model).await;
    for (i, (c, p)) in cli
        .iter()
        .zip(served["predictions"].as_array().unwrap())
        .enumerate()
    {
        assert_eq!(c.0, p["class"].as_str().unwrap(), "row {i}");
        assert_eq!(c.1, p["score"].as_f64().unwrap(), "row {i}");
        assert_eq!(c.2, p["probability"].as_f64().unwrap(), "row {i}");
    }
    // internal_nodes belongs to TopDown only.
    let bad = json!({"dataset_id": dataset, "epsilon": 0.1, "internal_nodes": 2});
    let p = expect_status(
        s.post(&owner, "/v1/jobs", &bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(p["errors"][0]["field"], "internal_nodes");
    s.stop().await;
}

/// A job whose parameters the default rule chose says so, and so does its
/// model: the worker re-plans the stored (resolved) parameters, which once
/// made every model say `defaults_used: false` (issue 29). One learner
/// whose model carries the flag at top level and LazyBB, whose carries it
/// in its parameters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_says_defaults_were_used_when_its_job_does() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let dataset = s.upload_mushroom(&owner, 4.0).await;
    for (algorithm, given) in [
        ("lazybb", json!({})),
        ("dp-linear", json!({})),
        // Every LazyBB parameter given: no default was used.
        ("lazybb", json!({"tau": 5, "lambda": 0.25, "kappa": 0.25})),
    ] {
        let mut request = json!({"dataset_id": dataset, "epsilon": 1.0, "algorithm": algorithm});
        for (k, v) in given.as_object().unwrap() {
            request[k] = v.clone();
        }
        let job = s.run_job(&owner, &request).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        let expected = given.as_object().unwrap().is_empty();
        assert_eq!(
            job["params"]["defaults_used"], expected,
            "{algorithm}: {job}"
        );
        let model = s.model_of(&owner, &job).await;
        assert_eq!(
            model["params"]["defaults_used"], expected,
            "{algorithm} {given}: the model disagrees with its job: {model}"
        );
    }
}

/// dp-linear by objective perturbation over HTTP (issue 25): the estimate
/// states its mechanism and charges nothing; the job is charged its epsilon
/// once; the model names both mechanisms (the released discrete Laplace
/// noise and the hidden vector) and predicts as the CLI does; a delta, a
/// block-descent parameter with it, and the regulariser with block descent
/// are 422s on their fields that charge nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objective_perturbation_trains_and_predicts_like_the_cli() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let dataset = s.upload_mushroom(&owner, 4.0).await;
    let request = json!({"dataset_id": dataset, "epsilon": 1.0, "algorithm": "dp-linear",
                         "solver": "objective-perturbation"});
    let before = s.ledger(&owner, &dataset).await;
    let estimate = expect_status(
        s.post(&owner, "/v1/jobs/estimate", &request).await,
        StatusCode::OK,
    )
    .await;
    assert!(
        estimate["noise"]["mechanism"]
            .as_str()
            .unwrap()
            .contains("objective perturbation"),
        "{estimate}"
    );
    assert!(
        estimate["noise"]["steps"].as_u64().unwrap() > 0,
        "{estimate}"
    );
    assert_eq!(estimate["params"]["solver"], "objective-perturbation");
    assert!(estimate["params"]["regularization"].as_f64().unwrap() > 0.0);
    for (bad, field) in [
        (json!({"delta": 1e-6}), "solver"),
        (json!({"ridge": 2.0}), "ridge"),
        (
            json!({"solver": "block-descent", "regularization": 0.1}),
            "regularization",
        ),
    ] {
        let mut body = request.clone();
        for (k, v) in bad.as_object().unwrap() {
            body[k] = v.clone();
        }
        let p = expect_status(
            s.post(&owner, "/v1/jobs", &body).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert_eq!(p["errors"][0]["field"], field, "{bad}: {p}");
    }
    assert_eq!(s.ledger(&owner, &dataset).await, before, "nothing charged");
    let job = s.run_job(&owner, &request).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let ledger = s.ledger(&owner, &dataset).await;
    assert_eq!(ledger.len(), before.len() + 1, "{ledger:?}");
    assert_eq!(ledger.last().unwrap()["epsilon"], 1.0);
    let model_id = job["model_id"].as_str().unwrap();
    let model = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    // The fit's two mechanisms, then the decision threshold's.
    assert_eq!(
        model["privacy"]["mechanisms"],
        json!([
            "discrete-laplace",
            "objective-perturbation",
            "report-noisy-max-discrete-laplace"
        ]),
        "{model}"
    );
    assert_eq!(model["privacy"]["threshold"]["plan"]["epsilon"], 0.025);
    assert!(
        model["privacy"]["sampler"]
            .as_str()
            .unwrap()
            .contains("floating point"),
        "{model}"
    );
    let (cli, served, csv) = served_and_cli(&s, &owner, model_id, &model).await;
    let mut hits = 0usize;
    for (i, (c, p)) in cli
        .iter()
        .zip(served["predictions"].as_array().unwrap())
        .enumerate()
    {
        assert_eq!(c.0, p["class"].as_str().unwrap(), "row {i}");
        assert_eq!(c.2, p["probability"].as_f64().unwrap(), "row {i}");
        // The label is the first column (`class`).
        hits += usize::from(c.0 == csv.lines().nth(i + 1).unwrap().split(',').next().unwrap());
    }
    // Mushroom at epsilon 1: block descent reaches about 0.95 (docs/accuracy.md).
    assert!(hits > 150, "{hits} of 200 rows right");
    s.stop().await;
}
