//! One additive noise release as the exact samplers take it: discrete
//! Laplace with a rational scale (pure DP) or discrete Gaussian with a
//! rational variance (zCDP), CKS20. The learners' plans compute these
//! (rounded up) before any row is read; their fits draw from them.

use serde::{Deserialize, Serialize};

use super::{NoiseRng, PrivacyError, exact};

/// The noise of one kind of release (in the units of the released sum).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Noise {
    /// Discrete Laplace with scale `num / den` (pure DP, `delta = 0`).
    Laplace {
        /// Scale numerator.
        num: u128,
        /// Scale denominator.
        den: u128,
    },
    /// Discrete Gaussian with variance `num / den` (zCDP, `delta > 0`).
    Gaussian {
        /// Variance numerator.
        num: u128,
        /// Variance denominator.
        den: u128,
    },
}

impl Noise {
    /// One draw from the exact sampler.
    pub fn draw(&self, rng: &mut NoiseRng) -> Result<i128, PrivacyError> {
        match *self {
            Noise::Laplace { num, den } => exact::additive_discrete_laplace(rng, num, den),
            Noise::Gaussian { num, den } => exact::discrete_gaussian(rng, num, den),
        }
    }

    /// The variance (Laplace: the discrete one's, `2 t / (1 - t)^2` with
    /// `t = e^(-1/b)`, CKS20 §2; Gaussian: the parameter, an upper bound).
    pub fn variance(&self) -> f64 {
        match *self {
            Noise::Laplace { num, den } => {
                let t = (-(den as f64) / num as f64).exp();
                2.0 * t / (1.0 - t).powi(2)
            }
            Noise::Gaussian { num, den } => num as f64 / den as f64,
        }
    }

    /// The standard deviation.
    pub fn std(&self) -> f64 {
        self.variance().sqrt()
    }
}
