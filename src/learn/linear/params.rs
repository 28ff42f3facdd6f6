//! dp-linear's parameters, their defaults and the plan: the privacy cost and
//! every noise scale, computed from public facts (n, the schema's block
//! layout, the budget) before any row is read.
//!
//! # Mechanism and privacy (substitution neighbours; docs/privacy.md "DP linear models")
//!
//! Training is cyclic block-coordinate descent (Newton steps with a public
//! or noisy diagonal curvature) over the blocks of [`super::features`]. Two
//! kinds of release touch the rows (three with ranged lines):
//!
//! 0. **Line ranges** (issue 25, third round), once, first, when there are
//!    `L > 0` line blocks and `range_share > 0`: for every line column, the
//!    count of rows on each of its interval literals (the column's
//!    histogram on the schema's intervals). A row is on at most one literal
//!    of a column, so substituting it changes at most two counts of each
//!    column by 1: L1 `<= 2L`, L2^2 `<= 2L`. Integers, so no grid. From the
//!    noisy counts, post-processing picks each line's range (the intervals
//!    whose noisy count clears a public threshold,
//!    [`super::features::rescale_line`]) and maps it onto `[-1, 1]`,
//!    clamping the rest: every value stays in `[-1, 1]`, so every later
//!    sensitivity bound below is unchanged (the values are a function of
//!    released numbers and public cut points only). Budget: the part
//!    `range_share` of the total off the top; every other release below
//!    shares the rest `1 - range_share` as described (`epsilon` and `rho`
//!    below then mean that rest).
//! 1. **Curvatures**, once: for every feature of every block, the sum of
//!    `v^2` over the rows whose value in that block is on that feature
//!    (`v` in `[-1, 1]`; a row count for 0/1 literals), each term rounded to
//!    the grid `1/S` (so in `[0, S]` grid units). A row has at most one
//!    feature per block, so substituting it changes a block's vector in at
//!    most two coordinates, each by at most `S`: L1 `<= s_b S` and
//!    L2^2 `<= s_b S^2` with `s_b = 1` for a one-feature block (one
//!    coordinate, changed by at most `S`) and `s_b = 2` otherwise. Over all
//!    blocks `D_c = sum_b s_b`: L1 sensitivity `D_c S`, L2 `sqrt(D_c) S`.
//!    The intercept's curvature is `n`, public: not released.
//!
//!    1b. **Cross sums** of the joint group (the intercept and the `L`
//!    line blocks, `m = L + 1`), once, when `L > 0`: for every pair
//!    `j < k` the sum of `round(S v_j v_k)` (with the intercept, `v = 1`),
//!    each term in `[-S, S]` (both values clamped to `[-1, 1]`).
//!    Substituting a row moves each of the `P = m (m - 1) / 2` sums by at
//!    most `2S`: L1 `<= 2 P S`, L2 `<= 2 sqrt(P) S`. It gets the part
//!    `CROSS_SHARE` of the curvature budget, the diagonal the rest.
//! 2. **Gradient sums**, `E` epochs x `K` blocks (the intercept is a block):
//!    for the block's features, the sum over rows of `round(S r v)`, with the
//!    residual `r` clamped to `[-1, 1]` *after* it is computed (so the bound
//!    holds for the values as computed, whatever the float error), and
//!    `|v| <= 1`. Each term is an integer in `[-S, S]`; substitution changes
//!    one coordinate by at most `2S` or two by at most `S` each: L1 `<= 2S`,
//!    L2 `<= 2S`.
//!
//! Noise, exact and on integers (`privacy::exact`, CKS20):
//!
//! - `delta = 0` (pure DP): discrete Laplace. The curvature release gets
//!   `epsilon_c = share * (1 - x) * epsilon` with scale `D_c S / epsilon_c`
//!   (`x = CROSS_SHARE` with lines, else 0); the cross sums
//!   `epsilon_x = share * x * epsilon`, scale `2 P S / epsilon_x`; each
//!   gradient release gets `epsilon_it = (1 - share) epsilon / (E K)` with
//!   scale `2 S / epsilon_it` (the geometric mechanism: `Delta_1 / scale`-DP,
//!   Ghosh, Roughgarden, Sundararajan 2009; CKS20 §2). Basic (adaptive)
//!   composition: `epsilon_c + epsilon_x + E K epsilon_it = epsilon`
//!   (Dwork and Roth 2014, Thm 3.16).
//! - `delta > 0`: discrete Gaussian, accounted in zCDP. `rho` is the largest
//!   whose conversion meets `(epsilon, delta)` (`privacy::zcdp`); the
//!   curvatures get `rho_c = share * (1 - x) * rho`, variance
//!   `D_c S^2 / (2 rho_c)`; the cross sums `rho_x = share * x * rho`,
//!   variance `4 P S^2 / (2 rho_x)`;
//!   each gradient release `rho_it = (1 - share) rho / (E K)`, variance
//!   `(2S)^2 / (2 rho_it)` (CKS20 Thm 4: `Delta_2^2 / (2 sigma^2)`-zCDP).
//!   zCDP composes additively and adaptively (Bun and Steinke 2016, Lemma
//!   2.3): `rho_c + rho_x + E K rho_it = rho`.
//!
//! The range counts: discrete Laplace of scale `2L / epsilon_r` with
//! `epsilon_r = range_share x epsilon` (pure DP), or the discrete Gaussian
//! of variance `2L / (2 rho_r) = L / rho_r` with `rho_r = range_share x rho`
//! (zCDP); both compose with the rest as above (`epsilon_r` plus the rest is
//! `epsilon`, `rho_r` plus the rest is `rho`).
//!
//! Every variance and scale is rounded *up* to a rational, so the noise is
//! at least what the proof needs. Everything after the noisy sums (the
//! Newton step, the residual update, the final model) is post-processing.

use serde::{Deserialize, Serialize};

use super::features::LinearShape;
use super::objective::{self, ObjectivePlan};
use super::output::{self, OutputPlan};
use super::threshold::{self, ThresholdPlan};
use crate::data::Task;
use crate::learn::LearnError;
use crate::privacy::{Budget, PrivacyCost, zcdp};

/// Largest number of epochs accepted.
pub const MAX_EPOCHS: u32 = 1_000;
/// The exact discrete Gaussian takes variances below 2^30
/// (`privacy::exact`); plans stay below 2^29 so the rational rounded up still
/// fits (as DP-EBM's plan does).
const MAX_VARIANCE: f64 = (1u64 << 29) as f64;
/// The discrete Laplace takes a scale numerator below 2^64.
const MAX_LAPLACE_SCALE: f64 = (1u64 << 62) as f64;
/// The grid of the pure-DP (Laplace) releases: residuals to `2^-16`, well
/// below the noise and the float error of `sigmoid`.
const LAPLACE_GRID: u32 = 1 << 16;
/// The finest Gaussian grid (the grid is coarsened until the variance fits
/// the exact sampler).
const MAX_GAUSSIAN_GRID: f64 = (1u32 << 20) as f64;

/// The part of the curvature share that goes to the cross sums of the joint
/// group when there are lines (the rest to the diagonal curvatures).
pub const CROSS_SHARE: f64 = 0.5;

/// How a numeric column with interval literals enters the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumericFeatures {
    /// One coefficient per interval literal (a step function of the value).
    Intervals,
    /// One coefficient on the value, taken as its interval's midpoint scaled
    /// by the schema's public bounds onto `[-1, 1]` (a straight line; fewer
    /// coefficients, so less noise on small data).
    Linear,
    /// Both: the line, stepped jointly with the intercept and the other
    /// lines, and one correction per interval in a block of its own.
    Both,
}

impl NumericFeatures {
    /// The name in requests and files.
    pub fn as_str(&self) -> &'static str {
        match self {
            NumericFeatures::Intervals => "intervals",
            NumericFeatures::Linear => "linear",
            NumericFeatures::Both => "both",
        }
    }
}

/// How dp-linear trains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LinearSolver {
    /// Cyclic block Newton steps on noisy sums, every epoch (this module's
    /// docs): the noise is spent over the passes.
    #[default]
    BlockDescent,
    /// Noiseless full-batch gradient descent on a regularised objective,
    /// then the coefficients released once with noise (`output.rs`).
    OutputPerturbation,
    /// A hidden random term added to the regularised objective, its
    /// minimiser approximated and released once with noise (`objective.rs`;
    /// binary classification, pure DP).
    ObjectivePerturbation,
}

impl LinearSolver {
    /// The name in requests and files.
    pub fn as_str(&self) -> &'static str {
        match self {
            LinearSolver::BlockDescent => "block-descent",
            LinearSolver::OutputPerturbation => "output-perturbation",
            LinearSolver::ObjectivePerturbation => "objective-perturbation",
        }
    }

    /// Whether the solver releases the coefficients once (output or
    /// objective perturbation) rather than noisy sums every epoch.
    pub fn releases_once(&self) -> bool {
        *self != LinearSolver::BlockDescent
    }
}

/// dp-linear's parameters as a request gives them (unset: the defaults).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LinearSpec {
    /// Cyclic passes over the blocks (default: [`default_epochs`], a public
    /// function of the task, n, the budget and the block count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u32>,
    /// Step size of each block's Newton step (default: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_rate: Option<f64>,
    /// Ridge penalty in units of the noise standard deviation of one
    /// gradient sum (default: 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ridge: Option<f64>,
    /// Share of the budget spent on the curvature release (default: 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curvature_share: Option<f64>,
    /// Numeric columns as interval steps or as straight lines (default:
    /// [`default_numeric_features_for`]: both for a binary classifier with
    /// delta > 0, intervals for classification otherwise, linear for
    /// regression).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numeric_features: Option<NumericFeatures>,
    /// Share of the budget for the private range of each line (numeric
    /// columns as lines), taken before every other release; 0: the lines
    /// use the schema's public bounds (default: [`default_range_share`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range_share: Option<f64>,
    /// The solver (default: [`DEFAULT_SOLVER`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solver: Option<LinearSolver>,
    /// The output-perturbation solver's regulariser `lambda` (default:
    /// [`output::default_regularization`]); not a parameter of block
    /// descent, whose ridge is `ridge`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regularization: Option<f64>,
    /// A binary classifier's share of the budget for its decision threshold
    /// (`threshold`), 0 for none (default: [`threshold::default_share`], a
    /// public function of n and epsilon); other tasks take none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_share: Option<f64>,
}

/// Checked parameters (every default filled in).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearParams {
    /// Epochs `E`.
    pub epochs: u32,
    /// Step size.
    pub learning_rate: f64,
    /// Ridge multiplier.
    pub ridge: f64,
    /// Share of the budget for the curvatures.
    pub curvature_share: f64,
    /// How numeric interval columns enter.
    pub numeric_features: NumericFeatures,
    /// Share of the budget for the lines' private ranges (0: public bounds;
    /// files before issue 25's third round have none).
    #[serde(default)]
    pub range_share: f64,
    /// The solver (files before issue 25's fourth round: block descent).
    #[serde(default)]
    pub solver: LinearSolver,
    /// The output-perturbation solver's `lambda` (0 for block descent).
    #[serde(default)]
    pub regularization: f64,
    /// A binary classifier's share of the budget for its decision threshold
    /// (files before issue 25's threshold: none).
    #[serde(default)]
    pub threshold_share: f64,
}

impl LinearSpec {
    /// Fill the defaults for `task` (public) and check every value; the
    /// message names the field in parentheses (as the API maps it).
    ///
    /// The defaults are a data-independent rule (they depend on the task
    /// only), chosen on the shipped Adult and Abalone sets and documented in
    /// docs/accuracy.md with the measurements behind them.
    pub fn check(&self, task: Task) -> Result<LinearParams, LearnError> {
        if let Some(solver) = self.solver.filter(LinearSolver::releases_once) {
            return self.check_output(task, solver);
        }
        if self.regularization.is_some() {
            return Err(LearnError::InvalidParameter(
                "regularization (regularization) is a parameter of the output-perturbation and objective-perturbation solvers; block descent's ridge is ridge".into(),
            ));
        }
        let p = LinearParams {
            // Task-dependent, so still data-independent: on Abalone the
            // second pass over nearly collinear numeric columns added noise
            // (docs/accuracy.md, dp-linear grid); on Adult it helped.
            epochs: self.epochs.unwrap_or(match task {
                Task::Binary | Task::Multiclass { .. } => 2,
                Task::Regression { .. } => 1,
            }),
            learning_rate: self.learning_rate.unwrap_or(1.0),
            ridge: self.ridge.unwrap_or(4.0),
            curvature_share: self.curvature_share.unwrap_or(0.2),
            numeric_features: self
                .numeric_features
                .unwrap_or(default_numeric_features(task)),
            range_share: 0.0,
            solver: LinearSolver::BlockDescent,
            regularization: 0.0,
            threshold_share: self.threshold_share.unwrap_or(0.0),
        };
        let p = LinearParams {
            range_share: self
                .range_share
                .unwrap_or(default_range_share(task, p.numeric_features)),
            ..p
        };
        let bad = |m: String| Err(LearnError::InvalidParameter(m));
        if !(1..=MAX_EPOCHS).contains(&p.epochs) {
            return bad(format!(
                "epochs (epochs) must be between 1 and {MAX_EPOCHS}, got {}",
                p.epochs
            ));
        }
        // Above 2 a Newton step on the curvature bound overshoots even
        // without noise.
        if !(p.learning_rate > 0.0 && p.learning_rate <= 2.0) {
            return bad(format!(
                "learning rate (learning_rate) must be in (0, 2], got {}",
                p.learning_rate
            ));
        }
        if !(p.ridge > 0.0 && p.ridge <= 1e6) {
            return bad(format!(
                "ridge (ridge) must be in (0, 1e6], got {}",
                p.ridge
            ));
        }
        if !(p.curvature_share > 0.0 && p.curvature_share < 1.0) {
            return bad(format!(
                "curvature share (curvature_share) must be in (0, 1), got {}",
                p.curvature_share
            ));
        }
        if !(0.0..1.0).contains(&p.range_share) {
            return bad(format!(
                "range share (range_share) must be in [0, 1), got {}",
                p.range_share
            ));
        }
        Ok(p)
    }

    /// [`Self::check`] for the solvers that release once (output and
    /// objective perturbation): block descent's own parameters are refused;
    /// `epochs` (the gradient steps) and `regularization` left at 0 mean
    /// "the default for the budget and n" ([`LinearParams::plan_task`] fills
    /// them).
    fn check_output(&self, task: Task, solver: LinearSolver) -> Result<LinearParams, LearnError> {
        let name = solver.as_str();
        let max_steps = match solver {
            LinearSolver::ObjectivePerturbation => {
                if let Task::Regression { .. } = task {
                    return Err(LearnError::InvalidParameter(
                        "solver (solver): objective-perturbation is for classification; use block-descent or output-perturbation for regression".into(),
                    ));
                }
                objective::MAX_STEPS
            }
            _ => {
                output::Loss::of(task)?;
                output::MAX_STEPS
            }
        };
        let given = [
            ("learning_rate", self.learning_rate.is_some()),
            ("ridge", self.ridge.is_some()),
            ("curvature_share", self.curvature_share.is_some()),
        ];
        if let Some((name, _)) = given.iter().find(|(_, g)| *g) {
            return Err(LearnError::InvalidParameter(format!(
                "{name} ({name}) is a parameter of the block-descent solver, not of {}",
                solver.as_str()
            )));
        }
        let p = LinearParams {
            epochs: self.epochs.unwrap_or(0),
            learning_rate: 1.0,
            ridge: 4.0,
            curvature_share: 0.2,
            numeric_features: self.numeric_features.unwrap_or(NumericFeatures::Linear),
            range_share: self.range_share.unwrap_or(output::RANGE_SHARE),
            solver,
            regularization: self.regularization.unwrap_or(0.0),
            threshold_share: self.threshold_share.unwrap_or(0.0),
        };
        if self.epochs.is_some() && !(1..=max_steps).contains(&p.epochs) {
            return Err(LearnError::InvalidParameter(format!(
                "epochs (epochs): the {name} solver takes between 1 and {max_steps} gradient steps, got {}",
                p.epochs
            )));
        }
        if !(0.0..1.0).contains(&p.range_share) {
            return Err(LearnError::InvalidParameter(format!(
                "range share (range_share) must be in [0, 1), got {}",
                p.range_share
            )));
        }
        if self.regularization.is_some()
            && !(p.regularization > 0.0 && p.regularization <= output::MAX_REGULARIZATION)
        {
            return Err(LearnError::InvalidParameter(format!(
                "regularization (regularization) must be in (0, {}], got {}",
                output::MAX_REGULARIZATION,
                p.regularization
            )));
        }
        Ok(p)
    }

    /// Whether any parameter was given.
    pub fn any_given(&self) -> bool {
        self.epochs.is_some()
            || self.learning_rate.is_some()
            || self.ridge.is_some()
            || self.curvature_share.is_some()
            || self.numeric_features.is_some()
            || self.range_share.is_some()
            || self.solver.is_some()
            || self.regularization.is_some()
            || self.threshold_share.is_some()
    }
}

impl LinearParams {
    /// The resolved parameters as a spec (what a job stores).
    pub fn to_spec(&self) -> LinearSpec {
        if self.solver.releases_once() {
            return LinearSpec {
                epochs: Some(self.epochs),
                numeric_features: Some(self.numeric_features),
                range_share: Some(self.range_share),
                solver: Some(self.solver),
                regularization: Some(self.regularization),
                threshold_share: Some(self.threshold_share),
                ..LinearSpec::default()
            };
        }
        LinearSpec {
            epochs: Some(self.epochs),
            learning_rate: Some(self.learning_rate),
            ridge: Some(self.ridge),
            curvature_share: Some(self.curvature_share),
            numeric_features: Some(self.numeric_features),
            range_share: Some(self.range_share),
            solver: Some(self.solver),
            regularization: None,
            threshold_share: Some(self.threshold_share),
        }
    }
}

/// The default numeric treatment for `task` (public).
pub fn default_numeric_features(task: Task) -> NumericFeatures {
    match task {
        Task::Binary | Task::Multiclass { .. } => NumericFeatures::Intervals,
        Task::Regression { .. } => NumericFeatures::Linear,
    }
}

/// The default numeric treatment for `task` and the budget (public; fitted
/// leave-one-dataset-out on the suite, docs/accuracy.md "dp-linear", issue
/// 25 third round): a binary classifier with `delta > 0` takes both (ranged
/// lines and interval corrections: in zCDP the cross sums' noise grows with
/// `sqrt(P)`), with `delta = 0` intervals (the Laplace noise of the cross
/// sums grows with `P`, and lines lost on every held-out fit); otherwise
/// [`default_numeric_features`].
pub fn default_numeric_features_for(task: Task, budget: Budget) -> NumericFeatures {
    match task {
        Task::Binary if budget.delta() > 0.0 => NumericFeatures::Both,
        _ => default_numeric_features(task),
    }
}

/// The default share of the budget for the lines' private ranges: 0 without
/// lines (intervals), else [`RANGE_SHARE`].
pub fn default_range_share(task: Task, mode: NumericFeatures) -> f64 {
    let _ = task;
    match mode {
        NumericFeatures::Intervals => 0.0,
        NumericFeatures::Linear | NumericFeatures::Both => RANGE_SHARE,
    }
}

/// The default range share with lines.
pub const RANGE_SHARE: f64 = 0.1;

/// The default epochs' noise target for classification: the noise standard
/// deviation of one gradient sum at most this fraction of `n` (fitted
/// leave-one-dataset-out on the suite, docs/accuracy.md "dp-linear").
pub const EPOCH_NOISE_RATIO: f64 = 0.003;
/// The same for regression.
pub const REGRESSION_EPOCH_NOISE_RATIO: f64 = 0.01;
/// The most epochs the default rule gives.
pub const MAX_DEFAULT_EPOCHS: u32 = 8;

/// The default number of epochs: as many passes as keep the noise of one
/// gradient sum below a fraction `t` of `n` ([`EPOCH_NOISE_RATIO`], or
/// [`REGRESSION_EPOCH_NOISE_RATIO`]), rounded down to a power of two (the
/// grid the rule was fitted on) between 1 and [`MAX_DEFAULT_EPOCHS`]. It
/// reads public facts only: the task, `n`, the budget and the block count.
///
/// The standard deviation of one gradient sum (residual units) with `E`
/// epochs over `K` blocks and the share `c` for the curvatures is
/// `sqrt(2) 2 E K / ((1 - c) epsilon)` with delta = 0 (discrete Laplace) and
/// `sqrt(2 E K / ((1 - c) rho))` in zCDP; solving `sd <= t n` for `E`:
///
/// ```text
/// E = t (1 - c) epsilon n / (2 sqrt(2) K)        (delta = 0)
/// E = t^2 n^2 (1 - c) rho / (2 K)                (delta > 0)
/// ```
pub fn default_epochs(
    task: Task,
    budget: Budget,
    n_rows: usize,
    blocks: usize,
    curvature_share: f64,
) -> Result<u32, LearnError> {
    let t = match task {
        Task::Binary | Task::Multiclass { .. } => EPOCH_NOISE_RATIO,
        Task::Regression { .. } => REGRESSION_EPOCH_NOISE_RATIO,
    };
    let (n, k) = (n_rows as f64, blocks.max(1) as f64);
    let e = if budget.delta() == 0.0 {
        t * (1.0 - curvature_share) * budget.epsilon() * n / (2.0 * 2f64.sqrt() * k)
    } else {
        let rho = zcdp::rho_for(budget.epsilon(), budget.delta())?;
        t * t * n * n * (1.0 - curvature_share) * rho / (2.0 * k)
    };
    // NaN or below 1 (tiny budgets) gives 1; `as` saturates.
    let e = (e.floor() as u32).clamp(1, MAX_DEFAULT_EPOCHS);
    Ok(1 << e.ilog2())
}

impl LinearSpec {
    /// Check the parameters and plan the run: [`LinearSpec::check`], with
    /// the epochs (when not given) from [`default_epochs`] for the budget,
    /// `n_rows` and the layout's block count, all public.
    pub fn plan_for(
        &self,
        task: Task,
        budget: Budget,
        n_rows: usize,
        shape: &LinearShape,
    ) -> Result<LinearPlan, LearnError> {
        let share = match task {
            Task::Binary => self
                .threshold_share
                .unwrap_or_else(|| threshold::default_share(n_rows, budget.epsilon())),
            Task::Regression { .. } | Task::Multiclass { .. } => {
                if self.threshold_share.is_some_and(|s| s > 0.0) {
                    return Err(LearnError::InvalidParameter(
                        "threshold share (threshold_share): only a binary classifier has a decision threshold; give 0 or leave it out".into(),
                    ));
                }
                0.0
            }
        };
        if !(0.0..=threshold::MAX_THRESHOLD_SHARE).contains(&share) {
            return Err(LearnError::InvalidParameter(format!(
                "threshold share (threshold_share) must be in [0, {}], got {share}",
                threshold::MAX_THRESHOLD_SHARE
            )));
        }
        let spec = LinearSpec {
            threshold_share: Some(share),
            ..*self
        };
        if share == 0.0 {
            return spec.plan_fit(task, budget, n_rows, shape);
        }
        // The threshold's part first; the fit is planned (defaults and all)
        // at the rest, and every scale is checked before any charge.
        // dp-linear's accounting follows delta: pure at 0, zCDP above.
        let (fit_budget, t) = if budget.delta() == 0.0 {
            threshold::split_pure(budget.epsilon(), share, n_rows)?
        } else {
            threshold::split_zcdp(budget, share, n_rows)?
        };
        let mut plan = spec.plan_fit(task, fit_budget, n_rows, shape)?;
        threshold::check_fit_rho(&t, plan.rho)?;
        plan.threshold = Some(t);
        Ok(plan)
    }

    /// [`Self::plan_for`] without the threshold: the fit at `budget`.
    fn plan_fit(
        &self,
        task: Task,
        budget: Budget,
        n_rows: usize,
        shape: &LinearShape,
    ) -> Result<LinearPlan, LearnError> {
        let solver = self.solver.unwrap_or(DEFAULT_SOLVER);
        let spec = LinearSpec {
            solver: Some(solver),
            ..*self
        };
        let mut params = spec.check(task)?;
        if solver.releases_once() {
            return params.plan_task(budget, n_rows, shape, task);
        }
        if self.numeric_features.is_none() {
            params.numeric_features = default_numeric_features_for(task, budget);
            if self.range_share.is_none() {
                params.range_share = default_range_share(task, params.numeric_features);
            }
        }
        if self.epochs.is_none() {
            let (blocks, _) = shape.of(params.numeric_features);
            // The gradient releases' part of the whole budget.
            let ranged = shape.lines_of(params.numeric_features) > 0 && params.range_share > 0.0;
            let rest = if ranged {
                1.0 - params.range_share
            } else {
                1.0
            };
            let share = 1.0 - (1.0 - params.curvature_share) * rest;
            params.epochs = default_epochs(task, budget, n_rows, blocks, share)?;
        }
        params.plan_classes(budget, n_rows, shape, task.n_classes().unwrap_or(0))
    }
}

/// The default solver: block descent, for every task and budget. Output
/// perturbation was measured leave-one-dataset-out on the suite's binary
/// sets at delta = 0 (docs/accuracy.md, "dp-linear by output
/// perturbation"): it matched diffprivlib in more cells (14 of 21 against
/// 12) but lost 3 points of accuracy on average to block descent (up to 18
/// on spambase and 12 on phishing), and no public rule on the suite's facts
/// picked the better of the two; it is available as
/// `"solver": "output-perturbation"`. Objective perturbation (binary,
/// delta = 0) matched diffprivlib in 17 of 21 cells with the same mean
/// accuracy as block descent, but as the default it made `auto`'s
/// held-out rule worse and it draws a hidden vector in floating point
/// (docs/accuracy.md, "dp-linear by objective perturbation"); it is
/// available as `"solver": "objective-perturbation"`.
pub const DEFAULT_SOLVER: LinearSolver = LinearSolver::BlockDescent;

/// The noise of one kind of release (grid units): the shared exact-noise
/// type.
pub use crate::privacy::Noise;

/// The standard deviation dp-linear *describes* a release with (grid
/// units), which also sets the ridge: for Laplace the continuous one's,
/// `sqrt(2) b` (the discrete one's is slightly below); a description only,
/// the noise drawn is the exact one.
fn described_std(noise: &Noise) -> f64 {
    match *noise {
        Noise::Laplace { num, den } => 2f64.sqrt() * num as f64 / den as f64,
        Noise::Gaussian { num, den } => (num as f64 / den as f64).sqrt(),
    }
}

/// Everything public about a dp-linear run, computed before any row is read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinearPlan {
    /// The checked parameters.
    pub params: LinearParams,
    /// Training rows (public under substitution).
    pub n_rows: usize,
    /// Blocks `K`, the intercept included.
    pub blocks: usize,
    /// `D_c`: the curvature release's sensitivity in units of the grid step
    /// (L1 `D_c S`, L2 `sqrt(D_c) S`).
    pub curvature_sensitivity: usize,
    /// The budget the run is charged.
    pub budget: Budget,
    /// Line blocks (numeric columns as lines): with the intercept, the group
    /// stepped jointly.
    #[serde(default)]
    pub lines: usize,
    /// `P = (lines + 1) lines / 2`: the released cross sums of the group.
    #[serde(default)]
    pub cross_pairs: usize,
    /// Total rho (zCDP runs only).
    pub rho: Option<f64>,
    /// Fixed-point grid: `S` units per unit of residual or curvature.
    pub scale: u32,
    /// Noise on each curvature (grid units).
    pub curvature_noise: Noise,
    /// Noise on each cross sum of the joint group (grid units; none without
    /// lines).
    #[serde(default)]
    pub cross_noise: Option<Noise>,
    /// Noise on each gradient sum (grid units).
    pub gradient_noise: Noise,
    /// The ridge penalty `lambda` in curvature units (rows): `ridge` times
    /// the gradient noise's standard deviation in residual units.
    pub lambda: f64,
    /// Multiclass: the number of classes `k` (public: the schema lists
    /// them); 0 for a binary classifier or a regressor. Each gradient
    /// release is then `k` vectors of sums, one per class (softmax
    /// gradients), with the sensitivity of [`GRADIENT_L1_MULTICLASS`] and
    /// [`GRADIENT_L2_SQ_MULTICLASS`].
    #[serde(default)]
    pub classes: usize,
    /// Lines whose range is released (item 0): `lines` when the range share
    /// is positive, else 0.
    #[serde(default)]
    pub ranged_lines: usize,
    /// Noise on each range count (rows; none without ranged lines).
    #[serde(default)]
    pub range_noise: Option<Noise>,
    /// The output-perturbation solver's plan (none for block descent, whose
    /// noises are the fields above). With it, `gradient_noise` and
    /// `curvature_noise` are its coefficient noise and `scale` is 1: nothing
    /// else is released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputPlan>,
    /// The objective-perturbation solver's plan (as `output`; none for the
    /// other solvers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<ObjectivePlan>,
    /// A binary classifier's decision threshold, released after the fit
    /// (`threshold`): with it, `budget` (and `rho`) are the fit's part and
    /// the run's whole charge is the threshold plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<ThresholdPlan>,
}

/// A line's interval is inside its private range when its noisy count
/// clears a threshold that an empty interval's noise exceeds, on any of the
/// line's `B` intervals, with probability at most this (a public error
/// rate, not fitted): `b ln(B / (2 alpha))` for the discrete Laplace of scale
/// `b`, `sigma sqrt(2 ln(B / (2 alpha)))` for the discrete Gaussian (the
/// tails `P(X >= t) <= e^(-t/b) / 2` and `<= e^(-t^2 / (2 sigma^2)) / 2`,
/// and a union bound over the `B` intervals).
pub const RANGE_FALSE_RATE: f64 = 0.1;
/// ... and at least this fraction of `n` (public): sparse tails are clamped
/// to the range's edge rather than stretching it (not fitted).
pub const RANGE_MIN_FRACTION: f64 = 0.005;

/// The L1 sensitivity of one multiclass gradient release in grid steps
/// `S`: a row's terms over the k classes are integers `q_c` with
/// `sum_c |q_c| <= 2S` (`fit::softmax_terms`), so substituting it moves
/// the release by at most `4S` in L1 (binary: `2S`).
pub const GRADIENT_L1_MULTICLASS: f64 = 4.0;

/// The squared L2 sensitivity of one multiclass gradient release in
/// squared grid steps `S^2`: a row's terms have `||q||_2^2 <= 2 S^2`
/// (`q_y^2 <= S^2`, the others' squares at most `(sum |q_c|)^2 <= S^2`), so
/// substituting it moves the release by at most `2 sqrt(2) S` in L2 (same
/// feature: `||q|| + ||q'||`; two features: `sqrt(2 + 2) S`), squared 8
/// (binary: `2S`, squared 4). Whatever k.
pub const GRADIENT_L2_SQ_MULTICLASS: f64 = 8.0;

/// `x` as a rational `num / den >= x` with both below 2^30 (`den` a power of
/// two), for the discrete Gaussian.
fn variance_up(x: f64) -> Option<(u128, u128)> {
    if !(x.is_finite() && x > 0.0 && x < MAX_VARIANCE) {
        return None;
    }
    let mut den: u128 = 1;
    while den < (1 << 29) && x * ((den * 2) as f64) < MAX_VARIANCE {
        den *= 2;
    }
    let num = (x * den as f64).ceil() as u128;
    (num < (1 << 30)).then_some((num.max(1), den))
}

/// A Laplace scale as `num / 1 >= x` (the grid is fine enough that rounding
/// the scale up to an integer number of grid steps costs nothing visible).
fn scale_up(x: f64) -> Option<(u128, u128)> {
    (x.is_finite() && x > 0.0 && x < MAX_LAPLACE_SCALE).then(|| ((x.ceil() as u128).max(1), 1))
}

impl LinearParams {
    /// The plan for `budget` on `n_rows` rows with the schema's `shape`
    /// (module docs: the sensitivity argument and the calibration).
    pub fn plan(
        &self,
        budget: Budget,
        n_rows: usize,
        shape: &LinearShape,
    ) -> Result<LinearPlan, LearnError> {
        self.plan_classes(budget, n_rows, shape, 0)
    }

    /// The plan for `task` (public): [`Self::plan_classes`] for block
    /// descent; for output perturbation, [`output::plan`] with the steps and
    /// the regulariser left at 0 filled by their defaults
    /// ([`output::default_steps`], [`output::default_regularization`]).
    pub fn plan_task(
        &self,
        budget: Budget,
        n_rows: usize,
        shape: &LinearShape,
        task: Task,
    ) -> Result<LinearPlan, LearnError> {
        if self.solver == LinearSolver::BlockDescent {
            return self.plan_classes(budget, n_rows, shape, task.n_classes().unwrap_or(0));
        }
        let (blocks, _) = shape.of(self.numeric_features);
        let dimension = shape.dimension_of(self.numeric_features);
        let lines = shape.lines_of(self.numeric_features);
        let mut params = *self;
        // Item 0 (the lines' private ranges), as for block descent: the
        // part `range_share` of the budget off the top, the rest to the one
        // release of the coefficients.
        let ranged = if params.range_share > 0.0 { lines } else { 0 };
        let rest = if ranged > 0 {
            1.0 - params.range_share
        } else {
            1.0
        };
        let too_noisy = || {
            LearnError::InvalidParameter(format!(
                "epsilon (epsilon): the noise of the ranges for epsilon = {} is too large to sample exactly; use a larger epsilon or range_share",
                budget.epsilon()
            ))
        };
        let range_noise = match (ranged, budget.delta() == 0.0) {
            (0, _) => None,
            (_, true) => {
                let eps_r = params.range_share * budget.epsilon();
                let (num, den) = scale_up(2.0 * ranged as f64 / eps_r).ok_or_else(too_noisy)?;
                Some(Noise::Laplace { num, den })
            }
            (_, false) => {
                let rho_r = params.range_share * zcdp::rho_for(budget.epsilon(), budget.delta())?;
                let (num, den) = variance_up(ranged as f64 / rho_r).ok_or_else(too_noisy)?;
                Some(Noise::Gaussian { num, den })
            }
        };
        // Both one-release solvers' plans: nothing but the ranges and the
        // coefficients' one noise.
        let one_release = |params: LinearParams,
                           noise: Noise,
                           lambda: f64,
                           output: Option<OutputPlan>,
                           objective: Option<ObjectivePlan>|
         -> Result<LinearPlan, LearnError> {
            Ok(LinearPlan {
                params,
                n_rows,
                blocks,
                curvature_sensitivity: 0,
                budget,
                lines,
                cross_pairs: 0,
                rho: if budget.delta() == 0.0 {
                    None
                } else {
                    Some(zcdp::rho_for(budget.epsilon(), budget.delta())?)
                },
                scale: 1,
                curvature_noise: noise,
                cross_noise: None,
                gradient_noise: noise,
                lambda,
                classes: task.n_classes().unwrap_or(0),
                ranged_lines: ranged,
                range_noise,
                output,
                objective,
                threshold: None,
            })
        };
        if self.solver == LinearSolver::ObjectivePerturbation {
            if params.regularization == 0.0 {
                params.regularization =
                    objective::default_regularization(budget, n_rows, dimension);
            }
            let op = objective::plan(
                budget,
                rest,
                n_rows,
                blocks,
                dimension,
                task,
                params.regularization,
            )?;
            if params.epochs == 0 {
                params.epochs = op.steps;
            } else if params.epochs != op.steps {
                return Err(LearnError::InvalidParameter(format!(
                    "epochs (epochs): the objective-perturbation solver takes the {} steps its accuracy needs (a public function of n, d, epsilon and the regularization); leave epochs unset",
                    op.steps
                )));
            }
            // Pure DP only: the plan refused a delta.
            return one_release(params, op.noise, op.lambda, None, Some(op));
        }
        let loss = output::Loss::of(task)?;
        if params.regularization == 0.0 {
            params.regularization =
                output::default_regularization(budget, rest, n_rows, dimension)?;
        }
        if params.epochs == 0 {
            params.epochs = output::default_steps(loss, params.regularization);
        }
        let op = output::plan(
            budget,
            rest,
            n_rows,
            blocks,
            dimension,
            task,
            params.regularization,
            params.epochs,
        )?;
        one_release(params, op.noise, op.lambda, Some(op), None)
    }

    /// [`Self::plan`] for a multiclass label of `classes` classes (0: binary
    /// or regression). Only the gradient noise differs: its sensitivity is
    /// [`GRADIENT_L1_MULTICLASS`] S (pure DP) or the square root of
    /// [`GRADIENT_L2_SQ_MULTICLASS`] S (zCDP) instead of 2S, whatever k.
    pub fn plan_classes(
        &self,
        budget: Budget,
        n_rows: usize,
        shape: &LinearShape,
        classes: usize,
    ) -> Result<LinearPlan, LearnError> {
        // The gradient release's L1 and squared L2 sensitivity in grid steps.
        if self.solver.releases_once() {
            return Err(LearnError::InvalidParameter(format!(
                "the {} solver is planned with its task (plan_task)",
                self.solver.as_str()
            )));
        }
        let (g_l1, g_l2_sq) = if classes > 0 {
            (GRADIENT_L1_MULTICLASS, GRADIENT_L2_SQ_MULTICLASS)
        } else {
            (2.0, 4.0)
        };
        if n_rows == 0 {
            return Err(LearnError::NoRows);
        }
        let (blocks, d_c) = shape.of(self.numeric_features);
        let lines = shape.lines_of(self.numeric_features);
        // Item 0: the ranged lines take `range_share` off the top.
        let ranged = if self.range_share > 0.0 { lines } else { 0 };
        let rest = if ranged > 0 {
            1.0 - self.range_share
        } else {
            1.0
        };
        // Pairs of the joint group (intercept and lines): the cross sums.
        let pairs = (lines + 1) * lines / 2;
        let k = blocks as f64;
        let e = f64::from(self.epochs);
        let share = self.curvature_share;
        // The curvature share, split between the diagonal and (when there
        // are lines) the cross sums.
        let cross = if pairs > 0 { CROSS_SHARE } else { 0.0 };
        let too_noisy = || {
            LearnError::InvalidParameter(format!(
                "epsilon (epsilon): the noise for epsilon = {} with {} epochs over {blocks} blocks is too large to sample exactly; use a larger epsilon or fewer epochs",
                budget.epsilon(),
                self.epochs
            ))
        };
        // D_c = 0 (a schema with no feature): the curvature release is empty;
        // its sensitivity is taken as 1 so the formulas stay defined (and
        // likewise P = 0).
        let d_c_f = (d_c.max(1)) as f64;
        let p_f = (pairs.max(1)) as f64;
        let r_f = ranged as f64;
        let (rho, scale, curvature_noise, cross_noise, gradient_noise, range_noise) =
            if budget.delta() == 0.0 {
                let s = f64::from(LAPLACE_GRID);
                let eps = rest * budget.epsilon();
                let eps_c = share * (1.0 - cross) * eps;
                let eps_x = share * cross * eps;
                let eps_it = (1.0 - share) * eps / (e * k);
                // Item 0: L1 sensitivity 2L over the counts (rows, no grid).
                let range_noise = if ranged > 0 {
                    let eps_r = self.range_share * budget.epsilon();
                    let (rn, rd) = scale_up(2.0 * r_f / eps_r).ok_or_else(too_noisy)?;
                    Some(Noise::Laplace { num: rn, den: rd })
                } else {
                    None
                };
                let (cn, cd) = scale_up(d_c_f * s / eps_c).ok_or_else(too_noisy)?;
                let (gn, gd) = scale_up(g_l1 * s / eps_it).ok_or_else(too_noisy)?;
                let cross_noise = if pairs > 0 {
                    let (xn, xd) = scale_up(2.0 * p_f * s / eps_x).ok_or_else(too_noisy)?;
                    Some(Noise::Laplace { num: xn, den: xd })
                } else {
                    None
                };
                (
                    None,
                    LAPLACE_GRID,
                    Noise::Laplace { num: cn, den: cd },
                    cross_noise,
                    Noise::Laplace { num: gn, den: gd },
                    range_noise,
                )
            } else {
                let rho = zcdp::rho_for(budget.epsilon(), budget.delta())?;
                // Item 0: L2^2 sensitivity 2L, so variance 2L / (2 rho_r).
                let range_noise = if ranged > 0 {
                    let rho_r = self.range_share * rho;
                    let (rn, rd) = variance_up(r_f / rho_r).ok_or_else(too_noisy)?;
                    Some(Noise::Gaussian { num: rn, den: rd })
                } else {
                    None
                };
                let rho_c = share * (1.0 - cross) * rest * rho;
                let rho_x = share * cross * rest * rho;
                let rho_it = (1.0 - share) * rest * rho / (e * k);
                // Standard deviations per unit grid step.
                let sd_c = (d_c_f / (2.0 * rho_c)).sqrt();
                // D^2 / (2 sd^2) = rho_it: sd = sqrt(D^2 / (2 rho_it)).
                let sd_it = (g_l2_sq / (2.0 * rho_it)).sqrt();
                let sd_x = if pairs > 0 {
                    (2.0 * p_f / rho_x).sqrt()
                } else {
                    0.0
                };
                // The finest power-of-two grid whose variances the exact sampler
                // takes: sigma in grid units at most 2^14.5.
                let room = (MAX_VARIANCE.sqrt() / sd_c.max(sd_it).max(sd_x))
                    .log2()
                    .floor();
                let s = if room >= 0.0 {
                    2f64.powf(room).min(MAX_GAUSSIAN_GRID)
                } else {
                    1.0
                };
                let (cn, cd) = variance_up((sd_c * s).powi(2)).ok_or_else(too_noisy)?;
                let (gn, gd) = variance_up((sd_it * s).powi(2)).ok_or_else(too_noisy)?;
                let cross_noise = if pairs > 0 {
                    let (xn, xd) = variance_up((sd_x * s).powi(2)).ok_or_else(too_noisy)?;
                    Some(Noise::Gaussian { num: xn, den: xd })
                } else {
                    None
                };
                (
                    Some(rho),
                    s as u32,
                    Noise::Gaussian { num: cn, den: cd },
                    cross_noise,
                    Noise::Gaussian { num: gn, den: gd },
                    range_noise,
                )
            };
        let lambda = self.ridge * described_std(&gradient_noise) / f64::from(scale);
        Ok(LinearPlan {
            params: *self,
            n_rows,
            blocks,
            curvature_sensitivity: d_c,
            lines,
            cross_pairs: pairs,
            budget,
            rho,
            scale,
            curvature_noise,
            cross_noise,
            gradient_noise,
            lambda,
            classes,
            ranged_lines: ranged,
            range_noise,
            output: None,
            objective: None,
            threshold: None,
        })
    }
}

impl LinearPlan {
    /// The cost the ledger charges: pure epsilon with delta = 0, else zCDP
    /// with its conversion.
    pub fn cost(&self) -> PrivacyCost {
        if let Some(t) = &self.threshold {
            return t.cost();
        }
        match self.rho {
            None => PrivacyCost::Pure {
                epsilon: self.budget.epsilon(),
            },
            Some(rho) => PrivacyCost::Zcdp {
                rho,
                epsilon: self.budget.epsilon(),
                delta: self.budget.delta(),
            },
        }
    }

    /// Gradient releases: epochs x blocks.
    pub fn iterations(&self) -> u64 {
        u64::from(self.params.epochs) * self.blocks as u64
    }

    /// Standard deviation of the noise on one gradient sum, in residual
    /// units.
    pub fn gradient_std(&self) -> f64 {
        described_std(&self.gradient_noise) / f64::from(self.scale)
    }

    /// Standard deviation of the noise on one cross sum, in rows (0 without
    /// lines).
    pub fn cross_std(&self) -> f64 {
        self.cross_noise
            .map_or(0.0, |n| described_std(&n) / f64::from(self.scale))
    }

    /// Standard deviation of the noise on one range count, in rows (0
    /// without ranged lines).
    pub fn range_std(&self) -> f64 {
        self.range_noise.map_or(0.0, |n| described_std(&n))
    }

    /// The count an interval of a line with `intervals` intervals must
    /// reach to be inside its range (public): the noise level of
    /// [`RANGE_FALSE_RATE`], and at least [`RANGE_MIN_FRACTION`] of `n`.
    pub fn range_threshold(&self, intervals: usize) -> f64 {
        let log = (intervals.max(1) as f64 / (2.0 * RANGE_FALSE_RATE))
            .ln()
            .max(0.0);
        let noise = match self.range_noise {
            None => 0.0,
            Some(Noise::Laplace { num, den }) => num as f64 / den as f64 * log,
            Some(Noise::Gaussian { num, den }) => (num as f64 / den as f64 * 2.0 * log).sqrt(),
        };
        noise.max(RANGE_MIN_FRACTION * self.n_rows as f64)
    }

    /// Standard deviation of the noise on one curvature, in rows.
    pub fn curvature_std(&self) -> f64 {
        described_std(&self.curvature_noise) / f64::from(self.scale)
    }
}
