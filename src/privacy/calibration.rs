//! Privacy budgets and their split over boosting rounds.
//!
//! LazyBB calls a pure-DP weak learner once per round, `tau` times.
//!
//! - **Pure DP** (`delta = 0`): basic composition, each round gets
//!   `epsilon / tau` (LazyBB Thm 4.2; PAPERS.md §1.6).
//! - **Approximate DP** (`delta > 0`): advanced composition in the
//!   Dwork–Rothblum–Vadhan form (LazyBB Thm 2.8 / 3.1) with `delta' = delta`
//!   and `delta_b = 0` per round:
//!   `epsilon = sqrt(2 tau ln(1/delta)) eps_b + tau eps_b (e^eps_b - 1)`.
//!   We solve it for the largest `eps_b` by bisection and keep whichever of
//!   that and `epsilon / tau` is larger (both are valid bounds, so the larger
//!   per-round budget is still `(epsilon, delta)`-DP overall; SPEC §4.4).

use serde::{Deserialize, Serialize};

use super::PrivacyError;

/// A total privacy budget `(epsilon, delta)`, checked on construction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    epsilon: f64,
    delta: f64,
}

impl Budget {
    /// `epsilon` must be finite and > 0; `delta` in `[0, 1)`.
    pub fn new(epsilon: f64, delta: f64) -> Result<Budget, PrivacyError> {
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(PrivacyError::InvalidParameter(format!(
                "epsilon must be a finite number > 0, got {epsilon}"
            )));
        }
        if !(delta.is_finite() && (0.0..1.0).contains(&delta)) {
            return Err(PrivacyError::InvalidParameter(format!(
                "delta must be in [0, 1), got {delta}"
            )));
        }
        Ok(Budget { epsilon, delta })
    }

    /// The total epsilon.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The total delta (0 for pure DP).
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// Which composition theorem gave the per-round budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Composition {
    /// `epsilon / tau` per round (sequential composition).
    Basic,
    /// Dwork–Rothblum–Vadhan advanced composition with `delta' = delta`.
    Advanced,
}

/// The per-round pure-DP budget and how it was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundBudget {
    /// Pure epsilon spent by each of the `tau` weak-learner calls.
    pub epsilon_round: f64,
    /// The composition theorem that gave `epsilon_round`.
    pub composition: Composition,
}

/// Right-hand side of advanced composition (LazyBB Thm 2.8):
/// the total epsilon of `tau` pure `eps_b`-DP steps at slack `delta`.
pub fn advanced_composition_epsilon(eps_b: f64, tau: u32, delta: f64) -> f64 {
    let tau = f64::from(tau);
    (2.0 * tau * (1.0 / delta).ln()).sqrt() * eps_b + tau * eps_b * eps_b.exp_m1()
}

/// Split `budget` over `tau >= 1` rounds (module docs give the rule).
pub fn split_over_rounds(budget: Budget, tau: u32) -> Result<RoundBudget, PrivacyError> {
    if tau == 0 {
        return Err(PrivacyError::InvalidParameter(
            "the number of rounds tau must be at least 1".into(),
        ));
    }
    let basic = budget.epsilon / f64::from(tau);
    if budget.delta == 0.0 {
        return Ok(RoundBudget {
            epsilon_round: basic,
            composition: Composition::Basic,
        });
    }
    // The right-hand side is increasing in eps_b and is 0 at 0 and at least
    // `budget.epsilon` at eps_b = epsilon (its first term alone is
    // sqrt(2 tau ln(1/delta)) * epsilon, and 2 ln(1/delta) > 1 for delta < 0.6;
    // for larger delta we widen the bracket until it holds).
    let mut hi = budget.epsilon;
    while advanced_composition_epsilon(hi, tau, budget.delta) < budget.epsilon {
        hi *= 2.0;
    }
    let mut lo = 0.0;
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if advanced_composition_epsilon(mid, tau, budget.delta) <= budget.epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // `lo` always satisfies the constraint, so rounding never overspends.
    Ok(if lo > basic {
        RoundBudget {
            epsilon_round: lo,
            composition: Composition::Advanced,
        }
    } else {
        RoundBudget {
            epsilon_round: basic,
            composition: Composition::Basic,
        }
    })
}

/// Unit roundoff of `f64`, `2^-53`.
const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// Relative slack taken off the budget before calibrating, so that the
/// handful of roundings in computing `epsilon / tau`, `zeta` and `eta`
/// themselves (each a relative error of at most `2^-53`) can never make the
/// spent epsilon exceed the stated one.
const CALIBRATION_SLACK: f64 = 1.0 / (1u64 << 30) as f64;

/// The largest `tau` that [`one_rule_eta`] (which is not told `tau`) covers:
/// `learn::params::MAX_ROUNDS`.
pub const MARGIN_MAX_ROUNDS: u32 = 10_000;

/// `E`: a bound on `|err_computed(h) - err_exact(h)|` for every candidate of
/// DP-1R in one round of LazyBB, where `err_exact` is the weighted error
/// under the exact (real-arithmetic) projection of the same margins.
///
/// ```text
/// E(n, kappa, tau) = 2 u [ (n + 2 tau + 8)  +  16 (tau + 1) (tau + ln n + |ln kappa| + 4) ]
/// ```
///
/// with `u = 2^-53`. The first term is the summation error of one error:
/// at most `n` signed weights of total absolute mass 1 summed in four
/// chains, plus `P+`, the complement `total - sum` and `1 - err` (standard
/// bound `(m - 1) u sum |x_i|`, Higham 2002 §4.2). The second bounds the
/// relative error of the weights themselves, which enters the error as an
/// absolute error since the weights sum to 1: the projection computes
/// `ln c` through at most `2 tau + 1` log-add-exp steps on values of
/// magnitude at most `lambda tau + ln n + |ln kappa| <= tau + ln n + |ln kappa|`
/// (`lambda < 1`), each with an absolute error of a few `u` times that
/// magnitude, then one `exp`, a sum over at most `2 tau + 1` classes and one
/// division. The leading factor 2 covers second-order terms
/// (`gamma_m = m u / (1 - m u)` with `m u < 2^-20`) and the libm functions
/// (`exp`, `ln`, `ln_1p`, within 1 ulp on the supported targets).
/// `docs/privacy.md` ("Floating-point margin") has the argument; for Adult
/// (`n = 32,561`, `tau = 39`) `E` is about `1.5e-11`, against
/// `zeta = 8.8e-5`.
pub fn one_rule_float_margin(n: usize, kappa: f64, tau: u32) -> f64 {
    let n = n.max(1) as f64;
    let tau = f64::from(tau);
    let summation = n + 2.0 * tau + 8.0;
    let weights = 16.0 * (tau + 1.0) * (tau + n.ln() + kappa.ln().abs() + 4.0);
    2.0 * (summation + weights) * UNIT_ROUNDOFF
}

/// How much larger than the intended noise rate `r` the rate actually used
/// by report-noisy-max can be: the learners pass the scale `s = fl(1 / r)`
/// (or `fl(1 / fl(8 t eta))` for TopDown's leaves), and the mechanism
/// divides by it, so the effective rate is `1 / s <= r (1 + u)^2 / (1 - u)
/// <= r (1 + 3u)`.
const SCALE_FACTOR: f64 = 1.0 + 3.0 * UNIT_ROUNDOFF;

/// The epsilon one DP-1R round actually spends with noise rate `eta`,
/// everything included (`docs/privacy.md`, "DP-1R, exactly"):
///
/// ```text
/// eps_call = 2 eta (1 + 3u) (2 zeta + 2 E + 3 u) + 2^-29
/// ```
///
/// The learner runs report-noisy-max on the scores `-err` with Laplace scale
/// `s = fl(1 / eta)` (`privacy::laplace`), which computes
/// `v = fl(-err / s)` and is `2 (L + 2^-30)`-DP when neighbours' `v` differ
/// by at most `L`. `2 zeta` is the robust sensitivity of the exact error
/// (LazyBB Obs 8.1), `2 E` the float error of the two neighbours' computed
/// errors ([`one_rule_float_margin`]), `3 u` the rounding of the two
/// divisions (at most `(1 + E) u` each, in units of `1 / s`), `1 + 3u`
/// bounds `1 / s` against `eta` (`SCALE_FACTOR`), and `2^-29` is the grid
/// ([`super::grid::GRID_EPSILON`]).
pub fn one_rule_round_epsilon(eta: f64, kappa: f64, n: usize, tau: u32) -> f64 {
    let zeta = 1.0 / (kappa * n as f64);
    let margin = one_rule_float_margin(n, kappa, tau);
    2.0 * eta * SCALE_FACTOR * (2.0 * zeta + 2.0 * margin + 3.0 * UNIT_ROUNDOFF)
        + super::grid::GRID_EPSILON
}

/// Noise rate of the DP 1-Rule weak learner for a per-round budget, when the
/// number of rounds `tau` is known (the tighter float margin).
///
/// Solves [`one_rule_round_epsilon`]`(eta) = epsilon_round` for `eta`, after
/// taking a relative `2^-30` off `epsilon_round` for the roundings of the
/// calibration itself. The idealised formula (LazyBB Thm 4.2) is
/// `eta = eps_round kappa n / 4`; the implemented one is smaller by the
/// relative factor `(2 zeta) / ((1 + 3u) (2 zeta + 2 E + 3 u))` and the `2^-29` grid, a
/// change in the 7th significant digit on Adult. Returns 0 (a uniform choice,
/// which spends nothing) if `epsilon_round` does not even cover the grid.
pub fn one_rule_eta_for_rounds(epsilon_round: f64, kappa: f64, n: usize, tau: u32) -> f64 {
    let zeta = 1.0 / (kappa * n as f64);
    let margin = one_rule_float_margin(n, kappa, tau);
    let usable = epsilon_round * (1.0 - CALIBRATION_SLACK) - super::grid::GRID_EPSILON;
    let eta = usable / (2.0 * SCALE_FACTOR * (2.0 * zeta + 2.0 * margin + 3.0 * UNIT_ROUNDOFF));
    (eta * (1.0 - CALIBRATION_SLACK)).max(0.0)
}

/// Noise rate of the DP 1-Rule weak learner for a per-round budget.
///
/// DP-1R is `4 eta zeta`-DP with `zeta = 1 / (kappa n)` in exact arithmetic
/// (LazyBB Thm 4.1/8.2; the argument is in `learn::lazybb::one_rule` and
/// `docs/privacy.md`), which gives the paper's `eta = eps_round * kappa * n / 4`
/// (Thm 4.2). This function returns the eta that meets `eps_round` *as
/// implemented*: [`one_rule_eta_for_rounds`] with the float margin for the
/// largest allowed `tau` ([`MARGIN_MAX_ROUNDS`]), valid for every run;
/// on Adult it is 0.4% below the paper's value. Callers that know `tau`
/// should use [`one_rule_eta_for_rounds`].
pub fn one_rule_eta(epsilon_round: f64, kappa: f64, n: usize) -> f64 {
    one_rule_eta_for_rounds(epsilon_round, kappa, n, MARGIN_MAX_ROUNDS)
}

/// The epsilon one DP TopDown tree with `t` splits spends with split noise
/// rate `eta`, everything included (PAPERS.md §1.5 "safe" calibration;
/// `docs/privacy.md`, "DP TopDown"):
///
/// ```text
/// 2 t [eta (1+3u) (16 zeta + 2E + 3u) + 2^-30]          t report-noisy-max selections (scale 1/eta), im of sensitivity 16 zeta
/// + 8 t eta (1+3u) (4 zeta + 4E + 8u) + 2 (t + 1) 2^-30  leaf labels: discrete Laplace of scale 1/(8 t eta) on all
///                                                         2 (t + 1) leaf masses (L1 sensitivity 4 zeta), each rounded
///                                                         to the 2^-30 grid in noise units; per-leaf argmax
/// ```
///
/// The leaf term is the Laplace mechanism on the whole vector of leaf masses
/// followed by post-processing (`docs/privacy.md`, "DP TopDown"): every
/// entry's grid value moves by at most `2^30 |change| + 1` steps, hence one
/// `2^-30` per entry and dataset pair on top of the L1 sensitivity.
///
/// `margin` is E, the caller's bound on the float error of each computed
/// `im` and each leaf mass (the learner must derive it, as
/// [`one_rule_float_margin`] does for DP-1R); `3u` and `4u` cover the
/// roundings of `im / scale` and of `mass / scale`, and `1 + 3u` bounds the
/// effective rate `1 / scale` (`SCALE_FACTOR`). In exact arithmetic this
/// is `64 t eta zeta`.
pub fn top_down_round_epsilon(eta: f64, kappa: f64, n: usize, t: u32, margin: f64) -> f64 {
    let zeta = 1.0 / (kappa * n as f64);
    let t = f64::from(t);
    let grid = super::grid::GRID;
    2.0 * t * (eta * SCALE_FACTOR * (16.0 * zeta + 2.0 * margin + 3.0 * UNIT_ROUNDOFF) + grid)
        + 8.0 * t * eta * SCALE_FACTOR * (4.0 * zeta + 4.0 * margin + 8.0 * UNIT_ROUNDOFF)
        + 2.0 * (t + 1.0) * grid
}

/// `E_td`: a bound on the float error of every Gini improvement and every
/// leaf class mass that DP TopDown computes in one round, for trees with `t`
/// internal nodes (`learn::lazybb::top_down`; `docs/privacy.md`, "DP TopDown, exactly").
///
/// ```text
/// E_td = (17 + t) E_mass + 16 u,   E_mass = one_rule_float_margin(n, kappa, tau) + 4 u
/// ```
///
/// Each cell mass is a float sum over at most `n` non-negative weights of
/// total mass at most 1 (the rows of one leaf and one class with `x_j = 1`,
/// summed by the column codes in any order; the leaf's class total, by a row
/// loop), or the leaf's total minus such a sum (`x_j = 0`): the same
/// summations, weights and complement as a DP-1R error, so its error is at
/// most `E_mass` (the `4 u` pays for the extra subtraction). The improvement is 4-Lipschitz in the L1 norm
/// of the four cell masses, so exact improvements of computed masses are off by
/// at most `16 E_mass`; evaluating `4ab/(a+b)` three times and combining them
/// adds at most `16 u` (every `wG <= 1`). The leaves' mass vector has
/// `2 (t + 1)` entries, so its L1 float error per dataset is at most
/// `2 (t + 1) E_mass`; [`top_down_round_epsilon`] charges `2 margin` per
/// dataset pair, so the margin must also be at least `(t + 1) E_mass`.
/// `(17 + t) E_mass` covers both.
pub fn top_down_float_margin(n: usize, kappa: f64, tau: u32, t: u32) -> f64 {
    let mass = one_rule_float_margin(n, kappa, tau) + 4.0 * UNIT_ROUNDOFF;
    (17.0 + f64::from(t)) * mass + 16.0 * UNIT_ROUNDOFF
}

/// Split noise rate `eta` of a DP TopDown tree with `t >= 1` splits for a
/// per-round budget: solves [`top_down_round_epsilon`]`(eta) = eps_round (1 - 2^-30)`.
/// In exact arithmetic this is PAPERS.md §1.5's `eta = eps_round kappa n / (64 t)`
/// (`epsilon kappa n / (64 tau t)` under basic composition). The leaves then
/// use `report_noisy_max(rng, &[mass_plus, mass_minus], 1.0 / (8.0 * t * eta))`.
/// Returns 0 if `eps_round` does not cover the grids.
pub fn top_down_eta(epsilon_round: f64, kappa: f64, n: usize, t: u32, margin: f64) -> f64 {
    let zeta = 1.0 / (kappa * n as f64);
    let tf = f64::from(t.max(1));
    let grid = super::grid::GRID;
    let usable = epsilon_round * (1.0 - CALIBRATION_SLACK) - (4.0 * tf + 2.0) * grid;
    let per_eta = SCALE_FACTOR
        * (2.0 * tf * (16.0 * zeta + 2.0 * margin + 3.0 * UNIT_ROUNDOFF)
            + 16.0 * tf * (2.0 * zeta + 2.0 * margin + 4.0 * UNIT_ROUNDOFF));
    ((usable / per_eta) * (1.0 - CALIBRATION_SLACK)).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADULT_N: usize = 32_561;

    fn eta(epsilon: f64, delta: f64, kappa: f64, tau: u32) -> f64 {
        let round = split_over_rounds(Budget::new(epsilon, delta).unwrap(), tau).unwrap();
        one_rule_eta_for_rounds(round.epsilon_round, kappa, ADULT_N, tau)
    }

    /// PAPERS.md appendix, "worked numbers": eta = eps kappa n / (4 tau).
    #[test]
    fn pure_dp_eta_matches_hand_computed_values() {
        for (epsilon, kappa, tau, expected) in [
            (0.4, 0.35, 9, 126.626),
            (1.0, 0.35, 39, 73.054),
            (0.05, 0.5, 5, 40.701),
            (3.0, 0.35, 99, 86.336),
            (5.0, 0.35, 75, 189.939),
        ] {
            let got = eta(epsilon, 0.0, kappa, tau);
            assert!((got - expected).abs() < 1e-3, "{epsilon}/{tau}: {got}");
        }
        let zeta = 1.0 / (0.35 * ADULT_N as f64);
        assert!((zeta - 8.7747e-5).abs() < 1e-8);
    }

    /// PAPERS.md appendix: delta = 1e-5 gives a larger eta when tau is large.
    #[test]
    fn approximate_dp_eta_matches_hand_computed_values() {
        for (epsilon, tau, expected) in [(1.0, 39, 91.21), (3.0, 99, 159.88), (5.0, 75, 287.65)] {
            let got = eta(epsilon, 1e-5, 0.35, tau);
            assert!((got - expected).abs() < 0.01, "{epsilon}/{tau}: {got}");
        }
        // Basic composition wins at small tau.
        let round = split_over_rounds(Budget::new(0.4, 1e-5).unwrap(), 9).unwrap();
        assert_eq!(round.composition, Composition::Basic);
        assert!((eta(0.4, 1e-5, 0.35, 9) - 126.626).abs() < 1e-3);
    }

    /// PAPERS.md §1.6 table: per-round epsilon at tau = 99, delta' = 1e-5.
    #[test]
    fn advanced_solution_matches_table_and_is_feasible() {
        for (epsilon, expected) in [
            (0.1, 0.00209),
            (0.5, 0.01025),
            (1.0, 0.02010),
            (2.0, 0.03872),
            (4.0, 0.07248),
        ] {
            let round = split_over_rounds(Budget::new(epsilon, 1e-5).unwrap(), 99).unwrap();
            assert_eq!(round.composition, Composition::Advanced);
            assert!((round.epsilon_round - expected).abs() < 1e-5, "{epsilon}");
            let total = advanced_composition_epsilon(round.epsilon_round, 99, 1e-5);
            assert!(total <= epsilon && total > epsilon * (1.0 - 1e-9));
        }
    }

    /// The calibrated eta never spends more than the round's budget, and
    /// wastes at most a relative 1e-6 of it on Adult-sized data.
    #[test]
    fn calibrated_eta_meets_the_round_budget_exactly() {
        for n in [1usize, 10, 1000, ADULT_N, 1 << 26] {
            for kappa in [1e-6, 0.1, 0.35, 0.99] {
                for tau in [1u32, 39, 10_000] {
                    for eps_round in [1e-8, 1e-4, 0.01, 1.0, 50.0] {
                        let eta = one_rule_eta_for_rounds(eps_round, kappa, n, tau);
                        let spent = one_rule_round_epsilon(eta, kappa, n, tau);
                        assert!(spent <= eps_round, "{n} {kappa} {tau} {eps_round}: {spent}");
                        let worst = one_rule_eta(eps_round, kappa, n);
                        assert!(worst <= eta);
                        assert!(one_rule_round_epsilon(worst, kappa, n, tau) <= eps_round);
                    }
                }
            }
        }
        let eps_round = 1.0 / 39.0;
        let eta = one_rule_eta_for_rounds(eps_round, 0.35, ADULT_N, 39);
        let spent = one_rule_round_epsilon(eta, 0.35, ADULT_N, 39);
        assert!(spent > eps_round * (1.0 - 1e-6), "{spent}");
        let ideal = eps_round * 0.35 * ADULT_N as f64 / 4.0;
        assert!(
            eta < ideal && eta > ideal * (1.0 - 1e-6),
            "{eta} vs {ideal}"
        );
        // The tau-free version is within 0.5% of the paper's formula on Adult.
        let worst = one_rule_eta(eps_round, 0.35, ADULT_N);
        assert!(worst > ideal * 0.995, "{worst} vs {ideal}");
        // A budget below the grid's cost gives eta = 0.
        assert_eq!(one_rule_eta_for_rounds(1e-10, 0.35, ADULT_N, 39), 0.0);
    }

    /// TopDown: within budget, and the paper-erratum formula in the limit.
    #[test]
    fn top_down_eta_meets_the_round_budget() {
        for n in [10usize, ADULT_N, 1 << 26] {
            for t in [1u32, 3, 8] {
                for eps_round in [1e-6, 0.01, 1.0] {
                    let margin = 1e-12;
                    let eta = top_down_eta(eps_round, 0.35, n, t, margin);
                    let spent = top_down_round_epsilon(eta, 0.35, n, t, margin);
                    assert!(spent <= eps_round, "{n} {t} {eps_round}: {spent}");
                }
            }
        }
        let eps_round = 1.0 / 39.0;
        let eta = top_down_eta(eps_round, 0.35, ADULT_N, 3, 1e-11);
        let ideal = eps_round * 0.35 * ADULT_N as f64 / (64.0 * 3.0);
        assert!(
            eta < ideal && eta > ideal * (1.0 - 1e-5),
            "{eta} vs {ideal}"
        );
    }

    #[test]
    fn invalid_budgets_are_rejected() {
        for (e, d) in [
            (0.0, 0.0),
            (-1.0, 0.0),
            (f64::NAN, 0.0),
            (f64::INFINITY, 0.0),
            (1.0, -0.1),
            (1.0, 1.0),
            (1.0, f64::NAN),
        ] {
            assert!(Budget::new(e, d).is_err(), "{e} {d}");
        }
        assert!(split_over_rounds(Budget::new(1.0, 0.0).unwrap(), 0).is_err());
    }

    #[test]
    fn large_delta_still_brackets() {
        let round = split_over_rounds(Budget::new(0.01, 0.9).unwrap(), 3).unwrap();
        assert!(advanced_composition_epsilon(round.epsilon_round, 3, 0.9) <= 0.01 + 1e-12);
    }
}
