//! `privboost evaluate`: a model file's quality on a CSV, released through
//! the DP mechanism of `POST /v1/models/{id}/evaluate`, and its one-line
//! refusals (tests/cli.rs conventions: exit 1, one `error:` line on stderr,
//! nothing on stdout).

use std::path::{Path, PathBuf};
use std::process::Command;

use privboost::data::{Encoder, LabelMode, Schema, read_csv};
use privboost::learn::{ExactMetrics, Model, exact_metrics};
use serde_json::Value;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn privboost(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cannot start the privboost binary");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A LazyBB model trained on Mushroom at epsilon 1 into `dir/m.json`.
fn mushroom_model(dir: &Path) -> PathBuf {
    let out = dir.join("m.json");
    let run = privboost(&[
        "train",
        "--data",
        "data/mushroom/mushroom.csv",
        "--schema",
        "data/mushroom/schema.json",
        "--out",
        arg(&out),
        "--epsilon",
        "1",
        "--rounds",
        "29",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    out
}

/// The error convention: exit code 1, one `error:` line, nothing printed.
fn one_line_error(run: &Run) -> String {
    assert_eq!(
        run.code,
        Some(1),
        "stdout {} stderr {}",
        run.stdout,
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    let line = run.stderr.trim();
    assert!(
        line.starts_with("error: ") && !line.contains('\n'),
        "{line}"
    );
    assert!(!line.contains("panicked"), "{line}");
    line.to_owned()
}

#[test]
fn evaluate_releases_noisy_metrics_near_the_exact_ones() {
    let dir = tempfile::tempdir().unwrap();
    let model_path = mushroom_model(dir.path());
    let model = Model::from_json(&std::fs::read_to_string(&model_path).unwrap()).unwrap();
    let schema =
        Schema::from_json(&std::fs::read_to_string("data/mushroom/schema.json").unwrap()).unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let file = std::fs::File::open("data/mushroom/mushroom.csv").unwrap();
    let data = read_csv(std::io::BufReader::new(file), &encoder, LabelMode::Required).unwrap();
    let ExactMetrics::Classification { accuracy, .. } = exact_metrics(&model, &data).unwrap()
    else {
        panic!("a classifier")
    };

    let run = privboost(&[
        "evaluate",
        "--model",
        arg(&model_path),
        "--data",
        "data/mushroom/mushroom.csv",
        "--epsilon",
        "1",
        "--json",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["task"], "classification", "{v}");
    assert_eq!(v["n_rows"], 8124);
    assert_eq!(v["epsilon"], 1.0);
    assert!(
        v["mechanism"]
            .as_str()
            .unwrap()
            .contains("discrete Laplace")
    );
    // Noise of scale 2 on each of 200 cells moves the accuracy by a few
    // counts in 8,124 rows (std about 2.8 x sqrt(100) / 8124 < 0.004); the
    // release is the histogram's accuracy at 0.5, the exact one is the
    // predicted class's: LazyBB's probability is (score + 1)/2, so they agree
    // up to the noise. 0.03 is a wide margin.
    let noisy = v["accuracy"].as_f64().unwrap();
    assert!(
        (noisy - accuracy).abs() < 0.03,
        "{noisy} vs exact {accuracy}"
    );

    // The text form names the epsilon and the mechanism.
    let run = privboost(&[
        "evaluate",
        "--model",
        arg(&model_path),
        "--data",
        "data/mushroom/mushroom.csv",
        "--epsilon",
        "0.5",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("accuracy "), "{}", run.stdout);
    assert!(run.stdout.contains("ROC AUC"), "{}", run.stdout);
    assert!(run.stdout.contains("epsilon spent: 0.5"), "{}", run.stdout);
    assert!(run.stdout.contains("mechanism: "), "{}", run.stdout);
}

#[test]
fn evaluate_refuses_bad_input_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let model_path = mushroom_model(dir.path());
    let model = arg(&model_path);
    // Rows of another schema (Adult's columns).
    let other = "data/adult/adult-test.csv";
    // Mushroom without its label column.
    let text = std::fs::read_to_string("data/mushroom/mushroom.csv").unwrap();
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string("data/mushroom/schema.json").unwrap())
            .unwrap();
    let label = schema["label"]["column"].as_str().unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let drop = header.iter().position(|h| *h == label).unwrap();
    let strip = |line: &str| {
        line.split(',')
            .enumerate()
            .filter(|(i, _)| *i != drop)
            .map(|(_, f)| f)
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut unlabelled = strip(&header.join(","));
    for line in lines.take(50) {
        unlabelled.push('\n');
        unlabelled.push_str(&strip(line));
    }
    let unlabelled_path = dir.path().join("unlabelled.csv");
    std::fs::write(&unlabelled_path, unlabelled).unwrap();
    let mushroom = "data/mushroom/mushroom.csv";
    for (args, expect) in [
        (vec!["--data", other, "--epsilon", "1"], "data"),
        (
            vec!["--data", arg(&unlabelled_path), "--epsilon", "1"],
            label,
        ),
        (vec!["--data", mushroom, "--epsilon", "0"], "--epsilon"),
        (vec!["--data", mushroom, "--epsilon=-1"], "--epsilon"),
        (vec!["--data", mushroom, "--epsilon", "NaN"], "--epsilon"),
        (vec!["--data", mushroom, "--epsilon", "1000"], "--epsilon"),
        (vec!["--data", mushroom, "--epsilon", "5e-324"], "--epsilon"),
    ] {
        let mut all = vec!["evaluate", "--model", model];
        all.extend(args.iter().copied());
        let line = one_line_error(&privboost(&all));
        assert!(line.contains(expect), "{all:?}: {line}");
    }
    // A missing model file.
    let line = one_line_error(&privboost(&[
        "evaluate",
        "--model",
        "no-such-model.json",
        "--data",
        mushroom,
        "--epsilon",
        "1",
    ]));
    assert!(line.contains("no-such-model.json"), "{line}");
}
