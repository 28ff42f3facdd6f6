//! Data: the owner's schema, the streaming CSV reader, and the encoder into literals.
//!
//! This is the start of the data path (SPEC §3, §8): CSV -> schema check -> literals
//! (a column-major bit matrix) -> learner. Everything here is deterministic and free
//! of privacy cost: the schema is public, data-independent knowledge declared by the
//! owner, and encoding a row with it reveals nothing. What this module must guarantee
//! instead is that nothing data-dependent leaks through it: errors say where (row,
//! column), never what (the value).
//!
//! - [`Schema`]: the JSON contract, its serde types and validation (the rules are
//!   documented on [`Schema`]; a summary follows below);
//! - [`Encoder`]: the literal list of a schema and the value -> literal rules, shared
//!   by training (CSV) and prediction (JSON rows);
//! - [`read_csv`]: the streaming reader (and [`read_csv_with`], which lists several
//!   bad rows or skips them); [`Dataset`]: its result;
//! - [`BitVec`], [`BitMatrix`], [`BitMatrixBuilder`]: packed storage;
//! - [`propose_schema`]: an owner-side helper that reads private rows to draft a
//!   schema; never run it on an analyst's request.
//!
//! # Schema JSON
//!
//! ```json
//! {
//!   "label": {"column": "income", "positive": ">50K", "negative": "<=50K"},
//!   "columns": [
//!     {"name": "age", "type": "numeric", "min": 17, "max": 90, "bins": 10},
//!     {"name": "hours", "type": "numeric", "min": 1, "max": 99,
//!      "thresholds": [20, 40, 60], "encoding": "thresholds"},
//!     {"name": "workclass", "type": "categorical",
//!      "categories": ["Private", "Self-emp-inc"], "missing": ["?"], "unknown": "error"},
//!     {"name": "smoker", "type": "boolean"},
//!     {"name": "id", "type": "ignore"}
//!   ]
//! }
//! ```
//!
//! Column types: `numeric` (public `min`/`max`, and `bins` or `thresholds`; `encoding`
//! `intervals` (default) or `thresholds`; out-of-range values are clamped),
//! `categorical` (`categories`; `unknown`: `error` (default), `other` or `missing`),
//! `boolean`, and `ignore`. Any non-ignored column may declare `missing` tokens, which
//! add a literal `col is missing`.
//!
//! A numeric column may ask for privately chosen cut points with
//! `"bins": {"private": k}` (2 <= k <= 250, not with `thresholds`): it is encoded
//! at upload on a public base grid of `max(4k, 32)` equal-width intervals
//! ([`base_bins`]); each training job then picks `k - 1` of the base cut points
//! near the noisy quantiles, as a charged phase of its own (`learn::binning`,
//! docs/privacy.md "Private binning for every learner"), and the model stores the
//! chosen cut points as explicit `thresholds`. Literal names are listed on [`Literal`], the value
//! rules on [`Encoder`] and the full schema rules on [`Schema`].
//!
//! # Example
//!
//! ```
//! use privboost::data::{read_csv, Encoder, LabelMode, Schema};
//!
//! let schema = Schema::from_json(r#"{
//!     "label": {"column": "y", "positive": "1"},
//!     "columns": [{"name": "age", "type": "numeric", "min": 0, "max": 100, "bins": 4}]
//! }"#)?;
//! let encoder = Encoder::new(&schema)?;
//! assert_eq!(encoder.literals()[1].name, "25 < age <= 50");
//! let data = read_csv("age,y\n30,1\n80,0\n".as_bytes(), &encoder, LabelMode::Required)?;
//! assert_eq!(data.n_rows(), 2);
//! assert!(data.features.get(0, 1) && data.features.get(1, 3));
//! # Ok::<(), privboost::data::DataError>(())
//! ```

mod bits;
pub(crate) mod bounded;
mod cell;
mod dataset;
mod encode;
mod error;
mod literal;
mod propose;
mod reader;
mod schema;
#[cfg(test)]
pub(crate) mod shipped;
pub mod unit;

pub use bits::{BitMatrix, BitMatrixBuilder, BitVec};
pub use cell::{Cell, CellSeed, Row};
pub use dataset::Dataset;
pub use encode::{ColumnError, Encoder, LiteralRows};
pub use error::DataError;
pub use literal::Literal;
pub use propose::propose_schema;
pub use reader::{
    Format, LabelMode, MAX_RECORD_BYTES, OnBadRow, ReadOptions, ReadReport, read_arrow_ipc_with,
    read_csv, read_csv_with, read_parquet_with, to_csv,
};
pub use schema::{
    Bins, BooleanColumn, CategoricalColumn, Column, IgnoreColumn, LabelKind, LabelSpec, MAX_BINS,
    MAX_LABEL_BOUND, MAX_LITERALS, MAX_PRIVATE_BINS, MAX_UNIT_ROWS, MIN_LABEL_RANGE, NumericColumn,
    NumericEncoding, PrivacyUnitSpec, Schema, Task, UnknownPolicy, base_bins, check_label_bounds,
};
