//! The trained model: versioned JSON with its schema, parameters, privacy
//! statement and ensemble (SPEC §5), and prediction from it.
//!
//! Everything in a model is either public (schema, parameters) or the output
//! of the DP training run (the hypotheses), so reading, inspecting and
//! predicting with it is post-processing and costs no budget.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::LearnError;
use super::boost::Ensemble;
use super::hypothesis::{Hypothesis, TreeNode};
use super::params::{
    MAX_INTERNAL_NODES, MAX_ROUNDS, SensitivityBound, ValidLazyBbParams, WeakLearnerKind,
    WeakLearnerName,
};
use super::vote_threshold::VoteThresholdPlan;
use crate::data::{Dataset, Encoder, Schema, Task};
use crate::learn::trained::ClassesPrediction;
use crate::privacy::Composition;
use crate::privacy::mechanisms::{self, Mechanism};

/// Value of the `format` field of every model file.
pub const MODEL_FORMAT: &str = "privboost-model";
/// The model file version this build reads and writes.
pub const MODEL_VERSION: u32 = 1;
/// The software version recorded in models and privacy statements.
pub const SOFTWARE_VERSION: &str = concat!("privboost ", env!("CARGO_PKG_VERSION"));

/// A trained LazyBB model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LazyBbModel {
    /// Always [`MODEL_FORMAT`].
    pub format: String,
    /// Always [`MODEL_VERSION`] for models this build reads.
    pub version: u32,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// The service job that trained it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The parameters of the run.
    pub params: ModelParams,
    /// What was spent and how (SPEC §6 "privacy statement").
    pub privacy: PrivacyStatement,
    /// The owner's schema, so that predictions take raw values.
    pub schema: Schema,
    /// Literal names in index order (a check that the schema still encodes
    /// to the literals the hypotheses refer to).
    pub literals: Vec<String>,
    /// `h_1 .. h_tau`; empty for a multiclass model.
    pub ensemble: Vec<Hypothesis>,
    /// Multiclass (one-vs-rest, `super::multiclass`): class `c`'s fit
    /// `h_1 .. h_tau` of "class c vs the rest", in the schema's class
    /// order. Absent (and not written) for a binary model, whose file is
    /// then exactly as before multiclass existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_ensembles: Vec<Vec<Hypothesis>>,
    /// A binary model's vote threshold as an offset added to every vote
    /// sum (`super::vote_threshold`; its release is in
    /// `privacy.vote_threshold`): the positive class is predicted when
    /// `sum_j h_j(x) + vote_offset >= 0`. 0 (and not written) for models
    /// without one: multiclass models and files older than issue 25.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub vote_offset: i32,
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// The training parameters as recorded in the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelParams {
    /// Always `"lazybb"` for now.
    pub algorithm: String,
    /// The weak learner.
    pub weak_learner: WeakLearnerName,
    /// Internal nodes of each tree (TopDown only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_nodes: Option<u32>,
    /// Rounds (files before the names were unified say `tau`).
    #[serde(rename = "rounds", alias = "tau")]
    pub tau: u32,
    /// Learning rate (`lambda` in older files).
    #[serde(rename = "learning_rate", alias = "lambda")]
    pub lambda: f64,
    /// Density (`kappa` in older files).
    #[serde(rename = "density", alias = "kappa")]
    pub kappa: f64,
    /// Whether the rounds, learning rate and density came from the
    /// data-independent default rule.
    pub defaults_used: bool,
}

/// The privacy statement carried by every model (SPEC §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacyStatement {
    /// Total epsilon spent.
    pub epsilon: f64,
    /// Total delta spent (0 for pure DP).
    pub delta: f64,
    /// The neighbouring relation.
    pub neighbouring: String,
    /// Training rows (public under substitution).
    pub n_rows: usize,
    /// How the per-round budgets compose to the total.
    pub composition: Composition,
    /// A sentence on the accounting.
    pub accounting: String,
    /// Budget split between phases.
    pub budget_split: String,
    /// Epsilon of each round (pure DP).
    pub epsilon_per_round: f64,
    /// The mechanism used each round.
    pub mechanism: String,
    /// Noise rate: `P(h) ∝ exp(-eta err(h))`.
    pub eta: f64,
    /// `1/(kappa n)`.
    pub zeta: f64,
    /// The sensitivity argument in one line.
    pub sensitivity: String,
    /// How the noise is sampled.
    pub sampler: String,
    /// Ids of the mechanisms the learner runs
    /// (`privacy::mechanisms`); empty in files written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mechanisms: Vec<String>,
    /// The software that trained the model.
    pub software_version: String,
    /// The private binning phase, when the schema asked for private bins
    /// (`learn::binning`); absent otherwise, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binning: Option<crate::learn::binning::BinningStatement>,
    /// Training on rows randomized on the client (a `local_dp` dataset):
    /// the local epsilons; absent for central DP, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_dp: Option<LocalDpStatement>,
    /// Multiclass: how the budget was split over the one-vs-rest fits;
    /// absent for a binary model, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_vs_rest: Option<OneVsRestStatement>,
    /// A binary fit's vote threshold release (`super::vote_threshold`);
    /// absent without one, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote_threshold: Option<VoteThresholdPlan>,
}

/// The one-vs-rest part of a multiclass statement (`super::multiclass`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OneVsRestStatement {
    /// k: one binary fit per class.
    pub fits: usize,
    /// Each fit's epsilon (the job's epsilon / k, rounded down).
    pub epsilon_per_fit: f64,
    /// Each fit's delta (the job's delta / k, rounded down).
    pub delta_per_fit: f64,
    /// How the fits compose.
    pub composition: String,
}

/// The local-DP part of a statement: how the rows were randomized before
/// upload (the owner's declaration) and how training used them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalDpStatement {
    /// Per-row local epsilon (sum over the row's columns and the label).
    pub local_epsilon: f64,
    /// The label's epsilon (binary randomized response).
    pub label_epsilon: f64,
    /// Each feature column's epsilon (k-ary randomized response).
    pub feature_epsilon: f64,
    /// How the learner used the randomized rows.
    pub debiasing: String,
}

impl PrivacyStatement {
    /// The mechanisms a LazyBB run with this weak learner calls: both weak
    /// learners select by report-noisy-max (TopDown also labels its leaves
    /// with it).
    pub fn mechanisms_of(weak_learner: WeakLearnerKind) -> Vec<Mechanism> {
        match weak_learner {
            WeakLearnerKind::OneRule | WeakLearnerKind::TopDown { .. } => {
                vec![mechanisms::REPORT_NOISY_MAX_LAPLACE]
            }
        }
    }

    fn new(
        ensemble: &Ensemble,
        tau: u32,
        weak_learner: WeakLearnerKind,
    ) -> Result<PrivacyStatement, LearnError> {
        let c = ensemble.calibration.ok_or_else(|| {
            LearnError::InvalidParameter("a non-private run has no privacy statement".into())
        })?;
        let accounting = match c.round.composition {
            Composition::Basic => format!(
                "basic (sequential) composition of {tau} rounds, each {:.6}-DP",
                c.round.epsilon_round
            ),
            Composition::Advanced => format!(
                "advanced composition (Dwork-Rothblum-Vadhan, delta' = delta) of {tau} pure {:.6}-DP rounds; it gave a larger per-round epsilon than basic composition",
                c.round.epsilon_round
            ),
        };
        let used = Self::mechanisms_of(weak_learner);
        let rnm = mechanisms::REPORT_NOISY_MAX_LAPLACE;
        let (mechanism, sensitivity, budget_split) = match weak_learner {
            WeakLearnerKind::OneRule => (
                format!(
                    "{}, scale 1/eta, over the 2d+2 one-rules (literals, negations, constants) with kappa-smooth weights (LazyBB Alg 3; the same epsilon as its weighted exponential mechanism, with a running time that does not depend on the data)",
                    rnm.cited()
                ),
                "robust sensitivity of the weighted error is 2 zeta in exact arithmetic, plus 2E for the float error of the computed errors, 3u for the float error of the scores, and a factor 1 + 3u for dividing by the noise scale fl(1/eta); with the 2^-30 grid each round spends 2 eta (1 + 3u) (2 zeta + 2E + 3u) + 2^-29 <= eps_round (docs/privacy.md, \"DP-1R, exactly (what the code guarantees)\"; the paper's eta = eps_round kappa n / 4 in exact arithmetic)".to_string(),
                format!("equal over the {tau} boosting rounds; nothing else reads the rows"),
            ),
            WeakLearnerKind::TopDown { internal_nodes: t, bound } => {
                if bound != SensitivityBound::Proven {
                    return Err(LearnError::InvalidParameter(
                        "the paper's TopDown calibration does not meet the stated epsilon; no model is made from it".into(),
                    ));
                }
                (
                    format!(
                        "TopDown trees with {t} internal nodes (LazyBB Alg 2): each split by {}, scale 1/eta, over (leaf, literal) pairs (the epsilon of the weighted exponential mechanism P ∝ exp(eta im)); leaf labels by the same mechanism with scale {:.6e} on the leaves' class masses",
                        rnm.cited(),
                        c.leaf_scale.unwrap_or(f64::NAN)
                    ),
                    "robust sensitivity of the Gini improvement is 16 zeta in exact arithmetic (proved in docs/privacy.md; the paper's 4 zeta is too small), so each split is (32 eta zeta)-DP; the leaf mass vector has L1 sensitivity 4 zeta, so Laplace scale 1/(8 t eta) costs 32 t eta zeta; each tree is (64 t eta zeta)-DP, i.e. eta = eps_round kappa n / (64 t), less the float margin E_td and the 2^-30 grids (docs/privacy.md, \"DP TopDown, exactly (what the code guarantees)\")".to_string(),
                    format!("equal over the {tau} boosting rounds; within a tree, half to the {t} splits (equally) and half to the leaf labels"),
                )
            }
        };
        Ok(PrivacyStatement {
            epsilon: c.budget.epsilon(),
            // Basic composition of pure rounds spends no delta, whatever the
            // job offered (`family::plan_lazybb` charges it so).
            delta: match c.round.composition {
                Composition::Basic => 0.0,
                Composition::Advanced => c.budget.delta(),
            },
            neighbouring: "substitution of one row; the row count n is public".into(),
            n_rows: c.n,
            composition: c.round.composition,
            accounting,
            budget_split,
            epsilon_per_round: c.round.epsilon_round,
            mechanism,
            eta: c.eta,
            zeta: c.zeta,
            sensitivity,
            sampler: mechanisms::sampler_text(&used),
            mechanisms: used.iter().map(|m| m.id.to_string()).collect(),
            software_version: SOFTWARE_VERSION.into(),
            binning: None,
            local_dp: None,
            one_vs_rest: None,
            vote_threshold: None,
        })
    }

    /// The statement of a 1-Rule run on rows randomized on the client
    /// (`local_dp` datasets): `epsilon`-local DP, no central loss.
    fn local(
        n: usize,
        tau: u32,
        kappa: f64,
        local: &crate::local_dp::LocalDp,
        feature_epsilon: f64,
    ) -> PrivacyStatement {
        let used = [mechanisms::RANDOMIZED_RESPONSE];
        PrivacyStatement {
            epsilon: local.epsilon,
            delta: 0.0,
            neighbouring: "any two values of one respondent's row: each row was randomized on the client before upload (local DP), so the guarantee holds against the server too".into(),
            n_rows: n,
            composition: Composition::Basic,
            accounting: format!(
                "{}-local DP, randomized on the client: {} on each feature column ({feature_epsilon} each) and on the label ({}), basic composition over the row's columns; training is post-processing of that release and spends no central budget. The server cannot check the randomization: the dataset's owner declared it",
                local.epsilon,
                mechanisms::RANDOMIZED_RESPONSE.cited(),
                local.label_epsilon
            ),
            budget_split: format!(
                "label {}, each feature column {feature_epsilon}; nothing is spent centrally over the {tau} rounds",
                local.label_epsilon
            ),
            epsilon_per_round: 0.0,
            mechanism: "no central mechanism: each round takes the one-rule with the least debiased weighted error among the 2d+2 candidates (exact argmin)".into(),
            eta: 0.0,
            zeta: 1.0 / (kappa * n as f64),
            sensitivity: "none needed: the rows are already local-DP, and every output of training is a function of them (post-processing)".into(),
            sampler: mechanisms::sampler_text(&used),
            mechanisms: used.iter().map(|m| m.id.to_string()).collect(),
            software_version: SOFTWARE_VERSION.into(),
            binning: None,
            local_dp: Some(LocalDpStatement {
                local_epsilon: local.epsilon,
                label_epsilon: local.label_epsilon,
                feature_epsilon,
                debiasing: "each weighted error of a one-rule is estimated without bias from the randomized literals and labels, (x~ - m q) / (p - q) per literal and y~ / (2 p_y - 1) for the label (docs/privacy.md, \"Local DP collection\")".into(),
            }),
            one_vs_rest: None,
            vote_threshold: None,
        }
    }
}

impl LazyBbModel {
    /// Assemble a model from a private training run.
    ///
    /// Errors for a non-private ensemble: a model file always carries a
    /// privacy statement.
    pub fn new(
        schema: &Schema,
        encoder: &Encoder,
        params: &ValidLazyBbParams,
        defaults_used: bool,
        ensemble: &Ensemble,
    ) -> Result<LazyBbModel, LearnError> {
        let p = params.get();
        let created_at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| LearnError::InvalidParameter(format!("clock: {e}")))?;
        Ok(LazyBbModel {
            format: MODEL_FORMAT.into(),
            version: MODEL_VERSION,
            created_at,
            job_id: None,
            params: ModelParams {
                algorithm: "lazybb".into(),
                weak_learner: p.weak_learner.name(),
                internal_nodes: match p.weak_learner {
                    WeakLearnerKind::TopDown { internal_nodes, .. } => Some(internal_nodes),
                    WeakLearnerKind::OneRule => None,
                },
                tau: p.tau,
                lambda: p.lambda,
                kappa: p.kappa,
                defaults_used,
            },
            privacy: PrivacyStatement::new(ensemble, p.tau, p.weak_learner)?,
            schema: schema.clone(),
            literals: encoder.literals().iter().map(|l| l.name.clone()).collect(),
            ensemble: ensemble.hypotheses.clone(),
            class_ensembles: Vec::new(),
            vote_offset: 0,
        })
    }

    /// The model with its vote threshold (`super::vote_threshold`): the
    /// released `offset` and the release's plan in the privacy statement,
    /// whose epsilon becomes the whole fit's (the rounds' and the
    /// threshold's, basic composition).
    pub fn with_vote_threshold(mut self, plan: &VoteThresholdPlan, offset: i32) -> LazyBbModel {
        self.vote_offset = offset;
        self.privacy.epsilon = plan.fit_epsilon;
        self.privacy.accounting = format!(
            "{}; then the vote threshold, one pure {:.6}-DP report-noisy-max, by basic composition",
            self.privacy.accounting, plan.epsilon
        );
        self.privacy.budget_split = format!(
            "epsilon {} of {} to the vote threshold, the rest {}",
            plan.epsilon, plan.fit_epsilon, self.privacy.budget_split
        );
        self.privacy.vote_threshold = Some(*plan);
        self
    }

    /// Assemble a multiclass model from its `k` one-vs-rest fits (class 0
    /// first, `super::multiclass`), each run at the per-fit budget;
    /// `budget` is the job's (the fits' sum, basic composition).
    pub fn new_classes(
        schema: &Schema,
        encoder: &Encoder,
        params: &ValidLazyBbParams,
        defaults_used: bool,
        fits: &[Ensemble],
        budget: crate::privacy::Budget,
    ) -> Result<LazyBbModel, LearnError> {
        let k = fits.len();
        let first = fits.first().ok_or_else(|| {
            LearnError::InvalidParameter("a multiclass model needs its fits".into())
        })?;
        let mut model = LazyBbModel::new(schema, encoder, params, defaults_used, first)?;
        let per_fit = params.get().privacy;
        let crate::learn::PrivacyMode::Private(per_fit) = per_fit else {
            return Err(LearnError::InvalidParameter(
                "a non-private run has no privacy statement".into(),
            ));
        };
        let s = &mut model.privacy;
        s.epsilon = budget.epsilon();
        s.delta = budget.delta();
        s.accounting = format!(
            "one-vs-rest over {k} classes: {k} binary LazyBB fits over the same rows, composed sequentially (basic composition: every row is in every fit), each ({:e}, {:e})-DP; within each fit, {}",
            per_fit.epsilon(),
            per_fit.delta(),
            s.accounting
        );
        s.budget_split = format!(
            "equal over the {k} one-vs-rest fits (epsilon / k and delta / k each, rounded down); within each fit, {}",
            s.budget_split
        );
        s.one_vs_rest = Some(OneVsRestStatement {
            fits: k,
            epsilon_per_fit: per_fit.epsilon(),
            delta_per_fit: per_fit.delta(),
            composition: "basic (sequential) composition over the k fits; LazyBB's boosting guarantee holds for each binary fit, not for the argmax over them".into(),
        });
        model.ensemble = Vec::new();
        model.class_ensembles = fits.iter().map(|f| f.hypotheses.clone()).collect();
        Ok(model)
    }

    /// Assemble a model from a 1-Rule run on rows randomized on the client.
    pub(crate) fn new_local(
        encoder: &Encoder,
        params: &ValidLazyBbParams,
        defaults_used: bool,
        ensemble: &Ensemble,
        local: &crate::local_dp::LocalDp,
    ) -> Result<LazyBbModel, LearnError> {
        let p = params.get();
        let schema = encoder.schema();
        let created_at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| LearnError::InvalidParameter(format!("clock: {e}")))?;
        Ok(LazyBbModel {
            format: MODEL_FORMAT.into(),
            version: MODEL_VERSION,
            created_at,
            job_id: None,
            params: ModelParams {
                algorithm: "lazybb".into(),
                weak_learner: p.weak_learner.name(),
                internal_nodes: None,
                tau: p.tau,
                lambda: p.lambda,
                kappa: p.kappa,
                defaults_used,
            },
            privacy: PrivacyStatement::local(
                ensemble.n,
                p.tau,
                p.kappa,
                local,
                local.feature_epsilon(schema),
            ),
            schema: schema.clone(),
            literals: encoder.literals().iter().map(|l| l.name.clone()).collect(),
            ensemble: ensemble.hypotheses.clone(),
            class_ensembles: Vec::new(),
            vote_offset: 0,
        })
    }

    /// Parse and check a model file: format and version first (so an old or
    /// foreign file gets a clear message), then the schema and the ensemble.
    pub fn from_json(text: &str) -> Result<LazyBbModel, LearnError> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| LearnError::ModelFormat(format!("not valid JSON: {e}")))?;
        if value.get("format").and_then(|f| f.as_str()) != Some(MODEL_FORMAT) {
            return Err(LearnError::ModelFormat(format!(
                "not a privboost model (the \"format\" field is not \"{MODEL_FORMAT}\")"
            )));
        }
        match value.get("version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(MODEL_VERSION) => {}
            Some(v) => {
                return Err(LearnError::ModelFormat(format!(
                    "model file version {v} is not supported; this build reads version {MODEL_VERSION}"
                )));
            }
            None => {
                return Err(LearnError::ModelFormat(
                    "the model has no \"version\" field".into(),
                ));
            }
        }
        let model: LazyBbModel =
            serde_json::from_value(value).map_err(|e| LearnError::ModelFormat(e.to_string()))?;
        model.check()?;
        Ok(model)
    }

    /// Consistency checks on a deserialised model.
    fn check(&self) -> Result<(), LearnError> {
        // The bounds training enforces (params.rs), checked before anything is built.
        let tau = self.params.tau;
        if tau > MAX_ROUNDS {
            return Err(LearnError::ModelFormat(format!(
                "tau = {tau} is more than {MAX_ROUNDS} rounds"
            )));
        }
        let max_splits = match (self.params.weak_learner, self.params.internal_nodes) {
            (WeakLearnerName::TopDown, Some(t)) if (1..=MAX_INTERNAL_NODES).contains(&t) => t,
            (WeakLearnerName::TopDown, _) => {
                return Err(LearnError::ModelFormat(format!(
                    "a TopDown model needs internal_nodes between 1 and {MAX_INTERNAL_NODES}"
                )));
            }
            (WeakLearnerName::OneRule, None) => 0,
            (WeakLearnerName::OneRule, Some(_)) => {
                return Err(LearnError::ModelFormat(
                    "internal_nodes is only for TopDown models".into(),
                ));
            }
        };
        let encoder = self.encoder()?;
        let names: Vec<&str> = encoder.literals().iter().map(|l| l.name.as_str()).collect();
        if names != self.literals.iter().map(String::as_str).collect::<Vec<_>>() {
            return Err(LearnError::ModelFormat(
                "the model's literal list does not match its schema".into(),
            ));
        }
        let ensembles: Vec<&Vec<Hypothesis>> = match self.schema.task() {
            Task::Multiclass { k } => {
                if !self.ensemble.is_empty() || self.class_ensembles.len() != k {
                    return Err(LearnError::ModelFormat(format!(
                        "a multiclass model needs one ensemble per class ({k}) in class_ensembles and an empty ensemble; it has {} and {}",
                        self.class_ensembles.len(),
                        self.ensemble.len()
                    )));
                }
                self.class_ensembles.iter().collect()
            }
            Task::Binary | Task::Regression { .. } => {
                if !self.class_ensembles.is_empty() {
                    return Err(LearnError::ModelFormat(
                        "class_ensembles is only for a multiclass label".into(),
                    ));
                }
                vec![&self.ensemble]
            }
        };
        let offsets = -(i64::from(tau) + 2)..=i64::from(tau) + 1;
        if !offsets.contains(&i64::from(self.vote_offset))
            || (self.vote_offset != 0 && self.is_multiclass())
        {
            return Err(LearnError::ModelFormat(format!(
                "vote_offset = {} is not a binary model's threshold within [-(tau + 2), tau + 1]",
                self.vote_offset
            )));
        }
        for ensemble in &ensembles {
            if ensemble.len() != self.params.tau as usize {
                return Err(LearnError::ModelFormat(format!(
                    "the model has {} hypotheses but tau = {}",
                    ensemble.len(),
                    self.params.tau
                )));
            }
        }
        for h in ensembles.into_iter().flatten() {
            h.check(names.len()).map_err(LearnError::ModelFormat)?;
            if let Hypothesis::Tree { nodes } = h {
                let splits = nodes
                    .iter()
                    .filter(|n| matches!(n, TreeNode::Split { .. }))
                    .count();
                if splits > max_splits as usize {
                    return Err(LearnError::ModelFormat(format!(
                        "a tree has {splits} splits but internal_nodes = {max_splits}"
                    )));
                }
            }
            let is_tree = matches!(h, Hypothesis::Tree { .. });
            if is_tree != (self.params.weak_learner == WeakLearnerName::TopDown) {
                return Err(LearnError::ModelFormat(
                    "the ensemble's hypotheses do not match the model's weak learner".into(),
                ));
            }
        }
        Ok(())
    }

    /// Serialise as pretty JSON.
    pub fn to_json(&self) -> String {
        // Invariant: every field is a plain value, string, vec or derived
        // struct; serde_json cannot fail on them (non-finite floats become null).
        serde_json::to_string_pretty(self).expect("model serialises")
    }

    /// The encoder for raw rows, built from the model's schema.
    pub fn encoder(&self) -> Result<Encoder, LearnError> {
        Ok(Encoder::new(&self.schema)?)
    }

    /// A fast predictor (the ensemble folded into one vote per literal).
    /// For a multiclass model use [`LazyBbModel::class_predictors`].
    pub fn predictor(&self) -> Predictor {
        Predictor::new(&self.ensemble, self.literals.len()).with_offset(self.vote_offset)
    }

    /// Whether the model has one fit per class (one-vs-rest).
    pub fn is_multiclass(&self) -> bool {
        !self.class_ensembles.is_empty()
    }

    /// One folded predictor per class, in schema order (empty for a binary
    /// model).
    pub fn class_predictors(&self) -> Vec<Predictor> {
        self.class_ensembles
            .iter()
            .map(|e| Predictor::new(e, self.literals.len()))
            .collect()
    }
}

/// A one-vs-rest prediction from each class's vote sum: class `c`'s vote
/// share `f_c = (s_c / tau + 1) / 2` in [0, 1] is the share of its fit's
/// rounds that voted "class c" (the binary model's probability-like
/// value); the probabilities are the shares normalised to sum to 1
/// (uniform when every share is 0), and the class is the largest, the
/// first in schema order on a tie. Normalising keeps the order of the
/// shares and needs no temperature that nothing fitted; like the binary
/// value, it is not calibrated. Post-processing of the released fits.
pub fn classes_prediction(
    predictors: &[Predictor],
    vote_sums: &[i32],
    names: &[String],
) -> ClassesPrediction {
    let shares: Vec<f64> = predictors
        .iter()
        .zip(vote_sums)
        .map(|(p, &s)| p.prediction(s).probability.clamp(0.0, 1.0))
        .collect();
    let total: f64 = shares.iter().sum();
    let k = shares.len().max(1);
    let probabilities: Vec<f64> = if total > 0.0 {
        shares.iter().map(|f| f / total).collect()
    } else {
        vec![1.0 / k as f64; shares.len()]
    };
    let mut index = 0;
    for (c, &p) in probabilities.iter().enumerate() {
        if p > probabilities[index] {
            index = c;
        }
    }
    ClassesPrediction {
        index,
        class: names.get(index).cloned().unwrap_or_default(),
        probabilities,
    }
}

/// The ensemble folded for fast prediction. Stumps and constants fold into an
/// integer-weighted linear rule (PAPERS.md §4 item 1):
/// `sum_j h_j(x) = base + sum_{active literals l} 2 v_l`, where
/// `v_l = #(l chosen) - #(not l chosen)` and `base = c_0 - sum_l v_l`; trees
/// are evaluated one by one.
#[derive(Debug, Clone, PartialEq)]
pub struct Predictor {
    tau: u32,
    base: i32,
    /// `(literal, 2 v_l)` for every literal with a non-zero net vote.
    doubled_votes: Vec<(u32, i32)>,
    /// `2 v_l` for every literal (dense, for single-row prediction).
    dense: Vec<i32>,
    /// The trees of a TopDown ensemble.
    trees: Vec<Hypothesis>,
}

/// One prediction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    /// `true` for the positive class. A tie (vote sum 0, possible with an
    /// even `tau`) predicts the positive class, as the authors' code does.
    pub positive: bool,
    /// `sum_j h_j(x) / tau`, in [-1, 1].
    pub score: f64,
    /// `(score + 1) / 2`: a probability-like value in [0, 1] (not calibrated).
    pub probability: f64,
}

impl Predictor {
    /// The folded form (for export): `tau`, the base, `2 v_l` per literal
    /// and the trees, so that the vote sum is `base + sum over the true
    /// literals of 2 v_l + sum over the trees of +-1`.
    pub(crate) fn parts(&self) -> (u32, i32, &[i32], &[Hypothesis]) {
        (self.tau, self.base, &self.dense, &self.trees)
    }

    /// Fold `ensemble` over `d` literals.
    pub fn new(ensemble: &[Hypothesis], d: usize) -> Predictor {
        let mut votes = vec![0i32; d];
        let mut constant = 0i32;
        let mut trees = Vec::new();
        for h in ensemble {
            match h {
                Hypothesis::Literal { literal, negated } => {
                    votes[*literal as usize] += if *negated { -1 } else { 1 }
                }
                Hypothesis::Constant { positive } => constant += if *positive { 1 } else { -1 },
                Hypothesis::Tree { .. } => trees.push(h.clone()),
            }
        }
        let base = constant - votes.iter().sum::<i32>();
        let doubled_votes = votes
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0)
            .map(|(l, v)| (l as u32, 2 * v))
            .collect();
        Predictor {
            tau: ensemble.len() as u32,
            base,
            doubled_votes,
            dense: votes.iter().map(|v| 2 * v).collect(),
            trees,
        }
    }

    /// The predictor with `offset` votes added to every sum (a binary
    /// model's vote threshold, `super::vote_threshold`), counted as
    /// `|offset|` more votes so that the score stays in [-1, 1].
    pub fn with_offset(mut self, offset: i32) -> Predictor {
        self.base += offset;
        self.tau += offset.unsigned_abs();
        self
    }

    /// Vote sums `sum_j h_j(x)` for every row of `data`: one column pass per
    /// literal with a non-zero stump vote, one walk per row and tree.
    pub fn vote_sums(&self, data: &Dataset) -> Vec<i32> {
        let n = data.n_rows();
        let mut sums = vec![self.base; n];
        // Every bit visited (`BitMatrix::add_where_set_from`): a DP
        // evaluation's pass over private rows takes work independent of the
        // rows. Blocks of rows over the threads, each block's sums staying
        // in cache across the literals; integer sums, the same for any
        // thread count.
        const BLOCK_WORDS: usize = 4096;
        sums.par_chunks_mut(64 * BLOCK_WORDS)
            .enumerate()
            .for_each(|(b, block)| {
                for &(literal, doubled) in &self.doubled_votes {
                    data.features.add_where_set_from(
                        literal as usize,
                        doubled,
                        b * BLOCK_WORDS,
                        block,
                    );
                }
            });
        // Trees: every node of every tree for every row (`true_rows`), so
        // the pass's work does not depend on the paths the rows take.
        for tree in &self.trees {
            let bits = tree.true_rows(&data.features);
            for (chunk, &word) in sums.chunks_mut(64).zip(&bits) {
                for (b, sum) in chunk.iter_mut().enumerate() {
                    *sum += 2 * ((word >> b) & 1) as i32 - 1;
                }
            }
        }
        sums
    }

    /// Vote sum for one row given its true literals (sorted ascending, as
    /// the encoder returns them).
    pub fn vote_sum(&self, active: &[u32]) -> i32 {
        let stumps = self.base + active.iter().map(|&l| self.dense[l as usize]).sum::<i32>();
        let trees: i32 = self
            .trees
            .iter()
            .map(|t| {
                if t.evaluate(|l| active.binary_search(&l).is_ok()) {
                    1
                } else {
                    -1
                }
            })
            .sum();
        stumps + trees
    }

    /// Turn a vote sum into a prediction.
    pub fn prediction(&self, vote_sum: i32) -> Prediction {
        let score = f64::from(vote_sum) / f64::from(self.tau.max(1));
        Prediction {
            positive: vote_sum >= 0,
            score,
            probability: (score + 1.0) / 2.0,
        }
    }

    /// The literals the model's predictions depend on: stumps with a non-zero
    /// net vote and every literal a tree splits on (sorted, distinct).
    pub fn literals_used(&self) -> Vec<u32> {
        let mut used: Vec<u32> = self.doubled_votes.iter().map(|(l, _)| *l).collect();
        for tree in &self.trees {
            used.extend(tree.literals());
        }
        used.sort_unstable();
        used.dedup();
        used
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::data::{LabelMode, read_csv};
    use crate::learn::params::{LazyBbParams, PrivacyMode};
    use crate::learn::{inspect, train};
    use crate::privacy::{Budget, NoiseRng};

    /// A small private TopDown model (2 internal nodes, 3 rounds) as JSON.
    fn tree_model() -> Value {
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "positive": "yes"},
                "columns": [{"name": "a", "type": "boolean"}, {"name": "b", "type": "boolean"}]}"#,
        )
        .unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        let csv = "a,b,y\n1,0,yes\n1,1,yes\n0,1,no\n0,0,no\n1,0,yes\n0,1,no\n";
        let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
        let params = LazyBbParams {
            tau: 3,
            lambda: 0.3,
            kappa: 0.5,
            weak_learner: WeakLearnerKind::TopDown {
                internal_nodes: 2,
                bound: SensitivityBound::Proven,
            },
            privacy: PrivacyMode::Private(Budget::new(2.0, 0.0).unwrap()),
        }
        .check()
        .unwrap();
        let ensemble = train(&data, &params, Some(&mut NoiseRng::seeded(7)), &mut |_| {
            true
        })
        .unwrap();
        let model = LazyBbModel::new(&schema, &encoder, &params, false, &ensemble).unwrap();
        serde_json::from_str(&model.to_json()).unwrap()
    }

    fn load_error(value: &Value) -> String {
        LazyBbModel::from_json(&value.to_string())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn the_unmodified_tree_model_loads() {
        let model = LazyBbModel::from_json(&tree_model().to_string()).unwrap();
        let encoder = model.encoder().unwrap();
        assert!(inspect(&model, &encoder).to_text().contains("tree 3:"));
    }

    /// Regression: a "tree" whose nodes share children passed the child-order
    /// check, and inspection printed every root-to-leaf path, 2^depth of them,
    /// so a few kilobytes of model JSON hung `inspect` and the inspect endpoint.
    #[test]
    fn a_tree_with_shared_nodes_is_refused() {
        let mut value = tree_model();
        value["params"]["internal_nodes"] = json!(16);
        let mut nodes: Vec<Value> = (1..=16)
            .map(|i| json!({"kind": "split", "literal": 0, "if_false": i, "if_true": i}))
            .collect();
        nodes.push(json!({"kind": "leaf", "positive": true}));
        for h in value["ensemble"].as_array_mut().unwrap() {
            h["nodes"] = json!(nodes);
        }
        let e = load_error(&value);
        assert!(e.contains("tree node 1 has two parents"), "{e}");
    }

    #[test]
    fn a_tree_with_an_unreachable_node_is_refused() {
        let mut value = tree_model();
        value["ensemble"][0]["nodes"] = json!([
            {"kind": "split", "literal": 0, "if_false": 1, "if_true": 3},
            {"kind": "leaf", "positive": true},
            {"kind": "leaf", "positive": false},
            {"kind": "leaf", "positive": true}
        ]);
        let e = load_error(&value);
        assert!(e.contains("tree node 2 is unreachable"), "{e}");
    }

    /// Regression: a chain of splits as deep as the model file is long made
    /// inspection recurse once per level and overflow the stack (an abort, not
    /// an error). Trees may have at most `internal_nodes` <= 16 splits.
    #[test]
    fn trees_deeper_than_internal_nodes_are_refused() {
        let mut value = tree_model();
        let depth = 100_000u32;
        // Node 2i splits into the leaf 2i + 1 and the next split 2i + 2.
        let mut nodes = Vec::new();
        for i in 0..depth {
            nodes.push(
                json!({"kind": "split", "literal": 0, "if_false": 2 * i + 1, "if_true": 2 * i + 2}),
            );
            nodes.push(json!({"kind": "leaf", "positive": true}));
        }
        nodes.push(json!({"kind": "leaf", "positive": false}));
        value["ensemble"][0]["nodes"] = json!(nodes);
        let e = load_error(&value);
        assert!(
            e.contains("a tree has 100000 splits but internal_nodes = 2"),
            "{e}"
        );

        value["params"]["internal_nodes"] = json!(100_000);
        let e = load_error(&value);
        assert!(e.contains("internal_nodes between 1 and 16"), "{e}");
        value["params"]["internal_nodes"] = Value::Null;
        assert!(load_error(&value).contains("internal_nodes between 1 and 16"));
    }

    #[test]
    fn round_counts_beyond_training_limits_are_refused() {
        let mut value = tree_model();
        value["params"]["rounds"] = json!(u32::MAX);
        let e = load_error(&value);
        assert!(e.contains("more than 10000 rounds"), "{e}");
        let mut value = tree_model();
        value["params"]["weak_learner"] = json!("dp-1r");
        let e = load_error(&value);
        assert!(e.contains("only for TopDown"), "{e}");
    }
}
