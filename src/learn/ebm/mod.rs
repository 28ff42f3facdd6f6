//! DP-EBM (Nori, Caruana, Bu, Shen and Kulkarni, ICML 2021): differentially
//! private explainable boosting machines, classification and regression.
//! One learner of the family, in its own folder.
//!
//! - [`params`]: parameters with the paper's defaults, and the plan (zCDP
//!   cost, noise scales, fixed-point grid) with its sensitivity argument.
//! - [`bins`]: features from the schema and the private binning.
//! - [`fit`]: the training loop with exact discrete Gaussian noise.
//! - [`multiclass`]: the loop for k classes (k class sums per leaf).
//! - [`model`]: shape functions, prediction, importances, edits (PAV).
//! - [`file`](mod@file): the version-2 model file and its privacy statement.

pub mod bins;
pub mod file;
pub mod fit;
mod kernel;
pub mod model;
pub mod multiclass;
pub mod params;
mod softmax;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_multiclass;

pub use file::EbmFile;
pub use model::{EbmModel, EbmPredictor, ShapeFunction, pav, sigmoid};
pub use params::{EbmParams, EbmPlan, EbmSpec};

/// A regressor's default residual clip: a quarter of the label's public
/// range `[min, max]` (chosen on Abalone, docs/accuracy.md: half the range
/// gave RMSE 3.13 at epsilon = 1, a quarter 2.64).
pub fn default_residual_clip(min: f64, max: f64) -> f64 {
    (max - min) / 4.0
}
