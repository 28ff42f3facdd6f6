//! The encoded rows of a dataset as stored, on both backends: two parts,
//! each a sequence of little-endian `u64` words cut into chunks of at most
//! [`ROW_CHUNK_BYTES`] (table `dataset_row_chunks`).
//!
//! - `features`: the bit matrix's columns one after the other.
//! - `labels`: the label bits' words, or for a regression dataset the
//!   clamped labels as `f64` bits, or for a multiclass dataset each row's
//!   class index as one word (which of the three is known from the
//!   schema's task; binary and regression datasets are stored exactly as
//!   before multiclass existed).
//!
//! Chunks exist so that no single value is large: an upload writes one
//! chunk at a time straight from the matrix (so its peak memory is the
//! matrix plus one chunk, issue 13), a read fills the matrix's columns one
//! chunk at a time (no whole-part buffer), and no PostgreSQL field comes near
//! its 1 GB limit. Built only from the public accessors of [`crate::data`].

use crate::data::{BitMatrix, BitVec, Dataset};

use super::StoreError;

/// The largest chunk of a part (1 MiB, a whole number of words).
pub(crate) const ROW_CHUNK_BYTES: usize = 1 << 20;
const CHUNK_WORDS: usize = ROW_CHUNK_BYTES / 8;

/// The two parts of a dataset's stored rows, in the order they are read.
pub(crate) const PARTS: [Part; 2] = [Part::Features, Part::Labels];

/// One part of the stored rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Features,
    Labels,
}

impl Part {
    /// The name stored in `dataset_row_chunks.part`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Part::Features => "features",
            Part::Labels => "labels",
        }
    }
}

/// Chunk `idx` of `part` of a labelled dataset's stored bytes, or `None`
/// past the last one (an empty part has no chunk).
pub(crate) fn chunk(data: &Dataset, part: Part, idx: usize) -> Result<Option<Vec<u8>>, StoreError> {
    chunk_of_words(data, part, idx, CHUNK_WORDS)
}

/// [`chunk`] with chunks of `chunk_words` words (tests cut small ones).
fn chunk_of_words(
    data: &Dataset,
    part: Part,
    idx: usize,
    chunk_words: usize,
) -> Result<Option<Vec<u8>>, StoreError> {
    let start = idx.saturating_mul(chunk_words);
    let bytes = match part {
        Part::Features => {
            let m = &data.features;
            let w = m.words_per_column();
            let end = (m.n_cols() * w).min(start.saturating_add(chunk_words));
            if start >= end {
                return Ok(None);
            }
            // Words [start, end) of the columns laid end to end: the tail of
            // one column, whole columns, the head of another.
            let mut bytes = Vec::with_capacity((end - start) * 8);
            let mut at = start;
            while at < end {
                let (j, offset) = (at / w, at % w);
                let take = (end - at).min(w - offset);
                for word in &m.column(j)[offset..offset + take] {
                    bytes.extend_from_slice(&word.to_le_bytes());
                }
                at += take;
            }
            bytes
        }
        Part::Labels => match (&data.labels, &data.targets, &data.classes) {
            (Some(bits), None, None) => words_to_bytes(bits.words(), start, chunk_words, |w| w),
            (None, Some(values), None) => words_to_bytes(values, start, chunk_words, f64::to_bits),
            (None, None, Some(classes)) => words_to_bytes(classes, start, chunk_words, u64::from),
            _ => {
                return Err(StoreError::Corrupt(
                    "a stored dataset needs labels of one kind".into(),
                ));
            }
        },
    };
    Ok((!bytes.is_empty()).then_some(bytes))
}

/// The bytes of items `[start, start + chunk_words)` of `items`, each as the
/// word `word` makes of it.
fn words_to_bytes<T: Copy>(
    items: &[T],
    start: usize,
    chunk_words: usize,
    word: impl Fn(T) -> u64,
) -> Vec<u8> {
    let items = &items[start.min(items.len())..];
    items[..items.len().min(chunk_words)]
        .iter()
        .flat_map(|&x| word(x).to_le_bytes())
        .collect()
}

/// Rebuilds a dataset from its chunks, taken in order (all of `features`,
/// then all of `labels`, each by increasing index). Memory: the matrix
/// being built, nothing more.
pub(crate) struct Decoder {
    n_rows: usize,
    words_per_column: usize,
    columns: Vec<Vec<u64>>,
    /// Columns before this one are complete.
    full_columns: usize,
    labels: Vec<u64>,
    /// The part and index the next chunk must have.
    next: (Part, usize),
}

impl Decoder {
    /// A decoder for the stored header `(n_rows, n_cols)`.
    pub(crate) fn new(n_rows: i64, n_cols: i64) -> Result<Decoder, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("stored rows: {what}"));
        let n_rows = usize::try_from(n_rows).map_err(|_| corrupt("n_rows"))?;
        let n_cols = usize::try_from(n_cols).map_err(|_| corrupt("n_cols"))?;
        let words_per_column = n_rows.div_ceil(64);
        n_cols
            .checked_mul(words_per_column)
            .and_then(|w| w.checked_mul(8))
            .ok_or_else(|| corrupt("size"))?;
        Ok(Decoder {
            n_rows,
            words_per_column,
            columns: (0..n_cols).map(|_| Vec::new()).collect(),
            full_columns: 0,
            labels: Vec::new(),
            next: (Part::Features, 0),
        })
    }

    /// Take the next chunk; its `part` and `idx` must be the next expected.
    pub(crate) fn push(&mut self, part: &str, idx: i64, bytes: &[u8]) -> Result<(), StoreError> {
        let part = match part {
            "features" => Part::Features,
            "labels" => Part::Labels,
            other => return Err(StoreError::Corrupt(format!("stored rows: part {other:?}"))),
        };
        let expected = match (self.next, part) {
            ((Part::Features, _), Part::Labels) => (Part::Labels, 0),
            (next, _) => next,
        };
        let in_order = (part, usize::try_from(idx).ok()) == (expected.0, Some(expected.1));
        if !in_order || !bytes.len().is_multiple_of(8) || bytes.len() > ROW_CHUNK_BYTES {
            return Err(StoreError::Corrupt(format!(
                "stored rows: chunk {} {idx} out of order or malformed",
                part.as_str()
            )));
        }
        self.next = (part, expected.1 + 1);
        match part {
            Part::Features => self.push_feature_bytes(bytes),
            Part::Labels => {
                // At most n_rows words: a regression or multiclass label is
                // one word a row.
                if self.labels.len() + bytes.len() / 8 > self.n_rows {
                    return Err(StoreError::Corrupt(
                        "stored rows: too many label words".into(),
                    ));
                }
                self.labels.extend(words(bytes));
                Ok(())
            }
        }
    }

    /// Fill the columns in order; each is allocated once, at its final size.
    fn push_feature_bytes(&mut self, mut bytes: &[u8]) -> Result<(), StoreError> {
        while !bytes.is_empty() {
            while self.full_columns < self.columns.len()
                && self.columns[self.full_columns].len() == self.words_per_column
            {
                self.full_columns += 1;
            }
            let Some(column) = self.columns.get_mut(self.full_columns) else {
                return Err(StoreError::Corrupt(
                    "stored rows: too many feature words".into(),
                ));
            };
            if column.capacity() == 0 {
                column.reserve_exact(self.words_per_column);
            }
            let take = bytes.len().min((self.words_per_column - column.len()) * 8);
            column.extend(words(&bytes[..take]));
            bytes = &bytes[take..];
        }
        Ok(())
    }

    /// The dataset, its `labels` part laid out as `layout` says (from the
    /// schema's task, [`LabelLayout::of`]). The one-hot groups are not
    /// stored (they come from the schema): the caller sets them from the
    /// dataset's encoder.
    pub(crate) fn finish_with(self, layout: LabelLayout) -> Result<Dataset, StoreError> {
        let corrupt = || StoreError::Corrupt("stored rows have the wrong length".into());
        let words: usize = self.columns.iter().map(Vec::len).sum();
        if words != self.columns.len() * self.words_per_column {
            return Err(corrupt());
        }
        let features =
            BitMatrix::from_column_words(self.n_rows, self.columns).ok_or_else(corrupt)?;
        let (labels, targets, classes) = match layout {
            LabelLayout::Values => {
                if self.labels.len() != self.n_rows {
                    return Err(corrupt());
                }
                (
                    None,
                    Some(self.labels.into_iter().map(f64::from_bits).collect()),
                    None,
                )
            }
            LabelLayout::Bits => {
                let bits = BitVec::from_words(self.labels, self.n_rows).ok_or_else(corrupt)?;
                (Some(bits), None, None)
            }
            LabelLayout::Classes { k } => {
                if self.labels.len() != self.n_rows {
                    return Err(corrupt());
                }
                let classes = self
                    .labels
                    .into_iter()
                    .map(|w| u16::try_from(w).ok().filter(|&c| usize::from(c) < k))
                    .collect::<Option<Vec<u16>>>()
                    .ok_or_else(|| {
                        StoreError::Corrupt("stored rows: a class index out of range".into())
                    })?;
                (None, None, Some(classes))
            }
        };
        Ok(Dataset {
            features,
            labels,
            targets,
            classes,
            one_hot_groups: vec![],
        })
    }
}

/// How the `labels` part of a stored dataset is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LabelLayout {
    /// Binary: the label bits' words.
    Bits,
    /// Regression: one `f64` a row.
    Values,
    /// Multiclass: one class index (`< k`) a row.
    Classes { k: usize },
}

impl LabelLayout {
    /// The layout the schema's task stores.
    pub(crate) fn of(task: crate::data::Task) -> LabelLayout {
        match task {
            crate::data::Task::Binary => LabelLayout::Bits,
            crate::data::Task::Regression { .. } => LabelLayout::Values,
            crate::data::Task::Multiclass { k } => LabelLayout::Classes { k },
        }
    }
}

/// The little-endian words of `bytes` (a whole number of words).
fn words(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        // Invariant: chunks_exact(8) yields 8-byte slices.
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset(n: usize, cols: usize, regression: bool) -> Dataset {
        let columns: Vec<BitVec> = (0..cols)
            .map(|j| BitVec::from_bools(&(0..n).map(|i| (i * 7 + j) % 3 == 0).collect::<Vec<_>>()))
            .collect();
        let (labels, targets) = if regression {
            (None, Some((0..n).map(|i| i as f64 * 0.25 - 3.0).collect()))
        } else {
            (
                Some(BitVec::from_bools(
                    &(0..n).map(|i| i % 2 == 0).collect::<Vec<_>>(),
                )),
                None,
            )
        };
        Dataset {
            features: BitMatrix::from_columns(n, &columns),
            labels,
            targets,
            classes: None,
            one_hot_groups: vec![],
        }
    }

    /// Every chunk of `data` cut at `chunk_words`, in storage order.
    fn chunks(data: &Dataset, chunk_words: usize) -> Vec<(Part, usize, Vec<u8>)> {
        let mut out = vec![];
        for part in PARTS {
            for idx in 0.. {
                match chunk_of_words(data, part, idx, chunk_words).unwrap() {
                    Some(bytes) => out.push((part, idx, bytes)),
                    None => break,
                }
            }
        }
        out
    }

    fn decode(
        data: &Dataset,
        chunks: &[(Part, usize, Vec<u8>)],
        regression: bool,
    ) -> Result<Dataset, StoreError> {
        let mut d = Decoder::new(data.n_rows() as i64, data.features.n_cols() as i64)?;
        for (part, idx, bytes) in chunks {
            d.push(part.as_str(), *idx as i64, bytes)?;
        }
        d.finish_with(if regression {
            LabelLayout::Values
        } else {
            LabelLayout::Bits
        })
    }

    #[test]
    fn round_trips_across_chunk_and_column_boundaries() {
        for n in [0usize, 1, 63, 64, 65, 200, 1000] {
            for cols in [0, 1, 3] {
                for regression in [false, true] {
                    let data = dataset(n, cols, regression);
                    for chunk_words in [1, 2, 3, 5, 16, CHUNK_WORDS] {
                        let cut = chunks(&data, chunk_words);
                        // The chunks, laid end to end, are the columns and the labels.
                        let total: usize = cut.iter().map(|c| c.2.len()).sum();
                        let label_words = if regression { n } else { n.div_ceil(64) };
                        assert_eq!(total, (cols * n.div_ceil(64) + label_words) * 8);
                        assert!(
                            cut.iter()
                                .all(|c| c.2.len() <= chunk_words * 8 && !c.2.is_empty())
                        );
                        let back = decode(&data, &cut, regression).unwrap();
                        assert_eq!(
                            back.features, data.features,
                            "n {n} cols {cols} chunk {chunk_words}"
                        );
                        assert_eq!(back.labels, data.labels);
                        assert_eq!(back.targets, data.targets);
                    }
                }
            }
        }
    }

    #[test]
    fn missing_extra_reordered_or_padded_chunks_are_corrupt() {
        let data = dataset(200, 3, false);
        let cut = chunks(&data, 2);
        assert!(cut.len() > 4);
        let mut missing = cut.clone();
        missing.remove(1);
        assert!(decode(&data, &missing, false).is_err());
        let mut last_missing = cut.clone();
        last_missing.pop();
        assert!(decode(&data, &last_missing, false).is_err());
        let mut swapped = cut.clone();
        swapped.swap(0, 1);
        assert!(decode(&data, &swapped, false).is_err());
        let mut extra = cut.clone();
        extra.push((Part::Labels, cut.last().unwrap().1 + 1, vec![0; 8]));
        assert!(decode(&data, &extra, false).is_err());
        let mut ragged = cut.clone();
        ragged[0].2.pop();
        assert!(decode(&data, &ragged, false).is_err());
        // A bit set past the last row (200 = 3 * 64 + 8) breaks the invariant.
        let mut past_end = cut.clone();
        let first_column_last_word = 3; // words 0..4 of column 0; chunk 1 holds words 2 and 3
        past_end[1].2[(first_column_last_word - 2) * 8 + 7] |= 0x80;
        assert!(decode(&data, &past_end, false).is_err());
        // And the same chunks, untouched, decode.
        assert!(decode(&data, &cut, false).is_ok());
    }

    #[test]
    fn multiclass_labels_round_trip_one_word_a_row_and_are_checked() {
        let k = 5;
        for n in [1usize, 63, 64, 65, 200] {
            let mut data = dataset(n, 2, false);
            data.labels = None;
            data.classes = Some((0..n).map(|i| (i * 3 % k) as u16).collect());
            for chunk_words in [1, 3, CHUNK_WORDS] {
                let cut = chunks(&data, chunk_words);
                let total: usize = cut.iter().map(|c| c.2.len()).sum();
                assert_eq!(total, (2 * n.div_ceil(64) + n) * 8);
                let mut d = Decoder::new(n as i64, 2).unwrap();
                for (part, idx, bytes) in &cut {
                    d.push(part.as_str(), *idx as i64, bytes).unwrap();
                }
                let back = d.finish_with(LabelLayout::Classes { k }).unwrap();
                assert_eq!(back.features, data.features);
                assert_eq!(back.classes, data.classes);
                assert_eq!((back.labels, back.targets), (None, None));
            }
        }
        // A stored index at or past k is corrupt.
        let mut data = dataset(3, 1, false);
        data.labels = None;
        data.classes = Some(vec![0, 4, 1]);
        let mut d = Decoder::new(3, 1).unwrap();
        for (part, idx, bytes) in &chunks(&data, CHUNK_WORDS) {
            d.push(part.as_str(), *idx as i64, bytes).unwrap();
        }
        assert!(d.finish_with(LabelLayout::Classes { k: 4 }).is_err());
        // Two kinds of label at once cannot be stored.
        let mut both = dataset(3, 1, false);
        both.classes = Some(vec![0, 1, 1]);
        assert!(chunk(&both, Part::Labels, 0).is_err());
    }

    #[test]
    fn a_labelled_dataset_is_required() {
        let mut data = dataset(10, 1, false);
        data.labels = None;
        assert!(chunk(&data, Part::Labels, 0).is_err());
    }
}
