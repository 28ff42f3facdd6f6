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
use super::kernel::{self, Bin, Cuts, MAX_CUTS, Residual, Update};
use super::model::{EbmModel, ShapeFunction, sigmoid};
use super::params::{CALIBRATION_PENALTY, CALIBRATION_WINDOW, CalibrationPlan, EbmPlan, Noise};
use crate::data::{Dataset, Encoder, Task};
use crate::learn::{LearnError, threshold};
use crate::privacy::{NoiseRng, exact, laplace};

/// The labels as numbers: 0/1 for a classifier, the clamped value for a
/// regressor.
fn targets(data: &Dataset, task: Task) -> Result<Vec<f32>, LearnError> {
    match task {
        Task::Binary => {
            let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
            Ok((0..data.n_rows())
                .map(|i| f32::from(u8::from(labels.get(i))))
                .collect())
        }
        Task::Regression { min, max } => {
            let values = data.targets.as_ref().ok_or(LearnError::NoLabels)?;
            Ok(values.iter().map(|v| v.clamp(min, max) as f32).collect())
        }
        // Multiclass: `multiclass::fit_classes` reads the class indices.
        Task::Multiclass { .. } => Err(LearnError::InvalidParameter(
            "a multiclass label has no 0/1 or numeric target".into(),
        )),
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
    let n = crate::learn::planned_rows(data, plan.n_rows)?;
    let layouts = bins::layout(encoder);
    if layouts.len() != plan.n_features {
        return Err(LearnError::InvalidParameter(
            "the schema does not have the planned number of features".into(),
        ));
    }
    if let Task::Multiclass { k } = task {
        let y = data.classes.as_ref().ok_or(LearnError::NoLabels)?;
        if y.len() != n || plan.task != task {
            return Err(LearnError::InvalidParameter(
                "the data does not have the planned rows or classes".into(),
            ));
        }
        let (merged, codes) = private_bins(data, &layouts, plan, rng)?;
        return super::multiclass::fit_classes(y, k, layouts, merged, codes, plan, rng, on_epoch);
    }
    let y = targets(data, task)?;
    let p = plan.params;

    // Phase 1: private binning (rho_binning).
    let (merged, codes) = private_bins(data, &layouts, plan, rng)?;

    // Phase 2: the intercept (rho_intercept / epsilon_intercept): one noisy
    // sum over all rows, from which boosting starts. A classifier sums
    // `y - 1/2` (its residual at score 0), a regressor `(y - mid) / half`
    // (its residual at the midpoint of the public label range, in units of
    // the half-range, so never clamped).
    let (centre, half) = match task {
        Task::Binary | Task::Multiclass { .. } => (0.0, 0.5),
        Task::Regression { min, max } => ((min + max) / 2.0, (max - min) / 2.0),
    };
    let first = match task {
        Task::Binary | Task::Multiclass { .. } => Residual::Logistic,
        Task::Regression { .. } => Residual::Scaled {
            inverse: (1.0 / half) as f32,
        },
    };
    let mut state = vec![first.state_of(centre); n];
    let no_update = Update {
        codes: &codes[0],
        cuts: Cuts::new(&[]),
        values: [0.0; MAX_CUTS + 1],
    };
    let sum = noisy_leaf_sums(
        &mut state,
        &y,
        first,
        &codes[0],
        Cuts::new(&[]),
        &no_update,
        plan.scale,
        &plan.intercept_noise,
        rng,
    )?[0];
    drop(state);
    let start = start_from(task, sum / f64::from(plan.scale), plan);

    // Phase 3: cyclic boosting of one-feature functions (rho_training).
    // Residuals are divided by `range` and clamped to [-1, 1]. A regressor's
    // `range` is the residual clip: the noise in label units is
    // proportional to it, and the clip biases only rows whose label is
    // further than it from their current prediction (a Huber-like fit), so
    // a clip below half the range trades a little bias for much less noise
    // (docs/accuracy.md, Abalone).
    let range = match task {
        Task::Binary | Task::Multiclass { .. } => 1.0,
        Task::Regression { min, max } => p
            .residual_clip
            .unwrap_or_else(|| super::default_residual_clip(min, max)),
    };
    // A leaf's step is `learning_rate x step x` its mean residual. A
    // regressor's mean residual (times the clip) is already a Newton step
    // for the squared loss (`step = range`). A classifier's mean `y - p` is
    // a gradient, which a Newton step divides by the curvature `p (1 - p)`:
    // dividing by the curvature at the released intercept (public: post-
    // processing of it, kept at least that of p = 0.05) makes the learning
    // rate a fraction of a Newton step for any base rate, where a plain
    // gradient step needs a learning rate 4 to 20 times larger, depending
    // on the base rate, to move as far.
    let step = match task {
        Task::Binary | Task::Multiclass { .. } => {
            let p0 = sigmoid(start).clamp(0.05, 0.95);
            1.0 / (p0 * (1.0 - p0))
        }
        Task::Regression { .. } => range,
    };
    let residual = match task {
        Task::Binary | Task::Multiclass { .. } => Residual::Logistic,
        Task::Regression { .. } => Residual::Scaled {
            inverse: (1.0 / range) as f32,
        },
    };
    let scale = f64::from(plan.scale);
    // Each row's score as the kernel caches it (`Residual::state_of`: `f32`
    // lanes, `e^-F` for a classifier): a cache of the sum of the shape
    // values, which are kept in f64.
    let mut score = vec![residual.state_of(start); n];
    let mut values: Vec<Vec<f64>> = merged.iter().map(|m| vec![0.0; m.len()]).collect();
    // The last iteration's update (feature, leaves, value per leaf): applied
    // to the scores in the next iteration's pass (one pass over the rows per
    // iteration instead of two).
    let mut last: (usize, Cuts, [f32; MAX_CUTS + 1]) = (0, Cuts::new(&[]), [0.0; MAX_CUTS + 1]);
    for epoch in 0..p.epochs {
        // One epoch runs on rayon's pool, so that the kernel's splits of a
        // pass are joins between pool threads rather than a hand-off from
        // this thread to the pool for every pass (which measured 16% of the
        // time); progress is reported from this thread between epochs.
        rayon::scope(|_| -> Result<(), LearnError> {
            for (k, m) in merged.iter().enumerate() {
                let (cuts, leaf_of_bin) = random_leaves(m.len(), p.max_leaves as usize, rng)?;
                let update = Update {
                    codes: &codes[last.0],
                    cuts: last.1,
                    values: last.2,
                };
                let sums = noisy_leaf_sums(
                    &mut score,
                    &y,
                    residual,
                    &codes[k],
                    cuts,
                    &update,
                    plan.scale,
                    &plan.leaf_noise,
                    rng,
                )?;
                let mut denominators = vec![0.0; sums.len()];
                for (b, &c) in m.counts.iter().enumerate() {
                    denominators[leaf_of_bin[b]] += c;
                }
                // Post-processing of the noisy sums and the public counts.
                let mut per_leaf = [0.0f32; MAX_CUTS + 1];
                for (l, (&s, &d)) in sums.iter().zip(&denominators).enumerate() {
                    per_leaf[l] = (p.learning_rate * step * s / scale / d.max(1.0)) as f32;
                }
                for (v, &l) in values[k].iter_mut().zip(&leaf_of_bin) {
                    *v += f64::from(per_leaf[l]);
                }
                last = (k, cuts, per_leaf);
            }
            Ok(())
        })?;
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
    let mut model = EbmModel {
        intercept,
        class_intercepts: Vec::new(),
        shapes,
    };

    // Phase 4 (a classifier): calibrate the threshold (epsilon_c). The
    // positive count the intercept released, `T = n sigmoid(start)`, is the
    // target; a report-noisy-max picks the public threshold that classifies
    // the most training rows correctly among those that predict positive
    // for about `T` rows (`threshold_scores`), and the intercept moves by
    // it, so that a probability of 1/2 falls there.
    if let (Some(c), Task::Binary) = (plan.calibration, task) {
        let target = (n as f64 * sigmoid(start)).round();
        let grid = threshold_grid(&model, c.candidates);
        let scores = row_scores(&model, &codes);
        let t = choose_threshold(&scores, &y, &grid, target, &c, rng)?;
        model.intercept -= t;
    }
    Ok(model)
}

/// Phase 1: each feature's private binning (rho_binning / epsilon_binning):
/// noisy base-bin counts merged into bins of about `n / max_bins` rows;
/// returns the merged bins and every row's merged bin per feature.
pub(super) fn private_bins(
    data: &Dataset,
    layouts: &[FeatureLayout],
    plan: &EbmPlan,
    rng: &mut NoiseRng,
) -> Result<(Vec<MergedBins>, Vec<Vec<Bin>>), LearnError> {
    let target = data.n_rows() as f64 / f64::from(plan.params.max_bins);
    let mut merged: Vec<MergedBins> = Vec::with_capacity(layouts.len());
    let mut codes: Vec<Vec<Bin>> = Vec::with_capacity(layouts.len());
    for f in layouts {
        let base = bins::codes(data, f);
        let noisy = bins::noisy_counts(&base, f.base.len(), plan, rng)?;
        let m = bins::merge(&noisy, f.ordered, target);
        codes.push(
            base.iter()
                .map(|&c| Bin::from(m.bin_of_base[usize::from(c)]))
                .collect(),
        );
        merged.push(m);
    }
    Ok((merged, codes))
}

/// The candidate thresholds of the calibration: `count` points evenly
/// spaced over `mu +- W`, where `mu` is the model's intercept (every
/// centred shape has mean 0 over its public counts) and `W` three times the
/// root of the sum of the shapes' variances over their public counts (the
/// score's standard deviation if the features were independent), at least
/// `10^-3`. A function of the released model only (post-processing), so
/// public.
///
/// Why not the sum of the standard deviations (the bound whatever the
/// features' correlation, used until stop 40): with K shapes it is up to
/// `sqrt(K)` times wider, so most candidates sat in the tails, where every
/// row is on one side and the scores are all equal. At a large Laplace
/// scale (few rows, small epsilon) the report-noisy-max then picked one of
/// those many equal candidates, mostly on the side whose window penalty is
/// smaller: ionosphere (280 training rows, 34 features) predicted 86%
/// positive against 64% at epsilon 1, delta 1e-6. Measured on the suite's 9 binary
/// sets, 12 repeats: mean |predicted - true positive rate| at epsilon >= 1
/// 0.021 -> 0.016, accuracy unchanged within the noise (docs/accuracy.md,
/// "DP-EBM's calibration grid"). With strongly correlated shapes the
/// scores spread wider than `W`, and a target rate in their tails is then
/// out of the grid's reach (the nearest end is chosen).
pub(super) fn threshold_grid(model: &EbmModel, count: usize) -> Vec<f64> {
    let variance: f64 = model
        .shapes
        .iter()
        .map(|s| {
            let total: f64 = s.counts.iter().sum();
            if total > 0.0 {
                s.values
                    .iter()
                    .zip(&s.counts)
                    .map(|(v, c)| v * v * c)
                    .sum::<f64>()
                    / total
            } else {
                0.0
            }
        })
        .sum();
    let w = (3.0 * variance.sqrt()).max(1e-3);
    let count = count.max(2);
    let lo = model.intercept - w;
    let step = 2.0 * w / (count - 1) as f64;
    (0..count).map(|j| lo + step * j as f64).collect()
}

/// Each training row's score under `model` (its merged-bin codes per
/// feature): `K` lookups per row, whatever the values.
fn row_scores(model: &EbmModel, codes: &[Vec<Bin>]) -> Vec<f64> {
    let n = codes.first().map_or(0, Vec::len);
    let mut scores = vec![model.intercept; n];
    for (shape, codes) in model.shapes.iter().zip(codes) {
        for (s, &c) in scores.iter_mut().zip(codes) {
            *s += shape.values[c as usize];
        }
    }
    scores
}

/// `c_j`: the number of `scores` above each `grid[j]`
/// (`threshold::counts_by_label` without labels). Tests only: the fit
/// counts by label in one pass.
#[cfg(test)]
pub(super) fn threshold_counts(scores: &[f64], grid: &[f64]) -> Vec<u64> {
    threshold::counts_by_label(scores, |_| false, grid).0
}

/// The calibration's scores: for each threshold `t_j`, the number of rows
/// it classifies correctly (`a_j` positives above it plus the negatives at
/// or below it, `n - c_j - (P - a_j)`, `P` the positive count), minus
/// [`CALIBRATION_PENALTY`] times the number of rows by which `c_j` falls
/// outside the window `target +- CALIBRATION_WINDOW n`: the most accurate
/// threshold among those whose predicted-positive count is near the
/// released positive count. Substitution moves the correct count by at
/// most 1 (one row's term is 0 or 1) and `c_j` by at most 1, so each score
/// by at most `1 + CALIBRATION_PENALTY` (`EbmParams::plan`); every value is
/// an integer below 2^53, computed exactly.
pub(super) fn threshold_scores(scores: &[f64], y: &[f32], grid: &[f64], target: f64) -> Vec<f64> {
    let n = scores.len();
    let (above, positive_above) = threshold::counts_by_label(scores, |i| y[i] > 0.5, grid);
    let positives = y.iter().filter(|&&v| v > 0.5).count() as u64;
    let correct = threshold::correct_counts(&above, &positive_above, positives, n as u64);
    let window = (CALIBRATION_WINDOW * n as f64).round();
    above
        .iter()
        .zip(correct)
        .map(|(&c, correct)| {
            let outside = ((c as f64 - target).abs() - window).max(0.0);
            correct - CALIBRATION_PENALTY * outside
        })
        .collect()
}

/// The calibration's release: report-noisy-max over the grid with the
/// scores of [`threshold_scores`] (sensitivity `1 + CALIBRATION_PENALTY`)
/// at the plan's Laplace scale. Returns the chosen threshold.
pub(super) fn choose_threshold(
    scores: &[f64],
    y: &[f32],
    grid: &[f64],
    target: f64,
    plan: &CalibrationPlan,
    rng: &mut NoiseRng,
) -> Result<f64, LearnError> {
    let utility = threshold_scores(scores, y, grid, target);
    let j = laplace::report_noisy_max(rng, &utility, plan.scale)?;
    Ok(grid[j])
}

pub(super) fn shape(f: FeatureLayout, m: MergedBins, values: Vec<f64>) -> ShapeFunction {
    ShapeFunction {
        feature: f.name,
        base: f.base,
        ordered: f.ordered,
        bin_of_base: m.bin_of_base,
        counts: m.counts,
        values,
        class_values: Vec::new(),
    }
}

/// Leaves of one iteration: `min(max_leaves, bins) - 1` distinct cut points
/// drawn uniformly (exactly, from the CSPRNG) among the `bins - 1`
/// boundaries; a cut at boundary `c` starts a new leaf at bin `c`, so
/// `leaf_of_bin[b]` is the number of cuts at or below `b`.
pub(super) fn random_leaves(
    bins: usize,
    max_leaves: usize,
    rng: &mut NoiseRng,
) -> Result<(Cuts, Vec<usize>), LearnError> {
    let mut boundaries: Vec<usize> = (1..bins).collect();
    let cuts = (max_leaves.min(bins)).saturating_sub(1);
    for c in 0..cuts {
        let remaining = boundaries.len() - c;
        let pick = exact::uniform_below(rng, remaining as u128)? as usize;
        boundaries.swap(c, c + pick);
    }
    let points: Vec<Bin> = boundaries[..cuts].iter().map(|&b| b as Bin).collect();
    let cuts = Cuts::new(&points);
    let leaf_of_bin = (0..bins).map(|b| cuts.leaf(b as Bin)).collect();
    Ok((cuts, leaf_of_bin))
}

/// The start of boosting from the intercept's noisy sum `sum` (residual
/// units; post-processing of it and of public facts).
///
/// The noisy mean `m = sum / n` of the terms (`y - 1/2` for a classifier,
/// `(y - mid) / half` for a regressor) is shrunk towards 0 by the public
/// factor `v / (v + s^2)`, with `s^2` the noise's variance on `m` and `v` the
/// variance of a uniform mean over the terms' range (1/12 on [-1/2, 1/2],
/// 1/3 on [-1, 1]): the posterior mean under that prior in a Gaussian
/// approximation, so that a noise larger than the signal (tiny `n epsilon`)
/// cannot throw the start far off. Then a classifier starts at the
/// log-odds of `1/2 + m`, its probability kept in `[1/(2n), 1 - 1/(2n)]`,
/// a regressor at `mid + half m`, `m` kept in [-1, 1].
pub(super) fn start_from(task: Task, sum: f64, plan: &EbmPlan) -> f64 {
    let n = plan.n_rows as f64;
    let noise = (plan.sigma_intercept / n).powi(2);
    let (prior, bound) = match task {
        Task::Binary | Task::Multiclass { .. } => (1.0 / 12.0, 0.5 - 0.5 / n),
        Task::Regression { .. } => (1.0 / 3.0, 1.0),
    };
    let m = (sum / n * prior / (prior + noise)).clamp(-bound, bound);
    match task {
        Task::Binary | Task::Multiclass { .. } => {
            let p = 0.5 + m;
            (p / (1.0 - p)).ln()
        }
        Task::Regression { min, max } => (min + max) / 2.0 + (max - min) / 2.0 * m,
    }
}

/// The leaf sums of the residuals, with noise (the only access to the rows
/// in training). Each residual is clamped to [-1, 1] (classification:
/// `y - sigmoid(F)` already is; regression: `(y - F) / R` with `R` the
/// residual clip), rounded to the grid `1 / scale` and summed as an integer
/// (`kernel::leaf_sums`, after applying the previous iteration's `update`
/// to the scores), so the sum is exact and each row moves one leaf's sum by
/// at most `scale`; then `noise` (the plan's, discrete Gaussian or discrete
/// Laplace) is added to every leaf (sensitivity argument:
/// `EbmParams::plan`). Returned in grid units, one per leaf of `cuts`.
#[allow(clippy::too_many_arguments)]
pub(super) fn noisy_leaf_sums(
    score: &mut [f32],
    y: &[f32],
    residual: Residual,
    codes: &[Bin],
    cuts: Cuts,
    update: &Update,
    scale: u32,
    noise: &Noise,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let sums = kernel::leaf_sums(score, y, residual, scale, codes, cuts, update);
    sums[..=cuts.len()]
        .iter()
        .map(|&s| Ok((i128::from(s) + noise.draw(rng)?) as f64))
        .collect()
}
