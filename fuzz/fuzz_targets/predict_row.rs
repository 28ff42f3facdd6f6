//! Arbitrary JSON prediction rows (an object, or an array of them as in a
//! predict request) into a trained model's encoder and predictor, as the
//! service's predict endpoints do. Errors are fine; panics and scores outside
//! [-1, 1] are not.

#![no_main]

mod common;

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use privboost::data::Encoder;
use privboost::learn::{LazyBbModel, Predictor};
use serde_json::Value;

/// Models trained by `privboost train` on shipped data: stumps over numeric,
/// categorical and missing literals (adult), and TopDown trees (mushroom).
static MODELS: LazyLock<Vec<(Encoder, Predictor)>> = LazyLock::new(|| {
    [
        include_str!("../seeds/model_load/adult-1r.json"),
        include_str!("../seeds/model_load/mushroom-td.json"),
    ]
    .iter()
    .map(|text| {
        let model = LazyBbModel::from_json(text).unwrap();
        (model.encoder().unwrap(), model.predictor())
    })
    .collect()
});

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let rows = match &value {
        Value::Array(rows) => rows.iter().collect(),
        other => vec![other],
    };
    let mut active = Vec::new();
    for (encoder, predictor) in MODELS.iter() {
        for (i, row) in rows.iter().enumerate() {
            let Value::Object(row) = row else { continue };
            if encoder.encode_json_row(row, i + 1, &mut active).is_ok() {
                common::check_active(&active, encoder);
                let p = predictor.prediction(predictor.vote_sum(&active));
                assert!((-1.0..=1.0).contains(&p.score), "score {}", p.score);
            }
        }
    }
});
