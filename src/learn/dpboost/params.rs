//! DPBoost's parameters, defaults and plan: everything public about a run,
//! computed from the parameters, the budget and the public row count before
//! any row is read.
//!
//! # Sensitivities under substitution (docs/privacy.md, "DPBoost")
//!
//! The paper's bounds (\[DPB\] Lemma 1, Lemma 2, Cor. 2) are for add-one
//! neighbours; the service's neighbours differ by substituting one row. With
//! gradients in [-g*, g*] (g* = 1 after filtering, §3.1) and a changed row:
//! - split gain G = GL^2/(nL + lambda) + GR^2/(nR + lambda): a row that stays
//!   in one node changes it by at most 2 x 3 g*^2 (it may leave one side and
//!   join the other, each an add/remove change of Lemma 1); a row that moves
//!   between two nodes of one level changes each by at most 3 g*^2. We
//!   calibrate every node of a level for `SPLIT_SENSITIVITY` = 6 g*^2, so one
//!   level costs its epsilon in both cases (2 x half, or 1 x whole).
//! - leaf values V = -S/(n + lambda), clipped to [-c, c] (GLC): the vector of
//!   a tree's leaves moves by at most min(2 g*/(1 + lambda), 4 c) in L1 (one
//!   leaf by 2 g*/(n + lambda), or two leaves by min(g*/(1 + lambda), 2 c)
//!   each).

use serde::{Deserialize, Serialize};

use crate::data::Task;
use crate::learn::LearnError;
use crate::learn::threshold::{self, ThresholdPlan};
use crate::privacy::grid::GRID_EPSILON;
use crate::privacy::{Budget, PrivacyCost};

/// L2 regularisation of the leaf values, \[DPB\] §4 (lambda = 0.1); fixed, as in
/// the paper's experiments.
pub const L2: f64 = 0.1;

/// g*: the filtering threshold and gradient bound (\[DPB\] §3.1: g_l* = 1 for
/// square loss on labels in [-1, 1] and for the clipped log-loss).
pub const G_STAR: f64 = 1.0;

/// Gradients are rounded to this grid (2^-20) so node sums are exact integers.
pub const GRAD_BITS: u32 = 20;

/// Leaf values are released on this grid (2^-20).
pub const LEAF_BITS: u32 = 20;

/// Gain sensitivity under substitution (module docs), before the float margin.
pub const SPLIT_SENSITIVITY: f64 = 6.0 * G_STAR * G_STAR;

/// DPBoost's parameters as a request gives them (unset ones take the paper's
/// defaults, [`DpBoostParams::defaults`]).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DpBoostSpec {
    /// Trees per ensemble T_e.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trees_per_ensemble: Option<u32>,
    /// Number of ensembles N_e.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ensembles: Option<u32>,
    /// Depth of every tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// Shrinkage eta.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_rate: Option<f64>,
    /// Share of each ensemble's epsilon for the splits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_share: Option<f64>,
    /// Share of the total epsilon for the noisy initial score (0: public 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_share: Option<f64>,
    /// How leaf values are released (`newton` or the paper's `clipped_mean`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves: Option<LeafRelease>,
    /// A binary classifier's share of epsilon for its decision threshold
    /// (`dpboost::threshold`), 0 for none (default:
    /// [`default_threshold_share`]); other tasks take none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_share: Option<f64>,
}

/// [`default_threshold_share`]'s `K` (`threshold::default_share`).
///
/// Chosen on the suite's nine binary sets leave-one-dataset-out
/// (`scripts/threshold_share_lodo.py --learner dpboost --repeats 10`; mean
/// accuracy over epsilon 0.1 to 5, delta 0 and 1e-6): 800 on every
/// held-out set, held-out mean 0.738 against 0.709 without a threshold
/// (docs/accuracy.md, "DPBoost's decision threshold").
pub const THRESHOLD_ROWS: f64 = 800.0;

/// The default share of a binary fit's epsilon for its decision threshold:
/// a public function of n and epsilon (`threshold::default_share` with
/// [`THRESHOLD_ROWS`]).
pub fn default_threshold_share(n_rows: usize, epsilon: f64) -> f64 {
    threshold::default_share(n_rows, epsilon, THRESHOLD_ROWS)
}

/// How a tree's leaf values are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeafRelease {
    /// \[DPB\] Alg. 1: the value V = -S/(n + lambda) clipped to [-c, c] (GLC)
    /// with Laplace noise for its worst case, a leaf of one row: the noise
    /// does not shrink as leaves grow. The default of a model file that does
    /// not name it (files written before the choice existed).
    #[default]
    ClippedMean,
    /// Noisy gradient and hessian sums per leaf, then the Newton step
    /// -S~/(H~ + lambda) as post-processing (Maddock, Cormode, Wang, Maple
    /// and Jha, "Federated Boosted Decision Trees with Differential
    /// Privacy", CCS 2022, §3-4: the noisy-sum leaf release of DP-GBDT):
    /// the noise on a sum is independent of the leaf's size, so the value's
    /// error falls as 1/(rows in the leaf).
    Newton,
}

impl DpBoostSpec {
    /// Whether any parameter was given.
    pub fn any_given(&self) -> bool {
        self.trees_per_ensemble.is_some()
            || self.ensembles.is_some()
            || self.max_depth.is_some()
            || self.learning_rate.is_some()
            || self.split_share.is_some()
            || self.init_share.is_some()
            || self.leaves.is_some()
            || self.threshold_share.is_some()
    }

    /// Fill the defaults for `task` and check ranges (errors name the field
    /// in parentheses).
    pub fn check(&self, task: Task) -> Result<DpBoostParams, LearnError> {
        let d = DpBoostParams::defaults(task);
        let p = DpBoostParams {
            trees_per_ensemble: self.trees_per_ensemble.unwrap_or(d.trees_per_ensemble),
            ensembles: self.ensembles.unwrap_or(d.ensembles),
            max_depth: self.max_depth.unwrap_or(d.max_depth),
            learning_rate: self.learning_rate.unwrap_or(d.learning_rate),
            split_share: self.split_share.unwrap_or(d.split_share),
            init_share: self.init_share.unwrap_or(d.init_share),
            leaves: self.leaves.unwrap_or(d.leaves),
            threshold_share: self.threshold_share.unwrap_or(0.0),
        };
        let bad = |field: &str, msg: &str| {
            Err(LearnError::InvalidParameter(format!(
                "DPBoost ({field}): {msg}"
            )))
        };
        if !(1..=1000).contains(&p.trees_per_ensemble) {
            return bad("trees_per_ensemble", "must be in 1..=1000");
        }
        if !(1..=1000).contains(&p.ensembles) {
            return bad("ensembles", "must be in 1..=1000");
        }
        if !(1..=10).contains(&p.max_depth) {
            return bad("max_depth", "must be in 1..=10");
        }
        if !(p.learning_rate > 0.0 && p.learning_rate < 1.0) {
            return bad("learning_rate", "must be in (0, 1)");
        }
        if !(p.split_share > 0.0 && p.split_share < 1.0) {
            return bad("split_share", "must be in (0, 1)");
        }
        if !(p.init_share >= 0.0 && p.init_share < 1.0) {
            return bad("init_share", "must be in [0, 1)");
        }
        if !(0.0..=threshold::MAX_THRESHOLD_SHARE).contains(&p.threshold_share) {
            return bad("threshold_share", "must be in [0, 0.5]");
        }
        if p.threshold_share > 0.0 && task != Task::Binary {
            return bad(
                "threshold_share",
                "only a binary classifier has a decision threshold; give 0 or leave it out",
            );
        }
        Ok(p)
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// Checked parameters with every default filled in.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpBoostParams {
    /// Trees per ensemble T_e.
    pub trees_per_ensemble: u32,
    /// Number of ensembles N_e.
    pub ensembles: u32,
    /// Depth of every tree (full trees: 2^depth leaves).
    pub max_depth: u32,
    /// Shrinkage eta.
    pub learning_rate: f64,
    /// Share of each ensemble's epsilon for the split selections.
    pub split_share: f64,
    /// Share of the total epsilon for the noisy initial score.
    pub init_share: f64,
    /// How leaf values are released (files without it: the paper's).
    #[serde(default)]
    pub leaves: LeafRelease,
    /// A binary classifier's share of epsilon for its decision threshold
    /// (files before issue 25's threshold: none; not written when 0, so
    /// older files read and write back unchanged).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub threshold_share: f64,
}

impl DpBoostParams {
    /// \[DPB\] §4: eta = 0.01, depth 6, T_e = 50, one ensemble (Fig. 2);
    /// Alg. 1 gives half of each tree's budget to the leaves and half to the
    /// splits (eps_nleaf = eps_t / (2 Depth)). The initial score takes 5% of
    /// epsilon (our choice: \[code\] starts from the non-private label average,
    /// PAPERS.md §4 item 18; a zero start with eta = 0.01 leaves a regressor
    /// far from the mean after 50 trees).
    pub const PAPER: DpBoostParams = DpBoostParams {
        trees_per_ensemble: 50,
        ensembles: 1,
        max_depth: 6,
        learning_rate: 0.01,
        split_share: 0.5,
        init_share: 0.05,
        leaves: LeafRelease::ClippedMean,
        threshold_share: 0.0,
    };

    /// The defaults of a classifier (docs/accuracy.md, "DPBoost"): the
    /// paper's release of the leaves is the bottleneck (its noise is
    /// calibrated to a leaf of one row: scale 0.48 at epsilon = 8 against
    /// leaf values of about 0.2), so the defaults release Newton leaves from
    /// noisy sums, and with precise leaves fewer, shallower trees on larger
    /// subsets make the noisy split selection informative (a gain grows
    /// with the rows of the node, its noise does not). With eta = 0.3 the
    /// ten Newton steps move a logit far enough to change the predicted
    /// class (at 0.1 accuracy stays at the majority class on Adult).
    pub const DEFAULT: DpBoostParams = DpBoostParams {
        trees_per_ensemble: 10,
        ensembles: 1,
        max_depth: 3,
        learning_rate: 0.3,
        split_share: 0.5,
        init_share: 0.05,
        leaves: LeafRelease::Newton,
        // The share is filled from n and epsilon when planned
        // (`default_threshold_share`).
        threshold_share: 0.0,
    };

    /// The defaults for `task` (public: from the schema): [`Self::DEFAULT`]
    /// for a classifier; a regressor takes eta = 0.1, because its steps are
    /// in scaled label units (half the label range per unit), where the
    /// noise of a step costs much more RMSE than a logit's noise costs AUC
    /// (measured on Abalone, docs/accuracy.md). Data-independent.
    pub fn defaults(task: Task) -> DpBoostParams {
        match task {
            Task::Binary | Task::Multiclass { .. } => DpBoostParams::DEFAULT,
            Task::Regression { .. } => DpBoostParams {
                learning_rate: 0.1,
                ..DpBoostParams::DEFAULT
            },
        }
    }

    /// The request form with every field set.
    pub fn to_spec(self) -> DpBoostSpec {
        DpBoostSpec {
            trees_per_ensemble: Some(self.trees_per_ensemble),
            ensembles: Some(self.ensembles),
            max_depth: Some(self.max_depth),
            learning_rate: Some(self.learning_rate),
            split_share: Some(self.split_share),
            init_share: Some(self.init_share),
            leaves: Some(self.leaves),
            threshold_share: Some(self.threshold_share),
        }
    }

    /// Calibrate for `budget` and `n_rows` public rows.
    pub fn plan(self, budget: Budget, n_rows: usize) -> Result<DpBoostPlan, LearnError> {
        let sizes = subset_sizes(n_rows, self.trees_per_ensemble, self.learning_rate);
        if sizes.last().is_none_or(|&s| s == 0) {
            return Err(LearnError::InvalidParameter(format!(
                "DPBoost (trees_per_ensemble): {n_rows} rows are too few for {} trees per ensemble with learning rate {} (the last tree's subset would be empty)",
                self.trees_per_ensemble, self.learning_rate
            )));
        }
        let epsilon = budget.epsilon();
        let epsilon_init = epsilon * self.init_share;
        let epsilon_ensemble = (epsilon - epsilon_init) / f64::from(self.ensembles);
        let epsilon_level = epsilon_ensemble * self.split_share / f64::from(self.max_depth);
        let epsilon_leaves = epsilon_ensemble * (1.0 - self.split_share);
        // The grid of report-noisy-max costs 2^-29 per call, and a level may
        // touch two nodes (module docs): keep a level's epsilon well above it.
        if epsilon_level <= 1e3 * GRID_EPSILON {
            return Err(LearnError::InvalidParameter(format!(
                "DPBoost (epsilon): {epsilon_level:e} per tree level is too small; raise epsilon or lower ensembles/max_depth"
            )));
        }
        // Float margin: gains are computed from exact integer sums with a
        // few roundings, each of relative error 2^-53 on a value below n
        // (module docs of `tree`); n 2^-46 bounds the difference this makes
        // between neighbours, the division by the scale included.
        let split_sensitivity = SPLIT_SENSITIVITY + n_rows as f64 * 2f64.powi(-46);
        let split_scale = 2.0 * split_sensitivity / (epsilon_level - 2.0 * GRID_EPSILON);
        Ok(DpBoostPlan {
            params: self,
            budget,
            n_rows,
            sizes,
            epsilon_init,
            epsilon_ensemble,
            epsilon_level,
            epsilon_leaves,
            split_sensitivity,
            split_scale,
            one_vs_rest: None,
            threshold: None,
        })
    }

    /// Calibrate for `task`: a binary or regression label as [`Self::plan`];
    /// k classes as k one-vs-rest binary fits (`super::multiclass`), each
    /// planned exactly as a binary run at epsilon / k (delta is unused:
    /// DPBoost is pure), so every scale checked is a per-fit scale.
    pub fn plan_for(
        self,
        task: Task,
        budget: Budget,
        n_rows: usize,
    ) -> Result<DpBoostPlan, LearnError> {
        match task {
            Task::Multiclass { k } => {
                let fit = crate::learn::lazybb::multiclass::per_fit_budget(budget, k)?;
                // Pure: each fit is planned at its epsilon share alone.
                let mut plan = self.plan(Budget::new(fit.epsilon(), 0.0)?, n_rows)?;
                plan.one_vs_rest = Some((k, budget));
                Ok(plan)
            }
            Task::Regression { .. } => self.plan(budget, n_rows),
            // A binary fit ends with its decision threshold: its share of
            // epsilon off the top (basic composition), the fit planned at
            // the rest (`learn::threshold::split_pure`). DPBoost is pure
            // whatever delta the job offers, so the split is pure too: a
            // zCDP split would charge a rho that the pure fit's loss exceeds.
            Task::Binary if self.threshold_share > 0.0 => {
                let (fit, t) =
                    threshold::split_pure(budget.epsilon(), self.threshold_share, n_rows)?;
                let mut plan = self.plan(fit, n_rows)?;
                plan.threshold = Some(t);
                Ok(plan)
            }
            Task::Binary => self.plan(budget, n_rows),
        }
    }
}

/// Subset size of each tree of an ensemble, by its 0-based position p:
/// floor(n eta (1 - eta)^p / (1 - (1 - eta)^T_e)). PAPERS.md §1.7 "Indexing
/// fix": the first tree gets the largest share (\[DPB\] Alg. 2 as written gives
/// it to the last). Public: a function of n and the parameters only.
pub fn subset_sizes(n_rows: usize, trees_per_ensemble: u32, eta: f64) -> Vec<usize> {
    let total = 1.0 - (1.0 - eta).powi(trees_per_ensemble as i32);
    (0..trees_per_ensemble)
        .map(|p| (n_rows as f64 * eta * (1.0 - eta).powi(p as i32) / total).floor() as usize)
        .collect()
}

/// GLC's clipping bound for the tree at 0-based position p in its ensemble:
/// g* (1 - eta)^p (\[DPB\] Thm 6 with PAPERS.md's within-ensemble index).
pub fn clip_bound(eta: f64, position: u32) -> f64 {
    G_STAR * (1.0 - eta).powi(position as i32)
}

/// L1 sensitivity of a tree's leaf vector under substitution (module docs):
/// min(2 g*/(1 + lambda), 4 c).
pub fn leaf_sensitivity(clip: f64) -> f64 {
    (2.0 * G_STAR / (1.0 + L2)).min(4.0 * clip)
}

/// A checked, calibrated DPBoost run.
#[derive(Debug, Clone, PartialEq)]
pub struct DpBoostPlan {
    /// The parameters.
    pub params: DpBoostParams,
    /// The budget (pure: delta is not used).
    pub budget: Budget,
    /// Public row count.
    pub n_rows: usize,
    /// Subset size by position in an ensemble.
    pub sizes: Vec<usize>,
    /// Epsilon of the noisy initial score (0: public start at 0).
    pub epsilon_init: f64,
    /// Epsilon of each ensemble (every tree in it, by parallel composition).
    pub epsilon_ensemble: f64,
    /// Epsilon of one level of split selections in a tree.
    pub epsilon_level: f64,
    /// Epsilon of a tree's leaf values.
    pub epsilon_leaves: f64,
    /// Gain sensitivity with the float margin.
    pub split_sensitivity: f64,
    /// Laplace scale of report-noisy-max over the split gains.
    pub split_scale: f64,
    /// k classes: the number of one-vs-rest fits and the job's whole
    /// budget; every other field is then one binary fit's plan at epsilon /
    /// k (`budget` is that share). `None` for a binary or regression label.
    pub one_vs_rest: Option<(usize, Budget)>,
    /// A binary classifier's decision threshold, released after the fit
    /// (`dpboost::threshold`): with it, `budget` is the fit's part and the
    /// run's charge is the threshold plan's.
    pub threshold: Option<ThresholdPlan>,
}

impl DpBoostPlan {
    /// Trees of one fit (of each class's fit for k classes).
    pub fn trees(&self) -> u32 {
        self.params.trees_per_ensemble * self.params.ensembles
    }

    /// Progress steps: every tree of every fit (k fits for k classes).
    pub fn steps(&self) -> u32 {
        self.trees() * self.one_vs_rest.map_or(1, |(k, _)| k as u32)
    }

    /// Pure epsilon-DP: sequential over ensembles and the initial score;
    /// for k classes, sequential over the k fits, whose epsilon shares sum
    /// to at most the job's epsilon, which is what is charged.
    pub fn cost(&self) -> PrivacyCost {
        if let Some(t) = &self.threshold {
            return t.cost();
        }
        PrivacyCost::Pure {
            epsilon: self
                .one_vs_rest
                .map_or(self.budget, |(_, total)| total)
                .epsilon(),
        }
    }

    /// The leaf grid sensitivity (in 2^-20 units) and Laplace scale of the
    /// leaves of the tree at `position`: the bound of [`leaf_sensitivity`] on
    /// the grid, plus one step per changed leaf for rounding and one for the
    /// float error of V = -S/(n + lambda) (`tree` module docs).
    pub fn leaf_noise(&self, position: u32) -> (u64, f64) {
        let clip = clip_bound(self.params.learning_rate, position);
        let units = (leaf_sensitivity(clip) * f64::from(1u32 << LEAF_BITS)).ceil() as u64 + 3;
        (units, units as f64 / self.epsilon_leaves)
    }
}

impl DpBoostPlan {
    /// Every Laplace scale the fit of a `task` model will draw with (the
    /// initial score's, each tree position's leaves or the Newton sums, the
    /// split selection's), checked before any charge as LazyBB's plan checks
    /// its own (issue 26, item 6): before, `init_share` 1e-15 at epsilon
    /// 0.01 was charged and then failed on an initial-score scale of 1e17.
    /// The scales are those of `fit::initial_score` and `tree::grow`.
    pub fn check_scales(&self, task: Task) -> Result<(), LearnError> {
        let unit = f64::from(1u32 << GRAD_BITS);
        let mut scales: Vec<(&str, f64)> = Vec::new();
        if self.epsilon_init > 0.0 {
            scales.push((
                "the initial score's (init_share)",
                match task {
                    Task::Binary | Task::Multiclass { .. } => 1.0 / self.epsilon_init,
                    Task::Regression { .. } => 2.0 * unit / self.epsilon_init,
                },
            ));
        }
        match self.params.leaves {
            LeafRelease::ClippedMean => {
                for position in 0..self.params.trees_per_ensemble {
                    scales.push(("a tree's leaves'", self.leaf_noise(position).1));
                }
            }
            LeafRelease::Newton => {
                let (g, h) = self.newton_noise();
                scales.push(("the leaves' gradient sums'", g));
                scales.push(("the leaves' hessian sums'", h));
            }
        }
        for (what, scale) in scales {
            if !super::tree::laplace_scale_usable(scale) {
                return Err(LearnError::InvalidParameter(format!(
                    "DPBoost (epsilon): {what} Laplace scale {scale:e} is out of range; raise epsilon or the share it comes from{}",
                    self.per_fit_note()
                )));
            }
        }
        if !(self.split_scale.is_finite() && self.split_scale > 0.0) {
            return Err(LearnError::InvalidParameter(format!(
                "DPBoost (epsilon): the split selection's scale {:e} is not usable",
                self.split_scale
            )));
        }
        Ok(())
    }
}

/// Newton leaves: a row's hessian on the 2^-20 grid is at most this (1: the
/// square loss's; the log-loss's |g|(1 - |g|) is at most 1/4, so the bound
/// is loose for a classifier, which costs little: the hessian sums are
/// large).
pub const HESSIAN_BOUND_UNITS: i64 = 1 << GRAD_BITS;

impl DpBoostPlan {
    /// For k classes, what an error about a scale adds: the scale is one
    /// one-vs-rest fit's, at epsilon / k.
    fn per_fit_note(&self) -> String {
        match self.one_vs_rest {
            Some((k, _)) => format!(
                " (each of the {k} one-vs-rest fits of a {k}-class label runs at epsilon / {k})"
            ),
            None => String::new(),
        }
    }

    /// Newton leaves ([`LeafRelease::Newton`]): the Laplace scales, in 2^-20
    /// grid units, of the noise on every leaf's gradient sum and hessian
    /// sum. Sensitivity under substitution (module docs): the changed row is
    /// in at most one leaf of the tree before and one after, so the vector
    /// of a tree's gradient sums moves by at most 2 x 2^20 in L1 (|q| <=
    /// 2^20 on the grid, GDF) and that of its hessian sums by at most 2 x
    /// [`HESSIAN_BOUND_UNITS`]. Each vector gets half of the leaves'
    /// epsilon (sequential composition): scale = 2 x bound / (eps_leaves /
    /// 2). Integer sums, integer noise: no float margin is needed.
    pub fn newton_noise(&self) -> (f64, f64) {
        let half = self.epsilon_leaves / 2.0;
        let g = 2.0 * f64::from(1u32 << GRAD_BITS) / half;
        let h = 2.0 * HESSIAN_BOUND_UNITS as f64 / half;
        (g, h)
    }
}

/// The public noise description of the estimate route.
pub fn noise_json(p: &DpBoostPlan) -> serde_json::Value {
    let (units, scale) = p.leaf_noise(0);
    let unit = f64::from(1u32 << LEAF_BITS);
    serde_json::json!({
        "mechanism": format!(
            "{}DPBoost: {} per tree node over the split gains of public candidates; exact discrete Laplace noise on each tree's clipped leaf values",
            match p.one_vs_rest {
                Some((k, _)) => format!(
                    "one-vs-rest over {k} classes: {k} binary DPBoost fits, each at epsilon / {k} (the scales below are one fit's); in each, "
                ),
                None => String::new(),
            },
            crate::privacy::mechanisms::REPORT_NOISY_MAX_LAPLACE.name
        ),
        "n_rows": p.n_rows,
        "trees": p.trees(),
        "subset_sizes": p.sizes,
        "epsilon_init": p.epsilon_init,
        "epsilon_ensemble": p.epsilon_ensemble,
        "epsilon_level": p.epsilon_level,
        "epsilon_leaves": p.epsilon_leaves,
        "split_sensitivity": p.split_sensitivity,
        "split_scale": p.split_scale,
        "leaves": p.params.leaves,
        "leaf_sensitivity": units as f64 / unit,
        "leaf_scale": scale / unit,
        "newton_gradient_sum_scale": p.newton_noise().0 / unit,
        "newton_hessian_sum_scale": p.newton_noise().1 / unit,
        "one_vs_rest_fits": p.one_vs_rest.map(|(k, _)| k),
        "epsilon_per_fit": p.budget.epsilon(),
        "epsilon_threshold": p.threshold.map(|t| t.epsilon),
        "threshold_scale": p.threshold.map(|t| t.scale),
    })
}
