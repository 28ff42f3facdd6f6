//! The exponential mechanism with weights given in the log domain.
//!
//! LazyBB's weak learners select a hypothesis `h` with probability
//! proportional to `exp(eta * q(h))` (the weighted exponential mechanism,
//! LazyBB §2.4, Thm 2.13). The caller passes the log-weights
//! `eta * q(h)`; the `1 / (2 Delta)` scaling is already folded into `eta`
//! (PAPERS.md §4 item 7), so nothing is divided by a sensitivity here.
//!
//! # Privacy
//!
//! If every log-weight changes by at most `eta * Delta` between neighbouring
//! inputs, one draw is `2 * eta * Delta`-DP (McSherry–Talwar 2007; LazyBB
//! Thm 2.13). The sensitivity argument belongs to the caller (see
//! `learn::weak::one_rule`).
//!
//! # Numerics
//!
//! `eta` can be in the hundreds or thousands, so `exp(eta * q)` is never
//! formed: the largest log-weight is subtracted first (log-sum-exp), which
//! puts every weight in `(0, 1]` with at least one equal to 1; the sum is then
//! at least 1 and at most the number of candidates, so it cannot overflow.
//! A weight that underflows to 0 had probability below `1e-308` relative to the
//! best candidate. The draw is an inverse-CDF search with a 53-bit uniform
//! from [`NoiseRng`]; this is a floating-point sampler (see `docs/privacy.md`).

use super::{NoiseRng, PrivacyError};

/// Draw index `i` with probability `exp(log_weights[i]) / sum_j exp(log_weights[j])`.
///
/// Errors if the slice is empty or holds a NaN or an infinity.
pub fn sample(rng: &mut NoiseRng, log_weights: &[f64]) -> Result<usize, PrivacyError> {
    let mut scratch = Vec::with_capacity(log_weights.len());
    sample_with_scratch(rng, log_weights, &mut scratch)
}

/// [`sample`] with a caller-owned buffer, so that a training loop allocates once.
pub fn sample_with_scratch(
    rng: &mut NoiseRng,
    log_weights: &[f64],
    scratch: &mut Vec<f64>,
) -> Result<usize, PrivacyError> {
    if log_weights.is_empty() {
        return Err(PrivacyError::InvalidParameter(
            "the exponential mechanism needs at least one candidate".into(),
        ));
    }
    if log_weights.iter().any(|w| !w.is_finite()) {
        return Err(PrivacyError::InvalidParameter(
            "the exponential mechanism got a non-finite score".into(),
        ));
    }
    let max = log_weights
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    scratch.clear();
    let mut total = 0.0;
    for &w in log_weights {
        let weight = (w - max).exp();
        total += weight;
        scratch.push(total);
    }
    // The cumulative sums are non-decreasing and the last one is `total >= 1`.
    let target = rng.uniform_open01() * total;
    let index = scratch.partition_point(|&cumulative| cumulative <= target);
    // `target < total` because the uniform is < 1, so index < len; the `min`
    // only guards against the last cumulative sum rounding below `target`.
    Ok(index.min(log_weights.len() - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::testutil::chi_square_p_value;

    /// Selection frequencies follow exp(eta q) proportions.
    #[test]
    fn frequencies_match_exp_eta_q() {
        let mut rng = NoiseRng::seeded(7);
        // eta = 50 on errors spread over 0.1: weights differ by up to e^5.
        let eta = 50.0;
        let errors = [0.10, 0.12, 0.15, 0.18, 0.20];
        let log_w: Vec<f64> = errors.iter().map(|e| -eta * e).collect();
        let z: f64 = log_w.iter().map(|w| w.exp()).sum();
        let expected: Vec<f64> = log_w.iter().map(|w| w.exp() / z).collect();
        let draws = 200_000;
        let mut counts = vec![0u64; errors.len()];
        for _ in 0..draws {
            counts[sample(&mut rng, &log_w).unwrap()] += 1;
        }
        let p = chi_square_p_value(&counts, &expected);
        assert!(p > 1e-4, "chi-square p = {p}, counts {counts:?}");
    }

    /// The same test detects an eta that is off by a factor 2 (what the
    /// authors' code does, PAPERS.md §1.4): the frequencies must NOT match.
    #[test]
    fn a_doubled_eta_is_detected() {
        let mut rng = NoiseRng::seeded(8);
        let eta = 50.0;
        let errors = [0.10, 0.12, 0.15, 0.18, 0.20];
        let claimed: Vec<f64> = errors.iter().map(|e| -eta * e).collect();
        let z: f64 = claimed.iter().map(|w| w.exp()).sum();
        let expected: Vec<f64> = claimed.iter().map(|w| w.exp() / z).collect();
        let doubled: Vec<f64> = claimed.iter().map(|w| 2.0 * w).collect();
        let mut counts = vec![0u64; errors.len()];
        for _ in 0..200_000 {
            counts[sample(&mut rng, &doubled).unwrap()] += 1;
        }
        assert!(chi_square_p_value(&counts, &expected) < 1e-10);
    }

    /// Huge log-weights (eta in the millions) neither overflow nor bias.
    #[test]
    fn huge_eta_picks_the_best_and_never_overflows() {
        let mut rng = NoiseRng::seeded(9);
        let log_w = [-1.0e9, -2.0e6, 0.5e9, 1.0e9 - 1.0, 1.0e9];
        let mut counts = [0u64; 5];
        for _ in 0..100_000 {
            counts[sample(&mut rng, &log_w).unwrap()] += 1;
        }
        assert_eq!(counts[0] + counts[1] + counts[2], 0);
        // Ratio e^1 between the two best.
        let ratio = counts[4] as f64 / counts[3] as f64;
        assert!((ratio - std::f64::consts::E).abs() < 0.1, "ratio {ratio}");
    }

    #[test]
    fn rejects_empty_and_non_finite() {
        let mut rng = NoiseRng::seeded(1);
        assert!(sample(&mut rng, &[]).is_err());
        assert!(sample(&mut rng, &[0.0, f64::NAN]).is_err());
        assert!(sample(&mut rng, &[f64::INFINITY]).is_err());
        assert_eq!(sample(&mut rng, &[3.0]).unwrap(), 0);
    }
}
