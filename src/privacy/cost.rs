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

use super::PrivacyError;
use super::calibration::Budget;
use super::zcdp;

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
    /// Post-processing of rows the owner randomized on the client
    /// (`privboost randomize`): each row is `local_epsilon`-local DP before
    /// it reaches the service, and training adds no central privacy loss
    /// (docs/privacy.md, "Local DP collection"). The ledger charges 0.
    LocalDp {
        /// The per-row local epsilon the dataset was declared with.
        local_epsilon: f64,
    },
}

impl PrivacyCost {
    /// The (epsilon, delta) charged to the ledger under basic composition
    /// across jobs.
    ///
    /// A [`PrivacyCost::LocalDp`] run has no central charge (the ledger
    /// records 0 through `filter::Loss::of`): calling this on one is a bug,
    /// and the plans that call it (private binning, `auto`) refuse local-DP
    /// data before they are made.
    pub fn charge(&self) -> Budget {
        let (epsilon, delta) = match *self {
            PrivacyCost::Pure { epsilon } => (epsilon, 0.0),
            PrivacyCost::Approx { epsilon, delta } | PrivacyCost::Zcdp { epsilon, delta, .. } => {
                (epsilon, delta)
            }
            PrivacyCost::LocalDp { .. } => (0.0, 0.0),
        };
        // Invariant: every constructor in the learners builds the cost from a
        // checked `Budget`, whose epsilon is finite and > 0 and delta in [0, 1).
        Budget::new(epsilon, delta).expect("a cost is built from a checked budget")
    }

    /// This run followed by a pure `epsilon_phase`-DP phase on the same rows
    /// (the private binning, `learn::binning`), with `charged` the job's
    /// requested budget. Composition (docs/privacy.md, "Private binning for
    /// every learner"):
    /// - pure + pure: pure, the epsilons add (basic composition, Dwork and
    ///   Roth 2014, Thm 3.16);
    /// - (epsilon, delta) + pure: (epsilon + epsilon_phase, delta), the same
    ///   theorem;
    /// - rho-zCDP + pure: a pure epsilon-DP mechanism is epsilon^2/2-zCDP
    ///   (Bun and Steinke 2016, Prop. 1.4) and zCDP composes additively
    ///   (same paper), so the total is (rho + epsilon_phase^2/2)-zCDP,
    ///   converted once (CKS20 Cor. 13).
    ///
    /// The epsilon recorded is the larger of `charged` and the epsilon the
    /// composition proves, so the ledger never charges less than is proven
    /// (the callers split the budget so that the two agree up to rounding).
    pub fn then_pure(
        &self,
        epsilon_phase: f64,
        charged: Budget,
    ) -> Result<PrivacyCost, PrivacyError> {
        if !(epsilon_phase.is_finite() && epsilon_phase > 0.0) {
            return Err(PrivacyError::InvalidParameter(format!(
                "a phase's epsilon must be a finite number > 0, got {epsilon_phase}"
            )));
        }
        Ok(match *self {
            PrivacyCost::Pure { epsilon } => PrivacyCost::Pure {
                epsilon: charged.epsilon().max(epsilon + epsilon_phase),
            },
            PrivacyCost::Approx { epsilon, delta } => PrivacyCost::Approx {
                epsilon: charged.epsilon().max(epsilon + epsilon_phase),
                delta,
            },
            PrivacyCost::Zcdp { rho, delta, .. } => {
                let rho = rho + epsilon_phase * epsilon_phase / 2.0;
                PrivacyCost::Zcdp {
                    rho,
                    epsilon: charged.epsilon().max(zcdp::epsilon_of(rho, delta)?),
                    delta,
                }
            }
            PrivacyCost::LocalDp { .. } => {
                return Err(PrivacyError::InvalidParameter(
                    "a run on local-DP data has no central phase to compose with".into(),
                ));
            }
        })
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
            PrivacyCost::LocalDp { local_epsilon } => format!(
                "{local_epsilon}-local DP, randomized on the client; training is post-processing and spends no central budget"
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

    /// Composition with a pure phase, by hand: pure and approximate costs add
    /// their epsilons; a zCDP cost adds epsilon^2/2 to rho and converts again.
    #[test]
    fn a_pure_phase_composes_by_kind() {
        let asked = Budget::new(1.0, 0.0).unwrap();
        let pure = PrivacyCost::Pure { epsilon: 0.75 }
            .then_pure(0.25, asked)
            .unwrap();
        assert_eq!(pure, PrivacyCost::Pure { epsilon: 1.0 });
        let approx = PrivacyCost::Approx {
            epsilon: 0.5,
            delta: 1e-6,
        }
        .then_pure(0.25, Budget::new(0.75, 1e-6).unwrap())
        .unwrap();
        assert_eq!(
            approx,
            PrivacyCost::Approx {
                epsilon: 0.75,
                delta: 1e-6
            }
        );
        // rho = 0.02 plus 0.2^2 / 2 = 0.02: rho 0.04, whose conversion at
        // 1e-6 is above the 0.5 asked, so the proven epsilon is recorded.
        let z = PrivacyCost::Zcdp {
            rho: 0.02,
            epsilon: 0.9,
            delta: 1e-6,
        }
        .then_pure(0.2, Budget::new(0.5, 1e-6).unwrap())
        .unwrap();
        let PrivacyCost::Zcdp {
            rho,
            epsilon,
            delta,
        } = z
        else {
            panic!("{z:?}")
        };
        assert!((rho - 0.04).abs() < 1e-15, "{rho}");
        assert_eq!(epsilon, zcdp::epsilon_of(rho, 1e-6).unwrap());
        assert!(epsilon > 0.5);
        assert_eq!(delta, 1e-6);
        assert!(pure.then_pure(0.0, asked).is_err());
    }
}
