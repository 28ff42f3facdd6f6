//! Private selection among learners (`--algorithm auto`): the budget
//! arithmetic of the selection theorem, the random partition into a
//! training and a validation part, and the two validation-score releases.
//! `docs/privacy.md`, "Private selection (auto)", has the proofs.
//!
//! **The selection.** Each of the `m` candidates on the public list is run
//! once: trained on the training part `A` with `(epsilon_i, delta_i)` and
//! scored on the validation part `B` with a pure `epsilon_i` release. A row
//! lies in `A` or in `B`, never both (the partition is drawn from the
//! CSPRNG by row index, independently of the values), so by parallel
//! composition one run is `(epsilon_i, delta_i)`-DP under substitution.
//! The `m` runs compose by basic composition (Dwork and Roth 2014,
//! Theorem 3.16) to `(sum epsilon_i, sum delta_i)`; returning the run with
//! the best noisy score, and that score, is post-processing. With an equal
//! split `epsilon_i = epsilon / m` the total is exactly the job's epsilon.
//!
//! **Why not random stopping.** Liu and Talwar (STOC 2019, "Private
//! Selection from Private Candidates", §3, random stopping, pure case): if one
//! run `Q` is `epsilon_1`-DP, repeating `Q` and halting after each run with
//! probability `gamma`, then returning the best run, is `3 epsilon_1`-DP,
//! whatever `gamma`. Papernot and Steinke (ICLR 2022) generalise the number
//! of runs. Both bounds hold only while the number of runs `K` stays
//! secret: given `K = k` the output is the best of `k` runs, which is only
//! `k epsilon_1`-DP in general. A service reveals `K` through the job's
//! running time and progress, and capping `K` costs a `delta`. For `m <= 3`
//! candidates the plain composition above costs `m epsilon_1 <= 3
//! epsilon_1`, runs each candidate exactly once, and leaks nothing through
//! time, so the list is capped at [`MAX_CANDIDATES`] and random stopping is
//! not used.

use super::metrics::scale_for;
use super::{Budget, NoiseRng, PrivacyCost, PrivacyError, exact};

/// The longest candidate list: up to 3, running each candidate once costs
/// no more epsilon than Liu-Talwar's `3 epsilon_1` (module docs).
pub const MAX_CANDIDATES: usize = 3;

/// The grid of a clipped squared error, in units of the clip squared.
pub const ERROR_GRID: u64 = 1 << 16;

/// `total / k`, rounded down until `k` copies summed in order do not exceed
/// `total` (float division can round up by an ulp; the proof needs the sum
/// of the shares to be at most what is charged).
fn share_of(total: f64, k: usize) -> f64 {
    let mut x = total / k as f64;
    while std::iter::repeat_n(x, k).sum::<f64>() > total {
        x = x.next_down();
    }
    x
}

/// The job's budget split over `m` candidates: each run gets `epsilon / m`
/// (pure part) and the candidates that need a delta share the job's delta
/// equally, each share rounded down so that the shares sum to at most the
/// job's budget. `needs_delta[i]` says whether candidate `i` runs with a
/// delta. Returns each run's budget and the cost the ledger charges: the
/// job's epsilon (and its delta when a candidate uses delta), which bounds
/// the sum of the runs' budgets (basic composition). A function of the
/// public list and budget only.
pub fn split(
    budget: Budget,
    needs_delta: &[bool],
) -> Result<(Vec<Budget>, PrivacyCost), PrivacyError> {
    let m = needs_delta.len();
    if m == 0 || m > MAX_CANDIDATES {
        return Err(PrivacyError::InvalidParameter(format!(
            "private selection needs 1 to {MAX_CANDIDATES} candidates, got {m}"
        )));
    }
    let with_delta = needs_delta.iter().filter(|d| **d).count();
    if with_delta > 0 && budget.delta() == 0.0 {
        return Err(PrivacyError::InvalidParameter(
            "a candidate needs delta > 0 but the job's delta (delta) is 0".into(),
        ));
    }
    let epsilon_i = share_of(budget.epsilon(), m);
    let delta_i = if with_delta > 0 {
        share_of(budget.delta(), with_delta)
    } else {
        0.0
    };
    let runs: Vec<Budget> = needs_delta
        .iter()
        .map(|&d| Budget::new(epsilon_i, if d { delta_i } else { 0.0 }))
        .collect::<Result<_, _>>()?;
    // Basic composition: the sums, which the shares' rounding keeps at or
    // below the job's budget; the ledger is charged the budget itself.
    let epsilon: f64 = runs.iter().map(Budget::epsilon).sum();
    let delta: f64 = runs.iter().map(Budget::delta).sum();
    debug_assert!(epsilon <= budget.epsilon() && delta <= budget.delta());
    let cost = if with_delta == 0 {
        PrivacyCost::Pure {
            epsilon: budget.epsilon(),
        }
    } else {
        PrivacyCost::Approx {
            epsilon: budget.epsilon(),
            delta: budget.delta(),
        }
    };
    Ok((runs, cost))
}

/// The validation part's size for `n` rows and a validation share:
/// `round(share n)` kept inside `1..=n-1`, so both parts are non-empty.
/// Public (n and the share are).
pub fn validation_size(n: usize, share: f64) -> Result<usize, PrivacyError> {
    if n < 2 {
        return Err(PrivacyError::InvalidParameter(format!(
            "private selection needs at least 2 rows to split into training and validation parts, got {n}"
        )));
    }
    if !(share > 0.0 && share < 1.0) {
        return Err(PrivacyError::InvalidParameter(format!(
            "the validation share (validation_share) must be in (0, 1), got {share}"
        )));
    }
    Ok(((share * n as f64).round() as usize).clamp(1, n - 1))
}

/// A uniformly random set of `size` row indices out of `0..n` (a partial
/// Fisher-Yates shuffle with exact uniform draws from the CSPRNG), sorted:
/// the validation part. It depends on `n` and `size` only, never on a row.
pub fn random_partition(
    n: usize,
    size: usize,
    rng: &mut NoiseRng,
) -> Result<Vec<usize>, PrivacyError> {
    if size > n {
        return Err(PrivacyError::InvalidParameter(format!(
            "a part of {size} rows out of {n}"
        )));
    }
    let mut order: Vec<usize> = (0..n).collect();
    for i in 0..size {
        let j = i + exact::uniform_below(rng, (n - i) as u128)? as usize;
        order.swap(i, j);
    }
    let mut chosen = order[..size].to_vec();
    chosen.sort_unstable();
    Ok(chosen)
}

/// Whether both score releases can be drawn at `epsilon` (checked in the
/// plan, before any charge).
pub fn check_score_epsilon(epsilon: f64) -> Result<(), PrivacyError> {
    scale_for(1.0, epsilon)?;
    scale_for(ERROR_GRID as f64, epsilon)?;
    Ok(())
}

/// Release the number of correctly classified validation rows with
/// epsilon-DP.
///
/// Sensitivity: substituting one row of the validation part changes whether
/// that row is classified correctly and nothing else (the model was trained
/// on the other part, and the count of the other rows is unchanged), so
/// the count moves by at most 1. Discrete Laplace noise of scale
/// `1 / epsilon` on it is epsilon-DP (the geometric mechanism, Ghosh,
/// Roughgarden and Sundararajan 2009; CKS20 §2). The accuracy is the noisy
/// count over the public number of rows.
pub fn noisy_correct_count(
    correct: u64,
    epsilon: f64,
    rng: &mut NoiseRng,
) -> Result<i128, PrivacyError> {
    let (num, den) = scale_for(1.0, epsilon)?;
    Ok(i128::from(correct) + exact::additive_discrete_laplace(rng, num, den)?)
}

/// One validation row's clipped squared error on the grid: `round(min(e^2,
/// c^2) / c^2 * ERROR_GRID)`, an integer in `[0, ERROR_GRID]`, with `e` the
/// error of the prediction and `c = clip > 0` (public). A NaN counts as the
/// largest term, so the bound holds whatever the floats did.
pub fn clipped_error_term(prediction: f64, label: f64, clip: f64) -> u64 {
    let e = (prediction - label) / clip;
    let term = (e * e).min(1.0) * ERROR_GRID as f64;
    if term.is_nan() {
        ERROR_GRID
    } else {
        (term.round() as u64).min(ERROR_GRID)
    }
}

/// Release the mean clipped squared error of the validation rows
/// (prediction, label) in label units squared, with epsilon-DP.
///
/// Sensitivity: each row contributes one [`clipped_error_term`] in `[0,
/// ERROR_GRID]`, and substituting one validation row changes only its own
/// term, so the integer sum moves by at most `ERROR_GRID`. Discrete Laplace
/// noise of scale `ERROR_GRID / epsilon` on the sum is epsilon-DP (as
/// above); the mean is `noisy sum / ERROR_GRID * clip^2 / n`, with `n`
/// public. The clip keeps the noise in label units at `clip^2 / (epsilon
/// n)` instead of `range^2 / (epsilon n)`: on Abalone (range 30, clip 7.5)
/// sixteen times less.
pub fn noisy_clipped_mse(
    rows: &[(f64, f64)],
    clip: f64,
    epsilon: f64,
    rng: &mut NoiseRng,
) -> Result<f64, PrivacyError> {
    if !(clip > 0.0 && clip.is_finite()) {
        return Err(PrivacyError::InvalidParameter(format!(
            "the error clip must be positive and finite, got {clip}"
        )));
    }
    if rows.is_empty() {
        return Err(PrivacyError::InvalidParameter(
            "the validation part is empty".into(),
        ));
    }
    let (num, den) = scale_for(ERROR_GRID as f64, epsilon)?;
    let sum: i128 = rows
        .iter()
        .map(|&(p, y)| i128::from(clipped_error_term(p, y, clip)))
        .sum();
    let noisy = sum + exact::additive_discrete_laplace(rng, num, den)?;
    Ok(noisy as f64 / ERROR_GRID as f64 * clip * clip / rows.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(e: f64, d: f64) -> Budget {
        Budget::new(e, d).unwrap()
    }

    /// The charge is the composition theorem's sum, by hand: two pure
    /// candidates at epsilon 1 get 0.5 each and charge 1; three with one
    /// needing delta get 1/3 each, the delta goes whole to that one.
    #[test]
    fn split_is_the_composition_sum() {
        let (runs, cost) = split(budget(1.0, 0.0), &[false, false]).unwrap();
        assert_eq!(runs, vec![budget(0.5, 0.0), budget(0.5, 0.0)]);
        assert_eq!(cost, PrivacyCost::Pure { epsilon: 1.0 });
        let (runs, cost) = split(budget(0.9, 1e-6), &[false, false, true]).unwrap();
        assert_eq!(runs[0], budget(0.3, 0.0));
        assert_eq!(runs[2], budget(0.3, 1e-6));
        assert_eq!(
            cost,
            PrivacyCost::Approx {
                epsilon: 0.9,
                delta: 1e-6
            }
        );
        // The shares never sum above the charge, also for budgets where the
        // float division rounds up (0.103 / 3 summed thrice is
        // 0.10300000000000001 before the rounding down).
        for (e, m) in [(0.103, 3), (0.007, 3), (1.0, 3), (0.1, 3), (2.9, 2)] {
            let (runs, cost) = split(budget(e, 0.0), &vec![false; m]).unwrap();
            let sum: f64 = runs.iter().map(Budget::epsilon).sum();
            assert!(sum <= e, "{e} / {m}: {sum}");
            assert!(e - sum < 1e-12);
            assert_eq!(cost.charge(), budget(e, 0.0));
        }
        // Pure candidates under a job with delta charge no delta.
        let (_, cost) = split(budget(1.0, 1e-6), &[false, false]).unwrap();
        assert_eq!(cost, PrivacyCost::Pure { epsilon: 1.0 });
        assert!(split(budget(1.0, 0.0), &[]).is_err());
        assert!(split(budget(1.0, 0.0), &[false; 4]).is_err());
        assert!(split(budget(1.0, 0.0), &[false, true]).is_err());
    }

    #[test]
    fn validation_sizes() {
        assert_eq!(validation_size(32_561, 0.1).unwrap(), 3256);
        assert_eq!(validation_size(10, 0.01).unwrap(), 1);
        assert_eq!(validation_size(10, 0.99).unwrap(), 9);
        assert!(validation_size(1, 0.5).is_err());
        assert!(validation_size(100, 0.0).is_err());
        assert!(validation_size(100, 1.0).is_err());
        assert!(validation_size(100, f64::NAN).is_err());
    }

    /// The partition has the public size, distinct sorted indices, and every
    /// row is about equally likely to be chosen (a biased shuffle, e.g.
    /// `j` drawn from `0..n`, fails the first-row check).
    #[test]
    fn partition_is_uniform() {
        let mut rng = NoiseRng::seeded(5);
        let mut hits = [0u32; 10];
        let draws = 20_000;
        for _ in 0..draws {
            let part = random_partition(10, 3, &mut rng).unwrap();
            assert_eq!(part.len(), 3);
            assert!(part.windows(2).all(|w| w[0] < w[1]));
            for i in part {
                hits[i] += 1;
            }
        }
        // Each row: expected 6000, sd ~ 65.
        for h in hits {
            assert!((f64::from(h) - 6000.0).abs() < 300.0, "{hits:?}");
        }
        assert!(random_partition(3, 4, &mut rng).is_err());
    }

    #[test]
    fn clipped_terms() {
        assert_eq!(clipped_error_term(1.0, 1.0, 2.0), 0);
        assert_eq!(clipped_error_term(2.0, 1.0, 2.0), ERROR_GRID / 4);
        assert_eq!(clipped_error_term(100.0, 1.0, 2.0), ERROR_GRID);
        assert_eq!(clipped_error_term(f64::NAN, 1.0, 2.0), ERROR_GRID);
        assert_eq!(clipped_error_term(f64::INFINITY, 1.0, 2.0), ERROR_GRID);
    }

    /// With next to no noise the releases are the exact statistics.
    #[test]
    fn releases_without_noise() {
        let mut rng = NoiseRng::seeded(1);
        assert_eq!(noisy_correct_count(42, 1e6, &mut rng).unwrap(), 42);
        let mse =
            noisy_clipped_mse(&[(1.0, 3.0), (5.0, 5.0), (40.0, 0.0)], 4.0, 1e6, &mut rng).unwrap();
        // Errors 2, 0, 40 clipped to 4: (4 + 0 + 16) / 3.
        assert!((mse - 20.0 / 3.0).abs() < 1e-3, "{mse}");
        assert!(check_score_epsilon(5e-324).is_err());
        assert!(check_score_epsilon(1e-3).is_ok());
    }

    /// The count's noise has the discrete Laplace variance of scale `1 /
    /// epsilon`, `2 q / (1 - q)^2` with `q = e^{-epsilon}`: the sample
    /// variance of 20,000 draws is within 6% (a 2x scale is 4x the
    /// variance). The squared-error release's mean absolute noise in grid
    /// units is `~ ERROR_GRID / epsilon`, within 6% over 8,000 draws.
    #[test]
    fn noise_has_the_scale_of_the_proof() {
        let mut rng = NoiseRng::seeded(21);
        let epsilon = 0.5f64;
        let q = (-epsilon).exp();
        let expected = 2.0 * q / ((1.0 - q) * (1.0 - q));
        let draws = 20_000;
        let mut sum_sq = 0.0;
        for _ in 0..draws {
            let x = noisy_correct_count(1000, epsilon, &mut rng).unwrap() - 1000;
            sum_sq += (x * x) as f64;
        }
        let variance = sum_sq / f64::from(draws);
        assert!(
            (variance / expected - 1.0).abs() < 0.06,
            "{variance} vs {expected}"
        );

        let rows = [(3.0, 3.0); 10];
        let clip = 2.0;
        let mut total = 0.0;
        let draws = 8000;
        for _ in 0..draws {
            let mse = noisy_clipped_mse(&rows, clip, epsilon, &mut rng).unwrap();
            // Back to grid units: the noise itself (the exact sum is 0).
            total += (mse / (clip * clip) * ERROR_GRID as f64 * rows.len() as f64).abs();
        }
        let mean = total / f64::from(draws);
        let b = ERROR_GRID as f64 / epsilon;
        assert!((mean / b - 1.0).abs() < 0.06, "{mean} vs {b}");
    }
}
