//! The reader as it was before the parallel one: the `csv` crate, one
//! record at a time, each cell decoded, trimmed and encoded with
//! [`Encoder::encode_cell`]. Kept only as the test oracle that the
//! parallel reader must match (rows, labels, skipped rows, errors with
//! their rows and lines, refusals); see `tests_parallel`.

use std::io::Read;

use super::{Label, LabelColumn, Layout, OnBadRow, ReadOptions, ReadReport, layout};
use crate::data::bits::BitMatrixBuilder;
use crate::data::bounded::{RecordBound, read_record};
use crate::data::dataset::Dataset;
use crate::data::encode::Encoder;
use crate::data::error::DataError;
use crate::data::schema::Task;

/// Read like [`super::read_csv_with`], sequentially, with a record limit of
/// `max_record` bytes.
pub(super) fn read<R: Read>(
    reader: R,
    encoder: &Encoder,
    options: &ReadOptions,
    max_record: u64,
) -> Result<ReadReport, DataError> {
    let max_errors = options.max_errors.max(1);
    let mut csv = RecordBound::csv_reader(reader, max_record);
    let header = match csv.byte_headers() {
        Ok(h) => h.clone(),
        Err(e) => return Err(failure(&csv, e, 0)),
    };
    if header.is_empty() {
        return Err(DataError::Empty);
    }
    let layout = layout(&header, encoder, options.label)?;
    let mut bits = BitMatrixBuilder::new(encoder.n_literals());
    let mut labels = layout
        .label
        .map(|_| LabelColumn::for_task(encoder.schema().task()));
    let (mut row, mut skipped, mut errors) = (0, 0, Vec::new());
    let mut record = csv::ByteRecord::new();
    let mut active = Vec::new();
    loop {
        match read_record(&mut csv, &mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(failure(&csv, e, row + 1)),
        }
        row += 1;
        active.clear();
        match encode(&record, &layout, encoder, row, &mut active) {
            Ok(label) => {
                bits.push_row(&active);
                match (labels.as_mut(), label) {
                    (Some(LabelColumn::Binary(b)), Some(Label::Binary(y))) => b.push(y),
                    (Some(LabelColumn::Numeric(v)), Some(Label::Numeric(y))) => v.push(y),
                    (Some(LabelColumn::Class(v)), Some(Label::Class(y))) => v.push(y),
                    _ => {}
                }
            }
            Err(e) => {
                skipped += 1;
                if errors.len() < max_errors {
                    errors.push(e.at_line(record.position().map(csv::Position::line)));
                }
                if options.on_bad_row == OnBadRow::Refuse && errors.len() == max_errors {
                    return Err(rows(errors));
                }
            }
        }
    }
    if options.on_bad_row == OnBadRow::Refuse && !errors.is_empty() {
        return Err(rows(errors));
    }
    if bits.n_rows() == 0 {
        return Err(DataError::NoRows);
    }
    let (labels, targets, classes) = match labels {
        None => (None, None, None),
        Some(LabelColumn::Binary(b)) => (Some(b), None, None),
        Some(LabelColumn::Numeric(v)) => (None, Some(v), None),
        Some(LabelColumn::Class(v)) => (None, None, Some(v)),
    };
    Ok(ReadReport {
        dataset: Dataset {
            features: bits.finish(),
            labels,
            targets,
            classes,
            one_hot_groups: encoder.one_hot_groups().to_vec(),
        },
        skipped,
        errors,
        unit_dropped: 0,
        units: None,
    })
}

fn rows(mut errors: Vec<DataError>) -> DataError {
    if errors.len() == 1 {
        errors.swap_remove(0)
    } else {
        DataError::Rows { errors }
    }
}

fn encode(
    record: &csv::ByteRecord,
    layout: &Layout,
    encoder: &Encoder,
    row: usize,
    active: &mut Vec<u32>,
) -> Result<Option<Label>, DataError> {
    if record.len() != layout.width {
        return Err(DataError::row(
            row,
            format!("expected {} fields, found {}", layout.width, record.len()),
        ));
    }
    let field = |i: usize, column: &str| {
        std::str::from_utf8(&record[i])
            .map(str::trim)
            .map_err(|_| DataError::cell(row, column, "not valid UTF-8"))
    };
    for &(i, f) in &layout.features {
        let value = field(i, &encoder.feature_names()[f])?;
        encoder.encode_cell(f, Some(value), row, active)?;
    }
    let Some(i) = layout.label else {
        return Ok(None);
    };
    let value = field(i, encoder.schema().label_column())?;
    Ok(Some(match encoder.schema().task() {
        Task::Binary => Label::Binary(encoder.encode_label(value, row)?),
        Task::Regression { .. } => Label::Numeric(encoder.encode_target(value, row)?),
        Task::Multiclass { .. } => Label::Class(encoder.encode_class(value, row)?),
    }))
}

fn failure<R: Read>(csv: &csv::Reader<RecordBound<R>>, e: csv::Error, row: usize) -> DataError {
    if !csv.get_ref().tripped() {
        return match e.into_kind() {
            csv::ErrorKind::Io(io) => DataError::Io(io),
            _ => DataError::row(row, "malformed CSV record"),
        };
    }
    let max = csv.get_ref().max();
    if row == 0 {
        DataError::header(format!("the header row is longer than {max} bytes"))
    } else {
        DataError::row(row, format!("the record is longer than {max} bytes"))
            .at_line(Some(csv.position().line()))
    }
}
