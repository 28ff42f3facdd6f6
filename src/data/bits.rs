//! Packed bit storage: [`BitVec`] and the column-major [`BitMatrix`].
//!
//! SPEC §3 stores one bit per row per literal, column-major, so that one boosting round
//! is a few passes over packed words: the learner computes a literal's weighted error
//! from one contiguous slice of `u64`s. Layout: bit `i` is bit `i % 64` of word `i / 64`;
//! the unused high bits of the last word are always zero, so `count_ones` and word-wise
//! AND/OR/NOT-then-mask work without special cases.

/// Words needed for `n` bits.
pub(crate) fn words_for(n: usize) -> usize {
    n.div_ceil(64)
}

/// A packed, growable vector of bits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BitVec {
    /// The bits, 64 per word; high bits past `len` are zero.
    words: Vec<u64>,
    /// Number of bits.
    len: usize,
}

impl BitVec {
    /// An empty vector.
    pub fn new() -> BitVec {
        BitVec::default()
    }

    /// `len` zero bits.
    pub fn zeros(len: usize) -> BitVec {
        BitVec {
            words: vec![0; words_for(len)],
            len,
        }
    }

    /// The bits of a slice of bools.
    pub fn from_bools(bits: &[bool]) -> BitVec {
        bits.iter().copied().collect()
    }

    /// Build from words; `None` if `words` has the wrong length for `len` or a bit past
    /// `len` is set (the invariant every other method relies on).
    pub fn from_words(words: Vec<u64>, len: usize) -> Option<BitVec> {
        if words.len() != words_for(len) {
            return None;
        }
        let v = BitVec { words, len };
        (v.words.last().copied().unwrap_or(0) & !v.last_word_mask() == 0).then_some(v)
    }

    /// Append one bit.
    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if bit {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }

    /// Bit i. Panics if `i >= len`.
    pub fn get(&self, i: usize) -> bool {
        assert!(i < self.len, "bit {i} out of range (len {})", self.len);
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Set bit i. Panics if `i >= len`.
    pub fn set(&mut self, i: usize, bit: bool) {
        assert!(i < self.len, "bit {i} out of range (len {})", self.len);
        let mask = 1u64 << (i % 64);
        if bit {
            self.words[i / 64] |= mask;
        } else {
            self.words[i / 64] &= !mask;
        }
    }

    /// The words (`ceil(len / 64)` of them).
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no bits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Indices of the set bits, ascending.
    pub fn ones(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(k, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros() as usize;
                    w &= w - 1;
                    k * 64 + b
                })
            })
        })
    }

    /// Mask of the bits of the last word that are in use (all ones if it is full).
    pub fn last_word_mask(&self) -> u64 {
        last_word_mask(self.len)
    }
}

impl FromIterator<bool> for BitVec {
    fn from_iter<I: IntoIterator<Item = bool>>(iter: I) -> BitVec {
        let mut v = BitVec::new();
        for b in iter {
            v.push(b);
        }
        v
    }
}

/// Mask of the used bits in the last word of an `n`-bit vector.
fn last_word_mask(n: usize) -> u64 {
    match n % 64 {
        0 => u64::MAX,
        r => (1u64 << r) - 1,
    }
}

/// An n x d matrix of bits stored column-major: column `j` is a contiguous slice
/// of `w = ceil(n / 64)` words, laid out like a [`BitVec`].
///
/// Each column is its own allocation rather than a slice of one: a streaming
/// reader grows the columns as rows arrive and hands them over as they are,
/// where one contiguous block would need a final copy of the whole matrix
/// (twice its size at that moment), and a consumer that serialises the
/// matrix can free it column by column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BitMatrix {
    n_rows: usize,
    n_cols: usize,
    /// `ceil(n_rows / 64)`, cached because every column access needs it.
    words_per_column: usize,
    /// One vector of `words_per_column` words per column.
    columns: Vec<Vec<u64>>,
}

impl BitMatrix {
    /// An all-zero matrix.
    pub fn zeros(n_rows: usize, n_cols: usize) -> BitMatrix {
        let w = words_for(n_rows);
        BitMatrix {
            n_rows,
            n_cols,
            words_per_column: w,
            columns: vec![vec![0; w]; n_cols],
        }
    }

    /// A matrix whose columns are the given vectors. Panics if a column's length is
    /// not `n_rows`.
    pub fn from_columns(n_rows: usize, columns: &[BitVec]) -> BitMatrix {
        let mut m = BitMatrix::zeros(n_rows, columns.len());
        for (j, c) in columns.iter().enumerate() {
            assert_eq!(c.len(), n_rows, "column {j} has the wrong length");
            m.columns[j].copy_from_slice(c.words());
        }
        m
    }

    /// A matrix that takes ownership of its column words (no copy); `None`
    /// if a column does not have `ceil(n_rows / 64)` words or sets a bit
    /// past `n_rows`.
    pub fn from_column_words(n_rows: usize, columns: Vec<Vec<u64>>) -> Option<BitMatrix> {
        let w = words_for(n_rows);
        let past_end = !last_word_mask(n_rows);
        let valid = columns
            .iter()
            .all(|c| c.len() == w && c.last().is_none_or(|last| last & past_end == 0));
        valid.then_some(BitMatrix {
            n_rows,
            n_cols: columns.len(),
            words_per_column: w,
            columns,
        })
    }

    /// Rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Columns (literals).
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Words per column, `ceil(n_rows / 64)`.
    pub fn words_per_column(&self) -> usize {
        self.words_per_column
    }

    /// Words of column j. Panics if `j >= n_cols`.
    pub fn column(&self, j: usize) -> &[u64] {
        assert!(j < self.n_cols, "column {j} out of range ({})", self.n_cols);
        &self.columns[j]
    }

    /// Add `weight` to `out[r]` for every row `r < out.len()` whose bit is
    /// set in column `j`, with the same work for every row: each bit of
    /// each word is visited and contributes `weight` times 0 or 1, no
    /// branch and no skipping of clear bits. A prediction pass over private
    /// rows (a DP evaluation) then takes a time that depends on the sizes
    /// only, as training does (issue 26; docs/privacy.md, "Running time").
    pub fn add_where_set<T>(&self, j: usize, weight: T, out: &mut [T])
    where
        T: Copy + std::ops::AddAssign + std::ops::Mul<Output = T> + From<u8>,
    {
        self.add_where_set_from(j, weight, 0, out);
    }

    /// [`BitMatrix::add_where_set`] for the rows from `64 first_word` on:
    /// `out[i]` is row `64 first_word + i` (a block of rows, so that
    /// callers can split the rows over threads).
    pub fn add_where_set_from<T>(&self, j: usize, weight: T, first_word: usize, out: &mut [T])
    where
        T: Copy + std::ops::AddAssign + std::ops::Mul<Output = T> + From<u8>,
    {
        let words = self.column(j).get(first_word..).unwrap_or(&[]);
        for (chunk, &word) in out.chunks_mut(64).zip(words) {
            for (b, o) in chunk.iter_mut().enumerate() {
                *o += weight * T::from(((word >> b) & 1) as u8);
            }
        }
    }

    /// Whether row `r` has any of the bits `columns` set, reading every one
    /// of them (no short circuit: the work does not depend on the row).
    pub fn any_set(&self, r: usize, columns: &[u32]) -> bool {
        columns
            .iter()
            .fold(false, |any, &j| any | self.get(r, j as usize))
    }

    /// Column j as a [`BitVec`] (a copy).
    pub fn column_bits(&self, j: usize) -> BitVec {
        BitVec {
            words: self.column(j).to_vec(),
            len: self.n_rows,
        }
    }

    /// Bit (row, col). Panics if out of range.
    pub fn get(&self, row: usize, col: usize) -> bool {
        assert!(
            row < self.n_rows,
            "row {row} out of range ({})",
            self.n_rows
        );
        self.column(col)[row / 64] >> (row % 64) & 1 == 1
    }

    /// Set bit (row, col). Panics if out of range.
    pub fn set(&mut self, row: usize, col: usize, bit: bool) {
        assert!(
            row < self.n_rows && col < self.n_cols,
            "({row}, {col}) out of range"
        );
        let word = &mut self.columns[col][row / 64];
        let mask = 1u64 << (row % 64);
        if bit {
            *word |= mask;
        } else {
            *word &= !mask;
        }
    }

    /// The columns that are set in `row`, ascending (the row's active literals). This
    /// walks every column, so it is for single rows, not for bulk prediction.
    pub fn row_active(&self, row: usize) -> Vec<u32> {
        (0..self.n_cols)
            .filter(|&j| self.get(row, j))
            .map(|j| j as u32)
            .collect()
    }

    /// The rows at the given indices, in that order (indices may repeat).
    pub fn gather_rows(&self, rows: &[usize]) -> BitMatrix {
        let mut out = BitMatrix::zeros(rows.len(), self.n_cols);
        for j in 0..self.n_cols {
            let src = self.column(j);
            let dst = &mut out.columns[j];
            for (r, &i) in rows.iter().enumerate() {
                assert!(i < self.n_rows, "row {i} out of range ({})", self.n_rows);
                dst[r / 64] |= (src[i / 64] >> (i % 64) & 1) << (r % 64);
            }
        }
        out
    }
}

/// Builds a [`BitMatrix`] one row at a time, for streaming readers that do not know
/// n in advance.
///
/// Rows are collected 64 at a time in one word per column and flushed to per-column
/// word vectors, which `finish` hands to the matrix as its columns: no copy, so the
/// memory is the matrix's (plus the vectors' spare capacity, which stays virtual
/// for large columns that the allocator maps directly).
#[derive(Debug, Clone)]
pub struct BitMatrixBuilder {
    n_cols: usize,
    n_rows: usize,
    /// The current block of up to 64 rows: one word per column.
    block: Vec<u64>,
    /// Flushed blocks, per column.
    columns: Vec<Vec<u64>>,
}

impl BitMatrixBuilder {
    /// A builder for a matrix with `n_cols` columns.
    pub fn new(n_cols: usize) -> BitMatrixBuilder {
        BitMatrixBuilder {
            n_cols,
            n_rows: 0,
            block: vec![0; n_cols],
            columns: vec![Vec::new(); n_cols],
        }
    }

    /// Rows pushed so far.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Append a row given by its set columns (any order; each must be `< n_cols`).
    pub fn push_row(&mut self, active: &[u32]) {
        let bit = 1u64 << (self.n_rows % 64);
        for &j in active {
            self.block[j as usize] |= bit;
        }
        self.n_rows += 1;
        if self.n_rows.is_multiple_of(64) {
            self.flush();
        }
    }

    /// Append `n_rows` rows given column-major, like a [`BitMatrix`]'s words:
    /// column `j` is `block[j * w..(j + 1) * w]` with `w = ceil(n_rows / 64)`,
    /// and the bits past `n_rows` in each column's last word are zero.
    /// The same as pushing the rows one by one, but it shifts words instead
    /// of setting bits: the parallel CSV reader encodes chunks of rows on
    /// several threads and appends them here in order, on one thread, so
    /// this step must cost per word, not per set bit.
    pub(crate) fn append_block(&mut self, block: &[u64], n_rows: usize) {
        let w = words_for(n_rows);
        assert_eq!(block.len(), w * self.n_cols, "block has the wrong length");
        if n_rows == 0 {
            return;
        }
        // Bits already waiting in the partial word of each column (the
        // builder flushes at every multiple of 64, so the word is partial).
        let shift = self.n_rows % 64;
        let last_bits = n_rows - 64 * (w - 1);
        for (j, src) in block.chunks_exact(w).enumerate() {
            let column = &mut self.columns[j];
            column.reserve(w);
            let mut current = self.block[j];
            let mut filled = shift;
            for (i, &word) in src.iter().enumerate() {
                let bits = if i + 1 == w { last_bits } else { 64 };
                current |= word << filled;
                if filled + bits >= 64 {
                    column.push(current);
                    // The bits of `word` that did not fit (none when filled
                    // is 0: a shift by 64 would be an overflow).
                    current = if filled == 0 {
                        0
                    } else {
                        word >> (64 - filled)
                    };
                    filled = filled + bits - 64;
                } else {
                    filled += bits;
                }
            }
            self.block[j] = current;
        }
        self.n_rows += n_rows;
    }

    fn flush(&mut self) {
        for (col, word) in self.columns.iter_mut().zip(self.block.iter_mut()) {
            col.push(std::mem::take(word));
        }
    }

    /// The finished matrix: the builder's columns, handed over without a
    /// copy.
    pub fn finish(mut self) -> BitMatrix {
        if !self.n_rows.is_multiple_of(64) {
            self.flush();
        }
        let w = words_for(self.n_rows);
        debug_assert!(self.columns.iter().all(|c| c.len() == w));
        BitMatrix {
            n_rows: self.n_rows,
            n_cols: self.n_cols,
            words_per_column: w,
            columns: self.columns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bitvec_basics() {
        let mut v = BitVec::new();
        for i in 0..130 {
            v.push(i % 3 == 0);
        }
        assert_eq!(v.len(), 130);
        assert_eq!(v.words().len(), 3);
        assert_eq!(v.count_ones(), 44);
        assert!(v.get(0) && !v.get(1) && v.get(129));
        v.set(129, false);
        assert!(!v.get(129));
        assert_eq!(v.words()[2] & !v.last_word_mask(), 0);
        assert_eq!(v.ones().take(3).collect::<Vec<_>>(), vec![0, 3, 6]);
        assert_eq!(BitVec::from_words(vec![1 << 5], 5), None);
        assert_eq!(BitVec::from_words(vec![1 << 4], 5).unwrap().count_ones(), 1);
        assert_eq!(BitVec::from_words(vec![], 5), None);
        assert!(BitVec::zeros(0).is_empty());
    }

    #[test]
    fn add_where_set_adds_the_weight_to_the_set_rows_only() {
        // 70 rows, column 0 set at rows 0, 63, 64 and 69 (both words, the
        // partial last one included), column 1 at row 5.
        let mut b = BitMatrixBuilder::new(2);
        for r in 0..70u32 {
            let mut active = Vec::new();
            if [0, 63, 64, 69].contains(&r) {
                active.push(0);
            }
            if r == 5 {
                active.push(1);
            }
            b.push_row(&active);
        }
        let m = b.finish();
        let mut out = vec![1.0; 70];
        m.add_where_set(0, 2.5, &mut out);
        m.add_where_set(1, -4.0, &mut out);
        for (r, v) in out.iter().enumerate() {
            let expected = match r {
                0 | 63 | 64 | 69 => 3.5,
                5 => -3.0,
                _ => 1.0,
            };
            assert_eq!(*v, expected, "row {r}");
        }
        // A shorter output takes the first rows only.
        let mut head = vec![0.0; 64];
        m.add_where_set(0, 1.0, &mut head);
        assert_eq!(head.iter().sum::<f64>(), 2.0);
        // any_set reads every column named, the answer is the OR.
        assert!(m.any_set(5, &[0, 1]) && m.any_set(64, &[1, 0]));
        assert!(!m.any_set(6, &[0, 1]) && !m.any_set(0, &[]));
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn get_past_the_end_panics() {
        BitVec::zeros(64).get(64);
    }

    fn rows_strategy() -> impl Strategy<Value = (usize, Vec<Vec<u32>>)> {
        (1usize..12).prop_flat_map(|d| {
            let row = proptest::collection::btree_set(0..d as u32, 0..=d)
                .prop_map(|s| s.into_iter().collect::<Vec<u32>>());
            (Just(d), proptest::collection::vec(row, 0..300))
        })
    }

    proptest! {
        /// Appending blocks (as the parallel reader does) gives the matrix
        /// that pushing the same rows one at a time gives, whatever the
        /// split of the rows into blocks and their 64-bit alignment.
        #[test]
        fn appended_blocks_equal_pushed_rows((d, rows) in rows_strategy(), cuts in proptest::collection::vec(0usize..300, 0..8)) {
            let mut pushed = BitMatrixBuilder::new(d);
            for r in &rows {
                pushed.push_row(r);
            }
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(rows.len())).collect();
            cuts.push(0);
            cuts.push(rows.len());
            cuts.sort_unstable();
            let mut appended = BitMatrixBuilder::new(d);
            for part in cuts.windows(2) {
                let part = &rows[part[0]..part[1]];
                let mut one = BitMatrixBuilder::new(d);
                for r in part {
                    one.push_row(r);
                }
                let block = one.finish();
                appended.append_block(&block.columns.concat(), part.len());
            }
            prop_assert_eq!(appended.n_rows(), rows.len());
            prop_assert_eq!(appended.finish(), pushed.finish());
        }
    }

    proptest! {
        #[test]
        fn matrix_round_trips((d, rows) in rows_strategy(), picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..100)) {
            let mut b = BitMatrixBuilder::new(d);
            for r in &rows {
                b.push_row(r);
            }
            let m = b.finish();
            prop_assert_eq!(m.n_rows(), rows.len());
            prop_assert_eq!(m.n_cols(), d);
            prop_assert_eq!(m.words_per_column(), rows.len().div_ceil(64));
            for (i, r) in rows.iter().enumerate() {
                prop_assert_eq!(&m.row_active(i), r);
            }
            for j in 0..d {
                let col = m.column_bits(j);
                let expect = rows.iter().filter(|r| r.contains(&(j as u32))).count();
                prop_assert_eq!(col.count_ones(), expect);
                // Unused high bits stay zero.
                if let Some(&last) = m.column(j).last() {
                    prop_assert_eq!(last & !col.last_word_mask(), 0);
                }
            }
            if !rows.is_empty() {
                let idx: Vec<usize> = picks.iter().map(|p| p.index(rows.len())).collect();
                let s = m.gather_rows(&idx);
                prop_assert_eq!(s.n_rows(), idx.len());
                for (k, &i) in idx.iter().enumerate() {
                    prop_assert_eq!(&s.row_active(k), &rows[i]);
                }
                let cols: Vec<BitVec> = (0..d).map(|j| m.column_bits(j)).collect();
                prop_assert_eq!(BitMatrix::from_columns(rows.len(), &cols), m);
            }
        }
    }
}
