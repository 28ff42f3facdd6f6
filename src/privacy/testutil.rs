//! Shared helpers for the statistical tests of the mechanisms.
//!
//! Every test using these draws from a seeded [`super::NoiseRng`], so a
//! failure reproduces exactly. The thresholds the tests use (p > 1e-4 for
//! "matches", p < 1e-10 for "detects a wrong scale") give a false-failure rate
//! of at most 1e-4 per test for a correct sampler at a fresh seed.

use crate::audit::ln_gamma;

/// p-value of Pearson's chi-square goodness-of-fit test of `counts` against
/// the probabilities `expected` (which must sum to 1).
///
/// Cells with an expected count below 5 should be merged by the caller; the
/// tests here choose bins so that they are not.
pub(crate) fn chi_square_p_value(counts: &[u64], expected: &[f64]) -> f64 {
    assert_eq!(counts.len(), expected.len());
    let total: u64 = counts.iter().sum();
    let statistic: f64 = counts
        .iter()
        .zip(expected)
        .map(|(&observed, &p)| {
            let e = p * total as f64;
            assert!(e >= 5.0, "expected count {e} too small for chi-square");
            (observed as f64 - e).powi(2) / e
        })
        .sum();
    chi_square_survival(statistic, (counts.len() - 1) as f64)
}

/// P(X >= x) for a chi-square variable with `k` degrees of freedom:
/// the regularised upper incomplete gamma function Q(k/2, x/2).
fn chi_square_survival(x: f64, k: f64) -> f64 {
    upper_regularised_gamma(k / 2.0, x / 2.0)
}

/// Q(a, x) by the series (x < a + 1) or the continued fraction (Numerical
/// Recipes §6.2, Lentz's method).
fn upper_regularised_gamma(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let log_prefactor = a * x.ln() - x - ln_gamma(a);
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..10_000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-15 {
                break;
            }
        }
        1.0 - sum * log_prefactor.exp()
    } else {
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / tiny;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < tiny {
                d = tiny;
            }
            c = b + an / c;
            if c.abs() < tiny {
                c = tiny;
            }
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < 1e-15 {
                break;
            }
        }
        log_prefactor.exp() * h
    }
}

/// Selection probabilities of report-noisy-max with continuous Laplace noise
/// of scale `b`: `P(i) = ∫ f(x - v_i) prod_{j != i} F(x - v_j) dx`
/// ([`rnm_laplace_group_probabilities`] with one score per group).
pub(crate) fn rnm_laplace_probabilities(scores: &[f64], b: f64) -> Vec<f64> {
    let groups: Vec<(f64, usize)> = scores.iter().map(|&v| (v, 1)).collect();
    rnm_laplace_group_probabilities(&groups, b)
}

/// P(the winner is one of group `k`'s candidates) for report-noisy-max with
/// continuous Laplace noise of scale `b` when the candidates come in groups
/// of equal score `(v_k, m_k)`: `m_k ∫ f(x - v_k) F(x - v_k)^(m_k - 1)
/// prod_{j != k} F(x - v_j)^(m_j) dx`, by Simpson's rule on a grid of step
/// `b / 256` over the range where the integrand is not negligible (`e^-40`
/// beyond it). The exact mechanism (`privacy::laplace`) adds discrete Laplace
/// noise on a grid `2^30` times finer than `b`, which changes these
/// probabilities by about `2^-30`; the quadrature's own error is below
/// `1e-6` (its kinks sit at the `v_k`), far below what the tests' draws
/// resolve.
pub(crate) fn rnm_laplace_group_probabilities(groups: &[(f64, usize)], b: f64) -> Vec<f64> {
    let density = |z: f64| (-z.abs() / b).exp() / (2.0 * b);
    let cdf = |z: f64| {
        if z < 0.0 {
            0.5 * (z / b).exp()
        } else {
            1.0 - 0.5 * (-z / b).exp()
        }
    };
    let lo = groups.iter().map(|g| g.0).fold(f64::INFINITY, f64::min) - 40.0 * b;
    let hi = groups.iter().map(|g| g.0).fold(f64::NEG_INFINITY, f64::max) + 40.0 * b;
    let steps = (2.0 * ((hi - lo) / b * 128.0).ceil()) as usize; // even
    let h = (hi - lo) / steps as f64;
    (0..groups.len())
        .map(|k| {
            let integrand = |x: f64| {
                let (v, m) = groups[k];
                let mut value = m as f64 * density(x - v) * cdf(x - v).powi(m as i32 - 1);
                for (j, &(w, n)) in groups.iter().enumerate() {
                    if j != k {
                        value *= cdf(x - w).powi(n as i32);
                    }
                }
                value
            };
            let mut sum = integrand(lo) + integrand(hi);
            for i in 1..steps {
                let weight = if i % 2 == 1 { 4.0 } else { 2.0 };
                sum += weight * integrand(lo + i as f64 * h);
            }
            sum * h / 3.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survival_function_matches_tables() {
        // Critical values from standard chi-square tables.
        assert!((chi_square_survival(3.841_459, 1.0) - 0.05).abs() < 1e-5);
        assert!((chi_square_survival(9.487_729, 4.0) - 0.05).abs() < 1e-5);
        assert!((chi_square_survival(23.209_25, 10.0) - 0.01).abs() < 1e-5);
        assert!((chi_square_survival(0.0, 3.0) - 1.0).abs() < 1e-12);
    }
}
