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
//! fixed by public parameters before any job reads a row.

use serde::{Deserialize, Serialize};

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
/// checked in floating point and stepped down until the conversion of the
/// returned value is at most `epsilon`, so rounding can only refuse.
pub fn rho_budget(epsilon: f64, delta: f64) -> Option<f64> {
    if !(delta > 0.0 && delta < 1.0 && epsilon > 0.0 && epsilon.is_finite()) {
        return None;
    }
    let l = (1.0 / delta).ln();
    let x = (l + epsilon).sqrt() - l.sqrt();
    let mut rho = x * x;
    while rho > 0.0 && filter_epsilon(rho, delta) > epsilon {
        rho = f64::from_bits(rho.to_bits() - 1);
    }
    Some(rho)
}

/// The charges a dataset has admitted (charges minus refunds), summed in the
/// terms of both conditions.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Charged {
    /// Sum of epsilons under basic composition.
    pub epsilon: f64,
    /// Sum of deltas under basic composition.
    pub delta: f64,
    /// Sum of rhos, or `None` once a charge without a zCDP description is in.
    pub rho: Option<f64>,
    /// Whether every charge is pure.
    pub all_pure: bool,
}

impl Charged {
    /// Nothing charged.
    pub fn new() -> Charged {
        Charged {
            epsilon: 0.0,
            delta: 0.0,
            rho: Some(0.0),
            all_pure: true,
        }
    }

    /// Add a charge.
    pub fn plus(self, loss: &Loss) -> Charged {
        let (epsilon, delta) = loss.basic();
        Charged {
            epsilon: self.epsilon + epsilon,
            delta: self.delta + delta,
            rho: self.rho.zip(loss.rho()).map(|(a, b)| a + b),
            all_pure: self.all_pure && matches!(loss, Loss::Pure { .. }),
        }
    }

    /// Take back a refunded charge (its job never ran). Purity is not
    /// restored: the flag stays conservative.
    pub fn minus(self, loss: &Loss) -> Charged {
        let (epsilon, delta) = loss.basic();
        Charged {
            epsilon: self.epsilon - epsilon,
            delta: self.delta - delta,
            rho: self.rho.zip(loss.rho()).map(|(a, b)| a - b),
            all_pure: self.all_pure,
        }
    }

    /// Whether these charges are within `total` under `accounting`
    /// (exact float comparisons: a rounding error can only refuse).
    pub fn within(&self, total: (f64, f64), accounting: Accounting) -> bool {
        let (epsilon, delta) = total;
        let basic = self.epsilon <= epsilon && self.delta <= delta;
        match accounting {
            Accounting::Basic => basic,
            Accounting::ZcdpFilter => {
                // (A): pure charges only, basic sum.
                let a = self.all_pure && basic;
                // (B): every charge has a rho, and their sum fits.
                let b = match (self.rho, rho_budget(epsilon, delta)) {
                    (Some(rho), Some(budget)) => rho <= budget,
                    _ => false,
                };
                a || b
            }
        }
    }

    /// How many more charges of `loss` fit after these (at most `cap`).
    pub fn how_many_more(
        &self,
        loss: &Loss,
        total: (f64, f64),
        accounting: Accounting,
        cap: u64,
    ) -> u64 {
        // Admission is monotone in the number of equal charges, so a binary
        // search over k finds the largest k that still fits.
        let fits = |k: u64| {
            let mut c = *self;
            // Summed one by one, as the ledger sums them.
            for _ in 0..k {
                c = c.plus(loss);
            }
            c.within(total, accounting)
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

    const TOTAL: (f64, f64) = (1.0, 1e-6);

    fn admitted(accounting: Accounting, loss: Loss) -> usize {
        let mut c = Charged::new();
        let mut n = 0;
        loop {
            let next = c.plus(&loss);
            if !next.within(TOTAL, accounting) {
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
        // One ulp more is over: the budget is the largest such rho (up to
        // the rounding of the conversion itself).
        let next = f64::from_bits(rho.to_bits() + 64);
        assert!(filter_epsilon(next, 1e-6) > 1.0 - 1e-12);
        assert_eq!(rho_budget(1.0, 0.0), None);
    }

    #[test]
    fn many_small_pure_jobs_fit_under_the_filter_and_exactly_100_under_basic() {
        let job = Loss::Pure { epsilon: 0.01 };
        // Basic: 100 x 0.01 = 1 (summed in f64 one by one, 0.01 * 100 may
        // round either side of 1; the ledger sums the same way).
        let basic = admitted(Accounting::Basic, job);
        assert!((99..=100).contains(&basic), "{basic}");
        // Filter: rho 5e-5 each, 0.0174689 / 5e-5 = 349.38.
        let filter = admitted(Accounting::ZcdpFilter, job);
        assert_eq!(filter, 349);
        assert!(filter >= 300);
    }

    #[test]
    fn a_single_pure_job_of_the_whole_budget_still_fits_under_the_filter() {
        // Basic is tighter here (rho 0.5 is far over the rho budget): the
        // filter takes the better of the two conditions.
        let whole = Loss::Pure { epsilon: 1.0 };
        assert_eq!(admitted(Accounting::ZcdpFilter, whole), 1);
        assert_eq!(admitted(Accounting::Basic, whole), 1);
    }

    #[test]
    fn a_mixed_sequence_against_hand_computed_sums() {
        // Pure 0.1 (rho 0.005), zCDP rho 0.01 (charged (0.6, 1e-7) under
        // basic), pure 0.05 (rho 0.00125): rho sum 0.01625 <= 0.0174689.
        let seq = [
            Loss::Pure { epsilon: 0.1 },
            Loss::Zcdp {
                rho: 0.01,
                epsilon: 0.6,
                delta: 1e-7,
            },
            Loss::Pure { epsilon: 0.05 },
        ];
        let c = seq.iter().fold(Charged::new(), |c, l| c.plus(l));
        assert!((c.rho.unwrap() - 0.01625).abs() < 1e-15);
        assert!((c.epsilon - 0.75).abs() < 1e-15);
        assert!(!c.all_pure);
        assert!(c.within(TOTAL, Accounting::ZcdpFilter));
        // Another pure 0.05 is over the rho budget (0.0175 > 0.0174689),
        // and condition (A) does not apply (a zCDP charge is in), though
        // basic composition alone would still admit it (0.8 <= 1): the
        // filter must not use basic for a sequence with a Gaussian job.
        let over = c.plus(&Loss::Pure { epsilon: 0.05 });
        assert!((over.rho.unwrap() - 0.0175).abs() < 1e-15);
        assert!(!over.within(TOTAL, Accounting::ZcdpFilter));
        assert!(over.within(TOTAL, Accounting::Basic));
        // How many more pure 0.01 jobs fit: (0.0174689 - 0.01625) / 5e-5 = 24.38.
        let more = c.how_many_more(
            &Loss::Pure { epsilon: 0.01 },
            TOTAL,
            Accounting::ZcdpFilter,
            10_000,
        );
        assert_eq!(more, 24);
    }

    #[test]
    fn a_charge_without_a_zcdp_description_is_refused_by_the_filter() {
        let approx = Loss::Approx {
            epsilon: 0.1,
            delta: 1e-7,
        };
        let c = Charged::new().plus(&approx);
        assert_eq!(c.rho, None);
        assert!(!c.within(TOTAL, Accounting::ZcdpFilter));
        assert!(c.within(TOTAL, Accounting::Basic));
    }

    #[test]
    fn a_refund_takes_its_rho_back() {
        let job = Loss::Pure { epsilon: 0.1 };
        let c = Charged::new().plus(&job).plus(&job).minus(&job);
        assert!((c.rho.unwrap() - 0.005).abs() < 1e-15);
        assert!((c.epsilon - 0.1).abs() < 1e-15);
    }

    #[test]
    fn the_filter_is_never_tighter_than_basic_on_pure_charges() {
        for eps in [0.001, 0.01, 0.05, 0.1, 0.3, 1.0] {
            let job = Loss::Pure { epsilon: eps };
            assert!(
                admitted(Accounting::ZcdpFilter, job) >= admitted(Accounting::Basic, job),
                "{eps}"
            );
        }
    }

    #[test]
    fn how_many_more_agrees_with_admitting_one_by_one() {
        for eps in [0.01, 0.02, 0.3] {
            let job = Loss::Pure { epsilon: eps };
            for acc in [Accounting::Basic, Accounting::ZcdpFilter] {
                let k = Charged::new().how_many_more(&job, TOTAL, acc, 100_000);
                assert_eq!(k as usize, admitted(acc, job), "{eps} {acc:?}");
            }
        }
    }
}
