//! `privboost bench --scale ROWS`: the synthetic-table benchmark runs end to
//! end and names its figures. Speed is never asserted (timed tests flake on
//! busy machines); only that the figures are reported.

use std::process::Command;

fn privboost(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cannot start the privboost binary");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn bench_scale_reports_ingest_training_and_peak_memory() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let (code, stdout, stderr) = privboost(&[
        "bench",
        "--scale",
        "2000",
        "--iterations",
        "1",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("2000 rows"), "{stdout}");
    assert!(stdout.contains("200 literals"), "{stdout}");
    assert!(stdout.contains("threads"), "{stdout}");
    assert!(stdout.contains("ingest"), "{stdout}");
    assert!(stdout.contains("rows/s"), "{stdout}");
    assert!(stdout.contains("train lazybb"), "{stdout}");
    assert!(stdout.contains("training time, median of 1"), "{stdout}");
    assert!(stdout.contains("peak memory"), "{stdout}");

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["rows"], 2000);
    assert_eq!(report["literals"], 200);
    assert!(report["ingest_rows_per_second"].as_f64().unwrap() > 0.0);
    let training = report["training"].as_array().unwrap();
    assert_eq!(training.len(), 1);
    assert_eq!(training[0]["algorithm"], "lazybb");
    assert!(training[0]["error"].is_null(), "{report}");
    assert!(training[0]["median_seconds"].as_f64().unwrap() >= 0.0);
    if cfg!(target_os = "linux") {
        assert!(report["peak_rss_bytes"].as_u64().unwrap() > 0);
    }
}

#[test]
fn bench_scale_refuses_a_bad_row_count() {
    let (code, stdout, stderr) = privboost(&["bench", "--scale", "ten"]);
    assert_ne!(code, Some(0));
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("row count"), "{stderr}");
}

/// `bench --classes` (issue 27): each learner timed again with the label
/// regrouped into k classes (DPBoost too, one-vs-rest), and a
/// binary schema is refused with a message.
#[test]
fn bench_classes_times_each_learner_per_class_count() {
    let suite = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/data/suite/car-evaluation"
    );
    let data = format!("{suite}/car-evaluation.csv");
    let schema = format!("{suite}/schema.json");
    if !std::path::Path::new(&data).exists() {
        panic!("{data} is missing: the test needs ../shared beside the repository");
    }
    let (code, stdout, stderr) = privboost(&[
        "bench",
        "--algorithm",
        "dp-linear,dpboost",
        "--classes",
        "2,3",
        "--iterations",
        "1",
        "--data",
        &data,
        "--schema",
        &schema,
    ]);
    assert_eq!(code, Some(0), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("k = 2: train dp-linear"), "{stdout}");
    assert!(stdout.contains("k = 3: train dp-linear"), "{stdout}");
    // DPBoost trains k classes one-vs-rest (k fits).
    assert!(stdout.contains("k = 3: train dpboost"), "{stdout}");
    let (code, _, stderr) = privboost(&[
        "bench",
        "--algorithm",
        "dp-linear",
        "--classes",
        "2",
        "--iterations",
        "1",
    ]);
    assert_ne!(code, Some(0));
    assert!(stderr.contains("needs a multiclass schema"), "{stderr}");
}
