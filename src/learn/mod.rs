//! Learning: the learner family ([`family`]: one boundary for every
//! algorithm; [`trained`]: one model type), LazyBB with DP weak learners,
//! prediction, inspection.
//!
//! On the data path this sits after [`crate::data`] (it trains on the
//! encoded bit matrix) and draws all its noise from [`crate::privacy`]. It
//! does no I/O, reads no clock except the model's creation time, and logs
//! nothing.
//!
//! - [`params`]: parameters, checked once into `ValidLazyBbParams`; the
//!   calibration of the noise to the budget; the default rule.
//! - [`projection`]: the KL projection onto kappa-dense measures.
//! - [`lazybb`]: the boosting loop.
//! - `one_rule`, `top_down`: the DP 1-Rule and DP TopDown weak learners,
//!   each with its privacy argument; `row_lists` feeds both.
//! - [`hypothesis`]: the weak hypotheses.
//! - [`model`]: the versioned model file, its privacy statement, prediction.
//! - [`inspect`]: vote table, sparsity and additive shape.
//! - [`baselines`], [`metrics`]: for the evaluation tool.

pub mod baselines;
pub mod family;
pub mod hypothesis;
pub mod inspect;
pub mod lazybb;
pub mod metrics;
pub mod model;
mod one_rule;
pub mod params;
pub mod projection;
mod row_lists;
#[cfg(test)]
mod tests;
mod top_down;
pub mod trained;

pub use family::{AlgorithmName, AlgorithmSpec, LazyBbSpec, Plan, PublicFacts};
pub use hypothesis::Hypothesis;
pub use inspect::{Inspection, inspect};
pub use lazybb::{Ensemble, train};
pub use model::{LazyBbModel, Prediction, Predictor};
pub use params::{
    LazyBbParams, PrivacyMode, SensitivityBound, ValidLazyBbParams, WeakLearnerKind,
    WeakLearnerName,
};
pub use trained::{Model, ModelInspection, ModelPredictor, Output};

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
    /// From the privacy layer.
    #[error(transparent)]
    Privacy(#[from] PrivacyError),
    /// From the data layer (e.g. the model's schema).
    #[error(transparent)]
    Data(#[from] DataError),
}
