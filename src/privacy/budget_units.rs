//! Exact budget amounts: epsilon, delta and rho as scaled integers.
//!
//! The ledger stores every amount as an `i64` count of fixed units, so that
//! sums (in Rust and in SQL, on SQLite and PostgreSQL alike) are integer
//! sums: exact, independent of order, and the same on both backends. 100
//! charges of epsilon 0.01 sum to exactly a total of 1 (in doubles they land
//! a hair above it, and the 100th was refused or not depending on the
//! order of the additions).
//!
//! | amount  | unit    | cap                  | largest count     |
//! |---------|---------|----------------------|-------------------|
//! | epsilon | 1e-12   | 1e6                  | 1e18              |
//! | delta   | 1e-18   | 1 (a delta is < 1)   | 1e18              |
//! | rho     | 1e-12   | 1e6                  | 1e18              |
//!
//! Every capped count is at most 1e18, so nine of them still add without
//! overflowing (`i64::MAX` is 9.2e18); sums are checked all the same and an
//! overflow is an error, never a wrap. The API accepts at most epsilon 1000
//! (1e15 units), so a dataset's basic-composition sums stay below 1e15
//! units. A request written with at most 12 decimal places (18 for delta)
//! is taken exactly whenever the double carrying it is within half a unit of
//! it: every epsilon below 8192 (the API's cap is 1000) and every delta
//! below 2^-7. A request that would round to 0 units is refused.
//!
//! # Which way each amount rounds (the privacy argument)
//!
//! Rounding must never let the ledger record less than a mechanism spent,
//! nor grant more than an owner allowed:
//!
//! - **A charge is never below what runs.** A requested epsilon (or delta)
//!   is a decimal number carried by a double; it is quantised to the nearest
//!   unit ([`Units::nearest`]) and that is what is charged. The mechanism
//!   then runs at [`Units::to_f64_down`], the largest double not above the
//!   charged decimal (for 0.01: the double just below 0.01, because the
//!   double nearest to 0.01 is 2e-19 above it). A run's privacy loss is
//!   monotone in its epsilon and delta, so a run at `to_f64_down(c)` is
//!   `c`-DP. Amounts a learner *computes* in doubles (a Gaussian learner's
//!   rho, the epsilon proven by a composition) round up ([`Units::up`]):
//!   the exact value of the double is at most the charge.
//! - **A budget is never above what the owner set.** A total is the owner's
//!   decimal, carried by a double: if the nearest grid decimal reads back as
//!   that very double, the owner wrote that decimal (any JSON encoder writes
//!   a number as the shortest decimal that reads back) and it is taken
//!   exactly; otherwise the total rounds down ([`Units::total`]). Budgets
//!   derived from a total in doubles (the zCDP filter's rho budget) are
//!   computed from the doubles at or below the total and round down.
//! - **Derived charges round up.** A pure charge's rho, `epsilon^2 / 2`, is
//!   computed exactly from its epsilon units and rounded up
//!   ([`RhoUnits::of_pure`]).
//!
//! Conversions between doubles and units are exact: a double's value is a
//! dyadic rational `m 2^e`, converted with integer arithmetic (no `x * 1e12`
//! in floating point, whose rounding could go either way); a count of units
//! converts back through a correctly rounded decimal parse.

use std::marker::PhantomData;

use serde::Serialize;

use super::PrivacyError;
use super::calibration::Budget;

/// What a count of units measures: the scale and the cap.
pub trait Scale: Copy + std::fmt::Debug + PartialEq + Eq + PartialOrd + Ord + Default {
    /// A unit is `10^-DIGITS`.
    const DIGITS: u32;
    /// The largest count a single amount may have (converted from a double).
    const CAP: i64;
    /// The amount's name in messages.
    const NAME: &'static str;
}

/// Epsilon, in units of 1e-12 (cap 1e6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct EpsilonScale;
impl Scale for EpsilonScale {
    const DIGITS: u32 = 12;
    const CAP: i64 = 1_000_000_000_000_000_000;
    const NAME: &'static str = "epsilon";
}

/// Delta, in units of 1e-18 (cap 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct DeltaScale;
impl Scale for DeltaScale {
    const DIGITS: u32 = 18;
    const CAP: i64 = 1_000_000_000_000_000_000;
    const NAME: &'static str = "delta";
}

/// Rho (zCDP), in units of 1e-12 (cap 1e6: a pure charge of epsilon 1000,
/// the API's largest, has rho 5e5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct RhoScale;
impl Scale for RhoScale {
    const DIGITS: u32 = 12;
    const CAP: i64 = 1_000_000_000_000_000_000;
    const NAME: &'static str = "rho";
}

/// An amount as a signed count of `10^-S::DIGITS` units. Stored amounts are
/// never negative (the database checks it); differences such as a remaining
/// budget may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Units<S: Scale>(i64, PhantomData<S>);

/// Epsilon in 1e-12 units.
pub type EpsilonUnits = Units<EpsilonScale>;
/// Delta in 1e-18 units.
pub type DeltaUnits = Units<DeltaScale>;
/// Rho in 1e-12 units.
pub type RhoUnits = Units<RhoScale>;

/// `10^k` for the scales' digit counts (at most 36, within `i128`).
fn pow10(k: u32) -> i128 {
    10i128.pow(k)
}

/// Where the exact value of `x 10^digits` lies past its integer part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fraction {
    /// An integer.
    Zero,
    /// In (0, 1/2).
    BelowHalf,
    /// Exactly 1/2.
    Half,
    /// In (1/2, 1).
    AboveHalf,
}

/// The exact value of a finite, non-negative double times `10^digits`, as
/// its integer part and where the rest lies. `None` if the integer part
/// does not fit an `i128`.
///
/// A double is `m 2^e` with `m < 2^53` (IEEE 754 binary64), so `x 10^d =
/// m 10^d 2^e`: for `e >= 0` an integer, else `m 10^d` (below 2^113 for
/// `d <= 18`) shifted right by `-e` bits, the bits shifted out being the
/// fraction.
fn scaled(x: f64, digits: u32) -> Option<(i128, Fraction)> {
    debug_assert!(x.is_finite() && x >= 0.0);
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let mantissa = bits & ((1u64 << 52) - 1);
    let (m, e) = if biased == 0 {
        (mantissa, -1074)
    } else {
        (mantissa | (1u64 << 52), biased - 1075)
    };
    let n = i128::from(m) * pow10(digits);
    if e >= 0 {
        // Shifting left by `e` must not lose bits: n < 2^(127 - e).
        let e = e.unsigned_abs();
        if e >= 127 || (n != 0 && n.leading_zeros() <= e) {
            return None;
        }
        return Some((n << e, Fraction::Zero));
    }
    let shift = e.unsigned_abs();
    if shift >= 127 {
        // 0 <= n < 2^113 < 2^126, half of 2^shift.
        let f = if n == 0 {
            Fraction::Zero
        } else {
            Fraction::BelowHalf
        };
        return Some((0, f));
    }
    let rest = n & ((1i128 << shift) - 1);
    let half = 1i128 << (shift - 1);
    let f = match rest {
        0 => Fraction::Zero,
        r if r < half => Fraction::BelowHalf,
        r if r == half => Fraction::Half,
        _ => Fraction::AboveHalf,
    };
    Some((n >> shift, f))
}

impl<S: Scale> Units<S> {
    /// Zero.
    pub const ZERO: Units<S> = Units(0, PhantomData);

    /// A count of units as stored (the database checks it is `>= 0`).
    pub const fn from_units(units: i64) -> Units<S> {
        Units(units, PhantomData)
    }

    /// The count of units.
    pub const fn units(self) -> i64 {
        self.0
    }

    fn check(x: f64) -> Result<(), PrivacyError> {
        if !(x.is_finite() && x >= 0.0) {
            return Err(PrivacyError::InvalidParameter(format!(
                "{} must be a finite number >= 0, got {x}",
                S::NAME
            )));
        }
        Ok(())
    }

    fn capped(units: i128, x: f64) -> Result<Units<S>, PrivacyError> {
        match i64::try_from(units) {
            Ok(u) if u <= S::CAP => Ok(Units(u, PhantomData)),
            _ => Err(PrivacyError::InvalidParameter(format!(
                "{} must be at most {} (the ledger's cap), got {x}",
                S::NAME,
                Units::<S>(S::CAP, PhantomData).to_f64()
            ))),
        }
    }

    /// The smallest count of units whose value is at least the exact value
    /// of `x` (a charge for a run at `x`: never below it).
    pub fn up(x: f64) -> Result<Units<S>, PrivacyError> {
        Self::check(x)?;
        let (floor, fraction) = scaled(x, S::DIGITS).ok_or_else(|| Self::over(x))?;
        Self::capped(floor + i128::from(fraction != Fraction::Zero), x)
    }

    /// The largest count of units whose value is at most the exact value of
    /// `x` (a budget derived in doubles: never above it).
    pub fn down(x: f64) -> Result<Units<S>, PrivacyError> {
        Self::check(x)?;
        let (floor, _) = scaled(x, S::DIGITS).ok_or_else(|| Self::over(x))?;
        Self::capped(floor, x)
    }

    fn over(x: f64) -> PrivacyError {
        PrivacyError::InvalidParameter(format!(
            "{} must be at most {} (the ledger's cap), got {x}",
            S::NAME,
            Units::<S>(S::CAP, PhantomData).to_f64()
        ))
    }

    /// The grid point next to `x`: `x 10^DIGITS` computed in doubles and
    /// rounded to an integer. The same formula as migration 0009's SQL, so
    /// both read an old total the same way.
    fn candidate(x: f64) -> f64 {
        (x * pow10(S::DIGITS) as f64).round()
    }

    /// A requested amount (a job's or an evaluation's epsilon and delta, a
    /// job size asked about): the nearest count of units, which is charged;
    /// the run is then tied below it by [`Units::to_f64_down`]. Refused if a
    /// positive `x` rounds to 0 units (below the ledger's resolution).
    pub fn nearest(x: f64) -> Result<Units<S>, PrivacyError> {
        Self::check(x)?;
        let (floor, fraction) = scaled(x, S::DIGITS).ok_or_else(|| Self::over(x))?;
        // Ties (exactly half a unit, only possible for a dyadic x) go up.
        let nearest = Self::capped(floor + i128::from(fraction >= Fraction::Half), x)?;
        Self::positive(nearest, x)
    }

    /// A total the owner sets: the **smallest** grid decimal that reads back
    /// as exactly `x`, if the grid decimal next to `x` does (then the owner
    /// wrote one of them), else `x` rounded down. Refused if a positive `x`
    /// rounds to 0 units.
    ///
    /// Why the smallest: where the grid is finer than the doubles (a delta
    /// of 2^-7 or more: the doubles there are about 5.5e-17 apart, the grid
    /// 1e-18), several grid decimals read back as the same double and the
    /// one the owner wrote cannot be told apart; the smallest is at most
    /// the owner's, so the budget is never above what the owner set (a
    /// total of delta 0.27 was stored as 0.270000000000000032 before,
    /// issue 26). Below 2^-7 at most one grid decimal reads back as `x`,
    /// the walk stops at once, and the total is the owner's decimal.
    pub fn total(x: f64) -> Result<Units<S>, PrivacyError> {
        Self::check(x)?;
        let candidate = Self::candidate(x);
        if candidate <= S::CAP as f64 && candidate / pow10(S::DIGITS) as f64 == x {
            // Invariant: 0 <= candidate <= CAP < 2^63 and it is an integer.
            let mut units = candidate as i64;
            // At most about 60 steps: half a double's spacing below 1 holds
            // at most 56 grid points of 1e-18.
            while units > 0 && Units::<S>::from_units(units - 1).to_f64() == x {
                units -= 1;
            }
            return Self::positive(Units(units, PhantomData), x);
        }
        Self::positive(Self::down(x)?, x)
    }

    fn positive(units: Units<S>, x: f64) -> Result<Units<S>, PrivacyError> {
        if x > 0.0 && units.0 == 0 {
            return Err(PrivacyError::InvalidParameter(format!(
                "{} {x} is below the ledger's resolution of 1e-{} (it would round to 0)",
                S::NAME,
                S::DIGITS
            )));
        }
        Ok(units)
    }

    /// The double nearest to the decimal value (what the API shows).
    pub fn to_f64(self) -> f64 {
        // Rust's decimal parse is correctly rounded; the text is an integer
        // and an exponent, so it always parses.
        format!("{}e-{}", self.0, S::DIGITS)
            .parse()
            .unwrap_or(f64::NAN)
    }

    /// The largest double not above the decimal value (what a mechanism
    /// charged this amount may run at). For a negative count, the nearest.
    pub fn to_f64_down(self) -> f64 {
        let nearest = self.to_f64();
        if self.0 <= 0 {
            return nearest;
        }
        // The nearest double is above the decimal iff the smallest count of
        // units at or above it exceeds ours; then the next double down is
        // below the decimal (the decimal lies between the two).
        match Self::up(nearest) {
            Ok(u) if u.0 <= self.0 => nearest,
            _ => nearest.next_down(),
        }
    }

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Units<S>) -> Option<Units<S>> {
        self.0.checked_add(other.0).map(|u| Units(u, PhantomData))
    }

    /// `self - other`, or `None` on overflow.
    pub fn checked_sub(self, other: Units<S>) -> Option<Units<S>> {
        self.0.checked_sub(other.0).map(|u| Units(u, PhantomData))
    }

    /// `k` times `self`, or `None` on overflow.
    pub fn checked_mul(self, k: u64) -> Option<Units<S>> {
        i64::try_from(k)
            .ok()
            .and_then(|k| self.0.checked_mul(k))
            .map(|u| Units(u, PhantomData))
    }
}

impl RhoUnits {
    /// The rho of a pure `epsilon`-DP charge, `epsilon^2 / 2` (Bun and
    /// Steinke 2016, Prop. 1.4), computed exactly from the epsilon units and
    /// rounded up; `None` above the rho cap (epsilon above about 1414).
    ///
    /// With `e` epsilon units of `10^-12`, `epsilon^2 / 2 = e^2 10^-24 / 2`,
    /// that is `e^2 / (2 10^12)` rho units of `10^-12`.
    pub fn of_pure(epsilon: EpsilonUnits) -> Option<RhoUnits> {
        let e = i128::from(epsilon.units());
        let divisor = 2 * pow10(2 * EpsilonScale::DIGITS - RhoScale::DIGITS);
        let rho = (e * e + divisor - 1) / divisor;
        i64::try_from(rho)
            .ok()
            .filter(|&r| r <= RhoScale::CAP)
            .map(RhoUnits::from_units)
    }
}

/// A count read back from the database, which only holds amounts >= 0.
impl<S: Scale> TryFrom<i64> for Units<S> {
    type Error = PrivacyError;

    fn try_from(units: i64) -> Result<Units<S>, PrivacyError> {
        if units < 0 {
            return Err(PrivacyError::InvalidParameter(format!(
                "a stored {} is negative ({units} units)",
                S::NAME
            )));
        }
        Ok(Units(units, PhantomData))
    }
}

/// Amounts serialize as JSON numbers (the nearest double), as they did when
/// they were doubles, so API clients read them unchanged.
impl<S: Scale> Serialize for Units<S> {
    fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
        s.serialize_f64(self.to_f64())
    }
}

impl<S: Scale> std::fmt::Display for Units<S> {
    /// The exact decimal value (no rounding): `0.01`, `1e-06` as `0.000001`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let per = pow10(S::DIGITS);
        let v = i128::from(self.0);
        let sign = if v < 0 { "-" } else { "" };
        let (int, frac) = (v.abs() / per, v.abs() % per);
        if frac == 0 {
            return write!(f, "{sign}{int}");
        }
        let digits = format!("{frac:0width$}", width = S::DIGITS as usize);
        write!(f, "{sign}{int}.{}", digits.trim_end_matches('0'))
    }
}

/// An (epsilon, delta) pair in units: a total, a charge under basic
/// composition, or what remains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Amount {
    /// Epsilon.
    pub epsilon: EpsilonUnits,
    /// Delta.
    pub delta: DeltaUnits,
}

impl Amount {
    /// Zero.
    pub const ZERO: Amount = Amount {
        epsilon: EpsilonUnits::ZERO,
        delta: DeltaUnits::ZERO,
    };

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Amount) -> Option<Amount> {
        Some(Amount {
            epsilon: self.epsilon.checked_add(other.epsilon)?,
            delta: self.delta.checked_add(other.delta)?,
        })
    }

    /// `self - other`, or `None` on overflow.
    pub fn checked_sub(self, other: Amount) -> Option<Amount> {
        Some(Amount {
            epsilon: self.epsilon.checked_sub(other.epsilon)?,
            delta: self.delta.checked_sub(other.delta)?,
        })
    }

    /// Whether `self` fits within `limit` in both coordinates (exact).
    pub fn fits_within(self, limit: Amount) -> bool {
        self.epsilon <= limit.epsilon && self.delta <= limit.delta
    }
}

/// A job's or an evaluation's requested budget, as the ledger charges it and
/// as its mechanism runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Requested {
    /// The requested (epsilon, delta) quantised to the nearest units: what
    /// a plain run is charged (the ledger charges the plan's cost, rounded
    /// up, which for a run at [`Requested::run`] is exactly this).
    pub asked: Amount,
    /// The budget the mechanism runs at: the largest doubles not above
    /// `asked` (module docs, "Which way each amount rounds").
    pub run: Budget,
}

impl Requested {
    /// Quantise a request. Errors name `epsilon` or `delta` in their
    /// message: a value `Budget::new` refuses, above the ledger's cap, or
    /// positive but below one unit.
    pub fn new(epsilon: f64, delta: f64) -> Result<Requested, PrivacyError> {
        Budget::new(epsilon, delta)?;
        let asked = Amount {
            epsilon: EpsilonUnits::nearest(epsilon)?,
            delta: DeltaUnits::nearest(delta)?,
        };
        // `Budget::new` accepts the run: epsilon has at least one unit
        // (`nearest` refuses 0), so its double is > 0; delta < 1, so its
        // units are below 1e18 and its double below 1.
        let run = Budget::new(asked.epsilon.to_f64_down(), asked.delta.to_f64_down())?;
        Ok(Requested { asked, run })
    }
}

/// A total the owner sets, in units ([`Units::total`]: the decimal written,
/// or rounded down). Errors name `epsilon` or `delta` in their message.
pub fn total(epsilon: f64, delta: f64) -> Result<Amount, PrivacyError> {
    Budget::new(epsilon, delta)?;
    Ok(Amount {
        epsilon: EpsilonUnits::total(epsilon)?,
        delta: DeltaUnits::total(delta)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eps(units: i64) -> EpsilonUnits {
        EpsilonUnits::from_units(units)
    }

    /// Hand-computed conversions: 0.1 is 1e11 epsilon units, 1e-6 is 1e12
    /// delta units (the doubles 0.1 and 1e-6 are 5.6e-18 above and 4.5e-23
    /// below the decimals, far below a unit).
    #[test]
    fn requests_convert_to_the_decimal_they_were_written_as() {
        assert_eq!(EpsilonUnits::nearest(0.1).unwrap().units(), 100_000_000_000);
        assert_eq!(EpsilonUnits::nearest(0.01).unwrap().units(), 10_000_000_000);
        assert_eq!(
            EpsilonUnits::nearest(1.0).unwrap().units(),
            1_000_000_000_000
        );
        assert_eq!(
            DeltaUnits::nearest(1e-6).unwrap().units(),
            1_000_000_000_000
        );
        assert_eq!(DeltaUnits::nearest(0.0).unwrap().units(), 0);
        assert_eq!(EpsilonUnits::total(0.3).unwrap().units(), 300_000_000_000);
        assert_eq!(DeltaUnits::total(1e-6).unwrap().units(), 1_000_000_000_000);
        // Above 2^-7 several grid decimals read back as the same double:
        // the total is never above the owner's decimal (issue 26, item 7).
        let owner = 270_000_000_000_000_000i64;
        let stored = DeltaUnits::total(0.27).unwrap().units();
        assert!(stored <= owner, "{stored} above the owner's 0.27");
        assert_eq!(DeltaUnits::from_units(stored).to_f64(), 0.27);
        assert_ne!(DeltaUnits::from_units(stored - 1).to_f64(), 0.27);
        assert_eq!(EpsilonUnits::total(1000.0).unwrap().units(), 10i64.pow(15));
        assert_eq!(EpsilonUnits::from_units(100_000_000_000).to_f64(), 0.1);
        assert_eq!(DeltaUnits::from_units(1_000_000_000_000).to_f64(), 1e-6);
        assert_eq!(eps(10_000_000_000).to_string(), "0.01");
        assert_eq!(eps(-1_500_000_000_000).to_string(), "-1.5");
    }

    /// In doubles 0.1 + 0.2 is 0.30000000000000004 != 0.3; in units the
    /// sum is exactly the units of 0.3, and 100 x 0.01 is exactly 1.
    #[test]
    fn sums_of_units_are_exact() {
        let (a, b, c) = (
            EpsilonUnits::nearest(0.1).unwrap(),
            EpsilonUnits::nearest(0.2).unwrap(),
            EpsilonUnits::nearest(0.3).unwrap(),
        );
        assert_ne!(0.1 + 0.2, 0.3);
        assert_eq!(a.checked_add(b), Some(c));
        let cent = EpsilonUnits::nearest(0.01).unwrap();
        let hundred = (0..100).fold(EpsilonUnits::ZERO, |s, _| s.checked_add(cent).unwrap());
        assert_eq!(hundred, EpsilonUnits::total(1.0).unwrap());
        assert_eq!(cent.checked_mul(100), Some(hundred));
        let mut f = 0.0f64;
        for _ in 0..100 {
            f += 0.01;
        }
        assert_ne!(f, 1.0, "the f64 sum drifts (that is why units exist)");
    }

    /// Directions, by hand: the double 0.01 is
    /// 0.01000000000000000020816681711721685... (above the decimal), so a
    /// run at exactly that double must be charged 10_000_000_001 units,
    /// while a total of that double is the decimal 0.01 it reads as. The
    /// double 0.3 is 0.299999999999999988897769753748... (below): a run at
    /// it is charged exactly 0.3.
    #[test]
    fn charges_of_doubles_round_up_and_totals_round_down() {
        assert_eq!(EpsilonUnits::up(0.01).unwrap().units(), 10_000_000_001);
        assert_eq!(EpsilonUnits::down(0.01).unwrap().units(), 10_000_000_000);
        assert_eq!(EpsilonUnits::up(0.3).unwrap().units(), 300_000_000_000);
        assert_eq!(EpsilonUnits::down(0.3).unwrap().units(), 299_999_999_999);
        assert_eq!(EpsilonUnits::up(0.5).unwrap().units(), 500_000_000_000);
        assert_eq!(EpsilonUnits::down(0.5).unwrap().units(), 500_000_000_000);
        // 1e-6 as a double is 9.99999999999999954748e-7: just below.
        assert_eq!(DeltaUnits::up(1e-6).unwrap().units(), 1_000_000_000_000);
        assert_eq!(DeltaUnits::down(1e-6).unwrap().units(), 999_999_999_999);
        // A total with more digits than the grid rounds down, not to nearest.
        assert_eq!(
            EpsilonUnits::total(0.1234567890129).unwrap().units(),
            123_456_789_012
        );
        assert_eq!(
            EpsilonUnits::nearest(0.1234567890129).unwrap().units(),
            123_456_789_013
        );
        // Tiny and huge: below one unit, and the smallest subnormal.
        assert_eq!(EpsilonUnits::up(1e-13).unwrap().units(), 1);
        assert_eq!(EpsilonUnits::down(1e-13).unwrap().units(), 0);
        assert_eq!(EpsilonUnits::up(f64::from_bits(1)).unwrap().units(), 1);
        assert_eq!(EpsilonUnits::up(1e6).unwrap().units(), EpsilonScale::CAP);
    }

    /// The run value is the largest double not above the charge.
    #[test]
    fn the_run_is_at_most_the_charged_decimal() {
        for units in [
            1,
            7,
            10_000_000_000,
            100_000_000_000,
            300_000_000_000,
            500_000_000_000,
            123_456_789_012,
            1_000_000_000_000,
            999_999_999_999_999,
        ] {
            let c = eps(units);
            let run = c.to_f64_down();
            // Never above: the smallest count at or above the run is ours.
            assert!(EpsilonUnits::up(run).unwrap() <= c, "{units}: {run}");
            // The largest such double: the next one up is above.
            assert!(EpsilonUnits::up(run.next_up()).unwrap() > c, "{units}");
            // A run at `run` is charged exactly `c` (the tie of the charge).
            assert_eq!(EpsilonUnits::up(run).unwrap(), c, "{units}");
        }
        // 0.01: the double nearest is above, so the run steps down one ulp.
        let cent = eps(10_000_000_000);
        assert_eq!(cent.to_f64(), 0.01);
        assert_eq!(cent.to_f64_down(), 0.01f64.next_down());
        // 0.3: the nearest double is already below; it is the run.
        assert_eq!(eps(300_000_000_000).to_f64_down(), 0.3);
        // Delta 1e-6: the double 1e-6 is below the decimal.
        assert_eq!(DeltaUnits::from_units(10i64.pow(12)).to_f64_down(), 1e-6);
    }

    /// A request of (0.01, 1e-6) is charged exactly (0.01, 1e-6) and runs at
    /// the doubles not above them; delta 0 stays 0.
    #[test]
    fn a_request_is_charged_its_decimal_and_runs_below_it() {
        let r = Requested::new(0.01, 1e-6).unwrap();
        assert_eq!(r.asked.epsilon.units(), 10_000_000_000);
        assert_eq!(r.asked.delta.units(), 1_000_000_000_000);
        assert_eq!(r.run.epsilon(), 0.01f64.next_down());
        assert_eq!(r.run.delta(), 1e-6);
        let pure = Requested::new(0.5, 0.0).unwrap();
        assert_eq!((pure.run.epsilon(), pure.run.delta()), (0.5, 0.0));
        assert!(Requested::new(0.0, 0.0).is_err());
        assert!(Requested::new(0.1, 1.0).is_err());
        let tiny = Requested::new(0.1, 1e-20).unwrap_err().to_string();
        assert!(tiny.contains("delta"), "{tiny}");
        assert_eq!(total(1.0, 1e-6).unwrap().epsilon.units(), 10i64.pow(12));
    }

    /// A pure charge's rho, exactly: epsilon 0.01 has rho 5e-5 (5e7 units);
    /// epsilon 1e-12 (one unit) has rho 5e-25, rounded up to one unit;
    /// epsilon 0.1 + 1e-12 has rho 0.005000000000100000000000005, up to
    /// 5_000_000_001 (not the 5_000_000_000 of rounding to nearest).
    #[test]
    fn a_pure_charges_rho_rounds_up() {
        assert_eq!(
            RhoUnits::of_pure(eps(10_000_000_000)),
            Some(RhoUnits::from_units(50_000_000))
        );
        assert_eq!(RhoUnits::of_pure(eps(1)), Some(RhoUnits::from_units(1)));
        assert_eq!(RhoUnits::of_pure(eps(0)), Some(RhoUnits::ZERO));
        assert_eq!(
            RhoUnits::of_pure(eps(100_000_000_001)),
            Some(RhoUnits::from_units(5_000_000_001))
        );
        // Epsilon 1000 (the API's cap): rho 5e5.
        assert_eq!(
            RhoUnits::of_pure(eps(10i64.pow(15))),
            Some(RhoUnits::from_units(5 * 10i64.pow(17)))
        );
        assert_eq!(RhoUnits::of_pure(eps(10i64.pow(16))), None);
    }

    /// Requests that cannot be represented sensibly are refused.
    #[test]
    fn unrepresentable_requests_are_refused() {
        assert!(EpsilonUnits::nearest(f64::NAN).is_err());
        assert!(EpsilonUnits::nearest(f64::INFINITY).is_err());
        assert!(EpsilonUnits::nearest(-0.1).is_err());
        assert!(EpsilonUnits::nearest(4e-13).is_err(), "rounds to 0");
        assert_eq!(EpsilonUnits::nearest(6e-13).unwrap().units(), 1);
        assert!(EpsilonUnits::total(9e-13).is_err(), "rounds down to 0");
        assert!(DeltaUnits::nearest(1e-19).is_err());
        assert!(EpsilonUnits::nearest(2e6).is_err(), "above the cap");
        assert!(EpsilonUnits::up(1e300).is_err());
        let err = EpsilonUnits::nearest(1e-13).unwrap_err().to_string();
        assert!(
            err.contains("epsilon") && err.contains("resolution"),
            "{err}"
        );
    }

    /// The exact conversion against a slow reference on random doubles:
    /// the decimal expansion of the double, cut at the grid.
    #[test]
    fn the_exact_conversion_agrees_with_the_decimal_expansion() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        for _ in 0..20_000 {
            let x = f64::from_bits(rng.random_range(0..0x4090_0000_0000_0000u64)); // < 1024
            let (floor, exact) = reference(x, 12);
            let nearest = floor + i128::from(!exact && round_up(x, 12));
            assert_eq!(
                EpsilonUnits::nearest(x).map_or(0, |u| u.units()),
                i64::try_from(nearest).unwrap(),
                "{x:e}"
            );
            assert_eq!(
                EpsilonUnits::down(x).unwrap().units(),
                i64::try_from(floor).unwrap(),
                "{x:e}"
            );
            assert_eq!(
                EpsilonUnits::up(x).unwrap().units(),
                i64::try_from(floor + i128::from(!exact)).unwrap(),
                "{x:e}"
            );
        }
    }

    /// Whether the digits past the grid are at least half a unit.
    fn round_up(x: f64, digits: usize) -> bool {
        let text = format!("{x:.1100}");
        let (_, frac) = text.split_once('.').unwrap();
        frac.as_bytes()[digits] >= b'5'
    }

    /// `x 10^digits` by long multiplication of the double's exact decimal
    /// expansion (`{:.1100}` prints every digit of a double exactly).
    fn reference(x: f64, digits: usize) -> (i128, bool) {
        let text = format!("{x:.1100}");
        let (int, frac) = text.split_once('.').unwrap();
        let (kept, rest) = frac.split_at(digits);
        let floor: i128 = format!("{int}{kept}").parse().unwrap();
        (floor, rest.bytes().all(|b| b == b'0'))
    }
}
