//! Learning: the learner family ([`family`]: one boundary for every
//! algorithm; [`trained`]: one model type), LazyBB with DP weak learners,
//! prediction, inspection.
//!
//! On the data path this sits after [`crate::data`] (it trains on the
//! encoded bit matrix) and draws all its noise from [`crate::privacy`]. It
//! does no I/O, reads no clock except the model's creation time, and logs
//! nothing.
//!
//! - [`family`]: the boundary every learner sits behind: [`AlgorithmSpec`]
//!   (name and unchecked parameters) -> [`Plan`] (checked, calibrated, with
//!   its [`crate::privacy::PrivacyCost`], before any row is read) -> [`Model`].
//! - [`trained`]: the model of any learner: loading, prediction, inspection.
//! - [`lazybb`]: LazyBB and its weak learners, in their own folder (its
//!   modules are re-exported here under their old paths).
//! - [`metrics`]: accuracy, ROC AUC, RMSE, MAE for the evaluation tool.
//!
//! `docs/architecture.md` lists the files a new learner adds or touches.

pub mod auto;
pub mod binning;
pub mod dpboost;
pub mod ebm;
pub mod family;
pub mod finite;
pub mod form;
pub mod lazybb;
pub mod linear;
pub mod metrics;
pub mod naive_bayes;
pub mod private_eval;
#[cfg(test)]
pub(crate) mod test_grades;
#[cfg(test)]
pub(crate) mod test_no_signal;
pub mod threshold;
pub mod trained;

pub use lazybb::{baselines, hypothesis, inspect, model, params, projection};

pub use family::{AlgorithmName, AlgorithmSpec, ColumnKinds, LazyBbSpec, Plan, PublicFacts};
pub use form::{FormNode, FormOutput, FormTree, LiteralForm};
pub use hypothesis::Hypothesis;
pub use inspect::{Inspection, inspect};
pub use lazybb::{Ensemble, train};
pub use model::{LazyBbModel, Prediction, Predictor};
pub use params::{
    LazyBbParams, PrivacyMode, SensitivityBound, ValidLazyBbParams, WeakLearnerKind,
    WeakLearnerName,
};
pub use private_eval::{
    ExactMetrics, PrivateMetrics, check_private_metrics, exact_metrics, private_metrics,
};
pub use trained::{ClassesPrediction, Model, ModelEdit, ModelInspection, ModelPredictor, Output};

use crate::data::DataError;
use crate::privacy::PrivacyError;

/// Errors from training, model loading and prediction.
#[derive(Debug, thiserror::Error)]
pub enum LearnError {
    /// A parameter is out of range.
    #[error("{0}")]
    InvalidParameter(String),
    /// Training data without a label column.
    #[error("the training data has no labels")]
    NoLabels,
    /// Training data without rows.
    #[error("the training data has no rows")]
    NoRows,
    /// A private run was started without a noise source.
    #[error("a private training run needs a noise source")]
    NoNoiseSource,
    /// The progress callback asked to stop.
    #[error("training was cancelled")]
    Cancelled,
    /// The model file is malformed or of another version.
    #[error("invalid model file: {0}")]
    ModelFormat(String),
    /// A trained or edited model with a number that is not finite: it
    /// could not be stored and read back (`Model::check_storable`).
    #[error("the model has a non-finite number ({0}); it was not stored")]
    NotFinite(String),
    /// From the privacy layer.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// From the data layer (e.g. the model's schema).
    #[error(transparent)]
    Data(#[from] DataError),
}

/// The number of rows a fit reads, checked against its plan: no rows is
/// [`LearnError::NoRows`], and any other count than the planned one is an
/// error (every noise scale was derived from the planned count).
pub(crate) fn planned_rows(
    data: &crate::data::Dataset,
    planned: usize,
) -> Result<usize, LearnError> {
    let n = data.n_rows();
    if n == 0 {
        return Err(LearnError::NoRows);
    }
    if n != planned {
        return Err(LearnError::InvalidParameter(
            "the data does not have the planned number of rows".into(),
        ));
    }
    Ok(n)
}
