//! The encoded rows of a dataset as bytes for storage: the bit matrix's
//! column words and the label words, little-endian `u64`s; for a regression
//! dataset the label blob holds the clamped labels as little-endian `f64`s
//! instead (which of the two is known from the schema). Built only from the
//! public accessors of [`crate::data`].

use crate::data::{BitMatrix, BitVec, Dataset};

use super::StoreError;

/// A dataset's rows as stored.
pub(crate) struct EncodedRows {
    pub n_rows: usize,
    pub n_cols: usize,
    pub features: Vec<u8>,
    pub labels: Vec<u8>,
}

/// Encode a labelled dataset.
pub(crate) fn encode(data: &Dataset) -> Result<EncodedRows, StoreError> {
    let labels: Vec<u8> = match (&data.labels, &data.targets) {
        (Some(bits), None) => bits.words().iter().flat_map(|w| w.to_le_bytes()).collect(),
        (None, Some(values)) => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        _ => return Err(StoreError::Corrupt("a stored dataset needs labels".into())),
    };
    let n_cols = data.features.n_cols();
    let mut features = Vec::with_capacity(n_cols * data.features.words_per_column() * 8);
    for j in 0..n_cols {
        for w in data.features.column(j) {
            features.extend_from_slice(&w.to_le_bytes());
        }
    }
    Ok(EncodedRows {
        n_rows: data.n_rows(),
        n_cols,
        features,
        labels,
    })
}

/// Decode what [`encode`] wrote; `regression` (from the schema's task) says
/// which label layout the blob has. The one-hot groups are not stored (they
/// come from the schema): the caller sets them from the dataset's encoder.
pub(crate) fn decode(rows: &EncodedRows, regression: bool) -> Result<Dataset, StoreError> {
    let words_per_column = rows.n_rows.div_ceil(64);
    let corrupt = || StoreError::Corrupt("stored rows have the wrong length".into());
    if rows.features.len() != rows.n_cols * words_per_column * 8 {
        return Err(corrupt());
    }
    let columns: Vec<BitVec> = if words_per_column == 0 {
        (0..rows.n_cols).map(|_| BitVec::new()).collect()
    } else {
        rows.features
            .chunks(words_per_column * 8)
            .map(|bytes| BitVec::from_words(words(bytes), rows.n_rows).ok_or_else(corrupt))
            .collect::<Result<_, _>>()?
    };
    let (labels, targets) = if regression {
        if rows.labels.len() != rows.n_rows * 8 {
            return Err(corrupt());
        }
        let values: Vec<f64> = words(&rows.labels)
            .into_iter()
            .map(f64::from_bits)
            .collect();
        (None, Some(values))
    } else {
        let bits = BitVec::from_words(words(&rows.labels), rows.n_rows).ok_or_else(corrupt)?;
        (Some(bits), None)
    };
    Ok(Dataset {
        features: BitMatrix::from_columns(rows.n_rows, &columns),
        labels,
        targets,
        one_hot_groups: vec![],
    })
}

fn words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks_exact(8)
        // Invariant: chunks_exact(8) yields 8-byte slices.
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for n in [1usize, 63, 64, 65, 200] {
            let cols: Vec<BitVec> = (0..3)
                .map(|j| {
                    BitVec::from_bools(&(0..n).map(|i| (i * 7 + j) % 3 == 0).collect::<Vec<_>>())
                })
                .collect();
            let data = Dataset {
                features: BitMatrix::from_columns(n, &cols),
                labels: Some(BitVec::from_bools(
                    &(0..n).map(|i| i % 2 == 0).collect::<Vec<_>>(),
                )),
                targets: None,
                one_hot_groups: vec![],
            };
            let back = decode(&encode(&data).unwrap(), false).unwrap();
            assert_eq!(back.features, data.features);
            assert_eq!(back.labels, data.labels);
            let regression = Dataset {
                labels: None,
                targets: Some((0..n).map(|i| i as f64 * 0.25 - 3.0).collect()),
                ..data
            };
            let back = decode(&encode(&regression).unwrap(), true).unwrap();
            assert_eq!(back.targets, regression.targets);
            assert_eq!(back.labels, None);
        }
    }
}
