//! A binary test table without signal, shared by the learners' threshold
//! tests (LazyBB's vote threshold, dp-linear's and DPBoost's decision
//! thresholds): 400 rows, 30% positive, four boolean columns independent of
//! the label (a deterministic xorshift); and the training accuracy of a
//! binary model's logits on it.

use crate::data::{Dataset, Encoder, LabelMode, Schema, read_csv};

pub const SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "yes"},
  "columns": [
    {"name": "a", "type": "boolean"},
    {"name": "b", "type": "boolean"},
    {"name": "c", "type": "boolean"},
    {"name": "d", "type": "boolean"}
  ]
}"#;

/// 400 rows, 30% positive, four boolean columns independent of the label
/// (a deterministic xorshift): no signal for any one-rule or coefficient.
pub fn no_signal() -> (Encoder, Dataset) {
    let schema = Schema::from_json(SCHEMA).unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let mut csv = String::from("a,b,c,d,y\n");
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for i in 0..400 {
        let mut bit = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            u8::from(state.is_multiple_of(2))
        };
        let (a, b, c, d) = (bit(), bit(), bit(), bit());
        let y = if i % 10 < 3 { "yes" } else { "no" };
        csv.push_str(&format!("{a},{b},{c},{d},{y}\n"));
    }
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    (encoder, data)
}

/// The share of `data`'s rows whose logit's sign (positive above 0) is the
/// row's label.
pub fn accuracy_of_logits(logits: &[f64], data: &Dataset) -> f64 {
    let labels = data.labels.as_ref().unwrap();
    let right = logits
        .iter()
        .enumerate()
        .filter(|&(i, &z)| (z > 0.0) == labels.get(i))
        .count();
    right as f64 / data.n_rows() as f64
}
