//! What a training run costs, stated before it runs.
//!
//! Every learner turns its checked parameters, the public row count and the
//! job's budget into a [`PrivacyCost`] *before* it reads a row. The ledger
//! charges [`PrivacyCost::charge`], the estimate route shows the cost, and the
//! model's privacy statement describes it: nothing downstream re-derives a
//! learner's accounting (SPEC §4.7; OpenDP's "privacy map" in spirit).
//!
//! The variants record how the guarantee arises, so that a later accounting
//! across jobs (a zCDP filter) can compose the tighter quantity:
//! - [`PrivacyCost::Pure`]: a pure epsilon-DP run (LazyBB with delta = 0);
//! - [`PrivacyCost::Approx`]: an (epsilon, delta) guarantee from a composition
//!   theorem over pure steps (LazyBB with delta > 0, advanced composition);
//! - [`PrivacyCost::Zcdp`]: a rho-zCDP run (discrete Gaussian noise, DP-EBM),
//!   with the (epsilon, delta) that its conversion proves.

use serde::{Deserialize, Serialize};

use super::calibration::Budget;

/// The privacy loss of one training run, known before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PrivacyCost {
    /// Pure epsilon-DP.
    Pure {
        /// The run's epsilon.
        epsilon: f64,
    },
    /// (epsilon, delta)-DP from a composition theorem over pure steps.
    Approx {
        /// The run's epsilon.
        epsilon: f64,
        /// The run's delta.
        delta: f64,
    },
    /// rho-zero-concentrated DP, converted to (epsilon, delta) for the ledger.
    Zcdp {
        /// The run's rho (all phases composed additively).
        rho: f64,
        /// The epsilon the conversion proves at `delta`.
        epsilon: f64,
        /// The delta of the conversion.
        delta: f64,
    },
}

impl PrivacyCost {
    /// The (epsilon, delta) charged to the ledger under basic composition
    /// across jobs.
    pub fn charge(&self) -> Budget {
        let (epsilon, delta) = match *self {
            PrivacyCost::Pure { epsilon } => (epsilon, 0.0),
            PrivacyCost::Approx { epsilon, delta } | PrivacyCost::Zcdp { epsilon, delta, .. } => {
                (epsilon, delta)
            }
        };
        // Invariant: every constructor in the learners builds the cost from a
        // checked `Budget`, whose epsilon is finite and > 0 and delta in [0, 1).
        Budget::new(epsilon, delta).expect("a cost is built from a checked budget")
    }

    /// One sentence for the privacy statement and the estimate.
    pub fn describe(&self) -> String {
        match *self {
            PrivacyCost::Pure { epsilon } => format!("pure {epsilon}-DP"),
            PrivacyCost::Approx { epsilon, delta } => {
                format!("({epsilon}, {delta})-DP by a composition theorem over pure-DP steps")
            }
            PrivacyCost::Zcdp {
                rho,
                epsilon,
                delta,
            } => format!(
                "{rho:.6e}-zCDP, which implies ({epsilon}, {delta})-DP (Canonne-Kamath-Steinke 2020 conversion)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_the_stated_pair() {
        let pure = PrivacyCost::Pure { epsilon: 0.5 };
        assert_eq!(pure.charge(), Budget::new(0.5, 0.0).unwrap());
        let zcdp = PrivacyCost::Zcdp {
            rho: 0.02,
            epsilon: 1.0,
            delta: 1e-6,
        };
        assert_eq!(zcdp.charge(), Budget::new(1.0, 1e-6).unwrap());
        let json = serde_json::to_value(zcdp).unwrap();
        assert_eq!(json["kind"], "zcdp");
        assert!(zcdp.describe().contains("zCDP"));
    }
}
