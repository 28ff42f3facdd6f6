//! DPBoost for a label with k classes (issue 27): one-vs-rest.
//!
//! Class `c`'s fit is ordinary binary DPBoost on the question "is the row's
//! class `c`?", over the same rows and public split candidates as every
//! other class's fit, planned as a binary run at epsilon / k
//! (`DpBoostParams::plan_for`).
//!
//! Why one-vs-rest and not softmax trees (one tree per class per round on
//! the softmax gradient `p_c - y_c`): with softmax trees a row is in all k
//! trees of a round, and its gradient vector moves in all k coordinates
//! when it is substituted, so each of the k trees of a round must be
//! charged (sequential composition over them) exactly as k binary trees
//! would be; the gain and leaf sensitivities of \[DPB\] Lemma 1 and our
//! Newton leaves (`params::DpBoostPlan::newton_noise`) would also have to be
//! re-derived for the softmax hessian `p_c (1 - p_c)` and gradients in
//! [-1, 1] whose L1 norm over the classes is up to 2. It would cost the
//! same epsilon / k per tree as one-vs-rest and need a new proof, for a
//! gain in accuracy we cannot show. One-vs-rest keeps every binary fit's
//! proof (docs/privacy.md, "DPBoost") unchanged.
//!
//! # Privacy: sequential composition over the k fits
//!
//! Every row takes part in every fit (it is "class c" or "not class c" in
//! each), so the k fits compose sequentially (basic composition, Dwork and
//! Roth, Theorem 3.16): each gets epsilon / k, rounded down so that the k
//! shares summed do not exceed the job's epsilon
//! (`lazybb::multiclass::per_fit_budget`, shared with LazyBB). DPBoost is
//! pure: delta is not used. Inside a fit the budget splits exactly as in a
//! binary run (initial score, ensembles, levels, leaves), so every noise
//! scale is k times the binary run's at the whole epsilon.
//!
//! # Prediction
//!
//! Class c's probability is its fit's sigmoid probability, the k of them
//! normalised to sum to 1 (the softmax of their logarithms). It is not
//! calibrated: the k fits were trained separately, and nothing makes their
//! probabilities sum to 1 before the normalisation.
//!
//! # Running time
//!
//! k fits of the binary algorithm, each with work independent of the rows'
//! values (`fit` module docs, "Timing"): `O(k)` times a binary fit. The
//! per-class labels are built with one pass over every row per class, no
//! data-dependent branch.

use super::fit::fit_task;
use super::model::DpBoostModel;
use super::params::DpBoostPlan;
use crate::data::{BitVec, Dataset, Encoder, Task};
use crate::learn::LearnError;
use crate::privacy::NoiseRng;

/// Train the k one-vs-rest fits of `plan` (whose `one_vs_rest` gives k) on
/// `data` (whose `classes` give each row's class index), class 0 first.
/// `on_tree(done)` counts trees over all fits (`k x plan.trees()` in all);
/// `false` cancels.
pub fn fit_one_vs_rest(
    data: &Dataset,
    encoder: &Encoder,
    plan: &DpBoostPlan,
    rng: &mut NoiseRng,
    on_tree: &mut dyn FnMut(u32) -> bool,
) -> Result<Vec<DpBoostModel>, LearnError> {
    let Some((k, _)) = plan.one_vs_rest else {
        return Err(LearnError::InvalidParameter(
            "DPBoost: a one-vs-rest fit needs a multiclass plan".into(),
        ));
    };
    let classes = data.classes.as_ref().ok_or(LearnError::NoLabels)?;
    if classes.len() != data.n_rows() {
        return Err(LearnError::InvalidParameter(
            "the class labels do not match the rows".into(),
        ));
    }
    // One copy of the rows whose binary labels are replaced per class.
    let mut binary = Dataset {
        features: data.features.clone(),
        labels: None,
        targets: None,
        classes: None,
        one_hot_groups: data.one_hot_groups.clone(),
    };
    let trees = plan.trees();
    let mut fits = Vec::with_capacity(k);
    for c in 0..k {
        // Every row visited, the bit computed without a branch on its value.
        let is_c: Vec<bool> = classes.iter().map(|&y| usize::from(y) == c).collect();
        binary.labels = Some(BitVec::from_bools(&is_c));
        let done_before = c as u32 * trees;
        let model = fit_task(&binary, encoder, Task::Binary, plan, rng, &mut |done| {
            on_tree(done_before + done)
        })?;
        fits.push(model);
    }
    Ok(fits)
}

/// The k classes' scores whose softmax is the normalised one-vs-rest
/// probabilities: `ln sigmoid(z_c)` of each fit's logit `z_c`, computed as
/// `-(max(-z, 0) + ln(1 + e^{-|z|}))` so that no exponential overflows.
/// `softmax(ln p_c) = p_c / sum_j p_j` (module docs, "Prediction").
pub fn normalising_scores(logits: &[f64]) -> Vec<f64> {
    logits
        .iter()
        .map(|&z| -((-z).max(0.0) + (-z.abs()).exp().ln_1p()))
        .collect()
}
