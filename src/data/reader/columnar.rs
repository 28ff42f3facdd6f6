//! Parquet and Arrow IPC input, with the Apache Arrow project's crates.
//!
//! The file is decoded a batch of [`BATCH_ROWS`] rows at a time (Parquet row
//! group by row group, reading only the columns the schema uses), so memory
//! holds the growing bit matrix, the footer and a few batches, never the
//! table. This module only turns Arrow arrays into cells: each cell becomes
//! the text a CSV writer would have written for it (an integer's digits, a
//! float's shortest round-trip decimal, `true`/`false`, the string) or a
//! null, and goes through the same encoder calls as a CSV field
//! ([`Encoder::encode_field`], [`Encoder::encode_cell`] for a null, the
//! reader's label function), so a Parquet copy of a CSV encodes to the same
//! literals, with the same errors.
//!
//! Column types must match the schema: a categorical column is a string
//! (plain, large, view or dictionary-encoded) or an integer, a numeric
//! column a float or an integer, a boolean column a boolean; a binary label
//! a string, an integer or a boolean, a regression label a float or an
//! integer. Ignored columns are never decoded. A null is a missing value
//! where the column declares missing tokens, and an error naming the column
//! and the row otherwise (for a label: "empty label").
//!
//! Errors name the column and the 1-based data row (there are no lines);
//! a batch that cannot be decoded is refused with fixed text, since a
//! decoder's message could quote bytes of a cell.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type, UInt8Type,
    UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rayon::prelude::*;

use super::{
    BitMatrixBuilder, DataError, Dataset, Encoder, Label, LabelColumn, Layout, OnBadRow,
    ReadOptions, ReadReport, UnitHasher, UnitKey, bound_units, column_block, encode_label_field,
    layout_names, unit_hasher, unit_key_of_cell,
};
use crate::data::schema::{Column, Task};

/// Rows decoded at a time: small enough that a batch of a wide table is a
/// few MiB, large enough that handing batches to the pool costs nothing.
const BATCH_ROWS: usize = 8192;

/// Batches encoded together per rayon thread.
const BATCHES_PER_THREAD: usize = 2;

/// The format of a data file or upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180 CSV with a header row.
    Csv,
    /// Apache Parquet (starts and ends with `PAR1`).
    Parquet,
    /// Arrow IPC file format, also called Feather v2 (starts with `ARROW1`).
    ArrowIpc,
}

impl Format {
    /// The format whose magic bytes start `head` (CSV when none does).
    pub fn sniff(head: &[u8]) -> Format {
        if head.starts_with(b"PAR1") {
            Format::Parquet
        } else if head.starts_with(b"ARROW1") {
            Format::ArrowIpc
        } else {
            Format::Csv
        }
    }

    /// The format told by a media type (`None` when it tells nothing:
    /// absent, `application/octet-stream`, unknown).
    pub fn from_media_type(media: &str) -> Option<Format> {
        let essence = media.split(';').next().unwrap_or("").trim();
        match essence.to_ascii_lowercase().as_str() {
            "text/csv" => Some(Format::Csv),
            "application/vnd.apache.parquet" | "application/x-parquet" => Some(Format::Parquet),
            "application/vnd.apache.arrow.file" => Some(Format::ArrowIpc),
            _ => None,
        }
    }

    /// The format of the file at `path`: by its extension (`.parquet`,
    /// `.pq`; `.arrow`, `.feather`, `.ipc`), else by its first bytes.
    pub fn of_path(path: &Path) -> std::io::Result<Format> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("parquet" | "pq") => return Ok(Format::Parquet),
            Some("arrow" | "feather" | "ipc") => return Ok(Format::ArrowIpc),
            Some("csv") => return Ok(Format::Csv),
            _ => {}
        }
        let mut head = [0u8; 6];
        let mut file = File::open(path)?;
        let mut n = 0;
        while n < head.len() {
            match file.read(&mut head[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(Format::sniff(&head[..n]))
    }

    fn name(self) -> &'static str {
        match self {
            Format::Csv => "CSV",
            Format::Parquet => "Parquet",
            Format::ArrowIpc => "Arrow IPC",
        }
    }
}

/// A source of record batches: the Arrow schema's field names and types,
/// and the batches of the columns asked for.
type Batches = Box<dyn Iterator<Item = Result<RecordBatch, String>>>;

fn format_error(format: Format, message: impl std::fmt::Display) -> DataError {
    DataError::Format {
        format: format.name(),
        message: message.to_string(),
    }
}

/// The file's column names and types, its row count, and a function that
/// opens its batches of the given columns (indices into the names).
struct Opened {
    fields: Vec<(String, DataType)>,
    rows: Option<usize>,
    open: Box<dyn FnOnce(Vec<usize>) -> Result<Batches, DataError>>,
}

fn open_parquet(file: File) -> Result<Opened, DataError> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| format_error(Format::Parquet, e))?;
    let fields = fields_of(builder.schema());
    let rows = usize::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let open = Box::new(move |columns: Vec<usize>| -> Result<Batches, DataError> {
        let mask = ProjectionMask::roots(builder.parquet_schema(), columns);
        let reader = builder
            .with_projection(mask)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(|e| format_error(Format::Parquet, e))?;
        Ok(Box::new(reader.map(|b| b.map_err(|e| e.to_string()))) as Batches)
    });
    Ok(Opened {
        fields,
        rows: Some(rows),
        open,
    })
}

fn open_arrow_ipc(file: File) -> Result<Opened, DataError> {
    // The schema first (a reader without projection reads only the footer),
    // then a reader of the columns asked for.
    let mut file = file;
    let probe =
        arrow_ipc::reader::FileReader::try_new(file.try_clone().map_err(DataError::Io)?, None)
            .map_err(|e| format_error(Format::ArrowIpc, e))?;
    let fields = fields_of(&probe.schema());
    drop(probe);
    let open = Box::new(move |columns: Vec<usize>| -> Result<Batches, DataError> {
        file.seek(SeekFrom::Start(0)).map_err(DataError::Io)?;
        let reader = arrow_ipc::reader::FileReader::try_new(file, Some(columns))
            .map_err(|e| format_error(Format::ArrowIpc, e))?;
        Ok(Box::new(reader.map(|b| b.map_err(|e| e.to_string()))) as Batches)
    });
    Ok(Opened {
        fields,
        rows: None,
        open,
    })
}

fn fields_of(schema: &arrow_schema::Schema) -> Vec<(String, DataType)> {
    schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect()
}

/// Read a Parquet file and encode it, like [`super::read_csv_with`] reads a
/// CSV: the same schema checks, row errors, skipping and refusals. A file
/// whose footer counts more than `max_rows` rows is refused before any row
/// is decoded ([`DataError::TooManyRows`]).
pub fn read_parquet_with(
    file: File,
    encoder: &Encoder,
    options: &ReadOptions,
    max_rows: usize,
) -> Result<ReadReport, DataError> {
    read_columnar(
        Format::Parquet,
        open_parquet(file)?,
        encoder,
        options,
        max_rows,
    )
}

/// Read an Arrow IPC file (Feather v2) like [`read_parquet_with`]; the row
/// limit is checked batch by batch as the batches are read.
pub fn read_arrow_ipc_with(
    file: File,
    encoder: &Encoder,
    options: &ReadOptions,
    max_rows: usize,
) -> Result<ReadReport, DataError> {
    read_columnar(
        Format::ArrowIpc,
        open_arrow_ipc(file)?,
        encoder,
        options,
        max_rows,
    )
}

/// What one column of the file is to the schema.
#[derive(Clone, Copy)]
enum Role {
    Feature(usize),
    Label,
    /// The privacy unit's identifier (training rows of a schema with one).
    Unit,
}

/// Whether an Arrow type may hold a schema column of this kind (`None`
/// for the label: `task` decides).
fn type_fits(
    data_type: &DataType,
    column: Option<&Column>,
    task: Task,
) -> Result<(), &'static str> {
    let string =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    let text = match data_type {
        DataType::Dictionary(_, values) => string(values),
        t => string(t),
    };
    let integer = data_type.is_integer();
    let float = data_type.is_floating();
    let boolean = *data_type == DataType::Boolean;
    match column {
        Some(Column::Categorical(_)) if text || integer => Ok(()),
        Some(Column::Categorical(_)) => Err("a categorical column must be a string or an integer"),
        Some(Column::Numeric(_)) if float || integer => Ok(()),
        Some(Column::Numeric(_)) => Err("a numeric column must be a float or an integer"),
        Some(Column::Boolean(_)) if boolean => Ok(()),
        Some(Column::Boolean(_)) => Err("a boolean column must be a boolean"),
        Some(Column::Ignore(_)) => Ok(()),
        None => match task {
            Task::Binary if text || integer || boolean => Ok(()),
            Task::Binary => Err("the label must be a string, an integer or a boolean"),
            Task::Regression { .. } if float || integer => Ok(()),
            Task::Regression { .. } => Err("a numeric label must be a float or an integer"),
            Task::Multiclass { .. } if text || integer => Ok(()),
            Task::Multiclass { .. } => Err("a class label must be a string or an integer"),
        },
    }
}

/// Whether an Arrow type may hold unit identifiers: strings or integers
/// (hashed as the text a CSV writer would write, so a Parquet copy of a CSV
/// groups its rows into the same units).
fn unit_type_fits(data_type: &DataType) -> Result<(), &'static str> {
    let string =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    match data_type {
        DataType::Dictionary(_, values) if string(values) => Ok(()),
        t if string(t) || t.is_integer() => Ok(()),
        _ => Err("the privacy unit identifier must be a string or an integer"),
    }
}

fn read_columnar(
    format: Format,
    opened: Opened,
    encoder: &Encoder,
    options: &ReadOptions,
    max_rows: usize,
) -> Result<ReadReport, DataError> {
    let columns_error = |message: String| DataError::Columns {
        format: format.name(),
        message,
    };
    if let Some(rows) = opened.rows
        && rows > max_rows
    {
        return Err(DataError::TooManyRows { max: max_rows });
    }
    let names: Vec<&str> = opened.fields.iter().map(|(n, _)| n.trim()).collect();
    if names.is_empty() {
        return Err(format_error(format, "the file has no columns"));
    }
    let layout: Layout =
        layout_names(&names, encoder, options.label, "the file").map_err(columns_error)?;
    let schema = encoder.schema();
    let task = schema.task();
    // The columns read, in file order (the order of a projection's batch).
    let mut wanted: Vec<(usize, Role)> = layout
        .features
        .iter()
        .map(|&(i, f)| (i, Role::Feature(f)))
        .chain(layout.label.map(|i| (i, Role::Label)))
        .chain(layout.unit.map(|i| (i, Role::Unit)))
        .collect();
    wanted.sort_by_key(|&(i, _)| i);
    let mut wrong = Vec::new();
    for &(i, role) in &wanted {
        let fits = match role {
            Role::Feature(_) => {
                let column = schema.columns.iter().find(|c| c.name() == names[i]);
                type_fits(&opened.fields[i].1, column, task)
            }
            Role::Label => type_fits(&opened.fields[i].1, None, task),
            Role::Unit => unit_type_fits(&opened.fields[i].1),
        };
        if let Err(why) = fits {
            wrong.push(format!(
                "column {:?} is {}: {why}",
                names[i], opened.fields[i].1
            ));
        }
    }
    if !wrong.is_empty() {
        return Err(columns_error(wrong.join("; ")));
    }
    let roles: Vec<Role> = wanted.iter().map(|&(_, r)| r).collect();
    let names_read: Vec<&str> = wanted.iter().map(|&(i, _)| names[i]).collect();
    let mut batches = (opened.open)(wanted.iter().map(|&(i, _)| i).collect())?;
    // A key per upload, from the OS CSPRNG, dropped when the read ends
    // (as for CSV, `super::unit_hasher`).
    let hasher = layout.unit.map(|_| unit_hasher()).transpose()?;
    let mut units: Option<Vec<UnitKey>> = layout.unit.map(|_| Vec::new());

    let max_errors = options.max_errors.max(1);
    let mut bits = BitMatrixBuilder::new(encoder.n_literals());
    let mut labels = layout.label.map(|_| LabelColumn::for_task(task));
    let mut errors: Vec<DataError> = Vec::new();
    let (mut rows, mut skipped) = (0usize, 0usize);
    let wave = BATCHES_PER_THREAD * rayon::current_num_threads();
    loop {
        let mut batch_wave = Vec::with_capacity(wave);
        while batch_wave.len() < wave {
            match batches.next() {
                None => break,
                Some(Ok(b)) => batch_wave.push(b),
                Some(Err(_)) => {
                    // The decoder's message may quote bytes of a cell.
                    return Err(format_error(
                        format,
                        format!(
                            "the rows after row {} could not be decoded (a corrupt file, or an \
                             encoding or compression this reader does not support: Parquet \
                             with snappy, zstd or gzip, Arrow IPC uncompressed or zstd)",
                            rows + batch_wave.iter().map(RecordBatch::num_rows).sum::<usize>()
                        ),
                    ));
                }
            }
        }
        if batch_wave.is_empty() {
            break;
        }
        let results: Vec<BatchResult> = batch_wave
            .par_iter()
            .map(|b| encode_batch(b, &roles, &names_read, encoder, hasher.as_ref(), max_errors))
            .collect();
        drop(batch_wave);
        for r in results {
            if rows + r.records > max_rows {
                return Err(DataError::TooManyRows { max: max_rows });
            }
            for (index, e) in r.errors {
                if errors.len() < max_errors {
                    errors.push(at_row(e, rows + index + 1));
                }
                if options.on_bad_row == OnBadRow::Refuse && errors.len() == max_errors {
                    return Err(refusal(errors));
                }
            }
            skipped += r.bad;
            bits.append_block(&r.bits, r.good);
            match (labels.as_mut(), r.labels) {
                (Some(LabelColumn::Binary(column)), Some(BatchLabels::Binary(ys))) => {
                    for y in ys {
                        column.push(y);
                    }
                }
                (Some(LabelColumn::Numeric(column)), Some(BatchLabels::Numeric(ys))) => {
                    column.extend(ys)
                }
                (Some(LabelColumn::Class(column)), Some(BatchLabels::Class(ys))) => {
                    column.extend(ys)
                }
                _ => {}
            }
            if let Some(units) = units.as_mut() {
                units.extend(r.units);
            }
            rows += r.records;
        }
    }
    if options.on_bad_row == OnBadRow::Refuse && !errors.is_empty() {
        return Err(refusal(errors));
    }
    if bits.n_rows() == 0 {
        return Err(DataError::NoRows);
    }
    let (labels, targets, classes) = match labels {
        None => (None, None, None),
        Some(LabelColumn::Binary(b)) => (Some(b), None, None),
        Some(LabelColumn::Numeric(v)) => (None, Some(v), None),
        Some(LabelColumn::Class(c)) => (None, None, Some(c)),
    };
    let dataset = Dataset {
        features: bits.finish(),
        labels,
        targets,
        classes,
        one_hot_groups: encoder.one_hot_groups().to_vec(),
    };
    // Contribution bounding before anything else sees the rows, exactly as
    // for CSV (`super::bound_units`).
    let (dataset, unit_dropped, units) = bound_units(dataset, units, encoder)?;
    Ok(ReadReport {
        dataset,
        skipped,
        errors,
        unit_dropped,
        units,
    })
}

fn refusal(mut errors: Vec<DataError>) -> DataError {
    if errors.len() == 1 {
        errors.swap_remove(0)
    } else {
        DataError::Rows { errors }
    }
}

/// A row error placed at its data row (files of columns have no lines).
fn at_row(e: DataError, row: usize) -> DataError {
    match e {
        DataError::Row {
            column, message, ..
        } => DataError::Row {
            row,
            line: None,
            column,
            message,
        },
        other => other,
    }
}

enum BatchLabels {
    Binary(Vec<bool>),
    Numeric(Vec<f64>),
    Class(Vec<u16>),
}

/// One batch encoded.
struct BatchResult {
    records: usize,
    good: usize,
    bits: Vec<u64>,
    labels: Option<BatchLabels>,
    /// The good rows' unit keys, in row order (empty without a unit).
    units: Vec<UnitKey>,
    bad: usize,
    /// The first `max_errors` bad rows: the row's index in the batch and the
    /// error (row still unset).
    errors: Vec<(usize, DataError)>,
}

/// One column of a batch as cells: the text of cell `r` is
/// `bytes[ends[r - 1]..ends[r]]` (from 0 for the first), and `null[r]`
/// says whether it is a null.
#[derive(Default)]
struct Cells {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    null: Vec<bool>,
}

impl Cells {
    fn get(&self, r: usize) -> Option<&[u8]> {
        if self.null[r] {
            return None;
        }
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        Some(&self.bytes[start..self.ends[r]])
    }

    fn end_cell(&mut self, null: bool) {
        self.ends.push(self.bytes.len());
        self.null.push(null);
    }
}

/// The cells of an array: each value as a CSV writer would write it.
/// Types other than strings, integers, floats and booleans are an error
/// (the caller has checked the types against the schema).
fn cells_of(array: &dyn Array) -> Result<Cells, String> {
    let n = array.len();
    let mut cells = Cells {
        bytes: Vec::with_capacity(n * 8),
        ends: Vec::with_capacity(n),
        null: Vec::with_capacity(n),
    };
    let nulls = array.logical_nulls();
    let is_null = |r: usize| nulls.as_ref().is_some_and(|b| b.is_null(r));
    macro_rules! each {
        ($values:expr, |$v:ident, $out:ident| $write:expr) => {{
            for (r, $v) in $values.enumerate() {
                let $out = &mut cells.bytes;
                if !is_null(r) {
                    $write;
                }
                cells.end_cell(is_null(r));
            }
        }};
    }
    macro_rules! number {
        ($t:ty) => {
            each!(array.as_primitive::<$t>().values().iter(), |v, out| {
                let _ = write!(out, "{v}");
            })
        };
    }
    match array.data_type() {
        DataType::Utf8 => each!(array.as_string::<i32>().iter(), |v, out| out
            .extend_from_slice(v.unwrap_or("").as_bytes())),
        DataType::LargeUtf8 => each!(array.as_string::<i64>().iter(), |v, out| out
            .extend_from_slice(v.unwrap_or("").as_bytes())),
        DataType::Utf8View => each!(array.as_string_view().iter(), |v, out| out
            .extend_from_slice(v.unwrap_or("").as_bytes())),
        DataType::Dictionary(_, _) => {
            let dictionary = array.as_any_dictionary();
            let values = cells_of(dictionary.values().as_ref())?;
            let keys = dictionary.normalized_keys();
            each!(keys.iter(), |k, out| if let Some(v) = values.get(*k) {
                out.extend_from_slice(v)
            });
        }
        DataType::Int8 => number!(Int8Type),
        DataType::Int16 => number!(Int16Type),
        DataType::Int32 => number!(Int32Type),
        DataType::Int64 => number!(Int64Type),
        DataType::UInt8 => number!(UInt8Type),
        DataType::UInt16 => number!(UInt16Type),
        DataType::UInt32 => number!(UInt32Type),
        DataType::UInt64 => number!(UInt64Type),
        // Each float as the shortest decimal that reads back as the same
        // float of its own width (a float32 0.1 is "0.1", as a CSV writer
        // of that column would write it); infinities and NaN are written
        // as words the encoder refuses as not finite.
        DataType::Float16 => each!(
            array.as_primitive::<Float16Type>().values().iter(),
            |v, out| {
                let _ = write!(out, "{}", v.to_f32());
            }
        ),
        DataType::Float32 => number!(Float32Type),
        DataType::Float64 => number!(Float64Type),
        DataType::Boolean => each!(array.as_boolean().iter(), |v, out| out
            .extend_from_slice(if v == Some(true) { b"true" } else { b"false" })),
        other => return Err(format!("columns of type {other} cannot be read")),
    }
    Ok(cells)
}

/// Encode one batch (a rayon task): every row's cells through the encoder.
fn encode_batch(
    batch: &RecordBatch,
    roles: &[Role],
    names: &[&str],
    encoder: &Encoder,
    hasher: Option<&UnitHasher>,
    max_errors: usize,
) -> BatchResult {
    let records = batch.num_rows();
    let columns: Vec<Result<Cells, String>> = batch
        .columns()
        .iter()
        .map(|a| cells_of(a.as_ref()))
        .collect();
    let mut labels =
        roles
            .iter()
            .any(|r| matches!(r, Role::Label))
            .then(|| match encoder.schema().task() {
                Task::Binary => BatchLabels::Binary(Vec::with_capacity(records)),
                Task::Regression { .. } => BatchLabels::Numeric(Vec::with_capacity(records)),
                Task::Multiclass { .. } => BatchLabels::Class(Vec::with_capacity(records)),
            });
    let mut active: Vec<u32> = Vec::with_capacity(records * roles.len());
    let mut starts = Vec::with_capacity(records);
    let mut errors = Vec::new();
    let mut units = Vec::new();
    let mut bad = 0;
    for r in 0..records {
        let start = active.len();
        let mut label = None;
        let mut unit = None;
        let mut encoded = Ok(());
        for ((role, cells), name) in roles.iter().zip(&columns).zip(names) {
            let cells = match cells {
                Ok(c) => c,
                Err(message) => {
                    encoded = Err(DataError::cell(0, name, message.clone()));
                    break;
                }
            };
            let cell = cells.get(r);
            encoded = match (role, cell) {
                (Role::Feature(f), Some(raw)) => {
                    encoder.encode_field(*f, raw, 0, name, &mut active)
                }
                (Role::Feature(f), None) => encoder.encode_cell(*f, None, 0, &mut active),
                (Role::Label, raw) => {
                    encode_label_field(raw.unwrap_or(b""), encoder).map(|l| label = Some(l))
                }
                (Role::Unit, raw) => match hasher {
                    Some(hasher) => unit_key_of_cell(raw, encoder, hasher).map(|k| unit = Some(k)),
                    None => Ok(()),
                },
            };
            if encoded.is_err() {
                break;
            }
        }
        match encoded {
            Ok(()) => {
                starts.push(start);
                units.extend(unit);
                match (&mut labels, label) {
                    (Some(BatchLabels::Binary(ys)), Some(Label::Binary(y))) => ys.push(y),
                    (Some(BatchLabels::Numeric(ys)), Some(Label::Numeric(y))) => ys.push(y),
                    (Some(BatchLabels::Class(ys)), Some(Label::Class(y))) => ys.push(y),
                    _ => {}
                }
            }
            Err(e) => {
                active.truncate(start);
                bad += 1;
                if errors.len() < max_errors {
                    errors.push((r, e));
                }
            }
        }
    }
    let good = starts.len();
    let bits = column_block(&active, &mut starts, encoder.n_literals());
    BatchResult {
        records,
        good,
        bits,
        labels,
        units,
        bad,
        errors,
    }
}

/// A Parquet or Arrow IPC file as CSV text, produced batch by batch as it
/// is read: every column, its cells written as [`read_parquet_with`] sees
/// them, nulls as empty fields. For the commands that take CSV text
/// without a schema (`schema propose`, `randomize`).
pub fn to_csv(file: File, format: Format) -> Result<impl Read, DataError> {
    let opened = match format {
        Format::Parquet => open_parquet(file)?,
        Format::ArrowIpc => open_arrow_ipc(file)?,
        Format::Csv => return Err(format_error(format, "already CSV")),
    };
    let mut header = csv::Writer::from_writer(Vec::new());
    header
        .write_record(opened.fields.iter().map(|(n, _)| n.as_str()))
        .map_err(|e| DataError::Io(std::io::Error::other(e)))?;
    let header = header
        .into_inner()
        .map_err(|e| DataError::Io(std::io::Error::other(e.to_string())))?;
    let all = (0..opened.fields.len()).collect();
    let batches = (opened.open)(all)?;
    Ok(CsvText {
        format,
        batches,
        buffer: header,
        at: 0,
        rows: 0,
    })
}

struct CsvText {
    format: Format,
    batches: Batches,
    buffer: Vec<u8>,
    at: usize,
    rows: usize,
}

impl CsvText {
    /// Render the next batch into the buffer; `false` at the end.
    fn fill(&mut self) -> std::io::Result<bool> {
        let Some(batch) = self.batches.next() else {
            return Ok(false);
        };
        let batch = batch.map_err(|_| {
            std::io::Error::other(format_error(
                self.format,
                format!("the rows after row {} could not be decoded", self.rows),
            ))
        })?;
        let columns = batch
            .columns()
            .iter()
            .map(|a| cells_of(a.as_ref()))
            .collect::<Result<Vec<Cells>, String>>()
            .map_err(|m| std::io::Error::other(format_error(self.format, m)))?;
        let mut writer = csv::Writer::from_writer(std::mem::take(&mut self.buffer));
        for r in 0..batch.num_rows() {
            writer.write_record(columns.iter().map(|c| c.get(r).unwrap_or(&b""[..])))?;
        }
        self.buffer = writer
            .into_inner()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        self.rows += batch.num_rows();
        Ok(true)
    }
}

impl Read for CsvText {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.buffer.len() {
            self.buffer.clear();
            self.at = 0;
            if !self.fill()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.buffer.len() - self.at);
        buf[..n].copy_from_slice(&self.buffer[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
