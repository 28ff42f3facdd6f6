//! LazyBbModel inspection (SPEC §5): the vote table of LazyBB Table 4, sparsity,
//! and the additive score per feature. All post-processing of the released
//! model: it reads no data and costs no budget.

use serde::Serialize;

use super::hypothesis::{Hypothesis, TreeNode};
use super::model::{LazyBbModel, Predictor};
use crate::data::Encoder;

/// One row of the vote table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VoteRow {
    /// The feature (column) name.
    pub feature: String,
    /// The literal's condition on the feature.
    pub condition: String,
    /// Full literal name, e.g. `age <= 25`.
    pub rule: String,
    /// Net votes: `#(rule chosen) - #(negated rule chosen)`. Positive votes
    /// push towards the positive class when the rule holds.
    pub votes: i32,
}

/// Additive contribution of one literal of a feature to the score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShapeEntry {
    /// The literal's condition.
    pub condition: String,
    /// Added to the score (in [-1, 1]) when the condition holds: `2 v / tau`.
    pub contribution: f64,
}

/// The score as a function of one feature (a stump ensemble is additive).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FeatureShape {
    /// Feature name.
    pub feature: String,
    /// One entry per literal of the feature that has a non-zero vote.
    pub entries: Vec<ShapeEntry>,
}

/// One TopDown tree, readable.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeView {
    /// The nodes as stored in the model (root first).
    pub nodes: Vec<TreeNode>,
    /// Indented if/else text with literal names.
    pub text: String,
}

/// Everything `privboost inspect` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inspection {
    /// Rounds (= number of votes).
    pub tau: u32,
    /// Rules with a non-zero net vote, by decreasing |votes|.
    pub vote_table: Vec<VoteRow>,
    /// Net votes of the constant hypotheses, `#(+1) - #(-1)`, plus a
    /// binary model's vote threshold offset (`vote_threshold`).
    pub constant_votes: i32,
    /// Distinct literals with a non-zero net vote.
    pub literals_used: usize,
    /// Literals in the encoding (`d`).
    pub literals_total: usize,
    /// Distinct features with at least one such literal, in schema order.
    pub features_used: Vec<String>,
    /// Feature columns in the schema.
    pub features_total: usize,
    /// `features_used / features_total`.
    pub feature_share: f64,
    /// The additive score per used feature (plot-ready; stumps only, since a
    /// tree ensemble is not additive).
    pub shape: Vec<FeatureShape>,
    /// Each tree of a TopDown ensemble, in training order.
    pub trees: Vec<TreeView>,
    /// Multiclass (one-vs-rest): each class's fit, in schema order, whose
    /// votes push towards that class; the fields above then describe the
    /// model as a whole (no votes of its own; the features and literals
    /// any class uses). Absent for a binary model.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassRules>,
}

/// One class's one-vs-rest fit, inspected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassRules {
    /// The class (from the schema's class list).
    pub class: String,
    /// Its rules with their votes: positive votes push towards this class.
    pub rules: Inspection,
}

/// Inspect a model; `encoder` must be the model's own ([`LazyBbModel::encoder`]).
pub fn inspect(model: &LazyBbModel, encoder: &Encoder) -> Inspection {
    let tau = model.params.tau;
    if model.class_ensembles.is_empty() {
        let mut inspection = inspect_ensemble(&model.ensemble, tau, encoder);
        inspection.constant_votes += model.vote_offset;
        return inspection;
    }
    let names = model.schema.class_names();
    let classes: Vec<ClassRules> = model
        .class_ensembles
        .iter()
        .enumerate()
        .map(|(c, ensemble)| ClassRules {
            class: names.get(c).cloned().unwrap_or_else(|| c.to_string()),
            rules: inspect_ensemble(ensemble, tau, encoder),
        })
        .collect();
    // The whole model's sparsity: what any class's fit uses.
    let mut used: Vec<u32> = model
        .class_ensembles
        .iter()
        .flat_map(|e| Predictor::new(e, encoder.literals().len()).literals_used())
        .collect();
    used.sort_unstable();
    used.dedup();
    let (features_used, feature_share) = features_of(&used, encoder);
    Inspection {
        tau,
        vote_table: Vec::new(),
        constant_votes: 0,
        literals_used: used.len(),
        literals_total: encoder.literals().len(),
        features_used,
        features_total: encoder.feature_names().len(),
        feature_share,
        shape: Vec::new(),
        trees: Vec::new(),
        classes,
    }
}

/// The features (schema order) of the literals `used`, and their share of
/// the schema's features.
fn features_of(used: &[u32], encoder: &Encoder) -> (Vec<String>, f64) {
    let literals = encoder.literals();
    let feature_names = encoder.feature_names();
    let mut feature_indices: Vec<usize> =
        used.iter().map(|&l| literals[l as usize].feature).collect();
    feature_indices.sort_unstable();
    feature_indices.dedup();
    let features_used: Vec<String> = feature_indices
        .iter()
        .map(|&f| feature_names[f].clone())
        .collect();
    let share = features_used.len() as f64 / feature_names.len().max(1) as f64;
    (features_used, share)
}

/// Inspect one binary ensemble of `tau` rounds.
fn inspect_ensemble(ensemble: &[Hypothesis], tau: u32, encoder: &Encoder) -> Inspection {
    let literals = encoder.literals();
    let mut votes = vec![0i32; literals.len()];
    let mut constant_votes = 0;
    let mut trees = Vec::new();
    for h in ensemble {
        match h {
            Hypothesis::Literal { literal, negated } => {
                votes[*literal as usize] += if *negated { -1 } else { 1 }
            }
            Hypothesis::Constant { positive } => constant_votes += if *positive { 1 } else { -1 },
            Hypothesis::Tree { nodes } => trees.push(TreeView {
                nodes: nodes.clone(),
                text: tree_text(nodes, literals),
            }),
        }
    }
    let mut vote_table: Vec<VoteRow> = literals
        .iter()
        .zip(&votes)
        .filter(|(_, v)| **v != 0)
        .map(|(l, &v)| VoteRow {
            feature: l.feature_name.clone(),
            condition: l.condition.clone(),
            rule: l.name.clone(),
            votes: v,
        })
        .collect();
    // Decreasing |votes|; positive before negative; then schema order (stable).
    vote_table.sort_by_key(|r| (std::cmp::Reverse(r.votes.abs()), r.votes < 0));

    let feature_names = encoder.feature_names();
    let mut shape: Vec<FeatureShape> = Vec::new();
    for (feature_index, feature) in feature_names.iter().enumerate() {
        let entries: Vec<ShapeEntry> = literals
            .iter()
            .zip(&votes)
            .filter(|(l, v)| l.feature == feature_index && **v != 0)
            .map(|(l, &v)| ShapeEntry {
                condition: l.condition.clone(),
                contribution: 2.0 * f64::from(v) / f64::from(tau.max(1)),
            })
            .collect();
        if !entries.is_empty() {
            shape.push(FeatureShape {
                feature: feature.clone(),
                entries,
            });
        }
    }
    let used = Predictor::new(ensemble, literals.len()).literals_used();
    let (features_used, feature_share) = features_of(&used, encoder);
    Inspection {
        tau,
        literals_used: used.len(),
        literals_total: literals.len(),
        feature_share,
        features_total: feature_names.len(),
        features_used,
        vote_table,
        constant_votes,
        shape,
        trees,
        classes: Vec::new(),
    }
}

/// `if <literal>: ... else: ...` with two spaces per level.
fn tree_text(nodes: &[TreeNode], literals: &[crate::data::Literal]) -> String {
    fn walk(
        nodes: &[TreeNode],
        literals: &[crate::data::Literal],
        node: usize,
        depth: usize,
        out: &mut String,
    ) {
        let pad = "  ".repeat(depth);
        match nodes[node] {
            TreeNode::Leaf { positive } => out.push_str(&format!(
                "{pad}predict {}\n",
                if positive { "+1" } else { "-1" }
            )),
            TreeNode::Split {
                literal,
                if_false,
                if_true,
            } => {
                out.push_str(&format!("{pad}if {}:\n", literals[literal as usize].name));
                walk(nodes, literals, if_true as usize, depth + 1, out);
                out.push_str(&format!("{pad}else:\n"));
                walk(nodes, literals, if_false as usize, depth + 1, out);
            }
        }
    }
    let mut out = String::new();
    walk(nodes, literals, 0, 0, &mut out);
    out
}

impl Inspection {
    /// The vote table and sparsity as plain text (LazyBB Table 4 layout);
    /// for a multiclass model, one such table per class.
    pub fn to_text(&self) -> String {
        if !self.classes.is_empty() {
            let mut out = String::from(
                "Multiclass, one-vs-rest: one LazyBB fit per class; a row's class is the one whose fit gives it the largest vote share (ties: the first in schema order)\n",
            );
            for c in &self.classes {
                out.push_str(&format!(
                    "\nClass {:?} (votes for this class against the rest):\n",
                    c.class
                ));
                out.push_str(&c.rules.to_text());
            }
            out.push_str("\nWhole model:\n");
            out.push_str(&self.sparsity_text());
            return out;
        }
        if !self.trees.is_empty() {
            let mut out = format!(
                "{} TopDown trees (majority vote of their +1/-1 outputs):\n",
                self.trees.len()
            );
            for (i, tree) in self.trees.iter().enumerate() {
                out.push_str(&format!("tree {}:\n", i + 1));
                for line in tree.text.lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
            out.push_str(&self.sparsity_text());
            return out;
        }
        let mut out = format!(
            "Vote table: net votes of each rule over tau = {} rounds (a negative vote means the rule's negation was chosen)\n",
            self.tau
        );
        out.push_str("  votes  rule\n");
        for row in &self.vote_table {
            out.push_str(&format!("  {:>+5}  {}\n", row.votes, row.rule));
        }
        if self.constant_votes != 0 {
            out.push_str(&format!(
                "  {:>+5}  (constant: always positive)\n",
                self.constant_votes
            ));
        }
        if self.vote_table.is_empty() && self.constant_votes == 0 {
            out.push_str("  (all votes cancel: every prediction is a tie, which predicts the positive class)\n");
        }
        out.push_str(&self.sparsity_text());
        out
    }

    fn sparsity_text(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!(
            "Features used: {} of {} ({:.1}%): {}\n",
            self.features_used.len(),
            self.features_total,
            100.0 * self.feature_share,
            self.features_used.join(", ")
        ));
        out.push_str(&format!(
            "Literals used: {} of {} ({:.1}%)\n",
            self.literals_used,
            self.literals_total,
            100.0 * self.literals_used as f64 / self.literals_total.max(1) as f64
        ));
        out
    }
}
