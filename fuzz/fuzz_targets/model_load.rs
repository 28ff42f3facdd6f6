//! Arbitrary bytes as a model file. `LazyBbModel::from_json` must refuse it or load a
//! model with which the encoder, the predictor, inspection and a prediction all
//! work. Seeded with real models, so most inputs are mutated valid models.

#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use privboost::learn::LazyBbModel;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(model) = LazyBbModel::from_json(text) {
        common::exercise_model(&model);
    }
});
