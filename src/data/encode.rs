//! The encoder: a validated schema's literal list, and raw values -> active literals.
//!
//! One [`Encoder`] serves both the CSV reader (training data, [`super::reader`]) and
//! prediction requests ([`Encoder::encode_json_row`]), so that a model sees the same
//! literals at training and prediction time. Encoding a row pushes the indices of its
//! true literals column by column, so they come out ascending.
//!
//! The value rules are documented on [`Encoder`].

use std::collections::HashMap;
use std::ops::Range;

use serde_json::{Map, Value};

use super::cell::{Cell, Row};
use super::error::DataError;
use super::literal::Literal;
use super::schema::{Column, NumericEncoding, Schema, Task, UnknownPolicy};

mod columns;

pub use columns::{ColumnError, LiteralRows};

/// Maps keyed by column names (and [`CategoryIndex`], keyed by category).
/// Looked up once per request cell (hundreds of thousands per batch), so
/// with a fast hash; keyed per process (foldhash's random state), and the
/// keys come from the schema alone, so a request can only look up, never
/// add colliding keys.
type NameMap<V> = HashMap<String, V, foldhash::fast::RandomState>;

/// A categorical column's values -> literals: its categories, and its
/// missing tokens to its `is missing` literal, so that one lookup decides.
/// Keyed by bytes, so that a raw field (CSV, a binary tensor's element) is
/// looked up before any UTF-8 check: a key is a `String`, so a field equal
/// to one is valid UTF-8 ([`Encoder::encode_field`]).
///
/// Values of up to 7 bytes (most categories: codes, short words) are
/// looked up as one integer, their bytes and length packed ([`pack`]): a
/// cheaper hash and compare than a byte string's, for a lookup made once
/// per request cell.
#[derive(Debug, Clone, Default)]
struct CategoryIndex {
    short: HashMap<u64, u32, foldhash::fast::RandomState>,
    long: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
}

/// Up to 7 bytes and their length as one integer (distinct for distinct
/// strings: the length is in the top byte), else `None`.
#[inline]
fn pack(value: &[u8]) -> Option<u64> {
    let n = value.len();
    let word = match n {
        0 => 0,
        // Bytes 0, n/2 and n-1 cover 1 to 3 bytes (some twice, in place).
        1..=3 => {
            u64::from(value[0])
                | u64::from(value[n / 2]) << (8 * (n / 2))
                | u64::from(value[n - 1]) << (8 * (n - 1))
        }
        // The first and the last four bytes cover 4 to 7 (overlapping in place).
        4..=7 => {
            let first = u32::from_le_bytes([value[0], value[1], value[2], value[3]]);
            let last = u32::from_le_bytes([value[n - 4], value[n - 3], value[n - 2], value[n - 1]]);
            u64::from(first) | u64::from(last) << (8 * (n - 4))
        }
        _ => return None,
    };
    Some(word | (n as u64) << 56)
}

impl CategoryIndex {
    fn insert(&mut self, value: &str, literal: u32) {
        match pack(value.as_bytes()) {
            Some(key) => self.short.insert(key, literal),
            None => self.long.insert(value.as_bytes().into(), literal),
        };
    }

    #[inline]
    fn get(&self, value: &[u8]) -> Option<u32> {
        match pack(value) {
            Some(key) => self.short.get(&key),
            None => self.long.get(value),
        }
        .copied()
    }
}

/// Turns raw rows into literals.
///
/// Literals are numbered in schema column order; within a column: the value literals
/// (intervals, thresholds or categories in declared order, or the boolean), then
/// `is other`, then `is missing`.
///
/// Value rules (SPEC §3):
/// - every value is trimmed of surrounding whitespace first;
/// - a value equal to a declared missing token gives only the `is missing` literal;
/// - numbers outside `[min, max]` are clamped: the bounds are public, so clamping
///   depends on nothing private and costs no privacy; NaN, infinities and unparsable
///   numbers are errors;
/// - a value equal to a cut point `c` belongs to the interval `(.., c]` and satisfies
///   `x <= c`;
/// - errors name the row and the column, never the value.
#[derive(Debug, Clone)]
pub struct Encoder {
    /// The validated schema (kept for the reader's header check and for models).
    schema: Schema,
    literals: Vec<Literal>,
    feature_names: Vec<String>,
    /// One codec per feature column, in `feature_names` order.
    codecs: Vec<Codec>,
    /// Column name -> index into `codecs`, or `None` for an ignored column.
    by_name: NameMap<Option<usize>>,
    /// See [`Encoder::one_hot_groups`].
    one_hot_groups: Vec<Range<usize>>,
    /// A multiclass label's class name -> index in the schema's list
    /// (empty for binary and regression labels).
    class_index: HashMap<String, u16>,
}

/// How one feature column's values become literals.
#[derive(Debug, Clone)]
struct Codec {
    name: String,
    /// Index of the column's first literal.
    first: u32,
    /// Declared missing tokens (empty if none).
    missing_tokens: Vec<String>,
    /// The `is missing` literal, if the column declares missing tokens.
    missing: Option<u32>,
    kind: CodecKind,
}

#[derive(Debug, Clone)]
enum CodecKind {
    Numeric {
        min: f64,
        max: f64,
        cuts: Vec<f64>,
        encoding: NumericEncoding,
        /// For equal-width cuts (`bins`): `1 / width`, to compute a value's
        /// interval instead of comparing it with every cut ([`interval`]).
        inverse_width: Option<f64>,
    },
    Categorical {
        /// Category -> its literal; each missing token -> the `is missing`
        /// literal (one lookup decides both).
        index: CategoryIndex,
        unknown: UnknownPolicy,
        /// The `is other` literal when `unknown` is `Other`.
        other: Option<u32>,
    },
    Boolean,
}

impl Codec {
    /// Push the literals of the finite number `x`, clamped to the column's
    /// public bounds, if this is a numeric column (true); else push nothing
    /// (false).
    fn push_number(&self, x: f64, active: &mut Vec<u32>) -> bool {
        let CodecKind::Numeric {
            min,
            max,
            cuts,
            encoding,
            inverse_width,
        } = &self.kind
        else {
            return false;
        };
        let k = interval(x.clamp(*min, *max), *min, cuts, *inverse_width);
        push_numeric(self.first, k, cuts.len(), *encoding, active);
        true
    }
}

impl Encoder {
    /// Build from a schema (validated here, so an unchecked schema cannot be used).
    pub fn new(schema: &Schema) -> Result<Encoder, DataError> {
        schema.validate()?;
        // Validation capped the count (MAX_LITERALS), so this is a bounded allocation.
        let mut literals = Vec::with_capacity(schema.n_literals());
        let mut feature_names = Vec::new();
        let mut codecs = Vec::new();
        let mut by_name = NameMap::default();
        let mut one_hot_groups = Vec::new();
        for column in &schema.columns {
            if !column.is_feature() {
                by_name.insert(column.name().to_owned(), None);
                continue;
            }
            let f = feature_names.len();
            let name = column.name();
            let first = literal_index(literals.len())?;
            let kind = match column {
                Column::Numeric(c) => {
                    let cuts = c.cut_points()?;
                    literals.extend(match c.encoding {
                        NumericEncoding::Intervals => Literal::intervals(f, name, &cuts),
                        NumericEncoding::Thresholds => Literal::thresholds(f, name, &cuts),
                    });
                    CodecKind::Numeric {
                        min: c.min,
                        max: c.max,
                        inverse_width: equal_width_inverse(c.min, c.max, &cuts),
                        cuts,
                        encoding: c.encoding,
                    }
                }
                Column::Categorical(c) => {
                    let mut index = CategoryIndex::default();
                    for v in &c.categories {
                        index.insert(v, literal_index(literals.len())?);
                        literals.push(Literal::category(f, name, v));
                    }
                    let other = if c.unknown == UnknownPolicy::Other {
                        literals.push(Literal::is(f, name, "other"));
                        Some(literal_index(literals.len() - 1)?)
                    } else {
                        None
                    };
                    CodecKind::Categorical {
                        index,
                        unknown: c.unknown,
                        other,
                    }
                }
                Column::Boolean(_) => {
                    literals.push(Literal::boolean(f, name));
                    CodecKind::Boolean
                }
                Column::Ignore(_) => unreachable!("ignored columns were skipped above"),
            };
            let missing_tokens = column.missing().map(<[String]>::to_vec).unwrap_or_default();
            let missing = if missing_tokens.is_empty() {
                None
            } else {
                literals.push(Literal::is(f, name, "missing"));
                Some(literal_index(literals.len() - 1)?)
            };
            let mut kind = kind;
            if let (CodecKind::Categorical { index, .. }, Some(lit)) = (&mut kind, missing) {
                // (Validation refuses a token that is also a category.)
                for token in &missing_tokens {
                    index.insert(token, lit);
                }
            }
            // Which columns set exactly one of their literals in every encoded
            // row (see `encode_cell`): intervals (clamping keeps every number
            // in one interval) and categories, each with their `is other` and
            // `is missing` literals. Thresholds set several, a boolean none
            // when false.
            let one_hot = match &kind {
                CodecKind::Numeric { encoding, .. } => *encoding == NumericEncoding::Intervals,
                CodecKind::Categorical { .. } => true,
                CodecKind::Boolean => false,
            };
            if one_hot && literals.len() > first as usize {
                one_hot_groups.push(first as usize..literals.len());
            }
            codecs.push(Codec {
                name: name.to_owned(),
                first,
                missing_tokens,
                missing,
                kind,
            });
            feature_names.push(name.to_owned());
            by_name.insert(name.to_owned(), Some(f));
        }
        // Validation capped the list at MAX_CLASSES (< 2^16), so each index fits.
        let class_index = schema
            .class_names()
            .iter()
            .enumerate()
            .map(|(i, c)| (c.clone(), i as u16))
            .collect();
        Ok(Encoder {
            schema: schema.clone(),
            literals,
            feature_names,
            codecs,
            by_name,
            one_hot_groups,
            class_index,
        })
    }

    /// The literal index ranges of the one-hot columns: every row the encoder
    /// accepts sets exactly one literal of each range. Derived from the
    /// schema alone (public), in column order; the learners use it to sum
    /// each range's literals in work that depends on n only
    /// ([`crate::data::Dataset::one_hot_groups`]).
    pub fn one_hot_groups(&self) -> &[Range<usize>] {
        &self.one_hot_groups
    }

    /// All literals, in index order.
    pub fn literals(&self) -> &[Literal] {
        &self.literals
    }

    /// Number of literals (d).
    pub fn n_literals(&self) -> usize {
        self.literals.len()
    }

    /// Names of the feature columns (the label column and ignored columns excluded).
    pub fn feature_names(&self) -> &[String] {
        &self.feature_names
    }

    /// The schema this encoder was built from.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Encode one JSON object keyed by column name (a prediction request row).
    ///
    /// Values may be numbers, strings, booleans or null; null means missing where the
    /// column declares missing tokens and is an error otherwise. Numbers and booleans
    /// are matched as their JSON text (`3`, `true`), so a categorical column declared
    /// with `"3"` accepts both `3` and `"3"`. The label and ignored columns may be
    /// present and are skipped; an unknown key or an absent feature column is an
    /// error. `row_number` is only used in errors. `active` is cleared and filled with
    /// the indices of the true literals, ascending.
    pub fn encode_json_row(
        &self,
        row: &Map<String, Value>,
        row_number: usize,
        active: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        self.encode_pairs(
            row.iter().map(|(k, v)| (k.as_str(), Cell::from(v))),
            row_number,
            active,
        )
    }

    /// [`Encoder::encode_json_row`] for a [`Row`] read from a request body
    /// (its values borrowed, no JSON map built).
    pub fn encode_row(
        &self,
        row: &Row<'_>,
        row_number: usize,
        active: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        self.encode_pairs(row.pairs().map(|(k, v)| (k, v.clone())), row_number, active)
    }

    /// The rules of [`Encoder::encode_json_row`] over (key, value) pairs
    /// (a repeated key: the last one counts).
    fn encode_pairs<'c>(
        &self,
        pairs: impl Iterator<Item = (&'c str, Cell<'c>)>,
        row_number: usize,
        active: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        active.clear();
        let mut values: Vec<Option<Cell<'c>>> = vec![None; self.codecs.len()];
        for (key, value) in pairs {
            match self.by_name.get(key) {
                Some(Some(f)) => values[*f] = Some(value),
                Some(None) => {}
                None if key == self.schema.label_column() => {}
                None => {
                    return Err(DataError::row(
                        row_number,
                        format!("unknown column {key:?} (not in the schema)"),
                    ));
                }
            }
        }
        for (f, (codec, value)) in self.codecs.iter().zip(&values).enumerate() {
            let value = value.as_ref().ok_or_else(|| {
                DataError::cell(row_number, &codec.name, "column is missing from the row")
            })?;
            self.encode_value(f, value, row_number, active)?;
        }
        Ok(())
    }

    /// Push the literals of feature `f` for one request value (the rules of
    /// [`Encoder::encode_json_row`]). A number in a numeric column without
    /// missing tokens is read as its value; anything else as its JSON text,
    /// trimmed (the same literals: a JSON number's text parses back to its
    /// value).
    pub fn encode_value(
        &self,
        f: usize,
        value: &Cell<'_>,
        row_number: usize,
        active: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        let codec = &self.codecs[f];
        if let Cell::Number(n) = value
            && codec.missing_tokens.is_empty()
            && let Some(x) = n.as_f64()
            && codec.push_number(x, active)
        {
            return Ok(());
        }
        match value {
            Cell::Null => self.encode_cell(f, None, row_number, active),
            // The raw field's way (its fast paths; the same literals as
            // `encode_cell` of the trimmed text, [`Encoder::encode_field`]).
            Cell::Text(s) => self.encode_field(f, s.as_bytes(), row_number, &codec.name, active),
            Cell::Number(n) => self.encode_cell(f, Some(&n.to_string()), row_number, active),
            Cell::Bool(b) => self.encode_cell(
                f,
                Some(if *b { "true" } else { "false" }),
                row_number,
                active,
            ),
            Cell::Nested => Err(DataError::cell(
                row_number,
                &codec.name,
                "expected a number, string, boolean or null",
            )),
        }
    }

    /// The feature index of a column, `Some(None)` for an ignored column, `None` if
    /// the schema does not declare it (the label is not declared here).
    pub(crate) fn column_role(&self, name: &str) -> Option<Option<usize>> {
        self.by_name.get(name).copied()
    }

    /// The index of feature `f`'s first literal.
    pub(crate) fn first_literal(&self, f: usize) -> u32 {
        self.codecs[f].first
    }

    /// Push the literals of feature `f` for one raw CSV field (not yet
    /// decoded or trimmed): what [`Encoder::encode_cell`] does with the
    /// field decoded as UTF-8 and trimmed, with the same literals and the
    /// same errors.
    ///
    /// Why a second entry point: the CSV reader calls this once per cell
    /// (200 M times for issue 13's 10 M-row table), and for a numeric cell
    /// written as a plain decimal (`42`, `-3.25`) it skips the UTF-8 check,
    /// the trim and the general float parser. Such a field is ASCII without
    /// whitespace, so decoding and trimming would leave it as it is, and
    /// [`plain_decimal`] returns exactly the value `str::parse` would. A
    /// categorical cell is looked up by its bytes (see [`CategoryIndex`]).
    /// Anything else goes the general way.
    #[inline]
    pub(crate) fn encode_field(
        &self,
        f: usize,
        raw: &[u8],
        row: usize,
        column: &str,
        active: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        let codec = &self.codecs[f];
        match &codec.kind {
            CodecKind::Numeric { .. } => {
                if let Some(x) = plain_decimal(raw)
                    && !codec.missing_tokens.iter().any(|t| t.as_bytes() == raw)
                    && codec.push_number(x, active)
                {
                    return Ok(());
                }
            }
            // A category or missing token is trimmed (schema validation), so
            // a field that equals one once ASCII whitespace is cut off is
            // valid UTF-8 and trims to it: the literal `encode_cell` gives.
            // Anything else (a miss, other whitespace) goes the general way.
            CodecKind::Categorical { index, .. } => {
                if let Some(lit) = index.get(raw.trim_ascii()) {
                    active.push(lit);
                    return Ok(());
                }
            }
            CodecKind::Boolean => {}
        }
        let value = std::str::from_utf8(raw)
            .map_err(|_| DataError::cell(row, column, "not valid UTF-8"))?
            .trim();
        self.encode_cell(f, Some(value), row, active)
    }

    /// Push the literals of feature `f` for one trimmed value (`None` = JSON null).
    #[inline]
    pub(crate) fn encode_cell(
        &self,
        f: usize,
        value: Option<&str>,
        row: usize,
        active: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        let codec = &self.codecs[f];
        let err = |message: &str| DataError::cell(row, &codec.name, message);
        let Some(value) = value else {
            let lit = codec
                .missing
                .ok_or_else(|| err("null value but the column declares no missing tokens"))?;
            active.push(lit);
            return Ok(());
        };
        // (A categorical column's index holds its missing tokens.)
        if let Some(lit) = codec.missing
            && !matches!(codec.kind, CodecKind::Categorical { .. })
            && codec.missing_tokens.iter().any(|t| t == value)
        {
            active.push(lit);
            return Ok(());
        }
        match &codec.kind {
            CodecKind::Numeric { .. } => {
                if value.is_empty() {
                    return Err(err("empty value (declare \"missing\" to allow it)"));
                }
                let x: f64 = value.parse().map_err(|_| err("not a number"))?;
                if !x.is_finite() {
                    return Err(err("not a finite number"));
                }
                codec.push_number(x, active);
            }
            CodecKind::Categorical {
                index,
                unknown,
                other,
            } => match (index.get(value.as_bytes()), unknown) {
                (Some(lit), _) => active.push(lit),
                (None, UnknownPolicy::Other) => {
                    active.push(other.expect("an Other column has an other literal"));
                }
                (None, UnknownPolicy::Missing) => {
                    // Validation requires missing tokens for this policy.
                    active.push(
                        codec
                            .missing
                            .expect("an unknown=missing column has a missing literal"),
                    );
                }
                (None, UnknownPolicy::Error) if value.is_empty() => {
                    return Err(err("empty value (declare \"missing\" to allow it)"));
                }
                (None, UnknownPolicy::Error) => {
                    return Err(err("unknown category (not in the schema)"));
                }
            },
            CodecKind::Boolean => match parse_bool(value) {
                Some(true) => active.push(codec.first),
                Some(false) => {}
                None if value.is_empty() => {
                    return Err(err("empty value (declare \"missing\" to allow it)"));
                }
                None => return Err(err("not a boolean (expected true/false, yes/no, 1/0)")),
            },
        }
        Ok(())
    }

    /// The label of one trimmed value: `true` for positive.
    /// A regression label: a finite number, clamped to the schema's public
    /// bounds (so that every learner's sensitivity argument can rely on them).
    /// The error names the row and column, never the value.
    pub(crate) fn encode_target(&self, value: &str, row: usize) -> Result<f64, DataError> {
        let label = &self.schema.label;
        let err = |message: &str| DataError::cell(row, &label.column, message);
        let Task::Regression { min, max } = self.schema.task() else {
            return Err(err("the schema's label is not numeric"));
        };
        if value.is_empty() {
            return Err(err("empty label"));
        }
        let x: f64 = value.parse().map_err(|_| err("label is not a number"))?;
        if !x.is_finite() {
            return Err(err("label is not a finite number"));
        }
        Ok(x.clamp(min, max))
    }

    /// A multiclass label's class index in the schema's list. A value
    /// outside the list is a row error that does not echo the value (like
    /// an unknown category).
    pub(crate) fn encode_class(&self, value: &str, row: usize) -> Result<u16, DataError> {
        let label = &self.schema.label;
        let err = |message: &str| DataError::cell(row, &label.column, message);
        if value.is_empty() {
            return Err(err("empty label"));
        }
        self.class_index
            .get(value)
            .copied()
            .ok_or_else(|| err("label is not one of the schema's classes"))
    }

    pub(crate) fn encode_label(&self, value: &str, row: usize) -> Result<bool, DataError> {
        let label = &self.schema.label;
        let err = |message: &str| DataError::cell(row, &label.column, message);
        if value.is_empty() {
            return Err(err("empty label"));
        }
        if value == label.positive {
            return Ok(true);
        }
        match &label.negative {
            Some(neg) if value != neg => {
                Err(err("label is neither the positive nor the negative value"))
            }
            _ => Ok(false),
        }
    }
}

/// Push the literals of a numeric value that lies above `k` of the column's
/// `n_cuts` cut points, the column's literals starting at `first`.
fn push_numeric(
    first: u32,
    k: u32,
    n_cuts: usize,
    encoding: NumericEncoding,
    active: &mut Vec<u32>,
) {
    match encoding {
        NumericEncoding::Intervals => active.push(first + k),
        NumericEncoding::Thresholds => active.extend(first + k..first + n_cuts as u32),
    }
}

/// The number of cut points strictly below `x` (already clamped to the
/// column's bounds, whose minimum is `min`): `x == c` lands in `(.., c]`.
/// The cuts are strictly increasing (schema validation), so this is
/// `cuts.partition_point(|&c| c < x)`, found faster:
///
/// - equal-width cuts (`inverse_width`): the interval computed from `x`,
///   then moved down or up while the cuts disagree, so rounding in the
///   division never changes the answer (the moves are the definition;
///   they run only for `x` within rounding of a cut);
/// - up to 64 cuts: a count of independent comparisons, several times
///   faster than the binary search, whose steps each wait for the previous
///   compare (it was a third of the reader's time on issue 13's table);
/// - more: the binary search.
#[inline]
fn interval(x: f64, min: f64, cuts: &[f64], inverse_width: Option<f64>) -> u32 {
    let n = cuts.len();
    let k = if let Some(inverse) = inverse_width {
        // Cut i is min + (i + 1) * width, so the count is ceil(t) - 1 with
        // t = (x - min) / width: floor(t), less one when t is a whole
        // number (a value on a cut, common in integer data, which would
        // otherwise take a correction step). `as` saturates: a negative
        // guess is 0, a large one is capped at n.
        let t = (x - min) * inverse;
        let floor = t as usize;
        let mut k = floor.saturating_sub(usize::from(floor as f64 == t)).min(n);
        while k > 0 && cuts[k - 1] >= x {
            k -= 1;
        }
        while k < n && cuts[k] < x {
            k += 1;
        }
        k
    } else if n <= 64 {
        cuts.iter().map(|&c| usize::from(c < x)).sum()
    } else {
        cuts.partition_point(|&c| c < x)
    };
    k as u32
}

/// `1 / width` if `cuts` split `[min, max]` into equal-width intervals (to
/// within 1% of the width: `bins` cuts are rounded to a few significant
/// digits), else `None`. Only a speed-up: [`interval`] corrects any guess,
/// and with this tolerance a guess is off by at most one interval.
fn equal_width_inverse(min: f64, max: f64, cuts: &[f64]) -> Option<f64> {
    let width = (max - min) / (cuts.len() + 1) as f64;
    let equal = width > 0.0
        && cuts
            .iter()
            .enumerate()
            .all(|(i, &c)| (c - (min + width * (i + 1) as f64)).abs() <= 0.01 * width);
    equal.then(|| 1.0 / width)
}

/// The value of `text` if it is a plain decimal that converts exactly:
/// an optional sign, digits with at most one `.`, at least one digit, at
/// most 19 digits in all, and a digit string (as an integer) of at most
/// 2^53 with at most 22 digits after the point. Anything else (exponents,
/// whitespace, `inf`, longer numbers) is `None`, for `str::parse`.
///
/// Why it is exact: the digits form an integer `m <= 2^53`, which an `f64`
/// holds exactly, and `10^k` for `k <= 22` is exact too, so `m / 10^k` is
/// one correctly rounded IEEE division of exact operands: the nearest
/// `f64` to the decimal, which is what `str::parse` returns (Clinger's fast
/// path, W. D. Clinger, "How to read floating point numbers accurately",
/// PLDI 1990; std's own parser takes it for these inputs too).
#[inline]
pub(crate) fn plain_decimal(text: &[u8]) -> Option<f64> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    let mut m: u64 = 0;
    let mut n_digits = 0;
    let mut point: Option<usize> = None;
    for (i, &b) in digits.iter().enumerate() {
        match b {
            b'0'..=b'9' => {
                // At most 19 digits, so m stays below 10^19 < 2^64.
                if n_digits == 19 {
                    return None;
                }
                m = m * 10 + u64::from(b - b'0');
                n_digits += 1;
            }
            b'.' if point.is_none() => point = Some(i),
            _ => return None,
        }
    }
    if n_digits == 0 || m > 1 << 53 {
        return None;
    }
    let fraction = point.map_or(0, |p| digits.len() - 1 - p);
    let m = m as f64;
    // An integer needs no division (whose latency is most of the cost of
    // a short number); dividing by 10^0 would give the same value.
    let x = if fraction == 0 {
        m
    } else {
        m / *POW10.get(fraction)?
    };
    Some(if negative { -x } else { x })
}

/// A literal index as `u32` (the type the learners use for active lists).
fn literal_index(i: usize) -> Result<u32, DataError> {
    u32::try_from(i).map_err(|_| DataError::schema("too many literals"))
}

/// The accepted spellings of a boolean (case-insensitive).
pub(crate) fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Some(true),
        "false" | "f" | "no" | "n" | "0" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn encoder() -> Encoder {
        let schema = Schema::from_json(
            r#"{
              "label": {"column": "y", "positive": "yes", "negative": "no"},
              "columns": [
                {"name": "age", "type": "numeric", "min": 17, "max": 90, "bins": 10},
                {"name": "hours", "type": "numeric", "min": 1, "max": 99, "thresholds": [20, 40, 60], "encoding": "thresholds"},
                {"name": "work", "type": "categorical", "categories": ["Private", "Gov"], "missing": ["?", ""]},
                {"name": "id", "type": "ignore"},
                {"name": "color", "type": "categorical", "categories": ["red"], "unknown": "other"},
                {"name": "shape", "type": "categorical", "categories": ["round"], "missing": ["NA"], "unknown": "missing"},
                {"name": "smoker", "type": "boolean"},
                {"name": "vegan", "type": "boolean", "missing": ["?"]}
              ]
            }"#,
        )
        .unwrap();
        Encoder::new(&schema).unwrap()
    }

    /// Active literal names of one JSON row.
    fn names(e: &Encoder, row: serde_json::Value) -> Result<Vec<String>, DataError> {
        let mut active = Vec::new();
        e.encode_json_row(row.as_object().unwrap(), 7, &mut active)?;
        assert!(
            active.windows(2).all(|w| w[0] < w[1]),
            "active is ascending"
        );
        Ok(active
            .iter()
            .map(|&i| e.literals()[i as usize].name.clone())
            .collect())
    }

    fn row(age: Value, hours: Value) -> Value {
        json!({"age": age, "hours": hours, "work": "Private", "color": "red",
               "shape": "round", "smoker": "no", "vegan": "no"})
    }

    /// Intervals and categories (with `is other` / `is missing`) are one-hot
    /// groups, thresholds and booleans not; every accepted value, missing,
    /// unknown or clamped, sets exactly one literal of each group.
    #[test]
    fn one_hot_groups_set_one_literal_per_row() {
        let e = encoder();
        assert_eq!(e.one_hot_groups(), [0..10, 13..16, 16..18, 18..20]);
        let rows = [
            json!({"age": 17, "hours": 5, "work": "Private", "color": "red",
                   "shape": "round", "smoker": "yes", "vegan": "?"}),
            json!({"age": -1e9, "hours": 99, "work": "?", "color": "blue",
                   "shape": "square", "smoker": "no", "vegan": "no"}),
            json!({"age": 1e9, "hours": 40, "work": null, "color": "red",
                   "shape": "NA", "smoker": "1", "vegan": "true"}),
            json!({"age": "  53.5 ", "hours": 20, "work": "", "color": "",
                   "shape": null, "smoker": "f", "vegan": null}),
        ];
        for row in rows {
            let mut active = Vec::new();
            e.encode_json_row(row.as_object().unwrap(), 1, &mut active)
                .unwrap();
            for g in e.one_hot_groups() {
                let set = active
                    .iter()
                    .filter(|&&j| g.contains(&(j as usize)))
                    .count();
                assert_eq!(set, 1, "{row} group {g:?}");
            }
        }
    }

    #[test]
    fn literal_list() {
        let e = encoder();
        // 10 intervals + 3 thresholds + (2 + missing) + (1 + other) + (1 + missing) + 1 + (1 + missing)
        assert_eq!(e.n_literals(), 10 + 3 + 3 + 2 + 2 + 1 + 2);
        assert_eq!(
            e.feature_names(),
            ["age", "hours", "work", "color", "shape", "smoker", "vegan"]
        );
        let l = &e.literals()[12];
        assert_eq!((l.feature, l.name.as_str()), (1, "hours <= 60"));
        assert_eq!(e.literals()[15].name, "work is missing");
        assert_eq!(e.literals()[17].name, "color is other");
        assert_eq!(e.literals()[22].name, "vegan is missing");
        assert!(
            e.literals()
                .iter()
                .all(|l| l.feature_name == e.feature_names()[l.feature])
        );
    }

    #[test]
    fn numeric_intervals_thresholds_clamping_and_cut_points() {
        let e = encoder();
        let first_two = |a: Value, h: Value| names(&e, row(a, h)).unwrap()[..].to_vec();
        let n = first_two(json!(20), json!(50));
        assert_eq!(&n[..2], ["age <= 24.3", "hours <= 60"]);
        // Exactly on a cut point: the interval (.., c] and x <= c.
        let n = first_two(json!(24.3), json!(40));
        assert_eq!(&n[..3], ["age <= 24.3", "hours <= 40", "hours <= 60"]);
        let n = first_two(json!("31.6"), json!(20));
        assert_eq!(
            &n[..4],
            [
                "24.3 < age <= 31.6",
                "hours <= 20",
                "hours <= 40",
                "hours <= 60"
            ]
        );
        // Clamping: below min and above max.
        let n = first_two(json!(-5), json!(1000));
        assert_eq!(&n[..2], ["age <= 24.3", "work == Private"]);
        let n = first_two(json!(" 300 "), json!(0));
        assert_eq!(
            &n[..4],
            ["age > 82.7", "hours <= 20", "hours <= 40", "hours <= 60"]
        );
        assert_eq!(first_two(json!(90), json!(61))[0], "age > 82.7");
    }

    #[test]
    fn numeric_errors_name_row_and_column_not_value() {
        let e = encoder();
        for bad in [
            json!("12x34"),
            json!("NaN"),
            json!("inf"),
            json!(""),
            json!(null),
            json!([1]),
        ] {
            let msg = names(&e, row(bad.clone(), json!(1)))
                .unwrap_err()
                .to_string();
            assert!(msg.starts_with(r#"row 7, column "age": "#), "{msg}");
            assert!(
                !msg.contains("12x34") && !msg.contains("NaN") && !msg.contains("inf"),
                "{msg}"
            );
        }
    }

    #[test]
    fn categorical_other_missing_and_boolean() {
        let e = encoder();
        let mut r = row(json!(50), json!(50));
        let all = |r: &Value| names(&e, r.clone()).unwrap()[2..].to_vec();
        assert_eq!(
            all(&r),
            ["work == Private", "color == red", "shape == round"]
        );
        r["work"] = json!("?");
        r["color"] = json!("blue");
        r["shape"] = json!("square");
        r["smoker"] = json!("Yes");
        r["vegan"] = json!("?");
        assert_eq!(
            all(&r),
            [
                "work is missing",
                "color is other",
                "shape is missing",
                "smoker",
                "vegan is missing"
            ]
        );
        r["work"] = json!("");
        r["shape"] = json!("NA");
        r["smoker"] = json!(true);
        r["vegan"] = json!(null);
        assert_eq!(
            all(&r),
            [
                "work is missing",
                "color is other",
                "shape is missing",
                "smoker",
                "vegan is missing"
            ]
        );
        for (v, on) in [
            ("1", true),
            ("T", true),
            (" y ", true),
            ("0", false),
            ("F", false),
            ("N", false),
            ("FALSE", false),
        ] {
            r["smoker"] = json!(v);
            assert_eq!(all(&r).contains(&"smoker".to_owned()), on, "{v}");
        }
        r["smoker"] = json!(1);
        assert!(all(&r).contains(&"smoker".to_owned()));
    }

    #[test]
    fn categorical_and_boolean_errors() {
        let e = encoder();
        let mut r = row(json!(50), json!(50));
        r["work"] = json!("Secret-Employer");
        let msg = names(&e, r.clone()).unwrap_err().to_string();
        assert_eq!(
            msg,
            r#"row 7, column "work": unknown category (not in the schema)"#
        );
        r["work"] = json!("Private");
        r["smoker"] = json!("maybe-secret");
        let msg = names(&e, r.clone()).unwrap_err().to_string();
        assert!(
            msg.starts_with(r#"row 7, column "smoker": not a boolean"#),
            "{msg}"
        );
        assert!(!msg.contains("maybe-secret"));
        r["smoker"] = json!(null);
        let msg = names(&e, r).unwrap_err().to_string();
        assert!(msg.contains("declares no missing tokens"), "{msg}");
    }

    /// A row read from the body gives the errors of the same JSON map, and
    /// a repeated key counts once, the last one (as in the map).
    #[test]
    fn borrowed_rows_follow_the_map_rules() {
        let e = encoder();
        let check = |text: &str| {
            let map: Value = serde_json::from_str(text).unwrap();
            let row: Row<'_> = serde_json::from_str(text).unwrap();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let from_map = e.encode_json_row(map.as_object().unwrap(), 3, &mut a);
            let from_row = e.encode_row(&row, 3, &mut b);
            match (from_map, from_row) {
                (Ok(()), Ok(())) => assert_eq!(a, b, "{text}"),
                (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string(), "{text}"),
                (x, y) => panic!("{text}: {x:?} against {y:?}"),
            }
        };
        let rest = r#""hours": 5, "work": "Gov", "color": "blue", "shape": "round", "smoker": "y", "vegan": "?""#;
        check(&format!(r#"{{"age": 20, {rest}}}"#));
        check(&format!(
            r#"{{"age": 20, "age": "80", "y": [1], "id": {{"a": 1}}, {rest}}}"#
        ));
        check(&format!(r#"{{"age": [20], {rest}}}"#));
        check(&format!(r#"{{"age": {{"v": 20}}, {rest}}}"#));
        check(&format!(r#"{{"age": "20", "colour": 1, {rest}}}"#));
        check(&format!(r#"{{{rest}}}"#));
        check(r#"{"age": 20}"#);
    }

    #[test]
    fn json_rows_check_keys() {
        let e = encoder();
        let mut r = row(json!(50), json!(50));
        r["y"] = json!("yes");
        r["id"] = json!(123);
        assert!(names(&e, r.clone()).is_ok());
        r["colour"] = json!("red");
        let msg = names(&e, r.clone()).unwrap_err().to_string();
        assert_eq!(msg, r#"row 7: unknown column "colour" (not in the schema)"#);
        let mut r = row(json!(50), json!(50));
        r.as_object_mut().unwrap().remove("vegan");
        let msg = names(&e, r).unwrap_err().to_string();
        assert_eq!(
            msg,
            r#"row 7, column "vegan": column is missing from the row"#
        );
    }

    /// Literals of one value of feature `f`.
    fn value_literals(e: &Encoder, f: usize, cell: &Cell<'_>) -> Result<Vec<u32>, DataError> {
        let mut active = Vec::new();
        e.encode_value(f, cell, 1, &mut active)?;
        Ok(active)
    }

    proptest::proptest! {
        /// A number in a numeric column is read as its value (no text round
        /// trip); it gives the literals of its JSON text, for intervals and
        /// thresholds, integers and floats, in range or clamped.
        #[test]
        fn a_number_encodes_as_its_text(
            x in proptest::num::f64::NORMAL | proptest::num::f64::ZERO,
            i in proptest::num::i64::ANY,
            u in proptest::num::u64::ANY,
        ) {
            let e = encoder();
            for n in [serde_json::Number::from_f64(x).unwrap(), i.into(), u.into()] {
                let text = Cell::Text(n.to_string().into());
                for f in [0, 1] {
                    proptest::prop_assert_eq!(
                        value_literals(&e, f, &Cell::Number(n.clone())).unwrap(),
                        value_literals(&e, f, &text).unwrap()
                    );
                }
            }
        }
    }

    /// Categorical columns match a number or a boolean by its JSON text,
    /// a missing token by one lookup with the categories; an array or object
    /// is no value.
    #[test]
    fn values_match_by_their_json_text() {
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "positive": "1", "negative": "0"},
                "columns": [{"name": "c", "type": "categorical",
                             "categories": ["3", "2.5", "true", "x"], "missing": ["?"]}]}"#,
        )
        .unwrap();
        let e = Encoder::new(&schema).unwrap();
        let name = |cell: Cell<'_>| {
            value_literals(&e, 0, &cell).map(|a| e.literals()[a[0] as usize].name.clone())
        };
        assert_eq!(name(Cell::Number(3.into())).unwrap(), "c == 3");
        assert_eq!(name(Cell::from_f64(2.5)).unwrap(), "c == 2.5");
        assert_eq!(name(Cell::Bool(true)).unwrap(), "c == true");
        assert_eq!(name(Cell::Text(" x ".into())).unwrap(), "c == x");
        assert_eq!(name(Cell::Text("?".into())).unwrap(), "c is missing");
        assert_eq!(name(Cell::Null).unwrap(), "c is missing");
        // 3.0 is not the text "3".
        assert!(name(Cell::from_f64(3.0)).is_err());
        let msg = name(Cell::Nested).unwrap_err().to_string();
        assert!(
            msg.contains("expected a number, string, boolean or null"),
            "{msg}"
        );
        // A binary float that is not finite is null.
        assert_eq!(Cell::from_f64(f64::NAN), Cell::Null);
    }

    proptest::proptest! {
        /// Every row the schema admits encodes, with one literal per one-hot column.
        #[test]
        fn accepts_every_admitted_row(
            age in proptest::num::f64::NORMAL | proptest::num::f64::ZERO,
            hours in -1e6f64..1e6,
            work in proptest::sample::select(vec!["Private", "Gov", "?", "", " Gov "]),
            color in ".*",
            shape in ".*",
            smoker in proptest::sample::select(vec!["true", "F", "yes", "N", "1", "0", " y "]),
            vegan in proptest::sample::select(vec!["true", "no", "?"]),
        ) {
            let e = encoder();
            let r = json!({"age": age, "hours": hours.to_string(), "work": work, "color": color,
                           "shape": shape, "smoker": smoker, "vegan": vegan});
            let mut active = Vec::new();
            e.encode_json_row(r.as_object().unwrap(), 1, &mut active).unwrap();
            // The same row read from its text, borrowing: the same literals.
            let text = r.to_string();
            let borrowed: Row<'_> = serde_json::from_str(&text).unwrap();
            let mut again = Vec::new();
            e.encode_row(&borrowed, 1, &mut again).unwrap();
            proptest::prop_assert_eq!(&again, &active);
            let per_feature = |f: usize| {
                active.iter().filter(|&&i| e.literals()[i as usize].feature == f).count()
            };
            for f in [0, 2, 3, 4] {
                proptest::prop_assert_eq!(per_feature(f), 1);
            }
            proptest::prop_assert!(per_feature(1) <= 3);
            proptest::prop_assert!(per_feature(5) <= 1 && per_feature(6) <= 1);
        }
    }

    #[test]
    fn labels() {
        let e = encoder();
        assert!(e.encode_label("yes", 1).unwrap());
        assert!(!e.encode_label("no", 1).unwrap());
        let msg = e.encode_label("perhaps", 4).unwrap_err().to_string();
        assert_eq!(
            msg,
            r#"row 4, column "y": label is neither the positive nor the negative value"#
        );
        let msg = e.encode_label("", 5).unwrap_err().to_string();
        assert_eq!(msg, r#"row 5, column "y": empty label"#);
        // Without a declared negative, anything non-empty but the positive is negative.
        let mut s = e.schema().clone();
        s.label.negative = None;
        let e = Encoder::new(&s).unwrap();
        assert!(!e.encode_label("perhaps", 1).unwrap());
        assert!(e.encode_label("", 1).is_err());
    }

    proptest::proptest! {
        /// Packed short values are equal exactly when the values are (bytes
        /// and length, NUL bytes included), and a category index finds a
        /// value exactly when it holds it, short or long.
        #[test]
        fn packed_values_are_distinct(
            a in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..10),
            b in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..10),
        ) {
            match (pack(&a), pack(&b)) {
                (Some(x), Some(y)) => proptest::prop_assert_eq!(x == y, a == b),
                (x, y) => {
                    proptest::prop_assert_eq!(x.is_none(), a.len() > 7);
                    proptest::prop_assert_eq!(y.is_none(), b.len() > 7);
                }
            }
            let a = String::from_utf8_lossy(&a).into_owned();
            let b = String::from_utf8_lossy(&b).into_owned();
            let mut index = CategoryIndex::default();
            index.insert(&a, 7);
            proptest::prop_assert_eq!(index.get(a.as_bytes()), Some(7));
            proptest::prop_assert_eq!(index.get(b.as_bytes()).is_some(), a == b);
        }
    }

    proptest::proptest! {
        /// The interval lookup is `partition_point` whichever way it goes:
        /// equal-width cuts from `bins` (with values at, just below and just
        /// above each cut, where rounding in the guess matters), arbitrary
        /// increasing cuts, and lists too long for the comparison count.
        #[test]
        fn interval_equals_partition_point(
            min in -1e6f64..1e6,
            span in 1e-3f64..1e7,
            bins in 2usize..200,
            extra in proptest::collection::vec(-1e7f64..1e7, 0..100),
            fractions in proptest::collection::vec(0.0f64..1.0, 1..20),
        ) {
            let max = min + span;
            let width = span / bins as f64;
            let equal: Vec<f64> = (1..bins).map(|i| min + width * i as f64).collect();
            let mut uneven: Vec<f64> = extra.iter().map(|e| min + span * (e.abs() % 1e6) / 1e6).collect();
            uneven.retain(|&c| c > min && c < max);
            uneven.sort_by(f64::total_cmp);
            uneven.dedup();
            for cuts in [&equal, &uneven] {
                let inverse = equal_width_inverse(min, max, cuts);
                let mut xs: Vec<f64> = fractions.iter().map(|f| min + span * f).collect();
                for &c in cuts.iter() {
                    xs.extend([c, c.next_down(), c.next_up()]);
                }
                xs.extend([min, max]);
                for x in xs {
                    let x = x.clamp(min, max);
                    let want = cuts.partition_point(|&c| c < x) as u32;
                    proptest::prop_assert_eq!(interval(x, min, cuts, inverse), want, "x {} cuts {:?}", x, cuts);
                    proptest::prop_assert_eq!(interval(x, min, cuts, None), want);
                }
            }
            // Equal-width cuts are recognised (else the fast path is idle).
            proptest::prop_assert!(equal_width_inverse(min, max, &equal).is_some());
        }
    }
}
