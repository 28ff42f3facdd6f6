//! A model's quality on private rows, released with epsilon-DP
//! (`privacy::metrics` has the mechanisms and their sensitivity arguments):
//! the predictions are computed here, the noise is added there.

use serde::Serialize;

use super::{LearnError, Model, Output};
use crate::data::{Dataset, Task};
use crate::privacy::{Neighbouring, NoiseRng, metrics};

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
    /// Multiclass classification: accuracy, macro-averaged F1 and the
    /// confusion matrix, all from one noisy confusion matrix.
    Multiclass {
        /// Noisy share of rows whose predicted class is right.
        accuracy: f64,
        /// Noisy macro-averaged F1 (over the classes with predicted or
        /// actual rows after noise); `None` when no class has any.
        macro_f1: Option<f64>,
        /// The class names (schema order): the confusion matrix's rows and
        /// columns.
        classes: Vec<String>,
        /// The noisy confusion matrix, `confusion[actual][predicted]` (counts
        /// of rows; may be negative: the metrics count those as 0).
        confusion: Vec<Vec<i64>>,
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
/// The mechanism's description for a multiclass classifier.
const MULTICLASS_MECHANISM: &str = "exact discrete Laplace noise of scale 2/epsilon on each cell of the k x k confusion matrix (rows by actual class, columns by predicted class); L1 sensitivity 2 under substitution; accuracy and macro-F1 are computed from the noisy matrix (docs/privacy.md, \"Releasing a model's quality on private rows\")";
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
    // A privacy unit of k rows (the schema's, which the data was read and
    // bounded with) changes the histogram by up to 2k and the sum of
    // squared errors by up to k times its row sensitivity: the noise is
    // drawn at epsilon / k, which is epsilon per unit (docs/privacy.md,
    // "The privacy unit").
    let unit = Neighbouring::units(model.schema().unit_max_rows()).unwrap_or(Neighbouring::ROW);
    let row_epsilon = unit.row_epsilon(epsilon);
    match model.task() {
        Task::Binary => {
            let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
            let rows = outputs.iter().enumerate().map(|(i, o)| {
                let p = match o {
                    Output::Class(p) => p.probability,
                    Output::Value(v) => *v,
                    Output::Classes(_) => f64::NAN,
                };
                (p, labels.get(i))
            });
            let h = metrics::noisy_score_histogram(rows, row_epsilon, rng)?;
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
                    Output::Classes(_) => (f64::NAN, y),
                })
                .collect();
            let mse = metrics::noisy_mean_squared_error(&rows, min, max, row_epsilon, rng)?;
            Ok(PrivateMetrics::Regression {
                rmse: mse.sqrt(),
                n_rows,
                epsilon,
                mechanism: REGRESSION_MECHANISM,
            })
        }
        Task::Multiclass { k } => {
            let actual = data.classes.as_ref().ok_or(LearnError::NoLabels)?;
            let rows = outputs.iter().zip(actual).map(|(o, &a)| {
                let predicted = match o {
                    Output::Classes(p) => p.index,
                    // Not a multiclass output: counted nowhere (within the
                    // sensitivity, privacy::metrics::confusion_counts).
                    Output::Class(_) | Output::Value(_) => usize::MAX,
                };
                (predicted, usize::from(a))
            });
            let m = metrics::noisy_confusion(rows, k, n_rows, row_epsilon, rng)?;
            Ok(PrivateMetrics::Multiclass {
                accuracy: m.accuracy(),
                macro_f1: m.macro_f1(),
                classes: model.schema().class_names().to_vec(),
                confusion: m
                    .counts
                    .iter()
                    .map(|r| r.iter().map(|&c| c as i64).collect())
                    .collect(),
                n_rows,
                epsilon,
                mechanism: MULTICLASS_MECHANISM,
            })
        }
    }
}

/// Whether [`private_metrics`] can release `model`'s quality at `epsilon`:
/// the noise scale of the task's release at the epsilon per row (the
/// schema's privacy unit divides it) must be one the exact sampler draws.
/// Called before the charge, so that a refusal costs nothing.
pub fn check_private_metrics(model: &Model, epsilon: f64) -> Result<(), LearnError> {
    let unit = Neighbouring::units(model.schema().unit_max_rows()).unwrap_or(Neighbouring::ROW);
    let row_epsilon = unit.row_epsilon(epsilon);
    let sensitivity = match model.task() {
        // The score histogram and the confusion matrix: L1 2.
        Task::Binary | Task::Multiclass { .. } => 2.0,
        Task::Regression { .. } => metrics::MSE_GRID as f64,
    };
    metrics::scale_for(sensitivity, row_epsilon)?;
    Ok(())
}

/// What an evaluation on public test data returns: the exact metrics, no
/// noise, no charge (the owner declared the rows public: docs/privacy.md,
/// "Public test data"). Computed as `privboost eval` computes its test
/// figures: accuracy from the predicted class, ROC AUC from the score.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "task", rename_all = "snake_case")]
pub enum ExactMetrics {
    /// Binary classification.
    Classification {
        /// Share of rows whose predicted class is right.
        accuracy: f64,
        /// ROC AUC of the scores (`None` when a class has no rows).
        roc_auc: Option<f64>,
        /// Rows evaluated.
        n_rows: usize,
    },
    /// Regression.
    Regression {
        /// Root mean squared error, in label units.
        rmse: f64,
        /// Mean absolute error, in label units.
        mae: f64,
        /// Rows evaluated.
        n_rows: usize,
    },
}

/// `model`'s exact quality on `data` (encoded with the model's schema). Not
/// a DP release: only for rows their owner declared public.
pub fn exact_metrics(model: &Model, data: &Dataset) -> Result<ExactMetrics, LearnError> {
    let outputs = model.predictor().predict_all(data);
    let n_rows = data.n_rows();
    match model.task() {
        Task::Binary => {
            let labels = data.labels.as_ref().ok_or(LearnError::NoLabels)?;
            let y: Vec<bool> = (0..n_rows).map(|i| labels.get(i)).collect();
            let mut scores = Vec::with_capacity(n_rows);
            let mut correct = 0usize;
            for (o, &label) in outputs.iter().zip(&y) {
                let (score, positive) = match o {
                    Output::Class(p) => (p.score, p.positive),
                    Output::Value(v) => (*v, *v >= 0.5),
                    Output::Classes(_) => (f64::NAN, false),
                };
                scores.push(score);
                correct += usize::from(positive == label);
            }
            Ok(ExactMetrics::Classification {
                accuracy: correct as f64 / n_rows.max(1) as f64,
                roc_auc: Some(crate::learn::metrics::roc_auc(&scores, &y)).filter(|a| !a.is_nan()),
                n_rows,
            })
        }
        Task::Multiclass { .. } => {
            let actual = data.classes.as_ref().ok_or(LearnError::NoLabels)?;
            let predicted: Vec<usize> = outputs
                .iter()
                .map(|o| match o {
                    Output::Classes(p) => p.index,
                    _ => usize::MAX,
                })
                .collect();
            Ok(ExactMetrics::Classification {
                accuracy: crate::learn::metrics::multiclass_accuracy(&predicted, actual),
                roc_auc: None,
                n_rows,
            })
        }
        Task::Regression { .. } => {
            let actual = data.targets.as_ref().ok_or(LearnError::NoLabels)?;
            let predicted: Vec<f64> = outputs
                .iter()
                .map(|o| match o {
                    Output::Value(v) => *v,
                    Output::Class(p) => p.probability,
                    Output::Classes(_) => f64::NAN,
                })
                .collect();
            Ok(ExactMetrics::Regression {
                rmse: crate::learn::metrics::rmse(&predicted, actual),
                mae: crate::learn::metrics::mae(&predicted, actual),
                n_rows,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Dataset, Encoder};
    use crate::learn::{AlgorithmSpec, PublicFacts, metrics as exact};
    use crate::privacy::Budget;

    fn abalone() -> (Encoder, Dataset) {
        crate::data::shipped::load_one("abalone", "abalone.csv")
    }

    /// A regressor's exact metrics are the RMSE and MAE of its predictions
    /// in label units, with no noise (the same twice), and the DP release of
    /// the same model and rows is a different, noisy number near it.
    #[test]
    fn exact_regression_metrics_are_the_predictions_rmse_and_mae() {
        let (encoder, data) = abalone();
        let plan = AlgorithmSpec::Dpboost(crate::learn::dpboost::DpBoostSpec::default())
            .plan(
                Budget::new(1.0, 0.0).unwrap(),
                PublicFacts::new(&encoder, data.n_rows()),
            )
            .unwrap();
        let model = plan
            .fit(&data, &encoder, &mut NoiseRng::seeded(5), &mut |_| true)
            .unwrap();
        let predicted: Vec<f64> = model
            .predictor()
            .predict_all(&data)
            .into_iter()
            .map(|o| match o {
                Output::Value(v) => v,
                Output::Class(_) | Output::Classes(_) => panic!("a regressor"),
            })
            .collect();
        let actual = data.targets.clone().unwrap();
        let ExactMetrics::Regression { rmse, mae, n_rows } = exact_metrics(&model, &data).unwrap()
        else {
            panic!("regression metrics")
        };
        assert_eq!(n_rows, 4177);
        assert_eq!(rmse, exact::rmse(&predicted, &actual));
        assert_eq!(mae, exact::mae(&predicted, &actual));
        assert_eq!(
            exact_metrics(&model, &data).unwrap(),
            exact_metrics(&model, &data).unwrap()
        );
        let PrivateMetrics::Regression { rmse: noisy, .. } =
            private_metrics(&model, &data, 1.0, &mut NoiseRng::seeded(9)).unwrap()
        else {
            panic!("regression release")
        };
        assert!(
            noisy != rmse && (noisy - rmse).abs() < 0.5,
            "{noisy} vs {rmse}"
        );
    }
}
