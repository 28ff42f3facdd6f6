//! Property tests of the input parsers: the CSV reader and encoder, the schema
//! parser, the prediction-row decoder and the model loader (issue 5, input
//! fuzzing). The cargo-fuzz targets in `fuzz/` explore the same surfaces for
//! minutes; these run in seconds in CI with bounded case counts.
//!
//! Every property has the same shape: any input either is refused with an error
//! or gives a well-formed result; nothing panics. Round trips check that what is
//! accepted means what it should.

use std::io::Read as _;

use privboost::data::{
    Column, DataError, Encoder, LabelMode, MAX_LITERALS, NumericEncoding, OnBadRow, ReadOptions,
    Schema, read_csv, read_csv_with,
};
use privboost::learn::{LazyBbModel, inspect};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};

/// Every column type, encoding, unknown policy and missing tokens.
const ALL_TYPES_SCHEMA: &str = include_str!("../fuzz/seeds/all-types-schema.json");
/// Models trained by `privboost train` on shipped data (also the fuzz seeds):
/// stumps on adult (numeric, categorical, missing) and TopDown trees on mushroom.
const MODELS: [&str; 2] = [
    include_str!("../fuzz/seeds/model_load/adult-1r.json"),
    include_str!("../fuzz/seeds/model_load/mushroom-td.json"),
];

fn all_types() -> Encoder {
    Encoder::new(&Schema::from_json(ALL_TYPES_SCHEMA).unwrap()).unwrap()
}

/// Active literals are ascending, in range, and one per categorical or interval
/// column.
fn check_active(active: &[u32], encoder: &Encoder) {
    let literals = encoder.literals();
    assert!(active.windows(2).all(|w| w[0] < w[1]), "{active:?}");
    let mut per_feature = vec![0usize; encoder.feature_names().len()];
    for &l in active {
        per_feature[literals[l as usize].feature] += 1;
    }
    let features = encoder.schema().columns.iter().filter(|c| c.is_feature());
    for (column, count) in features.zip(per_feature) {
        let exactly_one = match column {
            Column::Categorical(_) => true,
            Column::Numeric(c) => c.encoding == NumericEncoding::Intervals,
            _ => false,
        };
        if exactly_one {
            assert_eq!(count, 1, "{}", column.name());
        }
    }
}

/// A row of declared values for every feature column.
fn valid_row(encoder: &Encoder) -> Map<String, Value> {
    let mut row = Map::new();
    for column in &encoder.schema().columns {
        let value = match column {
            Column::Numeric(c) => json!(c.min),
            Column::Categorical(c) => json!(c.categories[0]),
            Column::Boolean(_) => json!(true),
            Column::Ignore(_) => continue,
        };
        row.insert(column.name().to_owned(), value);
    }
    row
}

/// Loading must succeed or fail cleanly; a loaded model must work end to end.
fn load_and_use(text: &str) -> Result<(), privboost::learn::LearnError> {
    let model = LazyBbModel::from_json(text)?;
    let encoder = model.encoder().expect("a loaded model has an encoder");
    assert_eq!(encoder.n_literals(), model.literals.len());
    let _ = inspect(&model, &encoder).to_text();
    let predictor = model.predictor();
    let mut active = Vec::new();
    encoder
        .encode_json_row(&valid_row(&encoder), 1, &mut active)
        .expect("a row of declared values encodes");
    let p = predictor.prediction(predictor.vote_sum(&active));
    assert!((-1.0..=1.0).contains(&p.score), "{}", p.score);
    assert_eq!(LazyBbModel::from_json(&model.to_json()).unwrap(), model);
    Ok(())
}

/// Cells for the all-types schema: valid values, edge cases and junk.
fn cell() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::sample::select(vec![
            "17", "90", "-1e308", "1e999", "NaN", "inf", "-0", "0x10", "1_000", "20", "40.0",
            "Private", "Gov", "red", "3", "round", "NA", "?", "", " ", "yes", "no", "T", "0",
            "\"\"", "\"a,b\"", "\"", "\"\"\"", "\r", "\n", "\u{feff}", "é", "\u{0}",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..6),
    ]
}

/// Values each all-types column accepts, in header order (the label last).
const VALID_CELLS: [&[&str]; 9] = [
    &["17", "90", "-5", "1e6", "?", "  42  ", "\"50\""],
    &["1", "20", "40.5", "99", "1000"],
    &["Private", "Gov", "?", ""],
    &["x", "", "\"a,b\"", "\"multi\nline\""],
    &["red", "3", "blue"],
    &["round", "NA", "square"],
    &["yes", "N", "1", "false"],
    &["T", "0", "?"],
    &["yes", "no"],
];

/// A row for the all-types header: mostly values its columns accept (so that
/// some inputs are read, not all refused), sometimes junk or a wrong field count.
fn row() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let cells: Vec<BoxedStrategy<Vec<u8>>> = VALID_CELLS
        .iter()
        .map(|valid| {
            prop_oneof![
                15 => prop::sample::select(valid.to_vec()).prop_map(|s| s.as_bytes().to_vec()),
                1 => cell(),
            ]
            .boxed()
        })
        .collect();
    (
        cells,
        prop::option::weighted(0.05, cell()),
        prop::bool::weighted(0.05),
    )
        .prop_map(|(mut row, extra, drop_last)| {
            row.extend(extra);
            if drop_last {
                row.pop();
            }
            row
        })
}

/// A CSV: a header that is usually right, then rows.
fn csv_text() -> impl Strategy<Value = Vec<u8>> {
    let header = prop_oneof![
        4 => Just("age,hours,work,id,color,shape,smoker,vegan,y".to_string()),
        1 => Just("y,vegan,smoker,shape,color,id,work,hours,age".to_string()),
        1 => Just("age,hours,work,id,color,shape,smoker,vegan".to_string()),
        1 => Just("age,age,hours,work,id,color,shape,smoker,vegan,y".to_string()),
        1 => "[a-z,\"\n]{0,30}",
    ];
    let rows = prop::collection::vec(row(), 0..6);
    (header, rows, prop::sample::select(vec!["\n", "\r\n", "\r"])).prop_map(|(h, rows, eol)| {
        let mut out = h.into_bytes();
        for row in rows {
            out.extend_from_slice(eol.as_bytes());
            out.extend(row.join(&b","[..]));
        }
        out
    })
}

/// Any JSON value, nested a little.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::from)),
        prop::sample::select(vec![
            "", " ", "?", "NA", "Private", "red", "round", "yes", "1e999", "NaN", "17", " 42 ",
        ])
        .prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,3}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A prediction row: the schema's keys (usually), the label, a stray key, any values.
fn json_row(keys: Vec<String>) -> impl Strategy<Value = Map<String, Value>> {
    let n = keys.len();
    (
        prop::collection::vec((prop::bool::weighted(0.9), json_value()), n),
        prop::option::weighted(0.1, json_value()),
    )
        .prop_map(move |(values, stray)| {
            let mut row = Map::new();
            for (key, (keep, value)) in keys.iter().zip(values) {
                // Drop a key now and then (an absent column is an error).
                if keep {
                    row.insert(key.clone(), value);
                }
            }
            if let Some(v) = stray {
                row.insert("stray".into(), v);
            }
            row
        })
}

/// One column of a generated valid schema, with a value generator for it.
#[derive(Debug, Clone)]
enum Spec {
    Numeric {
        min: f64,
        width: f64,
        cuts: Result<u32, Vec<f64>>,
        thresholds_encoding: bool,
        missing: bool,
    },
    Categorical {
        n: usize,
        unknown: &'static str,
        missing: bool,
    },
    Boolean {
        missing: bool,
    },
    Ignore,
}

fn spec() -> impl Strategy<Value = Spec> {
    let numeric = (
        -1e6..1e6f64,
        1.0..1e6f64,
        prop_oneof![
            (2..50u32).prop_map(Ok),
            prop::collection::btree_set(1..1000u32, 1..6)
                .prop_map(|s| Err(s.into_iter().map(|k| f64::from(k) / 1000.0).collect())),
        ],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(min, width, cuts, thresholds_encoding, missing)| Spec::Numeric {
                min,
                width,
                cuts,
                thresholds_encoding,
                missing,
            },
        );
    let categorical = (
        1..6usize,
        prop::sample::select(vec!["error", "other", "missing"]),
        any::<bool>(),
    )
        .prop_map(|(n, unknown, missing)| Spec::Categorical {
            n,
            unknown,
            missing: missing || unknown == "missing",
        });
    prop_oneof![
        numeric,
        categorical,
        any::<bool>().prop_map(|missing| Spec::Boolean { missing }),
        Just(Spec::Ignore),
    ]
}

impl Spec {
    fn to_json(&self, name: &str) -> Value {
        let missing = |m: bool| m.then(|| json!(["?", ""]));
        let mut v = match self {
            Spec::Numeric {
                min,
                width,
                cuts,
                thresholds_encoding,
                missing: m,
            } => {
                let mut v = json!({"type": "numeric", "min": min, "max": min + width,
                    "encoding": if *thresholds_encoding { "thresholds" } else { "intervals" }});
                match cuts {
                    Ok(bins) => v["bins"] = json!(bins),
                    // Fractions of the width, strictly inside (min, max).
                    Err(fractions) => {
                        let cuts: Vec<f64> = fractions.iter().map(|f| min + f * width).collect();
                        v["thresholds"] = json!(cuts);
                    }
                }
                if let Some(t) = missing(*m) {
                    v["missing"] = t;
                }
                v
            }
            Spec::Categorical {
                n,
                unknown,
                missing: m,
            } => {
                let categories: Vec<String> = (0..*n).map(|i| format!("k{i}")).collect();
                let mut v =
                    json!({"type": "categorical", "categories": categories, "unknown": unknown});
                if let Some(t) = missing(*m) {
                    v["missing"] = t;
                }
                v
            }
            Spec::Boolean { missing: m } => {
                let mut v = json!({"type": "boolean"});
                if let Some(t) = missing(*m) {
                    v["missing"] = t;
                }
                v
            }
            Spec::Ignore => json!({"type": "ignore"}),
        };
        v["name"] = json!(name);
        v
    }

    /// A value the column accepts, as text, chosen by `pick`.
    fn value(&self, pick: u32, x: f64) -> String {
        let missing = match self {
            Spec::Numeric { missing, .. }
            | Spec::Categorical { missing, .. }
            | Spec::Boolean { missing } => *missing,
            Spec::Ignore => false,
        };
        if missing && pick.is_multiple_of(5) {
            return if pick.is_multiple_of(2) { "?" } else { "" }.into();
        }
        match self {
            // Anywhere around the range: outside values are clamped.
            Spec::Numeric { min, width, .. } => format!("{}", min - width + 3.0 * width * x),
            Spec::Categorical { n, unknown, .. } => {
                if *unknown != "error" && pick.is_multiple_of(3) {
                    "not-declared".into()
                } else {
                    format!("k{}", pick as usize % n)
                }
            }
            Spec::Boolean { .. } => ["true", "F", "yes", "n", "1", "0"][pick as usize % 6].into(),
            Spec::Ignore => format!("id{pick}"),
        }
    }
}

/// A valid schema (the first column is never ignored) and rows of valid values.
fn schema_and_rows() -> impl Strategy<Value = (Vec<Spec>, Vec<Vec<(u32, f64)>>)> {
    (spec(), prop::collection::vec(spec(), 0..6))
        .prop_filter("a feature first", |(first, _)| {
            !matches!(first, Spec::Ignore)
        })
        .prop_flat_map(|(first, rest)| {
            let specs: Vec<Spec> = std::iter::once(first).chain(rest).collect();
            let n = specs.len();
            let rows =
                prop::collection::vec(prop::collection::vec((any::<u32>(), 0.0..1.0f64), n), 1..8);
            (Just(specs), rows)
        })
}

fn schema_of(specs: &[Spec]) -> Schema {
    let columns: Vec<Value> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| s.to_json(&format!("c{i}")))
        .collect();
    let text = json!({"label": {"column": "y", "positive": "pos"}, "columns": columns});
    Schema::from_json(&text.to_string()).expect("a generated schema is valid")
}

/// The literals a valid value must give, counted per feature column.
fn expected_count(column: &Column, value: &str) -> usize {
    let missing = column
        .missing()
        .is_some_and(|m| m.iter().any(|t| t == value.trim()));
    match column {
        _ if missing => 1,
        Column::Numeric(c) if c.encoding == NumericEncoding::Thresholds => {
            let x: f64 = value.parse::<f64>().unwrap().clamp(c.min, c.max);
            c.cut_points()
                .unwrap()
                .iter()
                .filter(|&&cut| x <= cut)
                .count()
        }
        Column::Boolean(_) => usize::from(["true", "yes", "1"].contains(&value)),
        _ => 1,
    }
}

proptest! {
    #![proptest_config(Config::with_cases(256))]

    /// Arbitrary CSV text: an error or a well-formed dataset, with every reader mode.
    #[test]
    fn any_csv_is_read_or_refused(text in csv_text()) {
        let encoder = all_types();
        for label in [LabelMode::Required, LabelMode::Optional] {
            for on_bad_row in [OnBadRow::Refuse, OnBadRow::Skip] {
                let options = ReadOptions { label, on_bad_row, max_errors: 3 };
                if let Ok(report) = read_csv_with(&text[..], &encoder, &options) {
                    let data = &report.dataset;
                    prop_assert!(data.n_rows() > 0);
                    prop_assert_eq!(data.n_literals(), encoder.n_literals());
                    if let Some(labels) = &data.labels {
                        prop_assert_eq!(labels.len(), data.n_rows());
                    }
                    for i in 0..data.n_rows() {
                        check_active(&data.features.row_active(i), &encoder);
                    }
                }
            }
        }
    }

    /// Arbitrary bytes as CSV never panic the reader.
    #[test]
    fn any_bytes_are_read_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = read_csv(&bytes[..], &all_types(), LabelMode::Optional);
    }

    /// Arbitrary JSON rows never panic the row decoder or the predictors of real models.
    #[test]
    fn any_json_row_is_encoded_or_refused(
        row in json_row(vec![
            "age", "hours", "work", "id", "color", "shape", "smoker", "vegan", "y",
            "workclass", "education", "occupation", "odor",
        ].into_iter().map(String::from).collect()),
    ) {
        let mut active = Vec::new();
        let encoder = all_types();
        if encoder.encode_json_row(&row, 1, &mut active).is_ok() {
            check_active(&active, &encoder);
        }
        for text in MODELS {
            let model = LazyBbModel::from_json(text).unwrap();
            let (encoder, predictor) = (model.encoder().unwrap(), model.predictor());
            if encoder.encode_json_row(&row, 1, &mut active).is_ok() {
                check_active(&active, &encoder);
                let p = predictor.prediction(predictor.vote_sum(&active));
                prop_assert!((-1.0..=1.0).contains(&p.score));
            }
        }
    }

    /// Arbitrary JSON text as a schema: refused, or a schema whose encoder builds
    /// and whose literal count was predicted.
    #[test]
    fn any_schema_json_is_parsed_or_refused(value in json_value(), text in ".{0,60}") {
        for candidate in [value.to_string(), text, json!({"label": {"column": "y", "positive": "1"}, "columns": [value]}).to_string()] {
            if let Ok(schema) = Schema::from_json(&candidate) {
                let encoder = Encoder::new(&schema).unwrap();
                prop_assert_eq!(encoder.n_literals(), schema.n_literals());
            }
        }
    }

    /// Generated valid schemas survive their JSON, and rows of valid values encode
    /// to the expected literals, the same from CSV as from JSON.
    #[test]
    fn valid_rows_encode_with_the_expected_literals((specs, rows) in schema_and_rows()) {
        let schema = schema_of(&specs);
        prop_assert_eq!(&Schema::from_json(&schema.to_json_pretty()).unwrap(), &schema);
        let encoder = Encoder::new(&schema).unwrap();
        prop_assert_eq!(encoder.n_literals(), schema.n_literals());
        let names: Vec<String> = (0..specs.len()).map(|i| format!("c{i}")).collect();
        let mut csv = format!("{},y\n", names.join(","));
        let mut from_json = Vec::new();
        for cells in &rows {
            let values: Vec<String> = specs.iter().zip(cells).map(|(s, &(p, x))| s.value(p, x)).collect();
            csv.push_str(&format!("{},pos\n", values.join(",")));
            let row: Map<String, Value> = names.iter().cloned().zip(values.iter().map(|v| json!(v))).collect();
            let mut active = Vec::new();
            encoder.encode_json_row(&row, 1, &mut active).unwrap();
            check_active(&active, &encoder);
            let literals = encoder.literals();
            let features = schema.columns.iter().filter(|c| c.is_feature());
            let feature_values = schema.columns.iter().zip(&values).filter(|(c, _)| c.is_feature()).map(|(_, v)| v);
            for (f, (column, value)) in features.zip(feature_values).enumerate() {
                let got = active.iter().filter(|&&l| literals[l as usize].feature == f).count();
                prop_assert_eq!(got, expected_count(column, value), "{} = {:?}", column.name(), value);
            }
            from_json.push(active);
        }
        let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
        prop_assert_eq!(data.n_rows(), rows.len());
        for (i, active) in from_json.iter().enumerate() {
            prop_assert_eq!(&data.features.row_active(i), active);
        }
    }
}

/// Every JSON pointer to a value inside `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                pointers(item, format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                pointers(
                    item,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        _ => {}
    }
    out.push(at);
}

/// Replacement values that stress the loader: huge and negative counts, wrong
/// types, out-of-range indices, empty containers.
fn model_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            json!(0),
            json!(1),
            json!(2),
            json!(-1),
            json!(16),
            json!(17),
            json!(10_001),
            json!(u32::MAX),
            json!(u64::MAX),
            json!(1e300),
            json!(0.5),
            json!(null),
            json!(true),
            json!(""),
            json!("dp-1r"),
            json!("dp-top-down"),
            json!([]),
            json!({}),
            json!({"kind": "literal", "literal": 5, "negated": true}),
            json!({"kind": "constant", "positive": false}),
            json!({"kind": "tree", "nodes": [{"kind": "leaf", "positive": true}]}),
            json!({"kind": "split", "literal": 0, "if_false": 1, "if_true": 1}),
            json!({"name": "x", "type": "numeric", "min": 0, "max": 1, "bins": 1000}),
        ]),
        json_value(),
    ]
}

proptest! {
    #![proptest_config(Config::with_cases(256))]

    /// A real model with one value replaced anywhere: refused, or usable end to end.
    #[test]
    fn a_mutated_model_is_loaded_or_refused(
        which in 0..MODELS.len(),
        pick in any::<prop::sample::Index>(),
        replacement in model_value(),
    ) {
        let mut value: Value = serde_json::from_str(MODELS[which]).unwrap();
        let mut all = Vec::new();
        pointers(&value, String::new(), &mut all);
        let at = pick.get(&all).clone();
        *value.pointer_mut(&at).unwrap() = replacement;
        let _ = load_and_use(&value.to_string());
    }

    /// A real model with its text cut or with bytes changed: refused, or usable.
    #[test]
    fn a_corrupted_model_file_is_loaded_or_refused(
        which in 0..MODELS.len(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = MODELS[which].as_bytes().to_vec();
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        if let Ok(text) = std::str::from_utf8(&bytes) {
            let _ = load_and_use(text);
        }
        // Cut at a byte: the model text has non-ASCII characters (e.g. "∝").
        if let Some(head) = MODELS[which].get(..cut.index(MODELS[which].len())) {
            let _ = load_and_use(head);
        }
    }
}

/// The CSV generator is worth something only if its inputs reach both outcomes:
/// count them over a deterministic sample.
#[test]
fn the_csv_generator_reaches_both_outcomes() {
    let mut runner = TestRunner::deterministic();
    let strategy = csv_text();
    let mut options = ReadOptions::new(LabelMode::Required);
    options.on_bad_row = OnBadRow::Skip;
    let (mut read, mut refused) = (0, 0);
    for _ in 0..256 {
        let text = strategy.new_tree(&mut runner).unwrap().current();
        match read_csv_with(&text[..], &all_types(), &options) {
            Ok(_) => read += 1,
            Err(_) => refused += 1,
        }
    }
    assert!(
        read >= 25 && refused >= 25,
        "{read} read, {refused} refused"
    );
}

#[test]
fn the_seed_models_load_and_round_trip() {
    for text in MODELS {
        load_and_use(text).unwrap();
    }
}

/// Claims of huge sizes are refused from their numbers, before anything is
/// allocated in proportion to them.
#[test]
fn huge_claims_are_refused_cheaply() {
    let model: Value = serde_json::from_str(MODELS[0]).unwrap();

    // Rounds: tau far beyond the ensemble (and the training limit).
    let mut v = model.clone();
    v["params"]["tau"] = json!(u32::MAX);
    assert!(LazyBbModel::from_json(&v.to_string()).is_err());

    // Literals: a schema whose bins would make millions of literals.
    let mut v = model.clone();
    let wide: Vec<Value> = (0..2000)
        .map(|i| json!({"name": format!("w{i}"), "type": "numeric", "min": 0, "max": 1, "bins": 1000}))
        .collect();
    v["schema"]["columns"] = json!(wide);
    let e = LazyBbModel::from_json(&v.to_string())
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("at most {MAX_LITERALS}")), "{e}");

    // Intervals: bins beyond the limit, and an absurd bin count.
    for bins in [json!(1001), json!(u64::MAX), json!(1e300)] {
        let text = json!({"label": {"column": "y", "positive": "1"},
            "columns": [{"name": "a", "type": "numeric", "min": 0, "max": 1, "bins": bins}]});
        assert!(Schema::from_json(&text.to_string()).is_err());
    }
}

/// A field of 100 MB (generated as it is read, not held) is refused with a row
/// error; the reader does not buffer it.
#[test]
fn a_100_mb_field_is_refused() {
    let header = "age,hours,work,id,color,shape,smoker,vegan,y\n";
    let input = header
        .as_bytes()
        .chain(&b"17,20,Gov,"[..])
        .chain(std::io::repeat(b'x').take(100 << 20))
        .chain(&b",red,round,yes,no,yes\n"[..]);
    let e = read_csv(input, &all_types(), LabelMode::Required).unwrap_err();
    assert!(matches!(e, DataError::Row { row: 1, .. }), "{e}");
    assert!(e.to_string().contains("the record is longer than"), "{e}");
}
