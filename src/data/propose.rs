//! Owner-side schema proposal: draft a [`Schema`] from a CSV for the owner to edit.
//!
//! This is the one place in the data layer that *looks at* private values to decide
//! something, so it is an owner-side tool only (SPEC §3): the proposed bounds and
//! category lists are derived from the rows and are not differentially private. The
//! owner reviews and edits the draft (typically widening bounds to public ranges and
//! adding categories from a public codebook) before declaring it; the service never
//! runs this on an analyst's request.

use std::collections::BTreeSet;
use std::io::Read;

use super::encode::parse_bool;
use super::error::DataError;
use super::schema::{
    Bins, BooleanColumn, CategoricalColumn, Column, IgnoreColumn, LabelSpec, NumericColumn,
    NumericEncoding, Schema, UnknownPolicy,
};

/// Tokens taken to mean "missing" when proposing (compared after trimming).
const MISSING_TOKENS: [&str; 4] = ["?", "", "NA", "N/A"];

/// A numeric column with at most this many distinct values is proposed as categorical
/// (e.g. a 1..5 rating), since bins would split few values unevenly.
const MAX_NUMERIC_CATEGORIES: usize = 10;

/// Bins proposed for numeric columns (the paper's choice, SPEC §3).
const PROPOSED_BINS: u32 = 10;

/// What has been seen in one column.
#[derive(Debug)]
struct ColumnStats {
    name: String,
    /// Distinct non-missing values.
    distinct: BTreeSet<String>,
    /// Missing tokens that occurred.
    missing: BTreeSet<String>,
    all_bool: bool,
    all_numeric: bool,
    min: f64,
    max: f64,
}

impl ColumnStats {
    fn new(name: &str) -> ColumnStats {
        ColumnStats {
            name: name.to_owned(),
            distinct: BTreeSet::new(),
            missing: BTreeSet::new(),
            all_bool: true,
            all_numeric: true,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }

    fn observe(&mut self, value: &str) {
        if MISSING_TOKENS.contains(&value) {
            if !self.missing.contains(value) {
                self.missing.insert(value.to_owned());
            }
            return;
        }
        if !self.distinct.contains(value) {
            self.distinct.insert(value.to_owned());
        }
        self.all_bool &= parse_bool(value).is_some();
        match value.parse::<f64>() {
            Ok(x) if x.is_finite() => {
                self.min = self.min.min(x);
                self.max = self.max.max(x);
            }
            _ => self.all_numeric = false,
        }
    }

    fn propose(self) -> Column {
        let name = self.name;
        let missing = (!self.missing.is_empty()).then(|| self.missing.into_iter().collect());
        if self.distinct.is_empty() {
            // Nothing but missing values: nothing to learn from.
            return Column::Ignore(IgnoreColumn { name });
        }
        if self.all_bool {
            return Column::Boolean(BooleanColumn { name, missing });
        }
        if self.all_numeric && self.distinct.len() > MAX_NUMERIC_CATEGORIES {
            let (min, max) = nice_bounds(self.min, self.max);
            return Column::Numeric(NumericColumn {
                name,
                min,
                max,
                thresholds: None,
                bins: Some(Bins::Equal(PROPOSED_BINS)),
                encoding: NumericEncoding::Intervals,
                missing,
            });
        }
        let mut categories: Vec<String> = self.distinct.into_iter().collect();
        if self.all_numeric {
            // Parsed above, so the unwraps cannot fail; sort 2 before 10.
            categories.sort_by(|a, b| {
                let (x, y) = (
                    a.parse::<f64>().unwrap_or(0.0),
                    b.parse::<f64>().unwrap_or(0.0),
                );
                x.total_cmp(&y)
            });
        }
        Column::Categorical(CategoricalColumn {
            name,
            categories,
            missing,
            unknown: UnknownPolicy::Error,
        })
    }
}

/// Propose a schema from a CSV with a header row, for the data owner to edit.
///
/// **Owner-side only: this reads the private rows** and the result (bounds, category
/// lists) depends on them and is not differentially private. The owner reviews the
/// draft (widening bounds to public ranges, adding categories from a public codebook)
/// before declaring it.
///
/// Heuristic, per column other than the label: the tokens `?`, empty, `NA` and `N/A`
/// count as missing (declared as `missing` when seen); a column whose other values
/// are all booleans becomes `boolean`; all numbers with more than 10 distinct values
/// become `numeric` with `bins: 10` and `min`/`max` rounded outward to two
/// significant digits of the larger magnitude (17..90 stays 17..90, 12285..1484705
/// becomes 0..1500000); all numbers with at most 10 distinct values become
/// `categorical` (sorted numerically); anything else becomes `categorical` with the
/// distinct values sorted. A column of free text (ids, names) thus gets one category
/// per distinct value, which the owner should change to `ignore`. A column with only
/// missing values becomes `ignore`.
///
/// The label column must be in the header and `positive` must occur in it; if exactly
/// one other label value occurs it is declared as `negative`.
pub fn propose_schema<R: Read>(
    reader: R,
    label: &str,
    positive: &str,
) -> Result<Schema, DataError> {
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(reader);
    let header = csv.byte_headers().map_err(csv_error)?.clone();
    if header.is_empty() {
        return Err(DataError::Empty);
    }
    let names = header
        .iter()
        .map(|f| std::str::from_utf8(f).map(str::trim))
        .collect::<Result<Vec<&str>, _>>()
        .map_err(|_| DataError::header("the header row is not valid UTF-8"))?;
    let label_at = names.iter().position(|n| *n == label).ok_or_else(|| {
        DataError::header(format!("the label column {label:?} is not in the CSV"))
    })?;
    let mut stats: Vec<ColumnStats> = names.iter().map(|n| ColumnStats::new(n)).collect();
    let mut labels = BTreeSet::new();
    let mut record = csv::ByteRecord::new();
    let mut row = 0;
    while csv.read_byte_record(&mut record).map_err(csv_error)? {
        row += 1;
        if record.len() != names.len() {
            return Err(DataError::row(
                row,
                format!("expected {} fields, found {}", names.len(), record.len()),
            ));
        }
        for (i, (bytes, s)) in record.iter().zip(stats.iter_mut()).enumerate() {
            let value = std::str::from_utf8(bytes)
                .map_err(|_| DataError::cell(row, names[i], "not valid UTF-8"))?
                .trim();
            if i == label_at {
                if !value.is_empty() && !labels.contains(value) {
                    labels.insert(value.to_owned());
                }
            } else {
                s.observe(value);
            }
        }
    }
    if row == 0 {
        return Err(DataError::NoRows);
    }
    if !labels.contains(positive) {
        return Err(DataError::schema(format!(
            "label: the positive value {positive:?} does not occur in column {label:?}"
        )));
    }
    labels.remove(positive);
    let negative = (labels.len() == 1).then(|| labels.pop_first()).flatten();
    let columns = stats
        .into_iter()
        .enumerate()
        .filter(|&(i, _)| i != label_at)
        .map(|(_, s)| s.propose())
        .collect();
    let schema = Schema {
        label: LabelSpec {
            column: label.to_owned(),
            kind: None,
            min: None,
            max: None,
            positive: positive.to_owned(),
            negative,
            classes: None,
        },
        columns,
        privacy_unit: None,
    };
    schema.validate()?;
    Ok(schema)
}

fn csv_error(e: csv::Error) -> DataError {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => DataError::Io(io),
        _ => DataError::header("malformed CSV"),
    }
}

/// `[lo, hi]` widened to multiples of a tenth of the larger magnitude's power of ten
/// (two significant digits), so the declared bounds are round numbers.
fn nice_bounds(lo: f64, hi: f64) -> (f64, f64) {
    let magnitude = lo.abs().max(hi.abs());
    if magnitude == 0.0 {
        return (-1.0, 1.0);
    }
    let step = 10f64.powi(magnitude.log10().floor() as i32 - 1);
    let round = |x: f64| -> f64 {
        // Drop the float noise of `k * step` (format/parse of a finite float).
        format!("{x:.11e}").parse().unwrap_or(x)
    };
    let a = round((lo / step).floor() * step).min(lo);
    let mut b = round((hi / step).ceil() * step).max(hi);
    if a >= b {
        b = round(a + step);
    }
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "\
id,age,city,smoker,rating,income,note
1,17,Bern,yes,3,high,?
2,23,Basel,no,4,low,
3,35,?,y,5,low,NA
4,41,Bern,n,3,high,N/A
5,52,Zurich,NA,4,low,?
6,60,Basel,no,3,low,?
7,64,Bern,yes,1,high,
8,70,Bern,no,2,low,?
9,75,Basel,no,3,low,?
10,88,Bern,no,2,low,?
11,90,Bern,no,2,low,?
";

    #[test]
    fn proposes_types_bounds_and_missing() {
        let s = propose_schema(CSV.as_bytes(), "income", "high").unwrap();
        assert_eq!(s.label.negative.as_deref(), Some("low"));
        assert_eq!(s.columns.len(), 6);
        match &s.columns[0] {
            Column::Numeric(c) => {
                assert_eq!((c.min, c.max, c.bins), (1.0, 11.0, Some(Bins::Equal(10))))
            }
            other => panic!("id: {other:?}"),
        }
        match &s.columns[1] {
            Column::Numeric(c) => assert_eq!((c.min, c.max, c.missing.clone()), (17.0, 90.0, None)),
            other => panic!("age: {other:?}"),
        }
        match &s.columns[2] {
            Column::Categorical(c) => {
                assert_eq!(c.categories, ["Basel", "Bern", "Zurich"]);
                assert_eq!(c.missing.as_deref(), Some(&["?".to_owned()][..]));
            }
            other => panic!("city: {other:?}"),
        }
        assert_eq!(
            s.columns[3],
            Column::Boolean(BooleanColumn {
                name: "smoker".into(),
                missing: Some(vec!["NA".into()])
            })
        );
        match &s.columns[4] {
            Column::Categorical(c) => assert_eq!(c.categories, ["1", "2", "3", "4", "5"]),
            other => panic!("rating: {other:?}"),
        }
        assert_eq!(
            s.columns[5],
            Column::Ignore(IgnoreColumn {
                name: "note".into()
            })
        );
        // The proposal is a valid schema that reads its own file.
        let e = crate::data::Encoder::new(&s).unwrap();
        let d =
            crate::data::read_csv(CSV.as_bytes(), &e, crate::data::LabelMode::Required).unwrap();
        assert_eq!(d.labels.unwrap().count_ones(), 3);
    }

    #[test]
    fn label_must_exist_and_positive_occur() {
        let e = propose_schema(CSV.as_bytes(), "salary", "high").unwrap_err();
        assert!(
            e.to_string()
                .contains(r#"label column "salary" is not in the CSV"#),
            "{e}"
        );
        let e = propose_schema(CSV.as_bytes(), "income", "huge").unwrap_err();
        assert!(e.to_string().contains("does not occur"), "{e}");
        assert!(matches!(
            propose_schema("".as_bytes(), "y", "1"),
            Err(DataError::Empty)
        ));
        assert!(matches!(
            propose_schema("y\n".as_bytes(), "y", "1"),
            Err(DataError::NoRows)
        ));
    }

    #[test]
    fn nice_bounds_round_outward() {
        assert_eq!(nice_bounds(17.0, 90.0), (17.0, 90.0));
        assert_eq!(nice_bounds(12285.0, 1484705.0), (0.0, 1500000.0));
        assert_eq!(nice_bounds(0.0008948, 0.02984), (0.0, 0.03));
        assert_eq!(nice_bounds(6.981, 28.11), (6.0, 29.0));
        assert_eq!(nice_bounds(-3.5, 2.0), (-3.5, 2.0));
        assert_eq!(nice_bounds(143.5, 2501.0), (100.0, 2600.0));
    }
}
