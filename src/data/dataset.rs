//! The encoded dataset the learners train on: literal bits plus labels.
//!
//! Produced by [`super::read_csv`]; the learners only ever see this (never raw rows).
//! [`Dataset::subset`] gathers rows for cross-validation folds.

use std::ops::Range;

use super::bits::{BitMatrix, BitVec};

/// Encoded dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// n x d literal bits, column-major.
    pub features: BitMatrix,
    /// Some(labels) where a binary label column was present: bit set = positive (y = +1).
    pub labels: Option<BitVec>,
    /// Some(values) where a regression label column was present, each clamped
    /// to the schema's public bounds.
    pub targets: Option<Vec<f64>>,
    /// Some(class indices) where a multiclass label column was present: each
    /// row's class as its index in the schema's public class list.
    pub classes: Option<Vec<u16>>,
    /// Literal index ranges that set exactly one literal per row, from the
    /// public schema ([`super::Encoder::one_hot_groups`]); empty when
    /// unknown (hand-built matrices). The learners sum such a range in work
    /// that depends on n only and check the claim on the data
    /// (`learn::lazybb::groups`).
    pub one_hot_groups: Vec<Range<usize>>,
}

impl Dataset {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.features.n_rows()
    }

    /// Number of literals (d).
    pub fn n_literals(&self) -> usize {
        self.features.n_cols()
    }

    /// Rows at the given indices, in that order. Panics if an index is out of range.
    pub fn subset(&self, rows: &[usize]) -> Dataset {
        Dataset {
            features: self.features.gather_rows(rows),
            labels: self
                .labels
                .as_ref()
                .map(|l| rows.iter().map(|&i| l.get(i)).collect()),
            targets: self
                .targets
                .as_ref()
                .map(|t| rows.iter().map(|&i| t[i]).collect()),
            classes: self
                .classes
                .as_ref()
                .map(|c| rows.iter().map(|&i| c[i]).collect()),
            one_hot_groups: self.one_hot_groups.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::bits::BitMatrixBuilder;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn subset_matches_the_rows(
            rows in proptest::collection::vec((proptest::collection::btree_set(0u32..5, 0..=5), any::<bool>()), 1..200),
            picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..150),
        ) {
            let mut b = BitMatrixBuilder::new(5);
            for (r, _) in &rows {
                b.push_row(&r.iter().copied().collect::<Vec<_>>());
            }
            let data = Dataset {
                features: b.finish(),
                labels: Some(rows.iter().map(|(_, y)| *y).collect()),
                targets: None,
                classes: Some(rows.iter().map(|(r, _)| r.len() as u16).collect()),
                one_hot_groups: vec![],
            };
            let idx: Vec<usize> = picks.iter().map(|p| p.index(rows.len())).collect();
            let s = data.subset(&idx);
            prop_assert_eq!(s.n_rows(), idx.len());
            prop_assert_eq!(s.n_literals(), 5);
            let labels = s.labels.as_ref().unwrap();
            for (k, &i) in idx.iter().enumerate() {
                let want: Vec<u32> = rows[i].0.iter().copied().collect();
                prop_assert_eq!(s.features.row_active(k), want);
                prop_assert_eq!(labels.get(k), rows[i].1);
                prop_assert_eq!(s.classes.as_ref().unwrap()[k], rows[i].0.len() as u16);
            }
        }
    }
}
