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
//! **The joint group.** The intercept and the line blocks (numeric columns
//! as values on `[-1, 1]`) share every row, so stepping them one at a time
//! zig-zags between correlated columns and needs many epochs (each paid
//! for in noise). They are stepped together instead: their gradient sums
//! are released at the same residual (the same releases, at the same cost,
//! as stepping them one by one) and the step solves
//!
//! ```text
//! (h G + lambda I) delta = learning_rate * g                      (post-processing)
//! ```
//!
//! with `G` their Gram matrix: `n` for the intercept, the released noisy
//! curvatures on the diagonal and the released noisy cross sums
//! `sum_i v_ij v_ik` (with the intercept: `sum_i v_ij`) off it, projected
//! onto the positive semi-definite matrices and shifted by the cross noise's
//! standard deviation times `sqrt(m)` (so that, with the noise, `h G` stays
//! above the loss's Hessian in most directions). This is Böhning and
//! Lindsay's (1988) bound-optimisation step for the logistic loss and the
//! exact Newton step for the squared loss: the intercept and the lines
//! converge in one or two epochs instead of tens. Its fixed point (noisy
//! gradient zero) does not depend on `G`; `G`'s noise only slows it.
//!
//! Timing: every pass visits every row; the number of noise draws is fixed by
//! the schema and the plan; the eigen-decomposition runs a fixed number of
//! sweeps over a matrix whose size the schema fixes.

use super::features::{self, Block, BlockRows};
use super::model::LinearModel;
use super::params::LinearPlan;
use crate::data::{Dataset, Encoder, Task};
use crate::learn::LearnError;
use crate::learn::ebm::sigmoid;
use crate::privacy::NoiseRng;

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
        .map(|c| Ok((i128::from(c) + plan.curvature_noise.draw(rng)?) as f64 / s))
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

/// The exact integer cross sums (grid units) of the joint group, pair by
/// pair in order `(0, 1), (0, 2), ..., (1, 2), ...`: each term
/// `round(S v_j v_k)` with both values clamped to `[-1, 1]` is in `[-S, S]`,
/// so substituting a row moves each of the `P` sums by at most `2S`.
/// Sensitivity: params.rs, item 1b.
pub(super) fn cross_sums(values: &[&[f64]], scale: u32) -> Vec<i64> {
    let s = f64::from(scale);
    let mut sums = Vec::new();
    for (j, a) in values.iter().enumerate() {
        for b in &values[j + 1..] {
            sums.push(
                a.iter()
                    .zip(b.iter())
                    .map(|(&x, &y)| {
                        to_grid((x.clamp(-1.0, 1.0) * y.clamp(-1.0, 1.0) * s).clamp(-s, s))
                    })
                    .sum(),
            );
        }
    }
    sums
}

/// The noisy cross sums of the joint group (rows).
pub(super) fn noisy_cross(
    values: &[&[f64]],
    plan: &LinearPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let s = f64::from(plan.scale);
    let sums = cross_sums(values, plan.scale);
    let Some(noise) = plan.cross_noise else {
        return if sums.is_empty() {
            Ok(Vec::new())
        } else {
            Err(LearnError::InvalidParameter(
                "the schema does not have the planned number of lines".into(),
            ))
        };
    };
    if sums.len() != plan.cross_pairs {
        return Err(LearnError::InvalidParameter(
            "the schema does not have the planned number of lines".into(),
        ));
    }
    sums.into_iter()
        .map(|c| Ok((i128::from(c) + noise.draw(rng)?) as f64 / s))
        .collect()
}

/// Sweeps of the cyclic Jacobi eigen-decomposition: a fixed number (the
/// running time depends on the matrix size only); Jacobi converges
/// quadratically, and ten sweeps leave off-diagonal mass far below the
/// noise of any released sum for the sizes schemas give.
const JACOBI_SWEEPS: usize = 12;

/// Eigenvalues and eigenvectors (columns of `v`, row-major `m x m`) of the
/// symmetric `a` (row-major `m x m`), by cyclic Jacobi rotations.
pub(super) fn symmetric_eigen(mut a: Vec<f64>, m: usize) -> (Vec<f64>, Vec<f64>) {
    let mut v = vec![0.0; m * m];
    for i in 0..m {
        v[i * m + i] = 1.0;
    }
    for _ in 0..JACOBI_SWEEPS {
        for p in 0..m {
            for q in p + 1..m {
                let apq = a[p * m + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (a[q * m + q] - a[p * m + p]) / (2.0 * apq);
                let sign = if theta >= 0.0 { 1.0 } else { -1.0 };
                // The smaller root of t^2 + 2 theta t - 1 = 0 (zeroes a_pq).
                let t = sign / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..m {
                    let (akp, akq) = (a[k * m + p], a[k * m + q]);
                    a[k * m + p] = c * akp - s * akq;
                    a[k * m + q] = s * akp + c * akq;
                }
                for k in 0..m {
                    let (apk, aqk) = (a[p * m + k], a[q * m + k]);
                    a[p * m + k] = c * apk - s * aqk;
                    a[q * m + k] = s * apk + c * aqk;
                }
                for k in 0..m {
                    let (vkp, vkq) = (v[k * m + p], v[k * m + q]);
                    v[k * m + p] = c * vkp - s * vkq;
                    v[k * m + q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..m).map(|i| a[i * m + i]).collect(), v)
}

/// The joint group's step operator `(h G_+ + lambda I)^{-1}` as eigenpairs:
/// `G` from the intercept's `n`, the noisy diagonal and the noisy cross sums
/// (pair order of [`cross_sums`]), its negative eigenvalues set to 0, then
/// shifted by `shift`.
pub(super) struct JointStep {
    m: usize,
    vectors: Vec<f64>,
    inverse: Vec<f64>,
}

impl JointStep {
    pub(super) fn new(diagonal: &[f64], cross: &[f64], h: f64, shift: f64, lambda: f64) -> Self {
        let m = diagonal.len();
        let mut a = vec![0.0; m * m];
        let mut pairs = cross.iter();
        for j in 0..m {
            a[j * m + j] = diagonal[j];
            for k in j + 1..m {
                let c = pairs.next().copied().unwrap_or(0.0);
                a[j * m + k] = c;
                a[k * m + j] = c;
            }
        }
        let (values, vectors) = symmetric_eigen(a, m);
        let inverse = values
            .iter()
            .map(|&e| 1.0 / (h * (e.max(0.0) + shift) + lambda))
            .collect();
        JointStep {
            m,
            vectors,
            inverse,
        }
    }

    /// `(h G_+ + lambda I)^{-1} g`.
    pub(super) fn solve(&self, g: &[f64]) -> Vec<f64> {
        let m = self.m;
        let v = &self.vectors;
        let coords: Vec<f64> = (0..m)
            .map(|j| (0..m).map(|k| v[k * m + j] * g[k]).sum::<f64>() * self.inverse[j])
            .collect();
        (0..m)
            .map(|k| (0..m).map(|j| v[k * m + j] * coords[j]).sum())
            .collect()
    }
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
        .map(|g| Ok((i128::from(g) + plan.gradient_noise.draw(rng)?) as f64 / s))
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

/// One row's softmax-gradient terms on the grid, in class order: for a row
/// of class `y` with class probabilities `p` and feature value `v`, the
/// gradient of the log-likelihood is `(e_y - p) v`. Each class `c != y`
/// gets `q_c = -sign(v) floor(S p_c |v|)`, the running total of `|q_c|`
/// capped at `S` (so `sum_{c != y} |q_c| <= S` whatever the floats did,
/// NaN counting 0), and class `y` gets `q_y = -sum_{c != y} q_c`. So
/// `sum_c |q_c| <= 2S` and `||q||_2^2 <= 2 S^2` for any k: the sensitivity
/// argument of `params::GRADIENT_L1_MULTICLASS` and
/// `params::GRADIENT_L2_SQ_MULTICLASS`. Flooring rounds every term towards
/// 0 by less than one grid step. Written into `out` (length k).
pub(super) fn softmax_terms(p: &[f64], y: usize, v: f64, scale: u32, out: &mut [i64]) {
    let s = i64::from(scale);
    let v = v.clamp(-1.0, 1.0);
    let sign = if v < 0.0 { -1 } else { 1 };
    let mut used = 0i64;
    for (c, (&pc, q)) in p.iter().zip(out.iter_mut()).enumerate() {
        if c == y {
            *q = 0;
            continue;
        }
        // `as` saturates and maps NaN to 0; clamped to [0, S - used].
        let take = ((pc * v.abs() * f64::from(scale)).floor() as i64).clamp(0, s - used);
        used += take;
        *q = -sign * take;
    }
    if let Some(q) = out.get_mut(y) {
        *q = sign * used;
    }
}

/// The exact integer multiclass gradient sums (grid units) of one block
/// before noise, `[class][feature]`: each row's [`softmax_terms`] added to
/// its feature's sums. `probabilities[i]` is row `i`'s k class
/// probabilities, `y[i]` its class. Work `O(n k)`.
pub(super) fn softmax_gradient_sums(
    rows: &BlockRows,
    n_features: usize,
    probabilities: &[Vec<f64>],
    y: &[u16],
    scale: u32,
) -> Vec<Vec<i64>> {
    let k = probabilities.first().map_or(0, Vec::len);
    let mut sums = vec![vec![0i64; n_features + 1]; k];
    let mut q = vec![0i64; k];
    for (((&f, &v), p), &yi) in rows
        .feature
        .iter()
        .zip(&rows.value)
        .zip(probabilities)
        .zip(y)
    {
        softmax_terms(p, usize::from(yi), v, scale, &mut q);
        let f = usize::from(f).min(n_features);
        for (sum, &term) in sums.iter_mut().zip(&q) {
            sum[f] += term;
        }
    }
    for s in &mut sums {
        s.truncate(n_features);
    }
    sums
}

/// The noisy multiclass gradient sums of one block (residual units),
/// `[class][feature]`: every sum of [`softmax_gradient_sums`] with the
/// plan's gradient noise (calibrated to the multiclass sensitivity).
pub(super) fn noisy_softmax_gradient(
    rows: &BlockRows,
    n_features: usize,
    probabilities: &[Vec<f64>],
    y: &[u16],
    plan: &LinearPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<Vec<f64>>, LearnError> {
    let s = f64::from(plan.scale);
    softmax_gradient_sums(rows, n_features, probabilities, y, plan.scale)
        .into_iter()
        .map(|class| {
            class
                .into_iter()
                .map(|g| Ok((i128::from(g) + plan.gradient_noise.draw(rng)?) as f64 / s))
                .collect()
        })
        .collect()
}

/// The labels as the loss sees them: 0/1 for a classifier; for a regressor
/// the clamped value scaled to `[-1, 1]` around the public midpoint.
pub(super) fn targets(data: &Dataset, task: Task) -> Result<Vec<f64>, LearnError> {
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
        Task::Multiclass { .. } => Err(LearnError::InvalidParameter(
            "dp-linear cannot do multiclass classification yet".into(),
        )),
    }
}

/// Half the label range (the residual scale), never 0.
pub(super) fn half_range(min: f64, max: f64) -> f64 {
    ((max - min) / 2.0).max(f64::MIN_POSITIVE)
}

/// The blocks of the plan's layout, each line's values mapped from its
/// private range when the plan releases ranges (params.rs, item 0): the
/// first release of a run, one noisy count per interval literal of every
/// line ([`features::literal_counts`], sensitivity L1 `2L`, L2 `sqrt(2L)`),
/// then [`features::rescale_line`] (post-processing). Without ranged lines,
/// the public layout.
pub(super) fn ranged_layout(
    data: &Dataset,
    encoder: &Encoder,
    plan: &LinearPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<Block>, LearnError> {
    let mut blocks = features::layout(encoder, plan.params.numeric_features);
    let lines: Vec<usize> = (0..blocks.len()).filter(|&b| blocks[b].is_line()).collect();
    if blocks.len() != plan.blocks || (plan.ranged_lines > 0 && lines.len() != plan.ranged_lines) {
        return Err(LearnError::InvalidParameter(
            "the schema does not have the planned number of blocks".into(),
        ));
    }
    let Some(noise) = plan.range_noise.filter(|_| plan.ranged_lines > 0) else {
        return Ok(blocks);
    };
    for b in lines {
        let noisy = noisy_line_counts(data, &blocks[b], noise, rng)?;
        let threshold = plan.range_threshold(noisy.len());
        features::rescale_line(&mut blocks[b], &noisy, threshold);
    }
    Ok(blocks)
}

/// One line's noisy interval counts (rows): [`features::literal_counts`]
/// plus the range noise (params.rs, item 0).
pub(super) fn noisy_line_counts(
    data: &Dataset,
    block: &Block,
    noise: crate::privacy::Noise,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    features::literal_counts(data, block)
        .into_iter()
        .map(|c| Ok((i128::from(c) + noise.draw(rng)?) as f64))
        .collect()
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
    if let Some(op) = &plan.output {
        return super::output::fit(data, encoder, plan, op, rng, on_epoch);
    }
    if let Some(op) = &plan.objective {
        return super::objective::fit(data, encoder, plan, op, rng, on_epoch);
    }
    if let Task::Multiclass { k } = task {
        return fit_multiclass(data, encoder, plan, k, rng, on_epoch);
    }
    let n = crate::learn::planned_rows(data, plan.n_rows)?;
    let blocks = ranged_layout(data, encoder, plan, rng)?;
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

    // Phase 1b: the joint group (intercept, then the lines) and its cross
    // sums.
    let group: Vec<usize> = (0..blocks.len())
        .filter(|&b| b == 0 || blocks[b].is_line())
        .collect();
    if group.len() != plan.lines + 1 {
        return Err(LearnError::InvalidParameter(
            "the schema does not have the planned number of lines".into(),
        ));
    }
    let values: Vec<&[f64]> = group.iter().map(|&b| rows[b].value.as_slice()).collect();
    let cross = noisy_cross(&values, plan, rng)?;
    let h = match task {
        Task::Binary | Task::Multiclass { .. } => 0.25,
        Task::Regression { .. } => 1.0,
    };
    let p = plan.params;
    let joint = JointStep::new(
        &group
            .iter()
            .map(|&b| curvatures[b][0].max(0.0))
            .collect::<Vec<_>>(),
        &cross,
        h,
        plan.cross_std() * (group.len() as f64).sqrt(),
        plan.lambda,
    );
    let in_group: Vec<bool> = (0..blocks.len()).map(|b| group.contains(&b)).collect();

    // Phase 2: per epoch, one joint step of the group, then cyclic block
    // Newton steps over the other blocks, from F = 0 (classification: logit
    // 0; regression: the public midpoint).
    let mut weights: Vec<Vec<f64>> = blocks.iter().map(|b| vec![0.0; b.features.len()]).collect();
    let mut score = vec![0.0f64; n];
    let mut residual = vec![0.0f64; n];
    let update_residual = |residual: &mut [f64], score: &[f64]| match task {
        Task::Binary | Task::Multiclass { .. } => {
            for ((r, &f), &t) in residual.iter_mut().zip(score).zip(&y) {
                *r = t - sigmoid(f);
            }
        }
        Task::Regression { .. } => {
            for ((r, &f), &t) in residual.iter_mut().zip(score).zip(&y) {
                *r = t - f;
            }
        }
    };
    for epoch in 0..p.epochs {
        update_residual(&mut residual, &score);
        let mut g = Vec::with_capacity(group.len());
        for &b in &group {
            g.push(noisy_gradient(&rows[b], 1, &residual, plan, rng)?[0]);
        }
        let step = joint.solve(&g);
        for (&b, &d) in group.iter().zip(&step) {
            let d = p.learning_rate * d;
            weights[b][0] += d;
            for (f, &v) in score.iter_mut().zip(&rows[b].value) {
                *f += d * v;
            }
        }
        for (b, block) in blocks.iter().enumerate() {
            if in_group[b] {
                continue;
            }
            update_residual(&mut residual, &score);
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
        class_coefficients: Vec::new(),
    })
}

/// Multinomial (softmax) dp-linear for `k` classes: the binary algorithm
/// with one score per class. The curvatures and cross sums do not read the
/// labels and are released once, as for two classes; each gradient release
/// is the block's `k` vectors of softmax-gradient sums (noise calibrated in
/// the plan to their sensitivity, which does not grow with k), and every
/// class takes the same block Newton step as a binary classifier with the
/// softmax's curvature bound `h = 1/2` (Böhning 1992: the Hessian of the
/// multinomial log-loss is at most `1/2 (I - 11^T/k)` times `x x^T`, itself
/// at most `1/2` per class). Work per pass `O(n k)`; the number of noise
/// draws is `k` times the binary one's, fixed by the plan.
fn fit_multiclass(
    data: &Dataset,
    encoder: &Encoder,
    plan: &LinearPlan,
    k: usize,
    rng: &mut NoiseRng,
    on_epoch: &mut dyn FnMut(u32) -> bool,
) -> Result<LinearModel, LearnError> {
    let n = data.n_rows();
    if n == 0 {
        return Err(LearnError::NoRows);
    }
    if n != plan.n_rows || plan.classes != k || k < 2 {
        return Err(LearnError::InvalidParameter(
            "the data does not have the planned number of rows or classes".into(),
        ));
    }
    let y = data.classes.as_ref().ok_or(LearnError::NoLabels)?;
    let blocks = ranged_layout(data, encoder, plan, rng)?;
    let rows: Vec<BlockRows> = blocks
        .iter()
        .map(|b| features::block_rows(data, b))
        .collect();
    let mut curvatures = Vec::with_capacity(blocks.len());
    for (b, r) in blocks.iter().zip(&rows) {
        curvatures.push(if b.intercept {
            vec![n as f64]
        } else {
            noisy_curvatures(r, b.features.len(), plan, rng)?
        });
    }
    let group: Vec<usize> = (0..blocks.len())
        .filter(|&b| b == 0 || blocks[b].is_line())
        .collect();
    if group.len() != plan.lines + 1 {
        return Err(LearnError::InvalidParameter(
            "the schema does not have the planned number of lines".into(),
        ));
    }
    let values: Vec<&[f64]> = group.iter().map(|&b| rows[b].value.as_slice()).collect();
    let cross = noisy_cross(&values, plan, rng)?;
    let h = 0.5;
    let p = plan.params;
    let joint = JointStep::new(
        &group
            .iter()
            .map(|&b| curvatures[b][0].max(0.0))
            .collect::<Vec<_>>(),
        &cross,
        h,
        plan.cross_std() * (group.len() as f64).sqrt(),
        plan.lambda,
    );
    let in_group: Vec<bool> = (0..blocks.len()).map(|b| group.contains(&b)).collect();

    // weights[class][block][feature]; score[i][class].
    let mut weights: Vec<Vec<Vec<f64>>> =
        vec![blocks.iter().map(|b| vec![0.0; b.features.len()]).collect(); k];
    let mut score = vec![vec![0.0f64; k]; n];
    let mut probabilities = vec![vec![1.0 / k as f64; k]; n];
    let update = |probabilities: &mut [Vec<f64>], score: &[Vec<f64>]| {
        for (p, s) in probabilities.iter_mut().zip(score) {
            *p = crate::learn::trained::softmax(s);
        }
    };
    for epoch in 0..p.epochs {
        update(&mut probabilities, &score);
        // g[member][class]
        let mut g = Vec::with_capacity(group.len());
        for &b in &group {
            let sums = noisy_softmax_gradient(&rows[b], 1, &probabilities, y, plan, rng)?;
            g.push(sums.into_iter().map(|c| c[0]).collect::<Vec<f64>>());
        }
        for c in 0..k {
            let gc: Vec<f64> = g.iter().map(|m| m[c]).collect();
            let step = joint.solve(&gc);
            for (&b, &d) in group.iter().zip(&step) {
                let d = p.learning_rate * d;
                weights[c][b][0] += d;
                for (s, &v) in score.iter_mut().zip(&rows[b].value) {
                    s[c] += d * v;
                }
            }
        }
        for (b, block) in blocks.iter().enumerate() {
            if in_group[b] {
                continue;
            }
            update(&mut probabilities, &score);
            let m = block.features.len();
            let g = noisy_softmax_gradient(&rows[b], m, &probabilities, y, plan, rng)?;
            for (c, gc) in g.iter().enumerate() {
                let mut step: Vec<f64> = gc
                    .iter()
                    .zip(&curvatures[b])
                    .map(|(g, cv)| p.learning_rate * g / (h * cv.max(0.0) + plan.lambda))
                    .collect();
                for (w, s) in weights[c][b].iter_mut().zip(&step) {
                    *w += s;
                }
                step.push(0.0);
                for ((s, &feature), &v) in
                    score.iter_mut().zip(&rows[b].feature).zip(&rows[b].value)
                {
                    s[c] += step[usize::from(feature)] * v;
                }
            }
        }
        if !on_epoch(epoch + 1) {
            return Err(LearnError::Cancelled);
        }
    }
    let mut tables = weights.into_iter();
    let coefficients = tables.next().unwrap_or_default();
    Ok(LinearModel {
        blocks,
        coefficients,
        curvatures,
        class_coefficients: tables.collect(),
    })
}
