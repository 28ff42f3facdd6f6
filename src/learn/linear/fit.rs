//! dp-linear training: cyclic block-coordinate descent on the logistic loss
//! (classification) or the Huber-clamped squared loss (regression), with
//! every access to the rows a noisy integer sum (params.rs has the
//! sensitivity argument and the calibration).
//!
//! Per epoch and block `b`, with `r_i` the clamped residual of row `i`
//! (`y - sigmoid(F)`, or `(y - F) / R` clamped to `[-1, 1]` with `R` half the
//! public label range) and `v_i` its value on its feature `f_i` of the block:
//!
//! ```text
//! g_f  = (sum_{i: f_i = f} round(S r_i v_i) + noise) / S          (released)
//! w_f += learning_rate * g_f / (h * max(c_f, 0) + lambda)         (post-processing)
//! ```
//!
//! `c_f` is the released noisy curvature (sum of `v^2`), `h` the bound on the
//! loss's second derivative (1/4 for the logistic loss, Böhning and Lindsay
//! 1988; 1 for the squared loss), so a step of 1 is a Newton step on a
//! quadratic upper bound of the block's loss: within a block the features
//! never share a row, so the block's Hessian is diagonal and the bound is
//! exact up to `h`. `lambda` (a ridge penalty, public) keeps features with
//! few rows, whose sums are mostly noise, near zero.
//!
//! Timing: every pass visits every row; the number of noise draws is fixed by
//! the schema and the plan.

use super::features::{self, Block, BlockRows};
use super::model::LinearModel;
use super::params::{LinearPlan, Noise};
use crate::data::{Dataset, Encoder, Task};
use crate::learn::LearnError;
use crate::learn::ebm::sigmoid;
use crate::privacy::{NoiseRng, exact};

/// One draw of `noise` (grid units).
fn draw(rng: &mut NoiseRng, noise: Noise) -> Result<i128, LearnError> {
    Ok(match noise {
        Noise::Laplace { num, den } => exact::additive_discrete_laplace(rng, num, den)?,
        Noise::Gaussian { num, den } => exact::discrete_gaussian(rng, num, den)?,
    })
}

/// Round to the grid, half away from zero; `x` must lie in `[-S, S]`
/// (callers clamp), and NaN becomes 0 (`as` saturates and maps NaN to 0), so
/// every term is an integer in `[-S, S]` whatever the float arithmetic did.
fn to_grid(x: f64) -> i64 {
    (x + 0.5f64.copysign(x)) as i64
}

/// The noisy curvatures of one block (rows, i.e. `sum v^2`), the only release
/// of the first phase. Each term `round(S v^2)` is in `[0, S]` because
/// `v` is clamped to `[-1, 1]`. Sensitivity: params.rs, item 1.
pub(super) fn noisy_curvatures(
    rows: &BlockRows,
    n_features: usize,
    plan: &LinearPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let s = f64::from(plan.scale);
    curvature_sums(rows, n_features, plan.scale)
        .into_iter()
        .map(|c| Ok((i128::from(c) + draw(rng, plan.curvature_noise)?) as f64 / s))
        .collect()
}

/// The exact integer curvature sums (grid units) before noise: what the
/// sensitivity bound is about (tested under substitution in tests.rs).
pub(super) fn curvature_sums(rows: &BlockRows, n_features: usize, scale: u32) -> Vec<i64> {
    let s = f64::from(scale);
    let mut sums = vec![0i64; n_features + 1];
    for (&f, &v) in rows.feature.iter().zip(&rows.value) {
        let v = v.clamp(-1.0, 1.0);
        sums[usize::from(f).min(n_features)] += to_grid(s * v * v);
    }
    sums.truncate(n_features);
    sums
}

/// The noisy gradient sums of one block (residual units): the only access to
/// the labels. Each term `round(S r v)` is in `[-S, S]` (both clamped).
/// Sensitivity: params.rs, item 2.
pub(super) fn noisy_gradient(
    rows: &BlockRows,
    n_features: usize,
    residual: &[f64],
    plan: &LinearPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let s = f64::from(plan.scale);
    gradient_sums(rows, n_features, residual, plan.scale)
        .into_iter()
        .map(|g| Ok((i128::from(g) + draw(rng, plan.gradient_noise)?) as f64 / s))
        .collect()
}

/// The exact integer gradient sums (grid units) before noise: what the
/// sensitivity bound is about (tested under substitution in tests.rs).
pub(super) fn gradient_sums(
    rows: &BlockRows,
    n_features: usize,
    residual: &[f64],
    scale: u32,
) -> Vec<i64> {
    let s = f64::from(scale);
    let mut sums = vec![0i64; n_features + 1];
    for ((&f, &v), &r) in rows.feature.iter().zip(&rows.value).zip(residual) {
        let term = (r.clamp(-1.0, 1.0) * v.clamp(-1.0, 1.0) * s).clamp(-s, s);
        sums[usize::from(f).min(n_features)] += to_grid(term);
    }
    sums.truncate(n_features);
    sums
}

/// The labels as the loss sees them: 0/1 for a classifier; for a regressor
/// the clamped value scaled to `[-1, 1]` around the public midpoint.
fn targets(data: &Dataset, task: Task) -> Result<Vec<f64>, LearnError> {
    match task {
        Task::Binary => {
            let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
            Ok((0..data.n_rows())
                .map(|i| f64::from(u8::from(labels.get(i))))
                .collect())
        }
        Task::Regression { min, max } => {
            let values = data.targets.as_ref().ok_or(LearnError::NoLabels)?;
            let (mid, half) = ((min + max) / 2.0, half_range(min, max));
            Ok(values
                .iter()
                .map(|v| (v.clamp(min, max) - mid) / half)
                .collect())
        }
    }
}

/// Half the label range (the residual scale), never 0.
pub(super) fn half_range(min: f64, max: f64) -> f64 {
    ((max - min) / 2.0).max(f64::MIN_POSITIVE)
}

/// Train dp-linear on `data` (encoded with `encoder`) as `plan` says.
/// `on_epoch(done)` after each epoch; `false` cancels.
pub fn fit(
    data: &Dataset,
    encoder: &Encoder,
    plan: &LinearPlan,
    rng: &mut NoiseRng,
    on_epoch: &mut dyn FnMut(u32) -> bool,
) -> Result<LinearModel, LearnError> {
    let task = encoder.schema().task();
    let n = data.n_rows();
    if n == 0 {
        return Err(LearnError::NoRows);
    }
    if n != plan.n_rows {
        return Err(LearnError::InvalidParameter(
            "the data does not have the planned number of rows".into(),
        ));
    }
    let blocks: Vec<Block> = features::layout(encoder, plan.params.numeric_features);
    if blocks.len() != plan.blocks {
        return Err(LearnError::InvalidParameter(
            "the schema does not have the planned number of blocks".into(),
        ));
    }
    let y = targets(data, task)?;
    let rows: Vec<BlockRows> = blocks
        .iter()
        .map(|b| features::block_rows(data, b))
        .collect();

    // Phase 1: the curvatures (the intercept's is n, public).
    let mut curvatures = Vec::with_capacity(blocks.len());
    for (b, r) in blocks.iter().zip(&rows) {
        curvatures.push(if b.intercept {
            vec![n as f64]
        } else {
            noisy_curvatures(r, b.features.len(), plan, rng)?
        });
    }

    // Phase 2: cyclic block Newton steps from F = 0 (classification: logit
    // 0; regression: the public midpoint).
    let h = match task {
        Task::Binary => 0.25,
        Task::Regression { .. } => 1.0,
    };
    let p = plan.params;
    let mut weights: Vec<Vec<f64>> = blocks.iter().map(|b| vec![0.0; b.features.len()]).collect();
    let mut score = vec![0.0f64; n];
    let mut residual = vec![0.0f64; n];
    for epoch in 0..p.epochs {
        for (b, block) in blocks.iter().enumerate() {
            match task {
                Task::Binary => {
                    for ((r, &f), &t) in residual.iter_mut().zip(&score).zip(&y) {
                        *r = t - sigmoid(f);
                    }
                }
                Task::Regression { .. } => {
                    for ((r, &f), &t) in residual.iter_mut().zip(&score).zip(&y) {
                        *r = t - f;
                    }
                }
            }
            let k = block.features.len();
            let g = noisy_gradient(&rows[b], k, &residual, plan, rng)?;
            let step: Vec<f64> = g
                .iter()
                .zip(&curvatures[b])
                .map(|(g, c)| p.learning_rate * g / (h * c.max(0.0) + plan.lambda))
                .collect();
            for (w, s) in weights[b].iter_mut().zip(&step) {
                *w += s;
            }
            let mut step_of = step;
            step_of.push(0.0);
            for ((f, &feature), &v) in score.iter_mut().zip(&rows[b].feature).zip(&rows[b].value) {
                *f += step_of[usize::from(feature)] * v;
            }
        }
        if !on_epoch(epoch + 1) {
            return Err(LearnError::Cancelled);
        }
    }

    // Back to label units (post-processing).
    if let Task::Regression { min, max } = task {
        let half = half_range(min, max);
        for w in weights.iter_mut().flatten() {
            *w *= half;
        }
        weights[0][0] += (min + max) / 2.0;
    }
    Ok(LinearModel {
        blocks,
        coefficients: weights,
        curvatures,
    })
}
