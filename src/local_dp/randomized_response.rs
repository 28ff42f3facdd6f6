//! k-ary randomized response: the local-DP mechanism of `privboost randomize`
//! (Warner 1965; seed 001 §13.1, PAPERS.md §1.9; docs/privacy.md, "Local DP
//! collection").
//!
//! A respondent holding one of `k` values `v` reports `v` with probability
//! `p = e^eps / (e^eps + k - 1)` and each other value with probability
//! `q = 1 / (e^eps + k - 1)`.
//!
//! # Privacy
//!
//! For any two inputs `v, v'` and any output `y`, `P(y | v) / P(y | v')` is
//! `1`, `p / q` or `q / p`, and `p / q = e^eps`: the report is `eps`-local DP
//! (seed 001 Def. 13.1). Binary RR (`k = 2`) is Warner's: truthful with
//! probability `e^eps / (e^eps + 1)`, so `eps = ln(p / (1 - p))` as in
//! PAPERS.md §1.9.
//!
//! # Sampling, exactly
//!
//! [`RandomizedResponse::sample`] draws a uniform candidate among the `k`
//! values ([`exact::uniform_below`]) and accepts the true value always, any
//! other with probability `exp(-eps')` ([`exact::bernoulli_exp`]); a rejected
//! candidate is drawn again. The output is then distributed as
//! `1 : e^-eps' : ... : e^-eps'`, i.e. exactly k-ary RR at `eps'`, where
//! `eps' = floor(eps 2^30) / 2^30 <= eps` is `eps` rounded down to a rational
//! (so the guarantee stated, `eps`, holds; the keep probability the learners
//! debias with is computed at `eps'` by [`keep_probability`]). Each attempt is
//! accepted with probability `(1 + (k - 1) e^-eps') / k` whatever `v` is, so
//! the running time does not depend on the value.

use crate::privacy::{NoiseRng, PrivacyError, exact};

/// Bits of the rational that `eps` is rounded down to.
const EPSILON_BITS: u32 = 30;

/// Largest per-value epsilon accepted: beyond it the report is the value
/// with probability `1 - 1e-300`, i.e. not randomized in any useful sense.
pub const MAX_EPSILON: f64 = 690.0;

/// k-ary randomized response over `k` values at `epsilon`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomizedResponse {
    k: u32,
    /// `eps'`: epsilon rounded down to a multiple of `2^-30` (module docs).
    epsilon_num: u128,
}

impl RandomizedResponse {
    /// RR over `k >= 2` values at `epsilon` (finite, at least `2^-30`, at most
    /// [`MAX_EPSILON`]).
    pub fn new(k: u32, epsilon: f64) -> Result<RandomizedResponse, PrivacyError> {
        if k < 2 {
            return Err(PrivacyError::InvalidParameter(format!(
                "randomized response needs at least 2 values, got {k}"
            )));
        }
        let epsilon_num = epsilon_numerator(epsilon)?;
        Ok(RandomizedResponse { k, epsilon_num })
    }

    /// Number of values.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// `eps'`, the epsilon the sampler runs at (`<=` the one asked for).
    pub fn epsilon(&self) -> f64 {
        self.epsilon_num as f64 / f64::from(1u32 << EPSILON_BITS)
    }

    /// `p`: the probability of reporting the true value.
    pub fn keep(&self) -> f64 {
        keep_probability(self.k, self.epsilon())
    }

    /// `q`: the probability of reporting one given other value.
    pub fn other(&self) -> f64 {
        other_probability(self.k, self.epsilon())
    }

    /// The report for the true value `value < k` (module docs: exact).
    pub fn sample(&self, rng: &mut NoiseRng, value: u32) -> Result<u32, PrivacyError> {
        if value >= self.k {
            return Err(PrivacyError::InvalidParameter(format!(
                "randomized response: value {value} is not below k = {}",
                self.k
            )));
        }
        loop {
            let candidate = exact::uniform_below(rng, u128::from(self.k))? as u32;
            if candidate == value || exact::bernoulli_exp(rng, self.epsilon_num, 1 << EPSILON_BITS)?
            {
                return Ok(candidate);
            }
        }
    }
}

/// `epsilon` rounded down to the grid of `2^-30`, as the numerator.
fn epsilon_numerator(epsilon: f64) -> Result<u128, PrivacyError> {
    let step = f64::from(1u32 << EPSILON_BITS);
    if !(epsilon.is_finite() && epsilon * step >= 1.0 && epsilon <= MAX_EPSILON) {
        return Err(PrivacyError::InvalidParameter(format!(
            "a local epsilon must be a finite number in [2^-30, {MAX_EPSILON}], got {epsilon}"
        )));
    }
    // epsilon * 2^30 is exact (a power-of-two scaling) and below 2^40.
    Ok((epsilon * step).floor() as u128)
}

/// `epsilon` as the sampler runs it: rounded down to a multiple of `2^-30`.
/// The learners debias with the probabilities at this value.
pub fn effective_epsilon(epsilon: f64) -> Result<f64, PrivacyError> {
    Ok(epsilon_numerator(epsilon)? as f64 / f64::from(1u32 << EPSILON_BITS))
}

/// `p = e^eps / (e^eps + k - 1) = 1 / (1 + (k - 1) e^-eps)`.
pub fn keep_probability(k: u32, epsilon: f64) -> f64 {
    1.0 / (1.0 + f64::from(k - 1) * (-epsilon).exp())
}

/// `q = (1 - p) / (k - 1) = e^-eps / (1 + (k - 1) e^-eps)`.
pub fn other_probability(k: u32, epsilon: f64) -> f64 {
    let e = (-epsilon).exp();
    e / (1.0 + f64::from(k - 1) * e)
}

/// The unbiased estimate of an indicator from its randomized report.
///
/// An indicator `x` that is 1 on `m` of the `k` values (a literal that a
/// set of `m` values lights) has `E[x~] = m q + (p - q) x` after RR, so
/// `x^ = (x~ - m q) / (p - q)` has `E[x^] = x` (for `m = 1`, `k = 2`:
/// PAPERS.md §1.9's `(X - (1 - p)) / (2p - 1)`). [`Debias::apply`] computes
/// it; being linear, it also debiases weighted sums of indicators.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Debias {
    /// `m q`.
    pub offset: f64,
    /// `p - q` (> 0 for any eps > 0).
    pub scale: f64,
}

impl Debias {
    /// The estimator for an indicator lit by `m` of the `k` values of RR at
    /// `epsilon`.
    pub fn new(k: u32, m: u32, epsilon: f64) -> Debias {
        let (p, q) = (keep_probability(k, epsilon), other_probability(k, epsilon));
        Debias {
            offset: f64::from(m) * q,
            scale: p - q,
        }
    }

    /// The unbiased estimate `(observed - m q) / (p - q)`.
    pub fn apply(&self, observed: f64) -> f64 {
        (observed - self.offset) / self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::testutil::chi_square_p_value;

    /// Output counts of `draws` reports of `value` under RR(k, eps).
    fn histogram(seed: u64, k: u32, epsilon: f64, value: u32, draws: u32) -> Vec<u64> {
        let rr = RandomizedResponse::new(k, epsilon).unwrap();
        let mut rng = NoiseRng::seeded(seed);
        let mut counts = vec![0u64; k as usize];
        for _ in 0..draws {
            counts[rr.sample(&mut rng, value).unwrap() as usize] += 1;
        }
        counts
    }

    fn rr_probabilities(k: u32, epsilon: f64, value: u32) -> Vec<f64> {
        (0..k)
            .map(|v| {
                if v == value {
                    keep_probability(k, epsilon)
                } else {
                    other_probability(k, epsilon)
                }
            })
            .collect()
    }

    /// The reports follow the RR probabilities (chi-square at p > 1e-4),
    /// for binary and k-ary RR, small and large epsilon.
    #[test]
    fn reports_follow_the_rr_probabilities() {
        for (seed, k, epsilon, value) in [(1, 2, 1.0, 0), (2, 5, 0.5, 3), (3, 16, 2.0, 7)] {
            let counts = histogram(seed, k, epsilon, value, 200_000);
            let p = chi_square_p_value(&counts, &rr_probabilities(k, epsilon, value));
            assert!(p > 1e-4, "k={k} eps={epsilon}: p = {p}, counts {counts:?}");
        }
    }

    /// A sampler running at twice (or half) the epsilon is caught: the
    /// reports of RR at 2 eps fail the test of RR at eps, and conversely.
    #[test]
    fn a_wrong_epsilon_is_detected() {
        let (k, epsilon, value) = (5, 0.5, 1);
        let doubled = histogram(4, k, 2.0 * epsilon, value, 200_000);
        let p = chi_square_p_value(&doubled, &rr_probabilities(k, epsilon, value));
        assert!(p < 1e-10, "RR at 2 eps passed as eps: p = {p}");
        let halved = histogram(5, k, epsilon, value, 200_000);
        let p = chi_square_p_value(&halved, &rr_probabilities(k, 2.0 * epsilon, value));
        assert!(p < 1e-10, "RR at eps passed as 2 eps: p = {p}");
    }

    /// The ratio bound of the proof: p / q = e^eps, and the probabilities
    /// sum to 1.
    #[test]
    fn keep_over_other_is_e_to_the_epsilon() {
        for (k, epsilon) in [(2u32, 0.2007), (3, 1.0), (40, 4.0)] {
            let (p, q) = (keep_probability(k, epsilon), other_probability(k, epsilon));
            assert!((p / q - epsilon.exp()).abs() < 1e-12 * epsilon.exp());
            assert!((p + f64::from(k - 1) * q - 1.0).abs() < 1e-12);
        }
        // Warner's survey (PAPERS.md §1.9): p = 0.55 at eps = ln(11/9).
        assert!((keep_probability(2, (11.0f64 / 9.0).ln()) - 0.55).abs() < 1e-12);
    }

    /// The debiased indicator is unbiased: over many seeded reports of a
    /// column, the mean estimate of each literal is its true value within
    /// 5 standard errors (its variance: Var(x~) / (p - q)^2 per report).
    #[test]
    fn debiased_indicator_is_unbiased() {
        let (k, epsilon, value, draws) = (6u32, 1.0, 2u32, 100_000u32);
        let counts = histogram(6, k, epsilon, value, draws);
        let rr = RandomizedResponse::new(k, epsilon).unwrap();
        // Single values (m = 1) and a threshold literal lit by values 0..=2
        // (m = 3), which the true value 2 lights.
        let mut cases: Vec<(Vec<u32>, f64)> = (0..k)
            .map(|v| (vec![v], f64::from(u8::from(v == value))))
            .collect();
        cases.push((vec![0, 1, 2], 1.0));
        cases.push((vec![3, 4, 5], 0.0));
        for (lit_by, truth) in cases {
            let m = lit_by.len() as u32;
            let debias = Debias::new(k, m, rr.epsilon());
            let hits: u64 = lit_by.iter().map(|&v| counts[v as usize]).sum();
            let observed = hits as f64 / f64::from(draws);
            let estimate = debias.apply(observed);
            let mean_report = debias.offset + debias.scale * truth;
            let se = (mean_report * (1.0 - mean_report) / f64::from(draws)).sqrt() / debias.scale;
            assert!(
                (estimate - truth).abs() < 5.0 * se,
                "lit by {lit_by:?}: estimate {estimate}, truth {truth}, se {se}"
            );
        }
        // Warner's estimator: m = 1, k = 2 is (X - (1 - p)) / (2p - 1).
        let d = Debias::new(2, 1, (11.0f64 / 9.0).ln());
        assert!((d.apply(0.6) - 10.0 * (0.6 - 0.45)).abs() < 1e-12);
    }

    /// The inverse the learners use for a column the ensemble votes on, and
    /// (k = 2) for the label: for any `f` of the true value,
    /// `f^(v~) = (f(v~) - q sum_v f(v)) / (p - q)` is unbiased
    /// (`learn::lazybb::local`). Mean over seeded reports within 5
    /// standard errors, for every true value.
    #[test]
    fn the_inverse_is_unbiased_for_any_function() {
        for (k, epsilon, f) in [
            (4u32, 0.8, vec![0.3, -1.2, 2.5, 0.0]),
            (2, 1.1, vec![0.7, -0.4]),
        ] {
            let rr = RandomizedResponse::new(k, epsilon).unwrap();
            let (q, scale) = (rr.other(), rr.keep() - rr.other());
            let total: f64 = f.iter().sum();
            let mut rng = NoiseRng::seeded(11 + u64::from(k));
            for value in 0..k {
                let draws = 50_000;
                let estimates: Vec<f64> = (0..draws)
                    .map(|_| {
                        let v = rr.sample(&mut rng, value).unwrap() as usize;
                        (f[v] - q * total) / scale
                    })
                    .collect();
                let mean = estimates.iter().sum::<f64>() / f64::from(draws);
                let var = estimates.iter().map(|e| (e - mean).powi(2)).sum::<f64>()
                    / f64::from(draws - 1);
                let se = (var / f64::from(draws)).sqrt();
                let truth = f[value as usize];
                assert!(
                    (mean - truth).abs() < 5.0 * se,
                    "k={k} value {value}: {mean} vs {truth} (se {se})"
                );
            }
        }
    }

    #[test]
    fn refuses_bad_parameters() {
        assert!(RandomizedResponse::new(1, 1.0).is_err());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-12, 1000.0] {
            assert!(RandomizedResponse::new(2, bad).is_err(), "{bad}");
        }
        let rr = RandomizedResponse::new(3, 1.0).unwrap();
        assert!(rr.sample(&mut NoiseRng::seeded(1), 3).is_err());
        // eps is rounded down, never up.
        let rr = RandomizedResponse::new(2, 0.1).unwrap();
        assert!(rr.epsilon() <= 0.1 && 0.1 - rr.epsilon() < 1e-9);
    }
}
