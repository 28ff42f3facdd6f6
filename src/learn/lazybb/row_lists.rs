//! Per-literal row lists: the rows to sum over for each literal, all padded
//! to the same length so that the work does not depend on the data.
//!
//! Used by TopDown (DP-1R streams per-row codes instead:
//! [`super::column_codes`]). The weak learners need, each round, sums of
//! per-row weights over the rows
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
//!
//! # One-hot groups
//!
//! Padding costs `d floor(n / 2)` loads a round. Most literals come in
//! one-hot groups from the public schema (the intervals or categories of one
//! column, with its `is other` / `is missing` literals:
//! [`crate::data::Encoder::one_hot_groups`]): every row sets exactly one
//! literal of the group, so the group's set-row lists, unpadded, hold exactly
//! `n` rows together whatever the data. Such literals list their set rows,
//! each list padded with the sentinel to a multiple of 4, and the group's
//! last list takes sentinels up to the group width `4 ceil((n + 3 k) / 4)`
//! for `k` literals. The callers sum a group in *one* loop over its 4-entry
//! blocks ([`GroupLists`] says which literal each block belongs to), so the
//! group costs the same loads, additions and loop iterations for any data
//! with the same n, where `k` padded lists would cost `k floor(n / 2)`.
//! (Loops per literal would not do: their exits fall at data-dependent
//! points and the compiler's unrolling makes the instruction count depend
//! on each length modulo the unroll factor; callgrind showed it.)
//! [`RowLists::new`] checks on the data that every group is one-hot (a
//! popcount and an OR of its columns, constant work) and refuses a group
//! that is not: it would be a bug in the encoder, and quietly padding it
//! instead would make the work depend on a bug's interaction with the data.

use std::ops::Range;

use crate::data::BitMatrix;

/// Row lists for every literal of a bit matrix: padded lists of
/// `floor(n / 2)` entries, or one-hot group lists (see the module docs).
pub(crate) struct RowLists {
    /// All lists, back to back.
    rows: Vec<u32>,
    /// Literal j's list is `rows[start..start + len]` for `spans[j] = (start, len)`.
    spans: Vec<(usize, usize)>,
    /// Whether literal j's list holds the rows where it is NOT set.
    complement: Vec<bool>,
    /// The one-hot groups, in literal order.
    groups: Vec<GroupLists>,
}

/// One one-hot group's lists as one flat run of 4-entry blocks, so that a
/// caller can sum the whole group in one loop of a fixed trip count (loops
/// per literal would exit at data-dependent points, and the compiler's
/// unrolling turns those into data-dependent instruction counts).
pub(crate) struct GroupLists {
    /// The group's literals.
    pub(crate) literals: Range<usize>,
    /// `rows[start..start + width]` of the [`RowLists`].
    start: usize,
    width: usize,
    /// For each 4-entry block, its literal's offset in `literals`.
    pub(crate) owner: Vec<u32>,
}

/// Why the one-hot groups given to [`RowLists::new`] cannot be used.
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

impl RowLists {
    /// Lists for `features` (at most `u32::MAX` rows, so that the sentinel
    /// `n` fits in a `u32`: `lazybb::train` checks), with
    /// `groups` (literal ranges, disjoint) listed as one-hot groups; every
    /// other literal is padded to `floor(n / 2)`.
    pub(crate) fn new(
        features: &BitMatrix,
        groups: &[Range<usize>],
    ) -> Result<RowLists, GroupError> {
        let n = features.n_rows();
        let d = features.n_cols();
        let group_of = check_groups(features, groups)?;
        let width = n / 2;
        let sentinel = n as u32;
        let mut rows = Vec::new();
        let mut spans = Vec::with_capacity(d);
        let mut complement = Vec::with_capacity(d);
        // Building is constant work too: every row of every column is
        // written to the buffer and the length advances by its bit, so the
        // steps do not depend on how many rows a literal lists.
        let mut buffer = vec![0u32; n + 1];
        let mut group_lists_out = Vec::with_capacity(groups.len());
        let mut j = 0;
        while j < d {
            if let Some(g) = group_of[j] {
                let range = groups[g].clone();
                let start = rows.len();
                let first_span = spans.len();
                rows.extend(group_lists(features, range.clone(), &mut spans, start));
                complement.extend(range.clone().map(|_| false));
                // Block b's literal is the number of lists ending at or
                // before its first entry: every (block, list) pair is
                // visited, a fixed count (a loop per list would run a
                // data-dependent number of times).
                let ends: Vec<usize> = spans[first_span..]
                    .iter()
                    .map(|&(s, len)| s + len - start)
                    .collect();
                let owner: Vec<u32> = (0..(rows.len() - start) / 4)
                    .map(|b| ends.iter().map(|&e| u32::from(e <= 4 * b)).sum())
                    .collect();
                group_lists_out.push(GroupLists {
                    literals: range.clone(),
                    start,
                    width: rows.len() - start,
                    owner,
                });
                j = range.end;
                continue;
            }
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
            spans.push((rows.len(), width));
            // Positions len.. hold stale indices: the sentinel instead, with
            // the same arithmetic at every position whatever len is.
            rows.extend(buffer[..width].iter().enumerate().map(|(k, &row)| {
                let keep = u32::from(k < len);
                keep * row + (1 - keep) * sentinel
            }));
            complement.push(zeros_listed);
            j += 1;
        }
        Ok(RowLists {
            rows,
            spans,
            complement,
            groups: group_lists_out,
        })
    }

    /// The one-hot groups.
    pub(crate) fn groups(&self) -> &[GroupLists] {
        &self.groups
    }

    /// A group's entries (a multiple of 4; block b belongs to literal
    /// `group.literals.start + group.owner[b]`).
    pub(crate) fn group_rows(&self, group: &GroupLists) -> &[u32] {
        &self.rows[group.start..group.start + group.width]
    }

    /// Whether literal j is in a one-hot group.
    pub(crate) fn in_group(&self, j: usize) -> bool {
        self.groups.iter().any(|g| g.literals.contains(&j))
    }

    /// Number of literals.
    pub(crate) fn len(&self) -> usize {
        self.complement.len()
    }

    /// Total entries over all lists (the loads per pass).
    #[cfg(test)]
    pub(crate) fn total_entries(&self) -> usize {
        self.rows.len()
    }

    /// Literal j's list (padded with the sentinel `n`), and whether it lists
    /// the unset rows.
    pub(crate) fn get(&self, j: usize) -> (&[u32], bool) {
        let (start, len) = self.spans[j];
        (&self.rows[start..start + len], self.complement[j])
    }

    /// `c = 1.0` for a complemented list, `0.0` otherwise, so that the sum
    /// over the set rows is `c total + (1 - 2c) listed` for both kinds: the
    /// same operations whatever the literal's density (exact: it is
    /// `0 + listed` or `total - listed`).
    pub(crate) fn complement_factor(complement: bool) -> f64 {
        f64::from(u8::from(complement))
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

/// Entries of a one-hot group of `k` literals: `4 ceil((n + 3 k) / 4)`.
fn group_width(n: usize, k: usize) -> usize {
    (n + 3 * k).div_ceil(4) * 4
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

/// The lists of one checked one-hot group, back to back, `group_width`
/// entries; pushes each literal's span (offset by `start`).
fn group_lists(
    features: &BitMatrix,
    range: Range<usize>,
    spans: &mut Vec<(usize, usize)>,
    start: usize,
) -> Vec<u32> {
    let n = features.n_rows();
    let sentinel = n as u32;
    let width = group_width(n, range.len());
    // Four slots of slack for the padding writes after the last list.
    let mut buffer = vec![sentinel; width + 4];
    let mut pos = 0;
    let last = range.end - 1;
    for j in range {
        let column = features.column(j);
        let first = pos;
        // As for padded lists: one write per row, the position advances by
        // the bit. The stale write at the end is overwritten below.
        for i in 0..n {
            buffer[pos] = i as u32;
            pos += ((column[i / 64] >> (i % 64)) & 1) as usize;
        }
        // Sentinels up to the next multiple of 4: always four writes.
        buffer[pos..pos + 4].fill(sentinel);
        pos += (4 - (pos - first) % 4) % 4;
        let len = if j == last {
            width - first
        } else {
            pos - first
        };
        spans.push((start + first, len));
    }
    // Checked one-hot: n rows plus at most 3 sentinels per literal.
    debug_assert!(pos <= width);
    buffer.truncate(width);
    buffer
}

#[cfg(test)]
pub(crate) mod tests {
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
            let lists = RowLists::new(&features, &[]).unwrap();
            assert_eq!(lists.total_entries(), 4 * (n / 2));
            for j in 0..4 {
                assert_eq!(lists.get(j).0.len(), n / 2, "n {n} literal {j}");
                assert_lists_the_rows_then_sentinels(&lists, &features, j);
            }
        }
    }

    /// Literal j's list holds exactly the rows where it is set (unset, if
    /// complemented), in order, then only the sentinel `n`.
    fn assert_lists_the_rows_then_sentinels(lists: &RowLists, features: &BitMatrix, j: usize) {
        let n = features.n_rows();
        let (list, complement) = lists.get(j);
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

    /// Group lists hold exactly the set rows, each a multiple of 4 long, and
    /// the group takes `group_width` entries whatever the data; the other
    /// literals keep `floor(n / 2)`.
    #[test]
    fn group_lists_hold_the_set_rows_in_constant_width() {
        let groups = [0..3, 4..9, 9..10];
        for n in [1usize, 5, 64, 130, 1001] {
            for seed in 0..3 {
                let features = one_hot_matrix(n, 11, &groups, seed);
                let lists = RowLists::new(&features, &groups).unwrap();
                let want_total =
                    group_width(n, 3) + group_width(n, 5) + group_width(n, 1) + 2 * (n / 2);
                assert_eq!(lists.total_entries(), want_total, "n {n}");
                for j in 0..11 {
                    assert_lists_the_rows_then_sentinels(&lists, &features, j);
                    let (list, complement) = lists.get(j);
                    if groups.iter().any(|g| g.contains(&j)) {
                        assert!(!complement);
                        assert_eq!(list.len() % 4, 0, "n {n} literal {j}");
                    } else {
                        assert_eq!(list.len(), n / 2);
                    }
                }
                for g in &groups {
                    let group: usize = g.clone().map(|j| lists.get(j).0.len()).sum();
                    assert_eq!(group, group_width(n, g.len()));
                }
            }
        }
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
        assert!(RowLists::new(&features, &[0..2]).is_err()); // row 2 sets both
        assert!(RowLists::new(&features, &[2..4]).is_ok()); // one each
        assert!(RowLists::new(&features, &[0..1, 2..4]).is_err());
        assert!(matches!(
            RowLists::new(&features, &[2..3]).err(),
            Some(GroupError::NotOneHot(_)) // row 2 sets none
        ));
        // Right count, wrong rows: popcounts add to n but one row sets two.
        let mut builder = BitMatrixBuilder::new(2);
        for active in [&[0u32, 1][..], &[], &[0], &[1]] {
            builder.push_row(active);
        }
        let features2 = builder.finish();
        assert!(matches!(
            RowLists::new(&features2, &[0..2]).err(),
            Some(GroupError::NotOneHot(_))
        ));
        for bad in [vec![1..1], vec![3..5], vec![0..2, 1..3]] {
            assert!(matches!(
                RowLists::new(&features, &bad).err(),
                Some(GroupError::Invalid(_))
            ));
        }
    }
}
