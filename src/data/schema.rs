//! The owner's schema: serde types for the public JSON contract, and its validation.
//!
//! The schema is data-independent public knowledge declared by the data owner
//! (SPEC §3, "dataset-oblivious coding"): encoding with it costs no privacy budget, and
//! it is embedded in every saved model so that predictions take raw values. This module
//! only parses and checks it; [`super::encode`] turns it into literals.
//!
//! The JSON format and its rules are documented on [`Schema`], the public entry point.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::error::DataError;

/// Largest `bins` accepted: more cut points than this is almost surely a mistake, and
/// each one costs a literal per row.
pub const MAX_BINS: u32 = 1000;

/// Largest `{"private": k}`: the base grid has `4k` intervals (see
/// [`base_bins`]), which must fit in [`MAX_BINS`].
pub const MAX_PRIVATE_BINS: u32 = MAX_BINS / 4;

/// Fewest base intervals a private-bins column is encoded with, so that a
/// small `k` still has room to place its cut points near the quantiles.
pub const MIN_BASE_BINS: u32 = 32;

/// Largest number of literals a schema may encode to. Each literal costs a name in
/// every encoder and model and a bit per training row, and `bins` lets a few bytes of
/// schema ask for a thousand literals, so the count is checked (by arithmetic, before
/// anything is allocated) to keep a small schema from demanding gigabytes.
pub const MAX_LITERALS: usize = 100_000;

/// Significant digits kept in equal-width cut points: enough to separate any 1000 bins
/// of a range that is not itself below float precision, few enough to drop the
/// `0.30000000000000004` noise of the division.
const CUT_DIGITS: usize = 12;

/// The owner's public schema.
///
/// # JSON format
///
/// ```json
/// {
///   "label": {"column": "income", "positive": ">50K", "negative": "<=50K"},
///   "columns": [
///     {"name": "age", "type": "numeric", "min": 17, "max": 90, "bins": 10},
///     {"name": "hours", "type": "numeric", "min": 1, "max": 99,
///      "thresholds": [20, 40, 60], "encoding": "thresholds"},
///     {"name": "workclass", "type": "categorical",
///      "categories": ["Private", "Self-emp-inc"], "missing": ["?"], "unknown": "error"},
///     {"name": "smoker", "type": "boolean"},
///     {"name": "id", "type": "ignore"}
///   ]
/// }
/// ```
///
/// - `label`: `column` names the label column (which must not also be listed in
///   `columns`); a value equal to `positive` is y = +1. If `negative` is given every
///   label must be `positive` or `negative`; otherwise every non-empty value other than
///   `positive` is y = -1. An empty label is always an error.
/// - `numeric`: finite `min < max` and exactly one of `thresholds` (non-empty, strictly
///   increasing, strictly inside `(min, max)`) or `bins` (an integer in 2..=1000, giving
///   the equal-width cut points `min + k (max - min) / bins`, k = 1..bins-1, each rounded
///   to 12 significant digits so that the cut point is exactly the number shown in the
///   literal's name), or `{"private": k}` with k in 2..=250: k bins whose
///   cut points each training job chooses privately (see [`Bins`]).
///   `encoding` is `"intervals"` (default: one literal per interval
///   between consecutive cut points) or `"thresholds"` (one literal `x <= c` per cut
///   point). Values outside `[min, max]` are clamped.
/// - `categorical`: `categories` is non-empty, without duplicates or empty strings.
///   `unknown` says what a value outside `categories` becomes: `"error"` (default),
///   `"other"` (an extra literal `col is other`) or `"missing"` (the missing literal;
///   requires `missing`).
/// - `boolean`: accepts true/false, t/f, yes/no, y/n, 1/0 (case-insensitive).
/// - `missing` (numeric, categorical, boolean): optional non-empty list of tokens that
///   mean "missing", e.g. `["?"]` or `[""]`; the column then gets a literal
///   `col is missing`. Without it an empty or unparsable value is an error.
/// - `ignore`: the column must be in the CSV header and is skipped (e.g. an id).
///
/// Unknown fields are rejected (`deny_unknown_fields`) so that a typo such as `"bin"`
/// is an error rather than a silently different encoding. Values in CSV cells and
/// schema strings are compared after trimming surrounding whitespace, so schema
/// strings must not have any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// The label column and its positive value.
    pub label: LabelSpec,
    /// Every other CSV column, in the order literals are numbered.
    pub columns: Vec<Column>,
    /// The privacy unit (issue 28): an identifier column and a public bound on
    /// rows per unit. Absent (the default, not written) = one row is the unit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy_unit: Option<PrivacyUnitSpec>,
}

/// Largest `max_rows` a privacy unit may declare. Every cost grows with it
/// (pure epsilon x k, rho x k^2), so beyond this the per-row budget is too
/// small to train anything; the bound also keeps `k` exact in every float.
pub const MAX_UNIT_ROWS: u32 = 1000;

/// The schema's `"privacy_unit": {"column": ..., "max_rows": k}`: neighbouring
/// tables differ in all rows of one unit (the rows sharing one identifier),
/// and each unit keeps at most `max_rows` rows (chosen uniformly at random at
/// upload, `data::unit`). The column is not a feature and not the label: it
/// is listed in neither `label` nor `columns` (like the label, it is named
/// here only), is read only to group rows, and is never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacyUnitSpec {
    /// The identifier column (e.g. `patient_id`).
    pub column: String,
    /// The public bound on rows per unit, an integer in `1..=MAX_UNIT_ROWS`.
    pub max_rows: u32,
}

/// Which column is the label: for classification, which value is positive; for
/// regression (`"type": "numeric"`), the label's public bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelSpec {
    /// Name of the label column.
    pub column: String,
    /// `numeric` for a regression label; absent (the default) for a binary
    /// class label. Absent is not written, so classification schemas
    /// serialise exactly as before regression existed.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<LabelKind>,
    /// Regression: the public lower bound of the label (labels are clamped to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Regression: the public upper bound of the label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Classification: the value meaning y = +1 (empty for regression).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub positive: String,
    /// If given, the only other accepted value (y = -1); a typo in the data then
    /// becomes an error instead of a negative example.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negative: Option<String>,
    /// Multiclass: the public, ordered class list (at least 2, no
    /// duplicates); a value outside it is an upload error. Absent (and not
    /// written) for binary and regression labels, so their schemas
    /// serialise exactly as before multiclass existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<String>>,
}

impl LabelSpec {
    /// A binary label's negative class as predictions name it: the schema's
    /// `negative` value, or `not <positive>` when it declares none (the one
    /// rule for the CLI's `predict`, the REST answers and the ONNX labels).
    pub fn negative_name(&self) -> String {
        self.negative
            .clone()
            .unwrap_or_else(|| format!("not {}", self.positive))
    }
}

impl PrivacyUnitSpec {
    /// The rules the JSON shape cannot check: a non-empty trimmed column
    /// name that is neither the label nor any column of `columns` (not even
    /// `ignore`: the unit column is declared here only), and `max_rows` in
    /// `1..=MAX_UNIT_ROWS` (serde already refuses a non-integer or negative
    /// `max_rows`).
    fn validate(&self, label: &str, columns: &[String]) -> Result<(), DataError> {
        if self.column.is_empty() {
            return Err(DataError::schema("privacy_unit: column must not be empty"));
        }
        check_trimmed("privacy_unit", "column", &self.column)?;
        if self.column == label {
            return Err(DataError::schema(format!(
                "privacy_unit: the unit column {:?} is the label; an identifier is never the label",
                self.column
            )));
        }
        if columns.contains(&self.column) {
            return Err(DataError::schema(format!(
                "privacy_unit: the unit column {:?} must not also be listed in columns (not even as ignore): it is never a feature",
                self.column
            )));
        }
        if !(1..=MAX_UNIT_ROWS).contains(&self.max_rows) {
            return Err(DataError::schema(format!(
                "privacy_unit: max_rows must be an integer in 1..={MAX_UNIT_ROWS}, got {}",
                self.max_rows
            )));
        }
        Ok(())
    }
}

/// The kind of a label column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LabelKind {
    /// A real-valued label with public bounds (regression).
    Numeric,
    /// A binary class label (the default when `type` is absent).
    Categorical,
}

/// What a schema's label asks the learners to do. Public: it comes from the
/// schema alone.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Task {
    /// Binary classification, y in {+1, -1}.
    Binary,
    /// Regression of a label clamped to the public bounds `[min, max]`.
    Regression {
        /// Public lower bound.
        min: f64,
        /// Public upper bound.
        max: f64,
    },
    /// Classification into `k >= 2` classes, the schema's public ordered
    /// class list (a label is its class's index in that list).
    Multiclass {
        /// Number of classes (public: the schema lists them).
        k: usize,
    },
}

impl Task {
    /// `"binary"` or `"regression"`, as the API and errors name it.
    pub fn name(&self) -> &'static str {
        match self {
            Task::Binary => "binary classification",
            Task::Regression { .. } => "regression",
            Task::Multiclass { .. } => "multiclass classification",
        }
    }

    /// The number of classes of a multiclass task (`None` otherwise).
    pub fn n_classes(&self) -> Option<usize> {
        match *self {
            Task::Multiclass { k } => Some(k),
            _ => None,
        }
    }

    /// Whether a regression's public bounds keep every derived scale and
    /// sum finite ([`check_label_bounds`]); a classifier has none. Upload
    /// checks it, and every learner's plan again before any charge (a
    /// schema stored before the check existed may not pass it).
    pub fn check_bounds(&self) -> Result<(), DataError> {
        match *self {
            Task::Binary | Task::Multiclass { .. } => Ok(()),
            Task::Regression { min, max } => check_label_bounds(min, max),
        }
    }
}

/// The most classes a multiclass label may list: a class index is stored in
/// a `u16`, and every learner's work and model grow linearly in k.
pub const MAX_CLASSES: usize = 1024;

/// A multiclass label's checks: no binary or regression fields beside the
/// class list, at least 2 and at most [`MAX_CLASSES`] classes, each non-empty,
/// trimmed and listed once.
fn check_classes(label: &LabelSpec, classes: &[String]) -> Result<(), DataError> {
    if label.kind == Some(LabelKind::Numeric)
        || label.min.is_some()
        || label.max.is_some()
        || !label.positive.is_empty()
        || label.negative.is_some()
    {
        return Err(DataError::schema(
            "label: a multiclass label takes only column and classes (not type numeric, min, max, positive or negative)",
        ));
    }
    if classes.len() < 2 {
        return Err(DataError::schema(
            "label: classes must list at least 2 classes",
        ));
    }
    if classes.len() > MAX_CLASSES {
        return Err(DataError::schema(format!(
            "label: classes may list at most {MAX_CLASSES} classes"
        )));
    }
    for c in classes {
        if c.is_empty() {
            return Err(DataError::schema("label: a class must not be empty"));
        }
        check_trimmed("label", "class", c)?;
    }
    if let Some(d) = first_duplicate(classes) {
        return Err(DataError::schema(format!(
            "label: class {d:?} is listed twice"
        )));
    }
    Ok(())
}

/// The largest magnitude a regression label's public bound may have.
///
/// Every learner and the private evaluation derive scales and sums from the
/// bounds: the range `max - min`, the midpoint, half and a quarter of the
/// range (residual scales), the range squared (the squared-error release),
/// and sums of up to `n` clamped labels. DP-EBM keeps labels in `f32`
/// (largest 3.4e38). With both bounds within 1e30, the range is at most
/// 2e30, its square 4e60, and a sum over even 2^64 rows of labels or of
/// squared ranges at most 7.4e79: all finite in `f64`, the labels finite in
/// `f32`. Before this rule a label declared on `[-1e308, 1e308]` had an
/// infinite range, and the models trained on it stored `null` coefficients
/// (issue 26).
pub const MAX_LABEL_BOUND: f64 = 1e30;

/// The smallest width `max - min` of a regression label's range: the
/// learners divide by the range (and DP-EBM by a quarter of it, in `f32`),
/// so the inverses stay at most 4e30, finite in `f32` too.
pub const MIN_LABEL_RANGE: f64 = 1e-30;

/// A regression label's public bounds: finite, `min < max`, both within
/// [`MAX_LABEL_BOUND`] in magnitude and at least [`MIN_LABEL_RANGE`] apart,
/// so that no scale or sum derived from them overflows. The message names
/// the rule (the bounds are public: the owner wrote them).
pub fn check_label_bounds(min: f64, max: f64) -> Result<(), DataError> {
    if !(min.is_finite() && max.is_finite() && min < max) {
        return Err(DataError::schema(
            "label: a numeric label needs public finite bounds min < max",
        ));
    }
    if min.abs() > MAX_LABEL_BOUND || max.abs() > MAX_LABEL_BOUND {
        return Err(DataError::schema(format!(
            "label: the bounds min and max must lie within [-{MAX_LABEL_BOUND:e}, {MAX_LABEL_BOUND:e}] (larger bounds overflow the learners' scales and sums)"
        )));
    }
    if max - min < MIN_LABEL_RANGE {
        return Err(DataError::schema(format!(
            "label: max - min must be at least {MIN_LABEL_RANGE:e} (a narrower range overflows the learners' inverse scales)"
        )));
    }
    Ok(())
}

/// One column of the CSV (other than the label), tagged by `"type"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Column {
    /// A number, encoded by cut points.
    Numeric(NumericColumn),
    /// One of a declared list of strings.
    Categorical(CategoricalColumn),
    /// A truth value.
    Boolean(BooleanColumn),
    /// Present in the CSV, not used.
    Ignore(IgnoreColumn),
}

/// A numeric column with public bounds and cut points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumericColumn {
    /// Column name.
    pub name: String,
    /// Public lower bound; smaller values are clamped to it.
    pub min: f64,
    /// Public upper bound; larger values are clamped to it.
    pub max: f64,
    /// Explicit cut points (exclusive with `bins`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresholds: Option<Vec<f64>>,
    /// Number of equal-width bins, or `{"private": k}` for `k` bins whose cut
    /// points are chosen privately at training time (exclusive with
    /// `thresholds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<Bins>,
    /// How cut points become literals.
    #[serde(default)]
    pub encoding: NumericEncoding,
    /// Tokens meaning "missing".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<String>>,
}

/// A numeric column's `bins`: an integer count of equal-width bins, or
/// `{"private": k}`.
///
/// A private-bins column is stored as the equal-width base grid of
/// [`base_bins`]`(k)` intervals (public: a function of `k` alone), so the
/// uploaded bit matrix holds the base literals. Each training job first
/// chooses `k - 1` of the base cut points by a DP quantile procedure, charged
/// as its own phase (`learn::binning`), and trains on the union of
/// consecutive base intervals; the model stores the chosen cut points as
/// explicit `thresholds`, so prediction needs no private state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bins {
    /// `k` equal-width bins.
    Equal(u32),
    /// `k` bins with privately chosen cut points.
    Private(u32),
}

/// The base grid of a `{"private": k}` column: `max(4k, 32)` equal-width
/// intervals. Four base intervals per final bin lets each cut point move by
/// a quarter of a bin towards its quantile; 32 keeps that resolution for
/// small `k`. `k <= MAX_PRIVATE_BINS` keeps it within [`MAX_BINS`].
pub fn base_bins(k: u32) -> u32 {
    k.saturating_mul(4).clamp(MIN_BASE_BINS, MAX_BINS)
}

impl Bins {
    /// The number of equal-width intervals the column is encoded with at
    /// upload: `k`, or the private column's base grid.
    pub fn grid(&self) -> u32 {
        match *self {
            Bins::Equal(k) => k,
            Bins::Private(k) => base_bins(k),
        }
    }
}

impl Serialize for Bins {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Bins::Equal(k) => s.serialize_u32(k),
            Bins::Private(k) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("private", &k)?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Bins {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Bins, D::Error> {
        struct V;
        const EXPECTED: &str = r#"an integer number of bins or {"private": k}"#;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Bins;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Bins, E> {
                u32::try_from(v)
                    .map(Bins::Equal)
                    .map_err(|_| E::custom(format!("bins must be between 2 and {MAX_BINS}")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Bins, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("bins must be between 2 and {MAX_BINS}")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Bins, A::Error> {
                let mut k: Option<u32> = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "private" || k.is_some() {
                        return Err(serde::de::Error::custom(format!(
                            r#"bins: unknown or repeated field `{key}`; expected {{"private": k}}"#
                        )));
                    }
                    k = Some(map.next_value().map_err(|_| {
                        serde::de::Error::custom(format!(
                            "bins: private must be an integer between 2 and {MAX_PRIVATE_BINS}"
                        ))
                    })?);
                }
                k.map(Bins::Private)
                    .ok_or_else(|| serde::de::Error::custom(r#"bins: expected {"private": k}"#))
            }
        }
        d.deserialize_any(V)
    }
}

/// How a numeric column's cut points become literals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NumericEncoding {
    /// One-hot intervals `lo < x <= hi` between consecutive cut points (the paper's
    /// choice); `k` cut points give `k + 1` literals.
    #[default]
    Intervals,
    /// Monotone literals `x <= c`, one per cut point.
    Thresholds,
}

/// A categorical column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CategoricalColumn {
    /// Column name.
    pub name: String,
    /// The declared values, one literal each, in this order.
    pub categories: Vec<String>,
    /// Tokens meaning "missing".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<String>>,
    /// What a value outside `categories` becomes.
    #[serde(default)]
    pub unknown: UnknownPolicy,
}

/// What a categorical value outside the declared categories becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownPolicy {
    /// The row is refused.
    #[default]
    Error,
    /// The literal `col is other`.
    Other,
    /// The literal `col is missing` (the column must declare `missing`).
    Missing,
}

/// A boolean column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BooleanColumn {
    /// Column name.
    pub name: String,
    /// Tokens meaning "missing".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<String>>,
}

/// A column that must be present in the CSV and is skipped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IgnoreColumn {
    /// Column name.
    pub name: String,
}

impl Column {
    /// The column's name.
    pub fn name(&self) -> &str {
        match self {
            Column::Numeric(c) => &c.name,
            Column::Categorical(c) => &c.name,
            Column::Boolean(c) => &c.name,
            Column::Ignore(c) => &c.name,
        }
    }

    /// The declared missing tokens, if any.
    pub fn missing(&self) -> Option<&[String]> {
        match self {
            Column::Numeric(c) => c.missing.as_deref(),
            Column::Categorical(c) => c.missing.as_deref(),
            Column::Boolean(c) => c.missing.as_deref(),
            Column::Ignore(_) => None,
        }
    }

    /// Whether the column is a feature (not `ignore`).
    pub fn is_feature(&self) -> bool {
        !matches!(self, Column::Ignore(_))
    }

    /// How many literals the column encodes to (see [`super::Encoder`]), computed
    /// without building them. Only meaningful for a validated column.
    pub fn n_literals(&self) -> usize {
        let values = match self {
            Column::Numeric(c) => {
                let cuts = match (&c.thresholds, c.bins) {
                    (Some(t), _) => t.len(),
                    (None, Some(bins)) => bins.grid().saturating_sub(1) as usize,
                    (None, None) => 0,
                };
                match c.encoding {
                    NumericEncoding::Intervals => cuts + 1,
                    NumericEncoding::Thresholds => cuts,
                }
            }
            Column::Categorical(c) => {
                c.categories.len() + usize::from(c.unknown == UnknownPolicy::Other)
            }
            Column::Boolean(_) => 1,
            Column::Ignore(_) => return 0,
        };
        values + usize::from(self.missing().is_some())
    }

    fn validate(&self) -> Result<(), DataError> {
        let name = self.name();
        if name.is_empty() {
            return Err(DataError::schema("a column has an empty name"));
        }
        check_trimmed(name, "column name", name)?;
        if let Some(tokens) = self.missing() {
            if tokens.is_empty() {
                return Err(DataError::column(
                    name,
                    "missing must list at least one token (or be left out)",
                ));
            }
            for t in tokens {
                check_trimmed(name, "missing token", t)?;
            }
            if let Some(d) = first_duplicate(tokens) {
                return Err(DataError::column(
                    name,
                    format!("duplicate missing token {d:?}"),
                ));
            }
        }
        match self {
            Column::Numeric(c) => c.cut_points().map(|_| ()),
            Column::Categorical(c) => c.validate(),
            Column::Boolean(_) | Column::Ignore(_) => Ok(()),
        }
    }
}

impl NumericColumn {
    /// The validated cut points, strictly increasing and strictly inside `(min, max)`.
    pub fn cut_points(&self) -> Result<Vec<f64>, DataError> {
        let name = &self.name;
        if !self.min.is_finite() || !self.max.is_finite() {
            return Err(DataError::column(name, "min and max must be finite"));
        }
        if self.min >= self.max {
            return Err(DataError::column(name, "min must be less than max"));
        }
        let cuts = match (&self.thresholds, self.bins) {
            (Some(_), Some(_)) => {
                return Err(DataError::column(name, "give thresholds or bins, not both"));
            }
            (None, None) => {
                return Err(DataError::column(
                    name,
                    "a numeric column needs thresholds or bins",
                ));
            }
            (Some(t), None) => {
                if t.is_empty() {
                    return Err(DataError::column(name, "thresholds must not be empty"));
                }
                if t.iter().any(|c| !c.is_finite()) {
                    return Err(DataError::column(name, "thresholds must be finite"));
                }
                t.clone()
            }
            (None, Some(Bins::Private(k))) => {
                if !(2..=MAX_PRIVATE_BINS).contains(&k) {
                    return Err(DataError::column(
                        name,
                        format!(
                            "bins: private must be between 2 and {MAX_PRIVATE_BINS} (the base grid has max(4k, {MIN_BASE_BINS}) intervals, at most {MAX_BINS})"
                        ),
                    ));
                }
                equal_width(self.min, self.max, base_bins(k))
            }
            (None, Some(Bins::Equal(bins))) => {
                if !(2..=MAX_BINS).contains(&bins) {
                    return Err(DataError::column(
                        name,
                        format!("bins must be between 2 and {MAX_BINS}"),
                    ));
                }
                equal_width(self.min, self.max, bins)
            }
        };
        if cuts.windows(2).any(|w| w[0] >= w[1]) {
            return Err(DataError::column(
                name,
                if self.bins.is_some() {
                    "bins are too narrow for the precision of min and max"
                } else {
                    "thresholds must be strictly increasing"
                },
            ));
        }
        if cuts.iter().any(|&c| c <= self.min || c >= self.max) {
            return Err(DataError::column(
                name,
                "thresholds must lie strictly between min and max",
            ));
        }
        Ok(cuts)
    }
}

impl CategoricalColumn {
    fn validate(&self) -> Result<(), DataError> {
        let name = &self.name;
        if self.categories.is_empty() {
            return Err(DataError::column(name, "categories must not be empty"));
        }
        for c in &self.categories {
            if c.is_empty() {
                return Err(DataError::column(name, "a category is the empty string"));
            }
            check_trimmed(name, "category", c)?;
        }
        if let Some(d) = first_duplicate(&self.categories) {
            return Err(DataError::column(name, format!("duplicate category {d:?}")));
        }
        // A set, not `categories.contains` per token: both lists may be long.
        let categories: HashSet<&String> = self.categories.iter().collect();
        if let Some(tokens) = &self.missing
            && let Some(t) = tokens.iter().find(|t| categories.contains(t))
        {
            return Err(DataError::column(
                name,
                format!("{t:?} is both a category and a missing token"),
            ));
        }
        if self.unknown == UnknownPolicy::Missing && self.missing.is_none() {
            return Err(DataError::column(
                name,
                "unknown = \"missing\" requires the column to declare missing tokens",
            ));
        }
        Ok(())
    }
}

impl Schema {
    /// Parse and validate a schema from JSON text.
    ///
    /// A shape error (unknown field, unknown type, wrong value type) names the column
    /// index and name where it can.
    pub fn from_json(text: &str) -> Result<Schema, DataError> {
        let schema = match serde_json::from_str::<Schema>(text) {
            Ok(s) => s,
            Err(e) => return Err(locate_shape_error(text).unwrap_or(DataError::Json(e))),
        };
        schema.validate()?;
        Ok(schema)
    }

    /// Check everything the JSON shape cannot: bounds, cut points, categories, unique
    /// names, the label, at least one feature.
    pub fn validate(&self) -> Result<(), DataError> {
        let label = &self.label;
        if label.column.is_empty() {
            return Err(DataError::schema("label: column must not be empty"));
        }
        check_trimmed("label", "column", &label.column)?;
        if let Some(classes) = &label.classes {
            check_classes(label, classes)?;
        } else if label.kind == Some(LabelKind::Numeric) {
            if !label.positive.is_empty() || label.negative.is_some() {
                return Err(DataError::schema(
                    "label: a numeric label takes min and max, not positive/negative",
                ));
            }
            match (label.min, label.max) {
                (Some(lo), Some(hi)) => check_label_bounds(lo, hi)?,
                _ => {
                    return Err(DataError::schema(
                        "label: a numeric label needs public finite bounds min < max",
                    ));
                }
            }
        } else if label.min.is_some() || label.max.is_some() {
            return Err(DataError::schema(
                "label: min and max are only for a numeric label (\"type\": \"numeric\")",
            ));
        } else if label.positive.is_empty() {
            return Err(DataError::schema("label: positive must not be empty"));
        }
        if !label.positive.is_empty() {
            check_trimmed("label", "positive value", &label.positive)?;
        }
        if let Some(neg) = &label.negative {
            if neg.is_empty() {
                return Err(DataError::schema("label: negative must not be empty"));
            }
            check_trimmed("label", "negative value", neg)?;
            if *neg == label.positive {
                return Err(DataError::schema("label: negative equals positive"));
            }
        }
        for c in &self.columns {
            c.validate()?;
        }
        let names: Vec<String> = self.columns.iter().map(|c| c.name().to_owned()).collect();
        if let Some(d) = first_duplicate(&names) {
            return Err(DataError::schema(format!("column {d:?} is declared twice")));
        }
        if names.contains(&label.column) {
            return Err(DataError::schema(format!(
                "the label column {:?} must not also be listed in columns",
                label.column
            )));
        }
        if !self.columns.iter().any(Column::is_feature) {
            return Err(DataError::schema(
                "no feature column (all columns are ignore)",
            ));
        }
        if let Some(unit) = &self.privacy_unit {
            unit.validate(&label.column, &names)?;
        }
        let n_literals = self.n_literals();
        if n_literals > MAX_LITERALS {
            return Err(DataError::schema(format!(
                "the columns encode to {n_literals} literals; at most {MAX_LITERALS} are allowed"
            )));
        }
        Ok(())
    }

    /// The privacy unit's bound on rows per unit: 1 (a row is the unit)
    /// when the schema declares none.
    pub fn unit_max_rows(&self) -> u32 {
        self.privacy_unit.as_ref().map_or(1, |u| u.max_rows)
    }

    /// How many literals the schema encodes to (the encoder's `d`), computed without
    /// building them.
    pub fn n_literals(&self) -> usize {
        self.columns.iter().map(Column::n_literals).sum()
    }

    /// Whether some numeric column asks for private bins (`{"private": k}`).
    pub fn has_private_bins(&self) -> bool {
        self.columns
            .iter()
            .any(|c| matches!(c, Column::Numeric(n) if matches!(n.bins, Some(Bins::Private(_)))))
    }

    /// The schema a job trains on once the private cut points are chosen:
    /// each private-bins column (in column order, one entry of `cuts` each)
    /// gets those cut points as explicit `thresholds`. With equal-width cut
    /// points in place of the private ones this is also the public *shape*
    /// of that schema (same literal count and layout), which the plan uses
    /// before any row is read ([`Schema::public_shape`]).
    pub fn with_private_cuts(&self, cuts: &[Vec<f64>]) -> Schema {
        let mut out = self.clone();
        let mut next = cuts.iter();
        for column in &mut out.columns {
            if let Column::Numeric(n) = column
                && let Some(Bins::Private(_)) = n.bins
                && let Some(c) = next.next()
            {
                n.bins = None;
                n.thresholds = Some(c.clone());
            }
        }
        out
    }

    /// The schema with every `{"private": k}` replaced by `k` equal-width
    /// bins: the same literal layout as any schema a job derives from the
    /// private cut points (k intervals, or k - 1 thresholds), known without
    /// reading a row, so the learners' plans see the sizes they will train on.
    pub fn public_shape(&self) -> Schema {
        let mut out = self.clone();
        for column in &mut out.columns {
            if let Column::Numeric(n) = column
                && let Some(Bins::Private(k)) = n.bins
            {
                n.bins = Some(Bins::Equal(k));
            }
        }
        out
    }

    /// Name of the label column.
    pub fn label_column(&self) -> &str {
        &self.label.column
    }

    /// The learning task the label asks for.
    pub fn task(&self) -> Task {
        if let Some(classes) = &self.label.classes {
            return Task::Multiclass { k: classes.len() };
        }
        match (self.label.kind, self.label.min, self.label.max) {
            (Some(LabelKind::Numeric), Some(min), Some(max)) => Task::Regression { min, max },
            _ => Task::Binary,
        }
    }

    /// The label value meaning y = +1 (empty for a regression label).
    pub fn positive_label(&self) -> &str {
        &self.label.positive
    }

    /// The only accepted negative label value, if declared.
    pub fn negative_label(&self) -> Option<&str> {
        self.label.negative.as_deref()
    }

    /// A multiclass label's public ordered class names (empty otherwise).
    pub fn class_names(&self) -> &[String] {
        self.label.classes.as_deref().unwrap_or(&[])
    }

    /// The schema as pretty JSON (what `from_json` accepts).
    pub fn to_json_pretty(&self) -> String {
        // Serializing plain structs of strings and finite numbers cannot fail.
        serde_json::to_string_pretty(self).expect("schema serializes")
    }
}

/// Re-parse column by column to say which column a serde shape error is in. Only
/// called after the whole parse failed; `None` when no single column is to blame.
fn locate_shape_error(text: &str) -> Option<DataError> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let columns = value.get("columns")?.as_array()?;
    columns.iter().enumerate().find_map(|(i, col)| {
        let err = serde_json::from_value::<Column>(col.clone()).err()?;
        let name = col
            .get("name")
            .and_then(|n| n.as_str())
            .map(|n| format!(" ({n:?})"))
            .unwrap_or_default();
        Some(DataError::schema(format!("columns[{i}]{name}: {err}")))
    })
}

fn check_trimmed(column: &str, what: &str, s: &str) -> Result<(), DataError> {
    if s.trim() != s {
        return Err(DataError::column(
            column,
            format!(
                "{what} {s:?} has surrounding whitespace (cells are trimmed, so it could never match)"
            ),
        ));
    }
    Ok(())
}

fn first_duplicate(items: &[String]) -> Option<&str> {
    let mut seen = HashSet::new();
    items
        .iter()
        .find(|s| !seen.insert(s.as_str()))
        .map(String::as_str)
}

/// The `bins - 1` equal-width cut points of `[min, max]`, rounded.
fn equal_width(min: f64, max: f64, bins: u32) -> Vec<f64> {
    let width = max - min;
    (1..bins)
        .map(|k| round_sig(min + width * f64::from(k) / f64::from(bins)))
        .collect()
}

/// `x` rounded to [`CUT_DIGITS`] significant digits (through decimal text, so the
/// result is the double nearest to the short decimal that names it).
fn round_sig(x: f64) -> f64 {
    let text = format!("{:.*e}", CUT_DIGITS - 1, x);
    // Rust's own `{:e}` output of a finite float always parses back.
    text.parse().expect("formatted float parses")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_column(col: &str) -> String {
        format!(r#"{{"label": {{"column": "y", "positive": "1"}}, "columns": [{col}]}}"#)
    }

    fn err(col: &str) -> String {
        Schema::from_json(&with_column(col))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_the_documented_example() {
        let text = r#"{
          "label": {"column": "income", "positive": ">50K", "negative": "<=50K"},
          "columns": [
            {"name": "age", "type": "numeric", "min": 17, "max": 90, "bins": 10},
            {"name": "hours", "type": "numeric", "min": 1, "max": 99, "thresholds": [20, 40, 60], "encoding": "thresholds"},
            {"name": "workclass", "type": "categorical", "categories": ["Private", "Self-emp-inc"], "missing": ["?"], "unknown": "error"},
            {"name": "smoker", "type": "boolean"},
            {"name": "id", "type": "ignore"}
          ]
        }"#;
        let s = Schema::from_json(text).unwrap();
        assert_eq!(s.label_column(), "income");
        assert_eq!(s.positive_label(), ">50K");
        assert_eq!(s.negative_label(), Some("<=50K"));
        assert_eq!(s.columns.len(), 5);
        // Round trip through JSON (schemas are embedded in saved models).
        assert_eq!(Schema::from_json(&s.to_json_pretty()).unwrap(), s);
    }

    #[test]
    fn bins_give_rounded_equal_width_cuts() {
        let c = NumericColumn {
            name: "age".into(),
            min: 17.0,
            max: 90.0,
            thresholds: None,
            bins: Some(Bins::Equal(10)),
            encoding: NumericEncoding::Intervals,
            missing: None,
        };
        let cuts = c.cut_points().unwrap();
        assert_eq!(cuts.len(), 9);
        assert_eq!(cuts[0], 24.3);
        assert_eq!(cuts[1], 31.6);
        assert_eq!(cuts[8], 82.7);
    }

    #[test]
    fn numeric_errors() {
        let e = err(r#"{"name": "a", "type": "numeric", "min": 5, "max": 5, "bins": 3}"#);
        assert!(
            e.contains(r#"column "a": min must be less than max"#),
            "{e}"
        );
        let e = err(r#"{"name": "a", "type": "numeric", "min": 6, "max": 5, "bins": 3}"#);
        assert!(e.contains("min must be less than max"), "{e}");
        let e = err(r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "bins": 1}"#);
        assert!(e.contains("bins must be between 2 and 1000"), "{e}");
        let e = err(r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "bins": 1001}"#);
        assert!(e.contains("bins must be between"), "{e}");
        let e =
            err(r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "thresholds": [2, 1]}"#);
        assert!(e.contains("strictly increasing"), "{e}");
        let e =
            err(r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "thresholds": [1, 1]}"#);
        assert!(e.contains("strictly increasing"), "{e}");
        let e =
            err(r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "thresholds": [0, 1]}"#);
        assert!(e.contains("strictly between min and max"), "{e}");
        let e = err(r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "thresholds": []}"#);
        assert!(e.contains("must not be empty"), "{e}");
        let e = err(r#"{"name": "a", "type": "numeric", "min": 0, "max": 5}"#);
        assert!(e.contains("needs thresholds or bins"), "{e}");
        let e = err(
            r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "bins": 2, "thresholds": [1]}"#,
        );
        assert!(e.contains("not both"), "{e}");
        let e = err(
            r#"{"name": "a", "type": "numeric", "min": 1e15, "max": 1.0000000000000002e15, "bins": 10}"#,
        );
        assert!(e.contains("too narrow"), "{e}");
    }

    /// `{"private": k}`: encoded on the base grid of max(4k, 32) intervals,
    /// round-trips through JSON, and every bad value is a clear error naming
    /// the column.
    #[test]
    fn private_bins_parse_and_validate() {
        let text = with_column(
            r#"{"name": "a", "type": "numeric", "min": 0, "max": 64, "bins": {"private": 4}}"#,
        );
        let s = Schema::from_json(&text).unwrap();
        assert!(s.has_private_bins());
        assert_eq!(s.n_literals(), 32);
        let Column::Numeric(c) = &s.columns[0] else {
            panic!("numeric")
        };
        assert_eq!(c.bins, Some(Bins::Private(4)));
        assert_eq!(c.cut_points().unwrap()[..3], [2.0, 4.0, 6.0]);
        assert_eq!(Schema::from_json(&s.to_json_pretty()).unwrap(), s);
        assert_eq!(
            serde_json::to_value(c.bins).unwrap(),
            serde_json::json!({"private": 4})
        );
        // The public shape has k equal-width bins; the derived schema the
        // chosen thresholds; both have k literals.
        assert_eq!(s.public_shape().n_literals(), 4);
        let derived = s.with_private_cuts(&[vec![3.0, 10.0, 20.0]]);
        assert!(!derived.has_private_bins());
        assert_eq!(derived.n_literals(), 4);
        assert_eq!(base_bins(2), 32);
        assert_eq!(base_bins(100), 400);
        assert_eq!(base_bins(250), 1000);
        for (bins, message) in [
            (r#"{"private": 0}"#, "private must be between 2 and 250"),
            (r#"{"private": 1}"#, "private must be between 2 and 250"),
            (r#"{"private": 251}"#, "private must be between 2 and 250"),
            (r#"{"private": -3}"#, "private must be an integer"),
            (r#"{"private": 2.5}"#, "private must be an integer"),
            (r#"{"privat": 3}"#, "unknown or repeated field `privat`"),
            (r#"{}"#, r#"expected {"private": k}"#),
            (r#""8""#, r#"an integer number of bins or {"private": k}"#),
            (r#"-2"#, "bins must be between 2 and 1000"),
        ] {
            let e = err(&format!(
                r#"{{"name": "a", "type": "numeric", "min": 0, "max": 5, "bins": {bins}}}"#
            ));
            assert!(e.contains(message) && e.contains(r#""a""#), "{bins}: {e}");
        }
        let e = err(
            r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "bins": {"private": 3}, "thresholds": [1]}"#,
        );
        assert!(e.contains("not both"), "{e}");
        let e = err(
            r#"{"name": "a", "type": "categorical", "categories": ["x"], "bins": {"private": 3}}"#,
        );
        assert!(e.contains("unknown field `bins`"), "{e}");
    }

    #[test]
    fn categorical_errors() {
        let e = err(r#"{"name": "c", "type": "categorical", "categories": []}"#);
        assert!(
            e.contains(r#"column "c": categories must not be empty"#),
            "{e}"
        );
        let e = err(r#"{"name": "c", "type": "categorical", "categories": ["a", "b", "a"]}"#);
        assert!(e.contains("duplicate category"), "{e}");
        let e = err(r#"{"name": "c", "type": "categorical", "categories": ["a", ""]}"#);
        assert!(e.contains("empty string"), "{e}");
        let e = err(
            r#"{"name": "c", "type": "categorical", "categories": ["a"], "unknown": "missing"}"#,
        );
        assert!(e.contains("requires the column to declare missing"), "{e}");
        let e = err(
            r#"{"name": "c", "type": "categorical", "categories": ["a", "?"], "missing": ["?"]}"#,
        );
        assert!(e.contains("both a category and a missing token"), "{e}");
        let e = err(r#"{"name": "c", "type": "categorical", "categories": [" a"]}"#);
        assert!(e.contains("surrounding whitespace"), "{e}");
        let e = err(r#"{"name": "c", "type": "boolean", "missing": []}"#);
        assert!(e.contains("at least one token"), "{e}");
    }

    #[test]
    fn shape_errors_name_the_column() {
        let e = err(r#"{"name": "a", "type": "numeric", "min": 0, "max": 5, "bin": 3}"#);
        assert!(
            e.contains(r#"columns[0] ("a")"#) && e.contains("unknown field `bin`"),
            "{e}"
        );
        let e = err(r#"{"name": "a", "type": "float"}"#);
        assert!(
            e.contains(r#"columns[0] ("a")"#) && e.contains("unknown variant `float`"),
            "{e}"
        );
        let e = err(r#"{"name": "a", "type": "ignore", "missing": ["?"]}"#);
        assert!(e.contains("unknown field `missing`"), "{e}");
        let e = Schema::from_json(
            r#"{"label": {"column": "y", "positive": "1", "neg": "0"}, "columns": []}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown field `neg`"), "{e}");
        let e = Schema::from_json("{").unwrap_err();
        assert!(matches!(e, DataError::Json(_)), "{e}");
    }

    /// Regression: `bins` lets ~60 bytes of schema ask for 1000 literals, so a schema
    /// within the service's 1 MiB text limit encoded to ~18 million literals (several
    /// GB of names) before anything else was checked. The count is now capped.
    #[test]
    fn too_many_literals_are_refused_before_building_them() {
        let columns: Vec<String> = (0..101)
            .map(|i| {
                format!(
                    r#"{{"name": "c{i}", "type": "numeric", "min": 0, "max": 1, "bins": 1000}}"#
                )
            })
            .collect();
        let e = err(&columns.join(","));
        assert!(
            e.contains("encode to 101000 literals; at most 100000 are allowed"),
            "{e}"
        );
        // One column fewer fits.
        let s = Schema::from_json(&with_column(&columns[..100].join(","))).unwrap();
        assert_eq!(s.n_literals(), 100_000);
    }

    #[test]
    fn literal_count_matches_the_encoder() {
        let s = Schema::from_json(&with_column(
            r#"{"name": "a", "type": "numeric", "min": 0, "max": 9, "bins": 3, "missing": ["?"]},
               {"name": "b", "type": "numeric", "min": 0, "max": 9, "thresholds": [1, 2], "encoding": "thresholds"},
               {"name": "c", "type": "categorical", "categories": ["x", "z"], "unknown": "other"},
               {"name": "d", "type": "boolean", "missing": ["?"]},
               {"name": "e", "type": "ignore"}"#,
        ))
        .unwrap();
        assert_eq!(s.n_literals(), (3 + 1) + 2 + (2 + 1) + (1 + 1));
        assert_eq!(
            crate::data::Encoder::new(&s).unwrap().n_literals(),
            s.n_literals()
        );
    }

    /// Regression: each missing token was looked up in the category list by a
    /// linear scan, quadratic in a schema with long lists of both.
    #[test]
    fn long_category_and_missing_lists_validate_quickly() {
        let list = |p: &str| {
            (0..90_000)
                .map(|i| format!("\"{p}{i}\""))
                .collect::<Vec<_>>()
                .join(",")
        };
        let col = format!(
            r#"{{"name": "c", "type": "categorical", "categories": [{}], "missing": [{}]}}"#,
            list("v"),
            list("m")
        );
        let start = std::time::Instant::now();
        let s = Schema::from_json(&with_column(&col)).unwrap();
        assert_eq!(s.n_literals(), 90_001);
        // The quadratic check made 8e9 comparisons (tens of seconds); the set takes
        // milliseconds, so the bound is loose enough for a loaded machine.
        assert!(start.elapsed().as_secs_f64() < 5.0, "{:?}", start.elapsed());
    }

    /// The privacy unit: optional, round-trips, and its refusals (issue 28).
    #[test]
    fn privacy_unit_parses_and_is_refused_where_it_must_be() {
        let with_unit = |unit: &str| {
            format!(
                r#"{{"label": {{"column": "y", "positive": "1"}}, "columns": [{{"name": "a", "type": "boolean"}}, {{"name": "z", "type": "ignore"}}], "privacy_unit": {unit}}}"#
            )
        };
        let s = Schema::from_json(&with_unit(r#"{"column": "pid", "max_rows": 4}"#)).unwrap();
        assert_eq!(
            s.privacy_unit,
            Some(PrivacyUnitSpec {
                column: "pid".into(),
                max_rows: 4
            })
        );
        assert_eq!(s.unit_max_rows(), 4);
        assert_eq!(Schema::from_json(&s.to_json_pretty()).unwrap(), s);
        // Absent: not written, so schemas without a unit serialise as before.
        let plain = Schema::from_json(&with_column(r#"{"name": "a", "type": "boolean"}"#)).unwrap();
        assert_eq!(plain.unit_max_rows(), 1);
        assert!(!plain.to_json_pretty().contains("privacy_unit"));
        let err = |unit: &str| Schema::from_json(&with_unit(unit)).unwrap_err().to_string();
        let e = err(r#"{"column": "pid", "max_rows": 0}"#);
        assert!(
            e.contains("max_rows must be an integer in 1..=1000, got 0"),
            "{e}"
        );
        let e = err(r#"{"column": "pid", "max_rows": 1001}"#);
        assert!(e.contains("max_rows"), "{e}");
        for bad in ["2.5", "-1", "\"4\""] {
            let e = err(&format!(r#"{{"column": "pid", "max_rows": {bad}}}"#));
            assert!(
                e.starts_with("schema") || e.contains("max_rows"),
                "{bad}: {e}"
            );
        }
        let e = err(r#"{"column": "a", "max_rows": 2}"#);
        assert!(e.contains("must not also be listed in columns"), "{e}");
        let e = err(r#"{"column": "z", "max_rows": 2}"#);
        assert!(e.contains("not even as ignore"), "{e}");
        let e = err(r#"{"column": "y", "max_rows": 2}"#);
        assert!(e.contains("is the label"), "{e}");
        let e = err(r#"{"column": "", "max_rows": 2}"#);
        assert!(e.contains("column must not be empty"), "{e}");
        let e = err(r#"{"column": "pid"}"#);
        assert!(e.contains("max_rows"), "{e}");
        let e = err(r#"{"column": "pid", "max_rows": 2, "salt": 1}"#);
        assert!(e.contains("salt"), "{e}");
    }

    #[test]
    fn schema_level_errors() {
        let two = |a: &str, b: &str| {
            Schema::from_json(&with_column(&format!("{a}, {b}")))
                .unwrap_err()
                .to_string()
        };
        let e = two(
            r#"{"name": "a", "type": "boolean"}"#,
            r#"{"name": "a", "type": "ignore"}"#,
        );
        assert!(e.contains(r#"column "a" is declared twice"#), "{e}");
        let e = err(r#"{"name": "y", "type": "boolean"}"#);
        assert!(
            e.contains("label column \"y\" must not also be listed"),
            "{e}"
        );
        let e = err(r#"{"name": "id", "type": "ignore"}"#);
        assert!(e.contains("no feature column"), "{e}");
        let e = err(r#"{"name": "", "type": "boolean"}"#);
        assert!(e.contains("empty name"), "{e}");
        let e = Schema::from_json(r#"{"label": {"column": "y", "positive": ""}, "columns": [{"name": "a", "type": "boolean"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive must not be empty"), "{e}");
        let e = Schema::from_json(r#"{"label": {"column": "y", "positive": "1", "negative": "1"}, "columns": [{"name": "a", "type": "boolean"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative equals positive"), "{e}");
    }

    #[test]
    fn classes_declare_a_multiclass_label() {
        let schema = |label: &str| {
            Schema::from_json(&format!(
                r#"{{"label": {label}, "columns": [{{"name": "a", "type": "boolean"}}]}}"#
            ))
        };
        let s = schema(r#"{"column": "y", "classes": ["b", "a", "c"]}"#).unwrap();
        assert_eq!(s.task(), Task::Multiclass { k: 3 });
        assert_eq!(s.task().n_classes(), Some(3));
        assert_eq!(s.task().name(), "multiclass classification");
        assert_eq!(s.class_names(), ["b", "a", "c"]);
        assert!(s.task().check_bounds().is_ok());
        // The class list round-trips in its order; nothing else is written.
        assert_eq!(
            serde_json::to_value(&s.label).unwrap(),
            serde_json::json!({"column": "y", "classes": ["b", "a", "c"]})
        );
        // Binary and regression schemas have no class names and write no
        // classes field (byte-for-byte as before).
        let b = schema(r#"{"column": "y", "positive": "1", "negative": "0"}"#).unwrap();
        assert!(b.class_names().is_empty());
        assert_eq!(b.task().n_classes(), None);
        assert!(!b.to_json_pretty().contains("classes"));
        for (label, message) in [
            (r#"{"column": "y", "classes": ["a"]}"#, "at least 2"),
            (r#"{"column": "y", "classes": []}"#, "at least 2"),
            (
                r#"{"column": "y", "classes": ["a", "b", "a"]}"#,
                "\"a\" is listed twice",
            ),
            (
                r#"{"column": "y", "classes": ["a", ""]}"#,
                "must not be empty",
            ),
            (
                r#"{"column": "y", "classes": ["a", " b"]}"#,
                "surrounding whitespace",
            ),
            (
                r#"{"column": "y", "classes": ["a", "b"], "positive": "a"}"#,
                "takes only column and classes",
            ),
            (
                r#"{"column": "y", "classes": ["a", "b"], "type": "numeric", "min": 0, "max": 1}"#,
                "takes only column and classes",
            ),
        ] {
            let e = schema(label).unwrap_err().to_string();
            assert!(e.contains(message), "{label}: {e}");
        }
        let many: Vec<String> = (0..=MAX_CLASSES).map(|i| format!("\"c{i}\"")).collect();
        let e = schema(&format!(
            r#"{{"column": "y", "classes": [{}]}}"#,
            many.join(",")
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("at most 1024"), "{e}");
    }

    #[test]
    fn numeric_label_declares_regression_with_public_bounds() {
        let schema = |label: &str| {
            Schema::from_json(&format!(
                r#"{{"label": {label}, "columns": [{{"name": "a", "type": "boolean"}}]}}"#
            ))
        };
        let s = schema(r#"{"column": "y", "type": "numeric", "min": 0, "max": 30}"#).unwrap();
        assert_eq!(
            s.task(),
            Task::Regression {
                min: 0.0,
                max: 30.0
            }
        );
        // A classification schema still serialises exactly as before.
        let c = schema(r#"{"column": "y", "positive": "1"}"#).unwrap();
        assert_eq!(c.task(), Task::Binary);
        assert_eq!(
            serde_json::to_value(&c.label).unwrap(),
            serde_json::json!({"column": "y", "positive": "1"})
        );
        for (label, message) in [
            (
                r#"{"column": "y", "type": "numeric", "min": 3, "max": 3}"#,
                "min < max",
            ),
            (
                r#"{"column": "y", "type": "numeric", "max": 3}"#,
                "min < max",
            ),
            (
                r#"{"column": "y", "type": "numeric", "min": 0, "max": 1, "positive": "1"}"#,
                "not positive/negative",
            ),
            (
                r#"{"column": "y", "positive": "1", "min": 0}"#,
                "only for a numeric label",
            ),
            // Issue 26: finite bounds whose range overflows, or too narrow.
            (
                r#"{"column": "y", "type": "numeric", "min": -1e308, "max": 1e308}"#,
                "must lie within [-1e30, 1e30]",
            ),
            (
                r#"{"column": "y", "type": "numeric", "min": 0, "max": 1.1e30}"#,
                "must lie within",
            ),
            (
                r#"{"column": "y", "type": "numeric", "min": 0, "max": 1e-31}"#,
                "at least 1e-30",
            ),
        ] {
            let e = schema(label).unwrap_err().to_string();
            assert!(e.contains(message), "{label}: {e}");
        }
        // The limits themselves are accepted.
        schema(r#"{"column": "y", "type": "numeric", "min": -1e30, "max": 1e30}"#).unwrap();
        schema(r#"{"column": "y", "type": "numeric", "min": 0, "max": 1e-30}"#).unwrap();
        assert!(
            Task::Regression {
                min: -1e308,
                max: 1e308
            }
            .check_bounds()
            .is_err()
        );
        assert!(Task::Binary.check_bounds().is_ok());
    }
}
