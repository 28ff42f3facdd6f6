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
//! - [`store`]: the service's SQLite file: datasets and their encoded rows,
//!   the privacy ledger (admission in one `BEGIN IMMEDIATE` transaction),
//!   jobs, models, deployments, API keys.
//! - [`jobs`]: the bounded worker pool that trains on blocking threads, with
//!   leases, cancellation and progress.
//! - [`api`]: the HTTP service (axum): routes, auth, problem+json errors.
//!
//! `data`, `privacy` and `learn` know nothing of HTTP or SQL; `store` knows SQL
//! but not HTTP; only `api` knows HTTP.
#![warn(missing_docs)]

pub mod api;
pub mod audit;
pub mod data;
pub mod eval;
pub mod export;
pub mod jobs;
pub mod learn;
pub mod local_dp;
pub mod privacy;
pub mod store;
