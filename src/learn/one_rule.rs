//! The DP 1-Rule weak learner (LazyBB §4.1, Alg 3; SPEC §4.2).
//!
//! Candidates: every literal `x_j`, its negation, and the constants `+1` and
//! `-1` (`|H| = 2d + 2`). The weighted error under the normalised weights `p`
//! is `err(h) = sum_i p(i) [h(x_i) != y_i]`. With `P+ = p(y = +1)`:
//!
//! - `err(x_j) = P+ + sum_{i : x_ij = 1} (-y_i p(i))` (a row with the literal
//!   true is an error iff `y = -1`; a row with it false iff `y = +1`);
//! - `err(not x_j) = 1 - err(x_j)`, `err(+1) = 1 - P+`, `err(-1) = P+`.
//!
//! So one pass over the set bits of each literal, accumulating the signed
//! weights `-y_i p(i)`, gives all `2d + 2` errors.
//!
//! # Privacy
//!
//! Neighbouring datasets differ by substituting one row `i*`, and LazyBB hands
//! the learner kappa-smooth weights, `p(i) <= zeta = 1/(kappa n)`, whose total
//! variation distance to the neighbour's weights is at most `zeta` (LazyBB §3,
//! Bun–Carmosino–Sorrell 2020). For any `h`, `err(h)` changes by at most
//! `max(p(i*), p'(i*)) <= zeta` through the substituted row plus at most
//! `d(p, p') <= zeta` through all the others: the robust sensitivity is
//! `Delta = 2 zeta` (LazyBB Obs 8.1, with the substituted row accounted for;
//! PAPERS.md §1.4). The exponential mechanism with `P(h) ∝ exp(-eta err(h))`
//! is then `2 eta Delta = 4 eta zeta`-DP (LazyBB Thm 2.13, 4.1), and
//! `eta = eps_round kappa n / 4` spends exactly `eps_round` per call
//! ([`crate::privacy::calibration::one_rule_eta`]). `docs/privacy.md` has the
//! full argument.

use crate::data::BitMatrix;
use crate::privacy::{NoiseRng, PrivacyError, exponential};

/// How the learner picks among the candidates.
pub(crate) enum Selection<'a> {
    /// The weighted exponential mechanism with noise rate `eta`.
    Exponential {
        /// `P(h) ∝ exp(-eta err(h))`.
        eta: f64,
        /// The noise source.
        rng: &'a mut NoiseRng,
    },
    /// The candidate with the least error (lowest index on ties): the
    /// non-private 1-Rule.
    Best,
}

/// Reusable buffers for the per-round computation.
#[derive(Default)]
pub(crate) struct OneRule {
    errors: Vec<f64>,
    log_weights: Vec<f64>,
    scratch: Vec<f64>,
}

impl OneRule {
    /// Pick a candidate index (see `Hypothesis::from_candidate_index`) given
    /// the signed weights `signed[i] = -y_i p(i)` and `p_positive = P+`.
    pub(crate) fn select(
        &mut self,
        features: &BitMatrix,
        signed: &[f64],
        p_positive: f64,
        selection: Selection<'_>,
    ) -> Result<usize, PrivacyError> {
        self.compute_errors(features, signed, p_positive);
        match selection {
            Selection::Best => Ok(argmin(&self.errors)),
            Selection::Exponential { eta, rng } => {
                self.log_weights.clear();
                self.log_weights
                    .extend(self.errors.iter().map(|e| -eta * e));
                exponential::sample_with_scratch(rng, &self.log_weights, &mut self.scratch)
            }
        }
    }

    /// The `2d + 2` weighted errors, in candidate order.
    pub(crate) fn compute_errors(&mut self, features: &BitMatrix, signed: &[f64], p_positive: f64) {
        let d = features.n_cols();
        self.errors.clear();
        self.errors.resize(2 * d + 2, 0.0);
        for j in 0..d {
            let mut sum = 0.0;
            for (w, &word) in features.column(j).iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let i = w * 64 + bits.trailing_zeros() as usize;
                    sum += signed[i];
                    bits &= bits - 1;
                }
            }
            let err = p_positive + sum;
            self.errors[j] = err;
            self.errors[d + j] = 1.0 - err;
        }
        self.errors[2 * d] = 1.0 - p_positive;
        self.errors[2 * d + 1] = p_positive;
    }

    /// The errors from the last call (for tests).
    #[cfg(test)]
    pub(crate) fn errors(&self) -> &[f64] {
        &self.errors
    }
}

fn argmin(values: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v < values[best] {
            best = i;
        }
    }
    best
}
