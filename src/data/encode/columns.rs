//! Encoding a batch of rows a column at a time (the Open Inference
//! Protocol's tensors, one per column): each column's values go through its
//! one codec in a tight loop, and each row's literals land in a fixed-width
//! slot of [`LiteralRows`].
//!
//! The literals and the errors are those of encoding row by row
//! ([`Encoder::encode_value`], [`Encoder::encode_field`]): columns are
//! filled in feature order, so each row's literals come out ascending, as
//! [`Encoder::encode_row`] gives them; and the caller keeps the error of the
//! smallest row (the first column's on a tie), which is the one a row-major
//! pass meets first.

use super::{CodecKind, Encoder};
use crate::data::{Cell, DataError, NumericEncoding};

/// The literals of a run of rows, each in a slot wide enough for the most
/// literals any row can set ([`Encoder::max_row_literals`], public: from
/// the schema alone).
#[derive(Debug, Default)]
pub struct LiteralRows {
    width: usize,
    lens: Vec<u32>,
    lits: Vec<u32>,
}

impl LiteralRows {
    /// Empty slots for `n` rows of `encoder`'s schema (buffers reused).
    pub fn reset(&mut self, encoder: &Encoder, n: usize) {
        self.width = encoder.max_row_literals();
        self.lens.clear();
        self.lens.resize(n, 0);
        // Slots are written before they are read (`lens`), so stale values
        // may stay.
        self.lits.resize(n * self.width, 0);
    }

    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.lens.len()
    }

    /// Row `i`'s literals, ascending.
    pub fn row(&self, i: usize) -> &[u32] {
        let start = i * self.width;
        &self.lits[start..start + self.lens[i] as usize]
    }

    /// Append one literal to row `i` (within the slot, as [`Self::extend`]).
    fn push(&mut self, i: usize, lit: u32) {
        let len = self.lens[i];
        self.lits[i * self.width + len as usize] = lit;
        self.lens[i] = len + 1;
    }

    /// Append `lits` to row `i`. A column never sets more literals than its
    /// share of the width, so this stays within the slot.
    fn extend(&mut self, i: usize, lits: &[u32]) {
        let len = self.lens[i] as usize;
        let start = i * self.width + len;
        self.lits[start..start + lits.len()].copy_from_slice(lits);
        self.lens[i] = (len + lits.len()) as u32;
    }
}

/// The first row of a column that cannot be encoded (0-based within the
/// batch) and why (its message names the row, 1-based, and the column).
#[derive(Debug)]
pub struct ColumnError {
    /// The row, 0-based within the batch.
    pub row: usize,
    /// What is wrong with its value.
    pub error: DataError,
}

impl ColumnError {
    /// Of the error kept so far and the next column's, the one a row-major
    /// pass meets first: the smaller row; on a tie the one kept (columns are
    /// encoded in feature order).
    pub fn earliest(kept: Option<ColumnError>, next: ColumnError) -> ColumnError {
        match kept {
            Some(kept) if kept.row <= next.row => kept,
            _ => next,
        }
    }
}

impl Encoder {
    /// The most literals one encoded row can set: one per column (a value,
    /// `is other` or `is missing`), except numeric thresholds, which set up
    /// to one per cut point. From the schema alone.
    pub fn max_row_literals(&self) -> usize {
        self.codecs
            .iter()
            .map(|c| match &c.kind {
                CodecKind::Numeric {
                    cuts,
                    encoding: NumericEncoding::Thresholds,
                    ..
                } => cuts.len().max(1),
                _ => 1,
            })
            .sum()
    }

    /// Whether feature `f` reads a number as its value alone: a numeric
    /// column without missing tokens (else a number is matched as its JSON
    /// text, [`Encoder::encode_value`]).
    pub fn reads_numbers(&self, f: usize) -> bool {
        let codec = &self.codecs[f];
        matches!(codec.kind, CodecKind::Numeric { .. }) && codec.missing_tokens.is_empty()
    }

    /// Encode floats (a binary FP32 or FP64 tensor's values, each one row
    /// from `first_row` on, 0-based) of feature `f` into `rows`' slots from
    /// 0: the literals of [`Cell::from_f64`] for each.
    pub fn encode_floats(
        &self,
        f: usize,
        first_row: usize,
        xs: impl IntoIterator<Item = f64>,
        rows: &mut LiteralRows,
    ) -> Result<(), ColumnError> {
        let codec = &self.codecs[f];
        let mut scratch = Vec::new();
        let fast = self.reads_numbers(f);
        for (i, x) in xs.into_iter().enumerate() {
            put(rows, &mut scratch, first_row, i, |row, active| {
                if fast && x.is_finite() && codec.push_number(x, active) {
                    return Ok(());
                }
                self.encode_value(f, &Cell::from_f64(x), row, active)
            })?;
        }
        Ok(())
    }

    /// Encode raw text elements (a binary BYTES tensor's, valid UTF-8, not
    /// yet trimmed) of feature `f`, as [`Encoder::encode_floats`] does
    /// floats: the literals of [`Cell::Text`] for each.
    pub fn encode_texts<'t>(
        &self,
        f: usize,
        first_row: usize,
        texts: impl IntoIterator<Item = &'t [u8]>,
        rows: &mut LiteralRows,
    ) -> Result<(), ColumnError> {
        let codec = &self.codecs[f];
        let name = &codec.name;
        let mut scratch = Vec::new();
        for (i, raw) in texts.into_iter().enumerate() {
            // A categorical column's lookup (the one `encode_field` makes
            // first), without the dispatch and the copy per element.
            if let CodecKind::Categorical { index, .. } = &codec.kind
                && let Some(lit) = index.get(raw.trim_ascii())
            {
                rows.push(i, lit);
                continue;
            }
            put(rows, &mut scratch, first_row, i, |row, active| {
                self.encode_field(f, raw, row, name, active)
            })?;
        }
        Ok(())
    }

    /// Encode cells of feature `f`, as [`Encoder::encode_floats`] does
    /// floats.
    pub fn encode_cells<'c, 'a: 'c>(
        &self,
        f: usize,
        first_row: usize,
        cells: impl IntoIterator<Item = &'c Cell<'a>>,
        rows: &mut LiteralRows,
    ) -> Result<(), ColumnError> {
        let mut scratch = Vec::new();
        for (i, cell) in cells.into_iter().enumerate() {
            put(rows, &mut scratch, first_row, i, |row, active| {
                self.encode_value(f, cell, row, active)
            })?;
        }
        Ok(())
    }
}

/// Slot `i`'s literals from `encode` (given the row's 1-based number, as
/// messages name it) through `scratch`; an error is row `first_row + i`'s.
fn put(
    rows: &mut LiteralRows,
    scratch: &mut Vec<u32>,
    first_row: usize,
    i: usize,
    encode: impl FnOnce(usize, &mut Vec<u32>) -> Result<(), DataError>,
) -> Result<(), ColumnError> {
    scratch.clear();
    encode(first_row + i + 1, scratch).map_err(|error| ColumnError {
        row: first_row + i,
        error,
    })?;
    rows.extend(i, scratch);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Schema;

    fn encoder() -> Encoder {
        let schema = Schema::from_json(
            r#"{
              "label": {"column": "y", "positive": "1", "negative": "0"},
              "columns": [
                {"name": "age", "type": "numeric", "min": 0, "max": 100, "thresholds": [30, 60]},
                {"name": "hours", "type": "numeric", "min": 0, "max": 99, "thresholds": [20, 40, 60],
                 "encoding": "thresholds", "missing": ["?"]},
                {"name": "job", "type": "categorical", "categories": ["a", "b"], "missing": ["?"]},
                {"name": "owner", "type": "boolean"}
              ]
            }"#,
        )
        .unwrap();
        Encoder::new(&schema).unwrap()
    }

    fn row_major(e: &Encoder, cells: &[[Cell<'_>; 4]]) -> Vec<Result<Vec<u32>, String>> {
        cells
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let mut active = Vec::new();
                for (f, cell) in row.iter().enumerate() {
                    e.encode_value(f, cell, i + 1, &mut active)
                        .map_err(|e| e.to_string())?;
                }
                Ok(active)
            })
            .collect()
    }

    #[test]
    fn widths_follow_the_schema() {
        // age 1, hours thresholds 3, job 1, owner 1.
        assert_eq!(encoder().max_row_literals(), 6);
        assert!(encoder().reads_numbers(0));
        assert!(
            !encoder().reads_numbers(1),
            "hours declares a missing token"
        );
        assert!(!encoder().reads_numbers(2));
    }

    #[test]
    fn columns_give_the_literals_of_rows() {
        let e = encoder();
        let t = |s: &'static str| Cell::Text(s.into());
        let n = |x: f64| Cell::from_f64(x);
        let rows = [
            [n(25.0), n(45.0), t(" a "), Cell::Bool(true)],
            [n(150.0), t("?"), t("?"), t("no")],
            [n(60.0), n(-3.0), t("b"), t("1")],
        ];
        let expected: Vec<Vec<u32>> = row_major(&e, &rows)
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let mut out = LiteralRows::default();
        out.reset(&e, rows.len());
        e.encode_floats(0, 0, [25.0, 150.0, 60.0], &mut out)
            .unwrap();
        let hours: Vec<Cell<'_>> = rows.iter().map(|r| r[1].clone()).collect();
        e.encode_cells(1, 0, &hours, &mut out).unwrap();
        e.encode_texts(2, 0, [&b" a "[..], b"?", b"b"], &mut out)
            .unwrap();
        let owner: Vec<Cell<'_>> = rows.iter().map(|r| r[3].clone()).collect();
        e.encode_cells(3, 0, &owner, &mut out).unwrap();
        let got: Vec<Vec<u32>> = (0..3).map(|i| out.row(i).to_vec()).collect();
        assert_eq!(got, expected);
        // Hand-checked: row 0 is age (.., 30] = 0, hours 45 > 20, > 40 =
        // thresholds 3 and 4 of literals 3..6 (x <= 60 only: literal 5),
        // job a = 7, owner = 10.
        assert_eq!(got[0], vec![0, 5, 7, 10]);
    }

    proptest::proptest! {
        /// Any batch, valid or not, gives by columns the literals of each
        /// row and the first error that encoding row by row meets.
        #[test]
        fn columns_match_rows(
            picks in proptest::collection::vec((0..6usize, 0..6usize, 0..8usize, 0..4usize), 1..40),
            split in 0..40usize,
        ) {
            let e = encoder();
            let ages = [25.0, 150.0, -3.0, 1e308, 60.0, f64::NAN];
            let hours = [Cell::from_f64(45.0), Cell::Text("?".into()), Cell::Text("x".into()),
                         Cell::Null, Cell::Text(" 7 ".into()), Cell::Bool(true)];
            // Whitespace the ASCII trim keeps (NBSP, vertical tab) goes the
            // general way and still matches.
            let jobs: [&[u8]; 8] = [b"a", b" b ", b"?", b"zzz", "\u{a0}a".as_bytes(), b"a\x0b", b"", b"ab"];
            let owners = [Cell::Bool(true), Cell::Text("yes".into()), Cell::Text("maybe".into()), Cell::Null];
            let rows: Vec<[Cell<'_>; 4]> = picks.iter().map(|&(a, h, j, o)| [
                Cell::from_f64(ages[a]),
                hours[h].clone(),
                Cell::Text(std::str::from_utf8(jobs[j]).unwrap().into()),
                owners[o].clone(),
            ]).collect();
            let expected = row_major(&e, &rows);
            let expected_error = expected.iter().enumerate()
                .find_map(|(i, r)| r.as_ref().err().map(|m| (i, m.clone())));
            // Two runs, as a batch larger than one run is encoded.
            let n = rows.len();
            let split = split.min(n);
            let mut got = Vec::new();
            let mut got_error = None;
            let mut out = LiteralRows::default();
            for run in [0..split, split..n] {
                out.reset(&e, run.len());
                let mut kept = None;
                let results = [
                    e.encode_floats(0, run.start, picks[run.clone()].iter().map(|p| ages[p.0]), &mut out),
                    e.encode_cells(1, run.start, rows[run.clone()].iter().map(|r| &r[1]), &mut out),
                    e.encode_texts(2, run.start, picks[run.clone()].iter().map(|p| jobs[p.2]), &mut out),
                    e.encode_cells(3, run.start, rows[run.clone()].iter().map(|r| &r[3]), &mut out),
                ];
                for r in results {
                    if let Err(err) = r {
                        kept = Some(ColumnError::earliest(kept, err));
                    }
                }
                if let Some(err) = kept {
                    got_error = Some((err.row, err.error.to_string()));
                    break;
                }
                got.extend((0..run.len()).map(|i| out.row(i).to_vec()));
            }
            proptest::prop_assert_eq!(&got_error, &expected_error);
            if expected_error.is_none() {
                let expected: Vec<Vec<u32>> = expected.into_iter().map(Result::unwrap).collect();
                proptest::prop_assert_eq!(got, expected);
            }
        }
    }

    #[test]
    fn errors_name_the_row() {
        let e = encoder();
        let mut out = LiteralRows::default();
        out.reset(&e, 3);
        let err = e
            .encode_texts(2, 10, [&b"a"[..], b"zzz", b"also bad"], &mut out)
            .unwrap_err();
        assert_eq!(err.row, 11);
        assert!(err.error.to_string().contains("row 12"), "{}", err.error);
        let err = e
            .encode_floats(0, 0, [1.0, f64::NAN], &mut out)
            .unwrap_err();
        assert_eq!(err.row, 1);
    }
}
