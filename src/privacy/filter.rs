//! Accounting across jobs: basic composition, or a zCDP privacy filter.
//!
//! A dataset's ledger admits a new charge only if every release so far plus
//! the new one stays within the owner's total (epsilon, delta). Analysts pick
//! each job after seeing the models of the earlier ones, so the rule must be
//! a *privacy filter*: valid when every charge, and the decision to stop, is
//! chosen adaptively (Rogers, Roth, Ullman and Vadhan 2016).
//!
//! - [`Accounting::Basic`] (the default): epsilons add and deltas add.
//!   Basic composition is a valid filter (Rogers et al. 2016, Thm 3.6).
//! - [`Accounting::ZcdpFilter`]: admit while **either** of two conditions
//!   holds for every charge so far plus the new one (the full argument is in
//!   docs/privacy.md, "Accounting across jobs"):
//!   - (A) every charge is pure and their epsilons sum to at most epsilon:
//!     the privacy loss is then at most that sum on every outcome;
//!   - (B) every charge is pure or zCDP (a pure eps-DP job counts as
//!     eps^2/2-zCDP, Bun and Steinke 2016 Prop. 1.4; a Gaussian learner
//!     reports its rho) and the rhos sum to at most [`rho_budget`], the
//!     largest rho with `rho + 2 sqrt(rho ln(1/delta)) <= epsilon`.
//!
//!   Under (B), for a fixed order `lambda`, `exp((lambda - 1) L_t -
//!   lambda (lambda - 1) R_t)` (`L_t` the privacy loss after t jobs, `R_t`
//!   the rhos admitted) is a supermartingale whatever the analysts do, since
//!   each job's rho is fixed before it runs (Whitehouse, Ramdas, Rogers and
//!   Wu 2023, §4, the zCDP/Renyi filter). Optional stopping and Markov's
//!   inequality at the stopping time give `P(L > eps and R <= B) <=
//!   exp(-(lambda - 1)(eps - lambda B))`, which is `delta` at `lambda = (eps
//!   + B) / (2B)` when `eps = B + 2 sqrt(B ln(1/delta))`. On outcomes where
//!   (B) fails at the stop, (A) held, and then `L <= eps` surely. So
//!   `P(L > eps) <= delta` and the whole interaction is (eps, delta)-DP.
//!
//!   This is the Bun-Steinke conversion, a little looser than the
//!   Canonne-Kamath-Steinke one (`super::zcdp`) that a single Gaussian job
//!   uses: the tail argument above is what holds at an adaptive stopping
//!   time. Charges with a delta that come from neither (LazyBB's advanced
//!   composition) have no zCDP description and are refused on such a
//!   dataset.
//!
//! Everything here is arithmetic on public quantities: the charges are
//! fixed by public parameters before any job reads a row. A run's [`Loss`]
//! is in doubles; the ledger's [`Charge`] and the sums ([`Charged`]) are
//! integer units ([`super::budget_units`]), rounded once, in the safe
//! direction, so the filter's comparisons are exact.

use serde::{Deserialize, Serialize};

use super::PrivacyError;
use super::budget_units::{Amount, DeltaUnits, EpsilonUnits, RhoUnits, Scale, Units};
use super::cost::PrivacyCost;

/// How a dataset composes its jobs' charges. Chosen by the owner at upload;
/// never changed afterwards (a filter's rule is fixed before the first job).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Accounting {
    /// Epsilons add, deltas add.
    #[default]
    Basic,
    /// Pure charges by basic composition or, better when it is, every charge
    /// by zCDP composition (see the module docs).
    ZcdpFilter,
}

impl Accounting {
    /// The name in requests, responses and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Accounting::Basic => "basic",
            Accounting::ZcdpFilter => "zcdp-filter",
        }
    }

    /// Parse a name.
    pub fn parse(name: &str) -> Option<Accounting> {
        [Accounting::Basic, Accounting::ZcdpFilter]
            .into_iter()
            .find(|a| a.as_str() == name)
    }
}

/// The privacy loss of one charge, as the ledger records it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Loss {
    /// Pure epsilon-DP (also epsilon^2/2-zCDP).
    Pure {
        /// Epsilon.
        epsilon: f64,
    },
    /// rho-zCDP, charged under basic composition as (epsilon, delta).
    Zcdp {
        /// Rho.
        rho: f64,
        /// The epsilon of its conversion.
        epsilon: f64,
        /// The delta of its conversion.
        delta: f64,
    },
    /// (epsilon, delta)-DP with no zCDP description (a composition theorem
    /// over pure steps), or an entry written before losses were recorded.
    Approx {
        /// Epsilon.
        epsilon: f64,
        /// Delta.
        delta: f64,
    },
}

impl Loss {
    /// The loss of a run whose cost its plan stated.
    pub fn of(cost: &PrivacyCost) -> Loss {
        match *cost {
            PrivacyCost::Pure { epsilon } => Loss::Pure { epsilon },
            PrivacyCost::Zcdp {
                rho,
                epsilon,
                delta,
            } => Loss::Zcdp {
                rho,
                epsilon,
                delta,
            },
            PrivacyCost::Approx { epsilon, delta } => Loss::Approx { epsilon, delta },
            // Post-processing of a local-DP release: nothing central to charge.
            PrivacyCost::LocalDp { .. } => Loss::Pure { epsilon: 0.0 },
        }
    }

    /// The (epsilon, delta) it counts for under basic composition.
    pub fn basic(&self) -> (f64, f64) {
        match *self {
            Loss::Pure { epsilon } => (epsilon, 0.0),
            Loss::Zcdp { epsilon, delta, .. } | Loss::Approx { epsilon, delta } => (epsilon, delta),
        }
    }

    /// Its rho under zCDP, if it has one (pure epsilon-DP is
    /// epsilon^2/2-zCDP: Bun and Steinke 2016, Prop. 1.4).
    pub fn rho(&self) -> Option<f64> {
        match *self {
            Loss::Pure { epsilon } => Some(epsilon * epsilon / 2.0),
            Loss::Zcdp { rho, .. } => Some(rho),
            Loss::Approx { .. } => None,
        }
    }

    /// The database's kind name.
    pub fn kind(&self) -> &'static str {
        match self {
            Loss::Pure { .. } => "pure",
            Loss::Zcdp { .. } => "zcdp",
            Loss::Approx { .. } => "approx",
        }
    }
}

/// The Bun-Steinke conversion `rho + 2 sqrt(rho ln(1/delta))`: the epsilon
/// that a zCDP filter of budget `rho` guarantees at `delta` (module docs).
pub fn filter_epsilon(rho: f64, delta: f64) -> f64 {
    rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt()
}

/// The largest rho whose [`filter_epsilon`] at `delta` is at most `epsilon`,
/// or `None` when `delta` is 0 (zCDP gives no pure guarantee).
///
/// Solving `x^2 + 2 x sqrt(L) = epsilon` for `x = sqrt(rho)`, `L =
/// ln(1/delta)`: `x = sqrt(L + epsilon) - sqrt(L)`. The closed form is then
/// lowered by a relative 1e-9 and stepped down until the conversion of the
/// returned value, computed in doubles and raised by a relative 1e-12, is at
/// most `epsilon`: the exact conversion is then below `epsilon` whatever
/// the doubles' error, so rounding can only refuse.
pub fn rho_budget(epsilon: f64, delta: f64) -> Option<f64> {
    if !(delta > 0.0 && delta < 1.0 && epsilon > 0.0 && epsilon.is_finite()) {
        return None;
    }
    let l = (1.0 / delta).ln();
    let x = (l + epsilon).sqrt() - l.sqrt();
    // The check below is in doubles, which can be a few ulps below the
    // exact `filter_epsilon`: start a relative 1e-9 lower and demand a
    // relative 1e-12 of room, so the exact value is below `epsilon` (the
    // derivative of `filter_epsilon` in rho is at least 1, so 1e-9 of rho is
    // far more than the doubles' error; issue 26, item 7).
    let mut rho = x * x * (1.0 - 1e-9);
    while rho > 0.0 && filter_epsilon(rho, delta) * (1.0 + 1e-12) > epsilon {
        rho = f64::from_bits(rho.to_bits() - 1);
    }
    Some(rho)
}

/// Which description a charge has: the kind of [`Loss`] it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossKind {
    /// Pure epsilon-DP.
    Pure,
    /// rho-zCDP.
    Zcdp,
    /// (epsilon, delta) with no zCDP description.
    Approx,
}

impl LossKind {
    /// The name in the ledger's `loss_kind` column and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LossKind::Pure => "pure",
            LossKind::Zcdp => "zcdp",
            LossKind::Approx => "approx",
        }
    }

    /// Parse a name.
    pub fn parse(name: &str) -> Option<LossKind> {
        [LossKind::Pure, LossKind::Zcdp, LossKind::Approx]
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

/// One charge as the ledger records it: exact units (module
/// [`super::budget_units`]), each rounded so that it is never below the
/// loss of the run it pays for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    /// Which description.
    pub kind: LossKind,
    /// Epsilon under basic composition.
    pub epsilon: EpsilonUnits,
    /// Delta under basic composition.
    pub delta: DeltaUnits,
    /// Rho under zCDP composition: a pure charge's `epsilon^2 / 2` (rounded
    /// up), a zCDP charge's stated rho (rounded up); `None` for `approx`.
    pub rho: Option<RhoUnits>,
}

impl Charge {
    /// A pure charge of `epsilon`.
    pub fn pure(epsilon: EpsilonUnits) -> Result<Charge, PrivacyError> {
        let rho = RhoUnits::of_pure(epsilon).ok_or_else(|| {
            PrivacyError::InvalidParameter(format!(
                "a pure charge of epsilon {epsilon} has a rho above the ledger's cap"
            ))
        })?;
        Ok(Charge {
            kind: LossKind::Pure,
            epsilon,
            delta: DeltaUnits::ZERO,
            rho: Some(rho),
        })
    }

    /// The charge for a run whose loss is `loss` (doubles the run uses):
    /// every amount rounded up, so the charge is never below the run.
    pub fn of(loss: &Loss) -> Result<Charge, PrivacyError> {
        Charge::from_loss(loss, Rounding::Up)
    }

    /// A charge as the API reports it (its [`Charge::loss`], each number the
    /// double nearest to its units), read back: the nearest units recover
    /// the charge exactly.
    pub fn read(loss: &Loss) -> Result<Charge, PrivacyError> {
        Charge::from_loss(loss, Rounding::Nearest)
    }

    fn from_loss(loss: &Loss, rounding: Rounding) -> Result<Charge, PrivacyError> {
        Ok(match *loss {
            Loss::Pure { epsilon } => Charge::pure(rounding.units(epsilon)?)?,
            Loss::Zcdp {
                rho,
                epsilon,
                delta,
            } => Charge {
                kind: LossKind::Zcdp,
                epsilon: rounding.units(epsilon)?,
                delta: rounding.units(delta)?,
                rho: Some(rounding.units(rho)?),
            },
            Loss::Approx { epsilon, delta } => Charge {
                kind: LossKind::Approx,
                epsilon: rounding.units(epsilon)?,
                delta: rounding.units(delta)?,
                rho: None,
            },
        })
    }

    /// An entry written before the ledger recorded losses: it counts as it
    /// always did, by its (epsilon, delta) under basic composition (pure if
    /// its delta is 0).
    pub fn legacy(amount: Amount) -> Result<Charge, PrivacyError> {
        if amount.delta == DeltaUnits::ZERO {
            Charge::pure(amount.epsilon)
        } else {
            Ok(Charge {
                kind: LossKind::Approx,
                epsilon: amount.epsilon,
                delta: amount.delta,
                rho: None,
            })
        }
    }

    /// The (epsilon, delta) it counts for under basic composition.
    pub fn basic(&self) -> Amount {
        Amount {
            epsilon: self.epsilon,
            delta: self.delta,
        }
    }

    /// The description with each amount as the nearest double (what the API
    /// shows; [`Charge::read`] inverts it).
    pub fn loss(&self) -> Loss {
        match self.kind {
            LossKind::Pure => Loss::Pure {
                epsilon: self.epsilon.to_f64(),
            },
            LossKind::Zcdp => Loss::Zcdp {
                rho: self.rho.unwrap_or_default().to_f64(),
                epsilon: self.epsilon.to_f64(),
                delta: self.delta.to_f64(),
            },
            LossKind::Approx => Loss::Approx {
                epsilon: self.epsilon.to_f64(),
                delta: self.delta.to_f64(),
            },
        }
    }

    /// Whether this charge pays for a run charged `run`: no amount above
    /// this one's, and nothing the accounting relied on lost (a pure charge
    /// counts under condition (A), so its run must be pure; a charge with a
    /// rho counts under (B), so its run must have a rho no larger).
    pub fn covers(&self, run: &Charge) -> bool {
        let kind = match self.kind {
            LossKind::Pure => run.kind == LossKind::Pure,
            LossKind::Zcdp | LossKind::Approx => true,
        };
        let rho = match (self.rho, run.rho) {
            (None, _) => true,
            (Some(charged), Some(ran)) => ran <= charged,
            (Some(_), None) => false,
        };
        kind && rho && run.basic().fits_within(self.basic())
    }
}

/// A charge serializes as its [`Loss`] description (the JSON the ledger's
/// `loss` field has always had).
impl Serialize for Charge {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.loss().serialize(s)
    }
}

/// How [`Charge::from_loss`] turns a loss's doubles into units.
#[derive(Clone, Copy)]
enum Rounding {
    /// [`Units::up`]: never below the double.
    Up,
    /// [`Units::nearest`].
    Nearest,
}

impl Rounding {
    fn units<S: Scale>(self, x: f64) -> Result<Units<S>, PrivacyError> {
        match self {
            Rounding::Up => Units::up(x),
            Rounding::Nearest => Units::nearest(x),
        }
    }
}

/// The zCDP filter's rho budget for a total, in units, rounded down: the
/// closed form of [`rho_budget`] at the largest doubles not above the
/// total's epsilon and delta (the budget grows with both), then down to
/// the grid. `None` when delta is 0.
pub fn rho_budget_units(total: Amount) -> Option<RhoUnits> {
    rho_budget(total.epsilon.to_f64_down(), total.delta.to_f64_down())
        .and_then(|b| RhoUnits::down(b).ok())
}

/// The charges a dataset has admitted (charges minus refunds), summed in the
/// terms of both conditions, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Charged {
    /// Sum of epsilons under basic composition.
    pub epsilon: EpsilonUnits,
    /// Sum of deltas under basic composition.
    pub delta: DeltaUnits,
    /// Sum of rhos, or `None` once a charge without a zCDP description is in.
    pub rho: Option<RhoUnits>,
    /// Whether every charge is pure.
    pub all_pure: bool,
}

impl Default for Charged {
    fn default() -> Charged {
        Charged::new()
    }
}

impl Charged {
    /// Nothing charged.
    pub fn new() -> Charged {
        Charged {
            epsilon: EpsilonUnits::ZERO,
            delta: DeltaUnits::ZERO,
            rho: Some(RhoUnits::ZERO),
            all_pure: true,
        }
    }

    /// Add a charge; `None` if a sum overflows (far beyond any total: the
    /// caps of [`super::budget_units`] leave room for billions of charges).
    pub fn plus(self, charge: &Charge) -> Option<Charged> {
        Some(Charged {
            epsilon: self.epsilon.checked_add(charge.epsilon)?,
            delta: self.delta.checked_add(charge.delta)?,
            rho: match (self.rho, charge.rho) {
                (Some(a), Some(b)) => Some(a.checked_add(b)?),
                _ => None,
            },
            all_pure: self.all_pure && charge.kind == LossKind::Pure,
        })
    }

    /// Take back a refunded charge (its job never ran). Purity is not
    /// restored: the flag stays conservative.
    pub fn minus(self, charge: &Charge) -> Option<Charged> {
        Some(Charged {
            epsilon: self.epsilon.checked_sub(charge.epsilon)?,
            delta: self.delta.checked_sub(charge.delta)?,
            rho: match (self.rho, charge.rho) {
                (Some(a), Some(b)) => Some(a.checked_sub(b)?),
                _ => None,
            },
            all_pure: self.all_pure,
        })
    }

    /// `k` more charges of `charge`; `None` on overflow.
    fn plus_times(self, charge: &Charge, k: u64) -> Option<Charged> {
        Some(Charged {
            epsilon: self.epsilon.checked_add(charge.epsilon.checked_mul(k)?)?,
            delta: self.delta.checked_add(charge.delta.checked_mul(k)?)?,
            rho: match (self.rho, charge.rho) {
                (Some(a), Some(b)) => Some(a.checked_add(b.checked_mul(k)?)?),
                _ => None,
            },
            all_pure: self.all_pure && (k == 0 || charge.kind == LossKind::Pure),
        })
    }

    /// Whether these charges are within `total` under `accounting`: integer
    /// comparisons, exact (the rounding happened once, in the safe
    /// direction, when each amount became units).
    pub fn within(&self, total: Amount, accounting: Accounting) -> bool {
        let basic = self.epsilon <= total.epsilon && self.delta <= total.delta;
        match accounting {
            Accounting::Basic => basic,
            Accounting::ZcdpFilter => {
                // (A): pure charges only, basic sum.
                let a = self.all_pure && basic;
                // (B): every charge has a rho, and their sum fits.
                let b = match (self.rho, rho_budget_units(total)) {
                    (Some(rho), Some(budget)) => rho <= budget,
                    _ => false,
                };
                a || b
            }
        }
    }

    /// How many more charges of `charge` fit after these (at most `cap`).
    pub fn how_many_more(
        &self,
        charge: &Charge,
        total: Amount,
        accounting: Accounting,
        cap: u64,
    ) -> u64 {
        // Admission is monotone in the number of equal charges, so a binary
        // search over k finds the largest k that still fits. With exact
        // sums, k charges at once are the same as k one by one.
        let fits = |k: u64| {
            self.plus_times(charge, k)
                .is_some_and(|c| c.within(total, accounting))
        };
        if !fits(0) {
            return 0;
        }
        let (mut lo, mut hi) = (0u64, cap);
        if fits(hi) {
            return hi;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { lo = mid } else { hi = mid }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The total (1, 1e-6), as an owner would set it.
    fn total() -> Amount {
        Amount {
            epsilon: EpsilonUnits::total(1.0).unwrap(),
            delta: DeltaUnits::total(1e-6).unwrap(),
        }
    }

    /// The charge of a job that asked for pure `epsilon`.
    fn pure(epsilon: f64) -> Charge {
        Charge::pure(EpsilonUnits::nearest(epsilon).unwrap()).unwrap()
    }

    /// A zCDP charge, in units.
    fn zcdp(rho: i64, epsilon: i64, delta: i64) -> Charge {
        Charge {
            kind: LossKind::Zcdp,
            epsilon: EpsilonUnits::from_units(epsilon),
            delta: DeltaUnits::from_units(delta),
            rho: Some(RhoUnits::from_units(rho)),
        }
    }

    fn admitted(accounting: Accounting, charge: Charge) -> usize {
        let mut c = Charged::new();
        let mut n = 0;
        loop {
            let next = c.plus(&charge).unwrap();
            if !next.within(total(), accounting) {
                return n;
            }
            c = next;
            n += 1;
        }
    }

    #[test]
    fn the_rho_budget_matches_the_hand_computed_value() {
        // ln(1e6) = 13.815511; sqrt(14.815511) - sqrt(13.815511)
        // = 3.849092 - 3.716922 = 0.132170, squared 0.0174689.
        let rho = rho_budget(1.0, 1e-6).unwrap();
        assert!((rho - 0.0174689).abs() < 1e-7, "{rho}");
        assert!(filter_epsilon(rho, 1e-6) <= 1.0);
        // It keeps a margin against the doubles' error (a relative 1e-9 of
        // rho, about 5e-10 of epsilon) and no more: a relative 1e-8 more
        // rho is over.
        assert!(filter_epsilon(rho, 1e-6) < 1.0 - 1e-10);
        assert!(filter_epsilon(rho * (1.0 + 1e-8), 1e-6) > 1.0);
        assert_eq!(rho_budget(1.0, 0.0), None);
        // In units, rounded down: the largest count not above the double
        // budget computed at the doubles not above the total.
        // The closed form gives 0.01746890476912338; less the relative 1e-9
        // margin, 0.0174689047516545: 17_468_904_751 units.
        let units = rho_budget_units(total()).unwrap();
        assert!(units.to_f64() <= rho, "{units}");
        assert_eq!(units.units(), 17_468_904_751);
        assert_eq!(
            rho_budget_units(Amount {
                epsilon: EpsilonUnits::total(1.0).unwrap(),
                delta: DeltaUnits::ZERO
            }),
            None
        );
    }

    #[test]
    fn many_small_pure_jobs_fit_under_the_filter_and_exactly_100_under_basic() {
        let job = pure(0.01);
        // Basic: 100 x 1e10 units = 1e12 units, the total, exactly.
        assert_eq!(admitted(Accounting::Basic, job), 100);
        // Filter: rho 5e-5 (5e7 units) each, 0.0174689 / 5e-5 = 349.38.
        assert_eq!(job.rho, Some(RhoUnits::from_units(50_000_000)));
        assert_eq!(admitted(Accounting::ZcdpFilter, job), 349);
    }

    #[test]
    fn a_single_pure_job_of_the_whole_budget_still_fits_under_the_filter() {
        // Basic is tighter here (rho 0.5 is far over the rho budget): the
        // filter takes the better of the two conditions.
        let whole = pure(1.0);
        assert_eq!(admitted(Accounting::ZcdpFilter, whole), 1);
        assert_eq!(admitted(Accounting::Basic, whole), 1);
    }

    #[test]
    fn a_mixed_sequence_against_hand_computed_sums() {
        // Pure 0.1 (rho 0.005), zCDP rho 0.01 (charged (0.6, 1e-7) under
        // basic), pure 0.05 (rho 0.00125): rho sum 0.01625 <= 0.0174689.
        let seq = [
            pure(0.1),
            zcdp(10_000_000_000, 600_000_000_000, 100_000_000_000),
            pure(0.05),
        ];
        let c = seq.iter().fold(Charged::new(), |c, l| c.plus(l).unwrap());
        assert_eq!(c.rho, Some(RhoUnits::from_units(16_250_000_000)));
        assert_eq!(c.epsilon, EpsilonUnits::from_units(750_000_000_000));
        assert_eq!(c.delta, DeltaUnits::from_units(100_000_000_000));
        assert!(!c.all_pure);
        assert!(c.within(total(), Accounting::ZcdpFilter));
        // Another pure 0.05 is over the rho budget (0.0175 > 0.0174689),
        // and condition (A) does not apply (a zCDP charge is in), though
        // basic composition alone would still admit it (0.8 <= 1): the
        // filter must not use basic for a sequence with a Gaussian job.
        let over = c.plus(&pure(0.05)).unwrap();
        assert_eq!(over.rho, Some(RhoUnits::from_units(17_500_000_000)));
        assert!(!over.within(total(), Accounting::ZcdpFilter));
        assert!(over.within(total(), Accounting::Basic));
        // How many more pure 0.01 jobs fit: (0.0174689 - 0.01625) / 5e-5 = 24.38.
        let more = c.how_many_more(&pure(0.01), total(), Accounting::ZcdpFilter, 10_000);
        assert_eq!(more, 24);
    }

    #[test]
    fn a_charge_without_a_zcdp_description_is_refused_by_the_filter() {
        let approx = Charge::of(&Loss::Approx {
            epsilon: 0.1,
            delta: 1e-7,
        })
        .unwrap();
        assert_eq!(approx.kind, LossKind::Approx);
        let c = Charged::new().plus(&approx).unwrap();
        assert_eq!(c.rho, None);
        assert!(!c.within(total(), Accounting::ZcdpFilter));
        assert!(c.within(total(), Accounting::Basic));
    }

    #[test]
    fn a_refund_takes_its_rho_back() {
        let job = pure(0.1);
        let c = Charged::new()
            .plus(&job)
            .and_then(|c| c.plus(&job))
            .and_then(|c| c.minus(&job))
            .unwrap();
        assert_eq!(c.rho, Some(RhoUnits::from_units(5_000_000_000)));
        assert_eq!(c.epsilon, EpsilonUnits::from_units(100_000_000_000));
    }

    #[test]
    fn the_filter_is_never_tighter_than_basic_on_pure_charges() {
        for eps in [0.001, 0.01, 0.05, 0.1, 0.3, 1.0] {
            let job = pure(eps);
            assert!(
                admitted(Accounting::ZcdpFilter, job) >= admitted(Accounting::Basic, job),
                "{eps}"
            );
        }
    }

    #[test]
    fn how_many_more_agrees_with_admitting_one_by_one() {
        for eps in [0.01, 0.02, 0.3] {
            let job = pure(eps);
            for acc in [Accounting::Basic, Accounting::ZcdpFilter] {
                let k = Charged::new().how_many_more(&job, total(), acc, 100_000);
                assert_eq!(k as usize, admitted(acc, job), "{eps} {acc:?}");
            }
        }
    }

    /// The charge of a run rounds every double up; a job that asked for
    /// 0.01 runs at the double below 0.01 and is charged exactly 0.01.
    #[test]
    fn a_runs_charge_rounds_up_and_a_request_runs_below_its_charge() {
        let asked = EpsilonUnits::nearest(0.01).unwrap();
        let run = Loss::Pure {
            epsilon: asked.to_f64_down(),
        };
        assert_eq!(Charge::of(&run).unwrap(), pure(0.01));
        // A run at the double 0.01 itself (2e-19 above the decimal) would
        // cost one unit more.
        let at_double = Charge::of(&Loss::Pure { epsilon: 0.01 }).unwrap();
        assert_eq!(at_double.epsilon.units(), 10_000_000_001);
        assert!(!pure(0.01).covers(&at_double));
        assert!(at_double.covers(&pure(0.01)));
        // A Gaussian learner's rho rounds up too.
        let z = Charge::of(&Loss::Zcdp {
            rho: 0.0123,
            epsilon: 0.5,
            delta: 1e-6,
        })
        .unwrap();
        assert!(z.rho.unwrap().to_f64() >= 0.0123);
        assert!(RhoUnits::up(0.0123).unwrap() == z.rho.unwrap());
        // Local DP: a charge of 0.
        let local = Charge::of(&Loss::of(&PrivacyCost::LocalDp { local_epsilon: 2.0 })).unwrap();
        assert_eq!(local.basic(), Amount::ZERO);
        assert_eq!(local.rho, Some(RhoUnits::ZERO));
    }

    /// What a charge covers: amounts, and the kind the accounting relied on.
    #[test]
    fn a_charge_covers_only_runs_that_cost_no_more() {
        let charged = zcdp(100, 1000, 10);
        assert!(charged.covers(&zcdp(100, 1000, 10)));
        assert!(charged.covers(&zcdp(99, 1000, 10)));
        assert!(!charged.covers(&zcdp(101, 1000, 10)));
        assert!(!charged.covers(&zcdp(100, 1001, 10)));
        assert!(!charged.covers(&zcdp(100, 1000, 11)));
        let p = Charge::pure(EpsilonUnits::from_units(1000)).unwrap();
        assert!(p.covers(&p));
        assert!(
            !p.covers(&zcdp(0, 1000, 0)),
            "a pure charge needs a pure run"
        );
        // The JSON of a charge reads back as the same charge.
        for c in [charged, p, pure(0.01)] {
            let json = serde_json::to_value(c).unwrap();
            let loss: Loss = serde_json::from_value(json).unwrap();
            assert_eq!(Charge::read(&loss).unwrap(), c);
        }
    }
}
