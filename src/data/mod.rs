//! Data: the owner's schema, the streaming CSV reader, and the encoder into literals.
//!
//! INTERFACE STUB: the data helper replaces the bodies (and may split this into
//! `schema.rs`, `reader.rs`, `encode.rs`, `bits.rs`, `propose.rs`), keeping the
//! public names and signatures below.

use std::io::Read;

/// Errors from schema validation, CSV reading and encoding.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// Placeholder.
    #[error("{0}")]
    Other(String),
}

/// The owner's public schema.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Schema {}

impl Schema {
    /// Parse and validate a schema from JSON text.
    pub fn from_json(_text: &str) -> Result<Schema, DataError> {
        unimplemented!()
    }
}

/// One Boolean literal.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Literal {
    /// Index of the feature column in the schema's feature columns.
    pub feature: usize,
    /// Name of the feature column.
    pub feature_name: String,
    /// Condition, e.g. `<= 25`, `== Private`.
    pub condition: String,
    /// Full human-readable name, e.g. `age <= 25`.
    pub name: String,
}

/// Turns raw rows into literals.
#[derive(Debug, Clone)]
pub struct Encoder {}

impl Encoder {
    /// Build from a validated schema.
    pub fn new(_schema: &Schema) -> Result<Encoder, DataError> {
        unimplemented!()
    }
    /// All literals, in index order.
    pub fn literals(&self) -> &[Literal] {
        unimplemented!()
    }
    /// Names of the feature columns (the label column excluded).
    pub fn feature_names(&self) -> &[String] {
        unimplemented!()
    }
    /// Encode one JSON object keyed by column name.
    pub fn encode_json_row(
        &self,
        _row: &serde_json::Map<String, serde_json::Value>,
        _row_number: usize,
        _active: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        unimplemented!()
    }
}

/// Packed bits.
#[derive(Debug, Clone, PartialEq)]
pub struct BitVec {}

impl BitVec {
    /// Bit i.
    pub fn get(&self, _i: usize) -> bool {
        unimplemented!()
    }
    /// The words.
    pub fn words(&self) -> &[u64] {
        unimplemented!()
    }
    /// Number of set bits.
    pub fn count_ones(&self) -> usize {
        unimplemented!()
    }
}

/// Column-major bit matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct BitMatrix {}

impl BitMatrix {
    /// Rows.
    pub fn n_rows(&self) -> usize {
        unimplemented!()
    }
    /// Columns.
    pub fn n_cols(&self) -> usize {
        unimplemented!()
    }
    /// Words of column j.
    pub fn column(&self, _j: usize) -> &[u64] {
        unimplemented!()
    }
    /// Bit (row, col).
    pub fn get(&self, _row: usize, _col: usize) -> bool {
        unimplemented!()
    }
}

/// Encoded dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// n x d literal bits, column-major.
    pub features: BitMatrix,
    /// Some(labels) where the label column was present: bit set = positive (y = +1).
    pub labels: Option<BitVec>,
}

impl Dataset {
    /// Number of rows.
    pub fn n_rows(&self) -> usize {
        self.features.n_rows()
    }
    /// Rows at the given indices, in that order.
    pub fn subset(&self, _rows: &[usize]) -> Dataset {
        unimplemented!()
    }
}

/// Whether the label column must be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelMode {
    /// Training data.
    Required,
    /// Prediction rows.
    Optional,
}

/// Read a CSV with a header row.
pub fn read_csv<R: Read>(
    _reader: R,
    _encoder: &Encoder,
    _label: LabelMode,
) -> Result<Dataset, DataError> {
    unimplemented!()
}
