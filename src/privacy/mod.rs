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
//! - [`exponential`]: the (weighted) exponential mechanism on log-weights
//!   rounded to a `2^-30` grid, sampled exactly.
//! - [`laplace`]: report-noisy-max with exact discrete Laplace noise.
//! - [`calibration`]: the privacy budget type and the per-round split by basic
//!   or advanced composition, and the DP-1R noise rate `eta`.
//!
//! No mechanism draws floating-point noise: scores are rounded to a fixed
//! grid and the randomness is exact (integer and rational arithmetic only).
//! The grid and the float error of the scores are part of each mechanism's
//! stated epsilon; `docs/privacy.md` has the statements and proofs.

pub mod calibration;
pub mod exact;
pub mod exponential;
pub mod laplace;
pub mod rng;
#[cfg(test)]
pub(crate) mod testutil;

pub use calibration::{Budget, Composition, RoundBudget};
pub use rng::NoiseRng;

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
