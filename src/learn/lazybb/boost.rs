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
//!
//! The work per round is data-independent too (`docs/privacy.md`, "Timing"):
//! the projection always gets all `2 tau + 1` margin groups (empty ones with
//! count 0) and does the same steps in both of its cases
//! ([`super::projection::log_scale`]); DP-1R streams per-row column codes
//! (`super::column_codes`), TopDown takes two such passes per leaf it
//! scores, and both select by report-noisy-max, whose time depends
//! on the noise only; tree margins are updated from each row's leaf, one
//! lookup per row (`TopDown::add_margins`). Weights below `FLUSH_BELOW`
//! are set to 0 so that no sum ever meets a subnormal number, whose
//! arithmetic is many times slower on common CPUs.

use rayon::prelude::*;

use super::LearnError;
use super::groups::GroupError;
use super::hypothesis::Hypothesis;
use super::local::{Corrector, local_class_weights};
use super::one_rule::{ClassWeights, LocalDebias, OneRule, Selection};
use super::params::{Calibration, ValidLazyBbParams, WeakLearnerKind};
use super::projection::{Group, log_scale};
use super::top_down::{TopDown, TreeSelection};
use crate::data::{DataError, Dataset};
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
    train_with_fault(data, params, noise, on_round, None)
}

/// Train LazyBB with the DP 1-Rule on rows randomized on the client
/// (local DP): each round's 1-Rule is the exact argmin of the debiased
/// weighted errors ([`LocalDebias`]); no noise is drawn, because the rows
/// are already an epsilon-local-DP release and this is post-processing.
/// `params` must be non-private with the 1-Rule weak learner.
pub(crate) fn train_local(
    data: &Dataset,
    params: &ValidLazyBbParams,
    debias: &LocalDebias,
    on_round: &mut dyn FnMut(u32) -> bool,
) -> Result<Ensemble, LearnError> {
    if params.calibrate(1)?.is_some() || params.get().weak_learner != WeakLearnerKind::OneRule {
        return Err(LearnError::InvalidParameter(
            "training on local-DP rows takes non-private 1-Rule parameters".into(),
        ));
    }
    if debias.literals.len() != data.features.n_cols() {
        return Err(LearnError::InvalidParameter(
            "the local-DP debiasing does not match the data's literals".into(),
        ));
    }
    train_inner(data, params, None, on_round, None, Some(debias))
}

/// The weak learner with its buffers.
enum Learner {
    OneRule(OneRule),
    TopDown(TopDown),
}

/// Deliberately broken variants of LazyBB, which the privacy audit must
/// detect. Constructed only in this crate's tests: no build that serves
/// users can select one.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(dead_code)] // constructed only by the privacy audit's tests
pub(crate) enum Fault {
    /// Multiply the calibrated eta by this factor (e.g. 4: a 4x epsilon).
    EtaTimes(f64),
    /// Skip the cap of the projection when the density already holds (the
    /// authors' code's shortcut, PAPERS.md §4 item 4): weights above 1 break
    /// the 1/(kappa n) smoothness the sensitivity argument needs.
    UncappedProjection,
}

/// Normalised weights below `2^-400` are set to 0 before the weak learner
/// sees them. Every other weight is a normal float and a multiple of
/// `2^-452`, so every sum of weights is 0 or at least `2^-452` in magnitude,
/// every product of two class masses in TopDown's Gini at least `2^-906`:
/// no float operation of the weak learners meets a subnormal number, whose
/// much slower arithmetic would make the time depend on how many rows carry
/// tiny weights. Flushing moves any error or class mass by at most
/// `n 2^-400 < 2^-368`, far inside the float margin E
/// (`privacy::calibration`), which exceeds `2^-52`. Weights this small occur
/// only when `lambda tau` exceeds about 250.
pub(crate) const FLUSH_BELOW: f64 = f64::from_bits((1023 - 400) << 52);

/// Normalise the projected measure: `mu[k]` is the measure of every row of
/// margin class `k`, `count[2k]` / `count[2k + 1]` count its rows with
/// `y = -1` / `y = +1`. Writes the signed weights `-y p` of each (class,
/// label) to `signed_of_class` and returns `P+ = p(y = +1)`. These are the
/// float operations that the summation and normalisation parts of the float
/// margin E bound (`privacy::calibration::one_rule_float_margin`;
/// `learn::tests::float_error_of_the_errors_is_within_the_margin` checks them
/// against an exact reference).
pub(crate) fn class_weights(count: &[u64], mu: &[f64], signed_of_class: &mut [f64]) -> f64 {
    let total: f64 = count
        .chunks_exact(2)
        .zip(mu)
        .map(|(c, w)| w * (c[0] + c[1]) as f64)
        .sum();
    let mut p_positive = 0.0;
    for (k, w) in mu.iter().enumerate() {
        let weight = w / total; // normalised: p(i) <= 1/(kappa n)
        let weight = if weight < FLUSH_BELOW { 0.0 } else { weight };
        signed_of_class[2 * k] = weight; // y = -1: -y p = +p
        signed_of_class[2 * k + 1] = -weight; // y = +1
        p_positive += weight * count[2 * k + 1] as f64;
    }
    p_positive
}

/// `count[k]` = rows of class k. Chunks of rows are counted in parallel;
/// integer counts do not depend on the order.
fn count_classes(class: &[i32], count: &mut [u64]) {
    const CHUNK: usize = 1 << 16;
    if class.len() <= CHUNK {
        // One chunk (n alone decides): no hand-off to the pool.
        count_chunk(class, count);
        return;
    }
    let classes = count.len();
    let partial = class
        .par_chunks(CHUNK)
        .map(|chunk| {
            let mut count = vec![0u64; classes];
            count_chunk(chunk, &mut count);
            count
        })
        .reduce(
            || vec![0u64; classes],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                a
            },
        );
    count.copy_from_slice(&partial);
}

/// Copies of the counts in [`count_chunk`]: most rows share a few margins,
/// so one table would chain each increment on the last one's store.
const COUNT_LANES: usize = 4;

/// `count[k]` = rows of `chunk` in class k, row `i` counted in copy
/// `i % COUNT_LANES` (the same steps for any classes: one load, add and
/// store per row). `u32` copies: a chunk has at most `2^16` rows.
fn count_chunk(chunk: &[i32], count: &mut [u64]) {
    debug_assert!(u32::try_from(chunk.len()).is_ok());
    let classes = count.len();
    let mut lanes = vec![0u32; COUNT_LANES * classes];
    let mut rows = chunk.chunks_exact(COUNT_LANES);
    for four in &mut rows {
        for (l, &c) in four.iter().enumerate() {
            lanes[l * classes + c as usize] += 1;
        }
    }
    for &c in rows.remainder() {
        lanes[c as usize] += 1;
    }
    for (k, out) in count.iter_mut().enumerate() {
        *out = (0..COUNT_LANES)
            .map(|l| u64::from(lanes[l * classes + k]))
            .sum();
    }
}

/// [`train`], optionally with a [`Fault`] (tests only pass `Some`).
pub(crate) fn train_with_fault(
    data: &Dataset,
    params: &ValidLazyBbParams,
    noise: Option<&mut NoiseRng>,
    on_round: &mut dyn FnMut(u32) -> bool,
    fault: Option<Fault>,
) -> Result<Ensemble, LearnError> {
    train_inner(data, params, noise, on_round, fault, None)
}

fn train_inner(
    data: &Dataset,
    params: &ValidLazyBbParams,
    noise: Option<&mut NoiseRng>,
    on_round: &mut dyn FnMut(u32) -> bool,
    fault: Option<Fault>,
    debias: Option<&LocalDebias>,
) -> Result<Ensemble, LearnError> {
    let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
    let n = data.n_rows();
    if n == 0 {
        return Err(LearnError::NoRows);
    }
    if u32::try_from(n).is_err() {
        return Err(LearnError::InvalidParameter(format!(
            "{n} rows is more than this build trains on ({})",
            u32::MAX
        )));
    }
    let p = params.get();
    let calibration = params.calibrate(n)?;
    let mut noise = match (calibration, noise) {
        (Some(_), Some(rng)) => Some(rng),
        (Some(_), None) => return Err(LearnError::NoNoiseSource),
        (None, _) => None,
    };

    let d = data.features.n_cols();
    let tau = p.tau as i32;
    let y: Vec<i8> = (0..n).map(|i| if labels.get(i) { 1 } else { -1 }).collect();
    // Each row's class: 2 (s + tau) + [y = +1], where s in [-tau, tau] is its
    // cumulative margin. Rows of one class share one weight, so the weights
    // are computed per class and gathered per row.
    let classes = 2 * (2 * tau as usize + 1);
    let mut class: Vec<i32> = y
        .iter()
        .map(|&label| 2 * tau + i32::from(label > 0))
        .collect();
    let mut count = vec![0u64; classes];
    count_classes(&class, &mut count);
    let mut signed_of_class = vec![0.0f64; classes];
    // Per-row weights for the local-DP 1-Rule. (DP-1R and TopDown read
    // `class` and `signed_of_class`.)
    let mut signed = vec![0.0f64; if debias.is_some() { n } else { 0 }];
    // A group that is not one-hot in the data is an encoder bug: refuse.
    let groups = &data.one_hot_groups;
    let group_error = |e: GroupError| LearnError::Data(DataError::schema(e.to_string()));
    let mut learner = match p.weak_learner {
        WeakLearnerKind::OneRule => {
            Learner::OneRule(OneRule::new(&data.features, groups).map_err(group_error)?)
        }
        WeakLearnerKind::TopDown { internal_nodes, .. } => Learner::TopDown(
            TopDown::new(&data.features, groups, internal_nodes).map_err(group_error)?,
        ),
    };
    // The weights are label-debiased (`local_class_weights`): the 1-Rule
    // then debiases the features only.
    let features_only = debias.map(|d| LocalDebias {
        label_factor: 1.0,
        ..d.clone()
    });
    let mut positive_of_class = vec![0.0f64; classes];
    let mut corrector = match debias {
        Some(d) if !d.columns.is_empty() => Some(Corrector::new(&d.columns, &data.features, tau)?),
        _ => None,
    };
    let mut hypotheses = Vec::with_capacity(p.tau as usize);
    // ln m(s) = ln kappa - lambda s (SPEC §4.1), never exponentiated raw.
    let log_m = |margin_index: usize| p.kappa.ln() - p.lambda * (margin_index as i32 - tau) as f64;

    for round in 1..=p.tau {
        // p_t from the cumulative margins s_{t-1} (all 0 in round 1, where
        // mu_1 = kappa is already dense and the projection returns it).
        // All 2 tau + 1 groups, empty ones included: the projection's work
        // must not depend on which margins occur.
        let mut groups: Vec<Group> = count
            .chunks_exact(2)
            .enumerate()
            .map(|(k, c)| Group {
                log_value: log_m(k),
                count: c[0] + c[1],
            })
            .collect();
        let log_c = log_scale(&mut groups, p.kappa);
        let mut mu: Vec<f64> = (0..classes / 2)
            .map(|k| (log_c + log_m(k)).min(0.0).exp()) // mu = min(1, c m)
            .collect();
        if fault == Some(Fault::UncappedProjection) && log_c == 0.0 {
            // Case A without the cap: mu = m, entries above 1 kept.
            mu = (0..classes / 2).map(|k| log_m(k).exp()).collect();
        }
        let p_positive = match debias {
            Some(d) => local_class_weights(
                &count,
                &mu,
                d.label_keep,
                d.label_factor,
                &mut signed_of_class,
                &mut positive_of_class,
            )?,
            None => class_weights(&count, &mu, &mut signed_of_class),
        };
        let corrections = corrector
            .as_mut()
            .map(|c| c.compute(&class, &signed_of_class, &positive_of_class, p_positive));
        if features_only.is_some() {
            // The local-DP 1-Rule gathers per-row weights; DP-1R and
            // TopDown look them up by class.
            for (out, &c) in signed.iter_mut().zip(&class) {
                *out = signed_of_class[c as usize];
            }
        }

        let eta = |c: &Calibration| match fault {
            Some(Fault::EtaTimes(factor)) => c.eta * factor,
            _ => c.eta,
        };
        let h = match &mut learner {
            Learner::OneRule(learner) => {
                let index = if let Some(debias) = &features_only {
                    learner.select_debiased(&signed, p_positive, debias, corrections)
                } else {
                    let selection = match (&calibration, noise.as_deref_mut()) {
                        (Some(c), Some(rng)) => Selection::NoisyMax { eta: eta(c), rng },
                        _ => Selection::Best,
                    };
                    let weights = ClassWeights {
                        class: &class,
                        of_class: &signed_of_class,
                    };
                    learner.select(weights, p_positive, selection)?
                };
                Hypothesis::from_candidate_index(index, d)
            }
            Learner::TopDown(learner) => {
                let selection = match (&calibration, noise.as_deref_mut()) {
                    (Some(c), Some(rng)) => TreeSelection::Private {
                        eta: eta(c),
                        // Invariant: calibrate() sets a leaf scale for TopDown.
                        leaf_scale: c.leaf_scale.expect("TopDown calibration has a leaf scale"),
                        rng,
                    },
                    _ => TreeSelection::Best,
                };
                let weights = ClassWeights {
                    class: &class,
                    of_class: &signed_of_class,
                };
                let tree = learner.fit(&data.features, weights, selection)?;
                // s(i) += y_i h(x_i) from each row's leaf: one lookup per
                // row, where walking the tree would take as many steps as
                // the row's (data-dependent) depth.
                learner.add_margins(&tree, &y, &mut class, 2);
                tree
            }
        };
        if let Learner::OneRule(_) = learner {
            // s(i) += y_i h(x_i), i.e. the class index moves by 2 y_i h(x_i);
            // branch-free for stumps and constants.
            h.add_margins(&data.features, &y, &mut class, 2);
        }
        if let Some(c) = corrector.as_mut() {
            c.add(&h);
        }
        count_classes(&class, &mut count);
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
