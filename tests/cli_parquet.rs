//! The CLI on Parquet (issue 29): a typed Parquet copy of Adult, written
//! here with the parquet crate (integers for the numeric columns, strings
//! for the categorical ones and the label, several row groups), trains to
//! the same model statement as the CSV and to an accuracy within noise of
//! it; a model predicts exactly the same on the Parquet and the CSV rows;
//! `schema propose` reads Parquet.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::Value;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Run the binary; stdout on success, a panic with stderr otherwise.
fn privboost(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "privboost {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The shipped CSV at `csv` as Parquet at `out`: the schema's numeric
/// columns as Int64 (Adult's are integers), the rest as strings.
fn to_parquet(csv: &Path, schema: &Value, out: &Path) {
    let numeric: Vec<&str> = schema["columns"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "numeric")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    let mut reader = csv::Reader::from_path(csv).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); header.len()];
    for record in reader.records() {
        for (column, cell) in cells.iter_mut().zip(record.unwrap().iter()) {
            column.push(cell.trim().to_owned());
        }
    }
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for (name, column) in header.iter().zip(cells) {
        if numeric.contains(&name.as_str()) {
            fields.push(Field::new(name, DataType::Int64, false));
            let values: Vec<i64> = column.iter().map(|c| c.parse().unwrap()).collect();
            arrays.push(Arc::new(Int64Array::from(values)));
        } else {
            fields.push(Field::new(name, DataType::Utf8, false));
            arrays.push(Arc::new(StringArray::from(column)));
        }
    }
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays).unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(10_000))
        .build();
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(out).unwrap(), schema, Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// The predicted classes in a `predict` output.
fn classes(predictions: &str) -> Vec<String> {
    predictions
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_owned())
        .collect()
}

fn accuracy(predicted: &[String], labels: &[String]) -> f64 {
    assert_eq!(predicted.len(), labels.len());
    let correct = predicted.iter().zip(labels).filter(|(p, y)| p == y).count();
    correct as f64 / labels.len() as f64
}

#[test]
fn train_and_predict_on_a_parquet_copy_of_adult_match_the_csv() {
    let dir = tempfile::tempdir().unwrap();
    let schema_path = repo("data/adult/schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&schema_path).unwrap()).unwrap();
    let (train_csv, test_csv) = (
        repo("data/adult/adult-train.csv"),
        repo("data/adult/adult-test.csv"),
    );
    let (train_pq, test_pq) = (dir.path().join("train.parquet"), dir.path().join("test.pq"));
    to_parquet(&train_csv, &schema, &train_pq);
    to_parquet(&test_csv, &schema, &test_pq);
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let schema_arg = path(&schema_path);
    let train = |data: &Path, out: &str| -> Value {
        let out = dir.path().join(out);
        privboost(&[
            "train",
            "--data",
            &path(data),
            "--schema",
            &schema_arg,
            "--out",
            &path(&out),
            "--epsilon",
            "2",
        ]);
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
    };
    let from_csv = train(&train_csv, "csv.json");
    let from_pq = train(&train_pq, "pq.json");
    // The same statement: the privacy guarantee (epsilon, delta, n_rows,
    // composition...) and the parameters the defaults chose from public facts.
    assert_eq!(from_csv["privacy"], from_pq["privacy"]);
    assert_eq!(from_csv["params"], from_pq["params"]);
    assert_eq!(from_pq["privacy"]["n_rows"], 32561);
    // One model predicts exactly the same on the Parquet rows as on the CSV
    // rows: the two files encode to the same literals.
    let predict = |model: &str, data: &Path| {
        privboost(&[
            "predict",
            "--model",
            &path(&dir.path().join(model)),
            "--data",
            &path(data),
        ])
    };
    let on_csv = predict("pq.json", &test_csv);
    assert_eq!(on_csv, predict("pq.json", &test_pq));
    // And the two models' test accuracies agree within the noise of two
    // private trainings (each near 0.82 at epsilon 2; a wrong encoding of
    // a column would cost far more than this).
    let labels: Vec<String> = std::fs::read_to_string(&test_csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().trim().to_owned())
        .collect();
    let acc_pq = accuracy(&classes(&on_csv), &labels);
    let acc_csv = accuracy(&classes(&predict("csv.json", &test_csv)), &labels);
    assert!(acc_pq > 0.78 && acc_csv > 0.78, "{acc_pq} {acc_csv}");
    assert!((acc_pq - acc_csv).abs() < 0.03, "{acc_pq} {acc_csv}");
    // `schema propose` reads the Parquet file's cells as CSV text.
    let proposed: Value = serde_json::from_str(&privboost(&[
        "schema",
        "propose",
        &path(&train_pq),
        "--label",
        "income",
        "--positive",
        ">50K",
    ]))
    .unwrap();
    let proposed_csv: Value = serde_json::from_str(&privboost(&[
        "schema",
        "propose",
        &path(&train_csv),
        "--label",
        "income",
        "--positive",
        ">50K",
    ]))
    .unwrap();
    assert_eq!(proposed, proposed_csv);
}
