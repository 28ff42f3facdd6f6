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
//! So the sums of the signed weights `-y_i p(i)` over each literal's set
//! rows give all `2d + 2` errors. One streaming pass over per-row column
//! codes computes them all ([`ColumnCodes`]), with work that depends on n,
//! d and the schema's one-hot groups only, never on the literals' densities
//! (`docs/privacy.md`, "Timing").
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
//! PAPERS.md §1.4). The learner picks a candidate by report-noisy-max on the
//! scores `-err(h)` with Laplace noise of scale `1 / eta`
//! ([`crate::privacy::laplace::report_noisy_max`]), which is
//! `2 eta Delta = 4 eta zeta`-DP (Dwork–Roth Claim 3.9; LazyBB Thm 2.14), the
//! same as the exponential mechanism `P(h) ∝ exp(-eta err(h))` of LazyBB
//! §4.1, so `eta = eps_round kappa n / 4` spends `eps_round` per call
//! ([`crate::privacy::calibration::one_rule_eta`]). Report-noisy-max replaced
//! the exponential mechanism because its running time does not depend on
//! the scores (the rejection sampler's did); the selection distribution
//! differs (Laplace instead of Gumbel noise on the scores), the guarantee does
//! not. `docs/privacy.md` has the full argument.
//!
//! As implemented, the errors are floating-point sums (error at most
//! `E = privacy::calibration::one_rule_float_margin` each) and the mechanism
//! rounds `fl(-err / fl(1 / eta))` to a `2^-30` grid and adds exact discrete
//! Laplace noise; one call spends `2 eta (1 + 3u) (2 zeta + 2E + 3u) + 2^-29`,
//! and `one_rule_eta` solves that for `eta` so that it equals `eps_round`
//! (`docs/privacy.md`, "DP-1R, exactly").

use std::ops::Range;

pub(crate) use super::column_codes::ClassWeights;
use super::column_codes::ColumnCodes;
use super::row_lists::GroupError;
use crate::data::BitMatrix;
use crate::privacy::{NoiseRng, PrivacyError, laplace};

/// How the learner picks among the candidates.
pub(crate) enum Selection<'a> {
    /// Report-noisy-max on `-err(h)` with Laplace noise of scale `1 / eta`.
    NoisyMax {
        /// The noise rate (inverse Laplace scale, in error units).
        eta: f64,
        /// The noise source.
        rng: &'a mut NoiseRng,
    },
    /// The candidate with the least error (lowest index on ties): the
    /// non-private 1-Rule.
    Best,
}

/// Per-row column codes and reusable buffers for the per-round computation.
pub(crate) struct OneRule {
    /// The literals as per-row codes ([`ColumnCodes`] says why).
    codes: ColumnCodes,
    sums: Vec<f64>,
    errors: Vec<f64>,
    scores: Vec<f64>,
}

impl OneRule {
    /// Codes for training on `features` with its one-hot literal `groups`
    /// ([`ColumnCodes::new`]).
    pub(crate) fn new(
        features: &BitMatrix,
        groups: &[Range<usize>],
    ) -> Result<OneRule, GroupError> {
        Ok(OneRule {
            codes: ColumnCodes::new(features, groups)?,
            sums: Vec::new(),
            errors: Vec::new(),
            scores: Vec::new(),
        })
    }

    /// Pick a candidate index (see `Hypothesis::from_candidate_index`) given
    /// the signed weights `w_i = -y_i p(i)` by class and `p_positive = P+`.
    pub(crate) fn select(
        &mut self,
        weights: ClassWeights<'_>,
        p_positive: f64,
        selection: Selection<'_>,
    ) -> Result<usize, PrivacyError> {
        self.compute_errors(weights, p_positive);
        match selection {
            Selection::Best => Ok(argmin(&self.errors)),
            Selection::NoisyMax { eta, rng } => {
                self.scores.clear();
                self.scores.extend(self.errors.iter().map(|e| -e));
                laplace::report_noisy_max(rng, &self.scores, 1.0 / eta)
            }
        }
    }

    /// The `2d + 2` weighted errors, in candidate order.
    pub(crate) fn compute_errors(&mut self, weights: ClassWeights<'_>, p_positive: f64) {
        let d = self.codes.len();
        self.codes.literal_sums(weights, &mut self.sums);
        self.errors.clear();
        self.errors.resize(2 * d + 2, 0.0);
        for (j, &sum) in self.sums.iter().enumerate() {
            let err = p_positive + sum;
            self.errors[j] = err;
            self.errors[d + j] = 1.0 - err;
        }
        self.errors[2 * d] = 1.0 - p_positive;
        self.errors[2 * d + 1] = p_positive;
    }

    /// [`Self::compute_errors`] with one weight per row (`signed[i]` for row
    /// i; a last entry, the row lists' sentinel, is ignored). For tests.
    #[cfg(test)]
    pub(crate) fn compute_errors_per_row(&mut self, signed: &[f64], p_positive: f64) {
        let n = self.codes.n_rows();
        let class: Vec<i32> = (0..n as i32).collect();
        self.compute_errors(
            ClassWeights {
                class: &class,
                of_class: &signed[..n],
            },
            p_positive,
        );
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
