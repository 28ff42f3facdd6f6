//! Model inspection (SPEC §5): the vote table of LazyBB Table 4, sparsity,
//! and the additive score per feature. All post-processing of the released
//! model: it reads no data and costs no budget.

use serde::Serialize;

use super::hypothesis::Hypothesis;
use super::model::Model;
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

/// Everything `privboost inspect` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inspection {
    /// Rounds (= number of votes).
    pub tau: u32,
    /// Rules with a non-zero net vote, by decreasing |votes|.
    pub vote_table: Vec<VoteRow>,
    /// Net votes of the constant hypotheses: `#(+1) - #(-1)`.
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
    /// The additive score per used feature (plot-ready).
    pub shape: Vec<FeatureShape>,
}

/// Inspect a model; `encoder` must be the model's own ([`Model::encoder`]).
pub fn inspect(model: &Model, encoder: &Encoder) -> Inspection {
    let literals = encoder.literals();
    let tau = model.params.tau;
    let mut votes = vec![0i32; literals.len()];
    let mut constant_votes = 0;
    for h in &model.ensemble {
        match *h {
            Hypothesis::Literal { literal, negated } => {
                votes[literal as usize] += if negated { -1 } else { 1 }
            }
            Hypothesis::Constant { positive } => constant_votes += if positive { 1 } else { -1 },
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
    let features_used: Vec<String> = shape.iter().map(|s| s.feature.clone()).collect();
    Inspection {
        tau,
        literals_used: vote_table.len(),
        literals_total: literals.len(),
        feature_share: features_used.len() as f64 / feature_names.len().max(1) as f64,
        features_total: feature_names.len(),
        features_used,
        vote_table,
        constant_votes,
        shape,
    }
}

impl Inspection {
    /// The vote table and sparsity as plain text (LazyBB Table 4 layout).
    pub fn to_text(&self) -> String {
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
