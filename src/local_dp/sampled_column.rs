//! The sampled-column local-DP protocol: each row reports ONE feature column,
//! drawn uniformly at random, jointly with its label, at the full local
//! epsilon (docs/privacy.md, "Local DP collection: sampled-column").
//!
//! The all-columns protocol (`super::LocalDp` with
//! [`Protocol::AllColumns`](super::Protocol)) splits the row's epsilon over
//! every column and the label, so on Adult each of 15 randomized responses
//! runs at epsilon / 15 and nothing survives the debiasing below epsilon 16.
//! Sampling one column per row is the standard remedy for multidimensional
//! local DP: Wang et al., "Collecting and analyzing multidimensional data
//! under local differential privacy", ICDE 2019, §IV (each user reports
//! `k << d` sampled attributes, each at `epsilon / k`; here `k = 1`), and
//! for a naive Bayes classifier Yilmaz et al., "Locally differentially
//! private naive Bayes classification", 2019 (the joint (value, label) of
//! one attribute perturbed together). The variance of a frequency estimate
//! then grows linearly with the number of columns `d` (fewer reports per
//! column) instead of exponentially through `epsilon / d`.
//!
//! # The client's step (one row)
//!
//! 1. Draw `j` uniformly among the `d` feature columns (schema order,
//!    ignored columns left out) with the client's CSPRNG
//!    ([`crate::privacy::exact::uniform_below`]), independently of the row.
//! 2. Encode the row's value of column `j` to its domain index `v < k_j`
//!    ([`super::Domains`], the values the encoder can give the column) and
//!    the label to `y < L` (0 positive, 1 negative, `L = 2`; or the class's
//!    index in a class list of `L` classes); the pair is `z = L v + y`
//!    ([`pair_index`]), one of `L k_j` values.
//! 3. Report `(j, RR_{L k_j, epsilon}(z))`: k-ary randomized response of the
//!    pair at the full epsilon (`local_dp::randomized_response`).
//!
//! # Privacy (epsilon-local DP per row)
//!
//! Let `x, x'` be any two rows and `(j, z~)` any output. The draw of `j` does
//! not read the row: `P(j | x) = P(j | x') = 1 / d`. Given `j`, the report is
//! one randomized response over `L k_j` values (whatever `L`), whose ratio bound is
//! `P(z~ | z) / P(z~ | z') <= p / q = e^epsilon` (seed 001 Def. 13.1; the
//! module docs of `local_dp::randomized_response`). So
//! `P(j, z~ | x) / P(j, z~ | x') = P(z~ | z_j(x)) / P(z~ | z_j(x')) <= e^epsilon`:
//! one mechanism, no composition, and `j` may travel in the clear because it
//! is independent of the data. The other columns are not reported at all.
//!
//! # The report file and how it is stored
//!
//! `privboost randomize --protocol sampled-column` writes one line per row
//! with three columns: [`REPORTED_COLUMN`] (the name of column `j`),
//! [`REPORTED_VALUE`] (a cell that encodes to the reported value, as in the
//! all-columns protocol: a category, an interval midpoint, the column's
//! first missing token) and the label column (the reported label). There are
//! no cells for the columns not reported, so a randomized "missing" value
//! (a missing token in `reported_value`) cannot be confused with "not
//! reported".
//!
//! The server stores the reports in the ordinary encoded form ([`read_reports`]):
//! the schema's literals, of which only the reported column's are set (the
//! reported cell's encoding), followed by one marker literal per feature
//! column (`n_literals + f` is set when the row reported feature column `f`),
//! and the reported label as the label bit (a class list: as the row's
//! class index). The marker, not the literal
//! pattern, says which column a row reported, so a value that lights no
//! literal (a boolean's `false`, a threshold column's last interval) is read
//! back correctly. [`SampledColumn::decode_reports`] turns the stored rows back into
//! `(column, pair)` reports for the learner (`learn::naive_bayes`).

use std::collections::HashSet;
use std::io::Read;

use super::Domains;
use super::randomized_response::RandomizedResponse;
use crate::data::bounded::{RecordBound, read_record};
use crate::data::{
    BitMatrixBuilder, BitVec, DataError, Dataset, Encoder, OnBadRow, ReadOptions, ReadReport,
    Schema, Task,
};
use crate::privacy::{NoiseRng, PrivacyError, exact};

/// The report file's column naming the reported feature column.
pub const REPORTED_COLUMN: &str = "reported_column";
/// The report file's column holding the reported value's cell.
pub const REPORTED_VALUE: &str = "reported_value";

/// The index of the pair (value `v`, label `y`) among the `L k` values of
/// the pair's randomized response: `L v + y`, with `L = n_labels` the
/// label's domain size and `y` its index in [`Domains::label`] (binary: 0
/// for the positive class and 1 for the negative one, `L = 2`).
pub fn pair_index(value: u32, label: u32, n_labels: u32) -> u32 {
    n_labels * value + label
}

/// `(value, label)` of a pair index ([`pair_index`]'s inverse).
pub fn pair_of(index: u32, n_labels: u32) -> (u32, u32) {
    (index / n_labels, index % n_labels)
}

/// One row's report: the feature column it reported (index among the
/// schema's feature columns) and the randomized pair ([`pair_index`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// Feature index (0-based among the non-ignored columns, schema order).
    pub feature: usize,
    /// The randomized pair, `< 2 k_feature`.
    pub pair: u32,
}

/// What the sampled-column protocol needs of a schema: its feature columns,
/// their domains and each column's pair randomized response. Public: built
/// from the schema and epsilon only.
#[derive(Debug, Clone)]
pub struct SampledColumn {
    domains: Domains,
    /// Schema index of each feature column, in feature order.
    columns: Vec<usize>,
    /// Per feature column, RR over its `L k_j` pairs at the full epsilon.
    rrs: Vec<RandomizedResponse>,
    /// `L`: the label's domain size (2, or the number of classes).
    n_labels: u32,
}

impl SampledColumn {
    /// The protocol for `schema` at local `epsilon`. Refuses what
    /// [`Domains::new`] refuses (regression, private bins), a schema without
    /// feature columns, and a label column named like a report column.
    pub fn new(schema: &Schema, epsilon: f64) -> Result<SampledColumn, DataError> {
        let domains = Domains::new(schema)?;
        let label = schema.label_column();
        if label == REPORTED_COLUMN || label == REPORTED_VALUE {
            return Err(DataError::LocalDp {
                message: format!(
                    "the sampled-column protocol's report file has columns {REPORTED_COLUMN:?} and {REPORTED_VALUE:?}; rename the label column"
                ),
            });
        }
        let columns: Vec<usize> = domains
            .columns
            .iter()
            .enumerate()
            .filter_map(|(c, d)| d.as_ref().map(|_| c))
            .collect();
        if columns.is_empty() {
            return Err(DataError::LocalDp {
                message: "the sampled-column protocol needs at least one feature column".into(),
            });
        }
        let n_labels = domains.label.len() as u32;
        let rrs = columns
            .iter()
            .map(|&c| {
                let k = domains.columns[c].as_ref().map_or(0, |d| d.values.len()) as u32;
                RandomizedResponse::new(n_labels * k, epsilon)
            })
            .collect::<Result<Vec<_>, PrivacyError>>()
            .map_err(|e| DataError::LocalDp {
                message: e.to_string(),
            })?;
        Ok(SampledColumn {
            domains,
            columns,
            rrs,
            n_labels,
        })
    }

    /// The column domains.
    pub fn domains(&self) -> &Domains {
        &self.domains
    }

    /// Number of feature columns `d` (the draw is uniform over them).
    pub fn n_features(&self) -> usize {
        self.columns.len()
    }

    /// Schema index of feature column `f`.
    pub fn schema_column(&self, f: usize) -> usize {
        self.columns[f]
    }

    /// `k_f`: the number of values of feature column `f`.
    pub fn k(&self, f: usize) -> u32 {
        self.rrs[f].k() / self.n_labels
    }

    /// `L`: the number of label values (2, or the class list's length).
    pub fn n_labels(&self) -> u32 {
        self.n_labels
    }

    /// The pair randomized response of feature column `f` (over `L k_f`
    /// values; its `keep` and `other` are the debiasing's `p` and `q`).
    pub fn rr(&self, f: usize) -> &RandomizedResponse {
        &self.rrs[f]
    }

    /// The client's step for one row (module docs): `cell(c)` is the row's
    /// trimmed cell of schema column `c`, `label` its label cell. Every
    /// feature cell is checked first, so a bad row is refused whatever
    /// column the draw picks; only column `j`'s pair is then randomized and
    /// reported. Errors name the row and column, never the value.
    pub fn report<'a>(
        &self,
        rng: &mut NoiseRng,
        encoder: &Encoder,
        cell: impl Fn(usize) -> &'a str,
        label: &str,
        row: usize,
    ) -> Result<Report, DataError> {
        let mut active = Vec::new();
        let mut values = Vec::with_capacity(self.columns.len());
        for &c in &self.columns {
            values.push(
                self.domains
                    .value_index(encoder, c, cell(c), row, &mut active)?,
            );
        }
        let y = self.domains.label_index(encoder, label, row)?;
        let entropy = |e: PrivacyError| DataError::LocalDp {
            message: e.to_string(),
        };
        // Step 1: j uniform, independent of the row.
        let feature =
            exact::uniform_below(rng, self.columns.len() as u128).map_err(entropy)? as usize;
        // Steps 2 and 3: the pair of column j, randomized at the full epsilon.
        let pair = self.rrs[feature]
            .sample(rng, pair_index(values[feature], y, self.n_labels))
            .map_err(entropy)?;
        Ok(Report { feature, pair })
    }

    /// The three cells of a report line, in the order `reported_column,
    /// reported_value, label`.
    pub fn cells(&self, encoder: &Encoder, report: Report) -> [String; 3] {
        let (value, y) = pair_of(report.pair, self.n_labels);
        let c = self.columns[report.feature];
        let domain = self.domains.columns[c]
            .as_ref()
            .expect("a feature column has a domain");
        [
            encoder.schema().columns[c].name().to_owned(),
            domain.values[value as usize].cell.clone(),
            self.domains.label[y as usize].clone(),
        ]
    }

    /// Decode stored report rows (module docs) into reports, in row order.
    /// Errors if a row has no marker or several, or its reported column's
    /// literals are not a value of the column: the rows were not stored by
    /// [`read_reports`] with this schema.
    pub fn decode_reports(
        &self,
        encoder: &Encoder,
        data: &Dataset,
    ) -> Result<Vec<Report>, DataError> {
        let d = self.columns.len();
        let n_literals = encoder.n_literals();
        let corrupt = |row: usize, message: &str| DataError::row(row + 1, message.to_string());
        if data.n_literals() != n_literals + d {
            return Err(DataError::schema(format!(
                "sampled-column rows have {} literals and {d} markers; these rows have {} columns",
                n_literals,
                data.n_literals()
            )));
        }
        // The reported label of row `i`: its class index (a class list) or
        // its bit (0 positive, 1 negative), as `read_reports` stored it.
        let missing = || DataError::schema("sampled-column rows need their reported labels");
        let label: Vec<u32> = match encoder.schema().task() {
            Task::Multiclass { .. } => data
                .classes
                .as_ref()
                .ok_or_else(missing)?
                .iter()
                .map(|&c| u32::from(c))
                .collect(),
            _ => {
                let bits = data.labels.as_ref().ok_or_else(missing)?;
                (0..data.n_rows())
                    .map(|i| u32::from(!bits.get(i)))
                    .collect()
            }
        };
        let mut feature = vec![usize::MAX; data.n_rows()];
        for f in 0..d {
            for i in data.features.column_bits(n_literals + f).ones() {
                if feature[i] != usize::MAX {
                    return Err(corrupt(i, "a sampled-column row reports two columns"));
                }
                feature[i] = f;
            }
        }
        let mut reports = Vec::with_capacity(data.n_rows());
        let mut lit = Vec::new();
        for (i, &f) in feature.iter().enumerate() {
            if f == usize::MAX {
                return Err(corrupt(i, "a sampled-column row reports no column"));
            }
            let c = self.columns[f];
            let column = encoder.schema().columns[c].name();
            let Some(Some(fi)) = encoder.column_role(column) else {
                return Err(corrupt(i, "not a feature column"));
            };
            let first = encoder.first_literal(fi) as usize;
            let domain = self.domains.columns[c]
                .as_ref()
                .expect("a feature column has a domain");
            lit.clear();
            lit.extend(
                (0..domain.n_literals as usize)
                    .filter(|&o| data.features.get(i, first + o))
                    .map(|o| o as u32),
            );
            let value = domain
                .values
                .iter()
                .position(|v| v.literals == lit)
                .ok_or_else(|| corrupt(i, "the reported literals are not a value of the column"))?;
            let y = label[i];
            if y >= self.n_labels {
                return Err(corrupt(i, "the reported class is not one of the schema's"));
            }
            reports.push(Report {
                feature: f,
                pair: pair_index(value as u32, y, self.n_labels),
            });
        }
        Ok(reports)
    }
}

/// Longest report line accepted, in bytes (three short cells; the limit
/// bounds the `csv` crate's record buffer, as `MAX_RECORD_BYTES` does for
/// the row reader).
pub const MAX_REPORT_BYTES: u64 = 64 << 10;

/// Read a sampled-column report file (module docs) and store it as rows:
/// the reported column's literals, its marker and the reported label.
/// The same options as the row reader: refuse at the first bad lines or
/// skip them; errors carry row, line and column, never a cell's value.
pub fn read_reports<R: Read>(
    reader: R,
    encoder: &Encoder,
    protocol: &SampledColumn,
    options: &ReadOptions,
) -> Result<ReadReport, DataError> {
    let max_errors = options.max_errors.max(1);
    let mut csv = RecordBound::csv_reader(reader, MAX_REPORT_BYTES);
    let header = csv.byte_headers().map_err(|e| csv_error(e, 0))?.clone();
    if header.is_empty() {
        return Err(DataError::Empty);
    }
    let label_name = encoder.schema().label_column();
    let names = header
        .iter()
        .map(|f| std::str::from_utf8(f).map(str::trim))
        .collect::<Result<Vec<&str>, _>>()
        .map_err(|_| DataError::header("the header row is not valid UTF-8"))?;
    let expected = [REPORTED_COLUMN, REPORTED_VALUE, label_name];
    let mut seen = HashSet::new();
    let find = |name: &str| names.iter().position(|n| *n == name);
    let wrong = names.len() != 3
        || !names
            .iter()
            .all(|n| seen.insert(*n) && expected.contains(n));
    if wrong {
        return Err(DataError::header(format!(
            "a sampled-column report file has exactly the columns {REPORTED_COLUMN:?}, {REPORTED_VALUE:?} and the label {label_name:?} (privboost randomize --protocol sampled-column writes it)"
        )));
    }
    let (ic, iv, il) = (
        find(REPORTED_COLUMN).unwrap_or(0),
        find(REPORTED_VALUE).unwrap_or(1),
        find(label_name).unwrap_or(2),
    );
    let n_literals = encoder.n_literals();
    let d = protocol.n_features();
    // Feature index of each feature column's name.
    let by_name: std::collections::HashMap<&str, usize> = (0..d)
        .map(|f| {
            (
                encoder.schema().columns[protocol.schema_column(f)].name(),
                f,
            )
        })
        .collect();
    let mut bits = BitMatrixBuilder::new(n_literals + d);
    // Binary: the reported label as the label bit; a class list: its index.
    let multiclass = matches!(encoder.schema().task(), Task::Multiclass { .. });
    let mut labels = BitVec::new();
    let mut classes: Vec<u16> = Vec::new();
    let mut errors = Vec::new();
    let mut skipped = 0;
    let mut record = csv::ByteRecord::new();
    let mut active = Vec::new();
    let mut row = 0;
    loop {
        match read_record(&mut csv, &mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                let bound = csv.get_ref();
                if bound.tripped() {
                    return Err(DataError::row(
                        row + 1,
                        format!("the record is longer than {} bytes", bound.max()),
                    ));
                }
                return Err(csv_error(e, row + 1));
            }
        }
        row += 1;
        let result = (|| -> Result<u16, DataError> {
            if record.len() != 3 {
                return Err(DataError::row(
                    row,
                    format!("expected 3 fields, found {}", record.len()),
                ));
            }
            let text = |i: usize, name: &str| {
                std::str::from_utf8(&record[i])
                    .map(str::trim)
                    .map_err(|_| DataError::cell(row, name, "not valid UTF-8"))
            };
            let column = text(ic, REPORTED_COLUMN)?;
            let f = *by_name.get(column).ok_or_else(|| {
                DataError::cell(
                    row,
                    REPORTED_COLUMN,
                    "not the name of a feature column of the schema",
                )
            })?;
            let c = protocol.schema_column(f);
            let value = text(iv, REPORTED_VALUE)?;
            // The value is read as the all-columns rows are: the column's
            // encoder, then its domain (a value outside it is refused).
            protocol
                .domains()
                .value_index(encoder, c, value, row, &mut active)?;
            active.push((n_literals + f) as u32);
            let label = text(il, label_name)?;
            if multiclass {
                encoder.encode_class(label, row)
            } else {
                encoder.encode_label(label, row).map(u16::from)
            }
        })();
        match result {
            Ok(y) => {
                bits.push_row(&active);
                if multiclass {
                    classes.push(y);
                } else {
                    labels.push(y == 1);
                }
            }
            Err(e) => {
                skipped += 1;
                if errors.len() < max_errors {
                    errors.push(e.at_line(record.position().map(csv::Position::line)));
                }
                if options.on_bad_row == OnBadRow::Refuse && errors.len() == max_errors {
                    break;
                }
            }
        }
    }
    if options.on_bad_row == OnBadRow::Refuse && !errors.is_empty() {
        return Err(if errors.len() == 1 {
            errors.swap_remove(0)
        } else {
            DataError::Rows { errors }
        });
    }
    if bits.n_rows() == 0 {
        return Err(DataError::NoRows);
    }
    Ok(ReadReport {
        dataset: Dataset {
            features: bits.finish(),
            labels: (!multiclass).then_some(labels),
            targets: None,
            classes: multiclass.then_some(classes),
            one_hot_groups: encoder.one_hot_groups().to_vec(),
        },
        skipped,
        errors,
        unit_dropped: 0,
        units: None,
    })
}

/// A `csv` error as ours, without its text (which could quote data).
fn csv_error(e: csv::Error, row: usize) -> DataError {
    let line = e.position().map(csv::Position::line);
    match e.into_kind() {
        csv::ErrorKind::Io(io) => DataError::Io(io),
        _ if row == 0 => DataError::header("malformed header row"),
        _ => DataError::row(row, "malformed CSV record").at_line(line),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::data::LabelMode;
    use crate::local_dp::randomized_response::{keep_probability, other_probability};
    use crate::privacy::testutil::chi_square_p_value;

    /// Intervals, thresholds with missing, a categorical with missing, an
    /// ignored column and a boolean (whose `false` lights no literal).
    pub(crate) fn schema() -> Schema {
        Schema::from_json(
            r#"{
              "label": {"column": "y", "positive": "yes", "negative": "no"},
              "columns": [
                {"name": "age", "type": "numeric", "min": 0, "max": 100, "bins": 2},
                {"name": "hours", "type": "numeric", "min": 0, "max": 90, "thresholds": [30, 60], "encoding": "thresholds", "missing": ["?"]},
                {"name": "work", "type": "categorical", "categories": ["a", "b"], "missing": ["NA"]},
                {"name": "id", "type": "ignore"},
                {"name": "smoker", "type": "boolean"}
              ]
            }"#,
        )
        .unwrap()
    }

    /// The cells of one row: age 70, hours missing, work b, id, smoker false.
    const ROW: [&str; 5] = ["70", "?", "b", "123", "false"];

    fn reports(seed: u64, epsilon: f64, row: &[&str], label: &str, draws: usize) -> Vec<Report> {
        let schema = schema();
        let encoder = Encoder::new(&schema).unwrap();
        let protocol = SampledColumn::new(&schema, epsilon).unwrap();
        let mut rng = NoiseRng::seeded(seed);
        (0..draws)
            .map(|i| {
                protocol
                    .report(&mut rng, &encoder, |c| row[c], label, i + 1)
                    .unwrap()
            })
            .collect()
    }

    /// The pair RR's probabilities over `2 k` pairs when the truth is `pair`.
    fn pair_probabilities(k: u32, epsilon: f64, pair: u32) -> Vec<f64> {
        (0..2 * k)
            .map(|z| {
                if z == pair {
                    keep_probability(2 * k, epsilon)
                } else {
                    other_probability(2 * k, epsilon)
                }
            })
            .collect()
    }

    /// Given the drawn column, the reported pair follows k-ary RR over the
    /// column's `2 k` (value, label) pairs at the FULL epsilon (chi-square,
    /// p > 1e-4), for every column: age (2 intervals: 4 pairs), hours
    /// (3 intervals + missing: 8), work (2 + missing: 6), smoker (4).
    #[test]
    fn the_pair_follows_rr_at_the_full_epsilon() {
        let epsilon = 1.0;
        let all = reports(1, epsilon, &ROW, "no", 200_000);
        // (k, true value index) per feature column, label "no" = 1.
        let truth = [(2u32, 1u32), (4, 3), (3, 1), (2, 0)];
        for (f, &(k, v)) in truth.iter().enumerate() {
            let mut counts = vec![0u64; 2 * k as usize];
            for r in all.iter().filter(|r| r.feature == f) {
                counts[r.pair as usize] += 1;
            }
            let expected = pair_probabilities(k, epsilon, pair_index(v, 1, 2));
            let p = chi_square_p_value(&counts, &expected);
            assert!(p > 1e-4, "column {f}: p = {p}, counts {counts:?}");
        }
    }

    /// k classes: the pair is RR over the column's `3 k` (value, class)
    /// pairs at the full epsilon (chi-square, p > 1e-4, every column; the
    /// row's class "hi" is index 2), and an RR whose keep probability is
    /// that of the binary width `2 k` is detected (p < 1e-10).
    #[test]
    fn the_pair_over_k_classes_follows_rr_at_the_full_epsilon() {
        let text = serde_json::to_string(&schema()).unwrap().replace(
            r#""positive":"yes","negative":"no""#,
            r#""classes":["lo","mid","hi"]"#,
        );
        let schema = Schema::from_json(&text).unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        let epsilon = 1.0;
        let protocol = SampledColumn::new(&schema, epsilon).unwrap();
        let mut rng = NoiseRng::seeded(11);
        let all: Vec<Report> = (0..200_000)
            .map(|i| {
                protocol
                    .report(&mut rng, &encoder, |c| ROW[c], "hi", i + 1)
                    .unwrap()
            })
            .collect();
        let expected = |width: u32, k: u32, pair: u32| -> Vec<f64> {
            let keep = keep_probability(width, epsilon);
            let other = (1.0 - keep) / f64::from(3 * k - 1);
            (0..3 * k)
                .map(|z| if z == pair { keep } else { other })
                .collect()
        };
        let truth = [(2u32, 1u32), (4, 3), (3, 1), (2, 0)];
        for (f, &(k, v)) in truth.iter().enumerate() {
            assert_eq!(protocol.rr(f).k(), 3 * k);
            let mut counts = vec![0u64; 3 * k as usize];
            for r in all.iter().filter(|r| r.feature == f) {
                counts[r.pair as usize] += 1;
            }
            let pair = pair_index(v, 2, 3);
            let p = chi_square_p_value(&counts, &expected(3 * k, k, pair));
            assert!(p > 1e-4, "column {f}: p = {p}, counts {counts:?}");
            let p = chi_square_p_value(&counts, &expected(2 * k, k, pair));
            assert!(p < 1e-10, "column {f}: the binary width passed, p = {p}");
        }
    }

    /// A protocol that ran the pair RR at twice or half the epsilon would
    /// be caught by the same test (p < 1e-10): the test can fail.
    #[test]
    fn a_wrong_epsilon_of_the_pair_is_detected() {
        let epsilon = 1.0;
        let (f, k, pair) = (2usize, 3u32, pair_index(1, 1, 2));
        let histogram = |seed: u64, eps: f64| {
            let mut counts = vec![0u64; 2 * k as usize];
            for r in reports(seed, eps, &ROW, "no", 200_000)
                .iter()
                .filter(|r| r.feature == f)
            {
                counts[r.pair as usize] += 1;
            }
            counts
        };
        let doubled = histogram(2, 2.0 * epsilon);
        let p = chi_square_p_value(&doubled, &pair_probabilities(k, epsilon, pair));
        assert!(p < 1e-10, "RR at 2 eps passed as eps: p = {p}");
        let halved = histogram(3, epsilon / 2.0);
        let p = chi_square_p_value(&halved, &pair_probabilities(k, epsilon, pair));
        assert!(p < 1e-10, "RR at eps / 2 passed as eps: p = {p}");
    }

    /// The column is drawn uniformly over the 4 feature columns (the ignored
    /// one is never drawn), whatever the row: two different rows give the
    /// same uniform draw (chi-square, p > 1e-4). A draw 5% off uniform
    /// would be detected (p < 1e-10).
    #[test]
    fn the_column_draw_is_uniform_and_ignores_the_row() {
        let other_row = ["5", "80", "a", "9", "true"];
        for (seed, row, label) in [(4, ROW, "no"), (5, other_row, "yes")] {
            let mut counts = vec![0u64; 4];
            for r in reports(seed, 0.5, &row, label, 100_000) {
                counts[r.feature] += 1;
            }
            let p = chi_square_p_value(&counts, &[0.25; 4]);
            assert!(p > 1e-4, "p = {p}, counts {counts:?}");
            let skewed = [0.2625, 0.2375, 0.25, 0.25];
            let p = chi_square_p_value(&counts, &skewed);
            assert!(p < 1e-10, "a 5% skew passed: p = {p}");
        }
    }

    /// Report lines written by `cells` are read and stored, then decoded
    /// back to the same reports: the marker says which column a row
    /// reported, so a boolean `false` (no literal) and a randomized missing
    /// token are read as themselves, never as "not reported".
    #[test]
    fn reports_round_trip_through_the_file_and_the_stored_rows() {
        let schema = schema();
        let encoder = Encoder::new(&schema).unwrap();
        let protocol = SampledColumn::new(&schema, 1.0).unwrap();
        let mut all = Vec::new();
        for f in 0..protocol.n_features() {
            for pair in 0..2 * protocol.k(f) {
                all.push(Report { feature: f, pair });
            }
        }
        let mut csv = format!("{REPORTED_VALUE},y,{REPORTED_COLUMN}\n");
        for r in &all {
            let [c, v, y] = protocol.cells(&encoder, *r);
            csv.push_str(&format!("{v},{y},{c}\n"));
        }
        assert!(csv.contains("?,no,hours"), "{csv}");
        assert!(csv.contains("false,yes,smoker"), "{csv}");
        let read = read_reports(
            csv.as_bytes(),
            &encoder,
            &protocol,
            &ReadOptions::new(LabelMode::Required),
        )
        .unwrap();
        let data = read.dataset;
        assert_eq!(data.n_literals(), encoder.n_literals() + 4);
        assert_eq!(protocol.decode_reports(&encoder, &data).unwrap(), all);
        // A smoker report with `false` lights only its marker.
        let i = all
            .iter()
            .position(|r| r.feature == 3 && r.pair == pair_index(0, 0, 2))
            .unwrap();
        assert_eq!(
            data.features.row_active(i),
            [(encoder.n_literals() + 3) as u32]
        );
    }

    /// Bad files and lines are refused, naming the row and column but never
    /// the cell; skipping keeps the good lines.
    #[test]
    fn refuses_bad_report_files() {
        let schema = schema();
        let encoder = Encoder::new(&schema).unwrap();
        let protocol = SampledColumn::new(&schema, 1.0).unwrap();
        let read = |text: &str, skip: bool| {
            let mut options = ReadOptions::new(LabelMode::Required);
            options.max_errors = 10;
            if skip {
                options.on_bad_row = OnBadRow::Skip;
            }
            read_reports(text.as_bytes(), &encoder, &protocol, &options)
        };
        for header in [
            "age,hours,work,id,smoker,y",
            "reported_column,reported_value",
            "reported_column,reported_value,y,extra",
            "reported_column,reported_column,y",
        ] {
            let e = read(&format!("{header}\nage,10,yes\n"), false).unwrap_err();
            assert!(matches!(e, DataError::Header { .. }), "{header}: {e}");
        }
        let bad = "reported_column,reported_value,y\n\
                   secretcolumn,10,yes\n\
                   id,10,yes\n\
                   work,secretvalue,yes\n\
                   age,abc,no\n\
                   age,10,maybe\n\
                   age,10\n\
                   age,10,yes\n";
        let e = read(bad, false).unwrap_err().to_string();
        for row in 1..=6 {
            assert!(e.contains(&format!("row {row}")), "{e}");
        }
        assert!(!e.contains("secret") && !e.contains("maybe"), "{e}");
        let skipped = read(bad, true).unwrap();
        assert_eq!((skipped.dataset.n_rows(), skipped.skipped), (1, 6));
        assert!(matches!(
            read("reported_column,reported_value,y\n", false),
            Err(DataError::NoRows)
        ));
        // The label may not take a report column's name.
        let clash = Schema::from_json(
            r#"{"label": {"column": "reported_value", "positive": "1"},
                "columns": [{"name": "a", "type": "boolean"}]}"#,
        )
        .unwrap();
        assert!(SampledColumn::new(&clash, 1.0).is_err());
    }

    /// Stored rows that are not reports of this schema are refused when
    /// decoded, not misread.
    #[test]
    fn decoding_refuses_rows_that_are_not_reports() {
        let schema = schema();
        let encoder = Encoder::new(&schema).unwrap();
        let protocol = SampledColumn::new(&schema, 1.0).unwrap();
        let rows = crate::data::read_csv(
            "age,hours,work,id,smoker,y\n70,?,b,1,false,no\n".as_bytes(),
            &encoder,
            LabelMode::Required,
        )
        .unwrap();
        assert!(protocol.decode_reports(&encoder, &rows).is_err());
        let n = encoder.n_literals();
        for active in [vec![], vec![n as u32, n as u32 + 1], vec![0, 1, n as u32]] {
            let mut b = BitMatrixBuilder::new(n + 4);
            b.push_row(&active);
            let data = Dataset {
                features: b.finish(),
                labels: Some(BitVec::from_bools(&[true])),
                targets: None,
                classes: None,
                one_hot_groups: vec![],
            };
            assert!(
                protocol.decode_reports(&encoder, &data).is_err(),
                "{active:?}"
            );
        }
    }
}
