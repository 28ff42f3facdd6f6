//! DPBoost (Li, Wu, Wen and He, AAAI 2020; PAPERS.md §1.7, §2.2, §4 items
//! 17-23): differentially private gradient boosting with gradient-based data
//! filtering, geometric leaf clipping and an ensemble of ensembles over
//! disjoint subsets, with the reference code's leaks fixed (public split
//! candidates, a public or noised-and-charged initial score, data-independent
//! subset sizes and tree shapes). One learner of the family, in its own folder.
//!
//! - [`params`]: parameters with the paper's defaults, the subset sizes, and
//!   the plan (budget split, sensitivities under substitution, noise scales).
//! - [`tree`]: the public split candidates and one DP tree (Alg. 1).
//! - [`fit`]: the two-level boosting loop (Alg. 2) and the initial score.
//! - [`model`]: the trees, prediction, inspection and the model file.
//! - [`multiclass`]: k classes as k one-vs-rest binary fits at epsilon / k.
//! - [`threshold`]: a binary classifier's decision threshold, chosen
//!   privately after the trees (the initial score absorbs it).

pub mod fit;
pub mod model;
pub mod multiclass;
pub mod params;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_multiclass;
#[cfg(test)]
mod tests_threshold;
pub mod threshold;
pub mod tree;

pub use model::{DpBoostFile, DpBoostInspection, DpBoostModel};
pub use params::{DpBoostParams, DpBoostPlan, DpBoostSpec};
