//! The exponential mechanism with weights given in the log domain, sampled
//! exactly.
//!
//! LazyBB's weak learners select a hypothesis `h` with probability
//! proportional to `exp(eta * q(h))` (the weighted exponential mechanism,
//! LazyBB §2.4, Thm 2.13). The caller passes the log-weights
//! `v(h) = eta * q(h)`; the `1 / (2 Delta)` scaling is already folded into
//! `eta` (PAPERS.md §4 item 7), so nothing is divided by a sensitivity here.
//!
//! # What is sampled, exactly
//!
//! Each log-weight is rounded to the grid `2^-30` ([`GRID`]):
//! `V(h) = round(v(h) 2^30)`, an integer (multiplying a float by a power of
//! two and rounding are exact operations). The mechanism then returns `h`
//! with probability exactly
//!
//! ```text
//! P(h) = exp(V(h) / 2^30) / sum_g exp(V(g) / 2^30)
//! ```
//!
//! by rejection: propose `h` uniformly ([`exact::uniform_below`]) and accept
//! it with probability `exp(-(max_g V(g) - V(h)) / 2^30)`
//! ([`exact::bernoulli_exp`], CKS20 Algorithm 1), a rational exponent. A
//! proposal is accepted with probability `Z / m >= 1 / m`
//! (`Z = sum_g exp((V(g) - max V) / 2^30) >= 1`, `m` candidates), so the
//! expected number of proposals is at most `m`. No floating-point value
//! enters the randomness.
//!
//! # Privacy
//!
//! Neighbouring inputs (substitution of one row): suppose the caller's
//! log-weights, *as computed in floating point*, satisfy
//! `|v_D(h) - v_D'(h)| <= L` for every `h` (for DP-1R, `L` is `eta` times the
//! robust sensitivity of the error plus a float-error margin:
//! `privacy::calibration::one_rule_eta`). Rounding moves each value by at most
//! half a grid step, so `|V_D(h) - V_D'(h)| / 2^30 <= L + 2^-30`, and the
//! exponential mechanism over the grid values is
//!
//! ```text
//! 2 (L + 2^-30)-DP        (McSherry–Talwar 2007; LazyBB Thm 2.13)
//! ```
//!
//! because the numerator changes by at most `e^{L + 2^-30}` and the
//! normaliser by at most the same factor. The grid costs [`GRID_EPSILON`]
//! `= 2^-29` per call on top of the idealised `2 L`. `docs/privacy.md`
//! ("Exponential mechanism") has the full statement; the sensitivity
//! argument belongs to the caller (`learn::one_rule`).
//!
//! # Timing
//!
//! The number of proposals is geometric with mean `m / Z`, and `Z` depends
//! on the scores: the running time of one call reveals something about how
//! peaked the distribution is. `docs/privacy.md` ("Timing") records what we
//! measured for whole training runs.

use super::{NoiseRng, PrivacyError, exact};

/// Bits of the grid that log-weights (and, in [`super::laplace`], noise-unit
/// scores) are rounded to.
pub const GRID_BITS: u32 = 30;

/// The grid step `2^-30` in log-weight units.
pub const GRID: f64 = 1.0 / (1u64 << GRID_BITS) as f64;

/// Extra epsilon per call that the rounding to the grid costs: `2 * 2^-30`.
pub const GRID_EPSILON: f64 = 2.0 * GRID;

/// Largest `|v|` accepted: `v 2^30` must fit comfortably in an `i128`.
const MAX_ABS: f64 = (1u128 << 90) as f64;

/// `round(v 2^30)`, exactly (errors on NaN, infinities and `|v| > 2^90`).
pub(crate) fn to_grid(v: f64) -> Result<i128, PrivacyError> {
    if !v.is_finite() {
        return Err(PrivacyError::InvalidParameter(
            "a mechanism got a non-finite score".into(),
        ));
    }
    if v.abs() > MAX_ABS {
        return Err(PrivacyError::InvalidParameter(format!(
            "a mechanism got a score of magnitude {v:e}, above 2^90"
        )));
    }
    // Multiplying by 2^30 is exact (no overflow below 2^120); `round` is exact;
    // the result is an integer of magnitude below 2^121, exact in i128.
    Ok((v * (1u64 << GRID_BITS) as f64).round() as i128)
}

/// Draw index `i` with probability `exp(V_i) / sum_j exp(V_j)`, where `V_i` is
/// `log_weights[i]` rounded to the grid `2^-30` (module docs).
///
/// Errors if the slice is empty or holds a NaN, an infinity or a magnitude
/// above `2^90`.
pub fn sample(rng: &mut NoiseRng, log_weights: &[f64]) -> Result<usize, PrivacyError> {
    if log_weights.is_empty() {
        return Err(PrivacyError::InvalidParameter(
            "the exponential mechanism needs at least one candidate".into(),
        ));
    }
    let mut max = i128::MIN;
    for &w in log_weights {
        max = max.max(to_grid(w)?);
    }
    let m = log_weights.len() as u128;
    loop {
        let i = exact::uniform_below(rng, m)? as usize;
        // max - V_i >= 0 and below 2^122: fits in u128.
        let gap = (max - to_grid(log_weights[i])?) as u128;
        if exact::bernoulli_exp(rng, gap, 1 << GRID_BITS)? {
            return Ok(i);
        }
    }
}

/// [`sample`]; the buffer is no longer needed (the exact sampler allocates
/// nothing) and is kept so that existing callers compile unchanged.
pub fn sample_with_scratch(
    rng: &mut NoiseRng,
    log_weights: &[f64],
    scratch: &mut Vec<f64>,
) -> Result<usize, PrivacyError> {
    scratch.clear();
    sample(rng, log_weights)
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
