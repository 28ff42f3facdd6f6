//! LazyBB: smooth boosting with lazy Bregman projection (LazyBB Alg 1; SPEC §4.1).
//!
//! ```text
//! mu_1(i) = kappa
//! for t = 1..tau:
//!     p_t = mu_t / sum(mu_t)                 kappa-smooth: p_t(i) <= 1/(kappa n)
//!     h_t = WeakLearner(S, p_t, eta)          the only private step
//!     s_t(i) = y_i sum_{j<=t} h_j(x_i)        integer in [-t, t]
//!     mu_{t+1} = Project(kappa exp(-lambda s_t))
//! output sign(sum_j h_j(x))
//! ```
//!
//! "Lazy": each round's measure is rebuilt from the cumulative margin, not by
//! multiplying last round's projected measure (PAPERS.md §4 item 2). Because
//! the margin is an integer in `[-t, t]`, the measure takes at most `2t + 1`
//! values; we project those groups ([`super::projection::log_scale`]) and look
//! each row's weight up by its margin.
//!
//! # Side channels
//!
//! The number of rounds and all loop bounds depend only on `tau`, `n` and `d`,
//! never on the data; the only data-dependent output is the sequence of
//! hypotheses, each drawn by the weak learner's mechanism. Nothing computed
//! here (errors, margins, weights) is returned or logged; progress reports say
//! only how many rounds are done.

use super::LearnError;
use super::hypothesis::Hypothesis;
use super::one_rule::{OneRule, Selection};
use super::params::{Calibration, ValidLazyBbParams, WeakLearnerKind};
use super::projection::{Group, log_scale};
use crate::data::Dataset;
use crate::privacy::NoiseRng;

/// What [`train`] returns: the hypotheses and the calibration used.
#[derive(Debug, Clone, PartialEq)]
pub struct Ensemble {
    /// `h_1 .. h_tau`, each with weight 1 (unweighted majority vote).
    pub hypotheses: Vec<Hypothesis>,
    /// Noise parameters; `None` for the non-private baseline.
    pub calibration: Option<Calibration>,
    /// Training rows.
    pub n: usize,
}

/// Train LazyBB on `data` (which must carry labels).
///
/// `noise` is required for private parameters (use [`NoiseRng::from_os`]).
/// `on_round(done)` is called after each round with the number of rounds
/// done; returning `false` cancels training with [`LearnError::Cancelled`].
pub fn train(
    data: &Dataset,
    params: &ValidLazyBbParams,
    noise: Option<&mut NoiseRng>,
    on_round: &mut dyn FnMut(u32) -> bool,
) -> Result<Ensemble, LearnError> {
    let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
    let n = data.n_rows();
    if n == 0 {
        return Err(LearnError::NoRows);
    }
    let p = params.get();
    let calibration = params.calibrate(n)?;
    let mut noise = match (calibration, noise) {
        (Some(_), Some(rng)) => Some(rng),
        (Some(_), None) => return Err(LearnError::NoNoiseSource),
        (None, _) => None,
    };
    let WeakLearnerKind::OneRule = p.weak_learner;

    let d = data.features.n_cols();
    let tau = p.tau as i32;
    let y: Vec<i8> = (0..n).map(|i| if labels.get(i) { 1 } else { -1 }).collect();
    let mut margins = vec![0i32; n];
    let mut signed = vec![0.0f64; n];
    // Counts of rows per (margin, label); margin index s + tau.
    let width = 2 * tau as usize + 1;
    let mut count_pos = vec![0u64; width];
    let mut count_neg = vec![0u64; width];
    let mut weight_of_margin = vec![0.0f64; width];
    let mut learner = OneRule::default();
    let mut hypotheses = Vec::with_capacity(p.tau as usize);

    for round in 1..=p.tau {
        // p_t from the cumulative margins s_{t-1} (all 0 in round 1, where
        // mu_1 = kappa is already dense and the projection returns it).
        count_pos.iter_mut().for_each(|c| *c = 0);
        count_neg.iter_mut().for_each(|c| *c = 0);
        for (&s, &label) in margins.iter().zip(&y) {
            let k = (s + tau) as usize;
            if label > 0 {
                count_pos[k] += 1
            } else {
                count_neg[k] += 1
            }
        }
        let mut groups: Vec<Group> = (0..width)
            .filter(|&k| count_pos[k] + count_neg[k] > 0)
            .map(|k| Group {
                // ln m = ln kappa - lambda s (SPEC §4.1), never exponentiated raw.
                log_value: p.kappa.ln() - p.lambda * (k as i32 - tau) as f64,
                count: count_pos[k] + count_neg[k],
            })
            .collect();
        let log_c = log_scale(&mut groups, p.kappa);
        let mut total = 0.0;
        for (k, w) in weight_of_margin.iter_mut().enumerate() {
            let log_m = p.kappa.ln() - p.lambda * (k as i32 - tau) as f64;
            *w = (log_c + log_m).min(0.0).exp(); // mu = min(1, c m)
            total += *w * (count_pos[k] + count_neg[k]) as f64;
        }
        let mut p_positive = 0.0;
        for (k, w) in weight_of_margin.iter_mut().enumerate() {
            *w /= total; // normalised: p(i) <= 1/(kappa n)
            p_positive += *w * count_pos[k] as f64;
        }
        for ((out, &s), &label) in signed.iter_mut().zip(&margins).zip(&y) {
            let weight = weight_of_margin[(s + tau) as usize];
            *out = if label > 0 { -weight } else { weight };
        }

        let selection = match (&calibration, noise.as_deref_mut()) {
            (Some(c), Some(rng)) => Selection::Exponential { eta: c.eta, rng },
            _ => Selection::Best,
        };
        let index = learner.select(&data.features, &signed, p_positive, selection)?;
        let h = Hypothesis::from_candidate_index(index, d);
        h.add_margins(&data.features, &y, &mut margins);
        hypotheses.push(h);
        if !on_round(round) {
            return Err(LearnError::Cancelled);
        }
    }
    Ok(Ensemble {
        hypotheses,
        calibration,
        n,
    })
}
