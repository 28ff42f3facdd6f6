//! The learner family: one boundary for every algorithm.
//!
//! A request names an algorithm and gives its parameters ([`AlgorithmSpec`],
//! unchecked, with defaults still to fill in). [`AlgorithmSpec::plan`] checks
//! them against the public facts of the data (row count, schema, task) and the
//! job's budget, and returns a [`Plan`]: the privacy cost, the number of
//! progress steps and the public noise description, all *before* any row is
//! read. The ledger charges [`Plan::cost`], the estimate route shows
//! [`Plan::noise`], and [`Plan::fit`] trains. Nothing outside a learner's own
//! files knows its insides: the API, the store, the jobs and the CLI see only
//! these types and [`super::Model`].
//!
//! Adding a learner: a variant here (spec and plan), its own folder under
//! `learn/`, a variant of [`super::Model`]; `docs/architecture.md` lists the
//! rest.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::auto::{self, AutoPlan, AutoSpec};
use super::binning::{self, BinningPlan};
use super::dpboost::{self, DpBoostFile, DpBoostPlan, DpBoostSpec};
use super::ebm::{self, EbmFile, EbmPlan, EbmSpec};
use super::lazybb::vote_threshold::{
    self, MAX_VOTE_THRESHOLD_SHARE, VoteThresholdPlan, default_share,
};
use super::linear::{self, LinearFile, LinearPlan, LinearShape, LinearSpec};
use super::model::LazyBbModel;
use super::naive_bayes::{self, NaiveBayesFile, NaiveBayesPlan, NaiveBayesSpec};
use super::params::{
    Calibration, SensitivityBound, ValidLazyBbParams, WeakLearnerKind, WeakLearnerName,
    default_parameters, default_top_down_parameters,
};
use super::trained::Model;
use super::{LazyBbParams, LearnError, PrivacyMode, train};
use crate::data::{Dataset, Encoder, MAX_LABEL_BOUND, MIN_LABEL_RANGE, Task};
use crate::local_dp::randomized_response::{Debias, effective_epsilon};
use crate::local_dp::{Domains, LocalDp, Protocol};
use crate::privacy::{
    Budget, Composition, Neighbouring, NoiseRng, PrivacyCost, PrivacyError, mechanisms,
};

/// A learner's name as the CLI (`--algorithm`), the API (`"algorithm"`) and
/// the model file spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum AlgorithmName {
    /// LazyBB smooth boosting with DP 1-Rules or DP TopDown trees.
    #[default]
    Lazybb,
    /// DP-EBM: differentially private explainable boosting.
    DpEbm,
    /// dp-linear: DP logistic and linear regression on the literals.
    DpLinear,
    /// DPBoost: DP gradient boosting, ensemble of ensembles.
    Dpboost,
    /// auto: the private choice among the learners above (`learn::auto`).
    Auto,
    /// ldp-naive-bayes: naive Bayes on sampled-column local-DP reports
    /// (`learn::naive_bayes`).
    LdpNaiveBayes,
}

impl AlgorithmName {
    /// Every learner, in the order the docs list them.
    pub const ALL: [AlgorithmName; 6] = [
        AlgorithmName::Lazybb,
        AlgorithmName::DpEbm,
        AlgorithmName::DpLinear,
        AlgorithmName::Dpboost,
        AlgorithmName::Auto,
        AlgorithmName::LdpNaiveBayes,
    ];

    /// The name as written in requests and files.
    pub fn as_str(&self) -> &'static str {
        match self {
            AlgorithmName::Lazybb => "lazybb",
            AlgorithmName::DpEbm => "dp-ebm",
            AlgorithmName::DpLinear => "dp-linear",
            AlgorithmName::Dpboost => "dpboost",
            AlgorithmName::Auto => "auto",
            AlgorithmName::LdpNaiveBayes => "ldp-naive-bayes",
        }
    }

    /// Parse a name (CLI and error messages list [`AlgorithmName::ALL`]).
    pub fn parse(name: &str) -> Option<AlgorithmName> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// The request fields of this learner's parameters (API job bodies).
    pub fn fields(&self) -> &'static [&'static str] {
        match self {
            AlgorithmName::Lazybb => &[
                "rounds",
                "learning_rate",
                "density",
                "weak_learner",
                "internal_nodes",
                "vote_threshold_share",
            ],
            AlgorithmName::DpEbm => &[
                "max_bins",
                "learning_rate",
                "epochs",
                "max_leaves",
                "binning_share",
                "residual_clip",
            ],
            AlgorithmName::DpLinear => &[
                "epochs",
                "learning_rate",
                "ridge",
                "curvature_share",
                "numeric_features",
                "range_share",
                "solver",
                "regularization",
                "threshold_share",
            ],
            AlgorithmName::Dpboost => &[
                "trees_per_ensemble",
                "ensembles",
                "max_depth",
                "learning_rate",
                "split_share",
                "init_share",
                "leaves",
                "threshold_share",
            ],
            AlgorithmName::Auto => &["validation_share"],
            AlgorithmName::LdpNaiveBayes => &[],
        }
    }

    /// Deprecated spellings of this learner's parameters, `(alias, name)`:
    /// LazyBB's paper symbols, which job bodies, stored job parameters and
    /// model files used before the names were unified (docs/service.md,
    /// "Parameter names"). Still accepted; never written.
    pub fn deprecated_aliases(&self) -> &'static [(&'static str, &'static str)] {
        match self {
            AlgorithmName::Lazybb => LAZYBB_ALIASES,
            _ => &[],
        }
    }

    /// Whether the learner can do `task`.
    pub fn supports(&self, task: Task) -> bool {
        match self {
            // LazyBB does k classes one-vs-rest (`lazybb::multiclass`).
            AlgorithmName::Lazybb => !matches!(task, Task::Regression { .. }),
            // k classes from pairs over the class list (`naive_bayes`).
            AlgorithmName::LdpNaiveBayes => !matches!(task, Task::Regression { .. }),
            AlgorithmName::DpLinear | AlgorithmName::DpEbm => true,
            // DPBoost does k classes one-vs-rest (`dpboost::multiclass`).
            AlgorithmName::Dpboost => true,
            // Over the learners that support the task (auto::candidates);
            // with none, its plan refuses by name.
            AlgorithmName::Auto => true,
        }
    }
}

/// LazyBB's deprecated parameter spellings (the paper's symbols).
const LAZYBB_ALIASES: &[(&str, &str)] = &[
    ("tau", "rounds"),
    ("lambda", "learning_rate"),
    ("kappa", "density"),
];

/// LazyBB's parameters as a request gives them (unset ones take the
/// data-independent defaults of [`super::params`]).
///
/// Unknown fields are refused where requests are parsed (the API's job body,
/// the CLI's flags); this type is also flattened into stored job parameters.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LazyBbSpec {
    /// Rounds (the paper's tau; `tau` is a deprecated alias).
    #[serde(
        default,
        rename = "rounds",
        alias = "tau",
        skip_serializing_if = "Option::is_none"
    )]
    pub tau: Option<u32>,
    /// Learning rate of the re-weighting (lambda; `lambda` is a deprecated alias).
    #[serde(
        default,
        rename = "learning_rate",
        alias = "lambda",
        skip_serializing_if = "Option::is_none"
    )]
    pub lambda: Option<f64>,
    /// Density (kappa; `kappa` is a deprecated alias).
    #[serde(
        default,
        rename = "density",
        alias = "kappa",
        skip_serializing_if = "Option::is_none"
    )]
    pub kappa: Option<f64>,
    /// The weak learner (`dp-1r` unless given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weak_learner: Option<WeakLearnerName>,
    /// Internal nodes of each TopDown tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_nodes: Option<u32>,
    /// A binary fit's share of epsilon for its vote threshold, in [0, 0.5];
    /// 0 for none (`lazybb::vote_threshold`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote_threshold_share: Option<f64>,
}

/// One learner and its (unchecked) parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "algorithm", rename_all = "kebab-case")]
pub enum AlgorithmSpec {
    /// LazyBB.
    Lazybb(LazyBbSpec),
    /// DP-EBM.
    DpEbm(EbmSpec),
    /// dp-linear.
    DpLinear(LinearSpec),
    /// DPBoost.
    Dpboost(DpBoostSpec),
    /// auto: private selection among learners.
    Auto(AutoSpec),
    /// ldp-naive-bayes (sampled-column local-DP datasets only).
    LdpNaiveBayes(NaiveBayesSpec),
}

impl Default for AlgorithmSpec {
    fn default() -> AlgorithmSpec {
        AlgorithmSpec::Lazybb(LazyBbSpec::default())
    }
}

/// A request field that is wrong, and why (the API turns it into a 422
/// field error).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldProblem {
    /// The field, or `body` for an unknown field or a malformed value.
    pub field: String,
    /// Why.
    pub message: String,
}

impl AlgorithmSpec {
    /// `name`'s parameters from the flat fields of a request (the job body's
    /// fields other than the common ones). A deprecated alias counts as its
    /// parameter (giving both is refused). A parameter of another learner is
    /// refused by its name, an unknown field or a value of the wrong type as
    /// `body`.
    pub fn from_fields(
        name: AlgorithmName,
        mut fields: serde_json::Map<String, Value>,
    ) -> Result<AlgorithmSpec, Vec<FieldProblem>> {
        let mut problems = Vec::new();
        for (alias, canonical) in name.deprecated_aliases() {
            let Some(value) = fields.remove(*alias) else {
                continue;
            };
            if fields.contains_key(*canonical) {
                problems.push(FieldProblem {
                    field: (*alias).into(),
                    message: format!(
                        "`{alias}` is a deprecated alias of `{canonical}`; give only `{canonical}`"
                    ),
                });
            } else {
                fields.insert((*canonical).into(), value);
            }
        }
        for key in fields.keys() {
            if name.fields().contains(&key.as_str()) {
                continue;
            }
            let another = AlgorithmName::ALL.iter().any(|other| {
                other.fields().contains(&key.as_str())
                    || other.deprecated_aliases().iter().any(|(a, _)| a == key)
            });
            problems.push(if another {
                FieldProblem {
                    field: key.clone(),
                    message: format!("not a parameter of algorithm {}", name.as_str()),
                }
            } else {
                FieldProblem {
                    field: "body".into(),
                    message: format!("unknown field `{key}`"),
                }
            });
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut tagged = fields;
        tagged.insert("algorithm".into(), name.as_str().into());
        serde_json::from_value(Value::Object(tagged)).map_err(|e| {
            vec![FieldProblem {
                field: "body".into(),
                message: e.to_string(),
            }]
        })
    }
}

impl LearnError {
    /// The request field a parameter error is about: learners name it in
    /// parentheses in their messages (`... (kappa) ...`); `params` when none.
    pub fn field(&self) -> &'static str {
        let message = self.to_string();
        [
            ("(t)", "internal_nodes"),
            ("(tau)", "rounds"),
            ("(lambda)", "learning_rate"),
            ("(kappa)", "density"),
            ("algorithm ", "algorithm"),
            ("(max_bins)", "max_bins"),
            ("(learning_rate)", "learning_rate"),
            ("(epochs)", "epochs"),
            ("(max_leaves)", "max_leaves"),
            ("(binning_share)", "binning_share"),
            ("(residual_clip)", "residual_clip"),
            ("(ridge)", "ridge"),
            ("(curvature_share)", "curvature_share"),
            ("(numeric_features)", "numeric_features"),
            ("(range_share)", "range_share"),
            ("(solver)", "solver"),
            ("(regularization)", "regularization"),
            ("(trees_per_ensemble)", "trees_per_ensemble"),
            ("(ensembles)", "ensembles"),
            ("(max_depth)", "max_depth"),
            ("(split_share)", "split_share"),
            ("(init_share)", "init_share"),
            ("(validation_share)", "validation_share"),
            ("(vote_threshold_share)", "vote_threshold_share"),
            ("(threshold_share)", "threshold_share"),
            ("(delta)", "delta"),
            ("(epsilon)", "epsilon"),
            ("label: ", "dataset_id"),
        ]
        .into_iter()
        .find(|(tag, _)| message.contains(tag))
        .map_or("params", |(_, field)| field)
    }
}

/// The public facts a plan may depend on: never a row value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PublicFacts {
    /// Training rows (public under substitution neighbours).
    pub n_rows: usize,
    /// The schema's task.
    pub task: Task,
    /// DP-EBM's features of the schema (one per one-hot column, one per other
    /// literal).
    pub n_features: usize,
    /// dp-linear's blocks of the schema (counts only).
    pub linear: LinearShape,
    /// Columns whose cut points are chosen privately (`"bins": {"private":
    /// k}`): their binning is a phase of its own (`learn::binning`).
    pub private_bins: usize,
    /// The schema's feature columns by kind (`auto`'s candidate rule reads
    /// them).
    pub kinds: ColumnKinds,
    /// The owner's declaration that the rows were randomized on the client
    /// (`privboost randomize`; a `local_dp` dataset): training is then
    /// post-processing, and only learners that debias the randomized rows
    /// accept it ([`LOCAL_DP_LEARNERS`]).
    pub local_dp: Option<LocalDp>,
    /// Who the guarantee protects: a row, or a unit of at most k rows (the
    /// schema's `privacy_unit`). Every plan's budget is per unit; the
    /// learners are planned at the per-row budget it implies
    /// ([`Neighbouring::row_budget`]).
    pub unit: Neighbouring,
}

/// How many of a schema's feature columns (the label and ignored columns
/// left out) are numeric and how many are categorical or boolean. Public:
/// the schema says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ColumnKinds {
    /// Numeric columns (cut points, public or private).
    pub numeric: usize,
    /// Categorical and boolean columns (one literal per value).
    pub categorical: usize,
}

impl ColumnKinds {
    /// The kinds of `schema`'s feature columns.
    pub fn of(schema: &crate::data::Schema) -> ColumnKinds {
        use crate::data::Column;
        let mut kinds = ColumnKinds::default();
        for column in &schema.columns {
            match column {
                Column::Numeric(_) => kinds.numeric += 1,
                Column::Categorical(_) | Column::Boolean(_) => kinds.categorical += 1,
                Column::Ignore(_) => {}
            }
        }
        kinds
    }
}

/// The learners that train on local-DP rows (all-columns protocol), as
/// error messages name them.
pub const LOCAL_DP_LEARNERS: &str = "lazybb with the dp-1r weak learner";

/// The learners that train on sampled-column local-DP reports.
pub const SAMPLED_COLUMN_LEARNERS: &str = "ldp-naive-bayes";

impl PublicFacts {
    /// Adult's shape (14 DP-EBM features, dp-linear's blocks, no private
    /// bins) with `n_rows` rows and `task`: the facts of the plan tests.
    #[cfg(test)]
    pub(crate) fn adult_shaped(n_rows: usize, task: Task) -> PublicFacts {
        PublicFacts {
            n_rows,
            task,
            n_features: 14,
            linear: LinearShape {
                intervals: (15, 28),
                linear: (15, 28),
                both: (15, 28),
                lines: 0,
                dimensions: [163, 109, 169],
            },
            private_bins: 0,
            kinds: ColumnKinds {
                numeric: 6,
                categorical: 8,
            },
            local_dp: None,
            unit: Neighbouring::ROW,
        }
    }

    /// The facts of an encoder's schema and `n_rows` rows.
    /// The learners are planned on the shape of the schema they will train
    /// on: private-bins columns with `k` bins (`Schema::public_shape`), not
    /// their base grid.
    pub fn new(encoder: &Encoder, n_rows: usize) -> PublicFacts {
        let schema = encoder.schema();
        let shaped = if schema.has_private_bins() {
            Encoder::new(&schema.public_shape()).ok()
        } else {
            None
        };
        let shape = shaped.as_ref().unwrap_or(encoder);
        PublicFacts {
            n_rows,
            task: schema.task(),
            n_features: ebm::bins::layout(shape).len(),
            linear: LinearShape::new(shape),
            private_bins: binning::count_private(schema),
            kinds: ColumnKinds::of(schema),
            local_dp: None,
            unit: Neighbouring::units(schema.unit_max_rows()).unwrap_or(Neighbouring::ROW),
        }
    }

    /// The same facts for rows randomized on the client with `local`.
    pub fn with_local_dp(self, local: Option<LocalDp>) -> PublicFacts {
        PublicFacts {
            local_dp: local,
            ..self
        }
    }
}

/// A checked, calibrated training run: everything public about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What the run costs (the ledger charges [`PrivacyCost::charge`]).
    pub cost: PrivacyCost,
    /// Progress steps (LazyBB: rounds).
    pub steps: u32,
    /// The parameters with every default filled in, as stored with the job.
    pub resolved: AlgorithmSpec,
    /// Whether the algorithm's default rule chose the parameters.
    pub defaults_used: bool,
    /// The private binning phase, when the schema asks for private bins.
    pub binning: Option<BinningPlan>,
    /// Who [`Plan::cost`] protects: the noise is planned at the per-row
    /// budget, the cost is per unit (`privacy::unit`).
    pub unit: Neighbouring,
    learner: PlannedLearner,
}

#[derive(Debug, Clone, PartialEq)]
enum PlannedLearner {
    LazyBb {
        params: ValidLazyBbParams,
        calibration: Calibration,
        /// Multiclass: `k` one-vs-rest fits, each with `params`' per-fit
        /// budget, and the learner's whole budget; `None` for a binary label.
        one_vs_rest: Option<(usize, Budget)>,
        /// A binary fit's vote threshold (`lazybb::vote_threshold`), with
        /// its share of the fit's epsilon; `None` for k classes or a share
        /// of 0.
        vote_threshold: Option<VoteThresholdPlan>,
    },
    Ebm {
        plan: EbmPlan,
        /// The default rule's `n / s` (`ebm::params::Schedule`).
        signal_to_noise: Option<f64>,
    },
    Linear(Box<LinearPlan>),
    DpBoost(DpBoostPlan),
    Auto(AutoPlan),
    /// LazyBB + 1-Rule on local-DP rows: no calibration, no noise.
    LazyBbLocal {
        params: ValidLazyBbParams,
        local: LocalDp,
    },
    /// Naive Bayes on sampled-column reports: no noise.
    NaiveBayes(NaiveBayesPlan),
}

impl AlgorithmSpec {
    /// The algorithm's name.
    pub fn name(&self) -> AlgorithmName {
        match self {
            AlgorithmSpec::Lazybb(_) => AlgorithmName::Lazybb,
            AlgorithmSpec::DpEbm(_) => AlgorithmName::DpEbm,
            AlgorithmSpec::DpLinear(_) => AlgorithmName::DpLinear,
            AlgorithmSpec::Dpboost(_) => AlgorithmName::Dpboost,
            AlgorithmSpec::Auto(_) => AlgorithmName::Auto,
            AlgorithmSpec::LdpNaiveBayes(_) => AlgorithmName::LdpNaiveBayes,
        }
    }

    /// Check the parameters, fill the defaults, and calibrate the noise for
    /// `budget` and the public `facts`. Errors before any charge: a bad
    /// parameter, a task the learner cannot do, a noise scale that would not
    /// be usable.
    ///
    /// `budget` is per unit (`facts.unit`; a row without a privacy unit).
    /// Every learner goes through here: its plan at the unit budget says how
    /// it accounts (pure, composed (epsilon, delta), zCDP), the learner is
    /// then planned at the per-row budget group privacy turns into `budget`
    /// ([`Neighbouring::row_budget`]), and its cost converted back to the
    /// unit ([`Neighbouring::unit_cost`]). With a unit of one row this is
    /// exactly the row plan.
    pub fn plan(&self, budget: Budget, facts: PublicFacts) -> Result<Plan, LearnError> {
        let unit = facts.unit;
        let rows = PublicFacts {
            unit: Neighbouring::ROW,
            ..facts
        };
        if unit.is_row() {
            return self.plan_rows(budget, rows);
        }
        if facts.local_dp.is_some() {
            return Err(LearnError::InvalidParameter(
                "local-DP rows are randomized per row on the client; a privacy unit of several rows is not supported for them".into(),
            ));
        }
        // A plan's kind of cost can depend on its budget (`auto` with one
        // candidate takes that candidate's): re-plan until the row plan's
        // kind is the one its budget was converted for.
        let mut kind = self.plan_rows(budget, rows)?.cost;
        for _ in 0..3 {
            let mut plan = self.plan_rows(unit.row_budget(budget, &kind)?, rows)?;
            if std::mem::discriminant(&plan.cost) == std::mem::discriminant(&kind) {
                plan.cost = unit.unit_cost(plan.cost, budget)?;
                plan.unit = unit;
                return Ok(plan);
            }
            kind = plan.cost;
        }
        Err(LearnError::InvalidParameter(
            "this learner's accounting changes with its budget too often to plan it per privacy unit; give it explicit parameters".into(),
        ))
    }

    /// [`AlgorithmSpec::plan`] for one row as the unit.
    fn plan_rows(&self, budget: Budget, facts: PublicFacts) -> Result<Plan, LearnError> {
        // The label's public bounds derive every learner's scales: refuse
        // bounds that overflow them before any charge (a schema stored
        // before upload checked them may still have them; issue 26).
        facts.task.check_bounds()?;
        if !self.name().supports(facts.task) {
            return Err(LearnError::InvalidParameter(format!(
                "algorithm {} cannot do {}; choose a learner that can (see docs/service.md)",
                self.name().as_str(),
                facts.task.name()
            )));
        }
        if let Some(local) = facts.local_dp {
            return self.plan_local(local, facts);
        }
        if facts.private_bins == 0 {
            return self.plan_learner(budget, facts);
        }
        // auto's candidates would each need the derived schema of one shared
        // binning phase, which its run loop does not do yet: refuse before
        // any charge rather than run a phase per candidate.
        if let AlgorithmSpec::Auto(_) = self {
            return Err(LearnError::InvalidParameter(
                "algorithm auto does not support a schema with private bins yet; choose a learner, or give those columns public bins".into(),
            ));
        }
        // Private bins: the learner's plan at the full budget says how it
        // accounts; the budget is then split with the binning phase and the
        // costs composed (`binning::split`, `PrivacyCost::then_pure`).
        let zcdp = matches!(
            self.plan_learner(budget, facts)?.cost,
            PrivacyCost::Zcdp { .. }
        );
        let (learner, phase) = binning::split(budget, facts.private_bins, zcdp)?;
        let mut plan = self.plan_learner(learner, facts)?;
        plan.cost = plan.cost.then_pure(phase.epsilon, budget)?;
        plan.binning = Some(phase);
        Ok(plan)
    }

    /// The plan on rows randomized on the client: LazyBB with the 1-Rule,
    /// debiased, no central noise and no central cost. The default rule
    /// is LazyBB's at the local epsilon (there is no central one).
    fn plan_local(&self, local: LocalDp, facts: PublicFacts) -> Result<Plan, LearnError> {
        if let AlgorithmSpec::LdpNaiveBayes(spec) = *self {
            return plan_naive_bayes(spec, facts);
        }
        if local.protocol == Protocol::SampledColumn {
            // Sampled-column rows are one (column, value, label) report
            // each: the learners that debias whole rows would misread them.
            return Err(LearnError::InvalidParameter(format!(
                "algorithm {} does not read sampled-column reports; this dataset was randomized on the client with the sampled-column protocol, so choose {SAMPLED_COLUMN_LEARNERS}",
                self.name().as_str()
            )));
        }
        let refuse = || {
            LearnError::InvalidParameter(format!(
                "algorithm {} does not debias local-DP data; this dataset was randomized on the client (local_dp), so choose {LOCAL_DP_LEARNERS}",
                self.name().as_str()
            ))
        };
        let AlgorithmSpec::Lazybb(spec) = *self else {
            return Err(refuse());
        };
        if let Task::Multiclass { .. } = facts.task {
            // The label's local randomization is binary randomized response.
            return Err(LearnError::InvalidParameter(
                "training on local-DP rows needs a binary label; a multiclass label is not supported for data randomized on the client".into(),
            ));
        }
        if spec.weak_learner.unwrap_or(WeakLearnerName::OneRule) != WeakLearnerName::OneRule {
            return Err(refuse());
        }
        let local_budget = Budget::new(local.epsilon, 0.0)?;
        // The same parameter rules and checks as a central run, at the
        // local epsilon; the central plan is then dropped for a noiseless one.
        let central = plan_lazybb(spec, local_budget, facts)?;
        let AlgorithmSpec::Lazybb(resolved) = central.resolved else {
            unreachable!("a LazyBB plan resolves to LazyBB parameters")
        };
        let params = LazyBbParams {
            tau: resolved.tau.unwrap_or(1),
            lambda: resolved.lambda.unwrap_or(0.25),
            kappa: resolved.kappa.unwrap_or(0.25),
            weak_learner: WeakLearnerKind::OneRule,
            privacy: PrivacyMode::NonPrivate,
        }
        .check()?;
        Ok(Plan {
            cost: PrivacyCost::LocalDp {
                local_epsilon: local.epsilon,
            },
            steps: central.steps,
            resolved: central.resolved,
            defaults_used: central.defaults_used,
            binning: None,
            unit: Neighbouring::ROW,
            learner: PlannedLearner::LazyBbLocal { params, local },
        })
    }

    fn plan_learner(&self, budget: Budget, facts: PublicFacts) -> Result<Plan, LearnError> {
        match *self {
            AlgorithmSpec::Lazybb(spec) => plan_lazybb(spec, budget, facts),
            AlgorithmSpec::DpEbm(spec) => plan_ebm(spec, budget, facts),
            AlgorithmSpec::DpLinear(spec) => plan_linear(spec, budget, facts),
            AlgorithmSpec::Dpboost(spec) => plan_dpboost(spec, budget, facts),
            AlgorithmSpec::Auto(spec) => plan_auto(spec, budget, facts),
            AlgorithmSpec::LdpNaiveBayes(spec) => plan_naive_bayes(spec, facts),
        }
    }
}

/// ldp-naive-bayes: only on sampled-column reports (`facts.local_dp`);
/// nothing to calibrate, no central cost, one step.
fn plan_naive_bayes(spec: NaiveBayesSpec, facts: PublicFacts) -> Result<Plan, LearnError> {
    let plan = spec.plan(facts.local_dp)?;
    Ok(Plan {
        cost: PrivacyCost::LocalDp {
            local_epsilon: plan.local.epsilon,
        },
        steps: 1,
        resolved: AlgorithmSpec::LdpNaiveBayes(spec),
        defaults_used: true,
        binning: None,
        unit: Neighbouring::ROW,
        learner: PlannedLearner::NaiveBayes(plan),
    })
}

fn plan_lazybb(spec: LazyBbSpec, budget: Budget, facts: PublicFacts) -> Result<Plan, LearnError> {
    let one_vs_rest = match facts.task {
        Task::Multiclass { k } => Some((k, budget)),
        Task::Binary | Task::Regression { .. } => None,
    };
    let weak_learner = spec.weak_learner.unwrap_or(WeakLearnerName::OneRule);
    if spec.internal_nodes.is_some() && weak_learner != WeakLearnerName::TopDown {
        return Err(LearnError::InvalidParameter(
            "internal nodes (t): only the dp-top-down weak learner takes internal_nodes".into(),
        ));
    }
    // Multiclass: each of the k one-vs-rest fits is a binary run at
    // epsilon / k, delta / k (`lazybb::multiclass`). A binary fit spends a
    // share of epsilon on its vote threshold (`vote_threshold::
    // default_share` unless given; pure DP, basic composition with the
    // rounds, which get the rest and all of delta): the rounds' default
    // rule is that of the whole epsilon.
    if let Some(s) = spec.vote_threshold_share
        && !(0.0..=MAX_VOTE_THRESHOLD_SHARE).contains(&s)
    {
        return Err(LearnError::InvalidParameter(format!(
            "vote threshold share (vote_threshold_share) must be in [0, {MAX_VOTE_THRESHOLD_SHARE}], got {s}"
        )));
    }
    let (fit_budget, share) = match one_vs_rest {
        Some((k, _)) => {
            if spec.vote_threshold_share.is_some_and(|s| s > 0.0) {
                return Err(LearnError::InvalidParameter(
                    "vote threshold share (vote_threshold_share): a multiclass label's one-vs-rest fits have no vote threshold; give 0 or leave it out".into(),
                ));
            }
            (super::lazybb::multiclass::per_fit_budget(budget, k)?, None)
        }
        None => (
            budget,
            Some(
                spec.vote_threshold_share
                    .unwrap_or_else(|| default_share(facts.n_rows, budget.epsilon())),
            ),
        ),
    };
    let threshold_epsilon = share.filter(|&s| s > 0.0).map(|s| s * fit_budget.epsilon());
    // The rounds get the rest, rounded down (one step below the nearest
    // double) so that the two parts never sum to more than the fit's epsilon.
    let rounds_budget = match threshold_epsilon {
        Some(e) => Budget::new((fit_budget.epsilon() - e).next_down(), fit_budget.delta())?,
        None => fit_budget,
    };
    // One default rule per weak learner, shared by the CLI and the API
    // (params.rs documents and validates each), at the epsilon of one
    // binary fit (the whole budget for a binary label).
    let (tau, lambda, kappa, t) = match weak_learner {
        WeakLearnerName::OneRule => {
            let (tau, lambda, kappa) = default_parameters(fit_budget.epsilon());
            (tau, lambda, kappa, None)
        }
        WeakLearnerName::TopDown => {
            let (tau, lambda, kappa, t) = default_top_down_parameters(fit_budget.epsilon());
            (tau, lambda, kappa, Some(t))
        }
    };
    let resolved = LazyBbSpec {
        tau: Some(spec.tau.unwrap_or(tau)),
        lambda: Some(spec.lambda.unwrap_or(lambda)),
        kappa: Some(spec.kappa.unwrap_or(kappa)),
        weak_learner: Some(weak_learner),
        internal_nodes: t.map(|t| spec.internal_nodes.unwrap_or(t)),
        vote_threshold_share: share.or(spec.vote_threshold_share),
    };
    let params = LazyBbParams {
        tau: resolved.tau.unwrap_or(tau),
        lambda: resolved.lambda.unwrap_or(lambda),
        kappa: resolved.kappa.unwrap_or(kappa),
        weak_learner: match weak_learner {
            WeakLearnerName::OneRule => WeakLearnerKind::OneRule,
            // The service and `train` only ever use the proven bound (SPEC §4.3).
            WeakLearnerName::TopDown => WeakLearnerKind::TopDown {
                internal_nodes: resolved.internal_nodes.unwrap_or(1),
                bound: SensitivityBound::Proven,
            },
        },
        // Every fit's rounds run at `rounds_budget`; its calibration and
        // the threshold's plan check every scale before any charge.
        privacy: PrivacyMode::Private(rounds_budget),
    }
    .check()?;
    let calibration = params
        .calibrate(facts.n_rows)?
        .ok_or_else(|| LearnError::InvalidParameter("a private plan needs a budget".into()))?;
    let vote_threshold = threshold_epsilon
        .map(|e| VoteThresholdPlan::new(e, fit_budget.epsilon(), facts.n_rows, params.get().tau))
        .transpose()?;
    // LazyBB's per-round steps are pure DP; the total is pure under basic
    // composition and (epsilon, delta) under advanced composition (§4.4).
    // With a delta, `split_over_rounds` takes advanced composition only
    // where it gives each round more epsilon than basic composition (many
    // rounds); otherwise the run is pure epsilon-DP whatever delta the job
    // offered, and is charged as such (no delta spent: a zCDP-filter
    // dataset can then admit it). The vote threshold is pure either way.
    // Multiclass: the k fits' shares sum to at most the budget (basic
    // composition over the fits), which is what is charged.
    let cost = if budget.delta() == 0.0 || calibration.round.composition == Composition::Basic {
        PrivacyCost::Pure {
            epsilon: budget.epsilon(),
        }
    } else {
        PrivacyCost::Approx {
            epsilon: budget.epsilon(),
            delta: budget.delta(),
        }
    };
    Ok(Plan {
        cost,
        steps: params.get().tau * one_vs_rest.map_or(1, |(k, _)| k as u32),
        resolved: AlgorithmSpec::Lazybb(resolved),
        defaults_used: spec.tau.is_none()
            || spec.lambda.is_none()
            || spec.kappa.is_none()
            || (t.is_some() && spec.internal_nodes.is_none()),
        binning: None,
        unit: Neighbouring::ROW,
        learner: PlannedLearner::LazyBb {
            params,
            calibration,
            one_vs_rest,
            vote_threshold,
        },
    })
}

fn plan_ebm(spec: EbmSpec, budget: Budget, facts: PublicFacts) -> Result<Plan, LearnError> {
    let schedule =
        ebm::params::Schedule::default_for(facts.task, facts.n_rows, budget, facts.n_features);
    let mut params = spec.check(schedule)?;
    params.residual_clip = match (facts.task, params.residual_clip) {
        (Task::Binary | Task::Multiclass { .. }, None) => None,
        (Task::Binary | Task::Multiclass { .. }, Some(_)) => {
            return Err(LearnError::InvalidParameter(
                "residual clip (residual_clip) is for regression; a classifier's residuals are in (-1, 1)".into(),
            ));
        }
        (Task::Regression { min, max }, clip) => {
            let clip = clip.unwrap_or_else(|| ebm::default_residual_clip(min, max));
            // Residuals are divided by the clip (in f32) and leaf values
            // multiplied by it: keep both finite, as for the label's range.
            if !(MIN_LABEL_RANGE..=MAX_LABEL_BOUND).contains(&clip) {
                return Err(LearnError::InvalidParameter(format!(
                    "residual clip (residual_clip) must lie within [{MIN_LABEL_RANGE:e}, {MAX_LABEL_BOUND:e}], got {clip}"
                )));
            }
            Some(clip)
        }
    };
    let plan = params.plan(budget, facts.n_rows, facts.n_features, facts.task)?;
    Ok(Plan {
        cost: plan.cost(),
        steps: plan.params.epochs,
        resolved: AlgorithmSpec::DpEbm(plan.params.to_spec()),
        defaults_used: !spec.any_given(),
        binning: None,
        unit: Neighbouring::ROW,
        learner: PlannedLearner::Ebm {
            plan,
            signal_to_noise: schedule.signal_to_noise,
        },
    })
}

/// A dp-linear plan's noise description with its decision threshold's
/// release, when it has one.
fn linear_threshold_json(mut noise: serde_json::Value, plan: &LinearPlan) -> serde_json::Value {
    if let Some(t) = &plan.threshold {
        noise["epsilon_threshold"] = t.epsilon.into();
        if let Some(rho) = t.rho {
            noise["rho_threshold"] = rho.into();
        }
        noise["threshold_scale"] = t.scale.into();
        noise["threshold_candidates"] = t.candidates.into();
    }
    noise
}

fn plan_linear(spec: LinearSpec, budget: Budget, facts: PublicFacts) -> Result<Plan, LearnError> {
    let plan = spec.plan_for(facts.task, budget, facts.n_rows, &facts.linear)?;
    Ok(Plan {
        cost: plan.cost(),
        // Objective perturbation with k classes: k fits of `epochs` steps.
        steps: plan.params.epochs * plan.objective.map_or(1, |o| o.fits as u32),
        resolved: AlgorithmSpec::DpLinear(plan.params.to_spec()),
        defaults_used: !spec.any_given(),
        binning: None,
        unit: Neighbouring::ROW,
        learner: PlannedLearner::Linear(Box::new(plan)),
    })
}

fn plan_dpboost(spec: DpBoostSpec, budget: Budget, facts: PublicFacts) -> Result<Plan, LearnError> {
    // k classes: k one-vs-rest binary fits at epsilon / k each
    // (`dpboost::multiclass`); every scale checked is a fit's.
    let defaults_used = !spec.any_given();
    // A binary fit's decision threshold takes its default share from the
    // public n and epsilon (`dpboost::params::default_threshold_share`).
    let spec = match facts.task {
        Task::Binary => DpBoostSpec {
            threshold_share: Some(spec.threshold_share.unwrap_or_else(|| {
                dpboost::params::default_threshold_share(facts.n_rows, budget.epsilon())
            })),
            ..spec
        },
        Task::Regression { .. } | Task::Multiclass { .. } => spec,
    };
    let plan = spec
        .check(facts.task)?
        .plan_for(facts.task, budget, facts.n_rows)?;
    plan.check_scales(facts.task)?;
    Ok(Plan {
        cost: plan.cost(),
        steps: plan.steps(),
        resolved: AlgorithmSpec::Dpboost(plan.params.to_spec()),
        defaults_used,
        binning: None,
        unit: Neighbouring::ROW,
        learner: PlannedLearner::DpBoost(plan),
    })
}

fn plan_auto(spec: AutoSpec, budget: Budget, facts: PublicFacts) -> Result<Plan, LearnError> {
    let plan = spec.plan(budget, facts)?;
    Ok(Plan {
        cost: plan.cost,
        steps: plan.steps(),
        resolved: AlgorithmSpec::Auto(plan.to_spec()),
        defaults_used: spec.validation_share.is_none(),
        binning: None,
        unit: Neighbouring::ROW,
        learner: PlannedLearner::Auto(plan),
    })
}

impl Plan {
    /// The algorithm planned.
    pub fn algorithm(&self) -> AlgorithmName {
        self.resolved.name()
    }

    /// DP-EBM: the signal-to-noise ratio `n / s` its default rule chose the
    /// learning rate and bins from (public); `None` for the other learners.
    pub fn signal_to_noise(&self) -> Option<f64> {
        match &self.learner {
            PlannedLearner::Ebm {
                signal_to_noise, ..
            } => *signal_to_noise,
            _ => None,
        }
    }

    /// The public noise description shown by the estimate route (depends on
    /// the parameters and n only).
    pub fn noise(&self) -> Value {
        let mut noise = self.learner_noise();
        if let Some(b) = &self.binning
            && let Value::Object(map) = &mut noise
        {
            map.insert("binning".into(), b.noise_json());
        }
        // With a privacy unit the scales above are the per-row plan's (the
        // noise actually drawn); say so. Absent for rows: unchanged output.
        if !self.unit.is_row()
            && let Value::Object(map) = &mut noise
        {
            map.insert(
                "privacy_unit".into(),
                json!({
                    "max_rows": self.unit.max_rows(),
                    "note": "the scales above are those of the per-row budget that group privacy over max_rows rows turns into the job's per-unit budget (docs/privacy.md, \"The privacy unit\")",
                }),
            );
        }
        noise
    }

    fn learner_noise(&self) -> Value {
        match &self.learner {
            PlannedLearner::LazyBb {
                params,
                calibration: c,
                one_vs_rest,
                vote_threshold,
            } => {
                let rnm = mechanisms::REPORT_NOISY_MAX_LAPLACE.name;
                let mechanism = match params.get().weak_learner {
                    WeakLearnerKind::OneRule => {
                        format!("{rnm} over one-rules (DP-1R), once per round")
                    }
                    WeakLearnerKind::TopDown { .. } => format!(
                        "{rnm} per split and per leaf label (DP TopDown, proven sensitivity bound), once per round"
                    ),
                };
                let mechanism = match one_vs_rest {
                    Some((k, _)) => format!(
                        "one-vs-rest over {k} classes: {k} binary LazyBB fits, each at epsilon / {k} and delta / {k}; in each, {mechanism}"
                    ),
                    None => mechanism,
                };
                let mechanism = match vote_threshold {
                    Some(t) => format!(
                        "{mechanism}; then {rnm} over {} vote thresholds (accuracy on the training rows, sensitivity 1), scale {:.6e}",
                        t.candidates, t.scale
                    ),
                    None => mechanism,
                };
                json!({
                    "mechanism": mechanism,
                    "one_vs_rest_fits": one_vs_rest.map(|(k, _)| k),
                    "epsilon_per_fit": vote_threshold.map_or(c.budget.epsilon(), |t| t.fit_epsilon),
                    "epsilon_vote_threshold": vote_threshold.map(|t| t.epsilon),
                    "leaf_scale": c.leaf_scale,
                    "n_rows": c.n,
                    "epsilon_per_round": c.round.epsilon_round,
                    "composition": match c.round.composition { Composition::Basic => "basic", Composition::Advanced => "advanced" },
                    "eta": c.eta,
                    "zeta": c.zeta,
                })
            }
            PlannedLearner::Ebm { plan: p, .. } => {
                let mechanism = if p.is_pure() {
                    mechanisms::DISCRETE_LAPLACE.name
                } else {
                    mechanisms::DISCRETE_GAUSSIAN.name
                };
                let mut noise = json!({
                    "mechanism": format!(
                        "DP-EBM: {mechanism} on the base-bin counts, on the sum of the labels (the intercept), then on each leaf sum of clamped residuals, every iteration"
                    ),
                    "n_rows": p.n_rows,
                    "features": p.n_features,
                    "iterations": p.iterations(),
                    "sigma_binning": p.sigma_binning,
                    "sigma_intercept": p.sigma_intercept,
                    "sigma_training": p.sigma_training,
                    "grid": 1.0 / f64::from(p.scale),
                });
                // Pure runs have no rho: the fields are left out, not null.
                match p.accounting {
                    ebm::params::Accounting::Zcdp {
                        rho_total,
                        rho_binning,
                        rho_intercept,
                        rho_training,
                    } => {
                        noise["rho"] = rho_total.into();
                        noise["rho_binning"] = rho_binning.into();
                        noise["rho_intercept"] = rho_intercept.into();
                        noise["rho_training"] = rho_training.into();
                    }
                    ebm::params::Accounting::Pure {
                        epsilon_binning,
                        epsilon_intercept,
                        epsilon_training,
                    } => {
                        noise["epsilon_binning"] = epsilon_binning.into();
                        noise["epsilon_intercept"] = epsilon_intercept.into();
                        noise["epsilon_training"] = epsilon_training.into();
                    }
                }
                // A classifier's threshold calibration (report-noisy-max).
                if let Some(c) = p.calibration {
                    noise["epsilon_calibration"] = c.epsilon.into();
                    if let Some(rho) = c.rho {
                        noise["rho_calibration"] = rho.into();
                    }
                    noise["calibration_scale"] = c.scale.into();
                }
                noise
            }
            PlannedLearner::Linear(p) if p.output.is_some() || p.objective.is_some() => {
                linear_threshold_json(linear::file::noise_json(p), p)
            }
            PlannedLearner::Linear(p) => {
                let mut noise = json!({
                    "mechanism": format!(
                        "dp-linear: {} on each feature's curvature once, then on each block's gradient sums, every epoch",
                        linear::file::mechanism_of(p).name
                    ),
                    "n_rows": p.n_rows,
                    "blocks": p.blocks,
                    "iterations": p.iterations(),
                    "sigma_curvature": p.curvature_std(),
                    "sigma_gradient": p.gradient_std(),
                    "lambda": p.lambda,
                    "grid": 1.0 / f64::from(p.scale),
                });
                // Pure runs have no rho: the field is left out, not null.
                if let Some(rho) = p.rho {
                    noise["rho"] = rho.into();
                }
                linear_threshold_json(noise, p)
            }
            PlannedLearner::DpBoost(p) => dpboost::params::noise_json(p),
            PlannedLearner::NaiveBayes(p) => json!({
                "mechanism": "none centrally: each row was randomized on the client, reporting one uniformly drawn column's (value, label) pair by k-ary randomized response at the full local epsilon; naive Bayes from the debiased pair counts",
                "local_epsilon": p.local.epsilon,
                "protocol": p.local.protocol.as_str(),
            }),
            PlannedLearner::LazyBbLocal { local, .. } => json!({
                "mechanism": "none centrally: the rows were randomized on the client (k-ary randomized response per column); each round takes the one-rule with the least debiased weighted error",
                "local_epsilon": local.epsilon,
                "label_epsilon": local.label_epsilon,
            }),
            PlannedLearner::Auto(p) => json!({
                "mechanism": "auto: every candidate trained once on the training part and scored once on the validation part with its share of epsilon; the best noisy score wins (docs/privacy.md, \"Private selection (auto)\")",
                "n_rows": p.n_rows,
                "n_train": p.n_train,
                "n_validation": p.n_validation,
                "candidates": p.candidates.iter().map(|c| json!({
                    "label": c.label,
                    "params": c.plan.resolved,
                    "epsilon": c.budget.epsilon(),
                    "delta": c.budget.delta(),
                    "noise": c.plan.noise(),
                })).collect::<Vec<_>>(),
            }),
        }
    }

    /// Train on `data` (encoded with `encoder`, the same schema the plan saw)
    /// with noise from `rng`. `on_step(done)` is called after each step;
    /// returning `false` cancels.
    ///
    /// With private bins, the binning phase runs first and the learner trains
    /// on the derived literals; the model stores the derived schema.
    pub fn fit(
        &self,
        data: &Dataset,
        encoder: &Encoder,
        rng: &mut NoiseRng,
        on_step: &mut dyn FnMut(u32) -> bool,
    ) -> Result<Model, LearnError> {
        let mut model = match &self.binning {
            None => self.fit_learner(data, encoder, rng, on_step)?,
            Some(phase) => {
                let (encoder, data, columns) = binning::run(phase, data, encoder, rng)?;
                let mut model = self.fit_learner(&data, &encoder, rng, on_step)?;
                model.attach_binning(phase.statement(columns, self.cost), self.cost.charge());
                model
            }
        };
        if !self.unit.is_row() {
            let column = encoder
                .schema()
                .privacy_unit
                .as_ref()
                .map(|u| u.column.as_str());
            model.attach_unit(self.unit, column, self.cost.charge());
        }
        // The one way out of every learner: a model that could not be
        // stored and read back is an error, never a stored `null`.
        model.check_storable()?;
        Ok(model)
    }

    fn fit_learner(
        &self,
        data: &Dataset,
        encoder: &Encoder,
        rng: &mut NoiseRng,
        on_step: &mut dyn FnMut(u32) -> bool,
    ) -> Result<Model, LearnError> {
        match &self.learner {
            PlannedLearner::LazyBb {
                params,
                one_vs_rest: Some((k, budget)),
                ..
            } => {
                let fits =
                    super::lazybb::multiclass::train_one_vs_rest(data, *k, params, rng, on_step)?;
                let model = LazyBbModel::new_classes(
                    encoder.schema(),
                    encoder,
                    params,
                    self.defaults_used,
                    &fits,
                    *budget,
                )?;
                Ok(Model::LazyBb(model))
            }
            PlannedLearner::LazyBb {
                params,
                vote_threshold,
                ..
            } => {
                let ensemble = train(data, params, Some(rng), on_step)?;
                let mut model = LazyBbModel::new(
                    encoder.schema(),
                    encoder,
                    params,
                    self.defaults_used,
                    &ensemble,
                )?;
                if let Some(plan) = vote_threshold {
                    let offset = vote_threshold::choose_offset(&ensemble, data, plan, rng)?;
                    model = model.with_vote_threshold(plan, offset);
                }
                Ok(Model::LazyBb(model))
            }
            PlannedLearner::Ebm { plan, .. } => {
                let model = ebm::fit::fit(data, encoder, plan, rng, on_step)?;
                Ok(Model::Ebm(EbmFile::new(
                    encoder,
                    plan,
                    self.defaults_used,
                    model,
                )?))
            }
            PlannedLearner::Linear(plan) => {
                let mut model = linear::fit::fit(data, encoder, plan, rng, on_step)?;
                // A binary classifier's decision threshold: released after
                // the fit, from its model (`linear::threshold`).
                let logit = plan
                    .threshold
                    .map(|t| linear::threshold::apply(&mut model, data, &t, rng))
                    .transpose()?;
                let file = LinearFile::new(encoder, plan, self.defaults_used, model)?;
                Ok(Model::Linear(match (plan.threshold, logit) {
                    (Some(t), Some(logit)) => file.with_threshold(&t, logit),
                    _ => file,
                }))
            }
            PlannedLearner::DpBoost(plan) if plan.one_vs_rest.is_some() => {
                let fits = dpboost::multiclass::fit_one_vs_rest(data, encoder, plan, rng, on_step)?;
                Ok(Model::DpBoost(Box::new(DpBoostFile::new_classes(
                    encoder,
                    plan,
                    self.defaults_used,
                    fits,
                )?)))
            }
            PlannedLearner::DpBoost(plan) => {
                let mut model = dpboost::fit::fit(data, encoder, plan, rng, on_step)?;
                // A binary classifier's decision threshold: released after
                // the trees, from the model (`dpboost::threshold`).
                let logit = plan
                    .threshold
                    .map(|t| dpboost::threshold::apply(&mut model, data, &t, rng))
                    .transpose()?;
                let file = DpBoostFile::new(encoder, plan, self.defaults_used, model)?;
                Ok(Model::DpBoost(Box::new(match (plan.threshold, logit) {
                    (Some(t), Some(logit)) => file.with_threshold(&t, logit),
                    _ => file,
                })))
            }
            PlannedLearner::Auto(plan) => auto::run::fit(plan, data, encoder, rng, on_step),
            PlannedLearner::NaiveBayes(plan) => {
                let model = naive_bayes::fit(data, encoder, plan)?;
                if !on_step(1) {
                    return Err(LearnError::Cancelled);
                }
                Ok(Model::NaiveBayes(Box::new(NaiveBayesFile::new(
                    encoder,
                    plan,
                    data.n_rows(),
                    model,
                )?)))
            }
            PlannedLearner::LazyBbLocal { params, local } => {
                let debias = local_debias(local, encoder)?;
                let ensemble = super::lazybb::train_local(data, params, &debias, on_step)?;
                Ok(Model::LazyBb(LazyBbModel::new_local(
                    encoder,
                    params,
                    self.defaults_used,
                    &ensemble,
                    local,
                )?))
            }
        }
    }
}

/// Each literal's and the label's debiasing for rows randomized with
/// `local` (`local_dp::LocalDp::literal_rr`), at the epsilons the client's
/// sampler runs (rounded down to 2^-30, `local_dp::randomized_response`).
fn local_debias(
    local: &LocalDp,
    encoder: &Encoder,
) -> Result<super::lazybb::LocalDebias, LearnError> {
    let literals = local
        .literal_rr(encoder)?
        .into_iter()
        .map(|rr| Ok(Debias::new(rr.k, rr.m, effective_epsilon(rr.epsilon)?)))
        .collect::<Result<Vec<_>, PrivacyError>>()?;
    let label = Debias::new(2, 1, effective_epsilon(local.label_epsilon)?);
    let feature_epsilon = effective_epsilon(local.feature_epsilon(encoder.schema()))?;
    let mut columns = Vec::new();
    let mut first = 0usize;
    for domain in Domains::new(encoder.schema())?
        .columns
        .into_iter()
        .flatten()
    {
        let k = domain.values.len() as u32;
        let rr = Debias::new(k, 1, feature_epsilon);
        let n = domain.n_literals as usize;
        columns.push(super::lazybb::ColumnRr {
            literals: first..first + n,
            values: domain
                .values
                .iter()
                .map(|v| v.literals.iter().map(|&l| first as u32 + l).collect())
                .collect(),
            other: rr.offset, // m = 1: offset = q
            scale: rr.scale,
        });
        first += n;
    }
    Ok(super::lazybb::LocalDebias {
        columns,
        literals,
        // g = 2 p_y - 1 = p_y - q_y for binary RR.
        label_factor: label.scale,
        // p_y = q_y + (p_y - q_y), with q_y = offset for m = 1.
        label_keep: label.offset + label.scale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Schema;

    fn facts(task: Task) -> PublicFacts {
        PublicFacts::adult_shaped(32_561, task)
    }

    /// Every learner that plans a central run, with its parameters fixed
    /// where a default would depend on epsilon (so that plans at two
    /// budgets differ only in their noise).
    fn every_central_learner() -> Vec<AlgorithmSpec> {
        let lazybb = LazyBbSpec {
            tau: Some(15),
            lambda: Some(0.25),
            kappa: Some(0.25),
            ..LazyBbSpec::default()
        };
        vec![
            AlgorithmSpec::Lazybb(lazybb),
            AlgorithmSpec::Lazybb(LazyBbSpec {
                weak_learner: Some(WeakLearnerName::TopDown),
                internal_nodes: Some(2),
                ..lazybb
            }),
            AlgorithmSpec::DpEbm(EbmSpec {
                epochs: Some(50),
                ..EbmSpec::default()
            }),
            // A fixed threshold share: the default one follows n epsilon,
            // which a privacy unit changes (the tests compare the same
            // parameters at a row's and a unit's budget).
            AlgorithmSpec::DpLinear(LinearSpec {
                epochs: Some(20),
                threshold_share: Some(0.1),
                ..LinearSpec::default()
            }),
            AlgorithmSpec::Dpboost(DpBoostSpec {
                threshold_share: Some(0.1),
                ..DpBoostSpec::default()
            }),
            AlgorithmSpec::Auto(AutoSpec::default()),
        ]
    }

    fn with_unit(facts: PublicFacts, k: u32) -> PublicFacts {
        PublicFacts {
            unit: Neighbouring::units(k).unwrap(),
            ..facts
        }
    }

    /// Acceptance (issue 28): a unit of one row plans exactly what no unit
    /// does, for every learner, pure and approximate, with private bins
    /// too: the same noise, the same cost, the same everything.
    #[test]
    fn a_unit_of_one_row_plans_exactly_as_rows() {
        let schema = |unit: &str| {
            Schema::from_json(&format!(
                r#"{{"label": {{"column": "y", "positive": "1"}}, "columns": [
                {{"name": "age", "type": "numeric", "min": 17, "max": 90, "bins": 10}},
                {{"name": "b", "type": "boolean"}}]{unit}}}"#
            ))
            .unwrap()
        };
        let plain = PublicFacts::new(&Encoder::new(&schema("")).unwrap(), 5000);
        let one = PublicFacts::new(
            &Encoder::new(&schema(
                r#", "privacy_unit": {"column": "pid", "max_rows": 1}"#,
            ))
            .unwrap(),
            5000,
        );
        assert_eq!(plain, one);
        for spec in every_central_learner() {
            for budget in [
                Budget::new(1.0, 0.0).unwrap(),
                Budget::new(1.0, 1e-6).unwrap(),
            ] {
                for facts in [facts(Task::Binary), plain] {
                    let rows = spec.plan(budget, facts).unwrap();
                    let unit = spec.plan(budget, with_unit(facts, 1)).unwrap();
                    assert_eq!(rows, unit, "{spec:?} {budget:?}");
                    assert_eq!(rows.noise(), unit.noise());
                    assert_eq!(rows.cost, unit.cost);
                }
            }
        }
    }

    /// With units of k rows every learner is the row plan at the per-row
    /// budget group privacy gives (its noise description, bar the note, is
    /// exactly that plan's), and it is charged the per-unit budget asked.
    #[test]
    fn a_unit_of_k_rows_is_the_row_plan_at_the_group_budget() {
        for k in [2, 5] {
            let n = Neighbouring::units(k).unwrap();
            for spec in every_central_learner() {
                for budget in [
                    Budget::new(2.0, 0.0).unwrap(),
                    Budget::new(2.0, 1e-6).unwrap(),
                ] {
                    let facts = facts(Task::Binary);
                    let unit = spec.plan(budget, with_unit(facts, k)).unwrap();
                    let kind = spec.plan(budget, facts).unwrap().cost;
                    let mut row_budget = n.row_budget(budget, &kind).unwrap();
                    let mut rows = spec.plan(row_budget, facts).unwrap();
                    if std::mem::discriminant(&rows.cost) != std::mem::discriminant(&kind) {
                        // auto: one candidate at the smaller budget.
                        row_budget = n.row_budget(budget, &rows.cost).unwrap();
                        rows = spec.plan(row_budget, facts).unwrap();
                    }
                    let mut noise = unit.noise();
                    assert_eq!(noise["privacy_unit"]["max_rows"], k);
                    noise.as_object_mut().unwrap().remove("privacy_unit");
                    assert_eq!(noise, rows.noise(), "{spec:?} {budget:?}");
                    assert_eq!(unit.steps, rows.steps);
                    // What the same learner is charged without a unit (a
                    // pure learner asked for a delta is charged none).
                    let charged = unit.cost.charge();
                    assert!(
                        charged.epsilon() <= budget.epsilon() && charged.delta() <= budget.delta()
                    );
                    if std::mem::discriminant(&rows.cost) == std::mem::discriminant(&kind) {
                        assert_eq!(charged, kind.charge(), "{spec:?} {budget:?}");
                    }
                    assert_eq!(unit.cost, n.unit_cost(rows.cost, budget).unwrap());
                    assert_eq!(unit.unit, n);
                }
            }
        }
    }

    /// The noise grows by the claimed factor, read off each learner's plan:
    /// pure runs (Laplace, report-noisy-max) at epsilon / k, so their
    /// per-round epsilons shrink k times and their scales grow k times;
    /// zCDP runs at rho / k^2, so their standard deviations grow k times.
    #[test]
    fn every_learners_noise_grows_by_the_claimed_factor() {
        let k = 4u32;
        let kf = f64::from(k);
        let close = |a: f64, b: f64, tol: f64| (a / b - 1.0).abs() < tol;
        let facts = facts(Task::Binary);
        let pure = Budget::new(2.0, 0.0).unwrap();
        let approx = Budget::new(2.0, 1e-6).unwrap();
        let specs = every_central_learner();
        let plan = |spec: &AlgorithmSpec, b: Budget, k: u32| {
            spec.plan(b, with_unit(facts, k)).unwrap().noise()
        };
        // LazyBB (both weak learners): the per-round epsilon and eta / k.
        for spec in &specs[..2] {
            let (row, unit) = (plan(spec, pure, 1), plan(spec, pure, k));
            let f = |v: &Value, key: &str| v[key].as_f64().unwrap();
            assert!(close(
                f(&row, "epsilon_per_round"),
                kf * f(&unit, "epsilon_per_round"),
                1e-12
            ));
            let (r, u) = (f(&row, "eta"), f(&unit, "eta"));
            assert!(close(r, kf * u, 1e-6), "eta {r} {u}");
        }
        // DP-EBM: pure, each phase's epsilon / k; zCDP, every sigma x k.
        let (row, unit) = (plan(&specs[2], pure, 1), plan(&specs[2], pure, k));
        for key in ["epsilon_binning", "epsilon_intercept", "epsilon_training"] {
            let (r, u) = (row[key].as_f64().unwrap(), unit[key].as_f64().unwrap());
            assert!(close(r, kf * u, 1e-12), "{key}: {r} {u}");
        }
        for key in ["sigma_binning", "sigma_intercept", "sigma_training"] {
            let (r, u) = (row[key].as_f64().unwrap(), unit[key].as_f64().unwrap());
            assert!(close(u, kf * r, 0.02), "{key}: {r} {u}");
        }
        let (row, unit) = (plan(&specs[2], approx, 1), plan(&specs[2], approx, k));
        for key in ["sigma_binning", "sigma_intercept", "sigma_training"] {
            let (r, u) = (row[key].as_f64().unwrap(), unit[key].as_f64().unwrap());
            assert!(close(u, kf * r, 1e-3), "{key}: {r} {u}");
        }
        assert!(close(
            row["rho"].as_f64().unwrap(),
            kf * kf * unit["rho"].as_f64().unwrap(),
            1e-6
        ));
        // dp-linear: every sigma x k (pure and zCDP).
        for b in [pure, approx] {
            let (row, unit) = (plan(&specs[3], b, 1), plan(&specs[3], b, k));
            for key in ["sigma_curvature", "sigma_gradient"] {
                let (r, u) = (row[key].as_f64().unwrap(), unit[key].as_f64().unwrap());
                assert!(close(u, kf * r, 0.02), "{key}: {r} {u}");
            }
        }
        // DPBoost: every phase's epsilon / k, the leaf scale x k.
        let (row, unit) = (plan(&specs[4], pure, 1), plan(&specs[4], pure, k));
        for key in [
            "epsilon_init",
            "epsilon_ensemble",
            "epsilon_level",
            "epsilon_leaves",
        ] {
            let (r, u) = (row[key].as_f64().unwrap(), unit[key].as_f64().unwrap());
            assert!(close(r, kf * u, 1e-9), "{key}: {r} {u}");
        }
        // auto: every candidate's share of epsilon / k (at a budget where
        // its candidate rule keeps every candidate at both).
        let large = Budget::new(40.0, 0.0).unwrap();
        let (row, unit) = (plan(&specs[5], large, 1), plan(&specs[5], large, k));
        let (rc, uc) = (
            row["candidates"].as_array().unwrap(),
            unit["candidates"].as_array().unwrap(),
        );
        assert_eq!(rc.len(), uc.len());
        for (r, u) in rc.iter().zip(uc) {
            let (r, u) = (
                r["epsilon"].as_f64().unwrap(),
                u["epsilon"].as_f64().unwrap(),
            );
            assert!(close(r, kf * u, 1e-9), "{r} {u}");
        }
    }

    /// A statistical test on the noise actually drawn: DP-EBM's and
    /// dp-linear's release noise at units of k = 2 rows has k^2 = 4 times
    /// the variance of the row plan's, in released units (the grids may
    /// differ). 20000 draws each: the variance ratio's relative standard
    /// error is under 2.5% (Laplace kurtosis 6), so a 12% band is about 5
    /// standard errors, and a wrong factor (2, or 16) is far outside it.
    #[test]
    fn drawn_noise_variance_grows_k_squared() {
        let facts = facts(Task::Binary);
        let specs = every_central_learner();
        let mut rng = NoiseRng::seeded(28);
        let sample_var = |noise: crate::privacy::Noise, grid: f64, rng: &mut NoiseRng| {
            let n = 20_000;
            let xs: Vec<f64> = (0..n)
                .map(|_| noise.draw(rng).unwrap() as f64 / grid)
                .collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0)
        };
        for budget in [
            Budget::new(1.0, 0.0).unwrap(),
            Budget::new(1.0, 1e-6).unwrap(),
        ] {
            for spec in [&specs[2], &specs[3]] {
                let noise_of = |k: u32| {
                    let plan = spec.plan(budget, with_unit(facts, k)).unwrap();
                    match plan.learner {
                        PlannedLearner::Ebm { plan: p, .. } => (p.leaf_noise, f64::from(p.scale)),
                        PlannedLearner::Linear(p) => (p.gradient_noise, f64::from(p.scale)),
                        _ => unreachable!(),
                    }
                };
                let (row, row_grid) = noise_of(1);
                let (unit, unit_grid) = noise_of(2);
                let ratio =
                    sample_var(unit, unit_grid, &mut rng) / sample_var(row, row_grid, &mut rng);
                assert!(
                    (ratio / 4.0 - 1.0).abs() < 0.12,
                    "{spec:?} {budget:?}: {ratio}"
                );
            }
            // DPBoost (pure whatever the budget): its Newton leaves' noisy
            // gradient sums, drawn by the sampler the fit uses.
            let newton_scale = |k: u32| {
                let plan = specs[4].plan(budget, with_unit(facts, k)).unwrap();
                let PlannedLearner::DpBoost(p) = plan.learner else {
                    unreachable!()
                };
                p.newton_noise().0
            };
            let laplace_var = |scale: f64, rng: &mut NoiseRng| {
                let n = 20_000;
                let xs: Vec<f64> = (0..n)
                    .map(|_| crate::learn::dpboost::tree::laplace_units(rng, scale).unwrap() as f64)
                    .collect();
                let mean = xs.iter().sum::<f64>() / n as f64;
                xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0)
            };
            let ratio =
                laplace_var(newton_scale(2), &mut rng) / laplace_var(newton_scale(1), &mut rng);
            assert!(
                (ratio / 4.0 - 1.0).abs() < 0.12,
                "DPBoost {budget:?}: {ratio}"
            );
        }
    }

    /// LazyBB's selection noise, drawn through the report-noisy-max the fit
    /// uses: two candidates whose scores differ by `x = 1 / eta` of the row
    /// plan. The higher one wins with probability `1 - e^{-x/b} (1 + x/(2b))
    /// / 2` for Laplace scale `b`: 0.724 at the row plan's `b = x`, 0.621 at
    /// units of 2 rows (`b = 2x`, the claimed factor), 0.562 if the factor
    /// were 4. 20000 draws: standard error 0.0034; the band 0.02 is 6 of them.
    #[test]
    fn drawn_lazybb_selection_noise_grows_k_times() {
        let facts = facts(Task::Binary);
        let budget = Budget::new(1.0, 0.0).unwrap();
        let spec = &every_central_learner()[0];
        let eta = |k: u32| {
            let plan = spec.plan(budget, with_unit(facts, k)).unwrap();
            let PlannedLearner::LazyBb { calibration, .. } = plan.learner else {
                unreachable!()
            };
            calibration.eta
        };
        let x = 1.0 / eta(1);
        let mut rng = NoiseRng::seeded(29);
        for (k, expected) in [(1, 0.724), (2, 0.621)] {
            let scale = 1.0 / eta(k);
            let wins = (0..20_000)
                .filter(|_| {
                    crate::privacy::laplace::report_noisy_max(&mut rng, &[0.0, x], scale).unwrap()
                        == 1
                })
                .count();
            let p = wins as f64 / 20_000.0;
            assert!((p - expected).abs() < 0.02, "k = {k}: {p} vs {expected}");
        }
    }

    #[test]
    fn lazybb_plan_fills_defaults_and_costs_the_budget() {
        let budget = Budget::new(1.0, 0.0).unwrap();
        let plan = AlgorithmSpec::default()
            .plan(budget, facts(Task::Binary))
            .unwrap();
        assert_eq!(plan.cost, PrivacyCost::Pure { epsilon: 1.0 });
        assert_eq!(plan.cost.charge(), budget);
        assert_eq!(plan.steps, 15);
        assert!(plan.defaults_used);
        let AlgorithmSpec::Lazybb(resolved) = plan.resolved else {
            panic!("a LazyBB plan")
        };
        assert_eq!(resolved.tau, Some(15));
        assert_eq!(resolved.weak_learner, Some(WeakLearnerName::OneRule));
        // The stored form parses back to the same spec.
        let json = serde_json::to_value(plan.resolved).unwrap();
        assert_eq!(json["algorithm"], "lazybb");
        let back: AlgorithmSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back, plan.resolved);

        // With a delta, 15 rounds at epsilon 1 take basic composition
        // (advanced gives each round less): pure, no delta charged.
        let offered = AlgorithmSpec::default()
            .plan(Budget::new(1.0, 1e-6).unwrap(), facts(Task::Binary))
            .unwrap();
        assert_eq!(offered.cost, PrivacyCost::Pure { epsilon: 1.0 });
        // 99 rounds at epsilon 10: advanced composition gives each round
        // about 0.146 against basic's 0.098, and the run spends its delta.
        let approx = AlgorithmSpec::Lazybb(LazyBbSpec {
            tau: Some(99),
            ..LazyBbSpec::default()
        })
        .plan(Budget::new(10.0, 1e-6).unwrap(), facts(Task::Binary))
        .unwrap();
        assert_eq!(
            approx.cost,
            PrivacyCost::Approx {
                epsilon: 10.0,
                delta: 1e-6
            }
        );
    }

    /// On local-DP rows LazyBB + 1-Rule plans a run with no central cost
    /// (the ledger records 0) and no noise; every other learner and the
    /// TopDown weak learner are refused before any charge, naming the one
    /// that works.
    #[test]
    fn local_dp_plans_only_the_debiasing_learner() {
        let local = LocalDp {
            protocol: Protocol::AllColumns,
            epsilon: 4.0,
            label_epsilon: 1.0,
        };
        let facts = facts(Task::Binary).with_local_dp(Some(local));
        let budget = Budget::new(4.0, 0.0).unwrap();
        let plan = AlgorithmSpec::default().plan(budget, facts).unwrap();
        assert_eq!(plan.cost, PrivacyCost::LocalDp { local_epsilon: 4.0 });
        assert_eq!(
            crate::privacy::filter::Loss::of(&plan.cost).basic(),
            (0.0, 0.0)
        );
        assert_eq!(plan.noise()["local_epsilon"], 4.0);
        let top_down = AlgorithmSpec::Lazybb(LazyBbSpec {
            weak_learner: Some(WeakLearnerName::TopDown),
            ..LazyBbSpec::default()
        });
        for spec in [
            top_down,
            AlgorithmSpec::DpEbm(EbmSpec::default()),
            AlgorithmSpec::DpLinear(LinearSpec::default()),
            AlgorithmSpec::Dpboost(DpBoostSpec::default()),
            AlgorithmSpec::Auto(AutoSpec::default()),
        ] {
            let e = spec.plan(budget, facts).unwrap_err().to_string();
            assert!(e.contains("does not debias local-DP data"), "{e}");
            assert!(e.contains(LOCAL_DP_LEARNERS), "{e}");
        }
    }

    #[test]
    fn lazybb_refuses_regression_before_any_charge() {
        let e = AlgorithmSpec::default()
            .plan(
                Budget::new(1.0, 0.0).unwrap(),
                facts(Task::Regression { min: 0.0, max: 1.0 }),
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot do regression"), "{e}");
    }

    #[test]
    fn internal_nodes_only_for_top_down() {
        let spec = AlgorithmSpec::Lazybb(LazyBbSpec {
            internal_nodes: Some(2),
            ..LazyBbSpec::default()
        });
        assert!(
            spec.plan(Budget::new(1.0, 0.0).unwrap(), facts(Task::Binary))
                .is_err()
        );
    }

    /// A regressor's residual clip defaults to a quarter of the public label
    /// range and is stored resolved; a classifier refuses it before any
    /// charge; a given clip is kept.
    #[test]
    fn residual_clip_is_resolved_from_the_label_range() {
        let budget = Budget::new(1.0, 1e-6).unwrap();
        let regression = facts(Task::Regression {
            min: 0.0,
            max: 30.0,
        });
        let resolved = |spec: EbmSpec, facts| match AlgorithmSpec::DpEbm(spec)
            .plan(budget, facts)
            .map(|p| p.resolved)
        {
            Ok(AlgorithmSpec::DpEbm(s)) => Ok(s.residual_clip),
            Ok(other) => panic!("{other:?}"),
            Err(e) => Err(e),
        };
        assert_eq!(resolved(EbmSpec::default(), regression).unwrap(), Some(7.5));
        let given = EbmSpec {
            residual_clip: Some(2.0),
            ..EbmSpec::default()
        };
        assert_eq!(resolved(given, regression).unwrap(), Some(2.0));
        assert_eq!(
            resolved(EbmSpec::default(), facts(Task::Binary)).unwrap(),
            None
        );
        let err = resolved(given, facts(Task::Binary)).unwrap_err();
        assert_eq!(err.field(), "residual_clip");
        let bad = EbmSpec {
            residual_clip: Some(-1.0),
            ..EbmSpec::default()
        };
        assert_eq!(
            resolved(bad, regression).unwrap_err().field(),
            "residual_clip"
        );
    }

    /// Issue 26: every plan refuses label bounds whose derived scales
    /// overflow (a schema stored before upload checked them), before any
    /// charge; DP-EBM a residual clip that overflows its inverse.
    #[test]
    fn overflowing_label_bounds_are_refused_by_every_plan() {
        let budget = Budget::new(1.0, 1e-6).unwrap();
        let huge = facts(Task::Regression {
            min: -1e308,
            max: 1e308,
        });
        for spec in [
            AlgorithmSpec::DpEbm(EbmSpec::default()),
            AlgorithmSpec::DpLinear(LinearSpec::default()),
            AlgorithmSpec::Dpboost(DpBoostSpec::default()),
            AlgorithmSpec::Auto(AutoSpec::default()),
        ] {
            let e = spec.plan(budget, huge).unwrap_err();
            assert!(e.to_string().contains("must lie within"), "{e}");
            assert_eq!(e.field(), "dataset_id");
        }
        let tiny_clip = EbmSpec {
            residual_clip: Some(1e-300),
            ..EbmSpec::default()
        };
        let regression = facts(Task::Regression { min: 0.0, max: 1.0 });
        let e = AlgorithmSpec::DpEbm(tiny_clip)
            .plan(budget, regression)
            .unwrap_err();
        assert_eq!(e.field(), "residual_clip", "{e}");
    }

    /// Issue 26, item 6: DPBoost's plan checks every Laplace scale of the
    /// run before any charge; `init_share` 1e-15 at epsilon 0.01 used to be
    /// charged and then fail on an initial-score scale of 1e17.
    #[test]
    fn dpboost_plan_refuses_an_unusable_initial_score_scale() {
        let spec = |init_share| {
            AlgorithmSpec::Dpboost(DpBoostSpec {
                init_share: Some(init_share),
                ..DpBoostSpec::default()
            })
        };
        let budget = Budget::new(0.01, 0.0).unwrap();
        for task in [Task::Binary, Task::Regression { min: 0.0, max: 1.0 }] {
            let e = spec(1e-15).plan(budget, facts(task)).unwrap_err();
            assert!(e.to_string().contains("out of range"), "{e}");
            assert_eq!(e.field(), "init_share", "{e}");
            spec(0.05).plan(budget, facts(task)).unwrap();
        }
    }

    #[test]
    fn schema_task_reaches_the_plan() {
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "type": "numeric", "min": 0, "max": 30},
                "columns": [{"name": "a", "type": "boolean"}]}"#,
        )
        .unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        assert_eq!(
            PublicFacts::new(&encoder, 10).task,
            Task::Regression {
                min: 0.0,
                max: 30.0
            }
        );
    }
}
