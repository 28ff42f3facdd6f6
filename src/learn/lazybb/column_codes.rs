//! Per-row codes for DP-1R and TopDown: each column's literals as one byte per row, and
//! per-literal weighted sums by one streaming pass over the rows.
//!
//! DP-1R needs, each round, `sum_{i : x_ij = 1} w_i` for every literal j,
//! where `w_i = -y_i p(i)` (TopDown needs the same sums, with weights
//! restricted to one leaf and one class). Per-literal lists of row indices
//! (the layout before this one) gather `w` by row index, which misses the
//! cache once `w` no longer fits in it (issue 13
//! measured 0.35 ns per row x literal x round at 10 M rows, four times
//! Adult's). Here a *column* is a set of literals of which every row sets at
//! most one: a one-hot group of the public schema ([`crate::data::Encoder::one_hot_groups`],
//! cut into pieces of at most 255 literals) or a single literal. A column's
//! code is `0` for "none of them" and `m + 1` for its literal `m`, in
//! `ceil(log2(width + 1))` bits, and columns are packed into bytes by those
//! bits ([`pack`]: two 10-interval columns per byte). A round reads the
//! codes and the rows' weight classes sequentially and adds each row's
//! weight into one bin of each byte's histogram (16, 64 or 256 bins,
//! `LANES` copies each); a literal's sum is the sum of the bins whose field
//! holds its code. Memory is streamed, never gathered: one byte per row and
//! packed byte, and 4 bytes of weight class per row.
//!
//! # Constant work
//!
//! Every row adds its weight into exactly one bin of every byte: per
//! round `n x bytes` additions, loads and stores, and loop trip counts
//! that depend on n and the public schema only. The codes are built with
//! the same steps for any data (every bit of every literal is read and
//! multiplied in). What is data-dependent is which bin each addition
//! stores to (an address in a 16 KiB table, no branch), and, through the
//! store-to-load forwarding of repeated bins, the latency of the adds:
//! `LANES = 8` independent copies keep eight add chains in flight so that
//! a column whose rows all hit one bin is not latency-bound.
//! `docs/privacy.md` ("Timing") has the measurements.
//!
//! # Order of summation, threads
//!
//! Rows are cut into super-blocks of [`SUPER_BLOCK`] rows, a function of n
//! only. Each super-block's histograms are summed on its own (8 lanes, each
//! a chain over its rows, then the lanes pairwise), and the super-blocks'
//! sums are added in row order. Super-blocks run in parallel on the current
//! rayon pool, but the arithmetic is the same for any number of threads, so
//! the result is bit-for-bit the same whatever the pool size. Each literal's
//! sum is a binary summation tree over its rows' weights (plus exact zero
//! additions), so the float-error bound `(m - 1) u sum |x|` used by
//! `privacy::calibration::one_rule_float_margin` holds as before (Higham
//! 2002, §4.2: the bound holds for any order of summation).

use std::ops::Range;

use rayon::prelude::*;

use super::groups::{GroupError, check_groups};
use crate::data::BitMatrix;

/// Independent histogram copies per column (see the module docs).
const LANES: usize = 8;
/// Bins per histogram copy: every `u8` code.
const BINS: usize = 256;
/// Rows whose weights are looked up at once (a 16 KiB buffer, kept in L1
/// while every column's codes for these rows are added in).
const BLOCK: usize = 2048;
/// Rows per unit of parallel work, whose per-literal sums are added in row
/// order: a function of nothing but this constant, so the sums do not
/// depend on the number of threads.
pub(crate) const SUPER_BLOCK: usize = 64 * BLOCK;
/// `SPREAD[b]` has byte k equal to bit k of `b` (eight rows' bits, one
/// per byte).
const SPREAD: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            table[b] |= (((b >> k) & 1) as u64) << (8 * k);
            k += 1;
        }
        b += 1;
    }
    table
};
/// Literals per column at most: codes `1..=255`, `0` for none.
const MAX_WIDTH: usize = BINS - 1;

/// The rows' signed weights `w_i = -y_i p(i)`, given per weight class: row
/// i's weight is `of_class[class[i]]` (LazyBB's rows share a weight per
/// cumulative margin and label).
#[derive(Clone, Copy)]
pub(crate) struct ClassWeights<'a> {
    /// Each row's class (an index into `of_class`).
    pub(crate) class: &'a [i32],
    /// The weight of each class.
    pub(crate) of_class: &'a [f64],
}

/// Columns packed into one byte of codes per row.
#[derive(Debug, PartialEq)]
struct Byte {
    parts: Vec<Part>,
    /// Histogram bins: 16, 64 or 256, the least power of two covering every
    /// code (a small table stays small in L1).
    bins: usize,
}

/// A column's place in its byte: code `m + 1` (in `bits` bits at `shift`)
/// is literal `literals.start + m`, 0 is none of them.
#[derive(Debug, PartialEq)]
struct Part {
    literals: Range<usize>,
    shift: u32,
    bits: u32,
}

/// Pack columns into bytes: each takes the bits its codes need
/// (`ceil(log2(width + 1))`: 4 for 10 intervals, 1 for a single literal),
/// placed widest first into the first byte with room (first-fit
/// decreasing; the schema alone decides). Fewer bytes, fewer additions per
/// row: two 10-interval columns share one; Adult's 14 columns take 7.
fn pack(columns: Vec<Range<usize>>) -> Vec<Byte> {
    let bits_of =
        |literals: &Range<usize>| (literals.len() + 1).next_power_of_two().trailing_zeros();
    let mut columns = columns;
    columns.sort_by_key(|c| std::cmp::Reverse(bits_of(c))); // stable
    let mut bytes: Vec<(Byte, u32)> = Vec::new();
    for literals in columns {
        let bits = bits_of(&literals);
        debug_assert!(bits <= 8);
        let at = match bytes.iter().position(|(_, used)| used + bits <= 8) {
            Some(at) => at,
            None => {
                let empty = Byte {
                    parts: Vec::new(),
                    bins: 0,
                };
                bytes.push((empty, 0));
                bytes.len() - 1
            }
        };
        let (byte, used) = &mut bytes[at];
        byte.parts.push(Part {
            literals,
            shift: *used,
            bits,
        });
        *used += bits;
        byte.bins = match *used {
            0..=4 => 16,
            5..=6 => 64,
            _ => BINS,
        };
    }
    bytes.into_iter().map(|(byte, _)| byte).collect()
}

/// One byte per row and packed columns (see the module docs).
pub(crate) struct ColumnCodes {
    n: usize,
    /// What each byte of a row's codes holds.
    bytes: Vec<Byte>,
    /// Block-major (see [`ColumnCodes::new`]), the last block padded.
    codes: Vec<u8>,
    d: usize,
}

impl ColumnCodes {
    /// Codes for `features`, with `groups` (literal ranges, disjoint, each
    /// one-hot in the data: [`super::groups::check_groups`]) as columns;
    /// every other literal is a column of its own.
    pub(crate) fn new(
        features: &BitMatrix,
        groups: &[Range<usize>],
    ) -> Result<ColumnCodes, GroupError> {
        let n = features.n_rows();
        let d = features.n_cols();
        let group_of = check_groups(features, groups)?;
        let mut columns = Vec::new();
        let mut j = 0;
        while j < d {
            let end = match group_of[j] {
                Some(g) => groups[g].end.min(j + MAX_WIDTH),
                None => j + 1,
            };
            columns.push(j..end);
            j = end;
        }
        let bytes = pack(columns);
        // Block-major: block b's codes for byte k are
        // `codes[(b bytes + k) BLOCK..][..BLOCK]`, so that a round reads one
        // sequential stream (the prefetcher follows it; a column-major
        // layout interleaves a stream per column).
        let blocks = n.div_ceil(BLOCK);
        let mut codes = vec![0u8; blocks * bytes.len() * BLOCK];
        let words_per_block = BLOCK / 64;
        let build = |(b, block): (usize, &mut [u8])| {
            for (byte, out) in bytes.iter().zip(block.chunks_exact_mut(BLOCK)) {
                for part in &byte.parts {
                    for (m, literal) in part.literals.clone().enumerate() {
                        let code = ((m + 1) << part.shift) as u8;
                        let words = features.column(literal).iter().skip(b * words_per_block);
                        // Every row, every literal: `code` times the
                        // bit, added (at most one literal per column is
                        // set, and the columns' bits do not overlap, so
                        // no byte carries into the next). Eight rows at
                        // a time: each byte of `SPREAD[bits]` is one row's
                        // bit. Rows past n read no word.
                        for (chunk, &word) in out.chunks_mut(64).zip(words) {
                            for (k, c8) in chunk.chunks_exact_mut(8).enumerate() {
                                let bits = ((word >> (8 * k)) & 0xff) as usize;
                                let add = SPREAD[bits] * u64::from(code);
                                // Invariant: chunks_exact_mut(8) gives 8 bytes.
                                let c8: &mut [u8; 8] = c8.try_into().expect("8 bytes");
                                *c8 = (u64::from_le_bytes(*c8) + add).to_le_bytes();
                            }
                        }
                    }
                }
            }
        };
        let per_block = (bytes.len() * BLOCK).max(1);
        if n <= SUPER_BLOCK {
            // Small (n alone decides): no hand-off to the pool.
            codes.chunks_mut(per_block).enumerate().for_each(build);
        } else {
            codes.par_chunks_mut(per_block).enumerate().for_each(build);
        }
        Ok(ColumnCodes { n, bytes, codes, d })
    }

    /// Number of rows.
    pub(crate) fn n_rows(&self) -> usize {
        self.n
    }

    /// Number of literals.
    pub(crate) fn len(&self) -> usize {
        self.d
    }

    /// `sums[j] = sum_{i : x_ij = 1} w_i` for every literal j (`sums` is
    /// resized to d).
    pub(crate) fn literal_sums(&self, weights: ClassWeights<'_>, sums: &mut Vec<f64>) {
        let n = self.n;
        debug_assert_eq!(weights.class.len(), n);
        let starts: Vec<usize> = (0..n).step_by(SUPER_BLOCK).collect();
        // One vector of d sums per super-block, in row order whatever the
        // pool's size or scheduling.
        let sums_from =
            |start: usize| self.super_block_sums(start..(start + SUPER_BLOCK).min(n), weights);
        // One super-block (n alone decides): no hand-off to the pool, whose
        // synchronisation would add scheduling noise to the work.
        let partials: Vec<Vec<f64>> = if starts.len() <= 1 {
            starts.iter().map(|&start| sums_from(start)).collect()
        } else {
            starts.par_iter().map(|&start| sums_from(start)).collect()
        };
        sums.clear();
        sums.resize(self.d, 0.0);
        for partial in &partials {
            for (s, p) in sums.iter_mut().zip(partial) {
                *s += p;
            }
        }
    }

    /// The per-literal sums over `rows` (at most [`SUPER_BLOCK`] rows).
    fn super_block_sums(&self, rows: Range<usize>, weights: ClassWeights<'_>) -> Vec<f64> {
        // Each byte's LANES copies of its bins, back to back.
        let offsets: Vec<usize> = self
            .bytes
            .iter()
            .scan(0, |at, byte| {
                let start = *at;
                *at += LANES * byte.bins;
                Some(start)
            })
            .collect();
        let total: usize = self.bytes.iter().map(|b| b.bins).sum();
        let mut hist = vec![0.0f64; LANES * total];
        let mut w = [0.0f64; BLOCK];
        for block_start in rows.clone().step_by(BLOCK) {
            let block = block_start..(block_start + BLOCK).min(rows.end);
            let w = &mut w[..block.len()];
            for (out, &c) in w.iter_mut().zip(&weights.class[block.clone()]) {
                *out = weights.of_class[c as usize];
            }
            let block_codes = &self.codes[block_start * self.bytes.len()..];
            for (k, (byte, &offset)) in self.bytes.iter().zip(&offsets).enumerate() {
                let codes = &block_codes[k * BLOCK..k * BLOCK + block.len()];
                let h = &mut hist[offset..offset + LANES * byte.bins];
                match byte.bins {
                    16 => add_block::<16>(h, codes, w),
                    64 => add_block::<64>(h, codes, w),
                    _ => add_block::<BINS>(h, codes, w),
                }
            }
        }
        // Literal sums: each bin's lanes pairwise, then added, in bin
        // order, to the literal each part's field of the bin names.
        let mut sums = vec![0.0; self.d];
        for (byte, &offset) in self.bytes.iter().zip(&offsets) {
            for bin in 0..byte.bins {
                let lane = |l: usize| hist[offset + l * byte.bins + bin];
                let v = ((lane(0) + lane(1)) + (lane(2) + lane(3)))
                    + ((lane(4) + lane(5)) + (lane(6) + lane(7)));
                for part in &byte.parts {
                    let code = (bin >> part.shift) & ((1 << part.bits) - 1);
                    if (1..=part.literals.len()).contains(&code) {
                        sums[part.literals.start + code - 1] += v;
                    }
                }
            }
        }
        sums
    }
}

/// Add each row's weight into its code's bin, row k into copy `k % LANES`
/// (one pass; the trip count depends on the block's length only). `hist`
/// holds `LANES` copies of `B` bins (copy-major: a bin's copies in one
/// cache line measured slower at 3 M rows, 0.9-2.1 s against 1.6-2.2 s);
/// every code is below `B` (masking it
/// changes nothing and lets the compiler drop the bounds checks).
#[inline]
fn add_block<const B: usize>(hist: &mut [f64], codes: &[u8], w: &[f64]) {
    assert_eq!(hist.len(), LANES * B);
    let mut code_chunks = codes.chunks_exact(LANES);
    let mut w_chunks = w.chunks_exact(LANES);
    for (c, x) in (&mut code_chunks).zip(&mut w_chunks) {
        for l in 0..LANES {
            hist[l * B + (c[l] as usize & (B - 1))] += x[l];
        }
    }
    for (l, (&c, &x)) in code_chunks
        .remainder()
        .iter()
        .zip(w_chunks.remainder())
        .enumerate()
    {
        hist[l * B + (c as usize & (B - 1))] += x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::lazybb::groups::tests::one_hot_matrix;

    /// Each literal's sum equals the plain sum over its set rows (to float
    /// reassociation), for groups, single literals, a group wider than 255
    /// literals, and n not a multiple of the lanes, blocks or super-blocks.
    #[test]
    #[allow(clippy::single_range_in_vec_init)] // a list of one group
    fn sums_match_the_set_rows() {
        let groups = [0..6, 6..7, 8..20, 21..30];
        for (n, seed) in [(1usize, 1u64), (97, 2), (4096, 3), (SUPER_BLOCK + 1001, 4)] {
            let features = one_hot_matrix(n, 31, &groups, seed);
            let of_class: Vec<f64> = (0..7).map(|k| (k as f64 - 3.0) / (7 * n) as f64).collect();
            let class: Vec<i32> = (0..n).map(|i| ((i * 37) % 7) as i32).collect();
            let codes = ColumnCodes::new(&features, &groups).unwrap();
            let mut sums = Vec::new();
            codes.literal_sums(
                ClassWeights {
                    class: &class,
                    of_class: &of_class,
                },
                &mut sums,
            );
            for (j, &got) in sums.iter().enumerate() {
                let want: f64 = (0..n)
                    .filter(|&i| features.get(i, j))
                    .map(|i| of_class[class[i] as usize])
                    .sum();
                assert!(
                    (got - want).abs() <= 1e-14,
                    "n {n} literal {j}: {got} vs {want}"
                );
            }
        }
        // A one-hot group of 300 literals: two columns (255 + 45).
        let n = 1000;
        let groups = [0..300];
        let features = one_hot_matrix(n, 300, &groups, 5);
        let codes = ColumnCodes::new(&features, &groups).unwrap();
        let parts: Vec<_> = codes
            .bytes
            .iter()
            .map(|b| b.parts[0].literals.clone())
            .collect();
        assert_eq!(parts, [0..255, 255..300]);
        let class: Vec<i32> = (0..n as i32).collect();
        let of_class: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
        let mut sums = Vec::new();
        let weights = ClassWeights {
            class: &class,
            of_class: &of_class,
        };
        codes.literal_sums(weights, &mut sums);
        for (j, &got) in sums.iter().enumerate() {
            let want: f64 = (0..n)
                .filter(|&i| features.get(i, j))
                .map(|i| 1.0 + i as f64)
                .sum();
            assert_eq!(got, want, "literal {j}"); // integers: exact
        }
    }

    /// Columns share a byte while their codes' bits fit: 10 intervals take
    /// 4 bits, a single literal 1, 255 literals 8.
    #[test]
    fn columns_are_packed_by_their_bits() {
        let part = |literals: Range<usize>, shift, bits| Part {
            literals,
            shift,
            bits,
        };
        let bytes = pack(vec![
            0..10,
            10..20,
            20..21,
            21..22,
            22..25,
            25..280,
            280..281,
        ]);
        assert_eq!(
            bytes,
            [
                Byte {
                    parts: vec![part(25..280, 0, 8)],
                    bins: 256
                },
                Byte {
                    parts: vec![part(0..10, 0, 4), part(10..20, 4, 4)],
                    bins: 256
                },
                Byte {
                    parts: vec![
                        part(22..25, 0, 2),
                        part(20..21, 2, 1),
                        part(21..22, 3, 1),
                        part(280..281, 4, 1)
                    ],
                    bins: 64
                },
            ]
        );
    }

    /// The sums are bit-for-bit the same on pools of 1 and 2 threads.
    #[test]
    fn sums_do_not_depend_on_the_thread_count() {
        let n = 3 * SUPER_BLOCK + 77;
        let groups = [0..5, 5..12];
        let features = one_hot_matrix(n, 14, &groups, 9);
        let codes = ColumnCodes::new(&features, &groups).unwrap();
        let class: Vec<i32> = (0..n).map(|i| ((i * 7919) % 13) as i32).collect();
        let of_class: Vec<f64> = (0..13).map(|k| 0.1 / (k as f64 + 0.3) / n as f64).collect();
        let weights = ClassWeights {
            class: &class,
            of_class: &of_class,
        };
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut sums = Vec::new();
            pool.install(|| codes.literal_sums(weights, &mut sums));
            sums
        };
        let one = run(1);
        let two = run(2);
        assert_eq!(
            one.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            two.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }

    /// A group that is not one-hot is refused ([`super::super::groups::check_groups`]).
    #[test]
    #[allow(clippy::single_range_in_vec_init)] // lists of one group
    fn groups_that_are_not_one_hot_are_refused() {
        let mut builder = crate::data::BitMatrixBuilder::new(3);
        for active in [&[0u32, 1][..], &[1], &[2]] {
            builder.push_row(active);
        }
        let features = builder.finish();
        assert!(matches!(
            ColumnCodes::new(&features, &[0..2]).err(),
            Some(GroupError::NotOneHot(_))
        ));
        assert!(ColumnCodes::new(&features, &[1..3]).is_ok());
    }
}
