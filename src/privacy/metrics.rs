//! Differentially private releases of a model's quality on private rows:
//! what a DP evaluation (issue 11, "DP evaluation") and a private choice
//! among learners need. Everything here is pure epsilon-DP under
//! substitution neighbours (SPEC §2) with exact discrete Laplace noise on
//! integer statistics; the metrics are post-processing of the noisy
//! statistics.
//!
//! - **Classification** ([`NoisyScoreHistogram`]): the rows' predicted
//!   probabilities in [`SCORE_BINS`] equal-width bins, one histogram per
//!   label. Substituting one row moves one unit from one cell to another (or
//!   to the same one): L1 sensitivity 2. Discrete Laplace noise of scale
//!   `2 / epsilon` on every cell is epsilon-DP (the geometric mechanism,
//!   Ghosh, Roughgarden and Sundararajan 2009; CKS20 §2). Accuracy at the 0.5
//!   threshold (a bin edge) and ROC AUC (bins as tied scores) both follow.
//! - **Regression** ([`noisy_mean_squared_error`]): predictions and labels
//!   clamped to the public label range `[min, max]`, each squared error
//!   divided by `(max - min)^2` (so in `[0, 1]`), rounded to the grid
//!   `1 / MSE_GRID` and summed as an integer: one row changes the sum by at
//!   most `MSE_GRID`, so discrete Laplace noise of scale
//!   `MSE_GRID / epsilon` is epsilon-DP. The number of rows is public.
//!
//! - **Multiclass** ([`NoisyConfusion`]): the k x k confusion matrix, rows
//!   by actual class and columns by predicted class. Substituting one row
//!   takes one unit out of one cell and puts one unit into one cell (the
//!   same one when the new row has the old row's actual and predicted
//!   classes): L1 sensitivity 2, whatever k. Discrete Laplace noise of
//!   scale `2 / epsilon` on each of the k^2 cells is epsilon-DP. Accuracy
//!   (the noisy diagonal over the public n) and macro-averaged F1 (per
//!   class: true positives on the diagonal, predicted count the column sum,
//!   actual count the row sum) are post-processing of the released matrix,
//!   so the one charge covers all three. (Releasing the per-class count
//!   vectors instead, (true positives, predicted, actual) for every class,
//!   has L1 sensitivity 6: one row moves up to three counts out and three
//!   in; its per-class noise is 3x the matrix's per cell, but a class's
//!   predicted count sums k noisy cells of the matrix. The matrix is the
//!   simpler single release and carries the confusion matrix itself.)
//!
//! The clamp and the integer rounding are applied to the values as
//! computed, so the sensitivity holds whatever the floats did (a NaN
//! probability lands in bin 0; a NaN error counts as the largest).

use super::{NoiseRng, PrivacyError, exact};

/// Probability bins of the classification release: 0.5 is the edge between
/// bins `SCORE_BINS / 2 - 1` and `SCORE_BINS / 2`.
pub const SCORE_BINS: usize = 100;

/// The grid of a squared error in units of the squared label range.
pub const MSE_GRID: u64 = 1 << 16;

/// Denominator of the rational noise scales: a scale is rounded *up* to a
/// multiple of `2^-32`, so the noise is at least what the proof needs.
const SCALE_DEN: u128 = 1 << 32;

/// `k / epsilon` as a rational `num / SCALE_DEN`, rounded up: the discrete
/// Laplace scale for a query of L1 sensitivity `k` at `epsilon` (also used by
/// the private binning, `learn::binning`).
pub fn scale_for(sensitivity: f64, epsilon: f64) -> Result<(u128, u128), PrivacyError> {
    if !(epsilon > 0.0 && epsilon.is_finite()) {
        return Err(PrivacyError::InvalidParameter(format!(
            "epsilon (epsilon) must be a positive number, got {epsilon}"
        )));
    }
    let num = (sensitivity / epsilon * SCALE_DEN as f64).ceil();
    if !(num >= 1.0 && num < (1u128 << 63) as f64) {
        return Err(PrivacyError::InvalidParameter(format!(
            "epsilon (epsilon): {epsilon} gives a noise scale the exact sampler cannot draw"
        )));
    }
    Ok((num as u128, SCALE_DEN))
}

/// Whether `epsilon` gives noise scales the exact sampler can draw for both
/// releases: checked before an evaluation is charged.
pub fn check_epsilon(epsilon: f64) -> Result<(), PrivacyError> {
    scale_for(2.0, epsilon)?;
    scale_for(MSE_GRID as f64, epsilon)?;
    Ok(())
}

/// The bin of a probability: `floor(p * SCORE_BINS)` clamped to the bins
/// (NaN to bin 0).
pub fn score_bin(probability: f64) -> usize {
    let b = (probability * SCORE_BINS as f64).floor();
    if b >= 1.0 {
        (b as usize).min(SCORE_BINS - 1)
    } else {
        0
    }
}

/// The released histograms: noisy counts of the rows with each label in each
/// probability bin (may be negative; the metrics clamp them at 0).
#[derive(Debug, Clone, PartialEq)]
pub struct NoisyScoreHistogram {
    /// Rows labelled positive, per bin.
    pub positive: Vec<i128>,
    /// Rows labelled negative, per bin.
    pub negative: Vec<i128>,
    /// The number of rows (public).
    pub n_rows: usize,
}

/// The exact histograms, before noise (what the sensitivity argument is
/// about; exposed for the tests).
pub fn score_histogram(rows: impl IntoIterator<Item = (f64, bool)>) -> (Vec<i128>, Vec<i128>) {
    let mut positive = vec![0i128; SCORE_BINS];
    let mut negative = vec![0i128; SCORE_BINS];
    for (p, label) in rows {
        let b = score_bin(p);
        if label {
            positive[b] += 1;
        } else {
            negative[b] += 1;
        }
    }
    (positive, negative)
}

/// Release the score histograms of `rows` (predicted probability, true
/// label) with epsilon-DP: discrete Laplace noise of scale `2 / epsilon` on
/// every cell (L1 sensitivity 2, module docs).
pub fn noisy_score_histogram(
    rows: impl IntoIterator<Item = (f64, bool)>,
    epsilon: f64,
    rng: &mut NoiseRng,
) -> Result<NoisyScoreHistogram, PrivacyError> {
    let (num, den) = scale_for(2.0, epsilon)?;
    let (mut positive, mut negative) = score_histogram(rows);
    let n_rows = (positive.iter().sum::<i128>() + negative.iter().sum::<i128>()) as usize;
    for cell in positive.iter_mut().chain(negative.iter_mut()) {
        *cell += exact::additive_discrete_laplace(rng, num, den)?;
    }
    Ok(NoisyScoreHistogram {
        positive,
        negative,
        n_rows,
    })
}

impl NoisyScoreHistogram {
    /// Accuracy at the 0.5 threshold: the noisy count of correct rows (negatives
    /// below the middle bin edge, positives at or above it), clamped at 0, over
    /// the public number of rows, clamped to [0, 1].
    pub fn accuracy(&self) -> f64 {
        if self.n_rows == 0 {
            return 0.0;
        }
        let half = SCORE_BINS / 2;
        let correct: i128 = self.negative[..half]
            .iter()
            .map(|&c| c.max(0))
            .sum::<i128>()
            + self.positive[half..]
                .iter()
                .map(|&c| c.max(0))
                .sum::<i128>();
        (correct as f64 / self.n_rows as f64).clamp(0.0, 1.0)
    }

    /// ROC AUC of the clamped histograms, rows in one bin counted as ties
    /// (half a pair each); `None` when a class has no (noisy) rows.
    pub fn roc_auc(&self) -> Option<f64> {
        let pos: Vec<f64> = self.positive.iter().map(|&c| c.max(0) as f64).collect();
        let neg: Vec<f64> = self.negative.iter().map(|&c| c.max(0) as f64).collect();
        let (p, n) = (pos.iter().sum::<f64>(), neg.iter().sum::<f64>());
        if p <= 0.0 || n <= 0.0 {
            return None;
        }
        let mut below = 0.0;
        let mut pairs = 0.0;
        for (cp, cn) in pos.iter().zip(&neg) {
            pairs += cp * (below + cn / 2.0);
            below += cn;
        }
        Some(pairs / (p * n))
    }
}

/// The exact integer sum of the rows' squared errors on the grid (what the
/// sensitivity argument is about): each term `round(((clamp(pred) -
/// clamp(y)) / (max - min))^2 * MSE_GRID)`, an integer in `[0, MSE_GRID]`.
pub fn squared_error_sum(rows: impl IntoIterator<Item = (f64, f64)>, min: f64, max: f64) -> u128 {
    let range = max - min;
    rows.into_iter()
        .map(|(prediction, label)| {
            let e = (prediction.clamp(min, max) - label.clamp(min, max)) / range;
            let term = (e * e * MSE_GRID as f64).round();
            // NaN (from a NaN prediction or label) counts as the largest term.
            if term >= 0.0 {
                (term as u64).min(MSE_GRID) as u128
            } else if term.is_nan() {
                u128::from(MSE_GRID)
            } else {
                0
            }
        })
        .sum()
}

/// Release the mean squared error of `rows` (prediction, label) in label
/// units with epsilon-DP: the grid sum of [`squared_error_sum`] plus discrete
/// Laplace noise of scale `MSE_GRID / epsilon` (sensitivity `MSE_GRID`, module
/// docs), clamped at 0 and scaled back by `(max - min)^2 / (MSE_GRID n)`.
/// Take its square root for the RMSE.
pub fn noisy_mean_squared_error(
    rows: &[(f64, f64)],
    min: f64,
    max: f64,
    epsilon: f64,
    rng: &mut NoiseRng,
) -> Result<f64, PrivacyError> {
    if !(min.is_finite() && max.is_finite() && min < max) {
        return Err(PrivacyError::InvalidParameter(format!(
            "the label range [{min}, {max}] must be finite and non-empty"
        )));
    }
    let (num, den) = scale_for(MSE_GRID as f64, epsilon)?;
    if rows.is_empty() {
        return Ok(0.0);
    }
    let sum = squared_error_sum(rows.iter().copied(), min, max) as i128;
    let noisy = (sum + exact::additive_discrete_laplace(rng, num, den)?).max(0);
    let range = max - min;
    Ok(noisy as f64 / MSE_GRID as f64 / rows.len() as f64 * range * range)
}

/// The exact confusion matrix of `rows` (predicted class, actual class):
/// `counts[actual][predicted]` (what the sensitivity argument is about). A
/// row with a class index outside `0..k` is not counted (a multiclass model
/// predicts in range; skipping a row changes the counts by 1, within the
/// sensitivity).
pub fn confusion_counts(
    rows: impl IntoIterator<Item = (usize, usize)>,
    k: usize,
) -> Vec<Vec<i128>> {
    let mut counts = vec![vec![0i128; k]; k];
    for (predicted, actual) in rows {
        if predicted < k && actual < k {
            counts[actual][predicted] += 1;
        }
    }
    counts
}

/// A released confusion matrix: noisy counts (may be negative; the metrics
/// clamp them at 0), rows by actual class, columns by predicted class.
#[derive(Debug, Clone, PartialEq)]
pub struct NoisyConfusion {
    /// `counts[actual][predicted]`, noisy.
    pub counts: Vec<Vec<i128>>,
    /// The number of rows (public).
    pub n_rows: usize,
}

/// Release the confusion matrix of `rows` (predicted class, actual class)
/// over `k` classes with epsilon-DP: discrete Laplace noise of scale
/// `2 / epsilon` on every one of the k^2 cells (L1 sensitivity 2 under
/// substitution, module docs). The work is k^2 draws plus one pass over the
/// rows: a function of the public sizes only.
pub fn noisy_confusion(
    rows: impl IntoIterator<Item = (usize, usize)>,
    k: usize,
    n_rows: usize,
    epsilon: f64,
    rng: &mut NoiseRng,
) -> Result<NoisyConfusion, PrivacyError> {
    // Sensitivity 2: one substituted row moves one unit out of a cell and
    // one unit into a cell.
    let (num, den) = scale_for(2.0, epsilon)?;
    let mut counts = confusion_counts(rows, k);
    for cell in counts.iter_mut().flatten() {
        *cell += exact::additive_discrete_laplace(rng, num, den)?;
    }
    Ok(NoisyConfusion { counts, n_rows })
}

impl NoisyConfusion {
    /// The number of classes.
    pub fn k(&self) -> usize {
        self.counts.len()
    }

    fn clamped(&self, actual: usize, predicted: usize) -> f64 {
        self.counts[actual][predicted].max(0) as f64
    }

    /// Accuracy: the clamped diagonal's sum over the public number of rows,
    /// clamped to [0, 1].
    pub fn accuracy(&self) -> f64 {
        if self.n_rows == 0 {
            return 0.0;
        }
        let correct: f64 = (0..self.k()).map(|c| self.clamped(c, c)).sum();
        (correct / self.n_rows as f64).clamp(0.0, 1.0)
    }

    /// Macro-averaged F1 of the clamped counts, as
    /// [`crate::learn::metrics::macro_f1`] defines it on exact ones: per
    /// class `2 tp / (predicted + actual)`, averaged over the classes with
    /// `predicted + actual > 0`; `None` when no class has any.
    pub fn macro_f1(&self) -> Option<f64> {
        let k = self.k();
        let scores: Vec<f64> = (0..k)
            .filter_map(|c| {
                let tp = self.clamped(c, c);
                let predicted: f64 = (0..k).map(|a| self.clamped(a, c)).sum();
                let actual: f64 = (0..k).map(|p| self.clamped(c, p)).sum();
                (predicted + actual > 0.0).then(|| 2.0 * tp / (predicted + actual))
            })
            .collect();
        (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_by_hand() {
        // 2 / 0.5 = 4 exactly; 2 / 3 rounded up to a multiple of 2^-32.
        assert_eq!(scale_for(2.0, 0.5).unwrap(), (4 << 32, 1 << 32));
        let (num, den) = scale_for(2.0, 3.0).unwrap();
        assert_eq!(den, 1 << 32);
        assert_eq!(num, 2_863_311_531); // ceil(2^33 / 3)
        assert!(scale_for(2.0, 0.0).is_err());
        assert!(scale_for(2.0, f64::NAN).is_err());
        assert!(scale_for(2.0, 1e-300).is_err());
        assert!(check_epsilon(5e-324).is_err());
        assert!(check_epsilon(1e-3).is_ok());
    }

    #[test]
    fn bins_and_the_threshold() {
        assert_eq!(score_bin(0.0), 0);
        assert_eq!(score_bin(0.4999), SCORE_BINS / 2 - 1);
        assert_eq!(score_bin(0.5), SCORE_BINS / 2);
        assert_eq!(score_bin(1.0), SCORE_BINS - 1);
        assert_eq!(score_bin(f64::NAN), 0);
        assert_eq!(score_bin(-3.0), 0);
        assert_eq!(score_bin(7.0), SCORE_BINS - 1);
    }

    /// Substituting any one row (including NaN probabilities and labels
    /// flipping) changes the histograms by at most 2 in L1, and the squared
    /// error sum by at most `MSE_GRID`.
    #[test]
    fn sensitivity_under_substitution() {
        let rows: Vec<(f64, bool)> = (0..200)
            .map(|i| ((i as f64 * 0.37) % 1.0, i % 3 == 0))
            .collect();
        let (p0, n0) = score_histogram(rows.iter().copied());
        for replacement in [
            (0.2, true),
            (0.9, false),
            (f64::NAN, true),
            (f64::INFINITY, false),
        ] {
            for i in [0, 17, 199] {
                let mut other = rows.clone();
                other[i] = replacement;
                let (p1, n1) = score_histogram(other);
                let l1: i128 = p0.iter().zip(&p1).map(|(a, b)| (a - b).abs()).sum::<i128>()
                    + n0.iter().zip(&n1).map(|(a, b)| (a - b).abs()).sum::<i128>();
                assert!(l1 <= 2, "{l1}");
            }
        }
        let reg: Vec<(f64, f64)> = (0..100)
            .map(|i| (i as f64 * 0.3, 30.0 - i as f64 * 0.2))
            .collect();
        let s0 = squared_error_sum(reg.iter().copied(), 0.0, 30.0) as i128;
        for replacement in [(0.0, 30.0), (1e300, -1e300), (f64::NAN, 3.0), (5.0, 5.0)] {
            let mut other = reg.clone();
            other[42] = replacement;
            let s1 = squared_error_sum(other, 0.0, 30.0) as i128;
            assert!((s0 - s1).abs() <= MSE_GRID as i128, "{}", s0 - s1);
        }
    }

    /// With no noise to speak of (huge epsilon) the metrics are the exact
    /// ones: accuracy, and an AUC checked against the pairwise definition
    /// with ties (scores in one bin) counting half.
    #[test]
    fn metrics_from_the_histograms() {
        let rows = [
            (0.1, false),
            (0.3, true),
            (0.3, false),
            (0.7, true),
            (0.8, false),
            (0.95, true),
        ];
        let mut rng = NoiseRng::seeded(3);
        let h = noisy_score_histogram(rows, 1e6, &mut rng).unwrap();
        assert_eq!(h.n_rows, 6);
        // Correct: 0.1/neg, 0.3/neg, 0.7/pos, 0.95/pos.
        assert!((h.accuracy() - 4.0 / 6.0).abs() < 1e-12);
        // Pairs (pos, neg): 0.3 vs {0.1 win, 0.3 tie, 0.8 loss} = 1.5;
        // 0.7 vs {win, win, loss} = 2; 0.95 vs {win, win, win} = 3.
        assert!((h.roc_auc().unwrap() - 6.5 / 9.0).abs() < 1e-12);
        let mse = noisy_mean_squared_error(
            &[(1.0, 3.0), (10.0, 10.0), (40.0, 20.0)],
            0.0,
            30.0,
            1e6,
            &mut rng,
        )
        .unwrap();
        // Errors 2, 0, 10 (40 clamped to 30): mean square 104/3.
        assert!((mse - 104.0 / 3.0).abs() < 0.01, "{mse}");
    }

    /// The noise on a cell has the discrete Laplace variance for scale
    /// `2 / epsilon`, `2 e^{-1/b} / (1 - e^{-1/b})^2`: the sample variance of
    /// 20,000 cells (200 releases) is within 6% of it, which a scale off by a
    /// factor 2 (variance x4 or /4) cannot meet.
    #[test]
    fn histogram_noise_has_the_scale_of_the_proof() {
        let mut rng = NoiseRng::seeded(11);
        let epsilon = 0.5;
        let b = 2.0 / epsilon;
        let q = (-1.0f64 / b).exp();
        let expected = 2.0 * q / ((1.0 - q) * (1.0 - q));
        let mut sum_sq = 0.0;
        let mut count = 0.0;
        for _ in 0..100 {
            let h = noisy_score_histogram(std::iter::empty(), epsilon, &mut rng).unwrap();
            for &c in h.positive.iter().chain(&h.negative) {
                sum_sq += (c * c) as f64;
                count += 1.0;
            }
        }
        let variance = sum_sq / count;
        assert!(
            (variance / expected - 1.0).abs() < 0.06,
            "{variance} vs {expected}"
        );
    }

    /// The MSE release's noise, in grid units, has scale `MSE_GRID /
    /// epsilon`: its mean absolute value (`~ b` for a large scale) is within
    /// 6% over 8,000 releases.
    #[test]
    fn mse_noise_has_the_scale_of_the_proof() {
        let mut rng = NoiseRng::seeded(12);
        let epsilon = 2.0;
        let rows = [(15.0, 15.0); 10];
        let b = MSE_GRID as f64 / epsilon;
        // Clamping at 0 keeps the positive half: E[max(X, 0)] = b / 2 for a
        // large-scale Laplace, in grid units.
        let mut total = 0.0;
        let draws = 8000;
        for _ in 0..draws {
            let mse = noisy_mean_squared_error(&rows, 0.0, 30.0, epsilon, &mut rng).unwrap();
            total += mse / (30.0 * 30.0) * MSE_GRID as f64 * rows.len() as f64;
        }
        let mean = total / draws as f64;
        assert!(
            (mean / (b / 2.0) - 1.0).abs() < 0.06,
            "{mean} vs {}",
            b / 2.0
        );
    }

    /// Substituting any one row of a 4-class table (any actual and
    /// predicted class, in or out of range) changes the confusion matrix by
    /// at most 2 in L1.
    #[test]
    fn confusion_sensitivity_under_substitution() {
        let k = 4;
        let rows: Vec<(usize, usize)> = (0..120).map(|i| (i % k, (i / 3) % k)).collect();
        let before = confusion_counts(rows.iter().copied(), k);
        for i in [0, 5, 119] {
            for p in 0..=k {
                for a in 0..=k {
                    let mut other = rows.clone();
                    other[i] = (p, a);
                    let after = confusion_counts(other, k);
                    let l1: i128 = before
                        .iter()
                        .flatten()
                        .zip(after.iter().flatten())
                        .map(|(x, y)| (x - y).abs())
                        .sum();
                    assert!(l1 <= 2, "row {i} -> ({p}, {a}): {l1}");
                }
            }
        }
    }

    /// Accuracy and macro-F1 from a confusion matrix by hand (huge epsilon:
    /// no noise to speak of). Rows (predicted, actual) over 3 classes:
    /// actual 0: predicted 0, 0, 1; actual 1: predicted 1, 2; actual 2:
    /// predicted 2. Correct 4 of 6. Class 0: tp 2, predicted 2, actual 3:
    /// F1 4/5. Class 1: tp 1, predicted 2, actual 2: 1/2. Class 2: tp 1,
    /// predicted 2, actual 1: 2/3. Macro-F1 (4/5 + 1/2 + 2/3) / 3.
    #[test]
    fn confusion_metrics_by_hand() {
        let rows = [(0, 0), (0, 0), (1, 0), (1, 1), (2, 1), (2, 2)];
        let m = noisy_confusion(rows, 3, 6, 1e6, &mut NoiseRng::seeded(4)).unwrap();
        assert_eq!(m.counts, vec![vec![2, 1, 0], vec![0, 1, 1], vec![0, 0, 1]]);
        assert!((m.accuracy() - 4.0 / 6.0).abs() < 1e-12);
        let want = (4.0 / 5.0 + 0.5 + 2.0 / 3.0) / 3.0;
        assert!((m.macro_f1().unwrap() - want).abs() < 1e-12);
        // Exactly what the exact macro-F1 gives on the same rows.
        let predicted: Vec<usize> = rows.iter().map(|r| r.0).collect();
        let actual: Vec<u16> = rows.iter().map(|r| r.1 as u16).collect();
        assert!((crate::learn::metrics::macro_f1(&predicted, &actual, 3) - want).abs() < 1e-12);
        // Negative noisy cells count as 0; a class with nothing is left out.
        let m = NoisyConfusion {
            counts: vec![vec![3, -2, 0], vec![-1, 1, 0], vec![0, 0, -4]],
            n_rows: 4,
        };
        assert!((m.accuracy() - 1.0).abs() < 1e-12);
        assert!((m.macro_f1().unwrap() - 1.0).abs() < 1e-12);
        let empty = NoisyConfusion {
            counts: vec![vec![0, -1], vec![-3, 0]],
            n_rows: 0,
        };
        assert_eq!(empty.accuracy(), 0.0);
        assert_eq!(empty.macro_f1(), None);
    }

    /// The noise on a confusion cell has the discrete Laplace variance for
    /// scale `2 / epsilon`: the sample variance over 200 releases of a
    /// 10-class matrix with no rows (20,000 cells) is within 6% of
    /// `2 e^{-1/b} / (1 - e^{-1/b})^2`, which a scale off by a factor 2
    /// (variance x4 or /4), or the L1-1 scale `1 / epsilon`, cannot meet.
    #[test]
    fn confusion_noise_has_the_scale_of_the_proof() {
        let mut rng = NoiseRng::seeded(13);
        let epsilon = 0.8;
        let b = 2.0 / epsilon;
        let q = (-1.0f64 / b).exp();
        let expected = 2.0 * q / ((1.0 - q) * (1.0 - q));
        let mut sum_sq = 0.0;
        let mut count = 0.0;
        for _ in 0..200 {
            let m = noisy_confusion(std::iter::empty(), 10, 0, epsilon, &mut rng).unwrap();
            for &c in m.counts.iter().flatten() {
                sum_sq += (c * c) as f64;
                count += 1.0;
            }
        }
        let variance = sum_sq / count;
        assert!(
            (variance / expected - 1.0).abs() < 0.06,
            "{variance} vs {expected}"
        );
    }
}
