//! Tests of the ONNX export: the graph's inputs, outputs and metadata for a
//! tiny model, the encoding's matrices by hand, every learner's literal form
//! against its own predictor, and the refusals. (onnxruntime's predictions
//! on every shipped set are checked by `.ci/onnx`.)

use serde_json::json;

use super::*;
use crate::data::{Dataset, Encoder, LabelMode, read_csv};
use crate::export::{ExportFormat, export};
use crate::learn::{AlgorithmSpec, Output, PublicFacts};
use crate::privacy::{Budget, NoiseRng};

const CLASSIFIER: &str = r#"{
  "label": {"column": "y", "positive": "yes", "negative": "no"},
  "columns": [
    {"name": "id", "type": "ignore"},
    {"name": "age", "type": "numeric", "min": 0, "max": 100, "thresholds": [30, 60], "missing": ["?"]},
    {"name": "color", "type": "categorical", "categories": ["red", "blue"], "unknown": "other"},
    {"name": "smoker", "type": "boolean"}
  ]
}"#;

const REGRESSOR: &str = r#"{
  "label": {"column": "y", "type": "numeric", "min": 0, "max": 10},
  "columns": [
    {"name": "age", "type": "numeric", "min": 0, "max": 100, "bins": 4, "encoding": "thresholds"},
    {"name": "color", "type": "categorical", "categories": ["red", "blue", "green"], "missing": ["?"], "unknown": "missing"}
  ]
}"#;

/// 400 rows of `schema` (the classifier's or the regressor's columns).
fn data(schema: &Schema) -> (Encoder, Dataset) {
    let encoder = Encoder::new(schema).unwrap();
    let regression = schema.task() != Task::Binary;
    let names: Vec<&str> = schema.columns.iter().map(Column::name).collect();
    let mut csv = format!("{},y\n", names.join(","));
    let colors = ["red", "blue", "green", "?"];
    for i in 0..400 {
        let age = if i % 17 == 0 {
            "?".to_owned()
        } else {
            ((i * 37) % 100).to_string()
        };
        if regression {
            let age = (i * 37) % 100;
            let color = colors[i % 4];
            csv.push_str(&format!("{age},{color},{}\n", (age / 10) % 11));
        } else {
            let color = colors[i % 3];
            let smoker = u8::from(i % 5 == 0);
            let y = if (i * 37) % 100 > 50 || smoker == 1 {
                "yes"
            } else {
                "no"
            };
            csv.push_str(&format!("{i},{age},{color},{smoker},{y}\n"));
        }
    }
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    (encoder, data)
}

/// A seeded fit of `spec` on [`data`].
fn fit(schema: &str, spec: serde_json::Value) -> (Model, Encoder, Dataset) {
    let schema = Schema::from_json(schema).unwrap();
    let (encoder, data) = data(&schema);
    let spec: AlgorithmSpec = serde_json::from_value(spec).unwrap();
    let plan = spec
        .plan(
            Budget::new(4.0, 0.0).unwrap(),
            PublicFacts::new(&encoder, data.n_rows()),
        )
        .unwrap();
    let mut rng = NoiseRng::seeded(29);
    let model = plan.fit(&data, &encoder, &mut rng, &mut |_| true).unwrap();
    (model, encoder, data)
}

/// A tensor's element type and dimensions (`None`: the batch size).
type Typed = (i32, Vec<Option<i64>>);

fn elem_and_dims(v: &ValueInfoProto) -> Typed {
    let t = v.r#type.as_ref().unwrap().tensor_type.as_ref().unwrap();
    let dims = t.shape.as_ref().unwrap().dim.iter().map(|d| d.dim_value);
    (t.elem_type.unwrap(), dims.collect())
}

fn metadata(m: &ModelProto, key: &str) -> String {
    m.metadata_props
        .iter()
        .find(|e| e.key.as_deref() == Some(key))
        .and_then(|e| e.value.clone())
        .unwrap_or_else(|| panic!("no metadata {key}"))
}

/// One input per feature column (the ignored column is not one), typed by
/// kind; the classifier's two outputs; the opsets; the privacy statement
/// as the model states it and the schema in the metadata; and the file
/// decodes to the same message.
#[test]
fn a_classifier_graph_has_one_input_per_column_and_the_statement() {
    let (model, _, _) = fit(CLASSIFIER, json!({"algorithm": "dp-linear"}));
    let proto = onnx_model(&model).unwrap();
    let graph = proto.graph.as_ref().unwrap();
    let inputs: Vec<(&str, Typed)> = graph
        .input
        .iter()
        .map(|v| (v.name.as_deref().unwrap(), elem_and_dims(v)))
        .collect();
    assert_eq!(
        inputs,
        [
            ("age", (data_type::DOUBLE, vec![None, Some(1)])),
            ("color", (data_type::STRING, vec![None, Some(1)])),
            ("smoker", (data_type::DOUBLE, vec![None, Some(1)])),
        ]
    );
    let outputs: Vec<(&str, Typed)> = graph
        .output
        .iter()
        .map(|v| (v.name.as_deref().unwrap(), elem_and_dims(v)))
        .collect();
    assert_eq!(
        outputs,
        [
            (LABEL, (data_type::STRING, vec![None])),
            (PROBABILITIES, (data_type::DOUBLE, vec![None, Some(2)])),
        ]
    );
    let opsets: Vec<(&str, i64)> = proto
        .opset_import
        .iter()
        .map(|o| (o.domain.as_deref().unwrap(), o.version.unwrap()))
        .collect();
    assert_eq!(opsets, [("", 21), ("ai.onnx.ml", 5)]);
    assert_eq!(proto.ir_version, Some(10));
    assert_eq!(
        metadata(&proto, "privboost.privacy"),
        model.privacy_json().to_string()
    );
    assert_eq!(
        metadata(&proto, "privboost.schema"),
        model.schema().to_json_pretty()
    );
    assert_eq!(metadata(&proto, "privboost.classes"), r#"["no","yes"]"#);
    assert_eq!(metadata(&proto, "privboost.algorithm"), "dp-linear");
    // Every node's inputs exist before it (a topologically sorted graph).
    let mut known: Vec<&str> = graph
        .input
        .iter()
        .map(|v| v.name.as_deref().unwrap())
        .chain(graph.initializer.iter().map(|t| t.name.as_deref().unwrap()))
        .collect();
    for node in &graph.node {
        for i in &node.input {
            assert!(known.contains(&i.as_str()), "{i} used before it is made");
        }
        known.extend(node.output.iter().map(String::as_str));
    }
    let bytes = export(&model, ExportFormat::Onnx).unwrap();
    assert_eq!(ModelProto::decode(bytes.as_slice()).unwrap(), proto);
}

/// The numeric encoding's matrices by hand: literal = (x > cut) A + b,
/// masked by "not NaN". Intervals of cuts [30, 60]: `x <= 30` is
/// `1 - g0`, `30 < x <= 60` is `g0 - g1`, `x > 60` is `g1`; thresholds:
/// `x <= c` is `1 - g`.
#[test]
fn numeric_encoding_matrices_by_hand() {
    let matrices = |encoding: &str| {
        let column: Column = serde_json::from_value(json!({
            "name": "x", "type": "numeric", "min": 0, "max": 100,
            "thresholds": [30, 60], "encoding": encoding}))
        .unwrap();
        let mut g = Graph::default();
        let (elem, block, width) = column_block(&mut g, &column).unwrap();
        assert_eq!(elem, data_type::DOUBLE);
        assert!(block.is_some());
        let tensors: Vec<(Vec<i64>, Vec<f64>)> = g
            .initializers
            .iter()
            .map(|t| (t.dims.clone(), t.double_data.clone()))
            .collect();
        (width, tensors)
    };
    let (width, t) = matrices("intervals");
    assert_eq!(width, 3);
    assert_eq!(
        t,
        [
            (vec![], vec![0.0]),
            (vec![], vec![100.0]),
            (vec![2], vec![30.0, 60.0]),
            (vec![2, 3], vec![-1.0, 1.0, 0.0, 0.0, -1.0, 1.0]),
            (vec![3], vec![1.0, 0.0, 0.0]),
        ]
    );
    let (width, t) = matrices("thresholds");
    assert_eq!(width, 2);
    assert_eq!(t[3], (vec![2, 2], vec![-1.0, 0.0, 0.0, -1.0]));
    assert_eq!(t[4], (vec![2], vec![1.0, 1.0]));
}

/// A categorical column's LabelEncoder maps each value to its literal's
/// position in the column's block: categories, `is other`, `is missing`;
/// a missing token wins over a category; an unknown value goes where the
/// schema's `unknown` says (-1: no literal).
#[test]
fn categorical_encoding_maps_values_to_literal_positions() {
    let encoder_of = |column: serde_json::Value| {
        let column: Column = serde_json::from_value(column).unwrap();
        let mut g = Graph::default();
        let (elem, _, width) = column_block(&mut g, &column).unwrap();
        assert_eq!(elem, data_type::STRING);
        let node = g
            .nodes
            .iter()
            .find(|n| n.op_type.as_deref() == Some("LabelEncoder"))
            .unwrap()
            .clone();
        assert_eq!(node.domain.as_deref(), Some("ai.onnx.ml"));
        let attr = |name: &str| {
            node.attribute
                .iter()
                .find(|a| a.name.as_deref() == Some(name))
                .unwrap()
                .clone()
        };
        let keys: Vec<String> = attr("keys_strings")
            .strings
            .iter()
            .map(|s| String::from_utf8(s.clone()).unwrap())
            .collect();
        (
            width,
            keys,
            attr("values_int64s").ints,
            attr("default_int64").i.unwrap(),
        )
    };
    let (width, keys, values, default) = encoder_of(json!({
        "name": "c", "type": "categorical", "categories": ["a", "b", "?"],
        "unknown": "other", "missing": ["?", "NA"]}));
    assert_eq!(width, 5);
    assert_eq!(keys, ["a", "b", "?", "NA"]);
    assert_eq!(values, [0, 1, 4, 4]);
    assert_eq!(default, 3);
    let (width, _, values, default) = encoder_of(json!({
        "name": "c", "type": "categorical", "categories": ["a", "b"],
        "unknown": "missing", "missing": ["?"]}));
    assert_eq!((width, values, default), (3, vec![0, 1, 2], 2));
    let (width, _, values, default) = encoder_of(json!({
        "name": "c", "type": "categorical", "categories": ["a", "b"]}));
    assert_eq!((width, values, default), (2, vec![0, 1], -1));
}

/// The output a literal form gives for a raw sum, as the graph computes it.
fn form_output(form: &LiteralForm, raw: f64) -> Output {
    let class = |p: f64| {
        Output::Class(crate::learn::Prediction {
            positive: p >= 0.5,
            score: 2.0 * p - 1.0,
            probability: p,
        })
    };
    match form.output {
        FormOutput::Logistic => class(crate::learn::ebm::sigmoid(raw)),
        FormOutput::Votes { tau } => class((raw / f64::from(tau) + 1.0) / 2.0),
        FormOutput::Clamp { min, max } => Output::Value(raw.clamp(min, max)),
        FormOutput::Unscale { min, max } => {
            Output::Value((min + (raw.clamp(-1.0, 1.0) + 1.0) * (max - min) / 2.0).clamp(min, max))
        }
    }
}

/// Every learner's literal form predicts every row as the model's own
/// predictor does: the class exactly, the probability or value to 1e-12.
#[test]
fn every_learners_literal_form_predicts_as_the_model() {
    let cases = [
        (CLASSIFIER, json!({"algorithm": "lazybb", "tau": 7})),
        (
            CLASSIFIER,
            json!({"algorithm": "lazybb", "tau": 5, "weak_learner": "dp-top-down", "internal_nodes": 3}),
        ),
        (CLASSIFIER, json!({"algorithm": "dp-ebm", "epochs": 2})),
        (CLASSIFIER, json!({"algorithm": "dp-linear"})),
        (CLASSIFIER, json!({"algorithm": "dpboost"})),
        (REGRESSOR, json!({"algorithm": "dp-ebm", "epochs": 2})),
        (REGRESSOR, json!({"algorithm": "dp-linear"})),
        (REGRESSOR, json!({"algorithm": "dpboost"})),
    ];
    for (schema, spec) in cases {
        let (model, _, data) = fit(schema, spec.clone());
        let form = model.literal_form().unwrap();
        if spec["algorithm"] == "dpboost" || spec.get("weak_learner").is_some() {
            assert!(!form.trees.is_empty(), "{spec}: trees expected");
        }
        let predictor = model.predictor();
        let expected = predictor.predict_all(&data);
        for (r, want) in expected.iter().enumerate() {
            let active: Vec<u32> = (0..data.n_literals() as u32)
                .filter(|&l| data.features.get(r, l as usize))
                .collect();
            let got = form_output(&form, form.raw(&active));
            match (got, want) {
                (Output::Class(g), Output::Class(w)) => {
                    assert_eq!(g.positive, w.positive, "{spec} row {r}");
                    assert!((g.probability - w.probability).abs() < 1e-12, "{spec}");
                }
                (Output::Value(g), Output::Value(w)) => {
                    assert!((g - w).abs() < 1e-12, "{spec} row {r}: {g} vs {w}")
                }
                other => panic!("{spec}: {other:?}"),
            }
        }
        // And the graph is written.
        let proto = onnx_model(&model).unwrap();
        let outputs: Vec<&str> = proto
            .graph
            .as_ref()
            .unwrap()
            .output
            .iter()
            .map(|o| o.name.as_deref().unwrap())
            .collect();
        match model.task() {
            Task::Binary => assert_eq!(outputs, [LABEL, PROBABILITIES]),
            Task::Regression { .. } => assert_eq!(outputs, [VARIABLE]),
            Task::Multiclass { .. } => panic!("the fixtures are binary or regression"),
        }
    }
}

/// DPBoost's trees become one double-precision TreeEnsemble: one root per
/// tree, one leaf weight per leaf, and its "any of" splits read sums of
/// the literals.
#[test]
fn dpboost_trees_become_one_tree_ensemble() {
    let (model, encoder, _) = fit(REGRESSOR, json!({"algorithm": "dpboost"}));
    let form = model.literal_form().unwrap();
    let proto = onnx_model(&model).unwrap();
    let graph = proto.graph.unwrap();
    let ensembles: Vec<&NodeProto> = graph
        .node
        .iter()
        .filter(|n| n.op_type.as_deref() == Some("TreeEnsemble"))
        .collect();
    assert_eq!(ensembles.len(), 1);
    let attr = |name: &str| {
        ensembles[0]
            .attribute
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
            .unwrap()
            .clone()
    };
    assert_eq!(attr("tree_roots").ints.len(), form.trees.len());
    let leaves: usize = form
        .trees
        .iter()
        .map(|t| {
            t.nodes
                .iter()
                .filter(|n| matches!(n, FormNode::Leaf(_)))
                .count()
        })
        .sum();
    let weights = attr("leaf_weights").t.unwrap();
    assert_eq!(weights.data_type, Some(data_type::DOUBLE));
    assert_eq!(weights.double_data.len(), leaves);
    let splits = attr("nodes_splits").t.unwrap();
    assert_eq!(splits.data_type, Some(data_type::DOUBLE));
    let multi = form
        .trees
        .iter()
        .flat_map(|t| &t.nodes)
        .any(|n| matches!(n, FormNode::Split { any_of, .. } if any_of.len() != 1));
    let max_feature = attr("nodes_featureids").ints.into_iter().max().unwrap();
    assert_eq!(
        max_feature >= encoder.n_literals() as i64,
        multi,
        "derived features exactly when a split tests several literals"
    );
}

/// Refusals name the cause: a feature column named like an output, an
/// unknown format.
#[test]
fn refusals_name_the_cause() {
    let schema = CLASSIFIER.replace("\"smoker\"", "\"label\"");
    let (model, _, _) = fit(&schema, json!({"algorithm": "dp-linear"}));
    let e = export(&model, ExportFormat::Onnx).unwrap_err();
    assert!(matches!(e, ExportError::Unsupported(_)), "{e}");
    assert!(e.to_string().contains("\"label\""), "{e}");
    let e = ExportFormat::parse("pmml").unwrap_err().to_string();
    assert!(e.contains("pmml") && e.contains("onnx"), "{e}");
}
