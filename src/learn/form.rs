//! Every model of the family as one function of a row's literals
//! ([`LiteralForm`]), for export to other runtimes (`crate::export`): a
//! weight per literal, trees over literals, and how the sum becomes the
//! output. It reads only the released model (post-processing, free of
//! privacy cost) and predicts exactly what [`super::ModelPredictor`] does.

use super::LearnError;
use super::hypothesis::{Hypothesis, TreeNode};
use super::trained::Model;
use crate::data::Task;

/// A model as `raw = base + sum over true literals of weights[l] + sum of
/// the trees' leaves`, then `output` applied to `raw`.
#[derive(Debug, Clone, PartialEq)]
pub struct LiteralForm {
    /// The constant term.
    pub base: f64,
    /// One weight per literal (zero for a literal the model ignores).
    pub weights: Vec<f64>,
    /// Trees whose reached leaf value is added to the sum.
    pub trees: Vec<FormTree>,
    /// How the sum becomes the prediction.
    pub output: FormOutput,
}

/// A binary tree over literals; node 0 is the root, children come after
/// their parent.
#[derive(Debug, Clone, PartialEq)]
pub struct FormTree {
    /// The nodes.
    pub nodes: Vec<FormNode>,
}

/// One node of a [`FormTree`].
#[derive(Debug, Clone, PartialEq)]
pub enum FormNode {
    /// Go to `if_true` when any of `any_of` is a true literal of the row,
    /// else to `if_false` (an empty `any_of` always goes to `if_false`).
    Split {
        /// The literals tested.
        any_of: Vec<u32>,
        /// The node when one of them is true.
        if_true: usize,
        /// The node otherwise.
        if_false: usize,
    },
    /// A leaf: its value is added to the sum.
    Leaf(f64),
}

/// How the raw sum becomes the prediction (as `trained::output_of` and the
/// learners' predictors compute it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FormOutput {
    /// A classifier's logit: probability `sigmoid(raw)`, positive when the
    /// probability is at least 1/2 (DP-EBM, dp-linear, DPBoost).
    Logistic,
    /// LazyBB's vote sum over `tau` hypotheses: probability
    /// `(raw / tau + 1) / 2`, positive when at least 1/2 (`raw >= 0`).
    Votes {
        /// The number of hypotheses.
        tau: u32,
    },
    /// A regressor's value clamped into the label's public bounds.
    Clamp {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
    /// DPBoost's regressor: `raw` is in scaled units; the value is
    /// `min + (clamp(raw, -1, 1) + 1) (max - min) / 2`, then clamped into
    /// `[min, max]`.
    Unscale {
        /// Lower bound.
        min: f64,
        /// Upper bound.
        max: f64,
    },
}

impl Model {
    /// The model as a function of a row's literals, for export. Every
    /// current model has one (all are binary classifiers or regressors); a
    /// model shape that cannot be written this way returns
    /// [`LearnError::InvalidParameter`] naming why. (A multiclass model
    /// would plug in here: one form per class, or a refusal until the
    /// exporter writes several outputs.)
    pub fn literal_form(&self) -> Result<LiteralForm, LearnError> {
        let n_literals = self.encoder()?.n_literals();
        let multiclass = || {
            LearnError::InvalidParameter(
                "ONNX export of a multiclass model is not supported yet (one output per class is still to be written)".into(),
            )
        };
        let logistic_or_clamp = |task: Task| match task {
            Task::Binary => Ok(FormOutput::Logistic),
            Task::Regression { min, max } => Ok(FormOutput::Clamp { min, max }),
            Task::Multiclass { .. } => Err(multiclass()),
        };
        let additive = |(base, delta): (f64, &[f64]), output| LiteralForm {
            base,
            weights: delta.to_vec(),
            trees: Vec::new(),
            output,
        };
        Ok(match self {
            Model::LazyBb(m) if m.is_multiclass() => return Err(multiclass()),
            Model::LazyBb(m) => {
                let predictor = m.predictor();
                let (tau, base, dense, trees) = predictor.parts();
                LiteralForm {
                    base: f64::from(base),
                    weights: dense.iter().map(|&v| f64::from(v)).collect(),
                    trees: trees.iter().filter_map(lazybb_tree).collect(),
                    output: FormOutput::Votes { tau: tau.max(1) },
                }
            }
            Model::Ebm(f) => additive(
                f.model.predictor(f.task, n_literals).parts(),
                logistic_or_clamp(f.task)?,
            ),
            Model::Linear(f) => additive(
                f.model.predictor(f.task, n_literals).parts(),
                logistic_or_clamp(f.task)?,
            ),
            Model::NaiveBayes(f) => additive(
                f.model.predictor(f.task, n_literals).parts(),
                logistic_or_clamp(f.task)?,
            ),
            Model::DpBoost(f) => LiteralForm {
                base: f.model.initial_score,
                weights: vec![0.0; n_literals],
                trees: f
                    .model
                    .trees
                    .iter()
                    .map(|t| {
                        // Heap order: split i's children are 2i + 1 (a row
                        // with any of its literals) and 2i + 2; leaf j is
                        // node splits.len() + j.
                        let s = t.splits.len();
                        let mut nodes: Vec<FormNode> = t
                            .splits
                            .iter()
                            .enumerate()
                            .map(|(i, split)| FormNode::Split {
                                any_of: split.literals.clone(),
                                if_true: 2 * i + 1,
                                if_false: 2 * i + 2,
                            })
                            .collect();
                        nodes.extend(t.leaves.iter().map(|&v| FormNode::Leaf(v)));
                        debug_assert_eq!(nodes.len(), 2 * s + 1);
                        FormTree { nodes }
                    })
                    .collect(),
                output: match f.task {
                    Task::Binary => FormOutput::Logistic,
                    Task::Regression { min, max } => FormOutput::Unscale { min, max },
                    Task::Multiclass { .. } => return Err(multiclass()),
                },
            },
            Model::Auto(f) => f.winner.literal_form()?,
        })
    }
}

/// A LazyBB TopDown tree as a form tree with leaves +-1.
fn lazybb_tree(h: &Hypothesis) -> Option<FormTree> {
    let Hypothesis::Tree { nodes } = h else {
        return None;
    };
    Some(FormTree {
        nodes: nodes
            .iter()
            .map(|n| match *n {
                TreeNode::Split {
                    literal,
                    if_false,
                    if_true,
                } => FormNode::Split {
                    any_of: vec![literal],
                    if_true: if_true as usize,
                    if_false: if_false as usize,
                },
                TreeNode::Leaf { positive } => FormNode::Leaf(if positive { 1.0 } else { -1.0 }),
            })
            .collect(),
    })
}

impl LiteralForm {
    /// The raw sum for a row's true literals (sorted ascending): what the
    /// exported graph computes before its output step. Used by tests to
    /// check the form against the model's own predictor.
    pub fn raw(&self, active: &[u32]) -> f64 {
        let linear: f64 = active.iter().map(|&l| self.weights[l as usize]).sum();
        let trees: f64 = self
            .trees
            .iter()
            .map(|t| {
                let mut i = 0;
                loop {
                    match &t.nodes[i] {
                        FormNode::Leaf(v) => break *v,
                        FormNode::Split {
                            any_of,
                            if_true,
                            if_false,
                        } => {
                            i = if any_of.iter().any(|l| active.binary_search(l).is_ok()) {
                                *if_true
                            } else {
                                *if_false
                            }
                        }
                    }
                }
            })
            .sum();
        self.base + linear + trees
    }
}
