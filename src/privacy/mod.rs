//! Privacy: the only place where randomness is drawn and noise is calibrated.
//!
//! Everything that touches private rows and needs randomness goes through this
//! module (SPEC §2 "Randomness" and "Floating point"), so that the later swap
//! to exact samplers (issue: "Privacy integrity") stays local:
//!
//! - [`rng`]: [`NoiseRng`], a ChaCha20 CSPRNG keyed from the operating system.
//!   It can be seeded only in this crate's unit tests.
//! - [`exponential`]: the (weighted) exponential mechanism, sampled in the log
//!   domain so that large `eta` never overflows.
//! - [`laplace`]: Laplace noise and report-noisy-max.
//! - [`calibration`]: the privacy budget type and the per-round split by basic
//!   or advanced composition, and the DP-1R noise rate `eta`.
//!
//! The mechanisms here are *floating-point* samplers (SPEC §2 allows careful
//! float sampling in the first version); see `docs/privacy.md` for what that
//! means for the guarantee.

pub mod calibration;
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
