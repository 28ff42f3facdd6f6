//! DP-EBM training (DP-EBM Alg. 2, App. 8.1-8.2; PAPERS.md §1.8), with the
//! project's rules: substitution neighbours, residuals clamped to [-1, 1] and
//! rounded to a fixed-point grid, exact discrete Gaussian noise on integer
//! sums, zCDP accounting (`EbmParams::plan` has the sensitivity argument).
//!
//! Timing: the passes and the work per pass depend only on public sizes (n,
//! the features, the merged bin counts, which are released): every iteration
//! visits every row once to sum and once to update, with table lookups and no
//! data-dependent branch; the number of noise draws is fixed by the plan.

use super::bins::{self, FeatureLayout, MergedBins};
use super::model::{EbmModel, ShapeFunction, fast_sigmoid};
use super::params::EbmPlan;
use crate::data::{Dataset, Encoder, Task};
use crate::learn::LearnError;
use crate::privacy::{NoiseRng, exact};

/// The labels as numbers: 0/1 for a classifier, the clamped value for a
/// regressor.
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
            Ok(values.iter().map(|v| v.clamp(min, max)).collect())
        }
    }
}

/// Train a DP-EBM on `data` (encoded with `encoder`) as `plan` says.
/// `on_epoch(done)` after each epoch; `false` cancels.
pub fn fit(
    data: &Dataset,
    encoder: &Encoder,
    plan: &EbmPlan,
    rng: &mut NoiseRng,
    on_epoch: &mut dyn FnMut(u32) -> bool,
) -> Result<EbmModel, LearnError> {
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
    let layouts = bins::layout(encoder);
    if layouts.len() != plan.n_features {
        return Err(LearnError::InvalidParameter(
            "the schema does not have the planned number of features".into(),
        ));
    }
    let y = targets(data, task)?;
    let p = plan.params;

    // Phase 1: private binning (rho_binning).
    let target = n as f64 / f64::from(p.max_bins);
    let mut merged: Vec<MergedBins> = Vec::with_capacity(layouts.len());
    let mut codes: Vec<Vec<u16>> = Vec::with_capacity(layouts.len());
    for f in &layouts {
        let base = bins::codes(data, f);
        let noisy = bins::noisy_counts(&base, f.base.len(), plan, rng)?;
        let m = bins::merge(&noisy, f.ordered, target);
        codes.push(
            base.iter()
                .map(|&c| m.bin_of_base[usize::from(c)])
                .collect(),
        );
        merged.push(m);
    }

    // Phase 2: cyclic boosting of one-feature functions (rho_training).
    // Residuals are divided by `range` and clamped to [-1, 1]. For a
    // regressor the scale is half the public label range: the model starts
    // at the midpoint, so every residual is within it at the start and the
    // clamp bites only on rows predicted more than half the range away;
    // the noise in label units is then half what the full range would give.
    let (start, range) = match task {
        Task::Binary => (0.0, 1.0),
        Task::Regression { min, max } => ((min + max) / 2.0, (max - min) / 2.0),
    };
    let scale = f64::from(plan.scale);
    let mut score = vec![start; n];
    let mut values: Vec<Vec<f64>> = merged.iter().map(|m| vec![0.0; m.len()]).collect();
    let mut leaf_of_bin: Vec<usize> = Vec::new();
    // The last iteration's update per merged bin: applied to the scores at
    // the start of the next iteration's pass (one pass over the rows per
    // iteration instead of two).
    let mut update_of_bin: Vec<f64> = Vec::new();
    for epoch in 0..p.epochs {
        for (k, m) in merged.iter().enumerate() {
            let bins_k = m.len();
            random_leaves(bins_k, p.max_leaves as usize, rng, &mut leaf_of_bin)?;
            let leaves = leaf_of_bin.last().map_or(1, |l| l + 1);
            // The previous iteration's update is applied in the same pass.
            let pending = (k > 0 || epoch > 0).then(|| {
                let previous = if k == 0 { merged.len() - 1 } else { k - 1 };
                (codes[previous].as_slice(), update_of_bin.as_slice())
            });
            let sums = noisy_leaf_sums(
                &codes[k],
                &leaf_of_bin,
                leaves,
                &mut score,
                pending,
                &y,
                task,
                range,
                plan,
                rng,
            )?;
            let mut denominators = vec![0.0; leaves];
            for (b, &c) in m.counts.iter().enumerate() {
                denominators[leaf_of_bin[b]] += c;
            }
            update_of_bin.clear();
            for b in 0..bins_k {
                let l = leaf_of_bin[b];
                // Post-processing of the noisy sum and the public counts.
                let u = p.learning_rate * range * sums[l] / scale / denominators[l].max(1.0);
                values[k][b] += u;
                update_of_bin.push(u);
            }
        }
        if !on_epoch(epoch + 1) {
            return Err(LearnError::Cancelled);
        }
    }

    // Centre each function on its public counts (post-processing).
    let mut intercept = start;
    let shapes = layouts
        .into_iter()
        .zip(merged)
        .zip(values)
        .map(|((f, m), mut v)| {
            let total: f64 = m.counts.iter().sum();
            if total > 0.0 {
                let mean = v.iter().zip(&m.counts).map(|(v, c)| v * c).sum::<f64>() / total;
                v.iter_mut().for_each(|x| *x -= mean);
                intercept += mean;
            }
            shape(f, m, v)
        })
        .collect();
    Ok(EbmModel { intercept, shapes })
}

fn shape(f: FeatureLayout, m: MergedBins, values: Vec<f64>) -> ShapeFunction {
    ShapeFunction {
        feature: f.name,
        base: f.base,
        ordered: f.ordered,
        bin_of_base: m.bin_of_base,
        counts: m.counts,
        values,
    }
}

/// Leaves of one iteration: `min(max_leaves, bins) - 1` distinct cut points
/// drawn uniformly (exactly, from the CSPRNG) among the `bins - 1`
/// boundaries; `leaf_of_bin[b]` is the number of cuts at or below `b`.
fn random_leaves(
    bins: usize,
    max_leaves: usize,
    rng: &mut NoiseRng,
    leaf_of_bin: &mut Vec<usize>,
) -> Result<(), LearnError> {
    let mut boundaries: Vec<usize> = (1..bins).collect();
    let cuts = (max_leaves.min(bins)).saturating_sub(1);
    let mut is_cut = vec![false; bins];
    for c in 0..cuts {
        let remaining = boundaries.len() - c;
        let pick = exact::uniform_below(rng, remaining as u128)? as usize;
        boundaries.swap(c, c + pick);
        is_cut[boundaries[c]] = true;
    }
    leaf_of_bin.clear();
    let mut leaf = 0;
    for cut in is_cut.iter().take(bins) {
        leaf += usize::from(*cut);
        leaf_of_bin.push(leaf);
    }
    Ok(())
}

/// The leaf sums of the residuals, with noise (the only access to the rows
/// in training). Each residual is clamped to [-1, 1] (classification:
/// `y - sigmoid(F)` already is; regression: `(y - F) / R` with `R` half the
/// label range), rounded to the
/// grid `1 / scale` and summed as an integer, so the sum is exact and each
/// row moves it by at most `scale`; then discrete Gaussian noise of the
/// plan's leaf variance is added to every leaf (sensitivity argument:
/// `EbmParams::plan`). Returned in grid units.
#[allow(clippy::too_many_arguments)]
pub(super) fn noisy_leaf_sums(
    codes: &[u16],
    leaf_of_bin: &[usize],
    leaves: usize,
    score: &mut [f64],
    pending: Option<(&[u16], &[f64])>,
    y: &[f64],
    task: Task,
    range: f64,
    plan: &EbmPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let scale = f64::from(plan.scale);
    // Per-bin sums first (a small table indexed by the row's bin), then per
    // leaf: the same integers in another order, so the sum is exact.
    let mut per_bin = vec![0i64; leaf_of_bin.len()];
    // Round half away from zero, as an integer conversion (no libm call).
    let to_grid = |r: f64| {
        let g = r * scale;
        (g + 0.5f64.copysign(g)) as i64
    };
    if let Some((previous, update)) = pending {
        for (f, &c) in score.iter_mut().zip(previous) {
            *f += update[usize::from(c)];
        }
    }
    match task {
        Task::Binary => {
            for ((&c, &f), &t) in codes.iter().zip(score.iter()).zip(y) {
                // In (-1, 1) already: |y - p| < 1 for y in {0, 1}.
                let r = (t - fast_sigmoid(f)).clamp(-1.0, 1.0);
                per_bin[usize::from(c)] += to_grid(r);
            }
        }
        Task::Regression { .. } => {
            let inverse = 1.0 / range;
            for ((&c, &f), &t) in codes.iter().zip(score.iter()).zip(y) {
                let r = ((t - f) * inverse).clamp(-1.0, 1.0);
                per_bin[usize::from(c)] += to_grid(r);
            }
        }
    }
    let mut sums = vec![0i64; leaves];
    for (b, &s) in per_bin.iter().enumerate() {
        sums[leaf_of_bin[b]] += s;
    }
    let (num, den) = plan.leaf_variance;
    sums.iter()
        .map(|&s| {
            let z = exact::discrete_gaussian(rng, num, den)?;
            Ok((i128::from(s) + z) as f64)
        })
        .collect()
}
