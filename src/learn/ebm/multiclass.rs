//! DP-EBM for k classes (issue 27): the binary training loop with k class
//! sums per leaf. After the same private binning, the intercept releases the
//! k class counts, then cyclic boosting releases, per iteration, the k sums
//! of the softmax residuals `e_y - p` in each leaf (`softmax`), one shape
//! function per class. The sensitivity argument is in
//! `params::leaf_l1_sensitivity` and docs/privacy.md "DP-EBM for k
//! classes"; there is no threshold calibration (report-noisy-max over
//! thresholds is a binary notion).
//!
//! Timing: as the binary loop, the passes and the work per pass depend
//! only on public sizes (n, k, the features, the released merged bins).

use super::bins::{FeatureLayout, MergedBins};
use super::fit::{random_leaves, shape};
use super::kernel::{Bin, Cuts};
use super::model::EbmModel;
use super::params::EbmPlan;
use super::softmax::{self, ClassUpdate, LEAVES};
use crate::learn::LearnError;
use crate::privacy::NoiseRng;

/// Each class's row count, exactly (`y[i]` below k; a larger index counts
/// as k - 1, which upload never stores): one visit per row.
pub(super) fn class_counts(y: &[u16], k: usize) -> Vec<i64> {
    let mut counts = vec![0i64; k];
    for &c in y {
        counts[usize::from(c).min(k - 1)] += 1;
    }
    counts
}

/// Phase 2's release: the k class counts, each row adding its one-hot
/// vector on the grid (`S e_y`; substitution moves two counts by `S`: L1
/// sensitivity 2, L2 `sqrt(2)` in count units, `params::intercept_sensitivity`),
/// with the plan's intercept noise on each. In count units.
pub(super) fn noisy_class_counts(
    y: &[u16],
    k: usize,
    plan: &EbmPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let scale = f64::from(plan.scale);
    class_counts(y, k)
        .into_iter()
        .map(|c| {
            let sum = i128::from(c) * i128::from(plan.scale) + plan.intercept_noise.draw(rng)?;
            Ok(sum as f64 / scale)
        })
        .collect()
}

/// One iteration's release (the only access to the rows in training):
/// after applying `update` to the scores, the k class sums of the grid
/// residuals in each leaf of `cuts` (`softmax::class_leaf_sums`: every row
/// adds an integer vector of L1 norm at most `2S` and L2 at most `sqrt(2)
/// S` to one leaf), with the plan's leaf noise on every sum (calibrated to
/// L1 sensitivity 4, L2 `2 sqrt(2)`: `params::leaf_l1_sensitivity`). In
/// grid units, `[leaf][class]` for the leaves of `cuts`.
#[allow(clippy::too_many_arguments)]
pub(super) fn noisy_class_sums(
    scores: &mut [f64],
    y: &[u16],
    k: usize,
    codes: &[Bin],
    cuts: Cuts,
    update: &ClassUpdate,
    plan: &EbmPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let sums = softmax::class_leaf_sums(scores, y, k, plan.scale, codes, cuts, update);
    sums[..(cuts.len() + 1) * k]
        .iter()
        .map(|&s| Ok((i128::from(s) + plan.leaf_noise.draw(rng)?) as f64))
        .collect()
}

/// The starting scores from the noisy class counts `noisy` (count units;
/// post-processing of them and of public facts), one per class, summing to
/// 0.
///
/// Each noisy frequency `m_c = noisy_c / n` is shrunk towards `1/k` by the
/// public factor `v / (v + s^2)`, `s^2` the noise's variance on `m_c` and
/// `v = (k - 1) / (k^2 (k + 1))` the variance of one coordinate of a
/// uniform (Dirichlet(1, ..., 1)) class distribution: the posterior mean in
/// a Gaussian approximation, the binary rule's `1/12` at k = 2
/// (`fit::start_from`). Then kept in `[1/(2n), 1]`, normalised to sum to 1,
/// and the scores are the centred logarithms.
pub(super) fn start_scores(noisy: &[f64], plan: &EbmPlan) -> Vec<f64> {
    let n = plan.n_rows as f64;
    let k = noisy.len() as f64;
    let noise = (plan.sigma_intercept / n).powi(2);
    let prior = (k - 1.0) / (k * k * (k + 1.0));
    let shrink = prior / (prior + noise);
    let kept: Vec<f64> = noisy
        .iter()
        .map(|&c| (1.0 / k + (c / n - 1.0 / k) * shrink).clamp(0.5 / n, 1.0))
        .collect();
    let total: f64 = kept.iter().sum();
    let logs: Vec<f64> = kept.iter().map(|p| (p / total).ln()).collect();
    let mean = logs.iter().sum::<f64>() / k;
    logs.into_iter().map(|l| l - mean).collect()
}

/// Each class's step factor: the multiclass Newton step of Friedman, Hastie
/// and Tibshirani (2000, Alg. 6: `(k - 1) / k` times the residual sum over
/// the sum of `p (1 - p)`), with the curvature taken at the released start
/// probability `q_c` (public), kept in [0.05, 0.95] as the binary step
/// (`fit`). At k = 2 the two classes' updates move the log-odds by twice
/// each one's, so `1/2` of the binary factor moves it as far.
pub(super) fn class_steps(start: &[f64]) -> Vec<f64> {
    let k = start.len() as f64;
    let top = start.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = start.iter().map(|s| (s - top).exp()).collect();
    let total: f64 = exps.iter().sum();
    exps.iter()
        .map(|e| {
            let q = (e / total).clamp(0.05, 0.95);
            (k - 1.0) / k / (q * (1.0 - q))
        })
        .collect()
}

/// Train a k-class DP-EBM after the private binning (`fit::fit` did phase
/// 1): the noisy class counts (phase 2), cyclic boosting of k functions per
/// feature (phase 3), centring (post-processing).
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_classes(
    y: &[u16],
    k: usize,
    layouts: Vec<FeatureLayout>,
    merged: Vec<MergedBins>,
    codes: Vec<Vec<Bin>>,
    plan: &EbmPlan,
    rng: &mut NoiseRng,
    on_epoch: &mut dyn FnMut(u32) -> bool,
) -> Result<EbmModel, LearnError> {
    let n = y.len();
    let p = plan.params;
    let scale = f64::from(plan.scale);

    // Phase 2: the k class counts (each row's term is its one-hot vector on
    // the grid, `S e_y`: L1 sensitivity 2, L2 sqrt(2)), each with the
    // plan's intercept noise.
    let noisy = noisy_class_counts(y, k, plan, rng)?;
    let start = start_scores(&noisy, plan);
    let step = class_steps(&start);

    // Phase 3: cyclic boosting; each iteration releases `leaves x k` noisy
    // sums, each divided by its leaf's public count.
    let mut scores: Vec<f64> = start.iter().copied().cycle().take(n * k).collect();
    // `[feature][class][bin]`
    let mut values: Vec<Vec<Vec<f64>>> =
        merged.iter().map(|m| vec![vec![0.0; m.len()]; k]).collect();
    let mut last: (usize, Cuts, Vec<f64>) = (0, Cuts::new(&[]), vec![0.0; LEAVES * k]);
    for epoch in 0..p.epochs {
        for (f, m) in merged.iter().enumerate() {
            let (cuts, leaf_of_bin) = random_leaves(m.len(), p.max_leaves as usize, rng)?;
            let update = ClassUpdate {
                codes: &codes[last.0],
                cuts: last.1,
                values: &last.2,
            };
            let sums = noisy_class_sums(&mut scores, y, k, &codes[f], cuts, &update, plan, rng)?;
            let leaves = cuts.len() + 1;
            let mut denominators = vec![0.0; leaves];
            for (b, &c) in m.counts.iter().enumerate() {
                denominators[leaf_of_bin[b]] += c;
            }
            // Post-processing of the noisy sums and the public counts.
            let mut per_leaf = vec![0.0; LEAVES * k];
            for (l, &d) in denominators.iter().enumerate() {
                for c in 0..k {
                    let noisy = sums[l * k + c];
                    per_leaf[l * k + c] = p.learning_rate * step[c] * noisy / scale / d.max(1.0);
                }
            }
            for (c, v) in values[f].iter_mut().enumerate() {
                for (x, &l) in v.iter_mut().zip(&leaf_of_bin) {
                    *x += per_leaf[l * k + c];
                }
            }
            last = (f, cuts, per_leaf);
        }
        if !on_epoch(epoch + 1) {
            return Err(LearnError::Cancelled);
        }
    }

    // Centre each class's function on its public counts, then each bin's k
    // values (and the intercepts) on their mean over the classes: softmax
    // is unchanged by a constant added to every class (post-processing).
    let mut intercepts = start;
    for (v, m) in values.iter_mut().zip(&merged) {
        let total: f64 = m.counts.iter().sum();
        if total > 0.0 {
            for (class, x) in v.iter_mut().zip(intercepts.iter_mut()) {
                let mean = class.iter().zip(&m.counts).map(|(v, c)| v * c).sum::<f64>() / total;
                class.iter_mut().for_each(|v| *v -= mean);
                *x += mean;
            }
        }
        for b in 0..m.len() {
            let mean = v.iter().map(|class| class[b]).sum::<f64>() / k as f64;
            v.iter_mut().for_each(|class| class[b] -= mean);
        }
    }
    let mean = intercepts.iter().sum::<f64>() / k as f64;
    intercepts.iter_mut().for_each(|x| *x -= mean);
    let shapes = layouts
        .into_iter()
        .zip(merged)
        .zip(values)
        .map(|((f, m), v)| {
            let mut s = shape(f, m, Vec::new());
            s.class_values = v;
            s
        })
        .collect();
    Ok(EbmModel {
        intercept: 0.0,
        class_intercepts: intercepts,
        shapes,
    })
}
