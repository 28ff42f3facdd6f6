//! Per-literal row lists: the rows to sum over for each literal, all padded
//! to the same length so that the work does not depend on the data.
//!
//! The weak learners need, each round, sums of per-row weights over the rows
//! where each literal holds. A flat list of row indices per literal sums much
//! faster than walking the bit matrix every round. A literal that holds for
//! more than half the rows lists its *unset* rows instead (the sum is then
//! the total minus theirs), so no list needs more than `floor(n / 2)`
//! entries. Built once per training run.
//!
//! # Constant work
//!
//! How many rows a literal lists depends on its density in the data, which
//! is private: summing lists of their natural lengths made training time a
//! function of the densities (`docs/privacy.md`, "Timing", has the
//! measurements before and after). So every list is padded to exactly
//! `floor(n / 2)` entries with the sentinel index `n`, and the callers keep a
//! zero at index `n` of every array they index with these lists (adding 0.0
//! is exact, so the sums are unchanged). Every literal then costs the same
//! number of loads and additions, whatever its density, and the callers treat
//! listed and complemented literals with the same arithmetic
//! ([`RowLists::complement_factor`]). What remains data-dependent is which
//! addresses are loaded: padding entries all hit the same cache line, real
//! entries walk the weight array; `docs/privacy.md` records what that costs.

use crate::data::BitMatrix;

/// Row lists for every literal of a bit matrix, each exactly
/// [`RowLists::width`] long.
pub(crate) struct RowLists {
    /// `rows[j * width..(j + 1) * width]` belong to literal j.
    rows: Vec<u32>,
    width: usize,
    /// Whether literal j's list holds the rows where it is NOT set.
    complement: Vec<bool>,
}

impl RowLists {
    /// Lists for `features` (at most `u32::MAX` rows, so that the sentinel
    /// `n` fits in a `u32`: `lazybb::train` checks).
    pub(crate) fn new(features: &BitMatrix) -> RowLists {
        let n = features.n_rows();
        let width = n / 2;
        let sentinel = n as u32;
        let d = features.n_cols();
        let mut rows = Vec::with_capacity(d * width);
        let mut complement = Vec::with_capacity(d);
        // Building is constant work too: every row of every column is
        // written to the buffer and the length advances by its bit, so the
        // steps do not depend on how many rows a literal lists.
        let mut buffer = vec![0u32; n + 1];
        for j in 0..d {
            let column = features.column(j);
            let ones: usize = column.iter().map(|w| w.count_ones() as usize).sum();
            // 2 ones > n means n - ones < n / 2: either way at most width rows.
            let zeros_listed = 2 * ones > n;
            let flip = u64::from(zeros_listed);
            let mut len = 0;
            for i in 0..n {
                buffer[len] = i as u32;
                len += ((column[i / 64] >> (i % 64)) & 1 ^ flip) as usize;
            }
            debug_assert!(len <= width);
            // Positions len.. hold stale indices: the sentinel instead, with
            // the same arithmetic at every position whatever len is.
            rows.extend(buffer[..width].iter().enumerate().map(|(k, &row)| {
                let keep = u32::from(k < len);
                keep * row + (1 - keep) * sentinel
            }));
            complement.push(zeros_listed);
        }
        RowLists {
            rows,
            width,
            complement,
        }
    }

    /// Number of literals.
    pub(crate) fn len(&self) -> usize {
        self.complement.len()
    }

    /// Entries per list: `floor(n / 2)`, the same for every literal.
    #[cfg(test)]
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// Literal j's list (padded with the sentinel `n`), and whether it lists
    /// the unset rows.
    pub(crate) fn get(&self, j: usize) -> (&[u32], bool) {
        (
            &self.rows[j * self.width..(j + 1) * self.width],
            self.complement[j],
        )
    }

    /// `c = 1.0` for a complemented list, `0.0` otherwise, so that the sum
    /// over the set rows is `c total + (1 - 2c) listed` for both kinds: the
    /// same operations whatever the literal's density (exact: it is
    /// `0 + listed` or `total - listed`).
    pub(crate) fn complement_factor(complement: bool) -> f64 {
        f64::from(u8::from(complement))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::BitMatrixBuilder;

    /// Lists hold exactly the set (or, for dense literals, unset) rows,
    /// padded with the sentinel to `floor(n / 2)`.
    #[test]
    fn lists_are_padded_to_half_the_rows() {
        for n in [1usize, 2, 7, 64, 65, 130] {
            let mut builder = BitMatrixBuilder::new(4);
            for i in 0..n {
                // Literal 0 never set, 1 always, 2 every third row, 3 all but every third.
                let mut active = vec![1];
                if i % 3 == 0 {
                    active.push(2);
                } else {
                    active.push(3);
                }
                builder.push_row(&active);
            }
            let features = builder.finish();
            let lists = RowLists::new(&features);
            assert_eq!(lists.width(), n / 2);
            for j in 0..4 {
                let (list, complement) = lists.get(j);
                assert_eq!(list.len(), n / 2, "n {n} literal {j}");
                let real: Vec<usize> = list
                    .iter()
                    .filter(|&&i| i as usize != n)
                    .map(|&i| i as usize)
                    .collect();
                let want: Vec<usize> = (0..n)
                    .filter(|&i| features.get(i, j) != complement)
                    .collect();
                assert_eq!(real, want, "n {n} literal {j}");
                assert!(list[real.len()..].iter().all(|&i| i as usize == n));
            }
        }
    }
}
