//! privboost: differentially private boosted decision trees.
//!
//! # Layout
//!
//! The modules follow the data path, left to right:
//!
//! - [`data`]: the owner's schema, the streaming CSV reader and the encoder that
//!   turns raw rows into Boolean literals stored as column-major bitsets.
//! - [`privacy`]: every source of noise (the OS CSPRNG), the mechanisms and the
//!   calibration of their noise to a privacy budget. All sampling lives here.
//! - [`learn`]: the Bregman projection, LazyBB, the weak learners, the
//!   non-private baselines, the model type with prediction and inspection.
//! - [`eval`]: the evaluation protocols (train/test split, k-fold CV, grids)
//!   used by `privboost eval`; an owner-side research tool.
//!
//! The library knows nothing of HTTP or SQL.
#![warn(missing_docs)]

pub mod audit;
pub mod data;
pub mod eval;
pub mod learn;
pub mod privacy;
