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
//! `2 eta Delta = 4 eta zeta`-DP (`privacy::laplace`'s two-sided proof; LazyBB Thm 2.14), the
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
use super::groups::GroupError;
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

    /// On rows randomized on the client (local DP): the candidate with the
    /// least *debiased* error, with no noise (the release is already
    /// private; this is post-processing). `signed` and `p_positive` are
    /// computed from the randomized labels, as in [`OneRule::select`].
    pub(crate) fn select_debiased(
        &mut self,
        signed: &[f64],
        p_positive: f64,
        debias: &LocalDebias,
        corrections: Option<&[LiteralCorrection]>,
    ) -> usize {
        // One weight per row: each row is its own class.
        let n = self.codes.n_rows();
        let rows: Vec<i32> = (0..n as i32).collect();
        self.compute_errors(
            ClassWeights {
                class: &rows,
                of_class: &signed[..n],
            },
            p_positive,
        );
        // sum_i p(i)^2: the variance scale.
        let w2: f64 = signed.iter().map(|w| w * w).sum();
        debias.apply(&mut self.errors, p_positive, w2, corrections);
        argmin(&self.errors)
    }

    /// [`Self::compute_errors`] with one weight per row (`signed[i]` for row
    /// i). For tests.
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

/// Unbiased weighted errors from randomized rows (docs/privacy.md, "Local
/// DP collection"; `local_dp::randomized_response::Debias`).
///
/// With the weights `p` fixed, the label reported by binary RR has
/// `E[y~] = g y` with `g = 2 p_y - 1`, and a literal lit by `m` of its
/// column's `k` values has `E[x~] = m q + (p - q) x`, independently of the
/// label (each column is randomized on its own). So for
/// `S~_j = sum_i -y~_i p(i) x~_ij` and `T~ = sum_i -y~_i p(i) = 1 - 2 P~+`:
/// `E[S~_j] = g (m q T + (p - q) S_j)` and `E[T~] = g T`, whence the
/// unbiased `S^_j = (S~_j - m q T~) / (g (p - q))`, `T^ = T~ / g`,
/// `P^+ = (1 - T^) / 2`, and `err^(x_j) = P^+ + S^_j` (the other candidates'
/// errors follow as in the module docs). Boosting re-weights rows by their
/// margins on the randomized rows, so after round 1 the weights depend on
/// the row's own reports: `super::local` debiases the weights over the label
/// (then `g = 1` here) and corrects the columns the ensemble votes on
/// ([`ColumnRr`]); the other columns' reports still enter the weights.
///
/// The estimates of rare values in wide columns have a large variance
/// (`1 / (p - q)` grows with k), so the plain argmin picks noise. The
/// learner takes the least upper confidence bound `err^ + z sd` instead,
/// with `sd` bounding each estimate's standard deviation from the public
/// RR probabilities and the weights:
/// `Var(S^_j) <= sum p(i)^2 E[(x~ - m q)^2] / (g (p - q))^2`, where
/// `E[(x~ - m q)^2] <= (p + (m - 1) q)(1 - 2 m q) + (m q)^2` whatever the
/// true value; for the constants `Var(P^+) <= sum p(i)^2 / (4 g^2)`. A
/// function of the randomized rows only: still post-processing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LocalDebias {
    /// Per literal: `(m q, p - q)` of its column's RR.
    pub(crate) literals: Vec<crate::local_dp::randomized_response::Debias>,
    /// `g = 2 p_y - 1` of the label's binary RR (1 when the weights are
    /// already label-debiased, `super::local::local_class_weights`).
    pub(crate) label_factor: f64,
    /// `p_y`: the label's keep probability.
    pub(crate) label_keep: f64,
    /// Each feature column's RR, for the correction of the columns the
    /// ensemble already votes on ([`ColumnRr`]); empty to skip it.
    pub(crate) columns: Vec<ColumnRr>,
}

/// One feature column's randomized response, for [`LocalDebias`].
///
/// Once the ensemble votes on column `c`, a row's weight depends on its own
/// report of `c`, and `(x~ - m q) / (p - q)` is no longer unbiased for the
/// literals of `c`. For any `f(v)` of the column's true value, k-ary RR's
/// inverse gives the unbiased `f^(v~) = (f(v~) - q sum_v f(v)) / (p - q)`
/// (`E[f^] = f(v)` because `p - q + k q = 1`). With
/// `f(v) = w_i(v) [v lights x_j]`, where `w_i(v)` is row `i`'s signed weight
/// had its column `c` been `v` (its other columns' reports as they are),
/// the sum over rows is `(S~_j - q sum_{v lights x_j} A_c(v)) / (p - q)`
/// with `A_c(v) = sum_i w_i(v)`, and likewise for `P+` with the positive
/// weights `B_c(v)`. For a column the ensemble does not use, `w_i(v)` does
/// not depend on `v` and this is the plain `(S~_j - m q T~) / (p - q)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnRr {
    /// The column's literals.
    pub(crate) literals: std::ops::Range<usize>,
    /// Per value of the domain: the literals it lights (absolute indices).
    pub(crate) values: Vec<Vec<u32>>,
    /// `q`.
    pub(crate) other: f64,
    /// `p - q`.
    pub(crate) scale: f64,
}

/// Per literal: `sum_{v lights x_j} A_c(v)` and `sum_v B_c(v)` of its
/// column ([`ColumnRr`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LiteralCorrection {
    pub(crate) a_sum: f64,
    pub(crate) b_sum: f64,
    pub(crate) other: f64,
    pub(crate) scale: f64,
}

impl LocalDebias {
    /// Standard deviations in the upper confidence bound: by a Gaussian
    /// tail and a union bound over the `2d + 2` candidates, the chance
    /// that any estimate exceeds its bound in a round is about 5%
    /// (`z = sqrt(2 ln(20 (2d + 2)))`; 4.2 for Adult's 162 literals). A
    /// smaller `z` let the widest columns' noisiest estimates win.
    pub(crate) fn z(&self) -> f64 {
        let candidates = 2.0 * self.literals.len() as f64 + 2.0;
        (2.0 * (20.0 * candidates).ln()).sqrt()
    }

    /// The debiased errors: replaces the `2d + 2` errors computed from the
    /// randomized rows (with `p_positive = P~+`) by their unbiased
    /// estimates.
    pub(crate) fn debiased(&self, errors: &mut [f64], p_positive: f64) {
        let d = self.literals.len();
        debug_assert_eq!(errors.len(), 2 * d + 2);
        let g = self.label_factor;
        let total = 1.0 - 2.0 * p_positive; // T~
        let p_hat = (1.0 - total / g) / 2.0;
        for (j, lit) in self.literals.iter().enumerate() {
            let s = errors[j] - p_positive; // S~_j
            let err = p_hat + (s - lit.offset * total) / (g * lit.scale);
            errors[j] = err;
            errors[d + j] = 1.0 - err;
        }
        errors[2 * d] = 1.0 - p_hat;
        errors[2 * d + 1] = p_hat;
    }

    /// The debiased errors with the weights already label-debiased and the
    /// columns corrected ([`ColumnRr`]): `err^(x_j) = P^+_c + S^_j` with
    /// `P^+_c = (P~+ - q b_sum) / (p - q)`, `S^_j = (S~_j - q a_sum) / (p - q)`.
    fn corrected(errors: &mut [f64], p_positive: f64, corrections: &[LiteralCorrection]) {
        let d = corrections.len();
        debug_assert_eq!(errors.len(), 2 * d + 2);
        for (j, c) in corrections.iter().enumerate() {
            let s = errors[j] - p_positive; // S~_j
            let p_hat = (p_positive - c.other * c.b_sum) / c.scale;
            let err = p_hat + (s - c.other * c.a_sum) / c.scale;
            errors[j] = err;
            errors[d + j] = 1.0 - err;
        }
        errors[2 * d] = 1.0 - p_positive;
        errors[2 * d + 1] = p_positive;
    }

    /// The upper confidence bounds `err^ + z sd` of the candidates, with
    /// `w2 = sum_i p(i)^2` (type docs), in place of the errors.
    pub(crate) fn apply(
        &self,
        errors: &mut [f64],
        p_positive: f64,
        w2: f64,
        corrections: Option<&[LiteralCorrection]>,
    ) {
        match corrections {
            Some(c) => Self::corrected(errors, p_positive, c),
            None => self.debiased(errors, p_positive),
        }
        let z = self.z();
        let d = self.literals.len();
        let g = self.label_factor;
        for (j, lit) in self.literals.iter().enumerate() {
            // m q = offset, p - q = scale, so p + (m - 1) q = offset + scale.
            let mq = lit.offset;
            let second = (mq + lit.scale) * (1.0 - 2.0 * mq) + mq * mq;
            let sd = (w2 * second.max(0.0)).sqrt() / (g * lit.scale);
            errors[j] += z * sd;
            errors[d + j] += z * sd;
        }
        let sd = w2.sqrt() / (2.0 * g);
        errors[2 * d] += z * sd;
        errors[2 * d + 1] += z * sd;
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
