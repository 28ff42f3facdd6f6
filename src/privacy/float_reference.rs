//! An exact reference for the float-error margins of `calibration` (tests
//! only).
//!
//! Every f64 is a dyadic rational, so sums and products of the floats a
//! computation starts from have exact values, representable as
//! nonoverlapping expansions (Shewchuk, "Adaptive precision floating-point
//! arithmetic and fast robust geometric predicates", 1997): `two_sum` and
//! `two_product` (via fused multiply-add) are error-free transformations, and
//! `grow` adds a float to an expansion exactly. Quotients are taken to
//! double-double precision (relative error about `u^2`), far below the
//! margins being checked (thousands of `u` and more).

/// `(s, e)` with `s = fl(a + b)` and `s + e = a + b` exactly (Knuth).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// An exact sum of floats: nonoverlapping components in increasing
/// magnitude, zeros eliminated.
#[derive(Clone, Debug, Default)]
pub(crate) struct Expansion {
    parts: Vec<f64>,
    scratch: Vec<f64>,
}

impl Expansion {
    /// Add `x` exactly (Shewchuk's GROW-EXPANSION with zero elimination).
    pub(crate) fn add(&mut self, x: f64) {
        let mut q = x;
        self.scratch.clear();
        for &e in &self.parts {
            let (s, err) = two_sum(q, e);
            if err != 0.0 {
                self.scratch.push(err);
            }
            q = s;
        }
        if q != 0.0 {
            self.scratch.push(q);
        }
        std::mem::swap(&mut self.parts, &mut self.scratch);
    }

    /// Add `a b` exactly (`two_product`: the rounding error of a product is
    /// itself a float, computed exactly by a fused multiply-add).
    pub(crate) fn add_product(&mut self, a: f64, b: f64) {
        let p = a * b;
        self.add(a.mul_add(b, -p));
        self.add(p);
    }

    /// The value to within a few ulps (components summed smallest first).
    pub(crate) fn estimate(&self) -> f64 {
        self.parts.iter().sum()
    }

    /// The value as a double-double `(hi, lo)`: `hi + lo` is within about
    /// `u^2 |value|` of it.
    pub(crate) fn double_double(&self) -> (f64, f64) {
        let hi = self.estimate();
        let mut rest = self.clone();
        rest.add(-hi);
        (hi, rest.estimate())
    }
}

/// `num / den` in double-double: `q0 = fl(num / den)`, then the remainder
/// `num - q0 den` exactly, divided once more.
pub(crate) fn quotient(num: &Expansion, den: &Expansion) -> (f64, f64) {
    let (d_hi, _) = den.double_double();
    let q0 = num.estimate() / d_hi;
    let mut rest = num.clone();
    for &c in &den.parts {
        rest.add_product(-q0, c);
    }
    (q0, rest.estimate() / d_hi)
}

/// `computed - (hi + lo)`, accurate to a few ulps of the difference.
pub(crate) fn error_of(computed: f64, (hi, lo): (f64, f64)) -> f64 {
    (computed - hi) - lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_exact() {
        // 0.1 added ten times is not 1 in floats; exactly it is 10 * fl(0.1).
        let mut e = Expansion::default();
        let mut naive = 0.0;
        for _ in 0..10 {
            e.add(0.1);
            naive += 0.1;
        }
        let mut ten = Expansion::default();
        ten.add_product(10.0, 0.1);
        let mut diff = e.clone();
        for &c in &ten.parts {
            diff.add(-c);
        }
        assert_eq!(diff.estimate(), 0.0);
        assert!(error_of(naive, e.double_double()) != 0.0);
        // Catastrophic cancellation: (1e100 + 1 - 1e100) is exactly 1.
        let mut c = Expansion::default();
        for x in [1e100, 1.0, -1e100, 1e-100] {
            c.add(x);
        }
        let (hi, lo) = c.double_double();
        assert_eq!(hi, 1.0);
        assert_eq!(lo, 1e-100);
    }

    #[test]
    fn quotients_are_double_double() {
        let (mut one, mut three) = (Expansion::default(), Expansion::default());
        one.add(1.0);
        three.add(3.0);
        let (hi, lo) = quotient(&one, &three);
        assert_eq!(hi, 1.0 / 3.0);
        // 1/3 - fl(1/3) = (1 - 3 fl(1/3)) / 3, computed exactly by FMA.
        let want = (1.0f64 / 3.0).mul_add(-3.0, 1.0) / 3.0;
        assert!((lo - want).abs() <= want.abs() * 1e-15, "{lo} vs {want}");
    }
}
