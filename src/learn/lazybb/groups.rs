//! One-hot literal groups: ranges of literals of which every row sets
//! exactly one (the intervals or categories of one column of the public
//! schema, with its `is other` / `is missing` literals:
//! [`crate::data::Encoder::one_hot_groups`]). The weak learners pack each
//! group into one per-row code ([`super::column_codes`]), which is only
//! right if the group is one-hot in the data: [`check_groups`] checks that
//! (a popcount and an OR of its columns, constant work) and refuses a group
//! that is not. That would be an encoder bug, and quietly accepting it would
//! make the sums wrong, and their work depend on the bug's interaction with
//! the data.

use std::ops::Range;

use crate::data::BitMatrix;

/// Why the one-hot groups given to [`check_groups`] cannot be used.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GroupError {
    /// Empty, out of the literal range, or overlapping another group.
    Invalid(Range<usize>),
    /// Some row sets no literal of the group, or more than one.
    NotOneHot(Range<usize>),
}

impl std::fmt::Display for GroupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupError::Invalid(g) => write!(f, "invalid one-hot literal group {g:?}"),
            GroupError::NotOneHot(g) => {
                write!(
                    f,
                    "literals {g:?} are not one-hot in the data (an encoder bug)"
                )
            }
        }
    }
}

/// Each literal's group index, after checking that `groups` are disjoint
/// non-empty ranges of literals, each one-hot in the data.
pub(crate) fn check_groups(
    features: &BitMatrix,
    groups: &[Range<usize>],
) -> Result<Vec<Option<usize>>, GroupError> {
    let d = features.n_cols();
    let mut group_of = vec![None; d];
    for (g, range) in groups.iter().enumerate() {
        if range.is_empty() || range.end > d || group_of[range.clone()].iter().any(Option::is_some)
        {
            return Err(GroupError::Invalid(range.clone()));
        }
        group_of[range.clone()]
            .iter_mut()
            .for_each(|x| *x = Some(g));
    }
    for range in groups {
        check_one_hot(features, range.clone())?;
    }
    Ok(group_of)
}

/// Every row sets exactly one literal of `range`: the OR of its columns is
/// all ones and their popcounts add up to n (the same steps for any data).
fn check_one_hot(features: &BitMatrix, range: Range<usize>) -> Result<(), GroupError> {
    let n = features.n_rows();
    let words = n.div_ceil(64);
    let mut any = vec![0u64; words];
    let mut ones = 0usize;
    for j in range.clone() {
        for (a, &w) in any.iter_mut().zip(features.column(j)) {
            *a |= w;
            ones += w.count_ones() as usize;
        }
    }
    let covered: usize = any.iter().map(|w| w.count_ones() as usize).sum();
    if covered == n && ones == n {
        Ok(())
    } else {
        Err(GroupError::NotOneHot(range))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::data::BitMatrixBuilder;

    /// A random matrix whose literals `groups` are one-hot (each row picks
    /// one literal per group, skewed so that some literals are dense and some
    /// empty), and whose other literals are random with density
    /// `(j + 0.5) / d` (some complemented, some not).
    pub(crate) fn one_hot_matrix(
        n: usize,
        d: usize,
        groups: &[std::ops::Range<usize>],
        seed: u64,
    ) -> BitMatrix {
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut builder = BitMatrixBuilder::new(d);
        for _ in 0..n {
            let mut active = Vec::new();
            for j in 0..d {
                if let Some(g) = groups.iter().find(|g| g.contains(&j)) {
                    if j == g.start {
                        // Skewed: the first literal takes most rows, the last none.
                        let k = (next().powi(3) * (g.len() - 1) as f64) as usize;
                        active.push((g.start + k) as u32);
                    }
                } else if next() < (j as f64 + 0.5) / d as f64 {
                    active.push(j as u32);
                }
            }
            builder.push_row(&active);
        }
        builder.finish()
    }

    /// A group that some row does not set exactly once is refused, and so
    /// are empty, out-of-range and overlapping groups.
    #[test]
    #[allow(clippy::single_range_in_vec_init)] // lists of one group
    fn groups_that_are_not_one_hot_are_refused() {
        let mut builder = BitMatrixBuilder::new(4);
        for active in [&[0u32, 2][..], &[1, 2], &[0, 1, 3], &[1, 2]] {
            builder.push_row(active);
        }
        let features = builder.finish();
        assert!(check_groups(&features, &[0..2]).is_err()); // row 2 sets both
        assert!(check_groups(&features, &[2..4]).is_ok()); // one each
        assert!(check_groups(&features, &[0..1, 2..4]).is_err());
        assert!(matches!(
            check_groups(&features, &[2..3]).err(),
            Some(GroupError::NotOneHot(_)) // row 2 sets none
        ));
        // Right count, wrong rows: popcounts add to n but one row sets two.
        let mut builder = BitMatrixBuilder::new(2);
        for active in [&[0u32, 1][..], &[], &[0], &[1]] {
            builder.push_row(active);
        }
        let features2 = builder.finish();
        assert!(matches!(
            check_groups(&features2, &[0..2]).err(),
            Some(GroupError::NotOneHot(_))
        ));
        for bad in [vec![1..1], vec![3..5], vec![0..2, 1..3]] {
            assert!(matches!(
                check_groups(&features, &bad).err(),
                Some(GroupError::Invalid(_))
            ));
        }
    }
}
