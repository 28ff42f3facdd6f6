//! The DP-EBM paper's calibration for *continuous* Gaussian noise under the
//! add/remove relation (Nori, Caruana et al. 2021, Thms 6-7; PAPERS.md §1.8),
//! kept for comparison only. privboost charges what the zCDP conversion
//! ([`super::zcdp`]) proves for the discrete noise it actually adds.
//!
//! - `mu`-GDP implies `(eps, delta)` with
//!   `delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`
//!   (Dong, Roth, Su 2019, Cor. 2.13), increasing in `mu`, so `mu` is found
//!   by bisection;
//! - E*K iterations of `1/sigma`-GDP compose to `sqrt(E K)/sigma`-GDP, so
//!   `sigma = sqrt(E K) / mu` (EBM-GDP);
//! - EBM-Classic (Kairouz et al.): `sigma = sqrt(8 E K log(e + eps/delta)) / eps`.

/// `erfc(x)` for `x >= 0`: an all-positive series for `erf` below 2.5
/// (no cancellation) and a Lentz continued fraction above (A&S 7.1.6,
/// 7.1.14); relative error ~1e-14 on the ranges tested.
fn erfc_nonneg(x: f64) -> f64 {
    if x < 2.5 {
        // erf(x) = 2/sqrt(pi) e^{-x^2} sum_n 2^n x^{2n+1} / (1*3*...*(2n+1))
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term > 1e-17 * sum {
            n += 1.0;
            term *= 2.0 * x * x / (2.0 * n + 1.0);
            sum += term;
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp() * sum
    } else {
        // erfc(x) = e^{-x^2}/sqrt(pi) * 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        let tiny = 1e-300;
        let mut f = x;
        let mut c = x;
        let mut d = 0.0;
        for k in 1..300 {
            let a = k as f64 / 2.0;
            d = x + a * d;
            d = if d.abs() < tiny { tiny } else { d };
            c = x + a / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < 1e-16 {
                break;
            }
        }
        (-x * x).exp() / std::f64::consts::PI.sqrt() / f
    }
}

/// The standard normal CDF `Phi(x) = erfc(-x/sqrt 2)/2`.
pub fn phi(x: f64) -> f64 {
    let z = x / std::f64::consts::SQRT_2;
    if z <= 0.0 {
        erfc_nonneg(-z) / 2.0
    } else {
        1.0 - erfc_nonneg(z) / 2.0
    }
}

/// `delta` of `mu`-GDP at `eps` (DRS19 Cor. 2.13).
pub fn delta(eps: f64, mu: f64) -> f64 {
    phi(-eps / mu + mu / 2.0) - eps.exp() * phi(-eps / mu - mu / 2.0)
}

/// The largest `mu` with `delta(eps, mu) <= delta_target`, by bisection.
pub fn mu_for(eps: f64, delta_target: f64) -> Option<f64> {
    if !(eps > 0.0 && eps.is_finite() && delta_target > 0.0 && delta_target < 1.0) {
        return None;
    }
    let (mut lo, mut hi) = (1e-6f64, 100.0f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if delta(eps, mid) <= delta_target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// EBM-GDP: `sigma = sqrt(iterations) / mu` (paper Thm 7).
pub fn sigma_gdp(iterations: u64, eps: f64, delta_target: f64) -> Option<f64> {
    Some((iterations as f64).sqrt() / mu_for(eps, delta_target)?)
}

/// EBM-Classic: `sigma = sqrt(8 k log(e + eps/delta)) / eps` (paper §3, Kairouz et al.).
pub fn sigma_classic(iterations: u64, eps: f64, delta_target: f64) -> f64 {
    (8.0 * iterations as f64 * (std::f64::consts::E + eps / delta_target).ln()).sqrt() / eps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phi_known_values() {
        // Reference values (A&S tables / mpmath).
        assert!((phi(0.0) - 0.5).abs() < 1e-15);
        assert!((phi(-1.0) - 0.158_655_253_931_457_05).abs() < 1e-13);
        assert!((phi(-3.0) / 1.349_898_031_630_094_5e-3 - 1.0).abs() < 1e-11);
        assert!((phi(-5.0) / 2.866_515_718_791_939e-7 - 1.0).abs() < 1e-11);
        assert!((phi(2.0) - 0.977_249_868_051_820_8).abs() < 1e-13);
    }

    /// PAPERS.md §1.8's table: Adult, K = 14, E = 300, eps_train = 0.9 eps,
    /// delta_train = 5e-7.
    #[test]
    fn reproduces_the_papers_table() {
        for (eps, mu, sigma, classic) in [
            (0.5, 0.1085, 597.3, 1508.3),
            (1.0, 0.2077, 312.1, 773.0),
            (2.0, 0.3950, 164.1, 395.7),
            (4.0, 0.7424, 87.3, 202.3),
            (8.0, 1.3674, 47.4, 103.4),
        ] {
            let m = mu_for(0.9 * eps, 5e-7).unwrap();
            assert!((m - mu).abs() < 1e-4, "eps {eps}: mu {m}");
            let s = sigma_gdp(4200, 0.9 * eps, 5e-7).unwrap();
            assert!((s - sigma).abs() < 0.1, "eps {eps}: sigma {s}");
            let c = sigma_classic(4200, 0.9 * eps, 5e-7);
            assert!((c - classic).abs() < 0.1, "eps {eps}: classic {c}");
        }
    }

    #[test]
    fn binning_sigma_at_eps_1() {
        // 14 histograms at eps_bin = 0.1, delta_bin = 5e-7 (GDP, sensitivity 1 each).
        let s = sigma_gdp(14, 0.1, 5e-7).unwrap();
        assert!((s - 141.7).abs() < 0.1, "sigma_bin {s}");
    }
}
