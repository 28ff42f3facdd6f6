//! The `auto` model file: the version-2 envelope (format, version,
//! algorithm `auto`, task) around the winner's own model file, the public
//! selection record and the privacy statement of the whole run.
//!
//! The winner predicts and inspects as itself; only the statement and the
//! record are added. The record holds exactly what the mechanism releases
//! beyond the winner's model: the public candidate list (with each one's
//! resolved parameters and budget), the partition sizes, which candidate
//! won and its noisy score. The other candidates' scores and models are
//! dropped (releasing them would be covered by the same charge, but the
//! issue asks for nothing beyond the winner).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::AutoPlan;
use crate::data::{Encoder, Schema, Task};
use crate::learn::model::{MODEL_FORMAT, SOFTWARE_VERSION};
use crate::learn::{AlgorithmSpec, LearnError, Model};
use crate::privacy::PrivacyCost;

/// The `algorithm` field of an auto file.
pub const ALGORITHM: &str = "auto";
/// The envelope version.
const FILE_VERSION: u64 = 2;

/// A released validation score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "metric", rename_all = "snake_case", deny_unknown_fields)]
pub enum Score {
    /// Noisy share of validation rows classified right (higher is better).
    Accuracy {
        /// The noisy accuracy (may leave [0, 1] by the noise).
        value: f64,
        /// Validation rows (public).
        n_rows: usize,
        /// The epsilon of the release.
        epsilon: f64,
    },
    /// Noisy mean of the squared errors clipped at `clip^2` (lower is better).
    ClippedMse {
        /// The noisy mean, label units squared (may be negative by the noise).
        value: f64,
        /// The public error clip, label units.
        clip: f64,
        /// Validation rows (public).
        n_rows: usize,
        /// The epsilon of the release.
        epsilon: f64,
    },
}

impl Score {
    /// Whether `self` is strictly better than `other`.
    pub fn better_than(&self, other: &Score) -> bool {
        match (self, other) {
            (Score::Accuracy { value: a, .. }, Score::Accuracy { value: b, .. }) => a > b,
            (Score::ClippedMse { value: a, .. }, Score::ClippedMse { value: b, .. }) => a < b,
            _ => false,
        }
    }
}

/// One entry of the public candidate list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CandidateRecord {
    /// Its short name.
    pub label: String,
    /// The learner and its resolved parameters.
    pub spec: AlgorithmSpec,
    /// Epsilon of its run.
    pub epsilon: f64,
    /// Delta of its run.
    pub delta: f64,
}

/// What the selection released, beside the winner's model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Selection {
    /// The public candidate list, in order; each ran exactly once.
    pub candidates: Vec<CandidateRecord>,
    /// Index of the winner in `candidates`.
    pub winner: usize,
    /// Rows of the training part (public).
    pub n_train: usize,
    /// Rows of the validation part (public; 0 with one candidate).
    pub n_validation: usize,
    /// The winner's released noisy score (none with one candidate).
    pub score: Option<Score>,
    /// The public rule that made the candidate list, when it is not the
    /// binary and regression prior (a multiclass task:
    /// [`super::multiclass_rule`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// The privacy statement of an auto model (SPEC §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoStatement {
    /// Total epsilon charged.
    pub epsilon: f64,
    /// Total delta charged.
    pub delta: f64,
    /// The neighbouring relation.
    pub neighbouring: String,
    /// All rows (public under substitution).
    pub n_rows: usize,
    /// How the releases compose.
    pub accounting: String,
    /// The selection mechanism in one paragraph.
    pub mechanism: String,
    /// The sensitivity of the score release.
    pub sensitivity: String,
    /// The cost as planned.
    pub cost: PrivacyCost,
    /// The software that trained the model.
    pub software_version: String,
}

/// An `auto` model: the winner and what the selection released.
#[derive(Debug, Clone, PartialEq)]
pub struct AutoFile {
    /// The task.
    pub task: Task,
    /// The selection record.
    pub selection: Selection,
    /// The statement of the whole run.
    pub privacy: AutoStatement,
    /// The service job that trained it.
    pub job_id: Option<String>,
    /// The winner's model (its own statement covers its run only).
    pub winner: Model,
}

impl AutoFile {
    /// The model of a finished run.
    pub(crate) fn model(
        encoder: &Encoder,
        plan: &AutoPlan,
        winner_index: usize,
        score: Option<Score>,
        winner: Model,
    ) -> Result<Model, LearnError> {
        let charge = plan.cost.charge();
        let m = plan.candidates.len();
        let accounting = if m == 1 {
            "one candidate: it ran on every row with the whole budget; nothing was selected or scored".to_string()
        } else {
            format!(
                "basic composition over {m} candidate runs (Dwork and Roth 2014, Theorem 3.16); within a run, parallel composition of training on the training part ({} rows) and the score release on the validation part ({} rows), which a uniformly random partition by row index keeps disjoint; returning the best noisy score is post-processing",
                plan.n_train, plan.n_validation
            )
        };
        let sensitivity = match plan.task {
            Task::Binary | Task::Multiclass { .. } => {
                "the count of correctly classified validation rows changes by at most 1 when one row is substituted: discrete Laplace noise of scale 1/epsilon_i"
            }
            Task::Regression { .. } => {
                "each validation row's squared error, clipped at clip^2 and put on the grid clip^2/2^16, is in [0, 2^16]: one substituted row moves the integer sum by at most 2^16, so discrete Laplace noise of scale 2^16/epsilon_i"
            }
        };
        let privacy = AutoStatement {
            epsilon: charge.epsilon(),
            delta: charge.delta(),
            neighbouring: "substitution of one row (n public)".into(),
            n_rows: plan.n_rows,
            accounting,
            mechanism: "private selection (docs/privacy.md, \"Private selection (auto)\"): every candidate of the public list is trained once on the training part with its share of the budget, its score is released with the same epsilon on the validation part, and the candidate with the best noisy score is returned with that score".into(),
            sensitivity: sensitivity.into(),
            cost: plan.cost,
            software_version: SOFTWARE_VERSION.into(),
        };
        let selection = Selection {
            candidates: plan
                .candidates
                .iter()
                .map(|c| CandidateRecord {
                    label: c.label.into(),
                    spec: c.plan.resolved,
                    epsilon: c.budget.epsilon(),
                    delta: c.budget.delta(),
                })
                .collect(),
            winner: winner_index,
            n_train: plan.n_train,
            n_validation: plan.n_validation,
            score,
            rule: matches!(plan.task, Task::Multiclass { .. })
                .then(|| super::multiclass_rule(charge)),
        };
        let file = AutoFile {
            task: encoder.schema().task(),
            selection,
            privacy,
            job_id: None,
            winner,
        };
        file.check()?;
        Ok(Model::Auto(Box::new(file)))
    }

    /// The winner's schema.
    pub fn schema(&self) -> &Schema {
        self.winner.schema()
    }

    /// The winner's label and algorithm.
    pub fn winner_record(&self) -> &CandidateRecord {
        // Invariant: `check` ran at construction and load.
        &self.selection.candidates[self.selection.winner]
    }

    fn check(&self) -> Result<(), LearnError> {
        let s = &self.selection;
        let Some(w) = s.candidates.get(s.winner) else {
            return Err(LearnError::ModelFormat(
                "the selection's winner is not on its candidate list".into(),
            ));
        };
        if w.spec.name().as_str() != self.winner.algorithm() {
            return Err(LearnError::ModelFormat(
                "the winner's model is not of the winning candidate's algorithm".into(),
            ));
        }
        if matches!(self.winner, Model::Auto(_)) {
            return Err(LearnError::ModelFormat(
                "an auto model's winner cannot itself be an auto model".into(),
            ));
        }
        if self.task != self.winner.task() {
            return Err(LearnError::ModelFormat(
                "the model's task does not match its schema".into(),
            ));
        }
        Ok(())
    }

    /// The file as JSON: the envelope with the winner's file inside.
    pub fn to_value(&self) -> Value {
        let winner: Value = serde_json::from_str(&self.winner.to_json()).unwrap_or(Value::Null);
        let mut v = json!({
            "format": MODEL_FORMAT,
            "version": FILE_VERSION,
            "algorithm": ALGORITHM,
            "task": self.task,
            "selection": self.selection,
            "privacy": self.privacy,
            "winner": winner,
        });
        if let Some(id) = &self.job_id {
            v["job_id"] = id.clone().into();
        }
        v
    }

    /// Parse and check an auto file (the winner's file is checked by its
    /// own loader).
    pub fn from_value(value: Value) -> Result<AutoFile, LearnError> {
        let Value::Object(mut map) = value else {
            return Err(LearnError::ModelFormat("not a JSON object".into()));
        };
        for key in map.keys() {
            if ![
                "format",
                "version",
                "algorithm",
                "task",
                "selection",
                "privacy",
                "winner",
                "job_id",
            ]
            .contains(&key.as_str())
            {
                return Err(LearnError::ModelFormat(format!("unknown field `{key}`")));
            }
        }
        let field = |map: &mut serde_json::Map<String, Value>, key: &str| {
            map.remove(key)
                .ok_or_else(|| LearnError::ModelFormat(format!("missing field `{key}`")))
        };
        let bad = |e: serde_json::Error| LearnError::ModelFormat(e.to_string());
        let task: Task = serde_json::from_value(field(&mut map, "task")?).map_err(bad)?;
        let selection: Selection =
            serde_json::from_value(field(&mut map, "selection")?).map_err(bad)?;
        let privacy: AutoStatement =
            serde_json::from_value(field(&mut map, "privacy")?).map_err(bad)?;
        let job_id = match map.remove("job_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(LearnError::ModelFormat("job_id is not a string".into())),
        };
        let winner = Model::from_json(&field(&mut map, "winner")?.to_string())?;
        let file = AutoFile {
            task,
            selection,
            privacy,
            job_id,
            winner,
        };
        file.check()?;
        Ok(file)
    }

    /// The parameters as JSON: `auto`, the winner and the candidate list.
    pub fn params_json(&self) -> Value {
        json!({
            "algorithm": ALGORITHM,
            "winner": self.winner_record().label,
            "winner_params": self.winner.params_json(),
            "candidates": self.selection.candidates,
        })
    }

    /// The statement of the whole run, with the selection record and the
    /// winner's own statement (which covers its run on the training part).
    pub fn privacy_json(&self) -> Value {
        let mut v = serde_json::to_value(&self.privacy).unwrap_or(Value::Null);
        v["selection"] = serde_json::to_value(&self.selection).unwrap_or(Value::Null);
        v["winner"] = self.winner.privacy_json();
        v
    }
}
