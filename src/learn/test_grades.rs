//! A three-class test table shared by the learners' multiclass unit tests
//! (LazyBB and DPBoost one-vs-rest): `level` decides the grade (a -> low,
//! b -> mid, c -> high), one row in ten shifted to the next grade, and a
//! `flag` that carries no signal.

use crate::data::{Dataset, Encoder, LabelMode, Schema, read_csv};

/// The table's public schema: three classes in schema order.
pub const GRADES_SCHEMA: &str = r#"{
  "label": {"column": "grade", "classes": ["low", "mid", "high"]},
  "columns": [
    {"name": "level", "type": "categorical", "categories": ["a", "b", "c"]},
    {"name": "flag", "type": "boolean"}
  ]
}"#;

/// 3000 rows of the table, encoded.
pub fn grades() -> (Encoder, Dataset) {
    let encoder = Encoder::new(&Schema::from_json(GRADES_SCHEMA).unwrap()).unwrap();
    let mut csv = String::from("level,flag,grade\n");
    for i in 0..3000usize {
        let c = i % 3;
        let y = if i % 10 == 0 { (c + 1) % 3 } else { c };
        csv.push_str(&format!(
            "{},{},{}\n",
            ["a", "b", "c"][c],
            i / 3 % 2,
            ["low", "mid", "high"][y]
        ));
    }
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    (encoder, data)
}
