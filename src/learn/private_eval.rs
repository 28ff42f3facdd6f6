//! A model's quality on private rows, released with epsilon-DP
//! (`privacy::metrics` has the mechanisms and their sensitivity arguments):
//! the predictions are computed here, the noise is added there.

use serde::Serialize;

use super::{LearnError, Model, Output};
use crate::data::{Dataset, Task};
use crate::privacy::{NoiseRng, metrics};

/// What an evaluation releases.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum PrivateMetrics {
    /// Binary classification: accuracy at the 0.5 threshold and ROC AUC, both
    /// from one noisy histogram of the predicted probabilities per label.
    Classification {
        /// Noisy share of rows whose class (probability >= 0.5) is right.
        accuracy: f64,
        /// `None` when a class has no rows after noise.
        roc_auc: Option<f64>,
        /// Rows evaluated (public).
        n_rows: usize,
        /// The epsilon spent.
        epsilon: f64,
        /// How the noise was added.
        mechanism: &'static str,
    },
    /// Regression: RMSE from a noisy sum of clamped squared errors.
    Regression {
        /// Noisy root mean squared error, in label units.
        rmse: f64,
        /// Rows evaluated (public).
        n_rows: usize,
        /// The epsilon spent.
        epsilon: f64,
        /// How the noise was added.
        mechanism: &'static str,
    },
}

/// The mechanism's description for a classifier.
const CLASSIFICATION_MECHANISM: &str = "exact discrete Laplace noise of scale 2/epsilon on the counts of rows per (label, probability bin of width 0.01); L1 sensitivity 2 under substitution (docs/privacy.md, \"Releasing a model's quality on private rows\")";
/// The mechanism's description for a regressor.
const REGRESSION_MECHANISM: &str = "exact discrete Laplace noise of scale 2^16/epsilon on the sum of squared errors (predictions and labels clamped to the public label range, in units of the squared range, on the grid 2^-16); sensitivity 2^16 under substitution (docs/privacy.md, \"Releasing a model's quality on private rows\")";

/// Release `model`'s quality on `data` (the caller has charged `epsilon`,
/// pure DP, to the rows' ledger). `data` must be encoded with the model's
/// schema.
pub fn private_metrics(
    model: &Model,
    data: &Dataset,
    epsilon: f64,
    rng: &mut NoiseRng,
) -> Result<PrivateMetrics, LearnError> {
    let outputs = model.predictor().predict_all(data);
    let n_rows = data.n_rows();
    match model.task() {
        Task::Binary => {
            let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
            let rows = outputs.iter().enumerate().map(|(i, o)| {
                let p = match o {
                    Output::Class(p) => p.probability,
                    Output::Value(v) => *v,
                };
                (p, labels.get(i))
            });
            let h = metrics::noisy_score_histogram(rows, epsilon, rng)?;
            Ok(PrivateMetrics::Classification {
                accuracy: h.accuracy(),
                roc_auc: h.roc_auc(),
                n_rows,
                epsilon,
                mechanism: CLASSIFICATION_MECHANISM,
            })
        }
        Task::Regression { min, max } => {
            let targets = data.targets.as_ref().ok_or(LearnError::NoLabels)?;
            let rows: Vec<(f64, f64)> = outputs
                .iter()
                .zip(targets)
                .map(|(o, &y)| match o {
                    Output::Value(v) => (*v, y),
                    Output::Class(p) => (p.probability, y),
                })
                .collect();
            let mse = metrics::noisy_mean_squared_error(&rows, min, max, epsilon, rng)?;
            Ok(PrivateMetrics::Regression {
                rmse: mse.sqrt(),
                n_rows,
                epsilon,
                mechanism: REGRESSION_MECHANISM,
            })
        }
    }
}
