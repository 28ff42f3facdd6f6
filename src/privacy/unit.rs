//! The neighbouring relation a guarantee is stated for (issue 28), and the
//! one conversion every plan goes through.
//!
//! Without a privacy unit, neighbouring tables differ by the substitution of
//! one row. With `"privacy_unit": {"column", "max_rows": k}` they differ in
//! the rows of one unit: after contribution bounding (`data::unit`) a unit
//! has at most `k` rows, so two neighbouring tables (same public row count
//! n, as today) differ in at most `k` rows, i.e. by a chain of at most `k`
//! single-row substitutions. Every learner is then planned at the per-row
//! budget that **group privacy** over `k` substitutions turns into the
//! per-unit budget asked for (docs/privacy.md, "The privacy unit"):
//!
//! - pure epsilon-DP per row is (k epsilon)-DP per unit (Dwork and Roth
//!   2014, Thm 2.2): the learner runs at `epsilon / k`. For a Laplace
//!   mechanism this *is* sensitivity scaling (scale `k Delta / epsilon`);
//!   for report-noisy-max, subsampling and LazyBB's smooth-boosting
//!   accounting it is the generic argument that holds whatever the
//!   mechanism's analysis.
//! - rho-zCDP per row is (k^2 rho)-zCDP per unit (Bun and Steinke 2016,
//!   Prop. 1.9): the learner runs at `rho / k^2`, which for a Gaussian is
//!   sensitivity scaling (sigma x k); the conversion to (epsilon, delta) is
//!   then done once, at the unit level, with the job's delta.
//! - (epsilon, delta)-DP per row (LazyBB's advanced composition, `auto`'s
//!   runs) is (k epsilon, k e^{(k-1) epsilon} delta)-DP per unit (Vadhan
//!   2017, Lemma 2.2): the learner runs at `epsilon / k` and
//!   `delta / (k e^{(k-1) epsilon / k})`.
//!
//! With `k = 1` every function here returns its input unchanged, so a unit
//! of one row plans, charges and states exactly what no unit does.

use serde::{Deserialize, Serialize};

use super::calibration::Budget;
use super::cost::PrivacyCost;
use super::{PrivacyError, zcdp};

/// Who a guarantee protects: one row (`max_rows = 1`) or one unit of at
/// most `max_rows` rows. Public: the schema declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbouring {
    max_rows: u32,
}

impl Default for Neighbouring {
    fn default() -> Neighbouring {
        Neighbouring::ROW
    }
}

/// The relative margin by which the zCDP path asks for a little less rho
/// than the unit's budget allows, so that the round trip through
/// `epsilon_of` and `rho_for` (each exact to about 1e-12) never lands above
/// it.
const RHO_MARGIN: f64 = 1e-9;

impl Neighbouring {
    /// Substitution of one row (no privacy unit).
    pub const ROW: Neighbouring = Neighbouring { max_rows: 1 };

    /// Units of at most `max_rows` rows (>= 1).
    pub fn units(max_rows: u32) -> Result<Neighbouring, PrivacyError> {
        if max_rows == 0 {
            return Err(PrivacyError::InvalidParameter(
                "a privacy unit's max_rows must be at least 1".into(),
            ));
        }
        Ok(Neighbouring { max_rows })
    }

    /// The bound k on rows per unit (1 for rows).
    pub fn max_rows(self) -> u32 {
        self.max_rows
    }

    /// Whether a unit is one row (every conversion is the identity).
    pub fn is_row(self) -> bool {
        self.max_rows == 1
    }

    fn k(self) -> f64 {
        f64::from(self.max_rows)
    }

    /// The largest double `e <= epsilon / k` with `k e <= epsilon` (so
    /// the group's `k e` never rounds above the unit's epsilon).
    pub fn row_epsilon(self, epsilon: f64) -> f64 {
        if self.is_row() {
            return epsilon;
        }
        let k = self.k();
        let mut e = epsilon / k;
        while k * e > epsilon {
            e = e.next_down();
        }
        e
    }

    /// The per-row budget to plan a learner with, so that its guarantee
    /// per unit is `unit`. `kind` is the learner's cost at the unit budget
    /// (only its kind is read: pure, (epsilon, delta) from composition, or
    /// zCDP); the module docs give each conversion.
    pub fn row_budget(self, unit: Budget, kind: &PrivacyCost) -> Result<Budget, PrivacyError> {
        if self.is_row() {
            return Ok(unit);
        }
        let k = self.k();
        match kind {
            PrivacyCost::Pure { .. } => Budget::new(self.row_epsilon(unit.epsilon()), unit.delta()),
            PrivacyCost::Approx { .. } => {
                let e = self.row_epsilon(unit.epsilon());
                let factor = k * ((k - 1.0) * e).exp();
                let mut d = unit.delta() / factor;
                while factor * d > unit.delta() {
                    d = d.next_down();
                }
                Budget::new(e, d)
            }
            PrivacyCost::Zcdp { .. } => {
                let rho = zcdp::rho_for(unit.epsilon(), unit.delta())? / (k * k)
                    * (1.0 - RHO_MARGIN);
                Budget::new(zcdp::epsilon_of(rho, unit.delta())?, unit.delta())
            }
            PrivacyCost::LocalDp { .. } => Err(PrivacyError::InvalidParameter(
                "local-DP rows are randomized per row on the client; a privacy unit of several rows is not supported for them".into(),
            )),
        }
    }

    /// The per-unit cost of a run whose per-row cost is `row`, planned at
    /// [`Neighbouring::row_budget`] of `asked` (the unit budget the job
    /// asked for). Never below what group privacy proves; equal to `asked`
    /// when the row plan spent what it was given.
    pub fn unit_cost(self, row: PrivacyCost, asked: Budget) -> Result<PrivacyCost, PrivacyError> {
        if self.is_row() {
            return Ok(row);
        }
        let k = self.k();
        Ok(match row {
            PrivacyCost::Pure { epsilon } => PrivacyCost::Pure {
                epsilon: asked.epsilon().max(k * epsilon),
            },
            PrivacyCost::Approx { epsilon, delta } => PrivacyCost::Approx {
                epsilon: asked.epsilon().max(k * epsilon),
                delta: asked.delta().max(k * ((k - 1.0) * epsilon).exp() * delta),
            },
            PrivacyCost::Zcdp { rho, delta, .. } => {
                let rho = k * k * rho;
                // rho-zCDP implies (epsilon_of(rho, d), d) for every d: state
                // it at the job's delta (a row plan may have used a smaller
                // one internally, e.g. auto's split).
                let delta = if asked.delta() > 0.0 {
                    asked.delta()
                } else {
                    delta
                };
                PrivacyCost::Zcdp {
                    rho,
                    epsilon: asked.epsilon().max(zcdp::epsilon_of(rho, delta)?),
                    delta,
                }
            }
            PrivacyCost::LocalDp { .. } => {
                return Err(PrivacyError::InvalidParameter(
                    "local-DP rows are randomized per row on the client; a privacy unit of several rows is not supported for them".into(),
                ));
            }
        })
    }

    /// Who the guarantee protects, for statements: "one row (substitution)"
    /// or "per person (unit `c`, at most k rows each)".
    pub fn describe(self, column: Option<&str>) -> String {
        match (self.is_row(), column) {
            (true, None) => "per row (substitution of one row)".into(),
            (_, Some(c)) => format!(
                "per person (unit `{c}`, at most {} rows each; neighbouring tables differ in the rows of one unit)",
                self.max_rows
            ),
            (false, None) => format!("per unit of at most {} rows", self.max_rows),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(e: f64, d: f64) -> Budget {
        Budget::new(e, d).unwrap()
    }

    /// A unit of one row changes nothing, bit for bit.
    #[test]
    fn one_row_is_the_identity() {
        let n = Neighbouring::units(1).unwrap();
        assert_eq!(n, Neighbouring::ROW);
        for cost in [
            PrivacyCost::Pure { epsilon: 0.3 },
            PrivacyCost::Approx {
                epsilon: 0.3,
                delta: 1e-7,
            },
            PrivacyCost::Zcdp {
                rho: 0.01,
                epsilon: 0.7,
                delta: 1e-6,
            },
        ] {
            assert_eq!(n.row_budget(b(0.7, 1e-6), &cost).unwrap(), b(0.7, 1e-6));
            assert_eq!(n.unit_cost(cost, b(0.7, 1e-6)).unwrap(), cost);
        }
        assert!(Neighbouring::units(0).is_err());
    }

    /// Hand-computed conversions with k = 4.
    #[test]
    fn group_conversions_by_hand() {
        let n = Neighbouring::units(4).unwrap();
        // Pure: epsilon 1 per unit is 0.25 per row, and back.
        let pure = PrivacyCost::Pure { epsilon: 1.0 };
        let row = n.row_budget(b(1.0, 0.0), &pure).unwrap();
        assert_eq!(row, b(0.25, 0.0));
        assert_eq!(
            n.unit_cost(PrivacyCost::Pure { epsilon: 0.25 }, b(1.0, 0.0))
                .unwrap(),
            pure
        );
        // An epsilon k does not divide exactly: k e never exceeds it.
        let e = n.row_epsilon(0.7);
        assert!(4.0 * e <= 0.7 && (0.7 / 4.0 - e).abs() < 1e-15);
        // (1, 1e-6) per unit: (0.25, 1e-6 / (4 e^0.75)) per row.
        let approx = PrivacyCost::Approx {
            epsilon: 1.0,
            delta: 1e-6,
        };
        let row = n.row_budget(b(1.0, 1e-6), &approx).unwrap();
        assert_eq!(row.epsilon(), 0.25);
        let want = 1e-6 / (4.0 * 0.75f64.exp());
        assert!((row.delta() / want - 1.0).abs() < 1e-12, "{}", row.delta());
        assert!(4.0 * 0.75f64.exp() * row.delta() <= 1e-6);
        let back = n
            .unit_cost(
                PrivacyCost::Approx {
                    epsilon: row.epsilon(),
                    delta: row.delta(),
                },
                b(1.0, 1e-6),
            )
            .unwrap();
        assert_eq!(back, approx);
        // zCDP: the row plan gets rho / 16; the unit cost is 16 rho_row,
        // within the unit's rho, charged at the asked epsilon.
        let rho_unit = zcdp::rho_for(1.0, 1e-6).unwrap();
        let z = PrivacyCost::Zcdp {
            rho: rho_unit,
            epsilon: 1.0,
            delta: 1e-6,
        };
        let row = n.row_budget(b(1.0, 1e-6), &z).unwrap();
        assert_eq!(row.delta(), 1e-6);
        let rho_row = zcdp::rho_for(row.epsilon(), row.delta()).unwrap();
        assert!((16.0 * rho_row / rho_unit - 1.0).abs() < 1e-8, "{rho_row}");
        assert!(16.0 * rho_row <= rho_unit);
        let unit = n
            .unit_cost(
                PrivacyCost::Zcdp {
                    rho: rho_row,
                    epsilon: row.epsilon(),
                    delta: 1e-6,
                },
                b(1.0, 1e-6),
            )
            .unwrap();
        let PrivacyCost::Zcdp {
            rho,
            epsilon,
            delta,
        } = unit
        else {
            panic!("{unit:?}")
        };
        assert_eq!((epsilon, delta), (1.0, 1e-6));
        assert_eq!(rho, 16.0 * rho_row);
        // A run that spent more than it was given is charged what is proven.
        let over = n
            .unit_cost(PrivacyCost::Pure { epsilon: 0.5 }, b(1.0, 0.0))
            .unwrap();
        assert_eq!(over, PrivacyCost::Pure { epsilon: 2.0 });
        assert!(
            n.row_budget(b(1.0, 0.0), &PrivacyCost::LocalDp { local_epsilon: 1.0 })
                .is_err()
        );
    }

    #[test]
    fn describes_who_is_protected() {
        assert_eq!(
            Neighbouring::ROW.describe(None),
            "per row (substitution of one row)"
        );
        let s = Neighbouring::units(4).unwrap().describe(Some("patient_id"));
        assert!(
            s.starts_with("per person (unit `patient_id`, at most 4 rows each"),
            "{s}"
        );
    }
}
