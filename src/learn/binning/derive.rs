//! The derived literals of a job with private bins: each derived interval
//! is the OR of the consecutive base-interval columns between two chosen cut
//! points, each derived threshold `x <= c` the base threshold at `c`, every
//! other literal a copy. Work: each base column is read once (public sizes
//! only); the CSV is not read again.

use super::LearnError;
use crate::data::{Bins, BitMatrix, BitVec, Column, Dataset, Encoder, NumericEncoding, Schema};

/// Re-express `data`, encoded with `base`, in the literals of `derived`: the
/// same schema except that private-bins columns have explicit thresholds
/// drawn from their base cut points. Used by the phase and to evaluate a
/// model on held-out rows encoded with the base schema. Errors if the
/// schemas do not match that way.
pub fn derive(
    data: &Dataset,
    base: &Schema,
    derived: &Schema,
) -> Result<(Encoder, Dataset), LearnError> {
    let mismatch = |why: &str| {
        LearnError::InvalidParameter(format!(
            "the model's schema does not derive from the data's by private binning: {why}"
        ))
    };
    if base.columns.len() != derived.columns.len() {
        return Err(mismatch("different columns"));
    }
    let encoder = Encoder::new(derived)?;
    let n = data.n_rows();
    let column = |l: usize| data.features.column(l).to_vec();
    let mut out: Vec<Vec<u64>> = Vec::with_capacity(derived.n_literals());
    let mut first = 0;
    for (b, d) in base.columns.iter().zip(&derived.columns) {
        if b.name() != d.name() {
            return Err(mismatch("different columns"));
        }
        let private = match (b, d) {
            (Column::Numeric(bc), Column::Numeric(dc))
                if matches!(bc.bins, Some(Bins::Private(_))) =>
            {
                Some((bc, dc))
            }
            _ => None,
        };
        match private {
            None => {
                if b.n_literals() != d.n_literals() {
                    return Err(mismatch("different literals"));
                }
                out.extend((first..first + b.n_literals()).map(column));
            }
            Some((bc, dc)) => {
                let base_cuts = bc.cut_points()?;
                let positions = dc
                    .cut_points()?
                    .iter()
                    .map(|c| base_cuts.iter().position(|b| b == c))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or_else(|| mismatch("a cut point is not on the base grid"))?;
                if dc.encoding != bc.encoding {
                    return Err(mismatch("different encodings"));
                }
                match bc.encoding {
                    NumericEncoding::Intervals => {
                        // Derived interval j is the union of base intervals
                        // after the previous chosen cut up to this one.
                        let mut start = 0;
                        let ends = positions
                            .iter()
                            .map(|&p| p + 1)
                            .chain([base_cuts.len() + 1]);
                        for end in ends {
                            let mut words = vec![0u64; data.features.words_per_column()];
                            for l in start..end {
                                for (w, x) in words.iter_mut().zip(data.features.column(first + l))
                                {
                                    *w |= x;
                                }
                            }
                            out.push(words);
                            start = end;
                        }
                    }
                    NumericEncoding::Thresholds => {
                        out.extend(positions.iter().map(|&p| column(first + p)));
                    }
                }
                if bc.missing.is_some() {
                    let values = b.n_literals() - 1;
                    out.push(column(first + values));
                }
            }
        }
        first += b.n_literals();
    }
    let columns = out
        .into_iter()
        .map(|words| {
            BitVec::from_words(words, n).ok_or_else(|| mismatch("a column of the wrong length"))
        })
        .collect::<Result<Vec<BitVec>, LearnError>>()?;
    if columns.len() != encoder.n_literals() {
        return Err(mismatch("different literal counts"));
    }
    let data = Dataset {
        features: BitMatrix::from_columns(n, &columns),
        labels: data.labels.clone(),
        targets: data.targets.clone(),
        classes: data.classes.clone(),
        one_hot_groups: encoder.one_hot_groups().to_vec(),
    };
    Ok((encoder, data))
}
