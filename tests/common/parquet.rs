//! Parquet files for the upload tests: named Arrow columns written as one
//! record batch.

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

/// The columns (name, values; all non-nullable fields) as Parquet bytes, in
/// row groups of at most `row_group` rows when given (else the writer's
/// default).
pub fn parquet_bytes(columns: Vec<(&str, ArrayRef)>, row_group: Option<usize>) -> Vec<u8> {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, a)| Field::new(*n, a.data_type().clone(), false))
            .collect::<Vec<_>>(),
    ));
    let batch =
        RecordBatch::try_new(schema.clone(), columns.into_iter().map(|c| c.1).collect()).unwrap();
    let props = row_group.map(|rows| {
        WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows))
            .build()
    });
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, schema, props).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out
}
