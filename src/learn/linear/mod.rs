//! dp-linear: differentially private logistic regression (binary
//! classification) and linear regression (a numeric label with public
//! bounds), one learner of the family, in its own folder.
//!
//! - [`features`]: blocks of features from the schema's literals (why
//!   literals, and how numeric columns enter).
//! - [`params`]: parameters, defaults and the plan, with the sensitivity
//!   argument and the calibration (pure DP with discrete Laplace noise when
//!   delta = 0, zCDP with discrete Gaussian noise when delta > 0).
//! - [`fit`]: cyclic block Newton steps on noisy integer sums.
//! - [`output`]: the other solver: noiseless gradient descent on a
//!   regularised objective, the coefficients released once with noise.
//! - [`objective`]: the third: a hidden random term in the objective (pure
//!   DP, binary), its approximate minimiser released once with noise.
//! - [`threshold`]: a binary classifier's decision threshold, chosen
//!   privately after the fit (the intercept absorbs it).
//! - [`model`]: coefficients, prediction, inspection, load checks.
//! - [`file`](mod@file): the version-2 model file and its privacy statement.

pub mod features;
pub mod file;
pub mod fit;
pub mod model;
pub mod objective;
pub mod output;
pub mod params;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_multiclass;
#[cfg(test)]
mod tests_objective;
#[cfg(test)]
mod tests_output;
#[cfg(test)]
mod tests_threshold;
pub mod threshold;

pub use features::LinearShape;
pub use file::LinearFile;
pub use model::{LinearInspection, LinearModel, LinearPredictor};
pub use params::{LinearParams, LinearPlan, LinearSolver, LinearSpec, NumericFeatures};
