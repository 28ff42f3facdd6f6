//! Non-private baselines for the evaluation tool: the majority class and a
//! single 1-Rule (the best stump under uniform weights), as in LazyBB §5.
//!
//! They read the training labels without noise, so their output must never
//! leave the owner's side; only `privboost eval` uses them.

use super::LearnError;
use super::boost::{self, Ensemble};
use super::hypothesis::Hypothesis;
use super::params::{LazyBbParams, PrivacyMode, WeakLearnerKind};
use crate::data::Dataset;

/// The constant hypothesis predicting the more frequent training label.
pub fn majority_class(data: &Dataset) -> Result<Ensemble, LearnError> {
    let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
    let positives = labels.count_ones();
    Ok(Ensemble {
        hypotheses: vec![Hypothesis::Constant {
            positive: 2 * positives >= data.n_rows(),
        }],
        calibration: None,
        n: data.n_rows(),
    })
}

/// The non-private 1-Rule: one LazyBB round without noise, i.e. the stump
/// with the least error under the uniform distribution.
pub fn one_rule(data: &Dataset) -> Result<Ensemble, LearnError> {
    let params = LazyBbParams {
        tau: 1,
        lambda: 0.5,
        kappa: 0.5,
        weak_learner: WeakLearnerKind::OneRule,
        privacy: PrivacyMode::NonPrivate,
    }
    .check()?;
    boost::train(data, &params, None, &mut |_| true)
}
