//! Laplace noise and report-noisy-max.
//!
//! Report-noisy-max adds independent `Lap(b)` noise to each score and returns
//! the index of the largest noisy score. If each score changes by at most
//! `Delta` between neighbouring inputs and `b = 1 / eta`, it is
//! `2 * eta * Delta`-DP
//! (Dwork–Roth 2014, Claim 3.9; LazyBB Thm 2.14, "weighted return noisy max").
//! It is used to label the leaves of DP TopDown trees (SPEC §4.3).
//!
//! # Numerics
//!
//! `Lap(b)` is drawn as a fair sign times `b * Exp(1)`, with `Exp(1) = -ln U`
//! for `U` uniform on the 53-bit grid in (0, 1) ([`NoiseRng::uniform_open01`]).
//! This is the textbook floating-point sampler that Mironov (2012) showed to
//! leak through its low-order bits; it is acceptable only until the exact
//! samplers of the privacy-integrity issue replace it (SPEC §2).

use super::{NoiseRng, PrivacyError};

/// One draw from the Laplace distribution with mean 0 and scale `scale > 0`.
pub fn sample_laplace(rng: &mut NoiseRng, scale: f64) -> Result<f64, PrivacyError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(PrivacyError::InvalidParameter(format!(
            "Laplace scale must be positive and finite, got {scale}"
        )));
    }
    let magnitude = -rng.uniform_open01().ln() * scale;
    Ok(if rng.coin() { magnitude } else { -magnitude })
}

/// Report-noisy-max: the index of the largest `scores[i] + Lap(scale)`.
///
/// Ties between noisy scores (probability zero in exact arithmetic) go to the
/// lowest index.
pub fn report_noisy_max(
    rng: &mut NoiseRng,
    scores: &[f64],
    scale: f64,
) -> Result<usize, PrivacyError> {
    if scores.is_empty() {
        return Err(PrivacyError::InvalidParameter(
            "report-noisy-max needs at least one candidate".into(),
        ));
    }
    if scores.iter().any(|s| !s.is_finite()) {
        return Err(PrivacyError::InvalidParameter(
            "report-noisy-max got a non-finite score".into(),
        ));
    }
    let mut best = 0;
    let mut best_value = f64::NEG_INFINITY;
    for (i, &score) in scores.iter().enumerate() {
        let noisy = score + sample_laplace(rng, scale)?;
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
    use crate::privacy::testutil::chi_square_p_value;

    /// Binned draws against the exact Laplace CDF; a scale off by 2x fails.
    fn binned_counts(rng: &mut NoiseRng, scale: f64, edges: &[f64], draws: usize) -> Vec<u64> {
        let mut counts = vec![0u64; edges.len() + 1];
        for _ in 0..draws {
            let x = sample_laplace(rng, scale).unwrap();
            counts[edges.partition_point(|&e| e < x)] += 1;
        }
        counts
    }

    fn laplace_cdf(x: f64, b: f64) -> f64 {
        if x < 0.0 {
            0.5 * (x / b).exp()
        } else {
            1.0 - 0.5 * (-x / b).exp()
        }
    }

    fn expected_probabilities(edges: &[f64], b: f64) -> Vec<f64> {
        let mut cdf: Vec<f64> = vec![0.0];
        cdf.extend(edges.iter().map(|&e| laplace_cdf(e, b)));
        cdf.push(1.0);
        cdf.windows(2).map(|w| w[1] - w[0]).collect()
    }

    #[test]
    fn laplace_matches_its_cdf() {
        let mut rng = NoiseRng::seeded(11);
        let b = 2.5;
        let edges = [-6.0, -3.0, -1.5, -0.5, 0.0, 0.5, 1.5, 3.0, 6.0];
        let counts = binned_counts(&mut rng, b, &edges, 200_000);
        let p = chi_square_p_value(&counts, &expected_probabilities(&edges, b));
        assert!(p > 1e-4, "p = {p}");
    }

    #[test]
    fn a_wrong_laplace_scale_is_detected() {
        let mut rng = NoiseRng::seeded(12);
        let edges = [-6.0, -3.0, -1.5, -0.5, 0.0, 0.5, 1.5, 3.0, 6.0];
        let counts = binned_counts(&mut rng, 5.0, &edges, 200_000);
        let p = chi_square_p_value(&counts, &expected_probabilities(&edges, 2.5));
        assert!(p < 1e-10, "p = {p}");
    }

    /// Two candidates: P(first wins) for Laplace noise has a closed form.
    /// With d = s0 - s1 >= 0 and scale b, the difference of two Laplace
    /// variables gives P = 1 - (2 + d/b) e^{-d/b} / 4.
    #[test]
    fn report_noisy_max_two_candidates() {
        let mut rng = NoiseRng::seeded(13);
        let (b, d) = (1.0, 1.0);
        let draws = 200_000;
        let wins = (0..draws)
            .filter(|_| report_noisy_max(&mut rng, &[d, 0.0], b).unwrap() == 0)
            .count() as u64;
        let p_first = 1.0 - (2.0 + d / b) * (-d / b).exp() / 4.0;
        let p = chi_square_p_value(&[wins, draws - wins], &[p_first, 1.0 - p_first]);
        assert!(p > 1e-4, "p = {p}, wins {wins}, expected {p_first}");
    }

    #[test]
    fn rejects_bad_scale_and_scores() {
        let mut rng = NoiseRng::seeded(1);
        for scale in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(sample_laplace(&mut rng, scale).is_err());
        }
        assert!(report_noisy_max(&mut rng, &[], 1.0).is_err());
        assert!(report_noisy_max(&mut rng, &[f64::NAN], 1.0).is_err());
    }
}
