//! dp-linear's objective-perturbation solver (binary classification, and
//! k classes one-vs-rest; pure DP): a random linear term added to the regularised logistic objective
//! (Chaudhuri, Monteleoni and Sarwate 2011, JMLR, §3.2, Algorithm 2 and
//! Theorem 9), the minimiser approximated to a public accuracy by Nesterov's
//! accelerated gradient descent, then rounded to a grid and released with
//! exact discrete Laplace noise that covers the approximation (the
//! "approximate minima perturbation" of Iyengar, Near, Song, Thakkar,
//! Thakurta and Wang 2019, §3, in a pure-DP form). Issue 25: the pure-DP
//! mechanism of diffprivlib's `LogisticRegression`, with its two gaps
//! (an exact minimiser is assumed; its noise is floating-point) closed as far
//! as this module says.
//!
//! # The objective
//!
//! A row's features are the layout of [`super::features`] divided by
//! `sqrt(K)` (`output.rs`, "the objective"), so `||x~|| <= 1`; labels in
//! `{0, 1}`; the logistic loss `l` has `|l'| <= 1` and `0 <= l'' <= c = 1/4`.
//! With `Lambda` the regulariser, `b` the hidden vector of
//! [`crate::privacy::objective`]:
//!
//! ```text
//! J(w) = (1/n) sum_i l(y_i, w . x~_i) + (Lambda / 2) ||w||^2 + (b . w) / n
//! ```
//!
//! # Privacy (substitution neighbours, `n` public)
//!
//! The budget `epsilon` (after the lines' private ranges, params.rs item 0)
//! is split `epsilon = epsilon_obj + epsilon_out` ([`OUTPUT_SHARE`]).
//!
//! 1. **The exact minimiser `w*` is `epsilon_obj`-DP** (Chaudhuri et al.,
//!    Theorem 9, with the regulariser `Lambda N(w)`, `N = ||w||^2 / 2`
//!    1-strongly convex): with `b` of density `~ exp(-(epsilon_b / 2)||b||)`
//!    the density of `w*` on neighbours differs by at most
//!    `exp(epsilon_b + 2 ln(1 + c / (n Lambda)))`. The plan takes
//!    `Lambda >= c / (n (e^(epsilon_obj / 4) - 1))` (raising a smaller
//!    requested value: the paper's `Delta` term) and
//!    `epsilon_b = epsilon_obj - 2 ln(1 + c / (n Lambda)) >= epsilon_obj / 2`.
//! 2. **The computed point is within `r` of `w*`**, whatever the data and
//!    `b`: `J` is `Lambda`-strongly convex and `beta = c + Lambda` smooth;
//!    the start `x_1 = -b / (n Lambda)` satisfies
//!    `w* - x_1 = -grad L(w*) / Lambda`, so `||x_1 - w*|| <= 1 / Lambda`;
//!    after `S` steps of Nesterov's method for strongly convex functions
//!    (Bubeck 2015, "Convex Optimization: Algorithms and Complexity",
//!    §3.7.1, Theorem 3.18), `J(y) - J(w*) <= (Lambda + beta) / 2 ||x_1 -
//!    w*||^2 exp(-S / sqrt(kappa))` and so `||y - w*||^2 <= (kappa + 1)
//!    exp(-S / sqrt(kappa)) / Lambda^2`, `kappa = beta / Lambda`. `S`
//!    ([`steps_for`]) makes this at most `(r / 4)^2`; the other `3r/4` are
//!    the floating-point margin (below). The clamp to the box of half-width
//!    `1 / Lambda` around `x_1` contains `w*`, so it moves no point away from
//!    `w*`.
//! 3. **The release.** `y` is a function of the data and `w*` (given `D`,
//!    `b = -n (grad L_D(w*) + Lambda w*)`). For neighbours and the same
//!    `w*`, the two computed points are within `2r` in L2, so their
//!    roundings `q = round(y / g)` differ by at most `2 r sqrt(d) / g + d =
//!    2d` grid steps in L1 (`r = g sqrt(d) / 2`). Discrete Laplace noise of
//!    scale `2d / epsilon_out` on each coordinate (the geometric mechanism;
//!    CKS20 §2) then bounds the ratio of the output's probabilities given
//!    `w*` by `exp(epsilon_out)`; integrating over `w*`, whose densities
//!    differ by at most `exp(epsilon_obj)`, the release is
//!    `(epsilon_obj + epsilon_out)`-DP.
//!
//! # What is not proven
//!
//! `b` is drawn in floating point (`privacy::objective`): its norm's tail
//! is cut at `d 53 ln 2 / beta` and its values lie on a float grid, so the
//! change of variables of step 1 holds for the ideal `b`, not exactly for
//! the drawn one. The released value carries only the exact discrete
//! Laplace noise of step 3 on a grid (no float noise is released, so the
//! low-order-bit attacks on floating-point Laplace noise, Mironov 2012, do
//! not apply to it).
//!
//! **Floating point of the descent.** Step 2 is exact arithmetic. The code
//! computes scores and gradient sums with compensated sums, so a score's
//! error is a few ulps of `|z|`, and `l'`'s error `|sigma'(z)| * u |z| +
//! 2u <= 3u`; the gradient's error is then about `4u`, and the computed
//! fixed point's distance to the exact one about `4u / Lambda`. The plan
//! refuses a run whose estimate `FLOAT_ERROR_CONSTANT u / Lambda` exceeds
//! `3r/4` (an error analysis with a stated constant, not a machine-checked
//! proof, as for the output-perturbation solver).
//!
//! Every step visits every row of every block (constant work); `S` is a
//! public function of `n`, `d`, `epsilon` and `Lambda`.
//!
//! # k classes: one-vs-rest
//!
//! A label with `k` classes trains `k` binary fits on the same rows (class
//! `c` against the rest), each as above at `epsilon / k` with its own hidden
//! vector and release; by basic composition the `k` releases are
//! `epsilon`-DP. The model scores a row by each fit's linear score and
//! takes their softmax as the class probabilities (post-processing; the
//! scores of one-vs-rest fits are not calibrated against each other). Why
//! not one multinomial objective: its per-row Hessian has rank `k - 1`, so
//! Theorem 9's Jacobian factor would grow to `(1 + c / (n Lambda))^(2(k -
//! 1))` with a proof of its own; the one-vs-rest split reuses the binary
//! proof unchanged.

use serde::{Deserialize, Serialize};

use super::model::LinearModel;
// The regulariser's range and the exact samplers' limits are output
// perturbation's.
use super::output::{GradientWork, Loss, MAX_GRID_COORDINATE, MAX_LAPLACE_SCALE, Scaled};
use super::params::{LinearPlan, Noise};
use crate::data::{Dataset, Encoder, Task};
use crate::learn::LearnError;
use crate::privacy::{Budget, NoiseRng, objective as hidden};

/// The part of the solver's budget for the release of the rounded
/// coefficients (step 3); the rest perturbs the objective.
pub const OUTPUT_SHARE: f64 = 0.05;
/// `c`: the bound on the logistic loss's second derivative.
pub const CURVATURE: f64 = 0.25;
/// The release's noise standard deviation is at most this fraction of the
/// objective's smallest noise on a coefficient (`||b|| / (n (c + Lambda))`
/// per `sqrt(d)`): the grid is set from it (not fitted).
const OUTPUT_NOISE_FRACTION: f64 = 0.25;
/// The constant of the float-error estimate (module docs), generous.
pub const FLOAT_ERROR_CONSTANT: f64 = 64.0;
/// Largest number of gradient steps a plan may take.
pub const MAX_STEPS: u32 = 200_000;

/// Everything public about an objective-perturbation run (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectivePlan {
    /// The regulariser `Lambda` the descent uses (the requested one, raised
    /// to the floor of step 1 when below it).
    pub lambda: f64,
    /// `epsilon_obj`: the part of the budget that perturbs the objective.
    pub epsilon_objective: f64,
    /// `epsilon_b = epsilon_obj - 2 ln(1 + c / (n Lambda))`: the hidden
    /// vector's density is `~ exp(-(epsilon_b / 2) ||b||)`.
    pub epsilon_hidden: f64,
    /// `epsilon_out`: the release's part.
    pub epsilon_output: f64,
    /// Gradient steps `S` of the accelerated descent.
    pub steps: u32,
    /// Blocks `K` (the features are divided by `sqrt(K)`).
    pub blocks: usize,
    /// Features `d`.
    pub dimension: usize,
    /// Binary fits: 1, or `k` one-vs-rest fits for `k` classes, each with
    /// the epsilons above (the job's `epsilon` after the ranges, over `k`).
    pub fits: usize,
    /// `r`: the computed point's largest distance to the exact minimiser.
    pub error_radius: f64,
    /// The grid `g` the coefficients are rounded to.
    pub grid: f64,
    /// The largest `|coordinate|` after the clamp (public: `||b||`'s bound
    /// over `n Lambda` plus `1 / Lambda`).
    pub bound: f64,
    /// The noise on each rounded coefficient (grid steps).
    pub noise: Noise,
}

impl ObjectivePlan {
    /// The release's noise standard deviation on one coefficient of the
    /// scaled problem.
    pub fn output_std(&self) -> f64 {
        self.noise.std() * self.grid
    }

    /// The hidden vector's mean norm, `d / beta = 2d / epsilon_b`.
    pub fn hidden_mean_norm(&self) -> f64 {
        2.0 * self.dimension as f64 / self.epsilon_hidden
    }
}

/// The smallest `Lambda` with `epsilon_b >= epsilon_obj / 2` (module docs,
/// step 1): `c / (n (e^(epsilon_obj / 4) - 1))`.
pub fn minimum_regularization(n_rows: usize, epsilon_objective: f64) -> f64 {
    CURVATURE / (n_rows as f64 * (epsilon_objective / 4.0).exp_m1())
}

/// The steps that bring the exact iterate within `r / 4` of the minimiser
/// (module docs, step 2): `sqrt(kappa) ln((kappa + 1) / (Lambda r / 4)^2)`,
/// rounded up; `None` above [`MAX_STEPS`] or not finite.
pub fn steps_for(lambda: f64, error_radius: f64) -> Option<u32> {
    let kappa = (CURVATURE + lambda) / lambda;
    let target = lambda * error_radius / 4.0;
    let s = kappa.sqrt() * ((kappa + 1.0) / (target * target)).ln();
    (s.is_finite() && s >= 0.0 && s <= f64::from(MAX_STEPS)).then(|| (s.ceil() as u32).max(1))
}

/// `log2 c` of the default regulariser (docs/accuracy.md, "dp-linear by
/// objective perturbation").
pub const REGULARIZATION_LOG2_SCALE: f64 = 1.0;
/// `a` of the default regulariser (docs/accuracy.md).
pub const REGULARIZATION_POWER: f64 = 1.0;
/// The default regulariser's range, `[2^-20, 1]` (the grid it was chosen on).
pub const MIN_REGULARIZATION_LOG2: f64 = -20.0;

/// The default regulariser, a power of two from public facts only:
/// `2^round(log2 c - a log2 m)` with `m = n epsilon / sqrt(d)` (the job's
/// whole epsilon), clamped to
/// `[2^MIN_REGULARIZATION_LOG2, 1]`; `a` and `c` chosen leave-one-dataset-out
/// on the suite's binary sets (scripts/linear_op_lodo.py --solver
/// objective-perturbation). The plan raises it to
/// [`minimum_regularization`] when below.
pub fn default_regularization(budget: Budget, n_rows: usize, dimension: usize) -> f64 {
    let m = n_rows as f64 * budget.epsilon() / (dimension.max(1) as f64).sqrt();
    let j = (REGULARIZATION_LOG2_SCALE - REGULARIZATION_POWER * m.max(1.0).log2()).round();
    let j = if j.is_nan() { 0.0 } else { j };
    2f64.powf(j.clamp(MIN_REGULARIZATION_LOG2, 0.0))
}

/// Plan an objective-perturbation run: every scale from public facts,
/// checked before any charge. `share` is the part of the budget left after
/// the lines' ranges; `lambda` the requested regulariser.
pub fn plan(
    budget: Budget,
    share: f64,
    n_rows: usize,
    blocks: usize,
    dimension: usize,
    task: Task,
    lambda: f64,
) -> Result<ObjectivePlan, LearnError> {
    let bad = |m: String| Err(LearnError::InvalidParameter(m));
    let fits = match task {
        Task::Binary => 1,
        Task::Multiclass { k } => k,
        Task::Regression { .. } => {
            return bad(
                "solver (solver): objective-perturbation is for classification; use block-descent or output-perturbation for regression".into(),
            );
        }
    };
    if budget.delta() > 0.0 {
        return bad(format!(
            "solver (solver): objective-perturbation is pure DP; use delta 0 (got {}) or block-descent",
            budget.delta()
        ));
    }
    super::output::check_plan_facts(n_rows, lambda, share)?;
    let (n, d) = (n_rows as f64, dimension.max(1) as f64);
    // Each of the `fits` fits gets an equal part (basic composition).
    let epsilon = share * budget.epsilon() / fits.max(1) as f64;
    let epsilon_output = OUTPUT_SHARE * epsilon;
    let epsilon_objective = epsilon - epsilon_output;
    let lambda = lambda.max(minimum_regularization(n_rows, epsilon_objective));
    let epsilon_hidden = epsilon_objective - 2.0 * (CURVATURE / (n * lambda)).ln_1p();
    let too_small = || {
        LearnError::InvalidParameter(format!(
            "regularization (regularization): {lambda:e} on {n_rows} rows needs more descent steps or float precision than a run takes (at most {MAX_STEPS} steps); use a larger regularization or the block-descent solver"
        ))
    };
    if !(epsilon_hidden.is_finite() && epsilon_hidden >= epsilon_objective / 2.0 * (1.0 - 1e-9)) {
        return Err(too_small());
    }
    // Step 3's grid: the release's standard deviation sqrt(2) 2d g /
    // epsilon_out is OUTPUT_NOISE_FRACTION of 2 sqrt(d) / (epsilon_b n (c +
    // Lambda)).
    let grid = OUTPUT_NOISE_FRACTION * epsilon_output
        / (2f64.sqrt() * d.sqrt() * epsilon_hidden * n * (CURVATURE + lambda));
    let error_radius = grid * d.sqrt() / 2.0;
    let steps = steps_for(lambda, error_radius).ok_or_else(too_small)?;
    let float = FLOAT_ERROR_CONSTANT * f64::EPSILON / 2.0 / lambda;
    if float.is_nan() || float > 0.75 * error_radius {
        return Err(too_small());
    }
    let bound =
        hidden::norm_bound(dimension.max(1), epsilon_hidden / 2.0) / (n * lambda) + 1.0 / lambda;
    let scale = 2.0 * d / epsilon_output;
    if !(grid > 0.0
        && bound / grid < MAX_GRID_COORDINATE
        && scale.is_finite()
        && scale < MAX_LAPLACE_SCALE)
    {
        return Err(LearnError::InvalidParameter(format!(
            "epsilon (epsilon): the noise for epsilon = {} on {dimension} coefficients is too large to sample exactly; use a larger epsilon",
            budget.epsilon()
        )));
    }
    Ok(ObjectivePlan {
        lambda,
        epsilon_objective,
        epsilon_hidden,
        epsilon_output,
        steps,
        blocks,
        dimension,
        fits,
        error_radius,
        grid,
        bound,
        noise: Noise::Laplace {
            num: (scale.ceil() as u128).max(1),
            den: 1,
        },
    })
}

/// Nesterov's accelerated descent on `J` (module docs, step 2) from
/// `x_1 = -b / (n Lambda)` for the plan's steps, then the clamp to the box
/// of half-width `1 / Lambda` around `x_1`. Returns the point (length `d`).
/// `on_step(s)` after each step (`false` cancels).
pub(super) fn descend(
    scaled: &Scaled,
    y_labels: &[f64],
    b: &[f64],
    plan: &ObjectivePlan,
    on_step: &mut dyn FnMut(u32) -> bool,
) -> Result<Vec<f64>, LearnError> {
    let design = &scaled.design;
    let (n, d) = (design.n_rows(), design.dimension);
    if n == 0 || y_labels.len() != n || b.len() != d {
        return Err(LearnError::NoRows);
    }
    let lambda = plan.lambda;
    let smooth = CURVATURE + lambda;
    let root_kappa = (smooth / lambda).sqrt();
    let momentum = (root_kappa - 1.0) / (root_kappa + 1.0);
    let n_f = n as f64;
    // Slot d: the "no feature" coordinate, weight 0.
    let mut start: Vec<f64> = b.iter().map(|bj| -bj / (n_f * lambda)).collect();
    start.push(0.0);
    let mut x = start.clone();
    let mut y = start.clone();
    let mut next = vec![0.0f64; d + 1];
    let mut gradient = vec![0.0f64; d];
    let mut work = GradientWork::new(design);
    for s in 0..plan.steps {
        work.mean_gradient(design, y_labels, Loss::Logistic, &x, &mut gradient);
        for j in 0..d {
            let full = gradient[j] + lambda * x[j] + b[j] / n_f;
            next[j] = x[j] - full / smooth;
        }
        // x_{s+1} = (1 + q) y_{s+1} - q y_s (Bubeck §3.7.1).
        for j in 0..d {
            x[j] = (1.0 + momentum) * next[j] - momentum * y[j];
        }
        std::mem::swap(&mut y, &mut next);
        if !on_step(s + 1) {
            return Err(LearnError::Cancelled);
        }
    }
    let half_width = 1.0 / lambda;
    Ok((0..d)
        .map(|j| {
            let v = y[j].clamp(start[j] - half_width, start[j] + half_width);
            // NaN cannot arise from finite data; map it to the box's centre.
            if v.is_nan() { start[j] } else { v }
        })
        .collect())
}

/// The release (module docs, step 3): `round(y / g)` clamped to the public
/// bound, plus discrete Laplace noise, in coefficient units.
pub(super) fn release(
    y: &[f64],
    plan: &ObjectivePlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let limit = plan.bound / plan.grid;
    y.iter()
        .map(|&v| {
            let q = super::output::grid_steps(v, plan.grid, limit);
            Ok((q + plan.noise.draw(rng)?) as f64 * plan.grid)
        })
        .collect()
}

/// One fit (module docs): the hidden vector, the descent on `labels`, one
/// release.
fn fit_one(
    scaled: &Scaled,
    labels: &[f64],
    op: &ObjectivePlan,
    rng: &mut NoiseRng,
    on_step: &mut dyn FnMut(u32) -> bool,
) -> Result<Vec<f64>, LearnError> {
    let b = hidden::gamma_norm_vector(rng, op.dimension, op.epsilon_hidden / 2.0);
    let point = descend(scaled, labels, &b, op, on_step)?;
    release(&point, op, rng)
}

/// Train dp-linear by objective perturbation as `plan` (whose `objective`
/// is `op`) says: the lines' ranges when planned, then one fit (binary) or
/// `k` one-vs-rest fits, the coefficients in the original feature space.
/// `on_step` counts the steps of all fits.
pub(super) fn fit(
    data: &Dataset,
    encoder: &Encoder,
    plan: &LinearPlan,
    op: &ObjectivePlan,
    rng: &mut NoiseRng,
    on_step: &mut dyn FnMut(u32) -> bool,
) -> Result<LinearModel, LearnError> {
    let task = encoder.schema().task();
    let scaled = Scaled::new(data, encoder, plan, op.blocks, op.dimension, rng)?;
    let Task::Multiclass { k } = task else {
        let released = fit_one(&scaled, &scaled.y, op, rng, on_step)?;
        return Ok(scaled.into_model(&released, task));
    };
    if op.fits != k {
        return Err(LearnError::InvalidParameter(
            "the data does not have the planned number of classes".into(),
        ));
    }
    // `scaled.y` holds class indices; fit c sees 1 for class c, else 0.
    let mut tables = Vec::with_capacity(k);
    for c in 0..k {
        let labels: Vec<f64> = scaled
            .y
            .iter()
            .map(|&y| f64::from(u8::from(y == c as f64)))
            .collect();
        let done = c as u32 * op.steps;
        tables.push(fit_one(&scaled, &labels, op, rng, &mut |s| {
            on_step(done + s)
        })?);
    }
    Ok(scaled.into_classes_model(&tables))
}
