//! Evaluation of any learner of the family through its public boundary
//! (`AlgorithmSpec -> Plan -> Model`): the same code path as `train` and the
//! service, scored on held-out rows with the task's metrics (accuracy and
//! ROC AUC for classification; accuracy and macro-averaged F1 for
//! multiclass; RMSE and MAE for regression), mean ± sample
//! standard deviation over repeats x folds.
//!
//! Owner-side, like the rest of [`crate::eval`]: the figures are computed
//! on data the caller holds and are not private releases.

use rayon::prelude::*;
use serde::Serialize;

use super::{EvalError, Protocol, splits};
use crate::data::{Dataset, Encoder, Task};
use crate::learn::{AlgorithmSpec, LearnError, Output, PublicFacts, binning, metrics};
use crate::privacy::{Budget, NoiseRng, PrivacyError};

/// Mean and sample standard deviation of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stat {
    /// Mean over the runs.
    pub mean: f64,
    /// Sample standard deviation over the runs.
    pub std: f64,
}

impl Stat {
    fn of(values: &[f64]) -> Stat {
        let (mean, std) = metrics::mean_std(values);
        Stat { mean, std }
    }
}

/// The task's metrics over every run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Scores {
    /// Classification.
    Class {
        /// Test accuracy (score >= 0.5 probability, i.e. the predicted class).
        accuracy: Stat,
        /// ROC AUC of the model's score.
        auc: Stat,
        /// Share of held-out rows predicted positive (calibration check:
        /// compare with the true positive share).
        positive_rate: Stat,
        /// Share of the held-out positives predicted positive (recall).
        true_positive_rate: Stat,
    },
    /// Regression.
    Regression {
        /// Root mean squared error.
        rmse: Stat,
        /// Mean absolute error.
        mae: Stat,
    },
    /// Multiclass classification.
    Multiclass {
        /// Test accuracy (the most probable class).
        accuracy: Stat,
        /// Macro-averaged F1 (`metrics::macro_f1`: the unweighted mean of
        /// each class's F1 over the classes among the labels or predictions).
        macro_f1: Stat,
    },
}

/// The result of one (learner, budget) cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecResult {
    /// The learner with its resolved parameters.
    pub spec: AlgorithmSpec,
    /// Total epsilon.
    pub epsilon: f64,
    /// Total delta.
    pub delta: f64,
    /// Training runs (repeats x folds).
    pub runs: usize,
    /// The metrics.
    pub scores: Scores,
    /// DP-EBM: the signal-to-noise ratio `n / s` of its default rule on the
    /// first training split (public; `Plan::signal_to_noise`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal_to_noise: Option<f64>,
    /// Wall-clock seconds of one plan + fit (no prediction), over the runs.
    /// Runs go in parallel on rayon's pool, so set `RAYON_NUM_THREADS=1`
    /// for a time that no other run shares a core with.
    pub fit_seconds: Stat,
}

/// The scores of one run.
struct RunScore {
    /// Accuracy or RMSE.
    primary: f64,
    /// ROC AUC or MAE.
    secondary: f64,
    /// Classification: (share predicted positive, true positive rate).
    rates: Option<(f64, f64)>,
    /// Seconds of plan + fit.
    fit_seconds: f64,
}

/// Evaluate `spec` at `budget`, `repeats` times under `protocol`. `noise(i)`
/// gives run `i`'s noise source (production: the OS; tests: seeded).
pub fn evaluate_spec(
    protocol: &Protocol<'_>,
    encoder: &Encoder,
    spec: &AlgorithmSpec,
    budget: Budget,
    repeats: usize,
    noise: &(dyn Fn(usize) -> Result<NoiseRng, PrivacyError> + Sync),
    on_run_done: &(dyn Fn() + Sync),
) -> Result<SpecResult, EvalError> {
    if repeats == 0 {
        return Err(EvalError::Invalid("repeats must be at least 1".into()));
    }
    let splits = splits(protocol)?;
    let task = encoder.schema().task();
    // Plan once up front so a bad parameter fails before any work.
    let first = spec.plan(budget, PublicFacts::new(encoder, splits[0].0.n_rows()))?;
    let runs: Vec<(usize, usize)> = (0..repeats)
        .flat_map(|r| (0..splits.len()).map(move |s| (r, s)))
        .collect();
    let scores: Vec<Result<RunScore, EvalError>> = runs
        .par_iter()
        .enumerate()
        .map(|(i, &(_, s))| {
            let (train, test) = &splits[s];
            let result = run_once(spec, budget, train, test, encoder, task, noise(i)?);
            on_run_done();
            result
        })
        .collect();
    let scores: Vec<RunScore> = scores.into_iter().collect::<Result<_, _>>()?;
    let pick = |f: fn(&RunScore) -> f64| Stat::of(&scores.iter().map(f).collect::<Vec<f64>>());
    let a = pick(|s| s.primary);
    let b = pick(|s| s.secondary);
    Ok(SpecResult {
        signal_to_noise: first.signal_to_noise(),
        spec: first.resolved,
        epsilon: budget.epsilon(),
        delta: budget.delta(),
        runs: runs.len(),
        scores: match task {
            Task::Binary => Scores::Class {
                accuracy: a,
                auc: b,
                positive_rate: pick(|s| s.rates.map_or(f64::NAN, |r| r.0)),
                true_positive_rate: pick(|s| s.rates.map_or(f64::NAN, |r| r.1)),
            },
            Task::Regression { .. } => Scores::Regression { rmse: a, mae: b },
            Task::Multiclass { .. } => Scores::Multiclass {
                accuracy: a,
                macro_f1: b,
            },
        },
        fit_seconds: pick(|s| s.fit_seconds),
    })
}

/// One run: accuracy, AUC and the two rates, or RMSE and MAE; with the fit's seconds.
fn run_once(
    spec: &AlgorithmSpec,
    budget: Budget,
    train: &Dataset,
    test: &Dataset,
    encoder: &Encoder,
    task: Task,
    mut rng: NoiseRng,
) -> Result<RunScore, EvalError> {
    let start = std::time::Instant::now();
    let plan = spec.plan(budget, PublicFacts::new(encoder, train.n_rows()))?;
    let model = plan.fit(train, encoder, &mut rng, &mut |_| true)?;
    let fit_seconds = start.elapsed().as_secs_f64();
    // With private bins the model's literals are derived from the base
    // grid the held-out rows were encoded with: re-express them.
    let derived;
    let test = if model.schema() == encoder.schema() {
        test
    } else {
        derived = binning::derive(test, encoder.schema(), model.schema())?.1;
        &derived
    };
    let outputs = model.predictor().predict_all(test);
    match task {
        Task::Binary => {
            let labels = test.labels.as_ref().ok_or(LearnError::NoLabels)?;
            let labels: Vec<bool> = (0..test.n_rows()).map(|i| labels.get(i)).collect();
            let mut scores = Vec::with_capacity(outputs.len());
            let mut predicted = Vec::with_capacity(outputs.len());
            for o in &outputs {
                let Output::Class(p) = o else {
                    return Err(EvalError::Invalid("a classifier returned a value".into()));
                };
                scores.push(p.score);
                predicted.push(p.positive);
            }
            Ok(RunScore {
                primary: metrics::accuracy_of(&predicted, &labels),
                secondary: metrics::roc_auc(&scores, &labels),
                rates: Some(metrics::positive_rates(&predicted, &labels)),
                fit_seconds,
            })
        }
        Task::Multiclass { k } => {
            let actual = test.classes.as_ref().ok_or(LearnError::NoLabels)?;
            let predicted: Vec<usize> = outputs
                .iter()
                .map(|o| match o {
                    Output::Classes(p) => Ok(p.index),
                    _ => Err(EvalError::Invalid(
                        "a multiclass model returned another kind of output".into(),
                    )),
                })
                .collect::<Result<_, _>>()?;
            Ok(RunScore {
                primary: metrics::multiclass_accuracy(&predicted, actual),
                secondary: metrics::macro_f1(&predicted, actual, k),
                rates: None,
                fit_seconds,
            })
        }
        Task::Regression { .. } => {
            let actual = test.targets.as_ref().ok_or(LearnError::NoLabels)?;
            let predicted: Vec<f64> = outputs
                .iter()
                .map(|o| match o {
                    Output::Value(v) => Ok(*v),
                    Output::Class(_) | Output::Classes(_) => {
                        Err(EvalError::Invalid("a regressor returned a class".into()))
                    }
                })
                .collect::<Result<_, _>>()?;
            Ok(RunScore {
                primary: metrics::rmse(&predicted, actual),
                secondary: metrics::mae(&predicted, actual),
                rates: None,
                fit_seconds,
            })
        }
    }
}
