//! Integration tests of the `privboost` binary, run the way a new user runs it:
//! the real executable, the shipped data sets, and small CSV files and schemas
//! written into a per-test temporary directory.
//!
//! Conventions checked throughout (see `src/main.rs`):
//! - success: exit code 0;
//! - an error: exit code 1 and exactly one line on stderr starting with `error:`,
//!   never a panic, and no output file (not even a half-written or temporary one);
//! - clap's usage errors: exit code 2.
//!
//! Training draws its noise from the OS, so the accuracy checks use thresholds
//! with a wide margin below the measured means (stated at each check).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use privboost::data::Schema;
use serde_json::Value;
use tempfile::TempDir;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// The outcome of one run of the binary.
struct Run {
    command: String,
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    /// What to print when an assertion about this run fails.
    fn context(&self) -> String {
        format!(
            "\n--- command: {}\n--- status: {}\n--- stdout:\n{}\n--- stderr:\n{}\n---",
            self.command, self.status, self.stdout, self.stderr
        )
    }

    /// Assert exit code 0 and return self for further checks.
    fn success(self) -> Run {
        assert!(self.status.success(), "expected success{}", self.context());
        assert!(!self.stderr.contains("panicked"), "{}", self.context());
        self
    }

    /// Assert the error convention and return the one stderr line.
    ///
    /// `outputs` are the files the command would have written: none of them
    /// may exist afterwards, and neither may a leftover temporary file of the
    /// atomic write next to them.
    fn error(&self, outputs: &[&Path]) -> String {
        let ctx = self.context();
        assert!(!self.stderr.contains("panicked"), "panic{ctx}");
        assert_eq!(self.status.code(), Some(1), "expected exit code 1{ctx}");
        let line = self.stderr.trim();
        assert!(
            line.starts_with("error: "),
            "stderr must start with `error: `{ctx}"
        );
        assert!(!line.contains('\n'), "the error must be one line{ctx}");
        for out in outputs {
            assert!(!out.exists(), "{} was created{ctx}", out.display());
            assert_no_temp_files(out.parent().unwrap(), &ctx);
        }
        line.to_owned()
    }
}

/// No `.<name>.<pid>.tmp` file of `write_atomically` was left behind.
fn assert_no_temp_files(dir: &Path, ctx: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name();
        let name = name.to_string_lossy();
        assert!(
            !(name.starts_with('.') && name.ends_with(".tmp")),
            "temporary file {name} left in {}{ctx}",
            dir.display()
        );
    }
}

/// Run the binary with `args` from the package root (so `data/...` resolves).
fn privboost<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let output = Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cannot start the privboost binary");
    let command = std::iter::once("privboost".to_owned())
        .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ");
    Run {
        command,
        status: output.status,
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A path as a command-line argument (temporary directories are UTF-8 here).
fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A shipped file, by its path in the repository.
fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A per-test temporary directory.
struct Dir(TempDir);

impl Dir {
    fn new() -> Dir {
        Dir(tempfile::tempdir().unwrap())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", path.display()))
}

/// A small schema: one numeric, one categorical column and the label `y`.
const TINY_SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "yes", "negative": "no"},
  "columns": [
    {"name": "age", "type": "numeric", "min": 0, "max": 100, "bins": 4},
    {"name": "color", "type": "categorical", "categories": ["red", "blue"]}
  ]
}"#;

/// Valid rows for [`TINY_SCHEMA`].
const TINY_CSV: &str = "age,color,y\n30,red,yes\n50,blue,no\n70,red,yes\n20,blue,no\n";

const MUSHROOM_CSV: &str = "data/mushroom/mushroom.csv";
const MUSHROOM_SCHEMA: &str = "data/mushroom/schema.json";
const MUSHROOM_ROWS: usize = 8124;

/// The brief's Mushroom parameters: epsilon 1, 29 rounds.
const MUSHROOM_PARAMS: [&str; 8] = [
    "--epsilon",
    "1",
    "--rounds",
    "29",
    "--learning-rate",
    "0.3",
    "--density",
    "0.25",
];

/// Train on Mushroom with [`MUSHROOM_PARAMS`] into `dir/m.json`.
fn train_mushroom(dir: &Dir) -> (Run, PathBuf) {
    let out = dir.path("m.json");
    let mut args: Vec<&str> = vec![
        "train",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        MUSHROOM_SCHEMA,
        "--out",
        arg(&out),
    ];
    args.extend(MUSHROOM_PARAMS.iter().copied());
    (privboost(args).success(), out)
}

/// Train on `csv` (contents) with [`TINY_SCHEMA`] and extra `args`; returns
/// the run and the `--out` path.
fn train_tiny(dir: &Dir, csv: &str, args: &[&str]) -> (Run, PathBuf) {
    train_tiny_with_schema(dir, csv, TINY_SCHEMA, args)
}

fn train_tiny_with_schema(dir: &Dir, csv: &str, schema: &str, args: &[&str]) -> (Run, PathBuf) {
    let data = dir.write("data.csv", csv);
    let schema = dir.write("schema.json", schema);
    let out = dir.path("model.json");
    let mut all: Vec<&str> = vec![
        "train",
        "--data",
        arg(&data),
        "--schema",
        arg(&schema),
        "--out",
        arg(&out),
    ];
    all.extend(args.iter().copied());
    (privboost(all), out)
}

/// Train a valid model on [`TINY_CSV`] into `dir/model.json`.
fn tiny_model(dir: &Dir) -> PathBuf {
    let (run, out) = train_tiny(dir, TINY_CSV, &["--epsilon", "1", "--rounds", "5"]);
    run.success();
    out
}

/// Parse `predict` output: (class, score, probability) per row.
fn parse_predictions(csv_text: &str, ctx: &str) -> Vec<(String, f64, f64)> {
    let mut lines = csv_text.lines();
    assert_eq!(lines.next(), Some("class,score,probability"), "header{ctx}");
    lines
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), 3, "line {line:?}{ctx}");
            let number = |text: &str| -> f64 {
                text.parse()
                    .unwrap_or_else(|e| panic!("{text:?} in line {line:?}: {e}{ctx}"))
            };
            let (score, probability) = (number(fields[1]), number(fields[2]));
            (fields[0].to_owned(), score, probability)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// 1. Happy path on Mushroom: train, inspect, predict
// ---------------------------------------------------------------------------

#[test]
fn train_mushroom_writes_versioned_model_with_privacy_statement() {
    let dir = Dir::new();
    let (run, out) = train_mushroom(&dir);
    let ctx = run.context();
    let model = read_json(&out);
    assert_eq!(model["format"], "privboost-model", "{ctx}");
    assert_eq!(model["version"], 1, "{ctx}");
    assert_eq!(model["privacy"]["epsilon"].as_f64(), Some(1.0), "{ctx}");
    assert_eq!(model["privacy"]["delta"].as_f64(), Some(0.0), "{ctx}");
    assert_eq!(model["privacy"]["n_rows"], MUSHROOM_ROWS, "{ctx}");
    assert_eq!(model["privacy"]["composition"], "basic", "{ctx}");
    assert_eq!(model["params"]["rounds"], 29, "{ctx}");
    assert_eq!(
        model["params"]["learning_rate"].as_f64(),
        Some(0.3),
        "{ctx}"
    );
    assert_eq!(model["params"]["density"].as_f64(), Some(0.25), "{ctx}");
    assert_eq!(model["params"]["defaults_used"], false, "{ctx}");
    assert_eq!(
        model["ensemble"].as_array().map(Vec::len),
        Some(29),
        "{ctx}"
    );
}

#[test]
fn train_reports_only_public_facts_on_stderr() {
    let dir = Dir::new();
    let (run, _) = train_mushroom(&dir);
    let ctx = run.context();
    assert!(run.stdout.is_empty(), "train prints nothing on stdout{ctx}");
    // SPEC §2: no training accuracy, AUC or margins leave the run.
    let lower = run.stderr.to_lowercase();
    for word in ["accuracy", "auc", "margin", "error rate"] {
        assert!(!lower.contains(word), "stderr mentions {word:?}{ctx}");
    }
    assert!(run.stderr.contains("8124 rows"), "{ctx}");
}

#[test]
fn inspect_prints_vote_table_and_privacy_statement() {
    let dir = Dir::new();
    let (_, model) = train_mushroom(&dir);
    let run = privboost(["inspect", arg(&model)]).success();
    let ctx = run.context();
    assert!(run.stdout.contains("votes"), "{ctx}");
    assert!(run.stdout.contains("rule"), "{ctx}");
    assert!(run.stdout.contains("Privacy statement"), "{ctx}");
    assert!(run.stdout.contains("substitution"), "{ctx}");
    assert!(run.stdout.contains("(1, 0)-differential privacy"), "{ctx}");
    assert!(run.stdout.contains("8124"), "{ctx}");
}

#[test]
fn inspect_json_has_vote_table_params_and_privacy() {
    let dir = Dir::new();
    let (_, model) = train_mushroom(&dir);
    let run = privboost(["inspect", "--json", arg(&model)]).success();
    let ctx = run.context();
    let value: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("inspect --json is not JSON: {e}{ctx}"));
    let table = value["inspection"]["vote_table"]
        .as_array()
        .unwrap_or_else(|| panic!("no inspection.vote_table{ctx}"));
    assert!(!table.is_empty(), "{ctx}");
    for entry in table {
        assert!(entry["votes"].is_i64(), "{entry}{ctx}");
        assert!(entry["rule"].is_string(), "{entry}{ctx}");
    }
    // Sorted by |votes|, largest first (SPEC §5).
    let magnitudes: Vec<i64> = table
        .iter()
        .map(|e| e["votes"].as_i64().unwrap().abs())
        .collect();
    assert!(magnitudes.windows(2).all(|w| w[0] >= w[1]), "{ctx}");
    assert_eq!(value["params"]["rounds"], 29, "{ctx}");
    assert_eq!(value["privacy"]["n_rows"], MUSHROOM_ROWS, "{ctx}");
}

#[test]
fn predict_mushroom_writes_one_consistent_row_per_input_and_is_accurate() {
    let dir = Dir::new();
    let (_, model) = train_mushroom(&dir);
    let out = dir.path("p.csv");
    let run = privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        MUSHROOM_CSV,
        "--out",
        arg(&out),
    ])
    .success();
    let ctx = run.context();
    assert!(
        run.stdout.is_empty(),
        "--out given, stdout must be empty{ctx}"
    );
    let predictions = parse_predictions(&std::fs::read_to_string(&out).unwrap(), &ctx);
    assert_eq!(predictions.len(), MUSHROOM_ROWS, "{ctx}");
    for (class, score, probability) in &predictions {
        assert!(class == "p" || class == "e", "class {class:?}{ctx}");
        assert!((-1.0..=1.0).contains(score), "score {score}{ctx}");
        assert!(
            (probability - (score + 1.0) / 2.0).abs() < 1e-12,
            "probability {probability} for score {score}{ctx}"
        );
        // A tie (score 0) predicts the positive class (SPEC §4.1).
        assert_eq!(
            class == "p",
            *score >= 0.0,
            "class {class} score {score}{ctx}"
        );
    }
    let labels: Vec<String> = std::fs::read_to_string(repo(MUSHROOM_CSV))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_owned())
        .collect();
    assert_eq!(labels.len(), MUSHROOM_ROWS);
    let correct = predictions
        .iter()
        .zip(&labels)
        .filter(|((class, _, _), label)| class == *label)
        .count();
    let accuracy = correct as f64 / MUSHROOM_ROWS as f64;
    // Measured over 40 runs: mean 0.966, min 0.939, sd 0.009.
    assert!(accuracy > 0.85, "training accuracy {accuracy}{ctx}");
}

#[test]
fn predict_accepts_csv_without_label_column() {
    let dir = Dir::new();
    let (_, model) = train_mushroom(&dir);
    // Mushroom without its first column (`class`); it has no quoted fields.
    let unlabelled: String = std::fs::read_to_string(repo(MUSHROOM_CSV))
        .unwrap()
        .lines()
        .map(|l| format!("{}\n", l.split_once(',').unwrap().1))
        .collect();
    let data = dir.write("unlabelled.csv", unlabelled);
    let out = dir.path("p.csv");
    let run = privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        arg(&data),
        "--out",
        arg(&out),
    ])
    .success();
    let predictions = parse_predictions(&std::fs::read_to_string(&out).unwrap(), &run.context());
    assert_eq!(predictions.len(), MUSHROOM_ROWS, "{}", run.context());
}

#[test]
fn predict_without_out_writes_csv_to_stdout() {
    let dir = Dir::new();
    let model = tiny_model(&dir);
    let data = dir.write("rows.csv", "age,color\n10,red\n90,blue\n");
    let run = privboost(["predict", "--model", arg(&model), "--data", arg(&data)]).success();
    let predictions = parse_predictions(&run.stdout, &run.context());
    assert_eq!(predictions.len(), 2, "{}", run.context());
    for (class, _, _) in &predictions {
        assert!(class == "yes" || class == "no", "{}", run.context());
    }
}

// ---------------------------------------------------------------------------
// 2. Defaults and approximate DP
// ---------------------------------------------------------------------------

#[test]
fn train_without_rounds_rate_density_uses_default_rule() {
    let dir = Dir::new();
    let out = dir.path("m.json");
    let run = privboost([
        "train",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        MUSHROOM_SCHEMA,
        "--epsilon",
        "1",
        "--out",
        arg(&out),
    ])
    .success();
    let ctx = run.context();
    assert!(run.stderr.contains("default rule"), "{ctx}");
    let model = read_json(&out);
    let params = &model["params"];
    assert_eq!(params["defaults_used"], true, "{ctx}");
    let tau = params["rounds"].as_u64().unwrap();
    assert!((5..=99).contains(&tau) && tau % 2 == 1, "rounds {tau}{ctx}");
    for key in ["learning_rate", "density"] {
        let v = params[key].as_f64().unwrap();
        assert!(v > 0.0 && v < 1.0, "{key} {v}{ctx}");
    }
    assert_eq!(
        model["ensemble"].as_array().map(Vec::len),
        Some(tau as usize)
    );
}

#[test]
fn train_with_delta_uses_advanced_composition_and_less_noise() {
    let dir = Dir::new();
    let train = |delta: &str, name: &str| {
        let out = dir.path(name);
        let run = privboost([
            "train",
            "--data",
            MUSHROOM_CSV,
            "--schema",
            MUSHROOM_SCHEMA,
            "--epsilon",
            "1",
            "--delta",
            delta,
            "--rounds",
            "99",
            "--learning-rate",
            "0.3",
            "--density",
            "0.25",
            "--out",
            arg(&out),
        ])
        .success();
        (run, read_json(&out))
    };
    let (approx_run, approx) = train("1e-5", "approx.json");
    let (pure_run, pure) = train("0", "pure.json");
    let ctx = format!("{}{}", approx_run.context(), pure_run.context());
    assert_eq!(approx["privacy"]["composition"], "advanced", "{ctx}");
    assert_eq!(approx["privacy"]["delta"].as_f64(), Some(1e-5), "{ctx}");
    assert_eq!(pure["privacy"]["composition"], "basic", "{ctx}");
    let eta_approx = approx["privacy"]["eta"].as_f64().unwrap();
    let eta_pure = pure["privacy"]["eta"].as_f64().unwrap();
    assert!(
        eta_approx > eta_pure,
        "eta with delta 1e-5 ({eta_approx}) must exceed eta with delta 0 ({eta_pure}){ctx}"
    );
}

// ---------------------------------------------------------------------------
// 3. eval
// ---------------------------------------------------------------------------

#[test]
fn eval_cross_validation_on_mushroom_with_baselines_writes_json() {
    let dir = Dir::new();
    let json = dir.path("r.json");
    let mut extra = vec!["--baselines"];
    extra.extend(MUSHROOM_PARAMS.iter().copied());
    extra.extend(["--json", arg(&json)]);
    let run = eval_mushroom("5", &extra).success();
    let ctx = run.context();
    assert!(
        run.stdout.contains("5-fold cross-validation on 8124 rows"),
        "{ctx}"
    );
    let report = read_json(&json);
    let results = report["results"].as_array().unwrap();
    let methods: Vec<&str> = results
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["lazybb", "one_rule", "majority"], "{ctx}");
    let lazybb = &results[0];
    assert_eq!(lazybb["epsilon"].as_f64(), Some(1.0), "{ctx}");
    assert_eq!(lazybb["tau"], 29, "{ctx}");
    assert_eq!(lazybb["runs"], 5, "{ctx}");
    let accuracy = lazybb["accuracy_mean"].as_f64().unwrap();
    // Measured over 20 runs: mean 0.957, min 0.944.
    assert!(accuracy >= 0.9, "lazybb mean accuracy {accuracy}{ctx}");
}

/// `privboost eval` on Mushroom with `folds` folds and 1 repeat, then
/// `extra`.
fn eval_mushroom(folds: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "eval",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        MUSHROOM_SCHEMA,
        "--folds",
        folds,
        "--repeats",
        "1",
    ];
    args.extend(extra);
    privboost(args)
}

/// [`eval_mushroom`] with 2 folds.
fn eval_mushroom_quickly(extra: &[&str]) -> Run {
    eval_mushroom("2", extra)
}

/// `eval --json` reports DP-EBM's signal-to-noise ratio `n / s`, the one its
/// default rule chose the bins from (`2^round(3/2 + log2(n / s) / 4)`, ties
/// to even, in [4, 64]), so a grid over the bins (scripts/ebm_bins_lodo.py)
/// reads it instead of recomputing the rule; other learners report none.
#[test]
fn eval_reports_dp_ebm_signal_to_noise() {
    let dir = Dir::new();
    for (algorithm, json) in [
        ("dp-ebm", dir.path("ebm.json")),
        ("dp-linear", dir.path("linear.json")),
    ] {
        let json_arg = arg(&json);
        let run = eval_mushroom_quickly(&[
            "--algorithm",
            algorithm,
            "--epsilon",
            "0.5,5",
            "--delta",
            "1e-6",
            "--json",
            json_arg,
        ])
        .success();
        let ctx = run.context();
        for r in read_json(&json)["results"].as_array().unwrap() {
            let snr = r.get("signal_to_noise").and_then(Value::as_f64);
            if algorithm == "dp-linear" {
                assert_eq!(snr, None, "{r}{ctx}");
                continue;
            }
            let snr = snr.unwrap_or_else(|| panic!("no signal_to_noise in {r}{ctx}"));
            assert!(snr.is_finite() && snr > 0.0, "{snr}{ctx}");
            let exponent = (1.5 + 0.25 * snr.log2()).round_ties_even().clamp(2.0, 6.0);
            assert_eq!(
                r["spec"]["max_bins"].as_f64(),
                Some(exponent.exp2()),
                "{r}{ctx}"
            );
        }
    }
}

/// With a privacy unit, `eval`'s folds keep each unit's rows together and
/// say so (issue 28): 40 units of 1..10 rows bounded to 3 at read.
#[test]
fn eval_cross_validation_with_a_privacy_unit_folds_by_unit() {
    let dir = Dir::new();
    let schema = dir.write(
        "unit.json",
        r#"{"label": {"column": "y", "positive": "1", "negative": "0"},
            "columns": [{"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4}],
            "privacy_unit": {"column": "pid", "max_rows": 3}}"#,
    );
    let mut csv = String::from("pid,x,y\n");
    for round in 0..10 {
        for u in 0..40 {
            if round <= u % 10 {
                let x = (u * 37 + round * 11) % 100;
                csv.push_str(&format!("p{u},{x},{}\n", u8::from(x > 50)));
            }
        }
    }
    let data = dir.write("unit.csv", csv);
    let run = privboost([
        "eval",
        "--algorithm",
        "dp-linear",
        "--data",
        arg(&data),
        "--schema",
        arg(&schema),
        "--folds",
        "5",
        "--repeats",
        "1",
        "--epsilon",
        "1",
    ])
    .success();
    let ctx = run.context();
    assert!(
        run.stdout.contains(
            "5-fold cross-validation on 108 rows of 40 privacy units, each unit's rows in one fold"
        ),
        "{ctx}"
    );
}

#[test]
fn eval_adult_train_test_split_succeeds() {
    let run = privboost([
        "eval",
        "--data",
        "data/adult/adult-train.csv",
        "--test",
        "data/adult/adult-test.csv",
        "--schema",
        "data/adult/schema.json",
        "--epsilon",
        "1",
        "--rounds",
        "39",
        "--learning-rate",
        "0.45",
        "--density",
        "0.35",
        "--repeats",
        "2",
    ])
    .success();
    let ctx = run.context();
    assert!(
        run.stdout
            .contains("train on 32561 rows, test on 16281 rows"),
        "{ctx}"
    );
    assert!(run.stdout.lines().any(|l| l.starts_with("lazybb")), "{ctx}");
}

#[test]
fn eval_epsilon_inf_gives_non_private_lazybb_row() {
    let dir = Dir::new();
    let json = dir.path("r.json");
    let run = privboost([
        "eval",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        MUSHROOM_SCHEMA,
        "--folds",
        "3",
        "--repeats",
        "1",
        "--epsilon",
        "inf",
        "--rounds",
        "9",
        "--json",
        arg(&json),
    ])
    .success();
    let ctx = run.context();
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("lazybb"))
        .unwrap_or_else(|| panic!("no lazybb row{ctx}"));
    assert_eq!(row.split_whitespace().nth(1), Some("inf"), "{ctx}");
    let report = read_json(&json);
    let results = report["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "{ctx}");
    assert_eq!(results[0]["method"], "lazybb", "{ctx}");
    assert!(results[0]["epsilon"].is_null(), "{ctx}");
}

#[test]
fn eval_refuses_invalid_epsilon_with_one_line_error() {
    let line = privboost([
        "eval",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        MUSHROOM_SCHEMA,
        "--epsilon",
        "0",
    ])
    .error(&[]);
    assert!(line.contains("epsilon"), "{line}");
}

/// A bad `--database-url` stops `serve` at once with one clear line that
/// never shows the password, and creates no SQLite data directory.
#[test]
fn serve_refuses_a_bad_database_url_with_one_line_error() {
    let dir = Dir::new();
    let data = dir.path("data");
    for (url, expected) in [
        (
            "mysql://u:hunter2@localhost/db",
            "must start with postgres://",
        ),
        (
            "postgres://u:hunter2@localhost/db?sslmode=bogus",
            "not a valid PostgreSQL URL",
        ),
        (
            // Port 1 on loopback: nothing listens, the connection is refused.
            "postgres://u:hunter2@127.0.0.1:1/db",
            "cannot connect to postgres://u@127.0.0.1:1/db",
        ),
    ] {
        let run = privboost([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--data-dir",
            arg(&data),
            "--database-url",
            url,
        ]);
        let line = run.error(&[]);
        assert!(line.contains(expected), "{line}{}", run.context());
        assert!(!line.contains("hunter2"), "the password leaked: {line}");
        assert!(!data.exists(), "a data directory was created for {url}");
    }
}

// ---------------------------------------------------------------------------
// 4. schema propose
// ---------------------------------------------------------------------------

#[test]
fn schema_propose_prints_a_usable_schema_and_warns_it_reads_the_data() {
    let dir = Dir::new();
    let run = privboost([
        "schema",
        "propose",
        MUSHROOM_CSV,
        "--label",
        "class",
        "--positive",
        "p",
    ])
    .success();
    let ctx = run.context();
    let schema = Schema::from_json(&run.stdout)
        .unwrap_or_else(|e| panic!("proposed schema does not parse: {e}{ctx}"));
    assert_eq!(schema.label.column, "class", "{ctx}");
    assert_eq!(schema.label.positive, "p", "{ctx}");
    assert_eq!(schema.columns.len(), 22, "{ctx}");
    assert!(run.stderr.contains("derived from the rows"), "{ctx}");

    // Feed it back to `train`.
    let schema_path = dir.write("proposed.json", &run.stdout);
    let out = dir.path("m.json");
    let train = privboost([
        "train",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        arg(&schema_path),
        "--epsilon",
        "1",
        "--out",
        arg(&out),
    ])
    .success();
    assert!(out.exists(), "{}", train.context());
}

#[test]
fn schema_propose_refuses_positive_value_absent_from_label_column() {
    let dir = Dir::new();
    let data = dir.write("data.csv", TINY_CSV);
    let line = privboost([
        "schema",
        "propose",
        arg(&data),
        "--label",
        "y",
        "--positive",
        "maybe",
    ])
    .error(&[]);
    assert!(line.contains("maybe"), "{line}");
}

// ---------------------------------------------------------------------------
// 5. Bad input: one line `error: ...`, exit 1, no panic, no output file
// ---------------------------------------------------------------------------

#[test]
fn tiny_fixture_trains() {
    // The fixture the bad-input tests break is valid as written.
    let dir = Dir::new();
    let (run, out) = train_tiny(&dir, TINY_CSV, &["--epsilon", "1"]);
    run.success();
    assert!(out.exists());
}

#[test]
fn train_refuses_empty_csv() {
    let dir = Dir::new();
    let (run, out) = train_tiny(&dir, "", &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("empty"), "{line}");
}

#[test]
fn train_refuses_csv_with_header_only() {
    let dir = Dir::new();
    let (run, out) = train_tiny(&dir, "age,color,y\n", &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("no data rows"), "{line}");
}

#[test]
fn train_refuses_header_missing_a_schema_column() {
    let dir = Dir::new();
    let (run, out) = train_tiny(&dir, "age,y\n30,yes\n50,no\n", &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(
        line.contains("header") && line.contains("\"color\""),
        "{line}"
    );
}

#[test]
fn train_refuses_header_with_extra_column() {
    let dir = Dir::new();
    let csv = "age,color,extra,y\n30,red,1,yes\n50,blue,2,no\n";
    let (run, out) = train_tiny(&dir, csv, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(
        line.contains("header") && line.contains("\"extra\""),
        "{line}"
    );
}

#[test]
fn train_refuses_data_without_label_column() {
    let dir = Dir::new();
    let (run, out) = train_tiny(&dir, "age,color\n30,red\n50,blue\n", &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("\"y\""), "{line}");
}

#[test]
fn train_refuses_non_numeric_value_naming_row_and_column_but_not_the_value() {
    let dir = Dir::new();
    let csv = "age,color,y\n30,red,yes\nSECRET123,blue,no\n";
    let (run, out) = train_tiny(&dir, csv, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("row 2"), "{line}");
    assert!(line.contains("\"age\""), "{line}");
    assert!(!line.contains("SECRET123"), "the cell value leaked: {line}");
}

#[test]
fn train_refuses_nan_in_numeric_column() {
    let dir = Dir::new();
    let csv = "age,color,y\n30,red,yes\n50,blue,no\nNaN,red,yes\n";
    let (run, out) = train_tiny(&dir, csv, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("row 3") && line.contains("\"age\""), "{line}");
    assert!(!line.contains("NaN"), "the cell value leaked: {line}");
}

#[test]
fn train_refuses_unknown_category_without_echoing_it() {
    let dir = Dir::new();
    let csv = "age,color,y\n30,red,yes\n50,SECRETGREEN,no\n";
    let (run, out) = train_tiny(&dir, csv, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(
        line.contains("row 2") && line.contains("\"color\""),
        "{line}"
    );
    assert!(
        !line.contains("SECRETGREEN"),
        "the cell value leaked: {line}"
    );
}

#[test]
fn train_refuses_unknown_label_value_without_echoing_it() {
    let dir = Dir::new();
    let csv = "age,color,y\n30,red,yes\n50,blue,SECRETLABEL\n";
    let (run, out) = train_tiny(&dir, csv, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("row 2") && line.contains("\"y\""), "{line}");
    assert!(
        !line.contains("SECRETLABEL"),
        "the cell value leaked: {line}"
    );
}

#[test]
fn train_refuses_row_with_wrong_field_count() {
    let dir = Dir::new();
    let csv = "age,color,y\n30,red,yes\n50,blue\n";
    let (run, out) = train_tiny(&dir, csv, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("row 2"), "{line}");
}

#[test]
fn train_refuses_invalid_utf8_without_panicking() {
    let dir = Dir::new();
    let data = dir.write("data.csv", b"age,color,y\n30,red,yes\n50,bl\xffue,no\n");
    let schema = dir.write("schema.json", TINY_SCHEMA);
    let out = dir.path("model.json");
    let line = privboost([
        "train",
        "--data",
        arg(&data),
        "--schema",
        arg(&schema),
        "--epsilon",
        "1",
        "--out",
        arg(&out),
    ])
    .error(&[&out]);
    assert!(
        line.contains("row 2") && line.contains("\"color\""),
        "{line}"
    );
}

/// Run `train` on the valid tiny data with one bad parameter; the message
/// must name the parameter.
fn assert_bad_parameter(args: &[&str], names: &str) {
    let dir = Dir::new();
    let mut all = args.to_vec();
    if !args.iter().any(|a| a.starts_with("--epsilon")) {
        all.extend(["--epsilon", "1"]);
    }
    let (run, out) = train_tiny(&dir, TINY_CSV, &all);
    let line = run.error(&[&out]);
    assert!(
        line.contains(names),
        "message for {args:?} should name {names:?}: {line}"
    );
}

#[test]
fn train_refuses_epsilon_zero_negative_nan_and_infinite() {
    // `--epsilon -1` (with a space) is checked below. `inf` would be a
    // non-private run, which `train` never does.
    for value in ["0", "-1", "NaN", "inf"] {
        assert_bad_parameter(&[&format!("--epsilon={value}")], "epsilon");
    }
}

#[test]
fn train_refuses_density_outside_open_unit_interval() {
    for value in ["0", "1", "1.5", "NaN"] {
        assert_bad_parameter(&["--density", value], "density");
    }
}

#[test]
fn train_refuses_learning_rate_zero() {
    assert_bad_parameter(&["--learning-rate", "0"], "learning rate");
}

#[test]
fn train_refuses_zero_rounds() {
    assert_bad_parameter(&["--rounds", "0"], "rounds");
}

/// The vote threshold's share (issue 25) is checked before any file is
/// read and named in the message; `eval` measures LazyBB as `train` runs it
/// with `--algorithm lazybb`, takes the share there, and refuses it beside
/// the grid tool's options, which have no threshold.
#[test]
fn vote_threshold_share_is_checked_and_evaluated_as_trained() {
    for value in ["-0.1", "0.6", "NaN"] {
        assert_bad_parameter(
            &[&format!("--vote-threshold-share={value}")],
            "vote_threshold_share",
        );
    }
    let eval = |extra: &[&str]| eval_mushroom_quickly(&[&["--epsilon", "1"], extra].concat());
    let run = eval(&["--algorithm", "lazybb", "--vote-threshold-share", "0"]).success();
    assert!(
        run.stdout.contains("\"vote_threshold_share\":0.0"),
        "{}",
        run.context()
    );
    // Mushroom's 4,062 training rows at epsilon 1: 100 / 4062 is below
    // every larger share, so the default is 0.025.
    let run = eval(&["--algorithm", "lazybb"]).success();
    assert!(
        run.stdout.contains("\"vote_threshold_share\":0.025"),
        "{}",
        run.context()
    );
    let line = eval(&["--rounds", "5", "--vote-threshold-share", "0.1"]).error(&[]);
    assert!(line.contains("--vote-threshold-share"), "{line}");
}

#[test]
fn train_refuses_delta_one() {
    assert_bad_parameter(&["--delta", "1"], "delta");
}

#[test]
fn train_checks_parameters_before_reading_any_file() {
    // SPEC §4.5: invalid parameters are refused before the data is touched,
    // so the parameter error wins over the missing files.
    let dir = Dir::new();
    let out = dir.path("m.json");
    let line = privboost([
        "train",
        "--data",
        arg(&dir.path("missing.csv")),
        "--schema",
        arg(&dir.path("missing.json")),
        "--epsilon",
        "0",
        "--out",
        arg(&out),
    ])
    .error(&[&out]);
    assert!(line.contains("epsilon"), "{line}");
}

#[test]
fn train_negative_epsilon_with_a_space_gets_the_epsilon_check() {
    let dir = Dir::new();
    let (run, out) = train_tiny(&dir, TINY_CSV, &["--epsilon", "-1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("epsilon") && line.contains("-1"), "{line}");
}

#[test]
fn train_refuses_schema_that_is_not_json() {
    let dir = Dir::new();
    let (run, out) = train_tiny_with_schema(&dir, TINY_CSV, "not json {", &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(line.contains("schema"), "{line}");
}

#[test]
fn train_refuses_schema_with_unknown_top_level_field() {
    let dir = Dir::new();
    let schema = TINY_SCHEMA.replace("\"columns\"", "\"colour\": 1, \"columns\"");
    let (run, out) = train_tiny_with_schema(&dir, TINY_CSV, &schema, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(
        line.contains("unknown field") && line.contains("colour"),
        "{line}"
    );
}

#[test]
fn train_refuses_schema_with_unknown_column_field() {
    // A typo such as `bin` for `bins` must not silently change the encoding.
    let dir = Dir::new();
    let schema = TINY_SCHEMA.replace("\"bins\"", "\"bin\"");
    let (run, out) = train_tiny_with_schema(&dir, TINY_CSV, &schema, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(
        line.contains("unknown field") && line.contains("bin"),
        "{line}"
    );
}

#[test]
fn train_refuses_schema_with_min_not_below_max() {
    for bounds in [r#""min": 100, "max": 100"#, r#""min": 100, "max": 0"#] {
        let dir = Dir::new();
        let schema = TINY_SCHEMA.replace(r#""min": 0, "max": 100"#, bounds);
        assert_ne!(schema, TINY_SCHEMA);
        let (run, out) = train_tiny_with_schema(&dir, TINY_CSV, &schema, &["--epsilon", "1"]);
        let line = run.error(&[&out]);
        assert!(line.contains("\"age\"") && line.contains("min"), "{line}");
    }
}

#[test]
fn train_refuses_nonexistent_data_path_naming_it() {
    let dir = Dir::new();
    let schema = dir.write("schema.json", TINY_SCHEMA);
    let data = dir.path("no-such-dir/rows.csv");
    let out = dir.path("m.json");
    let line = privboost([
        "train",
        "--data",
        arg(&data),
        "--schema",
        arg(&schema),
        "--epsilon",
        "1",
        "--out",
        arg(&out),
    ])
    .error(&[&out]);
    assert!(line.contains(&*data.to_string_lossy()), "{line}");
}

#[test]
fn train_into_missing_directory_fails_cleanly() {
    let dir = Dir::new();
    let data = dir.write("data.csv", TINY_CSV);
    let schema = dir.write("schema.json", TINY_SCHEMA);
    let out = dir.path("no-such-dir/m.json");
    let line = privboost([
        "train",
        "--data",
        arg(&data),
        "--schema",
        arg(&schema),
        "--epsilon",
        "1",
        "--out",
        arg(&out),
    ])
    .error(&[]);
    assert!(!out.exists());
    assert!(line.contains(&*out.to_string_lossy()), "{line}");
}

#[test]
fn failed_train_leaves_an_existing_model_file_untouched() {
    let dir = Dir::new();
    let model = tiny_model(&dir);
    let before = std::fs::read(&model).unwrap();
    // Same --out (`model.json`), bad data.
    let (run, out) = train_tiny(
        &dir,
        "age,color,y\n30,red,yes\nx,blue,no\n",
        &["--epsilon", "1"],
    );
    assert_eq!(out, model);
    run.error(&[]);
    assert_eq!(std::fs::read(&model).unwrap(), before, "{}", run.context());
    assert_no_temp_files(dir.0.path(), &run.context());
}

/// Write a model file with `text` and check that `inspect` and `predict`
/// refuse it; returns the two error lines.
fn assert_bad_model(dir: &Dir, text: &str) -> [String; 2] {
    let model = dir.write("bad-model.json", text);
    let data = dir.write("rows.csv", TINY_CSV);
    let out = dir.path("p.csv");
    let inspect = privboost(["inspect", arg(&model)]);
    let inspect_line = inspect.error(&[]);
    assert!(inspect.stdout.is_empty(), "{}", inspect.context());
    let predict_line = privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        arg(&data),
        "--out",
        arg(&out),
    ])
    .error(&[&out]);
    [inspect_line, predict_line]
}

#[test]
fn model_of_another_version_is_refused_naming_the_version() {
    let dir = Dir::new();
    let model = tiny_model(&dir);
    let mut value = read_json(&model);
    value["version"] = 3.into();
    for line in assert_bad_model(&dir, &value.to_string()) {
        assert!(line.contains("version 3"), "{line}");
    }
    // Version 2 is the newer learners' envelope: a LazyBB body under it
    // names no algorithm and is refused.
    value["version"] = 2.into();
    for line in assert_bad_model(&dir, &value.to_string()) {
        assert!(line.contains("unknown algorithm"), "{line}");
    }
}

#[test]
fn model_that_is_not_json_is_refused() {
    let dir = Dir::new();
    for line in assert_bad_model(&dir, "{ this is not json") {
        assert!(line.contains("model"), "{line}");
    }
}

#[test]
fn schema_file_given_as_model_is_refused() {
    let dir = Dir::new();
    for line in assert_bad_model(&dir, TINY_SCHEMA) {
        assert!(line.contains("not a privboost model"), "{line}");
    }
}

#[test]
fn predict_refuses_nonexistent_data_path_naming_it() {
    let dir = Dir::new();
    let model = tiny_model(&dir);
    let data = dir.path("missing.csv");
    let out = dir.path("p.csv");
    let line = privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        arg(&data),
        "--out",
        arg(&out),
    ])
    .error(&[&out]);
    assert!(line.contains(&*data.to_string_lossy()), "{line}");
}

#[test]
fn predict_refuses_bad_value_naming_row_and_column_but_not_the_value() {
    let dir = Dir::new();
    let model = tiny_model(&dir);
    let data = dir.write("rows.csv", "age,color\n30,red\n40,red\nSECRET123,blue\n");
    let out = dir.path("p.csv");
    let run = privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        arg(&data),
        "--out",
        arg(&out),
    ]);
    let line = run.error(&[&out]);
    assert!(run.stdout.is_empty(), "{}", run.context());
    assert!(line.contains("row 3") && line.contains("\"age\""), "{line}");
    assert!(!line.contains("SECRET123"), "the cell value leaked: {line}");
}

#[test]
fn predict_refuses_empty_csv() {
    let dir = Dir::new();
    let model = tiny_model(&dir);
    let data = dir.write("rows.csv", "");
    let out = dir.path("p.csv");
    privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        arg(&data),
        "--out",
        arg(&out),
    ])
    .error(&[&out]);
}

#[test]
fn usage_errors_exit_with_code_two() {
    let run = privboost(["train", "--data", MUSHROOM_CSV]);
    assert_eq!(run.status.code(), Some(2), "{}", run.context());
    assert!(run.stderr.starts_with("error:"), "{}", run.context());
    let run = privboost(["no-such-command"]);
    assert_eq!(run.status.code(), Some(2), "{}", run.context());
}

/// Whether some run of `k` consecutive `": "`-separated segments is
/// immediately repeated, as in `a: b: b`.
fn repeated_segment(line: &str) -> Option<String> {
    let parts: Vec<&str> = line.split(": ").collect();
    for k in 1..=parts.len() / 2 {
        for i in 0..=parts.len() - 2 * k {
            if parts[i..i + k] == parts[i + k..i + 2 * k] {
                return Some(parts[i..i + k].join(": "));
            }
        }
    }
    None
}

#[test]
fn error_messages_do_not_repeat_their_cause() {
    let dir = Dir::new();
    // A schema that is not JSON.
    let (run, out) = train_tiny_with_schema(&dir, TINY_CSV, "not json {", &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert_eq!(repeated_segment(&line), None, "{line}");
    // A directory given as the data file (an I/O error while reading).
    let schema = dir.write("schema.json", TINY_SCHEMA);
    let line = privboost([
        "train",
        "--data",
        arg(dir.0.path()),
        "--schema",
        arg(&schema),
        "--epsilon",
        "1",
        "--out",
        arg(&out),
    ])
    .error(&[&out]);
    assert_eq!(repeated_segment(&line), None, "{line}");
}

#[test]
fn repeated_segment_detects_doubled_causes() {
    assert_eq!(repeated_segment("error: a: b: b").as_deref(), Some("b"));
    assert_eq!(
        repeated_segment("error: a: b c: b c").as_deref(),
        Some("b c")
    );
    assert_eq!(
        repeated_segment("error: data x.csv: row 2: not a number"),
        None
    );
}

// ---------------------------------------------------------------------------
// DP TopDown trees and the paper experiment (issue 4).

#[test]
fn top_down_trains_inspects_and_predicts_on_mushroom() {
    let dir = Dir::new();
    let model = dir.path("td.json");
    let run = privboost([
        "train",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        MUSHROOM_SCHEMA,
        "--epsilon",
        "3",
        "--weak-learner",
        "dp-top-down",
        "--internal-nodes",
        "2",
        "--rounds",
        "9",
        "--out",
        arg(&model),
    ])
    .success();
    let ctx = run.context();
    let json = read_json(&model);
    assert_eq!(json["params"]["weak_learner"], "dp-top-down", "{ctx}");
    assert_eq!(json["params"]["internal_nodes"], 2, "{ctx}");
    let ensemble = json["ensemble"].as_array().unwrap();
    assert_eq!(ensemble.len(), 9);
    for tree in ensemble {
        assert_eq!(tree["kind"], "tree");
        // 2 internal nodes and 3 leaves.
        assert_eq!(tree["nodes"].as_array().unwrap().len(), 5);
    }
    // eta = eps_rounds kappa n / (64 tau t) with the default kappa 0.5, less
    // the exact sampler's grids and the float margin (a relative 1e-5 here);
    // the vote threshold gets 0.025 of epsilon (100 / (n epsilon) is below
    // every larger share), the rounds the rest.
    let eta = json["privacy"]["eta"].as_f64().unwrap();
    let expected = 0.975 * 3.0 * 0.5 * MUSHROOM_ROWS as f64 / (64.0 * 9.0 * 2.0);
    assert_eq!(json["privacy"]["epsilon"].as_f64(), Some(3.0), "{ctx}");
    let threshold = json["privacy"]["vote_threshold"]["epsilon"]
        .as_f64()
        .unwrap();
    assert!((threshold - 0.075).abs() < 1e-12, "{ctx}");
    assert!(
        eta < expected && (eta / expected - 1.0).abs() < 1e-5,
        "eta {eta} vs {expected}"
    );

    let inspect = privboost(["inspect", arg(&model)]).success();
    assert!(inspect.stdout.contains("tree 9:"), "{}", inspect.context());
    assert!(inspect.stdout.contains("16 zeta"), "{}", inspect.context());

    let predictions = dir.path("p.csv");
    let run = privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        MUSHROOM_CSV,
        "--out",
        arg(&predictions),
    ])
    .success();
    let rows = parse_predictions(
        &std::fs::read_to_string(&predictions).unwrap(),
        &run.context(),
    );
    assert_eq!(rows.len(), MUSHROOM_ROWS);
}

#[test]
fn train_refuses_out_of_range_internal_nodes() {
    for t in ["0", "17"] {
        let dir = Dir::new();
        let (run, out) = train_tiny(
            &dir,
            TINY_CSV,
            &[
                "--epsilon",
                "1",
                "--weak-learner",
                "top-down",
                "--internal-nodes",
                t,
            ],
        );
        let line = run.error(&[&out]);
        assert!(line.contains("internal nodes"), "{line}");
    }
}

#[test]
fn eval_paper_calibration_warns_and_is_top_down_only() {
    let run = privboost([
        "eval",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        MUSHROOM_SCHEMA,
        "--epsilon",
        "1",
        "--weak-learner",
        "top-down",
        "--internal-nodes",
        "1",
        "--rounds",
        "5",
        "--repeats",
        "1",
        "--calibration",
        "paper",
    ])
    .success();
    assert!(
        run.stderr.contains("do NOT meet the stated epsilon"),
        "{}",
        run.context()
    );
    assert!(run.stdout.contains("PAPER"), "{}", run.context());
    let refused = privboost([
        "eval",
        "--data",
        MUSHROOM_CSV,
        "--schema",
        MUSHROOM_SCHEMA,
        "--epsilon",
        "1",
        "--calibration",
        "paper",
    ]);
    let line = refused.error(&[]);
    assert!(line.contains("top-down"), "{line}");
}

#[test]
fn experiment_paper_small_run_writes_tables_json_and_plots() {
    let dir = Dir::new();
    let out = dir.path("results");
    let run = privboost([
        "experiment",
        "paper",
        "--epsilon",
        "1",
        "--repeats",
        "1",
        "--out",
        arg(&out),
    ])
    .success();
    let ctx = run.context();
    for file in [
        "results.json",
        "adult.md",
        "mushroom.md",
        "adult.svg",
        "mushroom.svg",
    ] {
        assert!(out.join(file).exists(), "{file} missing{ctx}");
    }
    let json = read_json(&out.join("results.json"));
    let datasets = json["datasets"].as_array().unwrap();
    assert_eq!(datasets.len(), 2);
    for d in datasets {
        assert_eq!(d["series"].as_array().unwrap().len(), 3, "{ctx}");
        assert_eq!(d["baselines"].as_array().unwrap().len(), 3, "{ctx}");
    }
    let svg = std::fs::read_to_string(out.join("adult.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("epsilon"), "{ctx}");
}

/// Model files written before the learner family (version 1, by the build at
/// commit 4f3f95e; `tests/fixtures/lazybb-v1/`) still load, and predict the
/// same bytes that build wrote.
#[test]
fn old_lazybb_model_files_predict_byte_identically() {
    for model in ["one-rule", "top-down"] {
        let dir = Dir::new();
        let out = dir.path("predictions.csv");
        privboost([
            "predict",
            "--model",
            &format!("tests/fixtures/lazybb-v1/{model}.json"),
            "--data",
            "data/breast-cancer/wdbc.csv",
            "--out",
            arg(&out),
        ])
        .success();
        let old = std::fs::read(repo(&format!(
            "tests/fixtures/lazybb-v1/{model}-predictions.csv"
        )))
        .unwrap();
        assert!(
            std::fs::read(&out).unwrap() == old,
            "{model}: predictions differ from the old build's"
        );
    }
}

/// DP-EBM on the shipped regression data, end to end through the CLI:
/// train (delta > 0 required), predict writes `value`, inspect shows shape
/// functions and the zCDP statement, edit makes a monotone new version.
#[test]
fn dp_ebm_regression_train_predict_inspect_edit() {
    let dir = Dir::new();
    let model = dir.path("abalone.json");
    let base = [
        "train",
        "--algorithm",
        "dp-ebm",
        "--data",
        "data/abalone/abalone.csv",
        "--schema",
        "data/abalone/schema.json",
        "--epsilon",
        "1",
        "--epochs",
        "30",
        "--out",
        arg(&model),
    ];
    // delta = 0 trains the pure-DP variant (discrete Laplace noise).
    privboost(base).success();
    let pure = read_json(&model);
    assert!(pure["privacy"].get("rho").is_none(), "{}", pure["privacy"]);
    assert_eq!(pure["privacy"]["mechanisms"][0], "discrete-laplace");
    std::fs::remove_file(&model).unwrap();
    // A LazyBB flag is refused for DP-EBM.
    let mut with_rounds = base.to_vec();
    with_rounds.extend(["--delta", "1e-6", "--rounds", "9"]);
    let line = privboost(with_rounds).error(&[&model]);
    assert!(
        line.contains("--rounds is not a parameter of --algorithm dp-ebm"),
        "{line}"
    );
    let mut args = base.to_vec();
    args.extend(["--delta", "1e-6"]);
    let run = privboost(args).success();
    assert!(run.stderr.contains("zCDP"), "{}", run.context());
    let json = read_json(&model);
    assert_eq!(json["version"], 2);
    assert_eq!(json["algorithm"], "dp-ebm");
    assert_eq!(json["task"]["kind"], "regression");

    let out = dir.path("predictions.csv");
    privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        "data/abalone/abalone.csv",
        "--out",
        arg(&out),
    ])
    .success();
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("value"));
    let values: Vec<f64> = lines.map(|l| l.parse().unwrap()).collect();
    assert_eq!(values.len(), 4177);
    assert!(values.iter().all(|v| v.is_finite()));

    let run = privboost(["inspect", arg(&model)]).success();
    assert!(run.stdout.contains("Shape functions"), "{}", run.context());
    assert!(run.stdout.contains("Whole weight"), "{}", run.context());
    assert!(run.stdout.contains("rho"), "{}", run.context());

    let edited = dir.path("monotone.json");
    privboost([
        "edit",
        arg(&model),
        "--feature",
        "Shell weight",
        "--increasing",
        "--out",
        arg(&edited),
    ])
    .success();
    let json = read_json(&edited);
    assert_eq!(json["edits"][0]["kind"], "monotone");
    let shape = json["model"]["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["feature"] == "Shell weight")
        .unwrap();
    let values: Vec<f64> = shape["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let ordered = shape["ordered"].as_u64().unwrap() as usize;
    let bins = shape["bin_of_base"].as_array().unwrap()[..ordered]
        .iter()
        .map(|b| b.as_u64().unwrap() as usize + 1)
        .max()
        .unwrap();
    assert!(values[..bins].windows(2).all(|w| w[0] <= w[1] + 1e-12));
    // Editing a LazyBB model is refused with a clear message.
    let x = dir.path("x.json");
    let line = privboost([
        "edit",
        "tests/fixtures/lazybb-v1/one-rule.json",
        "--feature",
        "radius_mean",
        "--increasing",
        "--out",
        arg(&x),
    ])
    .error(&[&x]);
    assert!(line.contains("no per-feature shape functions"), "{line}");
}

/// dp-linear through the CLI on Adult, pure DP: a flag of another learner is
/// refused before anything is written; train writes a version-2 file with a
/// pure cost; inspect (text and --json) names a coefficient per literal;
/// predict writes a class per row; an edit is refused (no shape functions).
#[test]
fn dp_linear_train_inspect_predict() {
    let dir = Dir::new();
    let model = dir.path("adult-linear.json");
    let base = [
        "train",
        "--algorithm",
        "dp-linear",
        "--data",
        "data/adult/adult-train.csv",
        "--schema",
        "data/adult/schema.json",
        "--epsilon",
        "1",
        "--out",
        arg(&model),
    ];
    let mut foreign = base.to_vec();
    foreign.extend(["--max-bins", "8"]);
    let line = privboost(foreign).error(&[&model]);
    assert!(
        line.contains("--max-bins is not a parameter of --algorithm dp-linear"),
        "{line}"
    );
    let mut bad = base.to_vec();
    bad.extend(["--ridge", "0"]);
    let line = privboost(bad).error(&[&model]);
    assert!(line.contains("ridge"), "{line}");

    privboost(base).success();
    let json = read_json(&model);
    assert_eq!(json["version"], 2);
    assert_eq!(json["algorithm"], "dp-linear");
    assert_eq!(json["task"]["kind"], "binary");
    assert_eq!(json["privacy"]["epsilon"], 1.0);
    assert_eq!(json["privacy"]["delta"], 0.0);
    assert_eq!(json["privacy"]["mechanisms"][0], "discrete-laplace");

    let run = privboost(["inspect", arg(&model)]).success();
    assert!(run.stdout.contains("Intercept"), "{}", run.context());
    assert!(
        run.stdout.contains("marital-status == Married-civ-spouse"),
        "{}",
        run.context()
    );
    let run = privboost(["inspect", arg(&model), "--json"]).success();
    let inspected: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(inspected["algorithm"], "dp-linear");
    let coefficients = inspected["inspection"]["coefficients"].as_array().unwrap();
    assert_eq!(coefficients.len(), 162, "one per literal of Adult");
    assert!(
        coefficients
            .iter()
            .all(|c| c["feature"].is_string() && c["coefficient"].as_f64().unwrap().is_finite()),
        "{coefficients:?}"
    );
    assert!(inspected["inspection"]["intercept"].is_number());

    let out = dir.path("predictions.csv");
    privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        "data/adult/adult-test.csv",
        "--out",
        arg(&out),
    ])
    .success();
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 16_281 + 1);

    let x = dir.path("x.json");
    let line = privboost([
        "edit",
        arg(&model),
        "--feature",
        "age",
        "--increasing",
        "--out",
        arg(&x),
    ])
    .error(&[&x]);
    assert!(line.contains("no per-feature shape functions"), "{line}");
}

/// A schema with `"bins": {"private": k}`: `train` runs the binning phase and
/// the model file stores the chosen cut points as explicit thresholds,
/// `predict` uses them, `eval` (LazyBB's default path and another learner)
/// runs through the family's plan, and a bad value is a one-line error
/// before anything is written.
#[test]
fn private_bins_train_predict_and_eval() {
    let dir = Dir::new();
    let schema = TINY_SCHEMA.replace(r#""bins": 4"#, r#""bins": {"private": 3}"#);
    let mut csv = String::from("age,color,y\n");
    for i in 0..300 {
        let age = (i * 37) % 100;
        let color = if i % 3 == 0 { "red" } else { "blue" };
        let y = if age > 50 { "yes" } else { "no" };
        csv.push_str(&format!("{age},{color},{y}\n"));
    }
    let (run, model) = train_tiny_with_schema(&dir, &csv, &schema, &["--epsilon", "2"]);
    run.success();
    let file = read_json(&model);
    let age = &file["schema"]["columns"][0];
    assert!(age.get("bins").is_none(), "{age}");
    assert_eq!(age["thresholds"].as_array().unwrap().len(), 2, "{age}");
    assert_eq!(file["privacy"]["binning"]["columns"][0], "age");
    assert_eq!(file["privacy"]["epsilon"], 2.0);
    let rows = dir.write("rows.csv", "age,color\n10,red\n90,blue\n");
    let out = dir.path("p.csv");
    privboost([
        "predict",
        "--model",
        arg(&model),
        "--data",
        arg(&rows),
        "--out",
        arg(&out),
    ])
    .success();
    assert_eq!(
        std::fs::read_to_string(&out).unwrap().lines().count(),
        3,
        "header and two rows"
    );
    let data = dir.path("data.csv");
    let schema_path = dir.path("schema.json");
    for extra in [
        &[][..],
        &["--algorithm", "dp-ebm", "--delta", "1e-6", "--epochs", "5"][..],
    ] {
        let mut args = vec![
            "eval",
            "--data",
            arg(&data),
            "--schema",
            arg(&schema_path),
            "--epsilon",
            "2",
            "--repeats",
            "1",
        ];
        args.extend_from_slice(extra);
        let run = privboost(args).success();
        assert!(run.stdout.contains("accuracy"), "{}", run.context());
    }
    let bad = TINY_SCHEMA.replace(r#""bins": 4"#, r#""bins": {"private": 0}"#);
    let dir = Dir::new();
    let (run, out) = train_tiny_with_schema(&dir, &csv, &bad, &["--epsilon", "1"]);
    let line = run.error(&[&out]);
    assert!(
        line.contains("\"age\"") && line.contains("private must be between 2 and 250"),
        "{line}"
    );
}

/// `eval` with LazyBB (its default algorithm) on a regression schema gives
/// the reason `train` gives, not "the training data has no labels" (issue 29).
#[test]
fn eval_lazybb_on_regression_names_the_reason() {
    for algorithm in [Some("lazybb"), None] {
        let mut args = vec![
            "eval",
            "--data",
            "data/abalone/abalone.csv",
            "--schema",
            "data/abalone/schema.json",
            "--epsilon",
            "1",
            "--folds",
            "2",
        ];
        if let Some(a) = algorithm {
            args.extend(["--algorithm", a]);
        }
        let line = privboost(args).error(&[]);
        assert!(
            line.contains("cannot do regression"),
            "{algorithm:?}: {line}"
        );
    }
}

/// `privboost export` (issue 29): the ONNX file is the library's export of
/// the model; an unknown format and a model that cannot be exported are one
/// `error:` line and no file.
#[test]
fn export_writes_the_onnx_file_and_refuses_with_one_line() {
    let dir = Dir::new();
    let model_path = tiny_model(&dir);
    let out = dir.path("m.onnx");
    privboost([
        "export",
        "--model",
        arg(&model_path),
        "--format",
        "onnx",
        "--out",
        arg(&out),
    ])
    .success();
    let text = std::fs::read_to_string(&model_path).unwrap();
    let model = privboost::learn::Model::from_json(&text).unwrap();
    let expected =
        privboost::export::export(&model, privboost::export::ExportFormat::Onnx).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), expected);

    let bad = dir.path("bad.onnx");
    let line = privboost([
        "export",
        "--model",
        arg(&model_path),
        "--format",
        "pmml",
        "--out",
        arg(&bad),
    ])
    .error(&[&bad]);
    assert!(line.contains("pmml") && line.contains("onnx"), "{line}");

    // A feature column named like the graph's output: refused, naming it.
    let (run, renamed) = train_tiny_with_schema(
        &dir,
        "label,y\n1,yes\n0,no\n1,yes\n0,no\n",
        r#"{"label": {"column": "y", "positive": "yes"},
            "columns": [{"name": "label", "type": "boolean"}]}"#,
        &["--epsilon", "1", "--rounds", "3"],
    );
    run.success();
    let line = privboost(["export", "--model", arg(&renamed), "--out", arg(&bad)]).error(&[&bad]);
    assert!(line.contains("\"label\""), "{line}");
}
