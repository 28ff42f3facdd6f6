//! A trained model as a standard ONNX graph (`ai.onnx` opset 21,
//! `ai.onnx.ml` opset 5, IR version 10), for onnxruntime and other ONNX
//! runtimes.
//!
//! The graph (docs/export.md describes it for users):
//!
//! - **Inputs**: one per feature column of the schema, named as the column,
//!   shape `[N, 1]`: `tensor(string)` for a categorical column,
//!   `tensor(double)` for a numeric or boolean one (doubles, not floats: the
//!   cut points are `f64` and a float input would put values near a cut in
//!   the wrong interval). A boolean is `1` for true and `0` for false; `NaN`
//!   is missing in a numeric or boolean column (declared missing tokens are
//!   strings, which a double cannot carry); a categorical column's missing
//!   tokens are matched as strings. Ignored columns and the label are not
//!   inputs.
//! - **Encoding**: the literals exactly as [`crate::data::Encoder`] sets
//!   them, in its order: a number is clamped into the column's public
//!   bounds and compared with the public cut points (`x == c` lands in
//!   `(.., c]`), a category matched by `ai.onnx.ml.LabelEncoder`, a missing
//!   token gives only the `is missing` literal, an unknown category the `is
//!   other` or `is missing` literal as the schema's `unknown` says. What
//!   privboost refuses as an error (an unknown category under
//!   `unknown: error`, `NaN` in a column without missing tokens, a boolean
//!   other than 0 or 1) gives the column no true literal: a graph cannot
//!   raise.
//! - **Model**: the [`LiteralForm`]: a `MatMul` of the literals with one
//!   weight per literal plus the constant, and the trees as one
//!   `ai.onnx.ml.TreeEnsemble` (opset 5, in double precision) over the
//!   literals and, for DPBoost's "any of these literals" splits, their sums.
//!   Everything is computed in double precision: `ai.onnx.ml`'s
//!   `LinearClassifier`/`LinearRegressor` and the older tree ensembles
//!   compute in float, which misses privboost's predictions by more than
//!   1e-6.
//! - **Outputs**, named as sklearn-onnx names them: a binary classifier gives
//!   `label` (`tensor(string)`, shape `[N]`: the schema's positive value or
//!   its negative value, `not <positive>` if none, as `privboost predict`
//!   prints) and `probabilities` (`tensor(double)` `[N, 2]`: the negative
//!   class, then the positive); a regressor gives `variable`
//!   (`tensor(double)` `[N, 1]`), clamped into the label's public bounds.
//! - **metadata_props**: the model's privacy statement as written in the
//!   model (`privboost.privacy`), its schema (`privboost.schema`), the
//!   algorithm and the class order.

use prost::Message;

use super::ExportError;
use super::proto::{
    AttributeProto, Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    StringStringEntryProto, TensorProto, TensorShapeProto, TensorTypeProto, TypeProto,
    ValueInfoProto, attribute_type, data_type,
};
use crate::data::{Column, NumericEncoding, Schema, Task, UnknownPolicy};
use crate::learn::{FormNode, FormOutput, LearnError, LiteralForm, Model};

/// The ONNX IR version written.
pub const IR_VERSION: i64 = 10;
/// The `ai.onnx` opset.
pub const OPSET: i64 = 21;
/// The `ai.onnx.ml` opset (TreeEnsemble needs 5).
pub const ML_OPSET: i64 = 5;
const ML: &str = "ai.onnx.ml";

/// Output names (as sklearn-onnx names them).
pub const LABEL: &str = "label";
/// The classifier's probabilities output.
pub const PROBABILITIES: &str = "probabilities";
/// The regressor's value output.
pub const VARIABLE: &str = "variable";
/// Prefix of every intermediate tensor's name.
const INTERNAL: &str = "privboost/";

/// The model as an ONNX file.
pub fn to_onnx(model: &Model) -> Result<Vec<u8>, ExportError> {
    Ok(onnx_model(model)?.encode_to_vec())
}

/// The class values in the order of the `probabilities` columns: the
/// negative, then the positive (as `privboost predict` prints them).
pub fn class_names(schema: &Schema) -> [String; 2] {
    [schema.label.negative_name(), schema.label.positive.clone()]
}

/// The model as an ONNX `ModelProto`.
pub fn onnx_model(model: &Model) -> Result<ModelProto, ExportError> {
    let schema = model.schema();
    let encoder = model.encoder()?;
    for c in schema.columns.iter().filter(|c| c.is_feature()) {
        let name = c.name();
        if [LABEL, PROBABILITIES, VARIABLE].contains(&name) || name.starts_with(INTERNAL) {
            return Err(ExportError::Unsupported(format!(
                "feature column {name:?} has the name of one of the ONNX graph's outputs or \
                 intermediate tensors; rename the column to export the model"
            )));
        }
    }
    // A model shape the form cannot write (a multiclass model) is the
    // caller's to hear about (422 naming why), not a broken stored model.
    let form = model.literal_form().map_err(|e| match e {
        LearnError::InvalidParameter(m) => ExportError::Unsupported(m),
        e => ExportError::Model(e),
    })?;
    let mut g = Graph::default();

    // Inputs and the literal encoding, block by block in the encoder's order.
    let mut blocks = Vec::new();
    let mut inputs = Vec::new();
    for (f, column) in schema.columns.iter().filter(|c| c.is_feature()).enumerate() {
        let expected = encoder.literals().iter().filter(|l| l.feature == f).count();
        let (elem, block, width) = column_block(&mut g, column)?;
        if width != expected {
            return Err(ExportError::Unsupported(format!(
                "column {:?}: the graph's encoding has {width} literals, the encoder {expected}",
                column.name()
            )));
        }
        inputs.push(value_info(column.name(), elem, &[None, Some(1)]));
        if let Some(block) = block {
            blocks.push(block);
        }
    }
    let d = encoder.n_literals();
    if d == 0 || form.weights.len() != d {
        return Err(ExportError::Unsupported(
            "the model has no literals to export".into(),
        ));
    }
    let literals = if blocks.len() == 1 {
        blocks.pop().expect("one block")
    } else {
        let refs: Vec<&str> = blocks.iter().map(String::as_str).collect();
        g.node("Concat", &refs, vec![int_attr("axis", 1)], "")
    };

    let raw = model_raw(&mut g, &form, &literals, d)?;

    let outputs = match (&form.output, model.task()) {
        (FormOutput::Logistic | FormOutput::Votes { .. }, Task::Binary) => {
            let p = match form.output {
                FormOutput::Votes { tau } => {
                    // (raw / tau + 1) / 2, as LazyBB's predictor computes it.
                    let tau = g.scalar(f64::from(tau));
                    let one = g.scalar(1.0);
                    let two = g.scalar(2.0);
                    let score = g.node("Div", &[&raw, &tau], vec![], "");
                    let shifted = g.node("Add", &[&score, &one], vec![], "");
                    g.node("Div", &[&shifted, &two], vec![], "")
                }
                _ => g.node("Sigmoid", &[&raw], vec![], ""),
            };
            let one = g.scalar(1.0);
            let q = g.node("Sub", &[&one, &p], vec![], "");
            g.named_node(
                "Concat",
                &[&q, &p],
                vec![int_attr("axis", 1)],
                "",
                PROBABILITIES,
            );
            let half = g.scalar(0.5);
            let positive = g.node("GreaterOrEqual", &[&p, &half], vec![], "");
            let [neg, pos] = class_names(schema);
            let pos = g.constant_strings(&[pos]);
            let neg = g.constant_strings(&[neg]);
            let class = g.node("Where", &[&positive, &pos, &neg], vec![], "");
            let flat = g.constant_i64(&[1], &[-1]);
            g.named_node("Reshape", &[&class, &flat], vec![], "", LABEL);
            vec![
                value_info(LABEL, data_type::STRING, &[None]),
                value_info(PROBABILITIES, data_type::DOUBLE, &[None, Some(2)]),
            ]
        }
        (FormOutput::Clamp { min, max }, Task::Regression { .. }) => {
            let (lo, hi) = (g.scalar(*min), g.scalar(*max));
            g.named_node("Clip", &[&raw, &lo, &hi], vec![], "", VARIABLE);
            vec![value_info(VARIABLE, data_type::DOUBLE, &[None, Some(1)])]
        }
        (FormOutput::Unscale { min, max }, Task::Regression { .. }) => {
            // min + (clamp(raw, -1, 1) + 1) * (max - min) / 2, then clamped,
            // in DPBoost's order of operations.
            let (m1, p1) = (g.scalar(-1.0), g.scalar(1.0));
            let c = g.node("Clip", &[&raw, &m1, &p1], vec![], "");
            let shifted = g.node("Add", &[&c, &p1], vec![], "");
            let width = g.scalar(max - min);
            let scaled = g.node("Mul", &[&shifted, &width], vec![], "");
            let two = g.scalar(2.0);
            let half = g.node("Div", &[&scaled, &two], vec![], "");
            let lo = g.scalar(*min);
            let value = g.node("Add", &[&lo, &half], vec![], "");
            let hi = g.scalar(*max);
            g.named_node("Clip", &[&value, &lo, &hi], vec![], "", VARIABLE);
            vec![value_info(VARIABLE, data_type::DOUBLE, &[None, Some(1)])]
        }
        _ => {
            return Err(ExportError::Unsupported(format!(
                "a {} model's output does not match its task",
                model.algorithm()
            )));
        }
    };

    let [negative, positive] = class_names(schema);
    let mut metadata = vec![
        entry("privboost.algorithm", model.algorithm()),
        entry("privboost.privacy", &model.privacy_json().to_string()),
        entry("privboost.schema", &schema.to_json_pretty()),
    ];
    if model.task() == Task::Binary {
        metadata.push(entry(
            "privboost.classes",
            &serde_json::json!([negative, positive]).to_string(),
        ));
    }
    Ok(ModelProto {
        ir_version: Some(IR_VERSION),
        producer_name: Some("privboost".into()),
        producer_version: Some(env!("CARGO_PKG_VERSION").into()),
        domain: Some("privboost".into()),
        model_version: Some(1),
        doc_string: Some(format!(
            "A differentially private {} model exported by privboost. Export is \
             post-processing of the released model and charges no privacy budget; the \
             privacy statement is in metadata_props[\"privboost.privacy\"].",
            model.algorithm()
        )),
        graph: Some(GraphProto {
            node: g.nodes,
            name: Some(format!("privboost-{}", model.algorithm())),
            initializer: g.initializers,
            doc_string: None,
            input: inputs,
            output: outputs,
        }),
        opset_import: vec![
            OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(OPSET),
            },
            OperatorSetIdProto {
                domain: Some(ML.into()),
                version: Some(ML_OPSET),
            },
        ],
        metadata_props: metadata,
    })
}

/// One feature column's input type and its literal block `[N, width]`
/// (`None` when it has no literals).
fn column_block(
    g: &mut Graph,
    column: &Column,
) -> Result<(i32, Option<String>, usize), ExportError> {
    let x = column.name().to_owned();
    let has_missing = column.missing().is_some_and(|t| !t.is_empty());
    match column {
        Column::Numeric(c) => {
            let cuts = c.cut_points().map_err(|e| {
                ExportError::Unsupported(format!(
                    "column {:?} has no public cut points to export ({e})",
                    c.name
                ))
            })?;
            let n = cuts.len();
            // g[k] = (clamp(x) > cut k) as 0/1; the literals are g A + b.
            let (cuts_used, a, b, width): (Vec<f64>, Vec<f64>, Vec<f64>, usize) = match c.encoding {
                NumericEncoding::Intervals if n == 0 => {
                    (vec![f64::INFINITY], vec![0.0], vec![1.0], 1)
                }
                // Interval 0 is 1 - g0, interval k is g[k-1] - g[k], the
                // last is g[n-1].
                NumericEncoding::Intervals => {
                    let mut a = vec![0.0; n * (n + 1)];
                    for k in 0..n {
                        a[k * (n + 1) + k] = -1.0;
                        a[k * (n + 1) + k + 1] = 1.0;
                    }
                    let mut b = vec![0.0; n + 1];
                    b[0] = 1.0;
                    (cuts.clone(), a, b, n + 1)
                }
                // Threshold k is x <= cut k: 1 - g[k].
                NumericEncoding::Thresholds => {
                    let mut a = vec![0.0; n * n];
                    for k in 0..n {
                        a[k * n + k] = -1.0;
                    }
                    (cuts.clone(), a, vec![1.0; n], n)
                }
            };
            let mut parts = Vec::new();
            let nan = g.node("IsNaN", &[&x], vec![], "");
            if width > 0 {
                let (lo, hi) = (g.scalar(c.min), g.scalar(c.max));
                let clamped = g.node("Clip", &[&x, &lo, &hi], vec![], "");
                let cuts_t = g.constant_f64(&[cuts_used.len() as i64], &cuts_used);
                let above = g.node("Greater", &[&clamped, &cuts_t], vec![], "");
                let above = g.cast_double(&above);
                let a_t = g.constant_f64(&[cuts_used.len() as i64, width as i64], &a);
                let b_t = g.constant_f64(&[width as i64], &b);
                let product = g.node("MatMul", &[&above, &a_t], vec![], "");
                let values = g.node("Add", &[&product, &b_t], vec![], "");
                parts.push(g.mask_not_nan(&values, &nan));
            }
            if has_missing {
                parts.push(g.cast_double(&nan));
            }
            let width = width + usize::from(has_missing);
            Ok((data_type::DOUBLE, g.concat(parts), width))
        }
        Column::Boolean(_) => {
            let nan = g.node("IsNaN", &[&x], vec![], "");
            let one = g.scalar(1.0);
            let is_true = g.node("Equal", &[&x, &one], vec![], "");
            let mut parts = vec![g.cast_double(&is_true)];
            if has_missing {
                parts.push(g.cast_double(&nan));
            }
            Ok((
                data_type::DOUBLE,
                g.concat(parts),
                1 + usize::from(has_missing),
            ))
        }
        Column::Categorical(c) => {
            // Each value maps to its literal's position in the column's block
            // (categories, then `is other`, then `is missing`), as the
            // encoder's rules say; -1 is no literal.
            let k = c.categories.len();
            let other = (c.unknown == UnknownPolicy::Other).then_some(k as i64);
            let missing = has_missing.then_some((k + usize::from(other.is_some())) as i64);
            let width = k + usize::from(other.is_some()) + usize::from(has_missing);
            let mut map: Vec<(String, i64)> = Vec::new();
            let mut set = |key: &str, value: i64| match map.iter_mut().find(|(k, _)| k == key) {
                // A later duplicate wins, as in the encoder's map.
                Some(entry) => entry.1 = value,
                None => map.push((key.to_owned(), value)),
            };
            for (i, v) in c.categories.iter().enumerate() {
                set(v, i as i64);
            }
            // A missing token wins over a category (the encoder checks it first).
            if let Some(m) = missing {
                for t in column.missing().unwrap_or_default() {
                    set(t, m);
                }
            }
            let default = match c.unknown {
                UnknownPolicy::Other => other.unwrap_or(-1),
                UnknownPolicy::Missing => missing.unwrap_or(-1),
                UnknownPolicy::Error => -1,
            };
            let position = g.node(
                "LabelEncoder",
                &[&x],
                vec![
                    strings_attr("keys_strings", map.iter().map(|(k, _)| k.as_str())),
                    ints_attr("values_int64s", map.iter().map(|(_, v)| *v)),
                    int_attr("default_int64", default),
                ],
                ML,
            );
            if width == 0 {
                return Ok((data_type::STRING, None, 0));
            }
            let range: Vec<i64> = (0..width as i64).collect();
            let range = g.constant_i64(&[width as i64], &range);
            let equal = g.node("Equal", &[&position, &range], vec![], "");
            Ok((data_type::STRING, Some(g.cast_double(&equal)), width))
        }
        Column::Ignore(_) => Err(ExportError::Unsupported(
            "an ignored column is not a feature".into(),
        )),
    }
}

/// The raw sum `[N, 1]` of the form over the literals `[N, d]`.
fn model_raw(
    g: &mut Graph,
    form: &LiteralForm,
    literals: &str,
    d: usize,
) -> Result<String, ExportError> {
    let w = g.constant_f64(&[d as i64, 1], &form.weights);
    let linear = g.node("MatMul", &[literals, &w], vec![], "");
    let base = g.scalar(form.base);
    let mut raw = g.node("Add", &[&base, &linear], vec![], "");
    if form.trees.is_empty() {
        return Ok(raw);
    }
    // Features of the trees: the literals, then one sum per "any of" set
    // that is not a single literal (a row has one of them iff the sum is
    // positive).
    let mut sets: Vec<Vec<u32>> = Vec::new();
    let mut feature_of = |any_of: &[u32]| -> usize {
        if let [l] = any_of {
            return *l as usize;
        }
        match sets.iter().position(|s| s == any_of) {
            Some(i) => d + i,
            None => {
                sets.push(any_of.to_vec());
                d + sets.len() - 1
            }
        }
    };
    let mut t = Trees::default();
    for tree in &form.trees {
        t.add(tree, &mut feature_of)?;
    }
    let features = if sets.is_empty() {
        literals.to_owned()
    } else {
        let mut m = vec![0.0; d * sets.len()];
        for (j, s) in sets.iter().enumerate() {
            for &l in s {
                m[l as usize * sets.len() + j] = 1.0;
            }
        }
        let m = g.constant_f64(&[d as i64, sets.len() as i64], &m);
        let sums = g.node("MatMul", &[literals, &m], vec![], "");
        g.node("Concat", &[literals, &sums], vec![int_attr("axis", 1)], "")
    };
    let n_nodes = t.feature.len() as i64;
    let n_leaves = t.leaf_weights.len() as i64;
    let splits = tensor_f64("nodes_splits", &[n_nodes], &vec![0.5; n_nodes as usize]);
    // Mode 3 is BRANCH_GT: the true branch when the feature exceeds 1/2.
    let modes = TensorProto {
        dims: vec![n_nodes],
        data_type: Some(data_type::UINT8),
        int32_data: vec![3; n_nodes as usize],
        name: Some("nodes_modes".into()),
        ..Default::default()
    };
    let leaf_weights = tensor_f64("leaf_weights", &[n_leaves], &t.leaf_weights);
    let sum = g.node(
        "TreeEnsemble",
        &[&features],
        vec![
            int_attr("aggregate_function", 1),
            int_attr("n_targets", 1),
            int_attr("post_transform", 0),
            ints_attr("tree_roots", t.roots.iter().copied()),
            ints_attr("nodes_featureids", t.feature.iter().copied()),
            tensor_attr("nodes_splits", splits),
            tensor_attr("nodes_modes", modes),
            ints_attr("nodes_truenodeids", t.true_id.iter().copied()),
            ints_attr("nodes_trueleafs", t.true_leaf.iter().copied()),
            ints_attr("nodes_falsenodeids", t.false_id.iter().copied()),
            ints_attr("nodes_falseleafs", t.false_leaf.iter().copied()),
            ints_attr("leaf_targetids", t.leaf_weights.iter().map(|_| 0)),
            tensor_attr("leaf_weights", leaf_weights),
        ],
        ML,
    );
    raw = g.node("Add", &[&raw, &sum], vec![], "");
    Ok(raw)
}

/// The TreeEnsemble's flat arrays (opset 5 layout: split nodes and leaves
/// numbered separately).
#[derive(Default)]
struct Trees {
    roots: Vec<i64>,
    feature: Vec<i64>,
    true_id: Vec<i64>,
    true_leaf: Vec<i64>,
    false_id: Vec<i64>,
    false_leaf: Vec<i64>,
    leaf_weights: Vec<f64>,
}

impl Trees {
    fn add(
        &mut self,
        tree: &crate::learn::FormTree,
        feature_of: &mut impl FnMut(&[u32]) -> usize,
    ) -> Result<(), ExportError> {
        let bad = || ExportError::Unsupported("a tree's node refers past its nodes".into());
        let nodes = &tree.nodes;
        // A tree that is one leaf: a split on literal 0 with that leaf on
        // both sides.
        if let Some(FormNode::Leaf(v)) = nodes.first() {
            self.roots.push(self.feature.len() as i64);
            self.feature.push(0);
            for _ in 0..2 {
                self.leaf_weights.push(*v);
            }
            let first = self.leaf_weights.len() as i64 - 2;
            self.true_id.push(first);
            self.true_leaf.push(1);
            self.false_id.push(first + 1);
            self.false_leaf.push(1);
            return Ok(());
        }
        // Global ids: split nodes and leaves in node order.
        let mut id = vec![0i64; nodes.len()];
        let (mut next_split, mut next_leaf) =
            (self.feature.len() as i64, self.leaf_weights.len() as i64);
        for (i, n) in nodes.iter().enumerate() {
            match n {
                FormNode::Split { .. } => {
                    id[i] = next_split;
                    next_split += 1;
                }
                FormNode::Leaf(_) => {
                    id[i] = next_leaf;
                    next_leaf += 1;
                }
            }
        }
        self.roots.push(self.feature.len() as i64);
        for n in nodes {
            match n {
                FormNode::Split {
                    any_of,
                    if_true,
                    if_false,
                } => {
                    self.feature.push(feature_of(any_of) as i64);
                    for (child, ids, leafs) in [
                        (*if_true, &mut self.true_id, &mut self.true_leaf),
                        (*if_false, &mut self.false_id, &mut self.false_leaf),
                    ] {
                        let c = nodes.get(child).ok_or_else(bad)?;
                        ids.push(id[child]);
                        leafs.push(i64::from(matches!(c, FormNode::Leaf(_))));
                    }
                }
                FormNode::Leaf(v) => self.leaf_weights.push(*v),
            }
        }
        Ok(())
    }
}

/// The nodes and constants of the graph being built.
#[derive(Default)]
struct Graph {
    nodes: Vec<NodeProto>,
    initializers: Vec<TensorProto>,
    next: usize,
}

impl Graph {
    fn fresh(&mut self, what: &str) -> String {
        self.next += 1;
        format!("{INTERNAL}{what}{}", self.next)
    }

    /// Add a node with one output; returns the output's name.
    fn node(
        &mut self,
        op: &str,
        inputs: &[&str],
        attributes: Vec<AttributeProto>,
        domain: &str,
    ) -> String {
        let out = self.fresh(&op.to_lowercase());
        self.named_node(op, inputs, attributes, domain, &out);
        out
    }

    fn named_node(
        &mut self,
        op: &str,
        inputs: &[&str],
        attributes: Vec<AttributeProto>,
        domain: &str,
        output: &str,
    ) {
        let name = self.fresh("node");
        self.nodes.push(NodeProto {
            input: inputs.iter().map(|s| (*s).to_owned()).collect(),
            output: vec![output.to_owned()],
            name: Some(name),
            op_type: Some(op.to_owned()),
            attribute: attributes,
            domain: Some(domain.to_owned()),
        });
    }

    fn init(&mut self, mut t: TensorProto) -> String {
        let name = self.fresh("const");
        t.name = Some(name.clone());
        self.initializers.push(t);
        name
    }

    fn scalar(&mut self, v: f64) -> String {
        self.constant_f64(&[], &[v])
    }

    fn constant_f64(&mut self, dims: &[i64], values: &[f64]) -> String {
        self.init(tensor_f64("", dims, values))
    }

    fn constant_i64(&mut self, dims: &[i64], values: &[i64]) -> String {
        self.init(TensorProto {
            dims: dims.to_vec(),
            data_type: Some(data_type::INT64),
            int64_data: values.to_vec(),
            ..Default::default()
        })
    }

    fn constant_strings(&mut self, values: &[String]) -> String {
        self.init(TensorProto {
            dims: vec![values.len() as i64],
            data_type: Some(data_type::STRING),
            string_data: values.iter().map(|s| s.as_bytes().to_vec()).collect(),
            ..Default::default()
        })
    }

    fn cast_double(&mut self, x: &str) -> String {
        self.node(
            "Cast",
            &[x],
            vec![int_attr("to", i64::from(data_type::DOUBLE))],
            "",
        )
    }

    /// `values` where `nan` is false, 0 where it is true.
    fn mask_not_nan(&mut self, values: &str, nan: &str) -> String {
        let not_nan = self.node("Not", &[nan], vec![], "");
        let keep = self.cast_double(&not_nan);
        self.node("Mul", &[values, &keep], vec![], "")
    }

    /// Concatenate blocks along axis 1 (`None` for none).
    fn concat(&mut self, parts: Vec<String>) -> Option<String> {
        match parts.len() {
            0 => None,
            1 => parts.into_iter().next(),
            _ => {
                let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
                Some(self.node("Concat", &refs, vec![int_attr("axis", 1)], ""))
            }
        }
    }
}

fn tensor_f64(name: &str, dims: &[i64], values: &[f64]) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: Some(data_type::DOUBLE),
        double_data: values.to_vec(),
        name: (!name.is_empty()).then(|| name.to_owned()),
        ..Default::default()
    }
}

fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        i: Some(v),
        r#type: Some(attribute_type::INT),
        ..Default::default()
    }
}

fn ints_attr(name: &str, v: impl Iterator<Item = i64>) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        ints: v.collect(),
        r#type: Some(attribute_type::INTS),
        ..Default::default()
    }
}

fn strings_attr<'a>(name: &str, v: impl Iterator<Item = &'a str>) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        strings: v.map(|s| s.as_bytes().to_vec()).collect(),
        r#type: Some(attribute_type::STRINGS),
        ..Default::default()
    }
}

fn tensor_attr(name: &str, t: TensorProto) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        t: Some(t),
        r#type: Some(attribute_type::TENSOR),
        ..Default::default()
    }
}

fn entry(key: &str, value: &str) -> StringStringEntryProto {
    StringStringEntryProto {
        key: Some(key.into()),
        value: Some(value.into()),
    }
}

/// A tensor input or output; `None` dimensions are the batch size `N`.
fn value_info(name: &str, elem: i32, dims: &[Option<i64>]) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: Some(elem),
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| match d {
                            Some(v) => Dimension {
                                dim_value: Some(*v),
                                dim_param: None,
                            },
                            None => Dimension {
                                dim_value: None,
                                dim_param: Some("N".into()),
                            },
                        })
                        .collect(),
                }),
            }),
        }),
        doc_string: None,
    }
}

#[cfg(test)]
mod tests;
