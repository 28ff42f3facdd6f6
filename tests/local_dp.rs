//! Local-DP collection end to end: `privboost randomize` on the owner's side,
//! an upload flagged local_dp, a LazyBB job that spends no central budget,
//! the model's privacy statement; and the refusals (other learners, a job
//! epsilon, bad declarations, bad randomize input).

mod common;

use std::path::Path;
use std::process::Command;

use common::{SMALL_SCHEMA, TestServer, expect_classes, expect_status, small_csv};
use reqwest::StatusCode;
use serde_json::json;

/// Run the CLI; (success, stderr).
fn privboost(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args(args)
        .output()
        .expect("privboost runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Randomize `small_csv(rows)` at `epsilon` with the CLI and the `extra`
/// arguments; the output file. stderr must contain `says`.
fn randomize_small(dir: &Path, rows: usize, epsilon: &str, extra: &[&str], says: &str) -> Vec<u8> {
    randomize_csv(dir, SMALL_SCHEMA, &small_csv(rows), epsilon, extra, says)
}

/// Randomize the rows `csv` of `schema` at `epsilon` with the CLI and the
/// `extra` arguments; the output file. stderr must contain `says`.
fn randomize_csv(
    dir: &Path,
    schema_text: &str,
    csv: &str,
    epsilon: &str,
    extra: &[&str],
    says: &str,
) -> Vec<u8> {
    let schema = dir.join("schema.json");
    let raw = dir.join("raw.csv");
    let out = dir.join("randomized.csv");
    std::fs::write(&schema, schema_text).unwrap();
    std::fs::write(&raw, csv).unwrap();
    let mut args = vec![
        "randomize",
        "--schema",
        schema.to_str().unwrap(),
        "--epsilon",
        epsilon,
    ];
    args.extend_from_slice(extra);
    args.extend([raw.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    let (ok, err) = privboost(&args);
    assert!(ok, "{err}");
    assert!(err.contains(says), "{err}");
    std::fs::read(out).unwrap()
}

/// Randomize `small_csv(rows)` at `epsilon` (all-columns protocol); the
/// output CSV.
fn randomized_small(dir: &Path, rows: usize, epsilon: &str) -> Vec<u8> {
    randomize_small(dir, rows, epsilon, &[], "-local DP per row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_dp_dataset_trains_without_central_budget() {
    let dir = tempfile::tempdir().unwrap();
    let csv = randomized_small(dir.path(), 300, "4");
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let body = expect_status(
        s.upload_form(
            &owner,
            "randomized",
            "1",
            SMALL_SCHEMA,
            csv.clone(),
            &[("local_dp_epsilon", "4")],
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    // Two feature columns and the label: an equal share of 4/3 each.
    assert_eq!(body["dataset"]["local_dp"]["epsilon"], 4.0, "{body}");
    let label = body["dataset"]["local_dp"]["label_epsilon"]
        .as_f64()
        .unwrap();
    assert!((label - 4.0 / 3.0).abs() < 1e-12, "{body}");
    assert_eq!(body["accepted_rows"], 300);

    // A job epsilon is refused (nothing central is spent), as is a learner
    // that does not debias; neither charges anything.
    let refused = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 1.0}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        refused.to_string().contains("randomized on the client"),
        "{refused}"
    );
    let refused = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "algorithm": "dp-ebm"}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let text = refused.to_string();
    assert!(text.contains("does not debias local-DP data"), "{text}");
    assert!(
        text.contains("lazybb with the dp-1r weak learner"),
        "{text}"
    );
    assert_eq!(s.ledger(&owner, &dataset).await.len(), 1, "only the total");

    // The estimate states the local-DP cost and a charge of 0.
    let estimate = expect_status(
        s.post(
            &owner,
            "/v1/jobs/estimate",
            &json!({"dataset_id": dataset, "rounds": 5}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(estimate["cost"]["kind"], "local_dp", "{estimate}");
    assert_eq!(estimate["cost"]["local_epsilon"], 4.0, "{estimate}");
    assert_eq!(estimate["charge"]["epsilon"], 0.0, "{estimate}");
    assert_eq!(estimate["admissible"], true, "{estimate}");

    let job = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "rounds": 5}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    assert_eq!(job["params"]["epsilon"], 0.0, "{job}");
    assert_eq!(job["params"]["local_dp"]["epsilon"], 4.0, "{job}");
    let job = s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");

    // The ledger records a charge of 0; the central budget is untouched.
    let ledger = s.ledger(&owner, &dataset).await;
    let charges: Vec<_> = ledger.iter().filter(|e| e["kind"] == "charge").collect();
    assert_eq!(charges.len(), 1, "{ledger:?}");
    assert_eq!(charges[0]["epsilon"], 0.0, "{ledger:?}");
    assert_eq!(charges[0]["delta"], 0.0, "{ledger:?}");
    let budget = expect_status(
        s.get(&owner, &format!("/v1/datasets/{dataset}/budget"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(budget["remaining"]["epsilon"], 1.0, "{budget}");
    assert_eq!(budget["spent"]["epsilon"], 0.0, "{budget}");

    // The model says what protects the rows.
    let model_id = job["model_id"].as_str().unwrap();
    let model = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let privacy = &model["privacy"];
    assert_eq!(privacy["epsilon"], 4.0, "{privacy}");
    assert_eq!(privacy["local_dp"]["local_epsilon"], 4.0, "{privacy}");
    let accounting = privacy["accounting"].as_str().unwrap();
    assert!(
        accounting.starts_with("4-local DP, randomized on the client"),
        "{accounting}"
    );
    assert!(
        accounting.contains("spends no central budget"),
        "{accounting}"
    );

    // A raw dataset still needs a job epsilon.
    let raw = s.upload_small(&owner, 1.0, 50).await;
    let refused = expect_status(
        s.post(&owner, "/v1/jobs", &json!({"dataset_id": raw}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(refused.to_string().contains("epsilon"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_local_dp_declarations_store_nothing() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    for (extra, field) in [
        (vec![("local_dp_epsilon", "0")], "local_dp_epsilon"),
        (vec![("local_dp_epsilon", "NaN")], "local_dp_epsilon"),
        (vec![("local_dp_epsilon", "abc")], "local_dp_epsilon"),
        (
            vec![("local_dp_epsilon", "1"), ("local_dp_label_epsilon", "1")],
            "local_dp_epsilon",
        ),
        (
            vec![("local_dp_label_epsilon", "1")],
            "local_dp_label_epsilon",
        ),
    ] {
        let body = expect_status(
            s.upload_form(
                &owner,
                "bad",
                "1",
                SMALL_SCHEMA,
                small_csv(20).into_bytes(),
                &extra,
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert!(body.to_string().contains(field), "{extra:?}: {body}");
    }
    // A label with a class list: the all-columns protocol randomizes one
    // label bit, so it refuses it before reading a row (sampled-column
    // takes it: `sampled_column_reports_train_k_classes`).
    let multiclass = SMALL_SCHEMA.replace(
        r#""positive": "1", "negative": "0""#,
        r#""classes": ["0", "1", "2"]"#,
    );
    let body = expect_status(
        s.upload_form(
            &owner,
            "bad",
            "1",
            &multiclass,
            small_csv(20).into_bytes(),
            &[("local_dp_epsilon", "4")],
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        body.to_string().contains("a label with 3 classes"),
        "{body}"
    );
    let list = expect_status(s.get(&owner, "/v1/datasets").await, StatusCode::OK).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 0, "{list}");
}

#[test]
fn randomize_refuses_bad_input_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    let raw = dir.path().join("raw.csv");
    let out = dir.path().join("out.csv");
    std::fs::write(&schema, SMALL_SCHEMA).unwrap();
    std::fs::write(&raw, small_csv(10)).unwrap();
    let run = |epsilon: &str, schema: &Path, data: &Path| {
        privboost(&[
            "randomize",
            "--schema",
            schema.to_str().unwrap(),
            "--epsilon",
            epsilon,
            data.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
    };
    for bad in ["0", "-1", "NaN", "inf"] {
        let (ok, err) = run(bad, &schema, &raw);
        assert!(!ok, "{bad}");
        assert!(
            err.contains("--epsilon must be a finite number > 0"),
            "{bad}: {err}"
        );
    }
    let (ok, err) = run("1", &dir.path().join("absent.json"), &raw);
    assert!(!ok && err.contains("cannot read schema"), "{err}");
    let unknown = dir.path().join("unknown.csv");
    std::fs::write(&unknown, "x,c,y,z\n1,a,1,9\n").unwrap();
    let (ok, err) = run("1", &schema, &unknown);
    assert!(
        !ok && err.contains("column \"z\" is not in the schema"),
        "{err}"
    );
    let bad_value = dir.path().join("bad_value.csv");
    std::fs::write(&bad_value, "x,c,y\n1,zzz,1\n").unwrap();
    let (ok, err) = run("1", &schema, &bad_value);
    assert!(!ok && err.contains("row 1"), "{err}");
    assert!(!err.contains("zzz"), "the value must not be echoed: {err}");
    assert!(!out.exists(), "nothing written on failure");
    let regression = dir.path().join("regression.json");
    std::fs::write(
        &regression,
        r#"{"label": {"column": "y", "type": "numeric", "min": 0, "max": 1},
            "columns": [{"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4},
                        {"name": "c", "type": "categorical", "categories": ["a", "b"]}]}"#,
    )
    .unwrap();
    let (ok, err) = run("1", &regression, &raw);
    assert!(!ok && err.contains("binary classification only"), "{err}");
    // A class list: refused by the all-columns protocol (it used to write
    // empty labels).
    let multiclass = dir.path().join("multiclass.json");
    std::fs::write(
        &multiclass,
        SMALL_SCHEMA.replace(
            r#""positive": "1", "negative": "0""#,
            r#""classes": ["0", "1", "2"]"#,
        ),
    )
    .unwrap();
    let (ok, err) = run("1", &multiclass, &raw);
    assert!(!ok && err.contains("a label with 3 classes"), "{err}");
    assert!(!out.exists(), "nothing written on failure");

    // A good run writes the same header and only values of the schema.
    let (ok, err) = run("2", &schema, &raw);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("x,c,y"));
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert!(
            ["12.5", "37.5", "62.5", "87.5"].contains(&cells[0]),
            "{line}"
        );
        assert!(["a", "b"].contains(&cells[1]), "{line}");
        assert!(["0", "1"].contains(&cells[2]), "{line}");
    }
}

/// Randomize `small_csv(rows)` with the sampled-column protocol; the report
/// file.
fn sampled_small(dir: &Path, rows: usize, epsilon: &str) -> Vec<u8> {
    randomize_small(
        dir,
        rows,
        epsilon,
        &["--protocol", "sampled-column"],
        "sampled-column",
    )
}

/// The sampled-column protocol end to end over HTTP: randomize (one
/// column per row) -> upload with local_dp_protocol -> a job with no
/// epsilon and no algorithm (ldp-naive-bayes is the default there) ->
/// a model that predicts raw rows and inspects as coefficients; the
/// refusals of other learners there, of ldp-naive-bayes elsewhere, and of
/// evaluating a model on reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampled_column_reports_train_naive_bayes_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    // Epsilon 8 on 4000 rows: the small schema's signal (y = x > 50 or
    // c == a) survives, so the model must get the clear cases right.
    let reports = sampled_small(dir.path(), 4000, "8");
    let text = String::from_utf8(reports.clone()).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("reported_column,reported_value,y"));
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), 3, "{line}");
        match cells[0] {
            "x" => assert!(
                ["12.5", "37.5", "62.5", "87.5"].contains(&cells[1]),
                "{line}"
            ),
            "c" => assert!(["a", "b"].contains(&cells[1]), "{line}"),
            other => panic!("reported column {other}"),
        }
        assert!(["0", "1"].contains(&cells[2]), "{line}");
    }
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let body = expect_status(
        s.upload_form(
            &owner,
            "reports",
            "1",
            SMALL_SCHEMA,
            reports.clone(),
            &[
                ("local_dp_epsilon", "8"),
                ("local_dp_protocol", "sampled-column"),
            ],
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        body["dataset"]["local_dp"]["protocol"], "sampled-column",
        "{body}"
    );
    assert_eq!(body["dataset"]["local_dp"]["epsilon"], 8.0, "{body}");
    assert_eq!(body["accepted_rows"], 4000, "{body}");

    // Learners that read whole rows are refused on reports.
    for algorithm in ["lazybb", "dp-linear"] {
        let refused = expect_status(
            s.post(
                &owner,
                "/v1/jobs",
                &json!({"dataset_id": dataset, "algorithm": algorithm}),
            )
            .await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        let text = refused.to_string();
        assert!(text.contains("sampled-column"), "{algorithm}: {text}");
        assert!(text.contains("ldp-naive-bayes"), "{algorithm}: {text}");
    }
    // ldp-naive-bayes takes no parameter.
    expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "algorithm": "ldp-naive-bayes", "rounds": 3}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;

    let job = expect_status(
        s.post(&owner, "/v1/jobs", &json!({"dataset_id": dataset}))
            .await,
        StatusCode::ACCEPTED,
    )
    .await;
    assert_eq!(job["params"]["algorithm"], "ldp-naive-bayes", "{job}");
    assert_eq!(job["params"]["epsilon"], 0.0, "{job}");
    let job = s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let ledger = s.ledger(&owner, &dataset).await;
    let charges: Vec<_> = ledger.iter().filter(|e| e["kind"] == "charge").collect();
    assert_eq!(charges.len(), 1, "{ledger:?}");
    assert_eq!(charges[0]["epsilon"], 0.0, "{ledger:?}");

    let model_id = job["model_id"].as_str().unwrap().to_owned();
    let model = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(model["algorithm"], "ldp-naive-bayes", "{model}");
    let privacy = &model["privacy"];
    assert_eq!(privacy["local_epsilon"], 8.0, "{privacy}");
    assert_eq!(privacy["epsilon"], 0.0, "{privacy}");
    assert_eq!(privacy["protocol"], "sampled-column", "{privacy}");
    assert!(
        privacy["accounting"]
            .as_str()
            .unwrap()
            .starts_with("8-local DP, randomized on the client"),
        "{privacy}"
    );
    // Inspected as dp-linear's coefficients: the intercept and one per literal.
    let coefficients = model["inspection"]["coefficients"].as_array().unwrap();
    assert_eq!(coefficients.len(), 6, "{model}");

    // Raw rows: x > 50 or c == a is positive. The clear cases (both
    // signals agree) must come out right.
    let rows = json!({"rows": [
        {"x": 90, "c": "a"}, {"x": 70, "c": "a"},
        {"x": 10, "c": "b"}, {"x": 30, "c": "b"}
    ]});
    let predicted = expect_status(
        s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    let classes: Vec<&str> = predicted["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["1", "1", "0", "0"], "{predicted}");

    // Evaluating a model on reports is refused (they are not rows).
    let refused = expect_status(
        s.post(
            &owner,
            &format!("/v1/models/{model_id}/evaluate"),
            &json!({"dataset_id": dataset, "epsilon": 0.1}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(refused.to_string().contains("sampled-column"), "{refused}");

    // ldp-naive-bayes is refused on raw and on all-columns datasets.
    let raw = s.upload_small(&owner, 1.0, 50).await;
    let all_columns = randomized_small(dir.path(), 100, "4");
    let body = expect_status(
        s.upload_form(
            &owner,
            "all",
            "1",
            SMALL_SCHEMA,
            all_columns,
            &[("local_dp_epsilon", "4")],
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(body["dataset"]["local_dp"]["protocol"], "all-columns");
    let all_columns = body["dataset"]["id"].as_str().unwrap().to_owned();
    for (id, epsilon) in [(raw, Some(1.0)), (all_columns, None)] {
        let mut request = json!({"dataset_id": id, "algorithm": "ldp-naive-bayes"});
        if let Some(e) = epsilon {
            request["epsilon"] = json!(e);
        }
        let refused = expect_status(
            s.post(&owner, "/v1/jobs", &request).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        let text = refused.to_string();
        assert!(text.contains("sampled-column"), "{text}");
        assert!(text.contains("\"algorithm\""), "{text}");
    }

    // A report file uploaded as rows, or rows uploaded as reports, is
    // refused by the header check; a label epsilon or an unknown protocol
    // by field. (A short file: the server answers before reading it all.)
    let reports: Vec<u8> = text
        .lines()
        .take(30)
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    for (data, extra, field) in [
        (
            reports.clone(),
            vec![("local_dp_epsilon", "8")],
            "CSV header",
        ),
        (
            small_csv(20).into_bytes(),
            vec![
                ("local_dp_epsilon", "8"),
                ("local_dp_protocol", "sampled-column"),
            ],
            "reported_column",
        ),
        (
            reports.clone(),
            vec![
                ("local_dp_epsilon", "8"),
                ("local_dp_protocol", "sampled-column"),
                ("local_dp_label_epsilon", "1"),
            ],
            "local_dp_label_epsilon",
        ),
        (
            reports.clone(),
            vec![
                ("local_dp_epsilon", "8"),
                ("local_dp_protocol", "one-column"),
            ],
            "local_dp_protocol",
        ),
        (
            reports.clone(),
            vec![("local_dp_protocol", "sampled-column")],
            "local_dp_protocol",
        ),
    ] {
        let response = s
            .upload_form(&owner, "bad", "1", SMALL_SCHEMA, data, &extra)
            .await;
        assert!(response.status().is_client_error(), "{extra:?}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(body.to_string().contains(field), "{extra:?}: {body}");
    }
}

/// k classes by the sampled-column protocol over HTTP: `randomize` reports
/// (value, class) pairs over the class list, the upload stores them, the
/// default job trains ldp-naive-bayes with three class tables, and the
/// model predicts each row's class with one probability per class.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampled_column_reports_train_k_classes() {
    let dir = tempfile::tempdir().unwrap();
    let schema = r#"{
      "label": {"column": "y", "classes": ["lo", "mid", "hi"]},
      "columns": [
        {"name": "x", "type": "numeric", "min": 0, "max": 90, "bins": 3},
        {"name": "c", "type": "categorical", "categories": ["a", "b"]}
      ]
    }"#;
    let mut raw = String::from("x,c,y\n");
    for i in 0..6000 {
        let x = (i * 37) % 90;
        let y = ["lo", "mid", "hi"][x / 30];
        raw.push_str(&format!("{x},{},{y}\n", ["a", "b"][i % 2]));
    }
    let reports = randomize_csv(
        dir.path(),
        schema,
        &raw,
        "6",
        &["--protocol", "sampled-column"],
        "sampled-column",
    );
    for line in String::from_utf8(reports.clone()).unwrap().lines().skip(1) {
        let label = line.rsplit(',').next().unwrap();
        assert!(["lo", "mid", "hi"].contains(&label), "{line}");
    }

    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let body = expect_status(
        s.upload_form(
            &owner,
            "reports",
            "1",
            schema,
            reports,
            &[
                ("local_dp_epsilon", "6"),
                ("local_dp_protocol", "sampled-column"),
            ],
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    let job = expect_status(
        s.post(&owner, "/v1/jobs", &json!({"dataset_id": dataset}))
            .await,
        StatusCode::ACCEPTED,
    )
    .await;
    assert_eq!(job["params"]["algorithm"], "ldp-naive-bayes", "{job}");
    let job = s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model_id = job["model_id"].as_str().unwrap().to_owned();
    let model = expect_status(
        s.get(&owner, &format!("/v1/models/{model_id}")).await,
        StatusCode::OK,
    )
    .await;
    let classes: Vec<&str> = model["inspection"]["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["lo", "mid", "hi"], "{model}");
    let rows = json!({"rows": [
        {"x": 10, "c": "a"}, {"x": 45, "c": "b"}, {"x": 80, "c": "a"}
    ]});
    let predicted = expect_status(
        s.post(&owner, &format!("/v1/models/{model_id}/predict"), &rows)
            .await,
        StatusCode::OK,
    )
    .await;
    expect_classes(&predicted, &["lo", "mid", "hi"], 3);
}
