//! DPBoost's two-level boosting (\[DPB\] Alg. 2, with PAPERS.md §1.7's
//! indexing fix) and the initial score.
//!
//! Each ensemble draws a fresh uniform permutation of the rows (exact
//! sampler, independent of the data) and gives the tree at 0-based position
//! p the next `sizes[p]` rows: the subsets are disjoint within an ensemble,
//! so a substituted row is in at most one of its trees (parallel composition,
//! \[DPB\] Thm 4, adaptively: later trees read the earlier ones only through
//! their released values). Ensembles compose sequentially (Thm 8).
//!
//! Timing: the subset sizes, the number of trees and their shape are public;
//! each level visits the subset's rows once per feature; the noise draws are
//! one per candidate per node and one per leaf.

use super::model::DpBoostModel;
use super::params::{DpBoostPlan, G_STAR, GRAD_BITS, HESSIAN_BOUND_UNITS};
use super::tree::{self, Features, grid_gradient, laplace_units};
use crate::data::{Dataset, Encoder, Task};
use crate::learn::LearnError;
use crate::privacy::{NoiseRng, exact};

/// The labels as training targets: +1/-1 for a classifier; for a regressor
/// the label clamped to the schema's public bounds and scaled into [-1, 1]
/// (\[DPB\] §4).
pub fn targets(data: &Dataset, task: Task) -> Result<Vec<f64>, LearnError> {
    match task {
        Task::Binary => {
            let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
            Ok((0..data.n_rows())
                .map(|i| if labels.get(i) { 1.0 } else { -1.0 })
                .collect())
        }
        Task::Regression { min, max } => {
            let values = data.targets.as_ref().ok_or(LearnError::NoLabels)?;
            Ok(values.iter().map(|&v| scale_label(v, min, max)).collect())
        }
        Task::Multiclass { .. } => Err(LearnError::InvalidParameter(
            "DPBoost trains k classes as k binary fits (dpboost::multiclass), never on the class index".into(),
        )),
    }
}

/// A label in [min, max] scaled into [-1, 1] (clamped first).
pub fn scale_label(v: f64, min: f64, max: f64) -> f64 {
    let half = (max - min) / 2.0;
    ((v.clamp(min, max) - (min + half)) / half).clamp(-1.0, 1.0)
}

/// The gradient of the loss at score `f` (\[code\]: LightGBM's binary
/// log-loss on +-1 labels, -y/(1 + e^{y f}); square loss f - y for
/// regression; PAPERS.md §4 item 20).
pub fn gradient(task: Task, y: f64, f: f64) -> f64 {
    match task {
        // Multiclass: not reached (k classes train k binary fits).
        Task::Binary | Task::Multiclass { .. } => -y / (1.0 + (y * f).exp()),
        Task::Regression { .. } => f - y,
    }
}

/// The initial score: 0 when `epsilon_init` is 0; otherwise the log-odds of a
/// noisy positive rate (count of sensitivity 1 under substitution) or a noisy
/// mean of the scaled labels (grid sum of sensitivity 2), exact discrete
/// Laplace noise, charged `epsilon_init`.
pub fn initial_score(
    y: &[f64],
    task: Task,
    epsilon_init: f64,
    rng: &mut NoiseRng,
) -> Result<f64, LearnError> {
    if epsilon_init == 0.0 {
        return Ok(0.0);
    }
    let n = y.len() as f64;
    match task {
        Task::Multiclass { .. } => Err(LearnError::InvalidParameter(
            "DPBoost trains k classes as k binary fits (dpboost::multiclass), never on the class index".into(),
        )),
        Task::Binary => {
            let count = y.iter().filter(|&&v| v > 0.0).count() as i128;
            let noisy = count + laplace_units(rng, 1.0 / epsilon_init)?;
            let p = (noisy as f64 / n).clamp(0.01, 0.99);
            Ok((p / (1.0 - p)).ln())
        }
        Task::Regression { .. } => {
            let unit = f64::from(1u32 << GRAD_BITS);
            let sum: i128 = y.iter().map(|&v| (v * unit).round() as i128).sum();
            let noisy = sum + laplace_units(rng, 2.0 * unit / epsilon_init)?;
            Ok((noisy as f64 / unit / n).clamp(-1.0, 1.0))
        }
    }
}

/// A row's hessian on the 2^-20 grid from its grid gradient q (exact
/// integers, at most `HESSIAN_BOUND_UNITS`): the log-loss's |g|(1 - |g|)
/// (for g = -y/(1 + e^{yf}), d/df g = |g|(1 - |g|)), the square loss's 1.
pub fn grid_hessian(task: Task, q: i64) -> i64 {
    let unit = 1i64 << GRAD_BITS;
    match task {
        // Multiclass: not reached (k classes train k binary fits).
        Task::Binary | Task::Multiclass { .. } => {
            let a = q.abs().min(unit);
            a * (unit - a) / unit
        }
        Task::Regression { .. } => HESSIAN_BOUND_UNITS,
    }
}

/// A uniform permutation of 0..n (Fisher-Yates with the exact sampler).
fn permutation(n: usize, rng: &mut NoiseRng) -> Result<Vec<usize>, LearnError> {
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = exact::uniform_below(rng, i as u128 + 1)? as usize;
        perm.swap(i, j);
    }
    Ok(perm)
}

/// Train DPBoost on `data` as `plan` says, for the schema's binary or
/// regression label (k classes: `super::multiclass`); `on_tree(done)` after
/// each tree, `false` cancels.
pub fn fit(
    data: &Dataset,
    encoder: &Encoder,
    plan: &DpBoostPlan,
    rng: &mut NoiseRng,
    on_tree: &mut dyn FnMut(u32) -> bool,
) -> Result<DpBoostModel, LearnError> {
    fit_task(data, encoder, encoder.schema().task(), plan, rng, on_tree)
}

/// [`fit`] for `task` (binary or regression), which may differ from the
/// schema's: a one-vs-rest fit of a multiclass schema is binary on
/// "is the row's class c?". The encoder gives only the public split
/// candidates and column layouts, which do not depend on the label.
pub fn fit_task(
    data: &Dataset,
    encoder: &Encoder,
    task: Task,
    plan: &DpBoostPlan,
    rng: &mut NoiseRng,
    on_tree: &mut dyn FnMut(u32) -> bool,
) -> Result<DpBoostModel, LearnError> {
    let n = crate::learn::planned_rows(data, plan.n_rows)?;
    let y = targets(data, task)?;
    let (layouts, candidates) = tree::candidates(encoder);
    if candidates.is_empty() {
        return Err(LearnError::InvalidParameter(
            "DPBoost: the schema gives no split candidates".into(),
        ));
    }
    let codes = layouts
        .iter()
        .map(|f| crate::learn::ebm::bins::codes(data, f))
        .collect();
    let features = Features {
        layouts,
        candidates,
        codes,
    };
    let init = initial_score(&y, task, plan.epsilon_init, rng)?;
    let mut score = vec![init; n];
    let mut grad = vec![0i64; n];
    let mut hess = vec![0i64; n];
    let mut weight = vec![0u8; n];
    let mut trees = Vec::with_capacity(plan.trees() as usize);
    let mut done = 0;
    for _ in 0..plan.params.ensembles {
        let perm = permutation(n, rng)?;
        let mut offset = 0;
        for (position, &size) in plan.sizes.iter().enumerate() {
            let subset = &perm[offset..offset + size];
            offset += size;
            // GDF ([DPB] §3.1): rows whose gradient exceeds g* leave this
            // tree only. They are not removed from the subset: they stay in
            // every pass with weight 0 (gradient and hessian 0, not counted),
            // so the tree's work is a function of the public subset size,
            // not of how many rows the filter dropped (docs/privacy.md
            // "Timing").
            for &r in subset {
                let g = gradient(task, y[r], score[r]);
                let kept = g.abs() <= G_STAR;
                grad[r] = if kept { grid_gradient(g) } else { 0 };
                hess[r] = if kept { grid_hessian(task, grad[r]) } else { 0 };
                weight[r] = u8::from(kept);
            }
            let t = tree::grow(
                plan,
                &features,
                &grad,
                &hess,
                &weight,
                subset,
                position as u32,
                rng,
            )?;
            // Every literal of every split is read for every row
            // (`Tree::leaves_of_rows`): the update's work does not depend on
            // the path a row takes.
            for (s, leaf) in score.iter_mut().zip(t.leaves_of_rows(&data.features)) {
                *s += t.leaves[leaf];
            }
            trees.push(t);
            done += 1;
            if !on_tree(done) {
                return Err(LearnError::Cancelled);
            }
        }
    }
    Ok(DpBoostModel {
        initial_score: init,
        trees,
    })
}
