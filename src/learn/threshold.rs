//! A binary classifier's decision threshold, chosen privately after
//! training (issue 25): the parts every learner's threshold release shares.
//!
//! A learner releases its model first; each training row's score under that
//! released model is then a function of that row alone (post-processing of
//! the model), so any count over rows of a property of its score moves by at
//! most 1 when one row is substituted. A report-noisy-max over public
//! candidate thresholds, scored by such counts, picks the threshold.
//!
//! - [`counts_by_label`] (real scores on an even grid) and
//!   [`counts_from_buckets`] (rows already bucketed, e.g. integer vote
//!   sums): the number of rows (and of positive rows) above each
//!   candidate, in one pass whose work depends on n and the number of
//!   candidates only.
//! - [`correct_counts`]: the rows each candidate classifies correctly.
//! - [`rnm_scale`]: the Laplace scale of a report-noisy-max over integer
//!   scores of a given sensitivity, with the floating-point margin.
//! - [`default_share`]: a threshold's default share of a fit's budget, from
//!   n, epsilon and the learner's constant.
//! - A decision threshold on a logit (dp-linear, DPBoost): [`split_pure`] or
//!   [`split_zcdp`] of the budget into the fit's and the threshold's (a pure
//!   learner cannot get a zCDP split by passing a delta; [`ThresholdPlan`],
//!   checked by [`check_fit_rho`]), the candidates [`grid_around`] the
//!   released model's scores, [`logit_scores`] and the release
//!   [`choose_logit`]; the model statements' texts
//!   ([`ThresholdPlan::statement_texts`]).
//!
//! DP-EBM (`ebm::fit`) adds a window around the released positive count to
//! its scores; LazyBB (`lazybb::vote_threshold`) and the logit thresholds
//! score accuracy alone.

use serde::{Deserialize, Serialize};

use super::LearnError;
use crate::privacy::grid::GRID_EPSILON;
use crate::privacy::{Budget, PrivacyCost, zcdp};

/// `(c_j, a_j)` for every `grid[j]` (`grid` increasing and evenly spaced):
/// `c_j` the number of `scores` above `grid[j]` (a score on a grid point is
/// not above it), `a_j` the number of those rows that are `positive`. Each
/// score is placed with one division (no search, no data-dependent branch):
/// its bucket is the number of grid points below it, then
/// [`counts_from_buckets`].
pub fn counts_by_label(
    scores: &[f64],
    positive: impl Fn(usize) -> bool,
    grid: &[f64],
) -> (Vec<u64>, Vec<u64>) {
    let g = grid.len();
    if g == 0 {
        return (Vec::new(), Vec::new());
    }
    let lo = grid[0];
    let step = if g > 1 {
        (grid[g - 1] - grid[0]) / (g - 1) as f64
    } else {
        1.0
    };
    // NaN (impossible: a released model is finite) lands in bucket 0.
    let buckets = scores.iter().enumerate().map(|(i, &s)| {
        let b = ((s - lo) / step).ceil().clamp(0.0, g as f64) as usize;
        (b, positive(i))
    });
    counts_from_buckets(g, buckets)
}

/// `(c_j, a_j)` for `g` candidates from each row's bucket (the number of
/// candidates below its score, in `0..=g`) and label: a histogram, then
/// suffix sums. Each row adds 1 to the counts of the candidates below its
/// score and 0 to the others: a function of its own score and label only,
/// with the same work for every row.
pub fn counts_from_buckets(
    g: usize,
    rows: impl Iterator<Item = (usize, bool)>,
) -> (Vec<u64>, Vec<u64>) {
    let mut all = vec![0u64; g + 1];
    let mut positives = vec![0u64; g + 1];
    for (b, positive) in rows {
        all[b] += 1;
        positives[b] += u64::from(positive);
    }
    // c_j = number of rows whose bucket exceeds j.
    let suffix = |buckets: &[u64]| {
        let mut counts = vec![0u64; g];
        let mut above = 0u64;
        for j in (0..g).rev() {
            above += buckets[j + 1];
            counts[j] = above;
        }
        counts
    };
    (suffix(&all), suffix(&positives))
}

/// The rows each candidate classifies correctly, from the `(above,
/// positive_above)` of [`counts_by_label`] or [`counts_from_buckets`] and
/// the positive count `p` of `n` rows: the
/// `a_j` positives above it plus the negatives at or below it, `n - c_j -
/// (p - a_j)`. Substituting one row moves each by at most 1 (its own term
/// is 0 or 1); every value is an integer below 2^53, computed exactly.
pub fn correct_counts(above: &[u64], positive_above: &[u64], p: u64, n: u64) -> Vec<f64> {
    above
        .iter()
        .zip(positive_above)
        .map(|(&c, &a)| (n - c - (p - a) + a) as f64)
        .collect()
}

/// The Laplace scale of a report-noisy-max over integer scores of
/// magnitude at most `3 n` and `sensitivity` under substitution, spending
/// at most `epsilon`: as divided by the scale in floating point a score
/// moves by at most `L = (sensitivity + n 2^-49) / scale` (each quotient's
/// rounding error is at most `3n / scale 2^-53`), and report-noisy-max is
/// `2 (L + 2^-30)`-DP (`privacy::laplace`). So `scale = 2 (sensitivity + n
/// 2^-49) / (epsilon - 2 GRID_EPSILON)`. `None` when `epsilon` is too small
/// for the grid or the scale is not a usable positive finite number.
pub fn rnm_scale(epsilon: f64, sensitivity: f64, n_rows: usize) -> Option<f64> {
    if !(epsilon.is_finite() && epsilon > 1e3 * GRID_EPSILON) {
        return None;
    }
    let delta = sensitivity + n_rows as f64 * 2f64.powi(-49);
    let scale = 2.0 * delta / (epsilon - 2.0 * GRID_EPSILON);
    (scale.is_finite() && scale > 0.0 && scale < 1e12).then_some(scale)
}

/// The shares of a fit's epsilon a default threshold release may take,
/// increasing ([`default_share`]).
pub const DEFAULT_SHARES: [f64; 4] = [0.025, 0.05, 0.1, 0.2];

/// A default share of a fit's budget for its threshold release: the largest
/// of [`DEFAULT_SHARES`] at most `k_rows / (n epsilon)`, and the smallest
/// when none is. The threshold's noise in rows is about `2 / (share
/// epsilon)`, so the rule keeps it near `n / (k_rows / 2)` rows where that
/// costs at most a fifth of the budget: small jobs, whose fits are mostly
/// noise, give the threshold a fifth; large ones 2.5%. Public: `n`, epsilon
/// and the learner's constant `k_rows` (each learner's is chosen
/// leave-one-dataset-out on the suite).
pub fn default_share(n_rows: usize, epsilon: f64, k_rows: f64) -> f64 {
    let bound = k_rows / (n_rows.max(1) as f64 * epsilon);
    DEFAULT_SHARES
        .iter()
        .copied()
        .filter(|&s| s <= bound)
        .fold(DEFAULT_SHARES[0], f64::max)
}

// ------------------------------------------------------------------
// A decision threshold released after a fit (dp-linear, DPBoost): the
// budget split and its plan, shared so that every learner composes it the
// same way (docs/privacy.md, "dp-linear's decision threshold").
// ------------------------------------------------------------------

/// The sensitivity of a decision threshold's candidate scores (counts of
/// correctly classified rows) under substitution.
const SENSITIVITY: f64 = 1.0;

/// The number of candidate thresholds of a learner's decision threshold
/// (dp-linear's, DPBoost's: a grid over the released model's scores).
pub const CANDIDATES: usize = 257;

/// The largest share a request may give (`threshold_share`): the fit keeps
/// at least half of the budget.
pub const MAX_THRESHOLD_SHARE: f64 = 0.5;

/// The public facts of the threshold's release.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdPlan {
    /// The report-noisy-max's pure epsilon.
    pub epsilon: f64,
    /// Its rho in a zCDP run (`epsilon^2 / 2` at most); none when pure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// Its Laplace scale, in rows.
    pub scale: f64,
    /// The number of candidate thresholds of a learner's decision threshold
    /// (dp-linear's, DPBoost's: a grid over the released model's scores).
    pub candidates: usize,
    /// The whole run's budget (the fit's and this release's together).
    pub run_budget: Budget,
    /// The whole run's rho (zCDP runs): what is charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_rho: Option<f64>,
}

impl ThresholdPlan {
    /// The charge of the whole run (fit and threshold).
    pub fn cost(&self) -> PrivacyCost {
        match self.run_rho {
            None => PrivacyCost::Pure {
                epsilon: self.run_budget.epsilon(),
            },
            Some(rho) => PrivacyCost::Zcdp {
                rho,
                epsilon: self.run_budget.epsilon(),
                delta: self.run_budget.delta(),
            },
        }
    }
}

/// The split of a pure `epsilon` between the fit and a threshold at `share`
/// of it (basic composition): the fit's budget (no delta) and the
/// threshold's plan (`linear::threshold`'s docs, "Accounting"). A pure
/// learner (DPBoost, dp-linear at delta 0) calls this one whatever delta the
/// job offers, so that its fit and the charge stay pure.
pub fn split_pure(
    epsilon: f64,
    share: f64,
    n_rows: usize,
) -> Result<(Budget, ThresholdPlan), LearnError> {
    let budget = Budget::new(epsilon, 0.0)?;
    let epsilon_t = share * epsilon;
    let scale = rnm_scale(epsilon_t, SENSITIVITY, n_rows).ok_or_else(|| too_small(epsilon))?;
    // The fit gets the rest, rounded down (one step below the nearest
    // double) so that the two never sum to more than epsilon.
    let fit = Budget::new((epsilon - epsilon_t).next_down(), 0.0)?;
    Ok((
        fit,
        ThresholdPlan {
            epsilon: epsilon_t,
            rho: None,
            scale,
            candidates: CANDIDATES,
            run_budget: budget,
            run_rho: None,
        },
    ))
}

/// The split of a zCDP run's `budget` (delta > 0) between the fit and a
/// threshold at `share` of its rho: the fit's budget and the threshold's
/// plan (`linear::threshold`'s docs, "Accounting"). The caller checks, once
/// the fit is planned, that its rho leaves room ([`check_fit_rho`]).
pub fn split_zcdp(
    budget: Budget,
    share: f64,
    n_rows: usize,
) -> Result<(Budget, ThresholdPlan), LearnError> {
    if budget.delta() == 0.0 {
        return Err(LearnError::InvalidParameter(
            "a zCDP split of the decision threshold needs a delta > 0".into(),
        ));
    }
    let rho = zcdp::rho_for(budget.epsilon(), budget.delta())?;
    let rho_t = share * rho;
    // sqrt(2 rho_t), rounded down until its rho is within rho_t.
    let mut epsilon = (2.0 * rho_t).sqrt();
    while epsilon * epsilon / 2.0 > rho_t {
        epsilon = epsilon.next_down();
    }
    let scale =
        rnm_scale(epsilon, SENSITIVITY, n_rows).ok_or_else(|| too_small(budget.epsilon()))?;
    // The fit's budget: the epsilon that a rho a hair below the rest
    // implies at the same delta; the fit's own rho (the largest meeting it)
    // is then at most the rest, which `check_fit_rho` confirms.
    let fit_epsilon = zcdp::epsilon_of((rho - rho_t) * (1.0 - 1e-9), budget.delta())?;
    let fit = Budget::new(fit_epsilon.min(budget.epsilon()), budget.delta())?;
    Ok((
        fit,
        ThresholdPlan {
            epsilon,
            rho: Some(epsilon * epsilon / 2.0),
            scale,
            candidates: CANDIDATES,
            run_budget: budget,
            run_rho: Some(rho),
        },
    ))
}

fn too_small(epsilon: f64) -> LearnError {
    LearnError::InvalidParameter(format!(
        "epsilon (epsilon): the decision threshold's share of epsilon = {epsilon} is too small to sample; use a larger epsilon or threshold_share 0"
    ))
}

/// The fit's rho and the threshold's together must not exceed the run's:
/// an error (refused before any row is read) otherwise.
pub fn check_fit_rho(plan: &ThresholdPlan, fit_rho: Option<f64>) -> Result<(), LearnError> {
    match (plan.run_rho, plan.rho, fit_rho) {
        (None, None, None) => Ok(()),
        (Some(run), Some(t), Some(fit)) if fit + t <= run => Ok(()),
        _ => Err(LearnError::InvalidParameter(
            "the decision threshold's budget and the fit's do not compose to the job's; use threshold_share 0".into(),
        )),
    }
}

/// The decision threshold's release as the statement records it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdRelease {
    /// The release's public facts.
    pub plan: ThresholdPlan,
    /// The chosen logit: the fit's intercept minus the model's.
    pub logit: f64,
}

impl ThresholdPlan {
    /// A fit's statement texts with this release appended: the accounting
    /// (`fit_accounting`, then the threshold; basic composition, or zCDP's
    /// additive rho when the run has one) and the budget split
    /// (`fit_split` at the fit's `fit_epsilon`, then the threshold's part).
    pub fn statement_texts(
        &self,
        fit_accounting: &str,
        fit_split: &str,
        fit_epsilon: f64,
    ) -> (String, String) {
        let (epsilon, delta) = (self.run_budget.epsilon(), self.run_budget.delta());
        let accounting = match (self.run_rho, self.rho) {
            (Some(run), Some(t)) => format!(
                "{fit_accounting}; then the decision threshold, one pure {:.6}-DP report-noisy-max (rho {t:.6e}); the fit's rho and the threshold's compose additively to at most rho = {run:.6e}, which implies ({epsilon}, {delta})-DP by the same conversion",
                self.epsilon
            ),
            _ => format!(
                "{fit_accounting}; then the decision threshold, one pure {:.6}-DP report-noisy-max, by basic composition: epsilon = {epsilon}",
                self.epsilon
            ),
        };
        let split = format!(
            "the fit's part (epsilon {fit_epsilon}): {fit_split}; the rest to the decision threshold (report-noisy-max over {} logits, scores the training rows each classifies correctly, sensitivity 1, Laplace scale {:.3} rows)",
            self.candidates, self.scale
        );
        (accounting, split)
    }
}

/// The candidates of a decision threshold: [`CANDIDATES`] evenly spaced
/// logits on `[center - W, center + W]`, `W` slightly more than `bound`, so
/// that every score within `bound` of `center` lies strictly inside: the
/// first candidate predicts every row positive, the last every row
/// negative. `center` and `bound` come from the released model alone.
pub fn grid_around(center: f64, bound: f64) -> Vec<f64> {
    // Strictly outside every score: a relative and an absolute margin.
    let w = bound * (1.0 + 1e-9) + 1e-9;
    let step = 2.0 * w / (CANDIDATES - 1) as f64;
    (0..CANDIDATES)
        .map(|j| center - w + step * j as f64)
        .collect()
}

/// Each candidate's score: the training rows it classifies correctly when a
/// row is predicted positive iff its logit (under the released model) is
/// above the candidate.
pub fn logit_scores(
    logits: &[f64],
    data: &crate::data::Dataset,
    grid: &[f64],
) -> Result<Vec<f64>, LearnError> {
    let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
    let (above, positive_above) = counts_by_label(logits, |i| labels.get(i), grid);
    let p = labels.count_ones() as u64;
    Ok(correct_counts(
        &above,
        &positive_above,
        p,
        data.n_rows() as u64,
    ))
}

/// The release: report-noisy-max over `grid` with the scores of
/// [`logit_scores`] at the plan's scale. Returns the chosen logit.
pub fn choose_logit(
    logits: &[f64],
    data: &crate::data::Dataset,
    grid: &[f64],
    plan: &ThresholdPlan,
    rng: &mut crate::privacy::NoiseRng,
) -> Result<f64, LearnError> {
    let utility = logit_scores(logits, data, grid)?;
    let j = crate::privacy::laplace::report_noisy_max(rng, &utility, plan.scale)?;
    Ok(grid[j])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `c_j` is the number of scores above `grid[j]` (a score on a grid
    /// point is not above it); `a_j` counts the positive ones among them.
    #[test]
    fn counts_by_hand() {
        let grid = [-1.0, 0.0, 1.0, 2.0];
        let scores = [-5.0, -0.5, 0.0, 0.25, 1.5, 1.75, 9.0];
        // above -1: 6; above 0: 4 (0.25, 1.5, 1.75, 9); above 1: 3; above 2: 1.
        // Positive: rows 2 (0.0), 4 (1.5) and 6 (9.0).
        let (above, positive) = counts_by_label(&scores, |i| [2, 4, 6].contains(&i), &grid);
        assert_eq!(above, vec![6, 4, 3, 1]);
        assert_eq!(positive, vec![3, 2, 2, 1]);
        // n = 7, p = 3: correct = 7 - c - (3 - a) + a. Above 0, say: rows
        // 4 and 6 right, 3 and 5 wrong; at or below it 0 and 1 right, 2
        // wrong: 4.
        assert_eq!(
            correct_counts(&above, &positive, 3, 7),
            vec![4.0, 4.0, 5.0, 5.0]
        );
        assert_eq!(
            counts_by_label(&[], |_| false, &grid),
            (vec![0; 4], vec![0; 4])
        );
    }

    /// scale = 2 (D + n 2^-49) / (epsilon - 2 GRID_EPSILON): 2 x 1 / 0.1 =
    /// 20 rows for sensitivity 1 at epsilon 0.1, a hair above; refused when
    /// epsilon is too small or not finite.
    #[test]
    fn scale_by_hand() {
        let s = rnm_scale(0.1, 1.0, 1000).unwrap();
        assert!(s >= 20.0 && s / 20.0 - 1.0 < 1e-6, "{s}");
        let s = rnm_scale(0.05, 3.0, 1000).unwrap();
        assert!(s >= 120.0 && s / 120.0 - 1.0 < 1e-6, "{s}");
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-12] {
            assert!(rnm_scale(bad, 1.0, 1000).is_none(), "{bad}");
        }
    }
}
