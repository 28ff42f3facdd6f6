//! One value of a prediction request, as the encoder reads it.
//!
//! Requests carry values as JSON (rows keyed by column, the Open Inference
//! Protocol's tensors) or as the protocol's binary tensors. A [`Cell`] is
//! one such value, borrowed from the request body where it can be, so a
//! batch is encoded without building a JSON tree or a map per row
//! ([`super::Encoder::encode_value`]).

use std::borrow::Cow;

use serde_json::{Number, Value};

/// One request value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'a> {
    /// JSON `null` (or a non-finite binary float): missing where the column
    /// declares missing tokens, an error elsewhere.
    Null,
    /// A string, matched as it is (after trimming).
    Text(Cow<'a, str>),
    /// A JSON number, matched as its JSON text (`3`, `2.5`) by categorical
    /// columns, read as its value by numeric ones.
    Number(Number),
    /// A JSON boolean, matched as `true` / `false`.
    Bool(bool),
    /// An array or an object: never a value of any column.
    Nested,
}

impl<'a> From<&'a Value> for Cell<'a> {
    fn from(value: &'a Value) -> Cell<'a> {
        match value {
            Value::Null => Cell::Null,
            Value::String(s) => Cell::Text(Cow::Borrowed(s)),
            Value::Number(n) => Cell::Number(n.clone()),
            Value::Bool(b) => Cell::Bool(*b),
            Value::Array(_) | Value::Object(_) => Cell::Nested,
        }
    }
}

impl Cell<'_> {
    /// A binary tensor's float: a JSON number, or null when not finite (JSON
    /// has no NaN).
    pub fn from_f64(x: f64) -> Cell<'static> {
        Number::from_f64(x).map_or(Cell::Null, Cell::Number)
    }
}
