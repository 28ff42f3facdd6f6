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
//!
//! As implemented, the errors are floating-point sums (error at most
//! `E = privacy::calibration::one_rule_float_margin` each) and the sampler
//! rounds the log-weights `-eta err` to a `2^-30` grid and samples exactly
//! ([`crate::privacy::exponential`]); one call spends
//! `2 eta (2 zeta + 2E + 3u) + 2^-29`, and `one_rule_eta` solves that for
//! `eta` so that it equals `eps_round` (`docs/privacy.md`, "DP-1R, exactly").

use super::row_lists::RowLists;
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

/// Per-column row lists and reusable buffers for the per-round computation.
pub(crate) struct OneRule {
    /// The rows to sum each literal over ([`RowLists`] says why, and notes
    /// the timing side channel its lengths open).
    lists: RowLists,
    errors: Vec<f64>,
    log_weights: Vec<f64>,
    scratch: Vec<f64>,
}

impl OneRule {
    /// Row lists for training on `features`.
    pub(crate) fn new(features: &BitMatrix) -> OneRule {
        OneRule {
            lists: RowLists::new(features),
            errors: Vec::new(),
            log_weights: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Pick a candidate index (see `Hypothesis::from_candidate_index`) given
    /// the signed weights `signed[i] = -y_i p(i)` and `p_positive = P+`.
    pub(crate) fn select(
        &mut self,
        signed: &[f64],
        p_positive: f64,
        selection: Selection<'_>,
    ) -> Result<usize, PrivacyError> {
        self.compute_errors(signed, p_positive);
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
    pub(crate) fn compute_errors(&mut self, signed: &[f64], p_positive: f64) {
        let d = self.lists.len();
        self.errors.clear();
        self.errors.resize(2 * d + 2, 0.0);
        // sum_i -y_i p(i) = P- - P+ = 1 - 2 P+.
        let total = 1.0 - 2.0 * p_positive;
        for j in 0..d {
            let (list, complement) = self.lists.get(j);
            // Four accumulators: a single float add chain would bound the
            // loop by the add latency rather than by the loads.
            let mut acc = [0.0f64; 4];
            let mut chunks = list.chunks_exact(4);
            for c in &mut chunks {
                acc[0] += signed[c[0] as usize];
                acc[1] += signed[c[1] as usize];
                acc[2] += signed[c[2] as usize];
                acc[3] += signed[c[3] as usize];
            }
            for &i in chunks.remainder() {
                acc[0] += signed[i as usize];
            }
            let sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            let sum = if complement { total - sum } else { sum };
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
