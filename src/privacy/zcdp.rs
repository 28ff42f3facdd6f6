//! Zero-concentrated DP: the accounting of the discrete Gaussian.
//!
//! Canonne, Kamath and Steinke (2020, "The Discrete Gaussian for Differential
//! Privacy"), Thm 4: adding independent discrete Gaussian noise of variance
//! `s^2` to each coordinate of an integer-valued query of L2 sensitivity `Δ`
//! is `Δ^2 / (2 s^2)`-zCDP. zCDP composes additively, also adaptively (Bun and
//! Steinke 2016, Lemma 2.3). A `rho`-zCDP mechanism is `(eps, delta)`-DP for
//! every `alpha > 1` with (CKS20, Cor. 13)
//!
//! ```text
//! delta = exp((alpha - 1)(alpha rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha
//! ```
//!
//! that is, solving for `eps`,
//!
//! ```text
//! eps(alpha) = alpha rho + (ln(1/delta) + alpha ln(1 - 1/alpha) - ln(alpha - 1)) / (alpha - 1).
//! ```
//!
//! Any `alpha` gives a valid bound, so the smallest value found over a grid of
//! `alpha` (refined by golden-section search) is a valid `eps`; it need not be
//! the exact minimum. The guarantee is the discrete Gaussian's own (no
//! continuous-Gaussian approximation is involved).

use super::PrivacyError;

/// The `eps(alpha)` of the module docs.
fn eps_at(alpha: f64, rho: f64, delta: f64) -> f64 {
    let am1 = alpha - 1.0;
    alpha * rho + ((1.0 / delta).ln() + alpha * (-1.0 / alpha).ln_1p() - am1.ln()) / am1
}

/// The `epsilon` that `rho`-zCDP implies at `delta` (CKS20 Cor. 13).
pub fn epsilon_of(rho: f64, delta: f64) -> Result<f64, PrivacyError> {
    if !(rho.is_finite() && rho > 0.0) {
        return Err(PrivacyError::InvalidParameter(format!(
            "rho must be a finite number > 0, got {rho}"
        )));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(PrivacyError::InvalidParameter(format!(
            "zCDP needs delta in (0, 1), got {delta}"
        )));
    }
    // alpha = 1 + 10^x for x on a grid over [-8, 8]: the optimum lies near
    // 1 + sqrt(ln(1/delta) / rho), inside this range for every rho and delta
    // a job can ask for.
    let steps = 1600;
    let at = |x: f64| eps_at(1.0 + 10f64.powf(x), rho, delta);
    let (mut best_x, mut best) = (-8.0, f64::INFINITY);
    for k in 0..=steps {
        let x = -8.0 + 16.0 * f64::from(k) / f64::from(steps);
        let e = at(x);
        if e < best {
            (best_x, best) = (x, e);
        }
    }
    // Golden-section refinement within one grid step on either side.
    let h = 16.0 / f64::from(steps);
    let (mut lo, mut hi) = (best_x - h, best_x + h);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..60 {
        let (a, b) = (hi - g * (hi - lo), lo + g * (hi - lo));
        if at(a) < at(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    Ok(round_up(best.min(at((lo + hi) / 2.0))))
}

/// The relative margin added to a conversion computed in doubles. `eps_at`
/// is a handful of operations (`ln`, `ln_1p`, products and one division),
/// each correctly rounded or within an ulp or two, so its relative error is
/// far below 1e-13 for every `alpha` the search visits (the terms are of
/// one sign or their sum is dominated by `ln(1/delta) >= 0`); a margin of
/// 1e-12 relative plus 1e-15 absolute turns the computed value into an upper
/// bound of the exact one (issue 26: the rho for (1, 1e-6) converted back
/// to 1 + 1.4e-16 without it).
const MARGIN: f64 = 1e-12;

/// `x` rounded up by [`MARGIN`]: an epsilon that is never below the exact
/// conversion.
fn round_up(x: f64) -> f64 {
    x * (1.0 + MARGIN) + 1e-15
}

/// The largest `rho` (to within a relative 1e-12, rounded down) whose
/// conversion meets `(epsilon, delta)`. `epsilon_of` is increasing in `rho`
/// (each `eps(alpha)` is, and so is their minimum), so bisection applies;
/// and `epsilon_of(rho) > rho`, so the answer lies in `(0, epsilon)`.
pub fn rho_for(epsilon: f64, delta: f64) -> Result<f64, PrivacyError> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(PrivacyError::InvalidParameter(format!(
            "epsilon must be a finite number > 0, got {epsilon}"
        )));
    }
    let (mut lo, mut hi) = (0.0f64, epsilon);
    for _ in 0..200 {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            break;
        }
        if epsilon_of(mid, delta)? <= epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if lo <= 0.0 {
        return Err(PrivacyError::InvalidParameter(format!(
            "no positive rho meets epsilon = {epsilon} at delta = {delta}"
        )));
    }
    Ok(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A brute-force minimum over a fine linear grid of alpha, computed from
    /// the delta form of CKS20 Cor. 13 (not from `eps_at`): for each alpha,
    /// the eps at which delta(alpha, eps) equals the target.
    fn brute(rho: f64, delta: f64) -> f64 {
        let mut best = f64::INFINITY;
        let mut alpha: f64 = 1.0005;
        while alpha < 2000.0 {
            // delta = exp((a-1)(a rho - eps)) (1-1/a)^a / (a-1); solve for eps.
            let ln_rest = alpha * (1.0 - 1.0 / alpha).ln() - (alpha - 1.0).ln();
            let eps = alpha * rho - (delta.ln() - ln_rest) / (alpha - 1.0);
            best = best.min(eps);
            alpha *= 1.0005;
        }
        best
    }

    #[test]
    fn conversion_matches_a_brute_force_minimum() {
        for (rho, delta) in [(0.5f64, 1e-6f64), (0.02, 1e-6), (1e-4, 1e-5), (3.0, 1e-9)] {
            let e = epsilon_of(rho, delta).unwrap();
            let b = brute(rho, delta);
            assert!(e <= b + 1e-9, "rho {rho}: {e} above brute force {b}");
            assert!(
                e >= b - 1e-4 * b,
                "rho {rho}: {e} far below brute force {b}"
            );
            // Never looser than the classic bound rho + 2 sqrt(rho ln(1/delta)).
            assert!(e <= rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt());
        }
    }

    /// Hand check at rho = 0.5, delta = 1e-6: the classic bound gives
    /// 0.5 + 2 sqrt(0.5 * 13.8155) = 5.7565; CKS's is about 0.5 lower.
    #[test]
    fn a_hand_computed_value() {
        let e = epsilon_of(0.5, 1e-6).unwrap();
        let classic = 0.5 + 2.0 * (0.5 * (1e6f64).ln()).sqrt();
        assert!((classic - 5.7565).abs() < 1e-3);
        assert!(e < classic - 0.3 && e > classic - 0.8, "{e}");
    }

    #[test]
    fn rho_for_inverts_the_conversion() {
        for (eps, delta) in [(1.0, 1e-6), (0.1, 1e-6), (8.0, 1e-5)] {
            let rho = rho_for(eps, delta).unwrap();
            assert!(epsilon_of(rho, delta).unwrap() <= eps);
            assert!(epsilon_of(rho * 1.0001, delta).unwrap() > eps);
        }
        assert!(rho_for(1.0, 0.0).is_err());
        // The margin: the rho for (1, 1e-6) converts back strictly below 1
        // by more than the doubles' error (issue 26, item 6).
        let rho = rho_for(1.0, 1e-6).unwrap();
        let back = epsilon_of(rho, 1e-6).unwrap();
        assert!(back <= 1.0);
        let unrounded = back / (1.0 + MARGIN);
        assert!(unrounded < 1.0 - 5e-13, "{unrounded}");
        assert!(epsilon_of(-1.0, 1e-6).is_err());
    }
}
