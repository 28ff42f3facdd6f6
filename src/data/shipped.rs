//! Tests over the data sets shipped in `data/` (see `data/README.md`): each schema is
//! valid, encodes its whole file without an error, and gives the documented row,
//! positive and literal counts. The counts were checked against the raw UCI files
//! (`data/*/PROVENANCE.md`).

use std::fs::File;
use std::path::PathBuf;

use super::{Dataset, Encoder, LabelMode, Schema, read_csv};

fn path(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(rel)
}

fn encoder(set: &str) -> Encoder {
    let text = std::fs::read_to_string(path(&format!("{set}/schema.json"))).unwrap();
    Encoder::new(&Schema::from_json(&text).unwrap()).unwrap()
}

fn read(encoder: &Encoder, file: &str) -> Dataset {
    let f = File::open(path(file)).unwrap();
    read_csv(std::io::BufReader::new(f), encoder, LabelMode::Required)
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The shipped data set `set` (a folder of `data/`): its encoder and the
/// given files, encoded. The one loader every test over shipped data uses.
pub(crate) fn load(set: &str, files: &[&str]) -> (Encoder, Vec<Dataset>) {
    let encoder = encoder(set);
    let sets = files
        .iter()
        .map(|f| read(&encoder, &format!("{set}/{f}")))
        .collect();
    (encoder, sets)
}

/// One shipped file of `set`, encoded, with its encoder.
pub(crate) fn load_one(set: &str, file: &str) -> (Encoder, Dataset) {
    let (encoder, mut sets) = load(set, &[file]);
    (encoder, sets.pop().unwrap())
}

/// Adult's canonical split: the encoder, the training and the test file.
pub(crate) fn adult_split() -> (Encoder, Dataset, Dataset) {
    let (encoder, mut sets) = load("adult", &["adult-train.csv", "adult-test.csv"]);
    let test = sets.pop().unwrap();
    let train = sets.pop().unwrap();
    (encoder, train, test)
}

/// Every feature column here is one-hot (intervals, categories, missing), so each row
/// has exactly one active literal per feature column.
fn assert_one_hot(data: &Dataset, encoder: &Encoder) {
    let set: usize = (0..data.n_literals())
        .map(|j| data.features.column_bits(j).count_ones())
        .sum();
    assert_eq!(set, data.n_rows() * encoder.feature_names().len());
}

/// Literals that are true in at least one row.
fn occurring(data: &Dataset) -> usize {
    (0..data.n_literals())
        .filter(|&j| data.features.column(j).iter().any(|&w| w != 0))
        .count()
}

#[test]
fn adult() {
    let e = encoder("adult");
    // The paper's count: 6 numeric columns x 10 bins + 102 nominal values (incl. `?`).
    assert_eq!(e.n_literals(), 162);
    assert_eq!(e.feature_names().len(), 14);
    assert_eq!(e.literals()[0].name, "age <= 24.3");
    assert_eq!(e.literals()[9].name, "age > 82.7");
    assert!(
        e.literals()
            .iter()
            .any(|l| l.name == "workclass is missing")
    );

    let train = read(&e, "adult/adult-train.csv");
    assert_eq!(train.n_rows(), 32_561);
    assert_eq!(train.labels.as_ref().unwrap().count_ones(), 7_841);
    assert_one_hot(&train, &e);

    // The test file uses the same schema: every category in it is declared.
    let test = read(&e, "adult/adult-test.csv");
    assert_eq!(test.n_rows(), 16_281);
    assert_eq!(test.labels.as_ref().unwrap().count_ones(), 3_846);
    assert_one_hot(&test, &e);
}

#[test]
fn mushroom() {
    let e = encoder("mushroom");
    // All value codes of agaricus-lepiota.names (125) plus `stalk-root is missing`;
    // the paper counted only the 117 (attribute, value) pairs that occur.
    assert_eq!(e.n_literals(), 126);
    assert_eq!(e.feature_names().len(), 22);
    let data = read(&e, "mushroom/mushroom.csv");
    assert_eq!(data.n_rows(), 8_124);
    assert_eq!(data.labels.as_ref().unwrap().count_ones(), 3_916);
    assert_one_hot(&data, &e);
    assert_eq!(occurring(&data), 117);
}

#[test]
fn breast_cancer() {
    let e = encoder("breast-cancer");
    assert_eq!(e.n_literals(), 30 * 10);
    assert_eq!(e.feature_names().len(), 30);
    assert_eq!(e.feature_names()[0], "radius_mean");
    let data = read(&e, "breast-cancer/wdbc.csv");
    assert_eq!(data.n_rows(), 569);
    assert_eq!(data.labels.as_ref().unwrap().count_ones(), 212);
    assert_one_hot(&data, &e);
}

/// The regression set: a numeric label with public bounds, read as values.
#[test]
fn abalone() {
    let e = encoder("abalone");
    assert_eq!(e.n_literals(), 3 + 7 * 32);
    assert_eq!(
        e.schema().task(),
        super::Task::Regression {
            min: 0.0,
            max: 30.0
        }
    );
    let data = read(&e, "abalone/abalone.csv");
    assert_eq!(data.n_rows(), 4_177);
    assert!(data.labels.is_none());
    let rings = data.targets.as_ref().unwrap();
    assert_eq!(rings.len(), 4_177);
    // UCI: Rings are integers 1..29 with mean 9.934.
    assert!(
        rings
            .iter()
            .all(|r| r.fract() == 0.0 && (1.0..=29.0).contains(r))
    );
    let mean = rings.iter().sum::<f64>() / rings.len() as f64;
    assert!((mean - 9.934).abs() < 1e-3, "{mean}");
    assert_one_hot(&data, &e);
}
