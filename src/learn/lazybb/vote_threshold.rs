//! LazyBB's vote threshold (issue 25): after the rounds, a report-noisy-max
//! picks how many votes the ensemble's sum must clear to predict the
//! positive class.
//!
//! Why: LazyBB predicts `sign(sum_j h_j(x))`, an unweighted vote of `tau`
//! one-rules. When `n epsilon` is small each round's choice is mostly noise,
//! the vote is close to a coin flip, and the model falls below the majority
//! class (the suite's ionosphere, pima and german-credit sets at epsilon 1:
//! 5 to 10 points below; docs/accuracy.md, "LazyBB's vote threshold"). A
//! threshold that classifies the most training rows correctly is at least as
//! good as "everything is the majority class" on the training rows (that
//! threshold is a candidate), up to the selection's noise.
//!
//! The release (`docs/privacy.md`, "LazyBB's vote threshold"): the candidates
//! are the half-integers `g_j = -tau - 3/2 + j`, `j = 0 .. 2 tau + 3`, a
//! public grid that covers every vote sum in `[-tau, tau]` with one
//! candidate below all and one above all. Candidate `j`'s score is the
//! number of training rows it classifies correctly (positive iff the vote
//! sum is above `g_j`): the vote sums are the released ensemble's, so each
//! row's term is a function of that row alone, and substituting one row
//! moves every score by at most 1 (`threshold::correct_counts`). The scale
//! is `threshold::rnm_scale(epsilon_t, 1, n)`. The chosen `g` becomes the
//! integer offset `o = -(g + 1/2)`, added to every vote sum: `v + o >= 0`
//! exactly when `v > g`. Work: one pass over the rows for the vote sums
//! (every bit visited, `Predictor::vote_sums`) and one to count, whatever
//! the rows.

use serde::{Deserialize, Serialize};

use super::LearnError;
use super::boost::Ensemble;
use super::model::Predictor;
use crate::data::Dataset;
use crate::learn::threshold;
use crate::privacy::{NoiseRng, laplace};

/// The default share of a binary LazyBB fit's epsilon spent on the vote
/// threshold (the rounds get the rest, with all of delta): the largest of
/// [`DEFAULT_SHARES`] at most `VOTE_THRESHOLD_ROWS / (n epsilon)`, and the
/// smallest when none is. The threshold's noise in rows is `2 / (share
/// epsilon)`, so the rule keeps it near `n / 50` rows where that costs at
/// most a fifth of the budget: small jobs, whose rounds are mostly noise,
/// give the threshold a fifth; large ones 2.5%.
///
/// Chosen on the suite's nine binary sets leave-one-dataset-out
/// (`scripts/threshold_share_lodo.py --learner lazybb --repeats 10`; mean accuracy over
/// epsilon 0.1 to 5, delta 0 and 1e-6): `K` in 25 .. 3200 or unbounded,
/// 100 on all nine held-out sets, held-out mean 0.721, against 0.717 for
/// the best constant share (0.2) and 0.688 without a threshold;
/// docs/accuracy.md, "LazyBB's vote threshold".
pub fn default_share(n_rows: usize, epsilon: f64) -> f64 {
    threshold::default_share(n_rows, epsilon, VOTE_THRESHOLD_ROWS)
}

/// The default shares, increasing ([`default_share`]).
pub use threshold::DEFAULT_SHARES;

/// [`default_share`]'s `K`: the share is at most `K / (n epsilon)`.
pub const VOTE_THRESHOLD_ROWS: f64 = 100.0;

/// The largest share a request may give (`vote_threshold_share`): the
/// rounds keep at least half of epsilon.
pub const MAX_VOTE_THRESHOLD_SHARE: f64 = 0.5;

/// The sensitivity of a candidate's score (a count of correctly classified
/// rows) under substitution.
const SENSITIVITY: f64 = 1.0;

/// The public facts of the threshold's release.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VoteThresholdPlan {
    /// The report-noisy-max's pure epsilon.
    pub epsilon: f64,
    /// Its Laplace scale, in rows.
    pub scale: f64,
    /// The number of candidate thresholds, `2 tau + 4`.
    pub candidates: usize,
    /// The whole fit's epsilon: the rounds' and this release's together
    /// (basic composition).
    pub fit_epsilon: f64,
}

impl VoteThresholdPlan {
    /// The plan for a pure `epsilon` of a fit's `fit_epsilon` on `n_rows`
    /// rows and `tau` rounds; refuses an epsilon too small for the
    /// samplers, naming it.
    pub fn new(
        epsilon: f64,
        fit_epsilon: f64,
        n_rows: usize,
        tau: u32,
    ) -> Result<VoteThresholdPlan, LearnError> {
        let scale = threshold::rnm_scale(epsilon, SENSITIVITY, n_rows).ok_or_else(|| {
            LearnError::InvalidParameter(format!(
                "epsilon (epsilon): the vote threshold's share {epsilon:e} is too small to sample; use a larger epsilon"
            ))
        })?;
        Ok(VoteThresholdPlan {
            epsilon,
            scale,
            candidates: candidate_count(tau),
            fit_epsilon,
        })
    }
}

/// The number of candidates, `2 tau + 4`.
pub fn candidate_count(tau: u32) -> usize {
    2 * tau as usize + 4
}

/// The candidates `g_j = -tau - 3/2 + j`, `j = 0 .. 2 tau + 3`: evenly
/// spaced half-integers, the first below every vote sum, the last above.
pub fn grid(tau: u32) -> Vec<f64> {
    let lo = -f64::from(tau) - 1.5;
    (0..candidate_count(tau)).map(|j| lo + j as f64).collect()
}

/// Each candidate's score on `data`: the rows it classifies correctly when
/// a row is predicted positive iff its vote sum is above the candidate.
pub fn scores(vote_sums: &[i32], data: &Dataset, tau: u32) -> Result<Vec<f64>, LearnError> {
    let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
    // A vote sum v has `v + tau + 2` candidates below it (`-tau - 3/2`
    // up to `v - 1/2`), in integers; clamped like any score outside.
    let g = candidate_count(tau);
    let offset = i64::from(tau) + 2;
    let buckets = vote_sums.iter().enumerate().map(|(i, &v)| {
        let b = (i64::from(v) + offset).clamp(0, g as i64) as usize;
        (b, labels.get(i))
    });
    let (above, positive_above) = threshold::counts_from_buckets(g, buckets);
    let p = labels.count_ones() as u64;
    Ok(threshold::correct_counts(
        &above,
        &positive_above,
        p,
        data.n_rows() as u64,
    ))
}

/// The release: the offset `o` to add to every vote sum, chosen by
/// report-noisy-max over [`scores`] at the plan's scale.
pub fn choose_offset(
    ensemble: &Ensemble,
    data: &Dataset,
    plan: &VoteThresholdPlan,
    rng: &mut NoiseRng,
) -> Result<i32, LearnError> {
    let tau = ensemble.hypotheses.len() as u32;
    let votes = Predictor::new(&ensemble.hypotheses, data.n_literals()).vote_sums(data);
    let utility = scores(&votes, data, tau)?;
    let j = laplace::report_noisy_max(rng, &utility, plan.scale)?;
    Ok(offset_of(grid(tau)[j]))
}

/// `o = -(g + 1/2)`: `v + o >= 0` exactly when the integer `v` is above the
/// half-integer `g`.
pub fn offset_of(g: f64) -> i32 {
    -(g + 0.5).round() as i32
}
