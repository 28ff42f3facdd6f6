//! Per-literal row lists: the rows to sum over for each literal.
//!
//! The weak learners need, each round, sums of per-row weights over the rows
//! where each literal holds. A flat list of row indices per literal sums much
//! faster than walking the bit matrix every round, and listing the *unset*
//! rows of a literal that holds for more than half the rows (then the sum is
//! the total minus theirs) halves the work on one-hot data, where most
//! literals are either rare or nearly universal (e.g. `capital-gain <= 9999.9`
//! holds for ~95% of Adult). Built once per training run.
//!
//! The list lengths depend on the literals' densities in the data, so the
//! running time does too: a timing side channel that `docs/privacy.md`
//! ("Timing") measures and records as open.

use crate::data::BitMatrix;

/// Row lists for every literal of a bit matrix.
pub(crate) struct RowLists {
    rows: Vec<u32>,
    /// `rows[offsets[j]..offsets[j + 1]]` belong to literal j.
    offsets: Vec<usize>,
    /// Whether literal j's list holds the rows where it is NOT set.
    complement: Vec<bool>,
}

impl RowLists {
    /// Lists for `features` (at most `u32::MAX` rows: `lazybb::train` checks).
    pub(crate) fn new(features: &BitMatrix) -> RowLists {
        let n = features.n_rows();
        let mut rows = Vec::new();
        let mut offsets = vec![0];
        let mut complement = Vec::with_capacity(features.n_cols());
        for j in 0..features.n_cols() {
            let column = features.column(j);
            let ones: usize = column.iter().map(|w| w.count_ones() as usize).sum();
            let zeros_listed = 2 * ones > n;
            for (w, &word) in column.iter().enumerate() {
                let mut bits = if zeros_listed { !word } else { word };
                if w == column.len() - 1 && !n.is_multiple_of(64) {
                    bits &= (1u64 << (n % 64)) - 1;
                }
                while bits != 0 {
                    rows.push((w * 64) as u32 + bits.trailing_zeros());
                    bits &= bits - 1;
                }
            }
            offsets.push(rows.len());
            complement.push(zeros_listed);
        }
        RowLists {
            rows,
            offsets,
            complement,
        }
    }

    /// Number of literals.
    pub(crate) fn len(&self) -> usize {
        self.complement.len()
    }

    /// Literal j's list, and whether it lists the unset rows.
    pub(crate) fn get(&self, j: usize) -> (&[u32], bool) {
        (
            &self.rows[self.offsets[j]..self.offsets[j + 1]],
            self.complement[j],
        )
    }
}
