//! Privacy: the only place where randomness is drawn and noise is calibrated.
//!
//! Everything that touches private rows and needs randomness goes through this
//! module (SPEC §2 "Randomness" and "Floating point"), so that the later swap
//! to exact samplers (issue: "Privacy integrity") stays local:
//!
//! - [`rng`]: [`NoiseRng`], a ChaCha20 CSPRNG keyed from the operating system.
//!   It can be seeded only in this crate's unit tests.
//! - [`exact`]: exact samplers from the CSPRNG's bits (CKS20): Bernoulli of a
//!   rational, Bernoulli(exp(-gamma)), discrete Laplace, discrete Gaussian.
//! - [`grid`]: the `2^-30` grid that scores are rounded to before noise.
//! - [`laplace`]: report-noisy-max with exact discrete Laplace noise, the
//!   selection mechanism of both weak learners (it replaced a rejection-sampled
//!   exponential mechanism whose running time depended on the scores).
//! - [`objective`]: the hidden vector of objective perturbation, the one
//!   draw made in floating point (its output is released only through
//!   exact discrete Laplace noise on a grid).
//! - k-ary randomized response, the local-DP mechanism of `privboost
//!   randomize`, lives with the rest of local DP in
//!   [`crate::local_dp::randomized_response`] (it uses [`exact`]).
//! - [`budget_units`]: exact budget amounts (scaled integers) for the
//!   ledger, and which way each conversion rounds.
//! - [`calibration`]: the privacy budget type and the per-round split by basic
//!   or advanced composition, the noise rates `eta`, and the float-error
//!   margins they charge for.
//!
//! No mechanism draws floating-point noise into a release (the hidden vector
//! of [`objective`] is not released): scores are rounded to a fixed
//! grid and the randomness is exact (integer and rational arithmetic only).
//! The grid and the float error of the scores are part of each mechanism's
//! stated epsilon; `docs/privacy.md` has the statements and proofs.

pub mod budget_units;
pub mod calibration;
pub mod cost;
pub mod exact;
pub mod filter;
#[cfg(test)]
pub(crate) mod float_reference;
pub mod gdp;
pub mod grid;
pub mod laplace;
pub mod mechanisms;
pub mod metrics;
pub mod noise;
pub mod objective;
pub mod rng;
pub mod selection;
#[cfg(test)]
pub(crate) mod testutil;
pub mod unit;
pub mod zcdp;

pub use calibration::{Budget, Composition, RoundBudget};
pub use cost::PrivacyCost;
pub use noise::Noise;
pub use rng::NoiseRng;
pub use unit::Neighbouring;

/// Errors from the privacy layer.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PrivacyError {
    /// A privacy parameter is out of range (the message names it).
    #[error("{0}")]
    InvalidParameter(String),
    /// The operating system's random source failed.
    #[error("the operating system's random number generator failed: {0}")]
    Entropy(String),
}
