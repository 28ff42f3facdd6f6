//! dp-linear's decision threshold (issue 25): after the coefficients are
//! released, a report-noisy-max picks the logit above which a binary
//! classifier predicts the positive class, and the intercept absorbs it.
//!
//! Why: with little data per unit of epsilon the released coefficients are
//! mostly noise, and a threshold at logit 0 then predicts the minority class
//! for many rows: the suite's german-credit, ionosphere and pima sets at
//! epsilon 1 were 1 to 3 points below the majority class (docs/accuracy.md,
//! "dp-linear's decision threshold"). "Everything is the majority class" is a
//! candidate, so the chosen threshold is at least as good as it on the
//! training rows, up to the selection's noise.
//!
//! # The release (docs/privacy.md, "dp-linear's decision threshold")
//!
//! The candidates are [`CANDIDATES`] evenly spaced logits on
//! `[b - W, b + W]`, `b` the released model's intercept and `W` slightly
//! more than the sum of the absolute values of its per-literal weights
//! (`LinearPredictor::score_bound`), so every row's score lies strictly
//! inside: the first candidate predicts every row positive, the last every
//! row negative. The grid is a function of the released model alone
//! (post-processing). Candidate `j`'s score is the number of training rows it
//! classifies correctly (positive iff the row's logit under the released
//! model is above `t_j`): each row's term is a function of that row alone, so
//! substituting one row moves every score by at most 1
//! (`threshold::correct_counts`), and the report-noisy-max's Laplace scale is
//! `threshold::rnm_scale(epsilon_t, 1, n)`.
//!
//! **Accounting.** Pure DP: `epsilon_t = share epsilon`, the fit gets the
//! rest (basic composition). zCDP (delta > 0): the threshold takes `share
//! rho` of the fit's `rho` as a pure `sqrt(2 share rho)`-DP release (an
//! epsilon-DP release is `epsilon^2 / 2`-zCDP, Bun and Steinke 2016, Prop.
//! 1.4), the fit is planned at a budget whose `rho` is at most the rest, and
//! the two compose additively to at most `rho`, converted once.
//!
//! **Work.** Each row's score is the sum of its literals' weights over the
//! packed columns (`LinearModel::raw_all`, literal by literal, whatever the
//! rows) and the counts one pass of one division per row
//! (`threshold::counts_by_label`).

use serde::{Deserialize, Serialize};

use super::model::LinearModel;
use crate::data::Dataset;
use crate::learn::{LearnError, threshold};
use crate::privacy::{Budget, NoiseRng, PrivacyCost, laplace, zcdp};

/// The number of candidate thresholds.
pub const CANDIDATES: usize = 257;

/// The largest share a request may give (`threshold_share`): the fit keeps
/// at least half of the budget.
pub const MAX_THRESHOLD_SHARE: f64 = 0.5;

/// [`default_share`]'s `K`: the share is the largest of
/// [`threshold::DEFAULT_SHARES`] at most `K / (n epsilon)`.
///
/// Chosen on the suite's nine binary sets leave-one-dataset-out
/// (`scripts/threshold_share_lodo.py --learner dp-linear --repeats 10`;
/// mean accuracy over epsilon 0.1 to 5, delta 0 and 1e-6): `K` in 25 ..
/// 3200 or unbounded, 400 on all nine held-out sets, held-out mean 0.760
/// against 0.754 without a threshold (docs/accuracy.md, "dp-linear's
/// decision threshold").
pub const THRESHOLD_ROWS: f64 = 400.0;

/// The sensitivity of a candidate's score (a count of correctly classified
/// rows) under substitution.
const SENSITIVITY: f64 = 1.0;

/// The default share of a binary fit's budget for the threshold: a public
/// function of `n` and epsilon (`threshold::default_share` with
/// [`THRESHOLD_ROWS`]).
pub fn default_share(n_rows: usize, epsilon: f64) -> f64 {
    threshold::default_share(n_rows, epsilon, THRESHOLD_ROWS)
}

/// The public facts of the threshold's release.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThresholdPlan {
    /// The report-noisy-max's pure epsilon.
    pub epsilon: f64,
    /// Its rho in a zCDP run (`epsilon^2 / 2` at most); none when pure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// Its Laplace scale, in rows.
    pub scale: f64,
    /// The number of candidate thresholds.
    pub candidates: usize,
    /// The whole run's budget (the fit's and this release's together).
    pub run_budget: Budget,
    /// The whole run's rho (zCDP runs): what is charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_rho: Option<f64>,
}

impl ThresholdPlan {
    /// The charge of the whole run (fit and threshold).
    pub fn cost(&self) -> PrivacyCost {
        match self.run_rho {
            None => PrivacyCost::Pure {
                epsilon: self.run_budget.epsilon(),
            },
            Some(rho) => PrivacyCost::Zcdp {
                rho,
                epsilon: self.run_budget.epsilon(),
                delta: self.run_budget.delta(),
            },
        }
    }
}

/// The split of `budget` between the fit and a threshold at `share` of it:
/// the fit's budget and the threshold's plan (module docs, "Accounting").
/// The caller checks, once the fit is planned, that its rho leaves room
/// ([`check_fit_rho`]).
pub fn split(
    budget: Budget,
    share: f64,
    n_rows: usize,
) -> Result<(Budget, ThresholdPlan), LearnError> {
    let too_small = || {
        LearnError::InvalidParameter(format!(
            "epsilon (epsilon): the decision threshold's share of epsilon = {} is too small to sample; use a larger epsilon or threshold_share 0",
            budget.epsilon()
        ))
    };
    if budget.delta() == 0.0 {
        let epsilon = share * budget.epsilon();
        let scale = threshold::rnm_scale(epsilon, SENSITIVITY, n_rows).ok_or_else(too_small)?;
        // The fit gets the rest, rounded down (one step below the nearest
        // double) so that the two never sum to more than epsilon.
        let fit = Budget::new((budget.epsilon() - epsilon).next_down(), 0.0)?;
        return Ok((
            fit,
            ThresholdPlan {
                epsilon,
                rho: None,
                scale,
                candidates: CANDIDATES,
                run_budget: budget,
                run_rho: None,
            },
        ));
    }
    let rho = zcdp::rho_for(budget.epsilon(), budget.delta())?;
    let rho_t = share * rho;
    // sqrt(2 rho_t), rounded down until its rho is within rho_t.
    let mut epsilon = (2.0 * rho_t).sqrt();
    while epsilon * epsilon / 2.0 > rho_t {
        epsilon = epsilon.next_down();
    }
    let scale = threshold::rnm_scale(epsilon, SENSITIVITY, n_rows).ok_or_else(too_small)?;
    // The fit's budget: the epsilon that a rho a hair below the rest
    // implies at the same delta; the fit's own rho (the largest meeting it)
    // is then at most the rest, which `check_fit_rho` confirms.
    let fit_epsilon = zcdp::epsilon_of((rho - rho_t) * (1.0 - 1e-9), budget.delta())?;
    let fit = Budget::new(fit_epsilon.min(budget.epsilon()), budget.delta())?;
    Ok((
        fit,
        ThresholdPlan {
            epsilon,
            rho: Some(epsilon * epsilon / 2.0),
            scale,
            candidates: CANDIDATES,
            run_budget: budget,
            run_rho: Some(rho),
        },
    ))
}

/// The fit's rho and the threshold's together must not exceed the run's:
/// an error (refused before any row is read) otherwise.
pub fn check_fit_rho(plan: &ThresholdPlan, fit_rho: Option<f64>) -> Result<(), LearnError> {
    match (plan.run_rho, plan.rho, fit_rho) {
        (None, None, None) => Ok(()),
        (Some(run), Some(t), Some(fit)) if fit + t <= run => Ok(()),
        _ => Err(LearnError::InvalidParameter(
            "the decision threshold's budget and the fit's do not compose to the job's; use threshold_share 0".into(),
        )),
    }
}

/// The candidates for `model`: [`CANDIDATES`] evenly spaced logits on
/// `[b - W, b + W]` (module docs), from the released model alone.
pub fn grid(model: &LinearModel, n_literals: usize) -> Vec<f64> {
    let predictor = model.predictor(crate::data::Task::Binary, n_literals);
    let (base, bound) = predictor.score_bound();
    // Strictly outside every score: a relative and an absolute margin.
    let w = bound * (1.0 + 1e-9) + 1e-9;
    let step = 2.0 * w / (CANDIDATES - 1) as f64;
    (0..CANDIDATES)
        .map(|j| base - w + step * j as f64)
        .collect()
}

/// Each candidate's score on `data`: the rows it classifies correctly.
pub fn scores(model: &LinearModel, data: &Dataset, grid: &[f64]) -> Result<Vec<f64>, LearnError> {
    let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
    let predictor = model.predictor(crate::data::Task::Binary, data.n_literals());
    let logits = predictor.raw_all(data);
    let (above, positive_above) = threshold::counts_by_label(&logits, |i| labels.get(i), grid);
    let p = labels.count_ones() as u64;
    Ok(threshold::correct_counts(
        &above,
        &positive_above,
        p,
        data.n_rows() as u64,
    ))
}

/// The release: report-noisy-max over the grid, then the intercept moved so
/// that the model predicts the positive class exactly above the chosen
/// logit. Returns the threshold.
pub fn apply(
    model: &mut LinearModel,
    data: &Dataset,
    plan: &ThresholdPlan,
    rng: &mut NoiseRng,
) -> Result<f64, LearnError> {
    let grid = grid(model, data.n_literals());
    let utility = scores(model, data, &grid)?;
    let j = laplace::report_noisy_max(rng, &utility, plan.scale)?;
    let t = grid[j];
    model.coefficients[0][0] -= t;
    Ok(t)
}
