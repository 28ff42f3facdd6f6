//! dp-linear's output-perturbation solver: full-batch gradient descent on a
//! regularised, Lipschitz and smooth loss over the public feature vector of
//! [`super::features`], run to a public number of steps without noise, then
//! the final coefficients released once with noise calibrated to how far
//! one substituted row can move them (issue 25, fourth round).
//!
//! # The objective
//!
//! A row's features are the layout of [`super::features`]: `K` blocks
//! (the intercept's included), each with at most one non-zero value, in
//! `[-1, 1]`. So `||x||_2 <= sqrt(K)`, and `x~ = x / sqrt(K)` has
//! `||x~||_2 <= 1` (`K` is public: the schema fixes it). With `n` rows
//! (public under substitution) and the regulariser `lambda > 0` (public):
//!
//! ```text
//! J_D(w) = (1/n) sum_i l(y_i, w . x~_i) + (lambda / 2) ||w||^2
//! ```
//!
//! - binary classification, `y` in `{0, 1}`: the logistic loss,
//!   `l' = sigmoid(z) - y` in `[-1, 1]`, `0 <= l'' <= 1/4`;
//! - regression, `y` the label clamped to its public bounds and scaled onto
//!   `[-1, 1]`: the Huber loss with knee 1, `l' = clamp(z - y, -1, 1)`,
//!   `0 <= l'' <= 1`.
//!
//! So every row's gradient `l'(w . x~) x~` has norm at most `L = 1`, `J_D`
//! is `lambda`-strongly convex and `beta = h + lambda` smooth (`h` = 1/4 or
//! 1), with `beta` public.
//!
//! # The iterate
//!
//! `w_0 = 0`, `w_{t+1} = P(w_t - eta grad J_D(w_t))` with `eta = 1 / beta`
//! and `P` the projection on the ball of radius `R = sqrt(2 J0 / lambda)`,
//! `J0` the largest `J_D(0)` can be (`ln 2` for the logistic loss, `1/2` for
//! the Huber loss on `[-1, 1]`): the minimiser has
//! `lambda/2 ||w*||^2 <= J_D(w*) <= J_D(0) <= J0`, so it lies in the ball,
//! and the projection keeps every iterate finite and bounded (public `R`).
//! `T` steps, `T` public ([`default_steps`]); every step visits every row
//! and every block (constant work).
//!
//! # Sensitivity (substitution neighbours `D`, `D'`, `n` public)
//!
//! 1. For every `w`, `grad J_D(w) - grad J_D'(w)` is one row's gradient
//!    minus another's over `n`: norm at most `2L / n`.
//! 2. For a `lambda`-strongly convex, `beta`-smooth `f` and `eta <= 1/beta`,
//!    the step `G(w) = w - eta grad f(w)` is a `(1 - eta lambda)`-contraction:
//!    `G(w) - G(w') = (I - eta H)(w - w')` with `H` an average Hessian
//!    between `lambda I` and `beta I`, so the eigenvalues of `I - eta H`
//!    lie in `[1 - eta beta, 1 - eta lambda]`, a subset of
//!    `[0, 1 - eta lambda]`. The projection on a convex set is
//!    non-expansive, so `P o G` is one too.
//! 3. With `d_t = ||w_t - w'_t||`:
//!    `d_{t+1} <= ||G_D(w_t) - G_D(w'_t)|| + ||G_D(w'_t) - G_D'(w'_t)||
//!    <= (1 - eta lambda) d_t + 2 eta L / n`, and `d_0 = 0`, so
//!    `d_T <= (2 eta L / n) sum_{t < T} (1 - eta lambda)^t
//!    <= 2L / (n lambda)` for every `T`.
//!
//! This is Chaudhuri, Monteleoni and Sarwate's (2011, §3, Corollary 8)
//! bound `2 / (n lambda)` for the exact minimiser, shown here for the
//! iterate the code computes, in the manner of Wu, Li, Kumar, Chaudhuri,
//! Jha and Naughton (2017, "Bolt-on differential privacy", §3, Lemma 8,
//! the full-batch case of their convex analysis).
//!
//! **Floating point.** The bound is for exact arithmetic. The code computes
//! each gradient with compensated (TwoSum) sums, so each step's float
//! error is a few units in the last place of the quantities it touches;
//! the contraction keeps the accumulated error of the computed iterate
//! below roughly `u n K (1 + R) / lambda` in units of the bound's `1/(n
//! lambda)` scale, that is relative to `2/(n lambda)` at most
//! `c u n K (1 + R)` (`u = 2^-53`), with `c` a small constant. The plan
//! adds [`SENSITIVITY_MARGIN`] (relative) to the bound and refuses a run
//! whose estimate `FLOAT_ERROR_CONSTANT u n K (1 + R)` exceeds it (an error
//! analysis with a stated constant, not a machine-checked proof).
//!
//! # Release and noise
//!
//! The computed `w_T` is rounded to the grid `gamma` (public) and noise
//! added to the integers: `q = round(w_T / gamma)`. Rounding moves each
//! coordinate by at most 1/2 a grid step, so with `Delta = (1 + margin)
//! 2/(n lambda)`:
//!
//! - `||q - q'||_1 <= sqrt(d) Delta / gamma + d` (`d` features, the
//!   intercept's included): pure DP, discrete Laplace of scale
//!   `(sqrt(d) Delta / gamma + d) / epsilon` per coordinate (the geometric
//!   mechanism, Ghosh, Roughgarden and Sundararajan 2009; CKS20 §2). The
//!   grid is `gamma = sqrt(d) Delta / 2^20`, so the L1 sensitivity is
//!   `2^20 + d` grid steps exactly.
//! - `||q - q'||_2 <= Delta / gamma + sqrt(d)`: zCDP, discrete Gaussian of
//!   variance `(Delta / gamma + sqrt(d))^2 / (2 rho)` per coordinate (CKS20
//!   Thm 4), with `gamma` chosen so the standard deviation is about 2^13
//!   grid steps (the exact sampler takes variances below 2^30).
//!
//! One release, so the whole budget: `epsilon` (pure) or `rho` (zCDP). The
//! coefficients in the original feature space are `gamma (q + noise) /
//! sqrt(K)` (and, for a regressor, back in label units): post-processing.

use serde::{Deserialize, Serialize};

use super::features::{self, BlockRows};
use super::fit::half_range;
use super::model::LinearModel;
use super::params::{LinearPlan, Noise};
use crate::data::{Dataset, Encoder, Task};
use crate::learn::LearnError;
use crate::privacy::{Budget, NoiseRng, zcdp};

/// The relative margin added to the sensitivity `2 / (n lambda)` for the
/// float error of the computed iterate (module docs).
pub const SENSITIVITY_MARGIN: f64 = 1.0 / 1024.0;
/// The constant of the float-error estimate `c u n K (1 + R)` the plan
/// checks against [`SENSITIVITY_MARGIN`] (generous: the analysis gives a
/// single-digit constant).
pub const FLOAT_ERROR_CONSTANT: f64 = 64.0;
/// Grid steps per `sqrt(d)` sensitivity in the pure-DP release: the
/// rounding adds `d` steps to the `2^20` of the L1 sensitivity.
const L1_GRID_STEPS: f64 = (1u64 << 20) as f64;
/// The discrete Gaussian's standard deviation in grid steps, about (the
/// rounding's `sqrt(d)` adds a little): its variance stays below the exact
/// sampler's 2^30.
const GAUSSIAN_SD_STEPS: f64 = 8192.0;
/// The exact discrete Gaussian takes variances below 2^30; plans stay below
/// 2^29 so the rational rounded up fits.
const MAX_VARIANCE: f64 = (1u64 << 29) as f64;
/// The discrete Laplace takes a scale numerator below 2^64.
pub(super) const MAX_LAPLACE_SCALE: f64 = (1u64 << 62) as f64;
/// The largest `|w / gamma|` (grid steps): `R / gamma` must stay below it so
/// the rounded coordinates and the noise fit an `i128` with room.
pub(super) const MAX_GRID_COORDINATE: f64 = (1u64 << 60) as f64;
/// Largest number of gradient steps accepted.
pub const MAX_STEPS: u32 = 20_000;
/// The default steps are `STEPS_PER_CONDITION` times the condition number
/// `beta / lambda`: the exact iterate's distance to the minimiser shrinks by
/// `(1 - lambda / beta)^T <= e^(-4)` (not fitted).
const STEPS_PER_CONDITION: f64 = 4.0;
/// The default steps' range.
const MIN_DEFAULT_STEPS: u32 = 16;
/// The default steps' cap (the fit time grows with it; the bound holds for
/// every `T`).
pub const MAX_DEFAULT_STEPS: u32 = 2_000;
/// Largest regulariser accepted.
pub const MAX_REGULARIZATION: f64 = 1e3;

/// The loss of a task: its curvature bound `h` and the bound `J0` on
/// `J_D(0)` (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    /// Logistic loss on `{0, 1}` labels: `h = 1/4`, `J0 = ln 2`.
    Logistic,
    /// Huber loss (knee 1) on labels in `[-1, 1]`: `h = 1`, `J0 = 1/2`.
    Huber,
}

impl Loss {
    /// The loss of `task`; multiclass has none here.
    pub fn of(task: Task) -> Result<Loss, LearnError> {
        match task {
            Task::Binary => Ok(Loss::Logistic),
            Task::Regression { .. } => Ok(Loss::Huber),
            Task::Multiclass { .. } => Err(LearnError::InvalidParameter(
                "solver (solver): output-perturbation is for binary classification and regression; use block-descent for a multiclass label".into(),
            )),
        }
    }

    /// The bound `h` on `l''`.
    pub fn curvature(self) -> f64 {
        match self {
            Loss::Logistic => 0.25,
            Loss::Huber => 1.0,
        }
    }

    /// The bound `J0` on `J_D(0)` (the largest loss at score 0).
    pub fn at_zero(self) -> f64 {
        match self {
            Loss::Logistic => std::f64::consts::LN_2,
            Loss::Huber => 0.5,
        }
    }

    /// `l'(z)` clamped to `[-1, 1]` after it is computed (so the bound `L = 1`
    /// holds for the value as computed; NaN becomes 0).
    pub(super) fn derivative(self, z: f64, y: f64) -> f64 {
        let g = match self {
            Loss::Logistic => logistic(z) - y,
            Loss::Huber => z - y,
        };
        if g.is_nan() { 0.0 } else { g.clamp(-1.0, 1.0) }
    }
}

/// The logistic function without a branch on the sign of `z` (the
/// descents compute it for every row at every step, so a branch would make
/// their instruction count depend on how many scores are negative):
/// `exp(-z)` overflows to infinity for very negative `z`, giving 0.
fn logistic(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// Knuth's TwoSum: `a + b` and its rounding error, exactly, without a
/// branch (Neumaier's variant compares magnitudes; the descents run it for
/// every row at every step, so its work must not depend on the values).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// Everything public about an output-perturbation run (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputPlan {
    /// The regulariser `lambda`.
    pub lambda: f64,
    /// Gradient steps `T`.
    pub steps: u32,
    /// Blocks `K` (the features are divided by `sqrt(K)`).
    pub blocks: usize,
    /// Features `d` (coefficients, the intercept's included).
    pub dimension: usize,
    /// The projection radius `R = sqrt(2 J0 / lambda)`.
    pub radius: f64,
    /// `Delta = (1 + margin) 2 / (n lambda)`: the L2 bound on how far one
    /// substituted row moves the computed coefficients.
    pub sensitivity: f64,
    /// The grid `gamma` the coefficients are rounded to before noise.
    pub grid: f64,
    /// The noise on each rounded coefficient (grid steps).
    pub noise: Noise,
}

impl OutputPlan {
    /// The standard deviation of the noise on one coefficient of the
    /// scaled problem (the discrete noise's, in coefficient units).
    pub fn coefficient_std(&self) -> f64 {
        self.noise.std() * self.grid
    }
}

/// The step count for `lambda` and `task` (public): `STEPS_PER_CONDITION`
/// times `beta / lambda`, within `[MIN_DEFAULT_STEPS, MAX_DEFAULT_STEPS]`.
pub fn default_steps(loss: Loss, lambda: f64) -> u32 {
    let condition = (loss.curvature() + lambda) / lambda;
    // `as` saturates (and maps NaN to 0).
    ((STEPS_PER_CONDITION * condition).ceil() as u32).clamp(MIN_DEFAULT_STEPS, MAX_DEFAULT_STEPS)
}

/// The noise's "signal" `m` of a budget for `d` features: the noise on a
/// coefficient is `~ 1 / (lambda m)` up to a constant, with
/// `m = n epsilon / sqrt(d)` (pure DP: the L1 sensitivity carries
/// `sqrt(d)`) and `m = n sqrt(2 rho)` (zCDP). Public.
/// `share` is the part of the budget the release gets (the rest goes to
/// the lines' ranges).
pub fn noise_signal(
    budget: Budget,
    share: f64,
    n_rows: usize,
    dimension: usize,
) -> Result<f64, LearnError> {
    let n = n_rows as f64;
    Ok(if budget.delta() == 0.0 {
        n * share * budget.epsilon() / (dimension.max(1) as f64).sqrt()
    } else {
        n * (2.0 * share * zcdp::rho_for(budget.epsilon(), budget.delta())?).sqrt()
    })
}

/// The default regulariser, a power of two (public facts only):
///
/// ```text
/// lambda = 2^round(REGULARIZATION_LOG2_SCALE - REGULARIZATION_POWER log2 m)
/// ```
///
/// clamped to `[2^MIN_REGULARIZATION_LOG2, 1]`, with `m` from
/// [`noise_signal`]. Powers of two, so that a grid of them scores every
/// rule exactly; `a` and `c` chosen leave-one-dataset-out on the suite's
/// binary sets (scripts/linear_op_lodo.py; docs/accuracy.md, "dp-linear by
/// output perturbation").
pub fn default_regularization(
    budget: Budget,
    share: f64,
    n_rows: usize,
    dimension: usize,
) -> Result<f64, LearnError> {
    let m = noise_signal(budget, share, n_rows, dimension)?;
    let j = (REGULARIZATION_LOG2_SCALE - REGULARIZATION_POWER * m.max(1.0).log2()).round();
    let j = if j.is_nan() { 0.0 } else { j };
    Ok(2f64.powf(j.clamp(MIN_REGULARIZATION_LOG2, 0.0)))
}

/// The default share of the budget for the lines' private ranges (params.rs
/// item 0) with this solver (docs/accuracy.md).
pub const RANGE_SHARE: f64 = 0.1;

/// `log2 c` of the default regulariser (docs/accuracy.md).
pub const REGULARIZATION_LOG2_SCALE: f64 = 4.0;
/// `a` of the default regulariser (docs/accuracy.md).
pub const REGULARIZATION_POWER: f64 = 1.0;
/// The default regulariser's floor, `2^-12` (the grid it was chosen on).
pub const MIN_REGULARIZATION_LOG2: f64 = -12.0;

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

/// The facts both one-release solvers' plans check first (output and
/// objective perturbation): some rows, the regulariser in (0,
/// [`MAX_REGULARIZATION`]], the budget share left after the ranges in (0, 1].
pub(super) fn check_plan_facts(n_rows: usize, lambda: f64, share: f64) -> Result<(), LearnError> {
    if n_rows == 0 {
        return Err(LearnError::NoRows);
    }
    if !(lambda > 0.0 && lambda <= MAX_REGULARIZATION) {
        return Err(LearnError::InvalidParameter(format!(
            "regularization (regularization) must be in (0, {MAX_REGULARIZATION}], got {lambda}"
        )));
    }
    if !(share > 0.0 && share <= 1.0) {
        return Err(LearnError::InvalidParameter(format!(
            "range share (range_share) must be in [0, 1), leaving {share} of the budget"
        )));
    }
    Ok(())
}

/// Plan an output-perturbation run (module docs): every scale from public
/// facts, checked before any charge. (Eight public facts, each its own
/// argument so the plan tests can state them by hand.)
#[allow(clippy::too_many_arguments)]
pub fn plan(
    budget: Budget,
    share: f64,
    n_rows: usize,
    blocks: usize,
    dimension: usize,
    task: Task,
    lambda: f64,
    steps: u32,
) -> Result<OutputPlan, LearnError> {
    let loss = Loss::of(task)?;
    check_plan_facts(n_rows, lambda, share)?;
    let bad = |m: String| Err(LearnError::InvalidParameter(m));
    if !(1..=MAX_STEPS).contains(&steps) {
        return bad(format!(
            "epochs (epochs): the output-perturbation solver takes between 1 and {MAX_STEPS} gradient steps, got {steps}"
        ));
    }
    let (n, k, d) = (n_rows as f64, blocks.max(1) as f64, dimension.max(1) as f64);
    let radius = (2.0 * loss.at_zero() / lambda).sqrt();
    let float = FLOAT_ERROR_CONSTANT * f64::EPSILON / 2.0 * n * k * (1.0 + radius);
    // NaN fails too.
    if float.is_nan() || float > SENSITIVITY_MARGIN {
        return bad(format!(
            "regularization (regularization): {lambda} is too small for {n_rows} rows and {blocks} blocks: the float error of the descent could exceed the sensitivity margin; use a larger regularization"
        ));
    }
    let sensitivity = (1.0 + SENSITIVITY_MARGIN) * 2.0 / (n * lambda);
    let too_noisy = || {
        LearnError::InvalidParameter(format!(
            "epsilon (epsilon): the noise for epsilon = {} on {dimension} coefficients is too large to sample exactly; use a larger epsilon",
            budget.epsilon()
        ))
    };
    let (grid, noise) = if budget.delta() == 0.0 {
        let grid = d.sqrt() * sensitivity / L1_GRID_STEPS;
        // L1 sensitivity in grid steps: sqrt(d) Delta / gamma + d.
        let l1 = L1_GRID_STEPS + d;
        let scale = l1 / (share * budget.epsilon());
        if !(scale.is_finite() && scale > 0.0 && scale < MAX_LAPLACE_SCALE) {
            return Err(too_noisy());
        }
        (
            grid,
            Noise::Laplace {
                num: (scale.ceil() as u128).max(1),
                den: 1,
            },
        )
    } else {
        let rho = share * zcdp::rho_for(budget.epsilon(), budget.delta())?;
        let grid = sensitivity / (2.0 * rho).sqrt() / GAUSSIAN_SD_STEPS;
        // L2 sensitivity in grid steps: Delta / gamma + sqrt(d).
        let l2 = sensitivity / grid + d.sqrt();
        let (num, den) = variance_up(l2 * l2 / (2.0 * rho)).ok_or_else(too_noisy)?;
        (grid, Noise::Gaussian { num, den })
    };
    if !(grid > 0.0 && radius / grid < MAX_GRID_COORDINATE) {
        return Err(too_noisy());
    }
    Ok(OutputPlan {
        lambda,
        steps,
        blocks,
        dimension,
        radius,
        sensitivity,
        grid,
        noise,
    })
}

/// The design of the scaled problem: for every block, each row's
/// coordinate (`d` for none: a slot whose weight stays 0) and its value
/// divided by `sqrt(K)`.
pub(super) struct Design {
    /// `index[b][i]`: row `i`'s coordinate in block `b`.
    pub index: Vec<Vec<u32>>,
    /// `value[b][i]`: row `i`'s value in block `b` (clamped to `[-1, 1]`,
    /// divided by `sqrt(K)`).
    pub value: Vec<Vec<f64>>,
    /// `d`.
    pub dimension: usize,
    /// The first coordinate of each block.
    pub offsets: Vec<usize>,
}

impl Design {
    /// The design from each block's rows and feature count.
    pub(super) fn new(rows: &[BlockRows], features: &[usize]) -> Design {
        let k = rows.len().max(1) as f64;
        let shrink = 1.0 / k.sqrt();
        let mut offsets = Vec::with_capacity(features.len());
        let mut next = 0usize;
        for &f in features {
            offsets.push(next);
            next += f;
        }
        let d = next;
        let index = rows
            .iter()
            .zip(&offsets)
            .zip(features)
            .map(|((r, &off), &f)| {
                // Without a branch on the data (the work of building the
                // design must not depend on which rows have no feature):
                // `inside` selects the coordinate or the slot `d`.
                r.feature
                    .iter()
                    .map(|&j| {
                        let j = usize::from(j);
                        let inside = usize::from(j < f);
                        (inside * (off + j) + (1 - inside) * d) as u32
                    })
                    .collect()
            })
            .collect();
        let value = rows
            .iter()
            .map(|r| {
                r.value
                    .iter()
                    .map(|v| v.clamp(-1.0, 1.0) * shrink)
                    .collect()
            })
            .collect();
        Design {
            index,
            value,
            dimension: d,
            offsets,
        }
    }

    /// Rows.
    pub(super) fn n_rows(&self) -> usize {
        self.index.first().map_or(0, Vec::len)
    }
}

/// Scratch space for the mean loss gradient of the scaled problem: reused
/// across steps so that a descent allocates once.
pub(super) struct GradientWork {
    score: Vec<f64>,
    derivative: Vec<f64>,
    sum: Vec<f64>,
    compensation: Vec<f64>,
}

impl GradientWork {
    /// Scratch for `design`.
    pub(super) fn new(design: &Design) -> GradientWork {
        let (n, d) = (design.n_rows(), design.dimension);
        GradientWork {
            score: vec![0.0; n],
            derivative: vec![0.0; n],
            sum: vec![0.0; d + 1],
            compensation: vec![0.0; d + 1],
        }
    }

    /// The mean loss gradient `(1/n) sum_i l'(y_i, w . x~_i) x~_i` at `w`
    /// (length `d + 1`: slot `d` is the "no feature" coordinate, whose
    /// weight must be 0), written into `out[..d]`. Every row of every block
    /// is visited whatever the data; the sums are TwoSum-compensated (the
    /// module docs' floating-point paragraph).
    pub(super) fn mean_gradient(
        &mut self,
        design: &Design,
        y: &[f64],
        loss: Loss,
        w: &[f64],
        out: &mut [f64],
    ) {
        let d = design.dimension;
        // Scores with compensated sums too (the sums' own slots
        // `derivative` hold the compensation until l' replaces them): the
        // score's error is then a few ulps of |z| whatever ||w||, and l' is
        // flat where |z| is large (objective.rs, floating point).
        self.score.iter_mut().for_each(|s| *s = 0.0);
        self.derivative.iter_mut().for_each(|c| *c = 0.0);
        for (index, value) in design.index.iter().zip(&design.value) {
            for (((s, c), &j), &v) in self
                .score
                .iter_mut()
                .zip(self.derivative.iter_mut())
                .zip(index)
                .zip(value)
            {
                let (total, error) = two_sum(*s, w[j as usize] * v);
                *c += error;
                *s = total;
            }
        }
        for ((g, &s), &yi) in self.derivative.iter_mut().zip(&self.score).zip(y) {
            *g = loss.derivative(s + *g, yi);
        }
        let (sum, compensation) = (&mut self.sum, &mut self.compensation);
        sum.iter_mut().for_each(|s| *s = 0.0);
        compensation.iter_mut().for_each(|c| *c = 0.0);
        for (index, value) in design.index.iter().zip(&design.value) {
            for ((&j, &v), &g) in index.iter().zip(value).zip(&self.derivative) {
                // A compensated sum (TwoSum): the error of the sum does
                // not grow with n (module docs, floating point).
                let j = j as usize;
                let (total, error) = two_sum(sum[j], g * v);
                compensation[j] += error;
                sum[j] = total;
            }
        }
        let n = design.n_rows() as f64;
        for j in 0..d {
            out[j] = (sum[j] + compensation[j]) / n;
        }
    }
}

/// `T` steps of projected full-batch gradient descent on `J_D` (module
/// docs) from `w_0 = 0`; `on_step(t)` after each (`false` cancels).
/// Returns `w_T` (length `d`). Every step visits every row of every block
/// and every coordinate, whatever the data.
pub(super) fn descend(
    design: &Design,
    y: &[f64],
    loss: Loss,
    lambda: f64,
    steps: u32,
    on_step: &mut dyn FnMut(u32) -> bool,
) -> Result<Vec<f64>, LearnError> {
    let d = design.dimension;
    let n = design.n_rows();
    if n == 0 || y.len() != n {
        return Err(LearnError::NoRows);
    }
    let eta = 1.0 / (loss.curvature() + lambda);
    let radius = (2.0 * loss.at_zero() / lambda).sqrt();
    // Slot d is the "no feature" coordinate: its weight stays 0.
    let mut w = vec![0.0f64; d + 1];
    let mut gradient = vec![0.0f64; d];
    let mut work = GradientWork::new(design);
    for t in 0..steps {
        work.mean_gradient(design, y, loss, &w, &mut gradient);
        for j in 0..d {
            w[j] -= eta * (gradient[j] + lambda * w[j]);
        }
        // Projection on the ball of radius R, as a multiplication by a
        // factor (no branch on the data); min with NaN gives 1.
        let norm = w[..d].iter().map(|x| x * x).sum::<f64>().sqrt();
        let factor = (radius / norm).min(1.0);
        w[..d].iter_mut().for_each(|x| *x *= factor);
        if !on_step(t + 1) {
            return Err(LearnError::Cancelled);
        }
    }
    w.truncate(d);
    Ok(w)
}

/// The released coefficients of the scaled problem: `w` rounded to the
/// grid, plus the plan's noise, back in coefficient units (module docs,
/// release). `w` must lie in the ball of radius `R` (the descent projects
/// it there); each coordinate is clamped to it anyway before rounding.
pub(super) fn release(
    w: &[f64],
    plan: &OutputPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    rounded(w, plan)
        .into_iter()
        .map(|q| Ok((q + plan.noise.draw(rng)?) as f64 * plan.grid))
        .collect()
}

/// The rounded coefficients before noise (grid steps): what the release's
/// sensitivity is about. Each coordinate is clamped to `+-R / gamma`
/// (1-Lipschitz, so no distance grows; the plan keeps `R / gamma` below
/// 2^60) and rounded half away from zero (`as` maps NaN to 0).
pub(super) fn rounded(w: &[f64], plan: &OutputPlan) -> Vec<i128> {
    let bound = plan.radius / plan.grid;
    w.iter().map(|&x| grid_steps(x, plan.grid, bound)).collect()
}

/// `x` in steps of `grid`, clamped to `+-limit` steps (1-Lipschitz, so no
/// distance grows) and rounded half away from zero (`as` maps NaN to 0):
/// the rounding of both one-release solvers (this one and `objective.rs`).
pub(super) fn grid_steps(x: f64, grid: f64, limit: f64) -> i128 {
    let steps = (x / grid).clamp(-limit, limit);
    (steps + 0.5f64.copysign(steps)) as i128
}

/// The labels as the loss sees them (module docs): block descent's targets
/// (`fit::targets`: 0/1, or the clamped value scaled onto `[-1, 1]`), each
/// clamped to `[-1, 1]` once more so the sensitivity bound holds whatever
/// the float scaling did.
pub(super) fn targets(data: &Dataset, task: Task) -> Result<Vec<f64>, LearnError> {
    let mut y = super::fit::targets(data, task)?;
    for t in &mut y {
        *t = t.clamp(-1.0, 1.0);
    }
    Ok(y)
}

/// The scaled problem of a one-release solver (this one and
/// `objective.rs`): the lines' private ranges first when the plan releases
/// them (params.rs item 0; every value stays in `[-1, 1]`), else the public
/// layout; then the design and the labels.
pub(super) struct Scaled {
    /// The layout's blocks.
    pub blocks: Vec<super::features::Block>,
    /// Features per block.
    pub sizes: Vec<usize>,
    /// The design (features divided by `sqrt(K)`).
    pub design: Design,
    /// The labels as the loss sees them (a multiclass label's class
    /// indices).
    pub y: Vec<f64>,
}

impl Scaled {
    /// The scaled problem of `data` for a plan of `blocks` blocks and
    /// `dimension` features (both public, checked against the layout).
    pub(super) fn new(
        data: &Dataset,
        encoder: &Encoder,
        plan: &LinearPlan,
        blocks: usize,
        dimension: usize,
        rng: &mut NoiseRng,
    ) -> Result<Scaled, LearnError> {
        let task = encoder.schema().task();
        crate::learn::planned_rows(data, plan.n_rows)?;
        let layout = super::fit::ranged_layout(data, encoder, plan, rng)?;
        let sizes: Vec<usize> = layout.iter().map(|b| b.features.len()).collect();
        if layout.len() != blocks || sizes.iter().sum::<usize>() != dimension {
            return Err(LearnError::InvalidParameter(
                "the schema does not have the planned number of blocks".into(),
            ));
        }
        let rows: Vec<BlockRows> = layout
            .iter()
            .map(|b| features::block_rows(data, b))
            .collect();
        let design = Design::new(&rows, &sizes);
        let y = match task {
            // Class indices: the objective solver's one-vs-rest fits make
            // their 0/1 labels from them.
            Task::Multiclass { .. } => data
                .classes
                .as_ref()
                .ok_or(LearnError::NoLabels)?
                .iter()
                .map(|&c| f64::from(c))
                .collect(),
            _ => targets(data, task)?,
        };
        Ok(Scaled {
            blocks: layout,
            sizes,
            design,
            y,
        })
    }

    /// The model of one released table per class (one-vs-rest, class
    /// order; post-processing as [`Self::into_model`]): class 0's table and
    /// the other `k - 1`, scored by the softmax of the `k` scores.
    pub(super) fn into_classes_model(self, released: &[Vec<f64>]) -> LinearModel {
        let tables: Vec<Vec<Vec<f64>>> = released.iter().map(|r| self.table(r, 1.0, 0.0)).collect();
        let mut tables = tables.into_iter();
        let coefficients = tables.next().unwrap_or_default();
        LinearModel {
            curvatures: self.sizes.iter().map(|&f| vec![0.0; f]).collect(),
            blocks: self.blocks,
            coefficients,
            class_coefficients: tables.collect(),
        }
    }

    /// One released vector as a table per block, times `unit`, the
    /// intercept shifted by `shift`, the `1/sqrt(K)` scaling undone.
    fn table(&self, released: &[f64], unit: f64, shift: f64) -> Vec<Vec<f64>> {
        let shrink = 1.0 / (self.blocks.len().max(1) as f64).sqrt();
        let mut coefficients: Vec<Vec<f64>> = self
            .design
            .offsets
            .iter()
            .zip(&self.sizes)
            .map(|(&off, &f)| {
                released[off..off + f]
                    .iter()
                    .map(|x| x * shrink * unit)
                    .collect()
            })
            .collect();
        if let Some(intercept) = coefficients.first_mut().and_then(|c| c.first_mut()) {
            *intercept += shift;
        }
        coefficients
    }

    /// The model of released coefficients of the scaled problem
    /// (post-processing): undo the `1/sqrt(K)` scaling; a regressor's
    /// scores back in label units.
    pub(super) fn into_model(self, released: &[f64], task: Task) -> LinearModel {
        let (unit, shift) = match task {
            Task::Regression { min, max } => (half_range(min, max), (min + max) / 2.0),
            _ => (1.0, 0.0),
        };
        let coefficients = self.table(released, unit, shift);
        LinearModel {
            curvatures: self.sizes.iter().map(|&f| vec![0.0; f]).collect(),
            blocks: self.blocks,
            coefficients,
            class_coefficients: Vec::new(),
        }
    }
}

/// Train dp-linear by output perturbation as `plan` (whose `output` is
/// `op`) says: the descent, one noisy release, then the coefficients in the
/// original feature space (post-processing).
pub(super) fn fit(
    data: &Dataset,
    encoder: &Encoder,
    plan: &LinearPlan,
    op: &OutputPlan,
    rng: &mut NoiseRng,
    on_step: &mut dyn FnMut(u32) -> bool,
) -> Result<LinearModel, LearnError> {
    let task = encoder.schema().task();
    let loss = Loss::of(task)?;
    let scaled = Scaled::new(data, encoder, plan, op.blocks, op.dimension, rng)?;
    let w = descend(
        &scaled.design,
        &scaled.y,
        loss,
        op.lambda,
        op.steps,
        on_step,
    )?;
    let released = release(&w, op, rng)?;
    Ok(scaled.into_model(&released, task))
}
