//! DPBoost's decision threshold (issue 25): after the trees, a
//! report-noisy-max picks the logit above which a binary classifier predicts
//! the positive class, and the initial score absorbs it. The release is
//! dp-linear's (docs/privacy.md, "dp-linear's decision threshold"; the
//! shared parts in `learn::threshold`) with DPBoost's own grid: the released
//! model's scores lie within `W = sum over trees of max |leaf|` of its
//! initial score, so the candidates span `[b - W, b + W]`. Each row's score
//! is one leaf lookup per tree over a full tree of public depth
//! (`Tree::leaves_of_rows`), whatever the rows.

use super::model::{DpBoostModel, model_raw_all};
use crate::data::Dataset;
use crate::learn::LearnError;
use crate::learn::threshold::{self, ThresholdPlan};
use crate::privacy::NoiseRng;

/// The candidates for `model`, from the released model alone.
pub fn grid(model: &DpBoostModel) -> Vec<f64> {
    let bound = model
        .trees
        .iter()
        .map(|t| t.leaves.iter().fold(0.0f64, |m, v| m.max(v.abs())))
        .sum();
    threshold::grid_around(model.initial_score, bound)
}

/// The release: report-noisy-max over the grid, then the initial score
/// moved so that the model predicts the positive class exactly above the
/// chosen logit. Returns the threshold.
pub fn apply(
    model: &mut DpBoostModel,
    data: &Dataset,
    plan: &ThresholdPlan,
    rng: &mut NoiseRng,
) -> Result<f64, LearnError> {
    let grid = grid(model);
    let logits = model_raw_all(model, data);
    let t = threshold::choose_logit(&logits, data, &grid, plan, rng)?;
    model.initial_score -= t;
    Ok(t)
}
