//! A trained model of any learner: loading, prediction and inspection behind
//! one type, so that the API, the store and the CLI never look inside a
//! learner's model.
//!
//! Model files are versioned JSON with `"format": "privboost-model"`.
//! Version 1 is LazyBB's file (unchanged since before the learner family, so
//! old files load and predict exactly as before). Version 2 is the envelope
//! of the newer learners: it names the `algorithm` and the `task`.

use serde::Serialize;
use serde_json::Value;

use super::LearnError;
use super::auto::{self, AutoFile};
use super::binning::BinningStatement;
use super::dpboost::{self, DpBoostFile, DpBoostInspection};
use super::ebm::{self, EbmFile, EbmPredictor, sigmoid};
use super::inspect::{Inspection, inspect};
use super::lazybb;
use super::linear::{self, LinearFile, LinearInspection, LinearPredictor};
use super::model::{LazyBbModel, MODEL_FORMAT, Prediction, Predictor};
use super::naive_bayes::{self, NaiveBayesFile};
use crate::data::{Dataset, Encoder, Schema, Task};
use crate::privacy::{Budget, Neighbouring, mechanisms};

use super::finite::first_non_finite;

/// The largest logit a `set_values` edit of a classifier may write
/// ([`Model::edit_bound`]).
pub const MAX_EDIT_LOGIT: f64 = 100.0;

/// A trained model.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    /// LazyBB (model file version 1).
    LazyBb(LazyBbModel),
    /// DP-EBM (model file version 2).
    Ebm(EbmFile),
    /// dp-linear (model file version 2).
    Linear(LinearFile),
    /// DPBoost (model file version 2).
    DpBoost(Box<DpBoostFile>),
    /// auto (model file version 2): the winner's model with the selection
    /// record; it predicts and inspects as the winner.
    Auto(Box<AutoFile>),
    /// ldp-naive-bayes (model file version 2): a dp-linear body, so it
    /// predicts and inspects as dp-linear.
    NaiveBayes(Box<NaiveBayesFile>),
}

/// One prediction of any model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Output {
    /// Binary classification.
    Class(Prediction),
    /// Regression: the predicted value in label units.
    Value(f64),
    /// Multiclass classification.
    Classes(ClassesPrediction),
}

/// A multiclass prediction: the most probable class (the first in schema
/// order on a tie) and every class's probability, in schema order,
/// summing to 1 (a softmax of the model's k scores).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassesPrediction {
    /// The predicted class's index in the schema's class list.
    #[serde(skip)]
    pub index: usize,
    /// The predicted class's name.
    pub class: String,
    /// One probability per class, in schema order.
    pub probabilities: Vec<f64>,
}

impl ClassesPrediction {
    /// The prediction from k scores (logits) and the schema's `classes`:
    /// a numerically stable softmax (the largest score subtracted first).
    pub fn from_scores(scores: &[f64], classes: &[String]) -> ClassesPrediction {
        let probabilities = softmax(scores);
        let mut index = 0;
        for (c, &p) in probabilities.iter().enumerate() {
            if p > probabilities[index] {
                index = c;
            }
        }
        ClassesPrediction {
            index,
            class: classes.get(index).cloned().unwrap_or_default(),
            probabilities,
        }
    }
}

/// `exp(s_c) / sum_j exp(s_j)` for every `c`, computed with the largest
/// score subtracted so no exponential overflows; non-empty `scores` give
/// probabilities in [0, 1] summing to 1 (up to rounding).
pub fn softmax(scores: &[f64]) -> Vec<f64> {
    let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = scores.iter().map(|&s| (s - top).exp()).collect();
    let total: f64 = exps.iter().sum();
    exps.into_iter().map(|e| e / total).collect()
}

/// A post-processing edit of a released model (DP-EBM paper §5): it reads
/// only the model, never the rows, so it costs no budget.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ModelEdit {
    /// Make a feature's shape function monotone (pool-adjacent-violators,
    /// weighted by the public noisy bin counts).
    Monotone {
        /// The feature (column) name.
        feature: String,
        /// `true` for non-decreasing, `false` for non-increasing.
        increasing: bool,
    },
    /// Set a feature's shape-function values by hand, one per bin.
    SetValues {
        /// The feature (column) name.
        feature: String,
        /// The new values, in bin order.
        values: Vec<f64>,
    },
}

/// A model folded for fast prediction.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelPredictor {
    /// LazyBB's folded votes.
    LazyBb(Predictor),
    /// A multiclass LazyBB model's folded votes, one per class (one-vs-rest),
    /// with the schema's class names.
    LazyBbClasses(Vec<Predictor>, Vec<String>),
    /// DP-EBM's folded shape functions.
    Ebm(EbmPredictor),
    /// A multiclass DP-EBM's folded shape functions, one table per class,
    /// with the schema's class names.
    EbmClasses(EbmPredictor, Vec<String>),
    /// dp-linear's folded coefficients.
    Linear(LinearPredictor),
    /// A multiclass dp-linear model's folded coefficients, one table per
    /// class, with the schema's class names.
    LinearClasses(LinearPredictor, Vec<String>),
    /// DPBoost's trees.
    DpBoost(Box<DpBoostFile>),
}

/// A classifier's output from its logit: probability `sigmoid(logit)`,
/// score `2 p - 1` in [-1, 1] (so probability = (score + 1) / 2 as for
/// LazyBB), positive when `p >= 1/2`.
fn from_logit(logit: f64) -> Prediction {
    let probability = sigmoid(logit);
    Prediction {
        positive: probability >= 0.5,
        score: 2.0 * probability - 1.0,
        probability,
    }
}

fn ebm_output(p: &EbmPredictor, raw: f64) -> Output {
    output_of(p.task(), raw)
}

/// A logit (classification) or a value (regression) as an output.
///
/// A regression value is clamped into the label's public bounds: every
/// label the model was trained on lies there, so a value outside is never
/// closer to the truth than the nearest bound, and clamping is
/// post-processing of the released model (free of privacy cost).
fn output_of(task: Task, raw: f64) -> Output {
    match task {
        // Multiclass: not reached (a multiclass model predicts k scores).
        Task::Binary | Task::Multiclass { .. } => Output::Class(from_logit(raw)),
        Task::Regression { min, max } => Output::Value(raw.clamp(min, max)),
    }
}

fn dpboost_output(f: &DpBoostFile, active: &[u32]) -> Output {
    if f.is_multiclass() {
        return Output::Classes(ClassesPrediction::from_scores(
            &f.class_scores(active),
            f.schema.class_names(),
        ));
    }
    output_of(f.task, f.raw(active))
}

impl ModelPredictor {
    /// The prediction for one row given its true literals (sorted ascending,
    /// as the encoder returns them).
    pub fn predict(&self, active: &[u32]) -> Output {
        match self {
            ModelPredictor::LazyBb(p) => Output::Class(p.prediction(p.vote_sum(active))),
            ModelPredictor::LazyBbClasses(ps, names) => {
                let sums: Vec<i32> = ps.iter().map(|p| p.vote_sum(active)).collect();
                Output::Classes(lazybb::model::classes_prediction(ps, &sums, names))
            }
            ModelPredictor::Ebm(p) => ebm_output(p, p.raw(active)),
            ModelPredictor::EbmClasses(p, names) => Output::Classes(
                ClassesPrediction::from_scores(&p.raw_classes(active), names),
            ),
            ModelPredictor::Linear(p) => output_of(p.task(), p.raw(active)),
            ModelPredictor::LinearClasses(p, names) => Output::Classes(
                ClassesPrediction::from_scores(&p.raw_classes(active), names),
            ),
            ModelPredictor::DpBoost(f) => dpboost_output(f, active),
        }
    }

    /// Predictions for every row of `data`.
    pub fn predict_all(&self, data: &Dataset) -> Vec<Output> {
        match self {
            ModelPredictor::LazyBb(p) => p
                .vote_sums(data)
                .into_iter()
                .map(|s| Output::Class(p.prediction(s)))
                .collect(),
            ModelPredictor::LazyBbClasses(ps, names) => {
                let sums: Vec<Vec<i32>> = ps.iter().map(|p| p.vote_sums(data)).collect();
                (0..data.n_rows())
                    .map(|i| {
                        let row: Vec<i32> = sums.iter().map(|s| s[i]).collect();
                        Output::Classes(lazybb::model::classes_prediction(ps, &row, names))
                    })
                    .collect()
            }
            ModelPredictor::Ebm(p) => p
                .raw_all(data)
                .into_iter()
                .map(|raw| ebm_output(p, raw))
                .collect(),
            ModelPredictor::EbmClasses(p, names) => p
                .raw_classes_all(data)
                .iter()
                .map(|scores| Output::Classes(ClassesPrediction::from_scores(scores, names)))
                .collect(),
            ModelPredictor::Linear(p) => p
                .raw_all(data)
                .into_iter()
                .map(|raw| output_of(p.task(), raw))
                .collect(),
            ModelPredictor::LinearClasses(p, names) => p
                .raw_classes_all(data)
                .iter()
                .map(|scores| Output::Classes(ClassesPrediction::from_scores(scores, names)))
                .collect(),
            ModelPredictor::DpBoost(f) if f.is_multiclass() => f
                .class_scores_all(data)
                .iter()
                .map(|scores| {
                    Output::Classes(ClassesPrediction::from_scores(
                        scores,
                        f.schema.class_names(),
                    ))
                })
                .collect(),
            ModelPredictor::DpBoost(f) => f
                .raw_all(data)
                .into_iter()
                .map(|raw| output_of(f.task, raw))
                .collect(),
        }
    }
}

/// The checks every version-2 model file (DP-EBM, dp-linear, DPBoost) makes
/// on its envelope when it is loaded: the algorithm named is `expected`, the
/// task is the schema's, and the literal list is the schema's encoding.
/// Returns the number of literals, for the learner's own body checks.
pub(crate) fn check_envelope(
    algorithm: &str,
    expected: &str,
    task: Task,
    schema: &Schema,
    literals: &[String],
) -> Result<usize, LearnError> {
    if algorithm != expected {
        return Err(LearnError::ModelFormat(format!(
            "algorithm {algorithm:?} is not {expected}"
        )));
    }
    let encoder = Encoder::new(schema)?;
    if task != schema.task() {
        return Err(LearnError::ModelFormat(
            "the model's task does not match its schema".into(),
        ));
    }
    let names = encoder.literals().iter().map(|l| l.name.as_str());
    if !names.eq(literals.iter().map(String::as_str)) {
        return Err(LearnError::ModelFormat(
            "the model's literal list does not match its schema".into(),
        ));
    }
    Ok(literals.len())
}

/// What `inspect` shows of a model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ModelInspection {
    /// LazyBB's vote table, sparsity, trees and additive shape.
    LazyBb(Inspection),
    /// DP-EBM's shape functions and importances.
    Ebm(EbmInspection),
    /// dp-linear's coefficients per literal (or numeric column).
    Linear(LinearInspection),
    /// DPBoost's trees.
    DpBoost(DpBoostInspection),
}

/// DP-EBM's inspection: per-feature shape functions with their bins and the
/// public noisy counts, and the features' importances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EbmInspection {
    /// Added to every prediction (0 for a multiclass model).
    pub intercept: f64,
    /// A multiclass model: the class names, in schema order (the order of
    /// `intercepts` and of every bin's `values`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<String>>,
    /// A multiclass model: each class's intercept; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intercepts: Option<Vec<f64>>,
    /// One per feature, in schema order.
    pub shapes: Vec<ShapeOut>,
}

/// One shape function as inspected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShapeOut {
    /// The feature.
    pub feature: String,
    /// Count-weighted mean |f|.
    pub importance: f64,
    /// One per merged bin.
    pub bins: Vec<BinOut>,
}

/// One bin of a shape function.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinOut {
    /// The bin's literals' conditions.
    pub label: String,
    /// The public noisy row count.
    pub count: f64,
    /// The function's value (0 for a multiclass model, whose values are
    /// per class).
    pub value: f64,
    /// A multiclass model: each class's function value on the bin, in
    /// schema order; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<f64>>,
}

impl EbmInspection {
    fn new(file: &EbmFile, encoder: &Encoder) -> EbmInspection {
        let importances = file.model.importances();
        let multiclass = file.model.is_multiclass();
        EbmInspection {
            intercept: file.model.intercept,
            classes: multiclass.then(|| file.schema.class_names().to_vec()),
            intercepts: multiclass.then(|| file.model.class_intercepts.clone()),
            shapes: file
                .model
                .shapes
                .iter()
                .zip(importances)
                .map(|(s, (_, importance))| ShapeOut {
                    feature: s.feature.clone(),
                    importance,
                    bins: s
                        .bin_labels(encoder)
                        .into_iter()
                        .zip(&s.counts)
                        .enumerate()
                        .map(|(b, (label, &count))| BinOut {
                            label,
                            count,
                            value: s.values.get(b).copied().unwrap_or(0.0),
                            values: multiclass
                                .then(|| s.class_values.iter().map(|v| v[b]).collect()),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    fn to_text(&self) -> String {
        if let (Some(classes), Some(intercepts)) = (&self.classes, &self.intercepts) {
            return self.classes_text(classes, intercepts);
        }
        let mut out = format!(
            "Intercept: {:.6}\n\nFeature importances (count-weighted mean |f|):\n",
            self.intercept
        );
        let mut order: Vec<&ShapeOut> = self.shapes.iter().collect();
        order.sort_by(|a, b| b.importance.total_cmp(&a.importance));
        for s in &order {
            out.push_str(&format!("  {:<32} {:.6}\n", s.feature, s.importance));
        }
        out.push_str("\nShape functions (bin, public noisy count, value):\n");
        for s in &self.shapes {
            out.push_str(&format!("{}:\n", s.feature));
            for b in &s.bins {
                out.push_str(&format!(
                    "  {:<40} {:>10.1} {:>+12.6}\n",
                    b.label, b.count, b.value
                ));
            }
        }
        out
    }
}

impl EbmInspection {
    /// A multiclass model's text: the intercepts and, per feature, each
    /// bin's value for every class (a column per class).
    fn classes_text(&self, classes: &[String], intercepts: &[f64]) -> String {
        let header: String = classes.iter().map(|c| format!(" {c:>12.12}")).collect();
        let row =
            |values: &[f64]| -> String { values.iter().map(|v| format!(" {v:>+12.6}")).collect() };
        let mut out = format!(
            "Classes: {}\nIntercept per class:\n  {:<51}{header}\n  {:<51}{}\n\nFeature importances (count-weighted mean over the classes of |f_c|):\n",
            classes.join(", "),
            "",
            "",
            row(intercepts)
        );
        let mut order: Vec<&ShapeOut> = self.shapes.iter().collect();
        order.sort_by(|a, b| b.importance.total_cmp(&a.importance));
        for s in &order {
            out.push_str(&format!("  {:<32} {:.6}\n", s.feature, s.importance));
        }
        out.push_str("\nShape functions per class (bin, public noisy count, value per class):\n");
        for s in &self.shapes {
            out.push_str(&format!("{}:\n  {:<51}{header}\n", s.feature, ""));
            for b in &s.bins {
                out.push_str(&format!(
                    "  {:<40} {:>10.1}{}\n",
                    b.label,
                    b.count,
                    row(b.values.as_deref().unwrap_or_default())
                ));
            }
        }
        out
    }
}

impl ModelInspection {
    /// Human-readable text (`privboost inspect`).
    pub fn to_text(&self) -> String {
        match self {
            ModelInspection::LazyBb(i) => i.to_text(),
            ModelInspection::Ebm(i) => i.to_text(),
            ModelInspection::Linear(i) => i.to_text(),
            ModelInspection::DpBoost(i) => i.to_text(),
        }
    }
}

impl Model {
    /// Parse and check a model file of any version this build reads.
    pub fn from_json(text: &str) -> Result<Model, LearnError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| LearnError::ModelFormat(format!("not valid JSON: {e}")))?;
        if value.get("format").and_then(Value::as_str) != Some(MODEL_FORMAT) {
            return Err(LearnError::ModelFormat(format!(
                "not a privboost model (the \"format\" field is not \"{MODEL_FORMAT}\")"
            )));
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(1) => Ok(Model::LazyBb(LazyBbModel::from_json(text)?)),
            Some(2) => match value.get("algorithm").and_then(Value::as_str) {
                Some(ebm::file::ALGORITHM) => Ok(Model::Ebm(EbmFile::from_value(value)?)),
                Some(linear::file::ALGORITHM) => Ok(Model::Linear(LinearFile::from_value(value)?)),
                Some(dpboost::model::ALGORITHM) => {
                    Ok(Model::DpBoost(Box::new(DpBoostFile::from_value(value)?)))
                }
                Some(auto::file::ALGORITHM) => {
                    Ok(Model::Auto(Box::new(AutoFile::from_value(value)?)))
                }
                Some(naive_bayes::ALGORITHM) => Ok(Model::NaiveBayes(Box::new(
                    NaiveBayesFile::from_value(value)?,
                ))),
                other => Err(LearnError::ModelFormat(format!(
                    "unknown algorithm {other:?} in a version-2 model file"
                ))),
            },
            Some(v) => Err(LearnError::ModelFormat(format!(
                "model file version {v} is not supported; this build reads versions 1 and 2"
            ))),
            None => Err(LearnError::ModelFormat(
                "the model has no \"version\" field".into(),
            )),
        }
    }

    /// Serialise as pretty JSON.
    pub fn to_json(&self) -> String {
        match self {
            Model::LazyBb(m) => m.to_json(),
            // Invariant: plain values, strings, vectors and derived structs.
            Model::Ebm(f) => serde_json::to_string_pretty(f).expect("model serialises"),
            // Invariant: as above.
            Model::Linear(f) => serde_json::to_string_pretty(f).expect("model serialises"),
            Model::DpBoost(f) => serde_json::to_string_pretty(f).expect("model serialises"),
            Model::Auto(f) => {
                serde_json::to_string_pretty(&f.to_value()).expect("model serialises")
            }
            Model::NaiveBayes(f) => serde_json::to_string_pretty(f).expect("model serialises"),
        }
    }

    /// The learner's name as in requests (`lazybb`, ...).
    pub fn algorithm(&self) -> &'static str {
        match self {
            Model::LazyBb(_) => "lazybb",
            Model::Ebm(_) => ebm::file::ALGORITHM,
            Model::Linear(_) => linear::file::ALGORITHM,
            Model::DpBoost(_) => dpboost::model::ALGORITHM,
            Model::Auto(_) => auto::file::ALGORITHM,
            Model::NaiveBayes(_) => naive_bayes::ALGORITHM,
        }
    }

    /// The owner's schema the model was trained with.
    pub fn schema(&self) -> &Schema {
        match self {
            Model::LazyBb(m) => &m.schema,
            Model::Ebm(f) => &f.schema,
            Model::Linear(f) => &f.schema,
            Model::DpBoost(f) => &f.schema,
            Model::Auto(f) => f.schema(),
            Model::NaiveBayes(f) => &f.schema,
        }
    }

    /// The task the model does (from its schema).
    pub fn task(&self) -> Task {
        self.schema().task()
    }

    /// The encoder for raw rows, built from the model's schema.
    pub fn encoder(&self) -> Result<Encoder, LearnError> {
        Ok(Encoder::new(self.schema())?)
    }

    /// Record the service job that trained it.
    pub fn set_job_id(&mut self, job_id: String) {
        match self {
            Model::LazyBb(m) => m.job_id = Some(job_id),
            Model::Ebm(f) => f.job_id = Some(job_id),
            Model::Linear(f) => f.job_id = Some(job_id),
            Model::DpBoost(f) => f.job_id = Some(job_id),
            Model::Auto(f) => {
                f.winner.set_job_id(job_id.clone());
                f.job_id = Some(job_id);
            }
            Model::NaiveBayes(f) => f.job_id = Some(job_id),
        }
    }

    /// Record the private binning phase in the statement: its part, the
    /// job's total `charged` as the statement's epsilon and delta, and the
    /// discrete Laplace among the mechanisms run.
    pub fn attach_binning(&mut self, binning: BinningStatement, charged: Budget) {
        let laplace = mechanisms::DISCRETE_LAPLACE.id.to_owned();
        macro_rules! attach {
            ($p:expr) => {{
                $p.epsilon = charged.epsilon();
                $p.delta = charged.delta();
                if !$p.mechanisms.contains(&laplace) {
                    $p.mechanisms.push(laplace);
                }
                $p.binning = Some(binning);
            }};
        }
        match self {
            Model::LazyBb(m) => attach!(m.privacy),
            Model::Ebm(f) => attach!(f.privacy),
            Model::Linear(f) => attach!(f.privacy),
            Model::DpBoost(f) => attach!(f.privacy),
            // Not reached: `auto` refuses private bins in its plan.
            Model::Auto(f) => f.winner.attach_binning(binning, charged),
            // Not reached: local DP refuses private bins (`local_dp::Domains`).
            Model::NaiveBayes(_) => {}
        }
    }

    /// State the guarantee per privacy unit (issue 28): the job's per-unit
    /// `charged` epsilon and delta, and who is protected. The statement's
    /// per-round and per-phase amounts stay those of the per-row plan the
    /// noise was drawn with; the sentence says so. Nothing changes for a
    /// unit of one row (the caller does not call this then).
    pub fn attach_unit(&mut self, unit: Neighbouring, column: Option<&str>, charged: Budget) {
        let neighbouring = format!(
            "{}; the row count n is public; the per-round and per-phase amounts below are those of the per-row plan, and group privacy over {} rows gives the totals (docs/privacy.md, \"The privacy unit\")",
            unit.describe(column),
            unit.max_rows()
        );
        macro_rules! attach {
            ($p:expr) => {{
                $p.epsilon = charged.epsilon();
                $p.delta = charged.delta();
                $p.neighbouring = neighbouring.clone();
            }};
        }
        match self {
            Model::LazyBb(m) => attach!(m.privacy),
            Model::Ebm(f) => attach!(f.privacy),
            Model::Linear(f) => attach!(f.privacy),
            Model::DpBoost(f) => attach!(f.privacy),
            Model::Auto(f) => {
                attach!(f.privacy);
                // The winner's statement covers its run on the training
                // part at the per-row budget: its amounts stay per row.
                f.winner.set_neighbouring(format!(
                    "substitution of one row, at the per-row budget of the auto job, whose statement is {} (docs/privacy.md, \"The privacy unit\")",
                    unit.describe(column)
                ));
            }
            // Not reached: local DP refuses a privacy unit.
            Model::NaiveBayes(_) => {}
        }
    }

    fn set_neighbouring(&mut self, text: String) {
        match self {
            Model::LazyBb(m) => m.privacy.neighbouring = text,
            Model::Ebm(f) => f.privacy.neighbouring = text,
            Model::Linear(f) => f.privacy.neighbouring = text,
            Model::DpBoost(f) => f.privacy.neighbouring = text,
            Model::Auto(f) => f.privacy.neighbouring = text,
            Model::NaiveBayes(f) => f.privacy.neighbouring = text,
        }
    }

    /// The parameters as JSON (with `algorithm`).
    pub fn params_json(&self) -> Value {
        match self {
            Model::LazyBb(m) => serde_json::to_value(&m.params).unwrap_or(Value::Null),
            Model::Ebm(f) => {
                let mut v = serde_json::to_value(f.params).unwrap_or(Value::Null);
                v["algorithm"] = ebm::file::ALGORITHM.into();
                v["defaults_used"] = f.defaults_used.into();
                v
            }
            Model::Linear(f) => {
                let mut v = serde_json::to_value(f.params).unwrap_or(Value::Null);
                v["algorithm"] = linear::file::ALGORITHM.into();
                v["defaults_used"] = f.defaults_used.into();
                v
            }
            Model::DpBoost(f) => {
                let mut v = serde_json::to_value(f.params).unwrap_or(Value::Null);
                v["algorithm"] = dpboost::model::ALGORITHM.into();
                v["defaults_used"] = f.defaults_used.into();
                v
            }
            Model::Auto(f) => f.params_json(),
            Model::NaiveBayes(f) => {
                let mut v = serde_json::to_value(f.params).unwrap_or(Value::Null);
                v["algorithm"] = naive_bayes::ALGORITHM.into();
                v["defaults_used"] = f.defaults_used.into();
                v
            }
        }
    }

    /// The privacy statement as JSON.
    pub fn privacy_json(&self) -> Value {
        match self {
            Model::LazyBb(m) => serde_json::to_value(&m.privacy).unwrap_or(Value::Null),
            Model::Ebm(f) => serde_json::to_value(&f.privacy).unwrap_or(Value::Null),
            Model::Linear(f) => serde_json::to_value(&f.privacy).unwrap_or(Value::Null),
            Model::DpBoost(f) => serde_json::to_value(&f.privacy).unwrap_or(Value::Null),
            Model::Auto(f) => f.privacy_json(),
            Model::NaiveBayes(f) => serde_json::to_value(&f.privacy).unwrap_or(Value::Null),
        }
    }

    /// The model folded for fast prediction.
    pub fn predictor(&self) -> ModelPredictor {
        match self {
            Model::LazyBb(m) if m.is_multiclass() => {
                ModelPredictor::LazyBbClasses(m.class_predictors(), m.schema.class_names().to_vec())
            }
            Model::LazyBb(m) => ModelPredictor::LazyBb(m.predictor()),
            Model::Ebm(f) => {
                let p = f.model.predictor(f.task, f.literals.len());
                match f.task {
                    Task::Multiclass { .. } => {
                        ModelPredictor::EbmClasses(p, f.schema.class_names().to_vec())
                    }
                    _ => ModelPredictor::Ebm(p),
                }
            }
            Model::Linear(f) => {
                let p = f.model.predictor(f.task, f.literals.len());
                match f.task {
                    Task::Multiclass { .. } => {
                        ModelPredictor::LinearClasses(p, f.schema.class_names().to_vec())
                    }
                    _ => ModelPredictor::Linear(p),
                }
            }
            Model::DpBoost(f) => ModelPredictor::DpBoost(f.clone()),
            Model::Auto(f) => f.winner.predictor(),
            Model::NaiveBayes(f) => {
                let p = f.model.predictor(f.task, f.literals.len());
                match f.task {
                    Task::Multiclass { .. } => {
                        ModelPredictor::LinearClasses(p, f.schema.class_names().to_vec())
                    }
                    _ => ModelPredictor::Linear(p),
                }
            }
        }
    }

    /// A new version of the model with `edit` applied and recorded in its
    /// statement; the original is unchanged. Errors name what is wrong (an
    /// unknown feature, a wrong number of values, a learner whose models
    /// have no shape functions).
    ///
    /// `set_values` takes finite values within [`Model::edit_bound`], and
    /// the edited model must pass [`Model::check_storable`]: a failed edit
    /// returns an error and nothing to store.
    pub fn edited(&self, edit: &ModelEdit) -> Result<Model, LearnError> {
        if let ModelEdit::SetValues { values, .. } = edit {
            let bound = self.edit_bound();
            if let Some(v) = values.iter().find(|v| !(v.is_finite() && v.abs() <= bound)) {
                return Err(LearnError::InvalidParameter(format!(
                    "values: each value must be a finite number within [-{bound}, {bound}] ({}); got {v}",
                    match self.task() {
                        Task::Binary | Task::Multiclass { .. } =>
                            "a logit beyond it gives probability 0 or 1 to within 4e-44",
                        Task::Regression { .. } =>
                            "the width of the label's public range, max - min: every prediction is clamped into that range",
                    }
                )));
            }
        }
        let edited = self.edited_unchecked(edit)?;
        edited.check_storable()?;
        Ok(edited)
    }

    /// The largest magnitude a `set_values` edit may give a shape value,
    /// from the model's public facts: for a regressor the width `max - min`
    /// of the label's public range (every prediction is clamped into it, so
    /// one value moving predictions by more than the whole range is never
    /// needed); for a classifier a logit of 100 (probability 0 or 1 to
    /// within 4e-44). Both keep every sum of values (a prediction, the
    /// pool-adjacent-violators averages of a later `monotone` edit,
    /// weighted by counts of at most n) finite (`MAX_LABEL_BOUND`).
    pub fn edit_bound(&self) -> f64 {
        match self.task() {
            Task::Binary | Task::Multiclass { .. } => MAX_EDIT_LOGIT,
            Task::Regression { min, max } => max - min,
        }
    }

    fn edited_unchecked(&self, edit: &ModelEdit) -> Result<Model, LearnError> {
        match self {
            Model::Ebm(f) => Ok(Model::Ebm(f.edited(edit)?)),
            Model::Auto(f) => {
                let mut edited = f.clone();
                edited.winner = f.winner.edited(edit)?;
                Ok(Model::Auto(edited))
            }
            Model::LazyBb(_) | Model::Linear(_) | Model::DpBoost(_) | Model::NaiveBayes(_) => {
                Err(LearnError::InvalidParameter(format!(
                    "a {} model has no per-feature shape functions to edit ({} edits are for dp-ebm models)",
                    self.algorithm(),
                    match edit {
                        ModelEdit::Monotone { .. } => "monotone",
                        ModelEdit::SetValues { .. } => "set_values",
                    }
                )))
            }
        }
    }

    /// Whether the model can be stored and read back (issue 26): every
    /// number in it finite (JSON writes a non-finite float as `null`, which
    /// never loads again, and a non-finite coefficient predicts nothing),
    /// its task's public bounds within the limits of
    /// [`Task::check_bounds`], and its file loading again as written. Every
    /// fit ([`super::Plan::fit`], which `auto` and each of its candidates go
    /// through) and every edit ([`Model::edited`]) calls it before it
    /// returns a model for storage; the error names the first bad number's
    /// place in the model, never a row.
    pub fn check_storable(&self) -> Result<(), LearnError> {
        self.task().check_bounds()?;
        let place = match self {
            Model::LazyBb(m) => first_non_finite(m),
            Model::Ebm(f) => first_non_finite(f),
            Model::Linear(f) => first_non_finite(f),
            Model::DpBoost(f) => first_non_finite(f),
            Model::Auto(f) => {
                f.winner.check_storable()?;
                first_non_finite(&(&f.task, &f.selection, &f.privacy))
            }
            Model::NaiveBayes(f) => first_non_finite(f),
        };
        if let Some(place) = place {
            return Err(LearnError::NotFinite(format!(
                "{} model, at {place}",
                self.algorithm()
            )));
        }
        Model::from_json(&self.to_json()).map(|_| ())
    }

    /// The inspection (post-processing of the released model: free).
    pub fn inspect(&self, encoder: &Encoder) -> ModelInspection {
        match self {
            Model::LazyBb(m) => ModelInspection::LazyBb(inspect(m, encoder)),
            Model::Ebm(f) => ModelInspection::Ebm(EbmInspection::new(f, encoder)),
            Model::Linear(f) => {
                ModelInspection::Linear(f.model.inspect_classes(f.schema.class_names()))
            }
            Model::DpBoost(f) => ModelInspection::DpBoost(DpBoostInspection::new(f, encoder)),
            Model::Auto(f) => f.winner.inspect(encoder),
            Model::NaiveBayes(f) => {
                ModelInspection::Linear(f.model.inspect_classes(f.schema.class_names()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_values_are_clamped_into_the_label_bounds() {
        let task = Task::Regression {
            min: 0.0,
            max: 20.0,
        };
        let value = |raw| match output_of(task, raw) {
            Output::Value(v) => v,
            other => panic!("expected a value, got {other:?}"),
        };
        assert_eq!(value(-65.5), 0.0);
        assert_eq!(value(7.25), 7.25);
        assert_eq!(value(20.0), 20.0);
        assert_eq!(value(1e300), 20.0);
    }

    /// A small DP-EBM regressor (a real fit) to check and edit.
    fn ebm_regressor() -> Model {
        use crate::data::{LabelMode, read_csv};
        use crate::learn::AlgorithmSpec;
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "type": "numeric", "min": 0, "max": 10},
                "columns": [{"name": "x", "type": "numeric", "min": 0, "max": 4, "bins": 4}]}"#,
        )
        .unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        let mut csv = String::from("x,y\n");
        for i in 0..200 {
            csv.push_str(&format!("{},{}\n", i % 4, (i % 4) * 2));
        }
        let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
        let spec: AlgorithmSpec =
            serde_json::from_value(serde_json::json!({"algorithm": "dp-ebm", "epochs": 2}))
                .unwrap();
        let plan = spec
            .plan(
                Budget::new(1.0, 1e-6).unwrap(),
                crate::learn::PublicFacts::new(&encoder, 200),
            )
            .unwrap();
        let mut rng = crate::privacy::NoiseRng::seeded(7);
        plan.fit(&data, &encoder, &mut rng, &mut |_| true).unwrap()
    }

    /// Issue 26: a model with a non-finite number is refused by the one
    /// check every fit and edit goes through, naming where it is; a finite
    /// one passes.
    #[test]
    fn a_model_with_a_non_finite_number_is_not_storable() {
        let model = ebm_regressor();
        model.check_storable().unwrap();
        let Model::Ebm(mut file) = model.clone() else {
            panic!("a DP-EBM model")
        };
        file.model.shapes[0].values[1] = f64::INFINITY;
        let e = Model::Ebm(file).check_storable().unwrap_err().to_string();
        assert!(e.contains("model.shapes[0].values[1]"), "{e}");
        let Model::Ebm(mut file) = model else {
            panic!("a DP-EBM model")
        };
        file.privacy.epsilon = f64::NAN;
        let e = Model::Ebm(file).check_storable().unwrap_err().to_string();
        assert!(e.contains("privacy.epsilon"), "{e}");
    }

    /// Issue 26: `set_values` takes finite values within the label's range
    /// (a regressor) and an edit that would store a non-finite number is
    /// refused; the model edited from is unchanged.
    #[test]
    fn edits_are_bounded_and_checked() {
        let model = ebm_regressor();
        assert_eq!(model.edit_bound(), 10.0);
        let Model::Ebm(file) = &model else {
            panic!("a DP-EBM model")
        };
        let bins = file.model.shapes[0].values.len();
        let edit = |values: Vec<f64>| ModelEdit::SetValues {
            feature: "x".into(),
            values,
        };
        for bad in [1e308, -10.5, f64::NAN] {
            let e = model
                .edited(&edit(vec![bad; bins]))
                .unwrap_err()
                .to_string();
            assert!(e.contains("within [-10, 10]"), "{e}");
        }
        let ok = model.edited(&edit(vec![-10.0; bins])).unwrap();
        ok.check_storable().unwrap();
        // A version holding extreme values (stored before the bound): a
        // monotone edit would average them into infinities.
        let Model::Ebm(mut extreme) = model.clone() else {
            panic!("a DP-EBM model")
        };
        let shape = &mut extreme.model.shapes[0];
        for (i, v) in shape.values.iter_mut().enumerate() {
            *v = if i % 2 == 0 { 1e308 } else { -1e308 };
        }
        for c in shape.counts.iter_mut() {
            *c = 1e10;
        }
        let monotone = ModelEdit::Monotone {
            feature: "x".into(),
            increasing: true,
        };
        let e = Model::Ebm(extreme).edited(&monotone).unwrap_err();
        assert!(matches!(e, LearnError::NotFinite(_)), "{e}");
    }
}
