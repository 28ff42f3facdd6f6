//! Report-noisy-max with exact discrete Laplace noise.
//!
//! Report-noisy-max adds independent Laplace noise of scale `b` to each score
//! and returns the index of the largest noisy score. If each score changes by
//! at most `Delta` between neighbouring inputs and `b = 1 / eta`, it is
//! `2 * eta * Delta`-DP (the proof below, two-sided; LazyBB Thm 2.14,
//! "weighted return noisy max"; Dwork–Roth 2014 Claim 3.9 is the monotone
//! case only), the same guarantee as the exponential
//! mechanism with weights `exp(eta q)`. It is privboost's only selection
//! mechanism: DP-1R's choice of candidate (`learn::lazybb::one_rule`), DP TopDown's
//! choice of split and its leaf labels (`learn::lazybb::top_down`; SPEC §4.3,
//! PAPERS.md §1.5). Issue 6 names it ("report-noisy-max with discrete noise
//! on scores rounded to a fixed grid") as the rebuild of the exponential
//! mechanism whose running time does not depend on the scores.
//!
//! # What is sampled, exactly
//!
//! Each score is put in noise units and rounded to the grid `2^-30`
//! ([`super::grid::GRID`]): `V_i = round(fl(scores[i] / scale) 2^30)`,
//! an integer. Noise is the discrete Laplace distribution with scale `2^30`
//! on the integers ([`exact::discrete_laplace`], CKS20 Algorithm 2), i.e.
//! scale 1 in noise units, scale `b = scale` in score units, on a grid
//! `2^30` times finer than the noise. The result is the lowest index among
//! the largest `V_i + N_i` (integer ties have positive probability; the rule
//! is fixed and data-independent).
//!
//! # Privacy
//!
//! Suppose the values `v_i = fl(scores[i] / scale)` *as computed* satisfy
//! `|v_i(D) - v_i(D')| <= L` (for exact scores of sensitivity `Delta` this is
//! `L = Delta / scale` plus the float error of the caller's scores and of the
//! one division). Then `|V_i(D) - V_i(D')| <= k := 2^30 L + 1` grid steps and
//! report-noisy-max is
//!
//! ```text
//! 2 (L + 2^-30)-DP
//! ```
//!
//! Proof (two-sided: each score may move either way, unlike Dwork–Roth
//! Claim 3.9, which assumes monotone scores; integer noise, fixed tie
//! rule). Fix the noise `N_j` of every `j != i`. Index `i` wins iff
//! `N_i >= r*`, where `r* = max(max_{j<i} (V_j + N_j) + 1, max_{j>i} (V_j + N_j)) - V_i`
//! (it must beat the lower indices strictly and tie or beat the higher ones).
//! Moving from D to D' moves each `V_j` by at most `k`, so `r*` moves by at
//! most `2k`. The discrete Laplace pmf `f(x) ∝ exp(-|x| / 2^30)` satisfies
//! `f(x + s) >= e^{-|s| / 2^30} f(x)`, hence
//! `P(N >= r + s) >= e^{-|s| / 2^30} P(N >= r)` for every integer `r`, so
//! `P_D'(i wins | N_{-i}) >= e^{-2k / 2^30} P_D(i wins | N_{-i})`; integrating over
//! `N_{-i}` gives the ratio `e^{2k / 2^30} = e^{2 (L + 2^-30)}` for every
//! output. The grid costs [`super::grid::GRID_EPSILON`] `= 2^-29` per
//! call; `docs/privacy.md` ("Report-noisy-max") has the statement.
//!
//! # Timing
//!
//! The scores are checked and rounded first, then one discrete Laplace draw is
//! made per score: the draws' running time depends only on the random bits
//! (CKS20 Algorithm 2 never looks at the scores), and the number of draws is
//! the number of candidates. The maximum is one linear pass. So the time of
//! a call is a function of the noise and the candidate count, never of the
//! scores (up to the branch that records a new maximum, a few cycles).
//! `docs/privacy.md` ("Timing") has the measurements.

use super::grid::{GRID_BITS, to_grid};
use super::{NoiseRng, PrivacyError, exact};

/// Report-noisy-max: the lowest index among the largest
/// `round(scores[i] / scale, 2^-30) + DLap(1)` (module docs), i.e. Laplace
/// noise of scale `scale` in score units, sampled exactly on a fine grid.
///
/// Errors on an empty slice, a non-finite score, or a scale that is not
/// positive and finite.
pub fn report_noisy_max(
    rng: &mut NoiseRng,
    scores: &[f64],
    scale: f64,
) -> Result<usize, PrivacyError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(PrivacyError::InvalidParameter(format!(
            "Laplace scale must be positive and finite, got {scale}"
        )));
    }
    if scores.is_empty() {
        return Err(PrivacyError::InvalidParameter(
            "report-noisy-max needs at least one candidate".into(),
        ));
    }
    #[cfg(test)]
    super::mechanisms::record(super::mechanisms::REPORT_NOISY_MAX_LAPLACE);
    let mut grid = Vec::with_capacity(scores.len());
    for &score in scores {
        if !score.is_finite() {
            return Err(PrivacyError::InvalidParameter(
                "report-noisy-max got a non-finite score".into(),
            ));
        }
        grid.push(to_grid(score / scale)?);
    }
    let mut best = 0;
    let mut best_value = i128::MIN;
    for (i, &v) in grid.iter().enumerate() {
        let noise = exact::discrete_laplace(rng, 1 << GRID_BITS, 1)?;
        // |v| < 2^121 and |noise| < 2^64 with overwhelming probability;
        // saturate rather than overflow in the impossible remainder.
        let noisy = v.saturating_add(noise);
        if noisy > best_value {
            best = i;
            best_value = noisy;
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::testutil::{chi_square_p_value, rnm_laplace_probabilities};

    /// P(first wins) for two candidates with score gap `d >= 0` and Laplace
    /// scale `b`: the difference of two Laplace variables gives
    /// `1 - (2 + d/b) e^{-d/b} / 4`. The discrete noise on the 2^-30 grid
    /// matches it to within about 1e-9, far below what 200,000 draws resolve.
    fn p_first(d: f64, b: f64) -> f64 {
        1.0 - (2.0 + d / b) * (-d / b).exp() / 4.0
    }

    fn first_wins(seed: u64, d: f64, b: f64, draws: u64) -> u64 {
        let mut rng = NoiseRng::seeded(seed);
        (0..draws)
            .filter(|_| report_noisy_max(&mut rng, &[d, 0.0], b).unwrap() == 0)
            .count() as u64
    }

    #[test]
    fn report_noisy_max_two_candidates() {
        for (seed, d, b) in [(13, 1.0, 1.0), (14, 0.3, 0.1), (15, 2e-4, 1e-4)] {
            let draws = 200_000;
            let wins = first_wins(seed, d, b, draws);
            let expected = p_first(d, b);
            let p = chi_square_p_value(&[wins, draws - wins], &[expected, 1.0 - expected]);
            assert!(p > 1e-4, "p = {p}, wins {wins}, expected {expected}");
        }
    }

    /// The same test rejects a scale off by a factor 2.
    #[test]
    fn a_wrong_noise_scale_is_detected() {
        let draws = 200_000;
        let wins = first_wins(16, 1.0, 2.0, draws);
        let expected = p_first(1.0, 1.0);
        let p = chi_square_p_value(&[wins, draws - wins], &[expected, 1.0 - expected]);
        assert!(p < 1e-10, "p = {p}");
    }

    /// Six candidates with unequal scores: frequencies match the Laplace
    /// report-noisy-max integral (`testutil::rnm_laplace_probabilities`), and
    /// the exponential mechanism's proportions `exp(v / b)` are rejected (the
    /// two mechanisms have the same epsilon but different distributions).
    #[test]
    fn report_noisy_max_many_candidates() {
        let scores = [0.0, -0.5, -1.0, -1.5, -2.5, -4.0];
        let b = 1.0;
        let expected = rnm_laplace_probabilities(&scores, b);
        assert!((expected.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let mut rng = NoiseRng::seeded(18);
        let mut counts = [0u64; 6];
        for _ in 0..200_000 {
            counts[report_noisy_max(&mut rng, &scores, b).unwrap()] += 1;
        }
        let p = chi_square_p_value(&counts, &expected);
        assert!(p > 1e-4, "p = {p}, {counts:?} vs {expected:?}");
        let z: f64 = scores.iter().map(|v| (v / b).exp()).sum();
        let gibbs: Vec<f64> = scores.iter().map(|v| (v / b).exp() / z).collect();
        assert!(chi_square_p_value(&counts, &gibbs) < 1e-10);
    }

    /// The quadrature agrees with the two-candidate closed form.
    #[test]
    fn quadrature_matches_the_closed_form() {
        for (d, b) in [(1.0, 1.0), (0.3, 0.1), (0.0, 2.0), (5.0, 0.7)] {
            let p = rnm_laplace_probabilities(&[d, 0.0], b);
            assert!((p[0] - p_first(d, b)).abs() < 1e-7, "{d} {b}: {p:?}");
        }
    }

    /// Three candidates, equal scores: each wins with probability 1/3 (the
    /// tie rule favours low indices only on exact integer ties, which have
    /// probability about 2^-31 here).
    #[test]
    fn equal_scores_are_symmetric() {
        let mut rng = NoiseRng::seeded(17);
        let mut counts = [0u64; 3];
        for _ in 0..90_000 {
            counts[report_noisy_max(&mut rng, &[0.25, 0.25, 0.25], 0.5).unwrap()] += 1;
        }
        let p = chi_square_p_value(&counts, &[1.0 / 3.0; 3]);
        assert!(p > 1e-4, "p = {p}, {counts:?}");
    }

    #[test]
    fn rejects_bad_scale_and_scores() {
        let mut rng = NoiseRng::seeded(1);
        for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(report_noisy_max(&mut rng, &[1.0], scale).is_err());
        }
        assert!(report_noisy_max(&mut rng, &[], 1.0).is_err());
        assert!(report_noisy_max(&mut rng, &[f64::NAN], 1.0).is_err());
        assert!(report_noisy_max(&mut rng, &[1e300], 1e-10).is_err());
        assert_eq!(report_noisy_max(&mut rng, &[3.0], 1.0).unwrap(), 0);
    }
}
