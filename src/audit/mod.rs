//! Empirical privacy audit: a statistically valid *lower* bound on epsilon.
//!
//! A mechanism `M` is epsilon-DP only if, for all neighbouring datasets
//! `D ~ D'` and every event `E`, `P[M(D) in E] <= e^epsilon P[M(D') in E]`.
//! So `ln(P[M(D) in E] / P[M(D') in E])` is a lower bound on the true epsilon
//! for any fixed `D`, `D'`, `E`. The audit estimates both probabilities from
//! independent runs and replaces them by the ends of Clopper–Pearson
//! intervals, which gives a bound that holds with a stated confidence
//! whatever the true probabilities are (the approach of DP auditing tools
//! such as DP-Sniper, Bichsel et al. 2021, and Delta-Siege, Lokna et al. 2023,
//! with the event fixed in advance instead of learned):
//!
//! ```text
//! eps_lb = ln( p_lower(D) / p_upper(D') )
//! ```
//!
//! where `p_lower(D)` is the one-sided `1 - alpha/2` Clopper–Pearson lower
//! bound of `P[M(D) in E]` and `p_upper(D')` the one-sided `1 - alpha/2`
//! upper bound of `P[M(D') in E]`. With probability at least `1 - alpha`
//! both hold, and then `eps_lb <= ln(P_D(E) / P_D'(E)) <= epsilon`. A correct
//! implementation therefore reports `eps_lb > epsilon` with probability at
//! most `alpha`; a report above the claimed epsilon is evidence, at
//! confidence `1 - alpha`, that the claim is false.
//!
//! The datasets, the event and its direction must be chosen *before* the
//! runs (here: in the tests, from an analysis of the broken variants that
//! `docs/privacy.md` ("Empirical audit") records); choosing them from the
//! same runs would invalidate the confidence statement.
//!
//! The training pipeline is run by this module's tests (`#[cfg(test)]`),
//! because the deliberately broken variants
//! (`learn::lazybb::Fault`) and the seeded noise exist only in test builds.

/// The audit's output for one pair of datasets and one event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AuditResult {
    /// Runs on each dataset.
    pub runs: u64,
    /// Runs on `D` whose output was in the event.
    pub hits_d: u64,
    /// Runs on `D'` whose output was in the event.
    pub hits_d_prime: u64,
    /// `alpha`: the bound is valid with probability at least `1 - alpha`.
    pub alpha: f64,
    /// `ln(p_lower(D) / p_upper(D'))` (negative infinity when `p_lower` is 0).
    pub epsilon_lower_bound: f64,
}

impl AuditResult {
    /// The audit's bound from the counts (module docs).
    pub fn new(runs: u64, hits_d: u64, hits_d_prime: u64, alpha: f64) -> AuditResult {
        let lower = clopper_pearson_lower(hits_d, runs, alpha / 2.0);
        let upper = clopper_pearson_upper(hits_d_prime, runs, alpha / 2.0);
        let epsilon_lower_bound = if lower > 0.0 {
            (lower / upper).ln()
        } else {
            f64::NEG_INFINITY
        };
        AuditResult {
            runs,
            hits_d,
            hits_d_prime,
            alpha,
            epsilon_lower_bound,
        }
    }
}

/// One-sided Clopper–Pearson lower bound at level `1 - alpha` for `k`
/// successes in `n` trials: the `alpha` quantile of `Beta(k, n - k + 1)`
/// (0 when `k = 0`).
pub fn clopper_pearson_lower(k: u64, n: u64, alpha: f64) -> f64 {
    assert!(k <= n && n > 0 && alpha > 0.0 && alpha < 1.0);
    if k == 0 {
        return 0.0;
    }
    beta_quantile(alpha, k as f64, (n - k + 1) as f64)
}

/// One-sided Clopper–Pearson upper bound at level `1 - alpha`: the
/// `1 - alpha` quantile of `Beta(k + 1, n - k)` (1 when `k = n`).
pub fn clopper_pearson_upper(k: u64, n: u64, alpha: f64) -> f64 {
    assert!(k <= n && n > 0 && alpha > 0.0 && alpha < 1.0);
    if k == n {
        return 1.0;
    }
    beta_quantile(1.0 - alpha, (k + 1) as f64, (n - k) as f64)
}

/// The `q` quantile of `Beta(a, b)` by bisection on the regularised
/// incomplete beta function (monotone in `x`; 200 halvings reach the float
/// resolution).
fn beta_quantile(q: f64, a: f64, b: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if regularized_incomplete_beta(mid, a, b) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// `I_x(a, b)` by the continued fraction (Numerical Recipes §6.4, modified
/// Lentz), using the symmetry `I_x(a, b) = 1 - I_{1-x}(b, a)` where the
/// fraction converges fast.
fn regularized_incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let log_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        log_front.exp() * beta_continued_fraction(x, a, b) / a
    } else {
        1.0 - log_front.exp() * beta_continued_fraction(1.0 - x, b, a) / b
    }
}

fn beta_continued_fraction(x: f64, a: f64, b: f64) -> f64 {
    let tiny = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < tiny {
        d = tiny;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..100_000 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < tiny {
            d = tiny;
        }
        c = 1.0 + aa / c;
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
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; relative error ~1e-15). Also
/// used by the chi-square helper of the mechanisms' tests.
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, &c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests;
