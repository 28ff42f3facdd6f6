//! The one error type of the data layer.
//!
//! Every error says *where* (schema column, header, data row and column) and never
//! *what*: a message may name a column, a row number or a schema value (the schema is
//! public), but never the content of a CSV cell or a JSON prediction value, because
//! those are private rows (SPEC §2: no data-dependent error messages). The reader and
//! the encoder build messages from fixed text only; tests check that the offending
//! value does not appear.

/// Errors from schema validation, CSV reading and encoding.
///
/// Messages are one line. [`DataError::Row`] is the only variant about a data row; it
/// carries the position so that the owner can fix the file.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The schema is invalid (a field is missing, out of range or inconsistent).
    /// The message names the column and the problem.
    #[error("schema: {message}")]
    Schema {
        /// What is wrong, e.g. `column "age": min must be less than max`.
        message: String,
    },
    /// A local-DP declaration (its epsilon or the label's share) is out of
    /// range (`super::LocalDp`).
    #[error("local DP: {message}")]
    LocalDp {
        /// What is wrong.
        message: String,
    },
    /// The CSV header does not match the schema (missing, extra or duplicate columns).
    #[error("CSV header: {message}")]
    Header {
        /// What is wrong, listing the column names concerned.
        message: String,
    },
    /// The columns of a Parquet or Arrow file do not match the schema
    /// (missing, extra or duplicate columns, or a column of the wrong type).
    #[error("{format} columns: {message}")]
    Columns {
        /// `Parquet` or `Arrow IPC`.
        format: &'static str,
        /// What is wrong, naming the columns concerned.
        message: String,
    },
    /// The input is not a readable Parquet or Arrow file (no footer, a
    /// corrupt page, an unsupported codec). The message is the structure's
    /// problem, never a cell's value.
    #[error("not a readable {format} file: {message}")]
    Format {
        /// `Parquet` or `Arrow IPC`.
        format: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The input has more rows than the caller allows (a service's upload
    /// limit), known before its rows are decoded.
    #[error("the input has more than {max} rows")]
    TooManyRows {
        /// The limit.
        max: usize,
    },
    /// A data row (CSV record or JSON prediction row) could not be encoded.
    #[error("row {row}{}{}: {message}", line_suffix(.line), column_suffix(.column))]
    Row {
        /// 1-based data row number (the CSV header is not counted).
        row: usize,
        /// 1-based line of the file where the record starts, when reading a file.
        /// It differs from `row + 1` when quoted fields span lines.
        line: Option<u64>,
        /// The column concerned, if the problem is in one cell.
        column: Option<String>,
        /// What is wrong, in fixed text that never contains the cell's value.
        message: String,
    },
    /// Several data rows could not be encoded (the first ones, each a
    /// [`DataError::Row`]); see [`super::read_csv_with`].
    #[error("invalid rows (the first {}): {}", .errors.len(), join(.errors))]
    Rows {
        /// The row errors, in file order.
        errors: Vec<DataError>,
    },
    /// The CSV input is empty: it has not even a header row.
    #[error("empty CSV: the input has no header row")]
    Empty,
    /// The CSV input has a header row but no data rows.
    #[error("CSV has a header row but no data rows")]
    NoRows,
    /// Reading the input failed.
    #[error("I/O error: {0}")]
    Io(std::io::Error),
    /// The schema is not valid JSON or does not have the schema's shape.
    #[error("schema JSON: {0}")]
    Json(serde_json::Error),
}

// Written by hand rather than with `#[from]`: `#[from]` also makes the inner
// error the `source`, and the CLI prints the whole chain, so the cause would
// appear twice in one message.
impl From<std::io::Error> for DataError {
    fn from(error: std::io::Error) -> DataError {
        DataError::Io(error)
    }
}

impl From<serde_json::Error> for DataError {
    fn from(error: serde_json::Error) -> DataError {
        DataError::Json(error)
    }
}

impl DataError {
    /// A schema error with the given message.
    pub(crate) fn schema(message: impl Into<String>) -> DataError {
        DataError::Schema {
            message: message.into(),
        }
    }

    /// A schema error about one column.
    pub(crate) fn column(name: &str, message: impl std::fmt::Display) -> DataError {
        DataError::Schema {
            message: format!("column {name:?}: {message}"),
        }
    }

    /// A header error with the given message.
    pub(crate) fn header(message: impl Into<String>) -> DataError {
        DataError::Header {
            message: message.into(),
        }
    }

    /// A row error about one cell. `message` must be fixed text (never the value).
    pub(crate) fn cell(row: usize, column: &str, message: impl Into<String>) -> DataError {
        DataError::Row {
            row,
            line: None,
            column: Some(column.to_owned()),
            message: message.into(),
        }
    }

    /// A row error about the whole row. `message` must be fixed text (never a value).
    pub(crate) fn row(row: usize, message: impl Into<String>) -> DataError {
        DataError::Row {
            row,
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// Attach the file line to a row error (other errors are returned unchanged).
    pub(crate) fn at_line(self, at: Option<u64>) -> DataError {
        match self {
            DataError::Row {
                row,
                column,
                message,
                ..
            } => DataError::Row {
                row,
                line: at,
                column,
                message,
            },
            other => other,
        }
    }
}

fn join(errors: &[DataError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn line_suffix(line: &Option<u64>) -> String {
    line.map(|l| format!(" (line {l})")).unwrap_or_default()
}

fn column_suffix(column: &Option<String>) -> String {
    column
        .as_ref()
        .map(|c| format!(", column {c:?}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_error_gives_row_line_and_column() {
        let e = DataError::cell(12, "age", "not a number").at_line(Some(13));
        assert_eq!(
            e.to_string(),
            r#"row 12 (line 13), column "age": not a number"#
        );
        let e = DataError::row(3, "expected 15 fields, found 14");
        assert_eq!(e.to_string(), "row 3: expected 15 fields, found 14");
    }
}
