//! Evaluation protocols for `privboost eval`: a train/test split or k-fold
//! cross-validation, repeated with fresh noise, over one or more parameter
//! cells (e.g. the paper's Table 1 grid), plus the non-private baselines.
//!
//! **An owner-side research tool.** Accuracy on private data is itself a
//! non-private release (SPEC §2): these figures are for the data owner (or for
//! public data such as the shipped sets) and never leave through the service.
//! Tuning parameters on private data this way is not accounted for
//! (PAPERS.md §4 item 12).

use std::collections::HashMap;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use serde::Serialize;

use crate::data::unit::UnitKey;
use crate::data::{Dataset, Encoder};
use crate::learn::{
    self, Ensemble, LazyBbParams, LearnError, Predictor, PrivacyMode, SensitivityBound,
    WeakLearnerKind, baselines, metrics,
};
use crate::privacy::{Budget, NoiseRng, PrivacyError};

pub mod experiment;
pub mod learners;
pub mod synthetic;
#[cfg(test)]
mod tests;

/// The paper's Table 1 grid for the 1-Rule learner (LazyBB §5).
pub mod paper_grid {
    /// Rounds.
    pub const TAU: [u32; 11] = [5, 9, 15, 19, 25, 29, 39, 49, 65, 75, 99];
    /// Learning rates 0.2, 0.25, ..., 0.5.
    pub const LAMBDA: [f64; 7] = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5];
    /// Densities 0.2, 0.25, ..., 0.5.
    pub const KAPPA: [f64; 7] = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5];
}

/// How models are trained and scored.
#[derive(Debug)]
pub enum Protocol<'a> {
    /// Train on one set, score on another (Adult's canonical split).
    TrainTest {
        /// Training rows.
        train: &'a Dataset,
        /// Test rows.
        test: &'a Dataset,
    },
    /// k-fold cross-validation over shuffled rows, or over shuffled units
    /// when `units` is given.
    CrossValidation {
        /// All rows.
        data: &'a Dataset,
        /// Number of folds (>= 2).
        folds: usize,
        /// Seed of the row shuffle that assigns folds. This is not privacy
        /// noise: it only fixes the evaluation split, so runs are comparable.
        split_seed: u64,
        /// Each row's privacy unit (`ReadReport::units`), for a schema with
        /// a `privacy_unit`: then whole units are assigned to folds, so no
        /// person has rows on both sides of a split (a model scored on rows
        /// of people it trained on would look better than it is).
        units: Option<&'a [UnitKey]>,
    },
}

/// One thing to evaluate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Method {
    /// LazyBB + DP-1R; `epsilon: None` is the non-private (noise-free) run.
    Lazybb {
        /// Total epsilon, or `None` for no noise.
        epsilon: Option<f64>,
        /// Total delta.
        delta: f64,
        /// Rounds.
        tau: u32,
        /// Learning rate.
        lambda: f64,
        /// Density.
        kappa: f64,
        /// `None` for DP 1-Rules; `Some(t)` for DP TopDown trees with `t`
        /// internal nodes.
        internal_nodes: Option<u32>,
        /// TopDown with the paper's sensitivity bound, which does NOT meet
        /// the stated epsilon (for reproducing the paper's figures only).
        paper_calibration: bool,
    },
    /// A single non-private 1-Rule.
    OneRule,
    /// The majority class.
    Majority,
}

impl Method {
    /// Whether the method adds DP noise.
    pub fn is_private(&self) -> bool {
        matches!(
            self,
            Method::Lazybb {
                epsilon: Some(_),
                ..
            }
        )
    }
}

/// Summary of all runs of one method.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MethodResult {
    /// What was run.
    #[serde(flatten)]
    pub method: Method,
    /// Number of runs (repeats x folds).
    pub runs: usize,
    /// Mean test accuracy.
    pub accuracy_mean: f64,
    /// Sample standard deviation of the test accuracy over the runs.
    pub accuracy_std: f64,
    /// Mean ROC AUC of the vote-sum score.
    pub auc_mean: f64,
    /// Its sample standard deviation.
    pub auc_std: f64,
    /// Mean share of held-out rows predicted positive.
    pub positive_rate_mean: f64,
    /// Mean share of held-out positive rows predicted positive (recall).
    pub true_positive_rate_mean: f64,
    /// Mean wall-clock seconds of one training run (runs share rayon's pool:
    /// set `RAYON_NUM_THREADS=1` for an unshared time).
    pub fit_seconds_mean: f64,
    /// Mean number of distinct features with a non-zero net vote.
    pub features_used_mean: f64,
    /// Mean number of distinct literals with a non-zero net vote.
    pub literals_used_mean: f64,
}

/// Errors of the evaluation tool.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// Bad protocol or method settings.
    #[error("{0}")]
    Invalid(String),
    /// From training.
    #[error(transparent)]
    Learn(#[from] LearnError),
    /// From the noise source.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
}

/// Scores of one run.
struct RunScore {
    accuracy: f64,
    auc: f64,
    positive_rate: f64,
    true_positive_rate: f64,
    fit_seconds: f64,
    features_used: usize,
    literals_used: usize,
}

/// Evaluate every method `repeats` times under `protocol`.
///
/// `noise(i)` gives the noise source of task `i` (production: a fresh
/// [`NoiseRng::from_os`] each; tests: seeded). `on_task_done` is called after
/// each training run (for a progress bar). Runs go in parallel on rayon's pool.
pub fn evaluate(
    protocol: &Protocol<'_>,
    encoder: &Encoder,
    methods: &[Method],
    repeats: usize,
    noise: &(dyn Fn(usize) -> Result<NoiseRng, PrivacyError> + Sync),
    on_task_done: &(dyn Fn() + Sync),
) -> Result<Vec<MethodResult>, EvalError> {
    if repeats == 0 {
        return Err(EvalError::Invalid("repeats must be at least 1".into()));
    }
    let splits = splits(protocol)?;
    // Check every method's parameters before any work.
    for method in methods {
        if let Method::Lazybb { .. } = method {
            lazybb_params(method)?;
        }
    }
    let n_splits = splits.len();
    let tasks: Vec<(usize, usize, usize)> = (0..methods.len())
        .flat_map(|m| (0..repeats).flat_map(move |r| (0..n_splits).map(move |s| (m, r, s))))
        .collect();
    let scores: Vec<Result<RunScore, EvalError>> = tasks
        .par_iter()
        .enumerate()
        .map(|(task, &(m, _, s))| {
            let (train, test) = &splits[s];
            let result = run_once(&methods[m], train, test, encoder, || noise(task));
            on_task_done();
            result
        })
        .collect();
    let mut per_method: Vec<Vec<RunScore>> = methods.iter().map(|_| Vec::new()).collect();
    for (&(m, _, _), score) in tasks.iter().zip(scores) {
        per_method[m].push(score?);
    }
    Ok(methods
        .iter()
        .zip(per_method)
        .map(|(method, runs)| summarise(*method, &runs))
        .collect())
}

/// The number of training runs [`evaluate`] will do.
pub fn task_count(protocol: &Protocol<'_>, methods: usize, repeats: usize) -> usize {
    let splits = match protocol {
        Protocol::TrainTest { .. } => 1,
        Protocol::CrossValidation { folds, .. } => *folds,
    };
    methods * repeats * splits
}

fn lazybb_params(method: &Method) -> Result<learn::ValidLazyBbParams, EvalError> {
    let Method::Lazybb {
        epsilon,
        delta,
        tau,
        lambda,
        kappa,
        internal_nodes,
        paper_calibration,
    } = *method
    else {
        return Err(EvalError::Invalid("not a LazyBB method".into()));
    };
    let privacy = match epsilon {
        Some(e) => PrivacyMode::Private(Budget::new(e, delta)?),
        None => PrivacyMode::NonPrivate,
    };
    let weak_learner = match (internal_nodes, paper_calibration) {
        (None, false) => WeakLearnerKind::OneRule,
        (None, true) => {
            return Err(EvalError::Invalid(
                "the paper calibration applies to TopDown trees only".into(),
            ));
        }
        (Some(internal_nodes), paper) => WeakLearnerKind::TopDown {
            internal_nodes,
            bound: if paper {
                SensitivityBound::Paper
            } else {
                SensitivityBound::Proven
            },
        },
    };
    Ok(LazyBbParams {
        tau,
        lambda,
        kappa,
        weak_learner,
        privacy,
    }
    .check()?)
}

fn run_once(
    method: &Method,
    train: &Dataset,
    test: &Dataset,
    encoder: &Encoder,
    noise: impl FnOnce() -> Result<NoiseRng, PrivacyError>,
) -> Result<RunScore, EvalError> {
    let start = std::time::Instant::now();
    let ensemble: Ensemble = match method {
        Method::Lazybb { epsilon, .. } => {
            let params = lazybb_params(method)?;
            let mut rng = match epsilon {
                Some(_) => Some(noise()?),
                None => None,
            };
            learn::train(train, &params, rng.as_mut(), &mut |_| true)?
        }
        Method::OneRule => baselines::one_rule(train)?,
        Method::Majority => baselines::majority_class(train)?,
    };
    let fit_seconds = start.elapsed().as_secs_f64();
    let d = encoder.literals().len();
    let predictor = Predictor::new(&ensemble.hypotheses, d);
    let sums = predictor.vote_sums(test);
    let labels = test.labels.as_ref().ok_or(LearnError::NoLabels)?;
    let labels: Vec<bool> = (0..test.n_rows()).map(|i| labels.get(i)).collect();
    let used = predictor.literals_used();
    let mut features: Vec<usize> = used
        .iter()
        .map(|&l| encoder.literals()[l as usize].feature)
        .collect();
    features.sort_unstable();
    features.dedup();
    // Ties count as positive, as in `metrics::accuracy`.
    let predicted: Vec<bool> = sums.iter().map(|&s| s >= 0).collect();
    let (positive_rate, true_positive_rate) = metrics::positive_rates(&predicted, &labels);
    Ok(RunScore {
        positive_rate,
        true_positive_rate,
        fit_seconds,
        accuracy: metrics::accuracy(&sums, &labels),
        auc: metrics::roc_auc(&sums, &labels),
        features_used: features.len(),
        literals_used: used.len(),
    })
}

fn summarise(method: Method, runs: &[RunScore]) -> MethodResult {
    let pick = |f: fn(&RunScore) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
    let (accuracy_mean, accuracy_std) = metrics::mean_std(&pick(|r| r.accuracy));
    let (auc_mean, auc_std) = metrics::mean_std(&pick(|r| r.auc));
    MethodResult {
        method,
        runs: runs.len(),
        accuracy_mean,
        accuracy_std,
        auc_mean,
        auc_std,
        positive_rate_mean: metrics::mean_std(&pick(|r| r.positive_rate)).0,
        true_positive_rate_mean: metrics::mean_std(&pick(|r| r.true_positive_rate)).0,
        fit_seconds_mean: metrics::mean_std(&pick(|r| r.fit_seconds)).0,
        features_used_mean: metrics::mean_std(&pick(|r| r.features_used as f64)).0,
        literals_used_mean: metrics::mean_std(&pick(|r| r.literals_used as f64)).0,
    }
}

/// (train, test) pairs of the protocol.
pub(crate) fn splits(protocol: &Protocol<'_>) -> Result<Vec<(Dataset, Dataset)>, EvalError> {
    match *protocol {
        Protocol::TrainTest { train, test } => Ok(vec![(train.clone(), test.clone())]),
        Protocol::CrossValidation {
            data,
            folds,
            split_seed,
            units,
        } => {
            let fold_of = match units {
                None => row_folds(data.n_rows(), folds, split_seed)?,
                Some(units) => unit_folds(units, data.n_rows(), folds, split_seed)?,
            };
            Ok((0..folds)
                .map(|k| {
                    let (mut train, mut test) = (Vec::new(), Vec::new());
                    for (row, &fold) in fold_of.iter().enumerate() {
                        if fold == k {
                            test.push(row)
                        } else {
                            train.push(row)
                        }
                    }
                    (data.subset(&train), data.subset(&test))
                })
                .collect())
        }
    }
}

/// Each row's fold: rows shuffled by `split_seed`, then dealt round-robin.
fn row_folds(n: usize, folds: usize, split_seed: u64) -> Result<Vec<usize>, EvalError> {
    if folds < 2 || folds > n {
        return Err(EvalError::Invalid(format!(
            "folds must be between 2 and the number of rows ({n}), got {folds}"
        )));
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut StdRng::seed_from_u64(split_seed));
    let mut fold_of = vec![0; n];
    for (position, &row) in order.iter().enumerate() {
        fold_of[row] = position % folds;
    }
    Ok(fold_of)
}

/// Each row's fold when rows belong to units: the distinct units (in order
/// of first row) shuffled by `split_seed` and dealt round-robin, each row
/// in its unit's fold.
fn unit_folds(
    units: &[UnitKey],
    n: usize,
    folds: usize,
    split_seed: u64,
) -> Result<Vec<usize>, EvalError> {
    if units.len() != n {
        return Err(EvalError::Invalid(format!(
            "{} unit keys for {n} rows",
            units.len()
        )));
    }
    let mut index: HashMap<UnitKey, usize> = HashMap::new();
    let mut distinct = Vec::new();
    for &u in units {
        index.entry(u).or_insert_with(|| {
            distinct.push(u);
            distinct.len() - 1
        });
    }
    let count = distinct.len();
    if folds < 2 || folds > count {
        return Err(EvalError::Invalid(format!(
            "folds must be between 2 and the number of privacy units ({count}), got {folds}"
        )));
    }
    let mut order: Vec<usize> = (0..count).collect();
    order.shuffle(&mut StdRng::seed_from_u64(split_seed));
    let mut unit_fold = vec![0; count];
    for (position, &u) in order.iter().enumerate() {
        unit_fold[u] = position % folds;
    }
    Ok(units.iter().map(|u| unit_fold[index[u]]).collect())
}
