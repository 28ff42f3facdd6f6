//! DP-EBM's parameters, their defaults (the paper's, used for all its
//! experiments: DP-EBM §4, PAPERS.md §1.8) and the plan: the privacy cost and
//! every noise scale, computed from public facts before any row is read.

use serde::{Deserialize, Serialize};

use crate::data::Task;
use crate::learn::{LearnError, threshold};
use crate::privacy::{Budget, PrivacyCost, metrics, zcdp};

/// Largest number of epochs accepted (the paper uses 300).
pub const MAX_EPOCHS: u32 = 10_000;
/// Largest number of leaves per iteration.
pub const MAX_LEAVES: u32 = 16;
/// Largest `max_bins`.
pub const MAX_BINS: u32 = 1024;
/// The exact sampler takes variances below 2^30 (`privacy::exact`); plans
/// stay below 2^29 so the rational rounded up still fits.
const MAX_VARIANCE: f64 = (1u64 << 29) as f64;

/// The default rule's learning rate and epochs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    /// Learning rate.
    pub learning_rate: f64,
    /// Epochs.
    pub epochs: u32,
    /// Target bins per feature for the private binning.
    pub max_bins: u32,
    /// Leaves of each one-feature tree.
    pub max_leaves: u32,
    /// The rule's `n / s` (public: a function of n, the budget and K), from
    /// which it chose the learning rate and bins; `None` for
    /// [`Schedule::PAPER`]. Reported by `privboost eval` so that a grid
    /// over the bins (scripts/ebm_bins_lodo.py) need not recompute it.
    pub signal_to_noise: Option<f64>,
}

impl Schedule {
    /// The paper's schedule (learning rate 0.01, 300 epochs, 32 bins), the
    /// default before issue 25; the tests that pin noise scales use it.
    pub const PAPER: Schedule = Schedule {
        learning_rate: 0.01,
        epochs: 300,
        max_bins: PAPER_MAX_BINS,
        max_leaves: PAPER_MAX_LEAVES,
        signal_to_noise: None,
    };

    /// The default rule (issue 25): a public function of the task, `n`, the
    /// budget and the number of features `k`, chosen by
    /// leave-one-dataset-out on the benchmark suite (docs/accuracy.md,
    /// "DP-EBM").
    ///
    /// - epochs: [`DEFAULT_EPOCHS_ZCDP`] with delta > 0 (a regressor:
    ///   [`DEFAULT_EPOCHS_ZCDP_REGRESSION`]); with delta = 0 (the Laplace
    ///   noise grows with `E K`, not its root) the most of [`PURE_EPOCHS`]
    ///   that keeps `n / s` at least [`PURE_MIN_SNR`] ([`PURE_MULTICLASS_MIN_SNR`]
    ///   for k classes; one epoch if none does), since the best epochs grew
    ///   with the signal-to-noise ratio on the suite (one at epsilon <= 1,
    ///   three to five at epsilon 5 on the larger multiclass sets);
    /// - learning rate (a fraction of a Newton step, `fit`): it grows with
    ///   the signal-to-noise ratio of a leaf sum, `n / s` with `s` the
    ///   standard deviation of the noise on one leaf sum at those epochs
    ///   and the default budget split: `10^a (n / s)^b`, kept in [0.01, 1],
    ///   with `a = -1.75, b = 0.875` (`b = 0.625` for a regressor with a
    ///   delta; `a = -1, b = 0.375` with delta = 0, fitted first on the
    ///   multiclass sets alone). The noise a shape value gathers over
    ///   the run is about `learning_rate x E x s / n` per unit of signal, so
    ///   a noisy run learns slowly and a clean one takes full steps;
    /// - bins (stop 38): `2^round(3/2 + log2(n / s) / 4)` (ties to even),
    ///   kept in [[`MIN_DEFAULT_BINS`], [`MAX_DEFAULT_BINS`]] (binary and
    ///   regression; [`PAPER_MAX_BINS`] for k classes, not fitted there).
    ///   A leaf update is divided by its bin's count, about `n / B`, so its
    ///   noise grows like `B s / n` while the bias of coarse bins shrinks
    ///   with `B`: a noisy run wants few bins, a clean one many. Fitted
    ///   leave-one-dataset-out on the suite (`a + b log2(n / s)` over a grid
    ///   of `a` in halves and `b` in quarters; 13 of the 14 held-out fits
    ///   chose `a = 3/2, b = 1/4`; later draws preferred neighbouring forms
    ///   by less than the draws' own noise): docs/accuracy.md, "DP-EBM's
    ///   bins from the signal-to-noise ratio";
    /// - leaves (stop 41): [`MAX_LEAVES`] for binary and regression, so
    ///   that each of the rule's (at most 16 on the suite) bins is its own
    ///   leaf and every iteration updates every bin; [`PAPER_MAX_LEAVES`]
    ///   (3 random leaves) for k classes. Chosen leave-one-dataset-out on
    ///   the suite among 2, 3, 4, 6, 8 and 16 (all 14 held-out fits chose
    ///   16; held-out regret 0.0141 against 0.0452 for 3; a second draw
    ///   over 3, 8 and 16: 13 of 14, 0.0126 against 0.0410). Three random
    ///   leaves pool neighbouring bins, which lowers a value's noise but
    ///   lets the few epochs of a noisy run move each bin only with its
    ///   random neighbours; with 16 the regressions' RMSE fell most (CCPP
    ///   at epsilon 1: 5.87 to 5.13). On the seven multiclass sets 16
    ///   lost 3.7 points of accuracy (their 32 bins make 16 leaves random
    ///   pairs), so k classes keep the paper's 3: docs/accuracy.md,
    ///   "DP-EBM's leaves".
    pub fn default_for(task: Task, n_rows: usize, budget: Budget, n_features: usize) -> Schedule {
        let pure = budget.delta() == 0.0;
        let training = 1.0 - DEFAULT_BINNING_SHARE - INTERCEPT_SHARE - calibration_share(task);
        // The leaf sums' sensitivity over the binary one (1 for binary and
        // regression; a multiclass run's noise per sum is 2 (L1) or
        // sqrt(2) (L2) times larger, and the rule sees that larger `s`).
        let l1 = leaf_l1_sensitivity(task) / 2.0;
        let l2_sq = leaf_l2_sensitivity_squared(task) / 4.0;
        // The standard deviation of one leaf sum's noise at `epochs`.
        let noise = |epochs: u32| {
            let iterations = f64::from(epochs) * n_features.max(1) as f64;
            if pure {
                // sqrt(2) x the Laplace scale 2 E K / epsilon_t.
                2f64.sqrt() * 2.0 * l1 * iterations / (training * budget.epsilon())
            } else {
                match zcdp::rho_for(budget.epsilon(), budget.delta()) {
                    Ok(rho) => (2.0 * l2_sq * iterations / (training * rho)).sqrt(),
                    // The plan refuses such a budget; any value will do here.
                    Err(_) => f64::INFINITY,
                }
            }
        };
        let snr = |epochs: u32| n_rows as f64 / noise(epochs);
        let multiclass = matches!(task, Task::Multiclass { .. });
        let regression = matches!(task, Task::Regression { .. });
        let (epochs, intercept, slope) = match (pure, regression, multiclass) {
            (true, _, _) => {
                let least = if multiclass {
                    PURE_MULTICLASS_MIN_SNR
                } else {
                    PURE_MIN_SNR
                };
                (
                    PURE_EPOCHS
                        .into_iter()
                        .filter(|&e| snr(e) >= least)
                        .max()
                        .unwrap_or(1),
                    RULE_A_PURE,
                    RULE_B_PURE,
                )
            }
            (false, false, _) => (DEFAULT_EPOCHS_ZCDP, RULE_A, RULE_B),
            (false, true, _) => (
                DEFAULT_EPOCHS_ZCDP_REGRESSION,
                RULE_A,
                RULE_B_ZCDP_REGRESSION,
            ),
        };
        let snr = snr(epochs);
        let learning_rate = if snr.is_finite() && snr > 0.0 {
            10f64.powf(intercept + slope * snr.log10()).clamp(0.01, 1.0)
        } else {
            0.01
        };
        let (max_bins, max_leaves) = if multiclass {
            (PAPER_MAX_BINS, PAPER_MAX_LEAVES)
        } else {
            (default_bins(snr), MAX_LEAVES)
        };
        Schedule {
            learning_rate,
            epochs,
            max_bins,
            max_leaves,
            signal_to_noise: Some(snr),
        }
    }
}

/// The paper's (and InterpretML's) target bins per feature; the default for
/// k classes.
pub const PAPER_MAX_BINS: u32 = 32;
/// The paper's (and InterpretML's) leaves per one-feature tree: two random
/// cut points; the default for k classes.
pub const PAPER_MAX_LEAVES: u32 = 3;
/// The fewest bins the default rule picks.
pub const MIN_DEFAULT_BINS: u32 = 4;
/// The most bins the default rule picks.
pub const MAX_DEFAULT_BINS: u32 = 64;

/// The default bins at a leaf sum's signal-to-noise ratio `n / s`
/// ([`Schedule::default_for`]): `2^round(3/2 + log2(snr) / 4)`, ties to
/// even (as the fit that chose it), within [`MIN_DEFAULT_BINS`,
/// `MAX_DEFAULT_BINS`]; the fewest for a ratio that is not a positive finite
/// number.
pub fn default_bins(snr: f64) -> u32 {
    if !(snr.is_finite() && snr > 0.0) {
        return MIN_DEFAULT_BINS;
    }
    let exponent = (1.5 + 0.25 * snr.log2()).round_ties_even();
    let lo = f64::from(MIN_DEFAULT_BINS.ilog2());
    let hi = f64::from(MAX_DEFAULT_BINS.ilog2());
    1u32 << (exponent.clamp(lo, hi) as u32)
}

/// The default rule's epochs with delta > 0 (zCDP).
pub const DEFAULT_EPOCHS_ZCDP: u32 = 10;
/// The default rule's epochs for a regressor with delta > 0.
pub const DEFAULT_EPOCHS_ZCDP_REGRESSION: u32 = 20;
/// The default binning share (of rho, or of epsilon with delta = 0).
pub const DEFAULT_BINNING_SHARE: f64 = 0.1;
/// The learning rate rule's intercept and slope in log10 (fitted on the
/// suite, `Schedule::default_for`).
const RULE_A: f64 = -1.75;
const RULE_B: f64 = 0.875;
/// The slope for a regressor with delta > 0 (fitted on the suite's
/// regression sets alone, which scored better held out there).
const RULE_B_ZCDP_REGRESSION: f64 = 0.625;
/// The rule with delta = 0 (pure DP, discrete Laplace): the epochs it
/// chooses from (the most that keeps `n / s` at least a threshold, one if
/// none does), and the learning rate's intercept and slope. Fitted by
/// leave-one-dataset-out on the suite's multiclass sets first (issue 27,
/// `scripts/ebm_rule_lodo.py --task multiclass`; docs/accuracy.md,
/// "Pure-DP DP-EBM for k classes"), then on the binary and regression sets
/// (`--pure-threshold`, which found the same line and a lower threshold;
/// adopted at stop 34, docs/accuracy.md "The same rule for binary and
/// regression sets").
pub const PURE_EPOCHS: [u32; 4] = [1, 2, 3, 5];
/// The least `n / s` a pure run keeps for k classes (10^2.25).
pub const PURE_MULTICLASS_MIN_SNR: f64 = 177.827_941_003_892_3;
/// The least `n / s` a pure run keeps for a binary classifier or a
/// regressor (10^1.375).
pub const PURE_MIN_SNR: f64 = 23.713_737_056_616_55;
const RULE_A_PURE: f64 = -1.0;
const RULE_B_PURE: f64 = 0.375;

/// DP-EBM's parameters as a request gives them (unset: the default rule's).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct EbmSpec {
    /// Target number of bins per feature for the private binning (the
    /// default rule's, [`Schedule::default_for`]; the paper's 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bins: Option<u32>,
    /// Learning rate (0.01).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_rate: Option<f64>,
    /// Cyclic passes over the features (300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u32>,
    /// Leaves of each one-feature tree (the default rule's,
    /// [`Schedule::default_for`]: 16 for binary and regression, 3 for k
    /// classes; the paper's 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_leaves: Option<u32>,
    /// Share of the privacy budget (of rho) spent on the binning (0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binning_share: Option<f64>,
    /// Regression: residuals are clipped to +-this, in label units (a
    /// quarter of the label's public range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual_clip: Option<f64>,
}

/// Checked parameters (every default filled in).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EbmParams {
    /// Target bins per feature.
    pub max_bins: u32,
    /// Learning rate.
    pub learning_rate: f64,
    /// Epochs.
    pub epochs: u32,
    /// Leaves per iteration.
    pub max_leaves: u32,
    /// Share of rho for the binning.
    pub binning_share: f64,
    /// Regression: the residual clip in label units (`None` for a
    /// classifier, whose residuals are in (-1, 1); model files from before
    /// this parameter read as `None` and were trained with half the range).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual_clip: Option<f64>,
    /// A classifier: whether the threshold is calibrated after boosting
    /// (a charged report-noisy-max, [`CALIBRATION_SHARE`] of the budget;
    /// `EbmParams::plan`). Always set by [`EbmSpec::check`]; model files
    /// from before it read as `false`, which is how they were trained.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub calibrate: bool,
}

impl EbmSpec {
    /// Fill the defaults (the learning rate, epochs and bins from `schedule`, the
    /// default rule's for the job's public facts) and check every value; the
    /// message names the field in parentheses (as the API maps it).
    pub fn check(&self, schedule: Schedule) -> Result<EbmParams, LearnError> {
        let p = EbmParams {
            max_bins: self.max_bins.unwrap_or(schedule.max_bins),
            learning_rate: self.learning_rate.unwrap_or(schedule.learning_rate),
            epochs: self.epochs.unwrap_or(schedule.epochs),
            max_leaves: self.max_leaves.unwrap_or(schedule.max_leaves),
            binning_share: self.binning_share.unwrap_or(DEFAULT_BINNING_SHARE),
            residual_clip: self.residual_clip,
            calibrate: true,
        };
        let bad = |m: String| Err(LearnError::InvalidParameter(m));
        if !(2..=MAX_BINS).contains(&p.max_bins) {
            return bad(format!(
                "bins (max_bins) must be between 2 and {MAX_BINS}, got {}",
                p.max_bins
            ));
        }
        if !(p.learning_rate > 0.0 && p.learning_rate <= 1.0) {
            return bad(format!(
                "learning rate (learning_rate) must be in (0, 1], got {}",
                p.learning_rate
            ));
        }
        if !(1..=MAX_EPOCHS).contains(&p.epochs) {
            return bad(format!(
                "epochs (epochs) must be between 1 and {MAX_EPOCHS}, got {}",
                p.epochs
            ));
        }
        if !(2..=MAX_LEAVES).contains(&p.max_leaves) {
            return bad(format!(
                "leaves (max_leaves) must be between 2 and {MAX_LEAVES}, got {}",
                p.max_leaves
            ));
        }
        if !(p.binning_share > 0.0 && p.binning_share < 1.0) {
            return bad(format!(
                "binning share (binning_share) must be in (0, 1), got {}",
                p.binning_share
            ));
        }
        if let Some(clip) = p.residual_clip
            && !(clip > 0.0 && clip.is_finite())
        {
            return bad(format!(
                "residual clip (residual_clip) must be a positive number, got {clip}"
            ));
        }
        Ok(p)
    }

    /// Whether any parameter was given.
    pub fn any_given(&self) -> bool {
        self.max_bins.is_some()
            || self.learning_rate.is_some()
            || self.epochs.is_some()
            || self.max_leaves.is_some()
            || self.binning_share.is_some()
            || self.residual_clip.is_some()
    }
}

impl EbmParams {
    /// The resolved parameters as a spec (what a job stores).
    pub fn to_spec(&self) -> EbmSpec {
        EbmSpec {
            max_bins: Some(self.max_bins),
            learning_rate: Some(self.learning_rate),
            epochs: Some(self.epochs),
            max_leaves: Some(self.max_leaves),
            binning_share: Some(self.binning_share),
            residual_clip: self.residual_clip,
        }
    }
}

/// The discrete Laplace takes a scale numerator below 2^64.
const MAX_LAPLACE_SCALE: f64 = (1u64 << 62) as f64;
/// The grid of the pure-DP (Laplace) releases: residuals to `2^-16`, well
/// below the noise (as dp-linear's pure runs).
const LAPLACE_GRID: u32 = 1 << 16;
/// The finest Gaussian grid (the grid is coarsened until the variance fits
/// the exact sampler).
const MAX_GAUSSIAN_GRID: f64 = (1u32 << 20) as f64;

/// The share of the budget (of rho with delta > 0, of epsilon with delta =
/// 0) spent on the intercept: one noisy sum of the labels over all rows, so
/// that boosting starts at the (noisy) label mean instead of at 0 (a
/// classifier) or the midpoint of the label range (a regressor). One release
/// against `E K` for the training, so a small share gives it far less
/// noise than any leaf sum.
pub const INTERCEPT_SHARE: f64 = 0.05;

/// The share of the budget (of rho with delta > 0, of epsilon with delta =
/// 0) a classifier spends on calibrating its threshold after boosting
/// (issue 25: with the small learning rates a noisy run needs, the scores
/// stay near the intercept and a threshold of 1/2 predicts the majority
/// class for too many rows). A report-noisy-max over
/// [`CALIBRATION_CANDIDATES`] public thresholds (`fit::threshold_scores`).
pub const CALIBRATION_SHARE: f64 = 0.1;
/// The calibration's window: thresholds whose predicted-positive count is
/// within this fraction of n of the released positive count are scored by
/// accuracy alone (`fit::threshold_scores`). Chosen on the suite (in
/// sample, docs/accuracy.md "DP-EBM"), below the 5 points of issue 25.
pub const CALIBRATION_WINDOW: f64 = 0.04;
/// The calibration's penalty per row outside the window (more than 1, so
/// that the window binds: moving one row across the threshold changes the
/// correct count by at most 1).
pub const CALIBRATION_PENALTY: f64 = 2.0;
/// The sensitivity of the calibration's scores under substitution: the
/// correct count moves by at most 1, the penalty by `CALIBRATION_PENALTY`.
pub const CALIBRATION_SENSITIVITY: f64 = 1.0 + CALIBRATION_PENALTY;

/// The number of candidate thresholds of the calibration (a public grid,
/// `fit::threshold_grid`).
pub const CALIBRATION_CANDIDATES: usize = 1025;

/// The calibration's share for `task` (classifiers only).
pub fn calibration_share(task: Task) -> f64 {
    match task {
        Task::Binary => CALIBRATION_SHARE,
        Task::Regression { .. } | Task::Multiclass { .. } => 0.0,
    }
}

/// The public facts of the threshold calibration (a classifier's last
/// release).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CalibrationPlan {
    /// The report-noisy-max's pure epsilon (with delta > 0: `sqrt(2
    /// rho_calibration)`, since an epsilon-DP release is `epsilon^2 /
    /// 2`-zCDP, Bun and Steinke 2016, Prop. 1.4).
    pub epsilon: f64,
    /// rho of the calibration (zCDP runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// The Laplace scale of the report-noisy-max, in rows (its scores have
    /// sensitivity [`CALIBRATION_SENSITIVITY`]).
    pub scale: f64,
    /// The number of candidate thresholds.
    pub candidates: usize,
}

impl CalibrationPlan {
    /// The plan for a pure `epsilon` on `n_rows` rows: the scores
    /// (`fit::threshold_scores`, integers of magnitude at most `3n`) move
    /// by at most `D = CALIBRATION_SENSITIVITY` under substitution, so the
    /// report-noisy-max's scale is `threshold::rnm_scale(epsilon, D, n)`
    /// (its floating-point margin beside it).
    fn new(epsilon: f64, rho: Option<f64>, n_rows: usize) -> Option<CalibrationPlan> {
        let scale = threshold::rnm_scale(epsilon, CALIBRATION_SENSITIVITY, n_rows)?;
        Some(CalibrationPlan {
            epsilon,
            rho,
            scale,
            candidates: CALIBRATION_CANDIDATES,
        })
    }
}

/// The noise of one kind of release (count units for the binning, grid
/// units for the intercept and the leaf sums): the shared exact-noise type.
pub use crate::privacy::Noise;

/// How a run's budget is split and accounted (public, from the plan).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Accounting {
    /// `delta > 0`: discrete Gaussian noise, zCDP composed additively and
    /// converted once.
    Zcdp {
        /// Total rho, the largest whose conversion meets the budget.
        rho_total: f64,
        /// rho of the binning phase.
        rho_binning: f64,
        /// rho of the intercept.
        rho_intercept: f64,
        /// rho of the training phase (all `E K` iterations).
        rho_training: f64,
    },
    /// `delta = 0`: discrete Laplace noise, basic composition of pure DP.
    Pure {
        /// epsilon of the binning phase (all features).
        epsilon_binning: f64,
        /// epsilon of the intercept.
        epsilon_intercept: f64,
        /// epsilon of the training phase (all `E K` iterations).
        epsilon_training: f64,
    },
}

/// Everything public about a DP-EBM run, computed before any row is read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EbmPlan {
    /// The checked parameters.
    pub params: EbmParams,
    /// Training rows (public under substitution).
    pub n_rows: usize,
    /// Features (one per one-hot column, one per other literal): public,
    /// from the schema.
    pub n_features: usize,
    /// The task (from the schema).
    pub task: Task,
    /// The budget the run is charged.
    pub budget: Budget,
    /// The split of the budget and its accounting.
    pub accounting: Accounting,
    /// Standard deviation of the noise on each bin count.
    pub sigma_binning: f64,
    /// Standard deviation of the noise on the intercept's sum (residual
    /// units).
    pub sigma_intercept: f64,
    /// Standard deviation of the noise on each leaf sum of normalised
    /// residuals (residual units, before the learning rate).
    pub sigma_training: f64,
    /// The fixed-point grid: residuals are rounded to multiples of `1 / scale`.
    pub scale: u32,
    /// The noise on each base-bin count (count units).
    pub bin_noise: Noise,
    /// The noise on the intercept's sum (grid units).
    pub intercept_noise: Noise,
    /// The noise on each leaf sum (grid units).
    pub leaf_noise: Noise,
    /// A classifier's threshold calibration (absent for a regressor, and
    /// when `params.calibrate` is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<CalibrationPlan>,
}

/// `x` as a rational `num / den >= x` with both below 2^30, `den` a power of 2.
fn rational_up(x: f64) -> Option<(u128, u128)> {
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

/// A Laplace scale as `num / 1 >= x`, for the grid releases (the grid is
/// fine enough that rounding the scale up to whole grid steps costs
/// nothing visible).
fn laplace_up(x: f64) -> Option<Noise> {
    (x.is_finite() && x > 0.0 && x < MAX_LAPLACE_SCALE).then(|| Noise::Laplace {
        num: (x.ceil() as u128).max(1),
        den: 1,
    })
}

/// The intercept's L1 sensitivity in residual units (for binary and
/// regression also its L2): a classifier's term is `y - 1/2` in `{-1/2,
/// 1/2}` (substitution moves the sum by at most 1), a regressor's `(y -
/// mid) / half` in `[-1, 1]` (at most 2). A multiclass model releases the k
/// class counts (each row's term is its one-hot vector `e_y`):
/// substitution moves two counts by 1, L1 2 and L2 `sqrt(2)`
/// ([`intercept_l2_sensitivity`]).
pub fn intercept_sensitivity(task: Task) -> f64 {
    match task {
        Task::Binary => 1.0,
        Task::Regression { .. } | Task::Multiclass { .. } => 2.0,
    }
}

/// The intercept's L2 sensitivity (see [`intercept_sensitivity`]).
pub fn intercept_l2_sensitivity(task: Task) -> f64 {
    match task {
        Task::Binary => 1.0,
        Task::Regression { .. } => 2.0,
        Task::Multiclass { .. } => std::f64::consts::SQRT_2,
    }
}

/// The leaf-sum vector's L1 sensitivity per iteration in residual units.
/// Binary and regression (one residual per row in `[-1, 1]`): 2. Multiclass
/// (a row adds its k-vector of softmax residuals `r = e_y - p` to one leaf,
/// on the grid with `||q||_1 <= 2` and `||q||_2 <= sqrt(2)` whatever the
/// floats, `softmax::class_terms`): moving within a leaf changes it by
/// `||q - q'||_1 <= 4`, to another leaf by `||q||_1 + ||q'||_1 <= 4`; so 4,
/// twice the binary constant, whatever k.
pub fn leaf_l1_sensitivity(task: Task) -> f64 {
    match task {
        Task::Binary | Task::Regression { .. } => 2.0,
        Task::Multiclass { .. } => 4.0,
    }
}

/// The square of the leaf-sum vector's L2 sensitivity per iteration.
/// Binary and regression: `|r - r'| <= 2` in one leaf (`sqrt(1 + 1)` over
/// two), so 4. Multiclass: in one leaf `||q - q'||_2 <= ||q||_2 + ||q'||_2
/// <= 2 sqrt(2)` (reached: `q = e_1 - e_2`, `q' = e_2 - e_1`), over two
/// leaves `sqrt(2 + 2) = 2`; so 8, twice the binary square, whatever k.
pub fn leaf_l2_sensitivity_squared(task: Task) -> f64 {
    match task {
        Task::Binary | Task::Regression { .. } => 4.0,
        Task::Multiclass { .. } => 8.0,
    }
}

impl EbmParams {
    /// The plan for `budget` on `n_rows` rows and `n_features` features of
    /// `task`.
    ///
    /// # Privacy (substitution neighbours; docs/privacy.md "DP-EBM")
    ///
    /// Three kinds of release touch the rows, each on integers with exact
    /// noise, and a classifier adds a fourth (the calibration):
    ///
    /// - Binning: one histogram per feature over its base bins (the schema's
    ///   literals). Substituting a row moves one count of each histogram from
    ///   one bin to another: L1 sensitivity 2 and L2 `sqrt(2)` per histogram
    ///   (L1 `2K`, L2 `sqrt(2K)` over all `K`).
    /// - Intercept: one sum over all rows of `y - 1/2` (classifier) or
    ///   `(y - mid) / half` (regressor, `mid` and `half` the public label
    ///   range's midpoint and half-width), rounded to the grid `1/S`: one
    ///   row's term moves it by at most `Delta_0 = 1` (classifier) or `2`
    ///   (regressor), L1 = L2 ([`intercept_sensitivity`]).
    /// - Training: each of the `E K` iterations releases the vector of leaf
    ///   sums of residuals, each residual clamped to `[-1, 1]` and rounded to
    ///   the grid `1/S`. Every row lies in exactly one leaf; its residual
    ///   depends only on its own label and features and on the released
    ///   shape functions and intercept. Substitution changes one row's term:
    ///   in one leaf by at most `|r - r'| <= 2`, or in two leaves by
    ///   `|r|, |r'| <= 1`. So L1 sensitivity 2 and L2 sensitivity 2
    ///   (residual units, `2S` grid units; the paper's add/remove analysis
    ///   has 1).
    /// - Calibration (a classifier, `calibrate`): after boosting, a
    ///   report-noisy-max over a public grid of `G` thresholds `t_j` (a
    ///   function of the released model only), scores `k_j - 2 max(0, |c_j
    ///   - T| - w n)` with `k_j` the number of rows the threshold classifies
    ///   correctly, `c_j` the number of rows whose score exceeds `t_j`, `T`
    ///   the released intercept's positive count (public) and `w` =
    ///   [`CALIBRATION_WINDOW`]. Each row adds 0 or 1 to each `k_j` and to
    ///   each `c_j` by its own label, features and the released model, so
    ///   substitution moves every score by at most `1 + 2 = 3`: Laplace
    ///   scale `6 / epsilon_c` is `epsilon_c`-DP ([`CalibrationPlan::new`]
    ///   has the float margin), `epsilon_c^2 / 2`-zCDP.
    ///
    /// - k classes (`Task::Multiclass`): the intercept is the k class
    ///   counts (L1 2, L2 `sqrt(2)`), each leaf releases k sums of softmax
    ///   residuals (L1 4, L2 `2 sqrt(2)` per iteration whatever k:
    ///   [`leaf_l1_sensitivity`], [`leaf_l2_sensitivity_squared`]), and there
    ///   is no calibration; the formulas below take these constants in place
    ///   of the binary ones (docs/privacy.md "DP-EBM for k classes").
    ///
    /// With `delta > 0` (zCDP, discrete Gaussian, CKS20 Thm 4: a release of
    /// L2 sensitivity `D` with variance `s^2` is `D^2 / (2 s^2)`-zCDP):
    /// `rho = K / s_b^2 + Delta_0^2 / (2 s_0^2) + E K 2 / s^2 (+ epsilon_c^2
    /// / 2)`, converted once to `(epsilon, delta)` (`privacy::zcdp`);
    /// `binning_share` of rho to the binning, [`INTERCEPT_SHARE`] to the
    /// intercept, [`CALIBRATION_SHARE`] to a classifier's calibration.
    ///
    /// With `delta = 0` (pure DP, discrete Laplace: a release of L1
    /// sensitivity `D` with scale `b` is `D / b`-DP, the geometric
    /// mechanism, CKS20 §2): each histogram scale `2K / epsilon_b`, the
    /// intercept `Delta_0 / epsilon_0`, each leaf-sum vector `2 E K /
    /// epsilon_t` (residual units), the calibration `epsilon_c`; basic
    /// composition `epsilon_b + epsilon_0 + epsilon_c + epsilon_t = epsilon` (Dwork and Roth 2014, Thm 3.16, adaptive).
    ///
    /// Every variance and scale is rounded up, and every one is checked here,
    /// before any charge.
    pub fn plan(
        &self,
        budget: Budget,
        n_rows: usize,
        n_features: usize,
        task: Task,
    ) -> Result<EbmPlan, LearnError> {
        if n_rows == 0 {
            return Err(LearnError::NoRows);
        }
        if n_features == 0 {
            return Err(LearnError::InvalidParameter(
                "the schema has no feature".into(),
            ));
        }
        let calibration_share = if self.calibrate {
            calibration_share(task)
        } else {
            0.0
        };
        if self.binning_share + INTERCEPT_SHARE + calibration_share >= 1.0 {
            return Err(LearnError::InvalidParameter(format!(
                "binning share (binning_share) must be below {}, got {}",
                1.0 - INTERCEPT_SHARE - calibration_share,
                self.binning_share
            )));
        }
        let k = n_features as f64;
        let iterations = f64::from(self.epochs) * k;
        let d0 = intercept_sensitivity(task);
        let d0_l2 = intercept_l2_sensitivity(task);
        // The leaf sums' sensitivity over the binary one: 1 for binary and
        // regression (so their scales are computed exactly as before
        // multiclass), 2 (L1) and 2 (L2 squared) for k classes.
        let leaf_l1_factor = leaf_l1_sensitivity(task) / 2.0;
        let leaf_l2_sq_factor = leaf_l2_sensitivity_squared(task) / 4.0;
        let too_noisy = || {
            LearnError::InvalidParameter(format!(
                "epsilon (epsilon): the noise for epsilon = {} with {} epochs over {n_features} features is too large to sample exactly; use a larger epsilon or fewer epochs",
                budget.epsilon(),
                self.epochs
            ))
        };
        let calibrating = calibration_share > 0.0;
        let (accounting, scale, bin_noise, intercept_noise, leaf_noise, calibration) =
            if budget.delta() == 0.0 {
                let epsilon = budget.epsilon();
                let epsilon_binning = self.binning_share * epsilon;
                let epsilon_intercept = INTERCEPT_SHARE * epsilon;
                let epsilon_calibration = calibration_share * epsilon;
                let epsilon_training =
                    epsilon - epsilon_binning - epsilon_intercept - epsilon_calibration;
                let calibration = if calibrating {
                    Some(
                        CalibrationPlan::new(epsilon_calibration, None, n_rows)
                            .ok_or_else(too_noisy)?,
                    )
                } else {
                    None
                };
                let s = f64::from(LAPLACE_GRID);
                // Counts are integers: a rational scale (`metrics::scale_for`).
                let (bn, bd) =
                    metrics::scale_for(2.0 * k, epsilon_binning).map_err(|_| too_noisy())?;
                let intercept = laplace_up(d0 * s / epsilon_intercept).ok_or_else(too_noisy)?;
                let leaf = laplace_up(leaf_l1_factor * 2.0 * iterations * s / epsilon_training)
                    .ok_or_else(too_noisy)?;
                (
                    Accounting::Pure {
                        epsilon_binning,
                        epsilon_intercept,
                        epsilon_training,
                    },
                    LAPLACE_GRID,
                    Noise::Laplace { num: bn, den: bd },
                    intercept,
                    leaf,
                    calibration,
                )
            } else {
                let rho_total = zcdp::rho_for(budget.epsilon(), budget.delta())?;
                let rho_binning = self.binning_share * rho_total;
                let rho_intercept = INTERCEPT_SHARE * rho_total;
                let rho_calibration = calibration_share * rho_total;
                let rho_training = rho_total - rho_binning - rho_intercept - rho_calibration;
                // An epsilon-DP release is epsilon^2 / 2-zCDP: epsilon =
                // sqrt(2 rho_calibration), rounded down so that its rho stays
                // within the share.
                let calibration = if calibrating {
                    let mut epsilon = (2.0 * rho_calibration).sqrt();
                    while epsilon * epsilon / 2.0 > rho_calibration {
                        epsilon = epsilon.next_down();
                    }
                    Some(
                        CalibrationPlan::new(epsilon, Some(rho_calibration), n_rows)
                            .ok_or_else(too_noisy)?,
                    )
                } else {
                    None
                };
                let sigma_binning = (k / rho_binning).sqrt();
                let sigma_intercept = d0_l2 / (2.0 * rho_intercept).sqrt();
                let sigma_training = (leaf_l2_sq_factor * 2.0 * iterations / rho_training).sqrt();
                // The finest power-of-two grid whose noise variances the exact
                // sampler takes: sigma in grid units at most 2^14.5.
                let widest = sigma_training.max(sigma_intercept);
                let room = (MAX_VARIANCE.sqrt() / widest).log2().floor();
                let s = if room >= 0.0 {
                    2f64.powf(room).min(MAX_GAUSSIAN_GRID)
                } else {
                    1.0
                };
                let gaussian = |sd: f64| {
                    rational_up(sd * sd)
                        .map(|(num, den)| Noise::Gaussian { num, den })
                        .ok_or_else(too_noisy)
                };
                (
                    Accounting::Zcdp {
                        rho_total,
                        rho_binning,
                        rho_intercept,
                        rho_training,
                    },
                    s as u32,
                    gaussian(sigma_binning)?,
                    gaussian(sigma_intercept * s)?,
                    gaussian(sigma_training * s)?,
                    calibration,
                )
            };
        let grid = f64::from(scale);
        Ok(EbmPlan {
            params: *self,
            n_rows,
            n_features,
            task,
            budget,
            accounting,
            sigma_binning: bin_noise.std(),
            sigma_intercept: intercept_noise.std() / grid,
            sigma_training: leaf_noise.std() / grid,
            scale,
            bin_noise,
            intercept_noise,
            leaf_noise,
            calibration,
        })
    }
}

impl EbmPlan {
    /// The cost the ledger charges: pure epsilon with delta = 0, else zCDP
    /// with its conversion.
    pub fn cost(&self) -> PrivacyCost {
        match self.accounting {
            Accounting::Pure { .. } => PrivacyCost::Pure {
                epsilon: self.budget.epsilon(),
            },
            Accounting::Zcdp { rho_total, .. } => PrivacyCost::Zcdp {
                rho: rho_total,
                epsilon: self.budget.epsilon(),
                delta: self.budget.delta(),
            },
        }
    }

    /// Total rho (zCDP runs only).
    pub fn rho(&self) -> Option<f64> {
        match self.accounting {
            Accounting::Zcdp { rho_total, .. } => Some(rho_total),
            Accounting::Pure { .. } => None,
        }
    }

    /// Whether the run is pure DP (discrete Laplace).
    pub fn is_pure(&self) -> bool {
        matches!(self.accounting, Accounting::Pure { .. })
    }

    /// Iterations (epochs x features): the progress steps are the epochs.
    pub fn iterations(&self) -> u64 {
        u64::from(self.params.epochs) * self.n_features as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(epsilon: f64, delta: f64) -> Result<EbmPlan, LearnError> {
        EbmSpec::default().check(Schedule::PAPER)?.plan(
            Budget::new(epsilon, delta)?,
            32_561,
            14,
            Task::Binary,
        )
    }

    /// Hand computation for Adult (K = 14, E = 300) at epsilon = 1,
    /// delta = 1e-6: rho_total from the CKS conversion, 10% to binning, 5%
    /// to the intercept, 10% to the calibration (a classifier).
    #[test]
    fn noise_scales_by_hand() {
        let p = plan(1.0, 1e-6).unwrap();
        let rho = zcdp::rho_for(1.0, 1e-6).unwrap();
        assert_eq!(p.rho(), Some(rho));
        // The figures docs/privacy.md quotes (an independent minimisation
        // over alpha by hand: rho = 0.024356; s_b = sqrt(14 / (0.1 rho)) =
        // 75.82, s_0 = 1 / sqrt(2 * 0.05 rho) = 20.26, s = sqrt(8400 /
        // (0.75 rho)) = 678.12).
        assert!((rho - 0.024356).abs() < 2e-6, "{rho}");
        assert!(
            (p.sigma_training - 678.12).abs() < 0.05,
            "{}",
            p.sigma_training
        );
        assert!(
            (p.sigma_binning - 75.82).abs() < 0.01,
            "{}",
            p.sigma_binning
        );
        assert!(
            (p.sigma_intercept - 20.26).abs() < 0.01,
            "{}",
            p.sigma_intercept
        );
        // The classic conversion's rho (eps = rho + 2 sqrt(rho ln 1/delta))
        // is a lower bound on CKS's: about 0.0177 here.
        assert!(rho > 0.0177 && rho < 0.03, "{rho}");
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-6;
        assert!(close(p.sigma_binning, (14.0 / (0.1 * rho)).sqrt()));
        assert!(close(p.sigma_intercept, 1.0 / (2.0 * 0.05 * rho).sqrt()));
        assert!(close(
            p.sigma_training,
            (2.0 * 4200.0 / (0.75 * rho)).sqrt()
        ));
        // The calibration: epsilon_c = sqrt(2 x 0.1 rho) = 0.069794 (its
        // zCDP cost epsilon_c^2 / 2 = 0.1 rho), Laplace scale 2 x 3 /
        // epsilon_c = 85.967 rows (plus the grid's and the float margin's
        // 1e-8).
        let c = p.calibration.expect("a classifier calibrates");
        assert!((c.epsilon - 0.069_794).abs() < 1e-6, "{c:?}");
        assert!(c.epsilon * c.epsilon / 2.0 <= 0.1 * rho);
        assert_eq!(c.rho, Some(0.1 * rho));
        assert!((c.scale - 85.967).abs() < 1e-3, "{c:?}");
        assert!(c.scale >= 6.0 / c.epsilon);
        assert_eq!(c.candidates, CALIBRATION_CANDIDATES);
        // The grid: sigma in grid units at most 2^14.5, as fine as that allows.
        let g = p.sigma_training * f64::from(p.scale);
        assert!(
            g <= 2f64.powf(14.5) * (1.0 + 1e-6) && 2.0 * g > 2f64.powf(14.5),
            "{g}"
        );
        let Noise::Gaussian { num, den } = p.leaf_noise else {
            panic!("Gaussian noise with delta > 0")
        };
        let v = num as f64 / den as f64;
        let exact = (2.0 * 4200.0 / (0.75 * rho)) * f64::from(p.scale).powi(2);
        assert!(v >= exact && v <= exact * (1.0 + 1e-6));
        assert_eq!(
            p.cost(),
            PrivacyCost::Zcdp {
                rho,
                epsilon: 1.0,
                delta: 1e-6
            }
        );
        // The composition the docs state:
        // rho = K / s_b^2 + Delta_0^2 / (2 s_0^2) + E K 2 / s^2 + eps_c^2 /
        // 2, each variance rounded up (so the parts add to at most rho).
        let recomposed = 14.0 / p.sigma_binning.powi(2)
            + 1.0 / (2.0 * p.sigma_intercept.powi(2))
            + 4200.0 * 2.0 / p.sigma_training.powi(2)
            + c.epsilon * c.epsilon / 2.0;
        assert!(
            recomposed <= rho && recomposed > rho * (1.0 - 1e-6),
            "{recomposed}"
        );
    }

    /// delta = 0: the Laplace variant, by hand for the same shape at
    /// epsilon = 1: epsilon_b = 0.1, epsilon_0 = 0.05, epsilon_c = 0.1,
    /// epsilon_t = 0.75; scales 2K / epsilon_b = 280 (counts), Delta_0 /
    /// epsilon_0 = 20, 2 E K / epsilon_t = 11200 (residual units, on the
    /// grid 2^-16) and 2 x 3 / epsilon_c = 60 rows (the calibration,
    /// scores of sensitivity 3).
    #[test]
    fn pure_dp_scales_by_hand() {
        let p = plan(1.0, 0.0).unwrap();
        assert_eq!(p.cost(), PrivacyCost::Pure { epsilon: 1.0 });
        assert!(p.is_pure() && p.rho().is_none());
        let Accounting::Pure {
            epsilon_binning,
            epsilon_intercept,
            epsilon_training,
        } = p.accounting
        else {
            panic!("pure accounting")
        };
        assert!((epsilon_binning - 0.1).abs() < 1e-15);
        assert!((epsilon_intercept - 0.05).abs() < 1e-15);
        assert!((epsilon_training - 0.75).abs() < 1e-15);
        let c = p.calibration.expect("a classifier calibrates");
        assert_eq!(c.epsilon, 0.1);
        assert_eq!(c.rho, None);
        assert!(c.scale >= 60.0 && c.scale < 60.0 * (1.0 + 1e-6), "{c:?}");
        // Basic composition: the four parts add back to epsilon.
        assert!(
            (epsilon_binning + epsilon_intercept + c.epsilon + epsilon_training - 1.0).abs()
                < 1e-15
        );
        assert_eq!(p.scale, 1 << 16);
        let Noise::Laplace { num, den } = p.bin_noise else {
            panic!("Laplace")
        };
        let b = num as f64 / den as f64;
        assert!((280.0..280.0 * (1.0 + 1e-9)).contains(&b), "{b}");
        assert_eq!(
            p.intercept_noise,
            Noise::Laplace {
                num: 20 << 16,
                den: 1
            }
        );
        // 2 * 4200 * 65536 / 0.75 = 734003200 (up to the float's rounding
        // of 0.75, rounded up).
        let Noise::Laplace { num, den: 1 } = p.leaf_noise else {
            panic!("Laplace")
        };
        assert!((734_003_200..=734_003_201).contains(&num), "{num}");
        // The standard deviation a Laplace of scale b has: about sqrt(2) b.
        assert!((p.sigma_training / (2f64.sqrt() * 11200.0) - 1.0).abs() < 1e-4);
        // A regressor's intercept term has twice the range: twice the scale;
        // it has no calibration (its training keeps 0.85).
        let r = EbmSpec::default()
            .check(Schedule::PAPER)
            .unwrap()
            .plan(
                Budget::new(1.0, 0.0).unwrap(),
                100,
                14,
                Task::Regression { min: 0.0, max: 1.0 },
            )
            .unwrap();
        assert_eq!(
            r.intercept_noise,
            Noise::Laplace {
                num: 40 << 16,
                den: 1
            }
        );
        assert_eq!(r.calibration, None);
        // Without `calibrate` a classifier's plan is the previous one.
        let off = EbmParams {
            calibrate: false,
            ..EbmSpec::default().check(Schedule::PAPER).unwrap()
        }
        .plan(Budget::new(1.0, 0.0).unwrap(), 32_561, 14, Task::Binary)
        .unwrap();
        assert_eq!(off.calibration, None);
        assert_eq!(
            off.leaf_noise,
            Noise::Laplace {
                num: 647_649_883,
                den: 1
            }
        );
    }

    /// The default rule by hand: `10^-1.75 (n / s)^0.875` with `s` the
    /// leaf-sum noise at the rule's epochs and the default split (0.75 of
    /// the budget to a classifier's training, 0.85 to a regressor's).
    #[test]
    fn the_default_rule_by_hand() {
        let rule = |n, epsilon, delta, k| {
            Schedule::default_for(Task::Binary, n, Budget::new(epsilon, delta).unwrap(), k)
        };
        // delta = 0, n = 1000, K = 8, epsilon 1: one epoch's s = sqrt(2) x 2
        // x 8 / 0.75 = 30.170, n / s = 33.146 at E = 1 and 16.57 at E = 2
        // (< 10^1.375 = 23.71): E = 1, learning rate 10^(-1 + 0.375 x
        // log10 33.146) = 0.371672.
        let pure = rule(1000, 1.0, 0.0, 8);
        assert_eq!(pure.epochs, 1);
        assert!((pure.learning_rate - 0.371_672).abs() < 1e-5, "{pure:?}");
        // A regressor (training share 0.85) at epsilon 5: s = sqrt(2) x 2 x
        // 8 E / 4.25 = 5.3241 E, n / s = 37.565 at E = 5: five epochs,
        // learning rate 0.389533.
        let r = Schedule::default_for(
            Task::Regression { min: 0.0, max: 1.0 },
            1000,
            Budget::new(5.0, 0.0).unwrap(),
            8,
        );
        assert_eq!(r.epochs, 5);
        assert!((r.learning_rate - 0.389_533).abs() < 1e-5, "{r:?}");
        // delta = 1e-6: E = 10, s = sqrt(2 x 80 / (0.75 x 0.0243558)) =
        // 93.59, n / s = 10.685, learning rate 0.14131.
        let zcdp = rule(1000, 1.0, 1e-6, 8);
        assert_eq!(zcdp.epochs, 10);
        assert!((zcdp.learning_rate - 0.141_311).abs() < 1e-5, "{zcdp:?}");
        // Adult (n = 32,561, K = 14) at epsilon 1: 2.46, kept at 1.
        assert_eq!(rule(32_561, 1.0, 1e-6, 14).learning_rate, 1.0);
        // More epsilon never lowers the learning rate; tiny budgets floor
        // at 0.01.
        let mut last = 0.0;
        for epsilon in [0.01, 0.1, 0.5, 1.0, 5.0] {
            let lr = rule(2000, epsilon, 1e-6, 20).learning_rate;
            assert!(lr >= last && (0.01..=1.0).contains(&lr), "{lr}");
            last = lr;
        }
        // n / s = 0.00053: 10^(-1 + 0.375 x log10 0.00053) = 0.0059, floored.
        assert_eq!(rule(100, 0.001, 0.0, 50).learning_rate, 0.01);
        // A regressor with delta > 0: 20 epochs, slope 0.625. n = 1000, K =
        // 8, epsilon 1: s = sqrt(2 x 160 / (0.85 x 0.0243558)) = 124.32,
        // n / s = 8.043, learning rate 10^(-1.75 + 0.625 x 0.90542) = 0.06545.
        let r = Schedule::default_for(
            Task::Regression { min: 0.0, max: 1.0 },
            1000,
            Budget::new(1.0, 1e-6).unwrap(),
            8,
        );
        assert_eq!(r.epochs, 20);
        assert!((r.learning_rate - 0.065_45).abs() < 1e-4, "{r:?}");
    }

    /// The default bins by hand: `2^round(3/2 + log2(n / s) / 4)` (ties to
    /// even) in [4, 64].
    #[test]
    fn the_default_bins_by_hand() {
        // log2 14.7 = 3.877: 1.5 + 0.969 = 2.47, 2^2 = 4.
        assert_eq!(default_bins(14.7), 4);
        // Ties go to even: 16 gives 2.5 -> 2 (4 bins), 256 gives 3.5 -> 4
        // (16 bins), 4096 gives 4.5 -> 4 (16 bins).
        assert_eq!(default_bins(16.0), 4);
        assert_eq!(default_bins(256.0), 16);
        assert_eq!(default_bins(4096.0), 16);
        // 64: 3, 8 bins; 1000: 3.99, 16 bins; 2^14: 5, 32 bins.
        assert_eq!(default_bins(64.0), 8);
        assert_eq!(default_bins(1000.0), 16);
        assert_eq!(default_bins(16384.0), 32);
        // 2^18: 6, the most; far above and far below stay at the ends.
        assert_eq!(default_bins(262_144.0), 64);
        assert_eq!(default_bins(1e12), 64);
        assert_eq!(default_bins(0.5), 4);
        assert_eq!(default_bins(f64::NAN), 4);
        assert_eq!(default_bins(f64::INFINITY), 4);
        // Through the rule: the zCDP classifier of `the_default_rule_by_hand`
        // (n / s = 10.685): 1.5 + 0.85 = 2.35, 4 bins. Adult at epsilon 5
        // with delta 1e-6 (n = 32,561, K = 14): s = sqrt(2 x 140 / (0.75 x
        // rho)) with rho = 0.4630 (CKS20 at epsilon 5): 28.39, n / s = 1146.7,
        // 1.5 + 2.54 = 4.04: 16 bins.
        let zcdp = Schedule::default_for(Task::Binary, 1000, Budget::new(1.0, 1e-6).unwrap(), 8);
        assert_eq!(zcdp.max_bins, 4);
        // The schedule reports the ratio it used (eval prints it).
        let snr = zcdp.signal_to_noise.unwrap();
        assert!((snr - 10.685).abs() < 0.01, "{snr}");
        // Pure, same n and K, epsilon 1: one epoch, s = sqrt(2) x 2 x 8 /
        // 0.75 = 30.170, n / s = 33.146.
        let pure = Schedule::default_for(Task::Binary, 1000, Budget::new(1.0, 0.0).unwrap(), 8);
        let snr = pure.signal_to_noise.unwrap();
        assert!((snr - 33.146).abs() < 0.01, "{snr}");
        assert_eq!(Schedule::PAPER.signal_to_noise, None);
        let adult =
            Schedule::default_for(Task::Binary, 32_561, Budget::new(5.0, 1e-6).unwrap(), 14);
        assert_eq!(adult.max_bins, 16);
        // k classes keep the paper's 32.
        let k = Schedule::default_for(
            Task::Multiclass { k: 10 },
            1000,
            Budget::new(1.0, 1e-6).unwrap(),
            8,
        );
        assert_eq!(k.max_bins, PAPER_MAX_BINS);
        // A given max_bins wins over the rule's.
        let given = EbmSpec {
            max_bins: Some(7),
            ..EbmSpec::default()
        };
        assert_eq!(given.check(zcdp).unwrap().max_bins, 7);
        assert_eq!(EbmSpec::default().check(zcdp).unwrap().max_bins, 4);
    }

    /// The default leaves (stop 41): 16 (every bin of the rule its own leaf)
    /// for binary and regression labels at either purity, the paper's 3 for
    /// k classes and in [`Schedule::PAPER`]; a given value wins, and the
    /// check refuses what the kernel cannot hold.
    #[test]
    fn the_default_leaves() {
        let regression = Task::Regression {
            min: 0.0,
            max: 30.0,
        };
        for task in [Task::Binary, regression] {
            for delta in [0.0, 1e-6] {
                let s = Schedule::default_for(task, 3341, Budget::new(1.0, delta).unwrap(), 8);
                assert_eq!(s.max_leaves, 16, "{task:?} {delta}");
                assert_eq!(EbmSpec::default().check(s).unwrap().max_leaves, 16);
            }
        }
        let k = Schedule::default_for(
            Task::Multiclass { k: 10 },
            1000,
            Budget::new(1.0, 0.0).unwrap(),
            8,
        );
        assert_eq!(k.max_leaves, 3);
        assert_eq!(Schedule::PAPER.max_leaves, 3);
        assert_eq!(MAX_LEAVES, 16);
        let binary = Schedule::default_for(Task::Binary, 1000, Budget::new(1.0, 0.0).unwrap(), 8);
        let given = |l| {
            EbmSpec {
                max_leaves: Some(l),
                ..EbmSpec::default()
            }
            .check(binary)
        };
        assert_eq!(given(3).unwrap().max_leaves, 3);
        assert!(given(17).is_err());
        assert!(given(1).is_err());
    }

    /// k classes with delta = 0: the epochs grow with the signal (the most
    /// of 1, 2, 3, 5 keeping `n / s >= 10^2.25`), the learning rate is
    /// `10^-1 (n / s)^0.375` at those epochs.
    #[test]
    fn the_pure_multiclass_rule_by_hand() {
        let rule = |n, epsilon, k| {
            Schedule::default_for(
                Task::Multiclass { k: 10 },
                n,
                Budget::new(epsilon, 0.0).unwrap(),
                k,
            )
        };
        // n = 8794, K = 16, epsilon 5: one epoch's s = sqrt(2) x 2 x 2 x 16
        // / (0.85 x 5) = 21.2964; n / s = 412.93 at E = 1, 206.47 at E = 2,
        // 137.64 at E = 3 (< 177.83): E = 2, learning rate 10^(-1 + 0.375 x
        // log10 206.47) = 0.738021.
        let high = rule(8794, 5.0, 16);
        assert_eq!(high.epochs, 2);
        assert!((high.learning_rate - 0.738_021).abs() < 1e-5, "{high:?}");
        // epsilon 1: n / s = 82.59 at E = 1, below the threshold: one epoch,
        // learning rate 0.523409.
        let low = rule(8794, 1.0, 16);
        assert_eq!(low.epochs, 1);
        assert!((low.learning_rate - 0.523_409).abs() < 1e-5, "{low:?}");
        // A clean run takes five epochs and full steps.
        let clean = rule(1_000_000, 5.0, 4);
        assert_eq!((clean.epochs, clean.learning_rate), (5, 1.0));
        // A binary classifier keeps a lower ratio (10^1.375; training share
        // 0.75): the same n and K at epsilon 5 give n / s = 145.74 at E = 5,
        // learning rate 0.647655. The multiclass rule with a delta is
        // unchanged (10 epochs).
        let binary = Schedule::default_for(Task::Binary, 8794, Budget::new(5.0, 0.0).unwrap(), 16);
        assert_eq!(binary.epochs, 5);
        assert!(
            (binary.learning_rate - 0.647_655).abs() < 1e-5,
            "{binary:?}"
        );
        let zcdp = Schedule::default_for(
            Task::Multiclass { k: 10 },
            8794,
            Budget::new(5.0, 1e-6).unwrap(),
            16,
        );
        assert_eq!(zcdp.epochs, DEFAULT_EPOCHS_ZCDP);
        // More epsilon never lowers the epochs.
        let mut last = 0;
        for epsilon in [0.1, 0.5, 1.0, 2.0, 5.0, 20.0] {
            let e = rule(8794, epsilon, 16).epochs;
            assert!(e >= last, "{epsilon}: {e}");
            last = e;
        }
    }

    #[test]
    fn refusals_before_any_charge() {
        // So little epsilon that the noise cannot be sampled exactly, with
        // either variant.
        for delta in [1e-6, 0.0] {
            assert!(
                plan(1e-12, delta)
                    .unwrap_err()
                    .to_string()
                    .contains("too large"),
                "{delta}"
            );
        }
        let too_big = EbmSpec {
            binning_share: Some(0.96),
            ..EbmSpec::default()
        }
        .check(Schedule::PAPER)
        .unwrap()
        .plan(Budget::new(1.0, 0.0).unwrap(), 100, 3, Task::Binary);
        assert!(too_big.unwrap_err().to_string().contains("binning_share"));
        for bad in [
            EbmSpec {
                max_bins: Some(1),
                ..EbmSpec::default()
            },
            EbmSpec {
                learning_rate: Some(f64::NAN),
                ..EbmSpec::default()
            },
            EbmSpec {
                epochs: Some(0),
                ..EbmSpec::default()
            },
            EbmSpec {
                max_leaves: Some(1),
                ..EbmSpec::default()
            },
            EbmSpec {
                binning_share: Some(1.0),
                ..EbmSpec::default()
            },
        ] {
            assert!(bad.check(Schedule::PAPER).is_err(), "{bad:?}");
        }
    }
}
