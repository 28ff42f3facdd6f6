//! Checks shared by the fuzz targets: what must hold whenever a parser says Ok.

#![allow(dead_code)] // each target uses a part

use privboost::data::{Column, Dataset, Encoder, LabelMode, OnBadRow, ReadOptions, read_csv_with};
use privboost::learn::{LazyBbModel, inspect};
use serde_json::{Map, Value};

/// A schema with every column type, encoding, unknown policy and missing tokens.
pub const ALL_TYPES_SCHEMA: &str = include_str!("../seeds/all-types-schema.json");

/// Read `csv` with every reader mode; an Ok result must be well formed.
pub fn read_all_ways(csv: &[u8], encoder: &Encoder) {
    for label in [LabelMode::Required, LabelMode::Optional] {
        for (on_bad_row, max_errors) in [
            (OnBadRow::Refuse, 1),
            (OnBadRow::Refuse, 3),
            (OnBadRow::Skip, 2),
        ] {
            let options = ReadOptions {
                label,
                on_bad_row,
                max_errors,
            };
            if let Ok(report) = read_csv_with(csv, encoder, &options) {
                check_dataset(&report.dataset, encoder);
                assert!(report.errors.len() <= max_errors);
                assert!(report.errors.len() <= report.skipped);
                if on_bad_row == OnBadRow::Refuse {
                    assert_eq!(report.skipped, 0);
                }
                if label == LabelMode::Required {
                    assert!(report.dataset.labels.is_some());
                }
            }
        }
    }
}

/// A dataset has one label per row and every row's literals are valid and ascending.
pub fn check_dataset(data: &Dataset, encoder: &Encoder) {
    assert!(data.n_rows() > 0);
    assert_eq!(data.n_literals(), encoder.n_literals());
    if let Some(labels) = &data.labels {
        assert_eq!(labels.len(), data.n_rows());
    }
    for row in 0..data.n_rows() {
        check_active(&data.features.row_active(row), encoder);
    }
}

/// Active literals: ascending, in range, and per feature what its kind allows.
pub fn check_active(active: &[u32], encoder: &Encoder) {
    let literals = encoder.literals();
    assert!(
        active.windows(2).all(|w| w[0] < w[1]),
        "active literals ascending"
    );
    assert!(active.iter().all(|&l| (l as usize) < literals.len()));
    let mut per_feature = vec![0usize; encoder.feature_names().len()];
    for &l in active {
        per_feature[literals[l as usize].feature] += 1;
    }
    let features = encoder.schema().columns.iter().filter(|c| c.is_feature());
    for (column, &count) in features.zip(&per_feature) {
        match column {
            // One interval, category, `is other` or `is missing`.
            Column::Categorical(_) => assert_eq!(count, 1, "{}", column.name()),
            Column::Numeric(c) if c.encoding == privboost::data::NumericEncoding::Intervals => {
                assert_eq!(count, 1, "{}", column.name())
            }
            _ => {}
        }
    }
}

/// A row the schema accepts: every feature column at a declared value.
pub fn valid_row(encoder: &Encoder) -> Map<String, Value> {
    let mut row = Map::new();
    for column in &encoder.schema().columns {
        let value = match column {
            Column::Numeric(c) => Value::from(c.min),
            Column::Categorical(c) => Value::from(c.categories[0].clone()),
            Column::Boolean(_) => Value::from(true),
            Column::Ignore(_) => continue,
        };
        row.insert(column.name().to_owned(), value);
    }
    row
}

/// Everything the service and the CLI do with a loaded model must work.
pub fn exercise_model(model: &LazyBbModel) {
    let encoder = model.encoder().expect("a loaded model has an encoder");
    assert_eq!(encoder.n_literals(), model.literals.len());
    let predictor = model.predictor();
    let inspection = inspect(model, &encoder);
    let _ = inspection.to_text();
    let mut active = Vec::new();
    encoder
        .encode_json_row(&valid_row(&encoder), 1, &mut active)
        .expect("a row of declared values encodes");
    let p = predictor.prediction(predictor.vote_sum(&active));
    assert!((-1.0..=1.0).contains(&p.score), "score {}", p.score);
    let again = LazyBbModel::from_json(&model.to_json()).expect("a model survives to_json");
    assert_eq!(&again, model);
}
