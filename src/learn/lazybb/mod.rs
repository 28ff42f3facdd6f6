//! LazyBB (smooth boosting with lazy Bregman projection; Asadi, Carmosino,
//! Jahanara, Rafiey and Salamatian) with the DP 1-Rule and DP TopDown weak
//! learners: one learner of the family, in its own folder.
//!
//! - [`params`]: parameters, checked once into `ValidLazyBbParams`; the
//!   calibration of the noise to the budget; the default rules.
//! - [`projection`]: the KL projection onto kappa-dense measures.
//! - [`boost`]: the boosting loop.
//! - `one_rule`, `top_down`: the DP 1-Rule and DP TopDown weak learners,
//!   each with its privacy argument; `column_codes` feeds the sums of
//!   both, over the one-hot `groups` it checks.
//! - [`hypothesis`]: the weak hypotheses.
//! - [`model`]: LazyBB's model file (version 1), its privacy statement,
//!   prediction.
//! - [`multiclass`]: k classes by one-vs-rest, the budget split over the
//!   k binary fits.
//! - [`inspect`]: vote table, sparsity and additive shape (per class for
//!   a multiclass model).
//! - [`baselines`]: non-private baselines for the evaluation tool.
//! - [`vote_threshold`]: a binary fit's vote threshold, chosen privately
//!   after the rounds.

pub mod baselines;
pub mod boost;
mod column_codes;
mod groups;
pub mod hypothesis;
pub mod inspect;
mod local;
pub mod model;
pub mod multiclass;
mod one_rule;
pub mod params;
pub mod projection;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_multiclass;
#[cfg(test)]
mod tests_vote_threshold;
mod top_down;
pub mod vote_threshold;

pub(crate) use boost::train_local;
pub use boost::{Ensemble, train};
#[cfg(test)]
pub(crate) use boost::{Fault, train_with_fault};
pub(crate) use one_rule::{ColumnRr, LocalDebias};

use super::LearnError;
