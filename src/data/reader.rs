//! The streaming CSV reader: header check against the schema, then rows -> bits.
//!
//! Input is RFC 4180 CSV (comma separated, `"` quoting, UTF-8, header row required),
//! read with the `csv` crate one record at a time into a reused byte buffer: the file
//! is never held as strings, only the growing bit matrix is. Every field is trimmed of
//! surrounding whitespace. Cells of ignored columns are not even decoded. A record
//! longer than [`MAX_RECORD_BYTES`] is refused while it is being read, so that memory
//! stays bounded whatever the input (one endless field, an unclosed quote).
//!
//! Header rules: every schema column (and the label, when required) must be present;
//! a header column the schema does not declare is an error (the owner should declare
//! it `"type": "ignore"`), as are duplicate header names. Row errors carry the 1-based
//! data row, the file line and the column; never the cell's value (SPEC §2).

use std::collections::{HashMap, HashSet};
use std::io::Read;

use rayon::prelude::*;

use super::bits::{BitMatrixBuilder, BitVec};
use super::dataset::Dataset;
use super::encode::Encoder;
use super::error::DataError;
use super::schema::Task;

/// Longest record (a whole CSV row, header included) the reader accepts, in bytes.
/// The `csv` crate buffers one whole record, so without a limit a single huge field
/// or an unclosed quote would grow that buffer to the size of the input. A longer
/// record is refused as soon as the parser has read this much of it and asks for
/// more, so it is never buffered whole.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

/// The CSV parser's read buffer.
const READ_BUFFER: usize = 64 << 10;

/// Records parsed before a batch is encoded in parallel.
const BATCH: usize = 16 << 10;
/// A batch also ends once its fields hold this many bytes (so that long
/// records cannot make a batch hold BATCH x [`MAX_RECORD_BYTES`]).
const BATCH_BYTES: usize = 4 << 20;
/// Records per parallel encoding task.
const ENCODE_CHUNK: usize = 1024;

/// The input as the parser sees it: fails when the parser asks for more input while
/// it has already consumed [`MAX_RECORD_BYTES`] of the current record. (The parser
/// reads only when its buffer is empty, so everything taken since the record's start
/// belongs to that record.)
struct Bounded<R> {
    inner: R,
    /// Bytes handed to the parser so far.
    taken: u64,
    /// Byte offset where the record being parsed starts (set by [`read`]).
    record_start: u64,
    /// Whether the limit was hit (to tell it from a real I/O error).
    tripped: bool,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.taken.saturating_sub(self.record_start) >= MAX_RECORD_BYTES {
            self.tripped = true;
            return Err(std::io::Error::other("CSV record too long"));
        }
        let n = self.inner.read(buf)?;
        self.taken += n as u64;
        Ok(n)
    }
}

/// Whether the label column must be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelMode {
    /// Training data: the label column must be present.
    Required,
    /// Prediction rows: the label column may be absent (then `labels` is `None`); if
    /// present it is read and checked like training labels.
    Optional,
}

/// Where each needed field is in a record.
struct Layout {
    /// Number of header fields; every record must have this many.
    width: usize,
    /// `(field index, feature index)`, in feature order so literals come out ascending.
    features: Vec<(usize, usize)>,
    /// Field index of the label, if read.
    label: Option<usize>,
}

/// What to do with a data row the schema refuses (SPEC §3: malformed rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnBadRow {
    /// Refuse the whole input (the default): never a half-written dataset.
    Refuse,
    /// Leave the row out and count it; only for the owner, who is told how many rows
    /// were skipped and why.
    Skip,
}

/// Options of [`read_csv_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Whether the label column must be present.
    pub label: LabelMode,
    /// Refuse the input or skip bad rows.
    pub on_bad_row: OnBadRow,
    /// How many row errors to collect: reading stops at this many when refusing, and
    /// the report keeps the first this many when skipping. At least 1 is used.
    pub max_errors: usize,
}

impl ReadOptions {
    /// Refuse on the first bad row (what [`read_csv`] does).
    pub fn new(label: LabelMode) -> ReadOptions {
        ReadOptions {
            label,
            on_bad_row: OnBadRow::Refuse,
            max_errors: 1,
        }
    }
}

/// The result of [`read_csv_with`].
#[derive(Debug)]
pub struct ReadReport {
    /// The valid rows, encoded.
    pub dataset: Dataset,
    /// Number of rows left out (always 0 with [`OnBadRow::Refuse`]).
    pub skipped: usize,
    /// The first `max_errors` row errors of the skipped rows ([`DataError::Row`]s,
    /// which carry positions, never values). For the owner only.
    pub errors: Vec<DataError>,
}

/// Read a CSV with a header row and encode it, refusing it at the first bad row.
///
/// Errors: [`DataError::Empty`] without a header, [`DataError::Header`] when the header
/// does not match the schema, [`DataError::NoRows`] with a header only, and
/// [`DataError::Row`] at the first bad row (wrong field count, invalid UTF-8, a value
/// the schema refuses).
pub fn read_csv<R: Read>(
    reader: R,
    encoder: &Encoder,
    label: LabelMode,
) -> Result<Dataset, DataError> {
    match read(reader, encoder, &ReadOptions::new(label)) {
        Ok(report) => Ok(report.dataset),
        Err(Failure::Other(e)) => Err(e),
        // `max_errors` is 1, so there is exactly one.
        Err(Failure::Rows(mut errors)) => Err(errors.swap_remove(0)),
    }
}

/// Read a CSV like [`read_csv`], listing several bad rows or skipping them.
///
/// With [`OnBadRow::Refuse`] the first `max_errors` bad rows are returned together as
/// [`DataError::Rows`] (a single one as [`DataError::Row`]); with [`OnBadRow::Skip`]
/// they are left out and reported. Header, I/O and empty-input errors always refuse;
/// so does an input in which every row was skipped ([`DataError::NoRows`]).
pub fn read_csv_with<R: Read>(
    reader: R,
    encoder: &Encoder,
    options: &ReadOptions,
) -> Result<ReadReport, DataError> {
    read(reader, encoder, options).map_err(|f| match f {
        Failure::Other(e) => e,
        Failure::Rows(mut errors) if errors.len() == 1 => errors.swap_remove(0),
        Failure::Rows(errors) => DataError::Rows { errors },
    })
}

/// Why [`read`] refused the input.
enum Failure {
    /// The bad rows found (at most `max_errors`, at least one).
    Rows(Vec<DataError>),
    Other(DataError),
}

impl From<DataError> for Failure {
    fn from(e: DataError) -> Failure {
        Failure::Other(e)
    }
}

fn read<R: Read>(
    reader: R,
    encoder: &Encoder,
    options: &ReadOptions,
) -> Result<ReadReport, Failure> {
    let max_errors = options.max_errors.max(1);
    let mut csv = csv::ReaderBuilder::new()
        .has_headers(true)
        // Field counts are checked here, to report them as "expected N, found M".
        .flexible(true)
        .buffer_capacity(READ_BUFFER)
        .from_reader(Bounded {
            inner: reader,
            taken: 0,
            record_start: 0,
            tripped: false,
        });
    let header = match csv.byte_headers() {
        Ok(header) => header.clone(),
        Err(e) => return Err(csv_failure(&csv, e, 0).into()),
    };
    if header.is_empty() {
        return Err(DataError::Empty.into());
    }
    let layout = layout(&header, encoder, options.label)?;

    let mut bits = BitMatrixBuilder::new(encoder.n_literals());
    let mut labels = layout
        .label
        .map(|_| LabelColumn::for_task(encoder.schema().task()));
    // Records are parsed in order into a batch (at most BATCH records and
    // about BATCH_BYTES of fields, so memory stays bounded), the batch is
    // encoded in parallel chunks, and the results are taken in row order:
    // the rows, errors and refusals are those of a one-at-a-time read.
    let mut batch: Vec<csv::ByteRecord> = Vec::new();
    let mut errors = Vec::new();
    let (mut row, mut skipped) = (0, 0);
    let mut done = false;
    while !done {
        let (mut filled, mut bytes) = (0, 0);
        let mut read_error = None;
        while filled < BATCH && bytes < BATCH_BYTES {
            if batch.len() == filled {
                batch.push(csv::ByteRecord::new());
            }
            csv.get_mut().record_start = csv.position().byte();
            match csv.read_byte_record(&mut batch[filled]) {
                Ok(true) => {}
                Ok(false) => {
                    done = true;
                    break;
                }
                Err(e) => {
                    // Reported after the rows before it, as when reading
                    // one record at a time.
                    read_error = Some(csv_failure(&csv, e, row + filled + 1));
                    done = true;
                    break;
                }
            }
            bytes += batch[filled].as_slice().len();
            filled += 1;
        }
        let first_row = row + 1;
        let encoded: Vec<Encoded> = batch[..filled]
            .par_chunks(ENCODE_CHUNK)
            .enumerate()
            .map(|(c, records)| {
                let first = first_row + c * ENCODE_CHUNK;
                encode_chunk(records, first, &layout, encoder)
            })
            .collect();
        for (chunk, records) in encoded
            .into_iter()
            .zip(batch[..filled].chunks(ENCODE_CHUNK))
        {
            for (result, record) in chunk.results.into_iter().zip(records) {
                row += 1;
                match result {
                    Ok((range, label)) => {
                        bits.push_row(&chunk.active[range]);
                        match (labels.as_mut(), label) {
                            (Some(LabelColumn::Binary(bits)), Some(Label::Binary(y))) => {
                                bits.push(y);
                            }
                            (Some(LabelColumn::Numeric(values)), Some(Label::Numeric(y))) => {
                                values.push(y);
                            }
                            _ => {}
                        }
                    }
                    Err(e) => {
                        skipped += 1;
                        if errors.len() < max_errors {
                            let line = record.position().map(csv::Position::line);
                            errors.push(e.at_line(line));
                        }
                        if options.on_bad_row == OnBadRow::Refuse && errors.len() == max_errors {
                            return Err(Failure::Rows(errors));
                        }
                    }
                }
            }
        }
        if let Some(e) = read_error {
            return Err(e.into());
        }
    }
    if options.on_bad_row == OnBadRow::Refuse && !errors.is_empty() {
        return Err(Failure::Rows(errors));
    }
    if bits.n_rows() == 0 {
        return Err(DataError::NoRows.into());
    }
    let (labels, targets) = match labels {
        None => (None, None),
        Some(LabelColumn::Binary(bits)) => (Some(bits), None),
        Some(LabelColumn::Numeric(values)) => (None, Some(values)),
    };
    Ok(ReadReport {
        dataset: Dataset {
            features: bits.finish(),
            labels,
            targets,
            one_hot_groups: encoder.one_hot_groups().to_vec(),
        },
        skipped,
        errors,
    })
}

/// Check the header against the schema and locate the fields.
fn layout(
    header: &csv::ByteRecord,
    encoder: &Encoder,
    mode: LabelMode,
) -> Result<Layout, DataError> {
    let names = header
        .iter()
        .map(|f| std::str::from_utf8(f).map(str::trim))
        .collect::<Result<Vec<&str>, _>>()
        .map_err(|_| DataError::header("the header row is not valid UTF-8"))?;
    let mut position = HashMap::new();
    // In header order, each once (a set as well: a header may repeat many names).
    let mut duplicates = Vec::new();
    let mut reported = HashSet::new();
    for (i, &n) in names.iter().enumerate() {
        if position.insert(n, i).is_some() && reported.insert(n) {
            duplicates.push(n);
        }
    }
    if !duplicates.is_empty() {
        return Err(DataError::header(format!(
            "duplicate columns {}",
            list(&duplicates)
        )));
    }
    let schema = encoder.schema();
    let label_name = schema.label_column();
    let mut absent: Vec<&str> = schema
        .columns
        .iter()
        .map(|c| c.name())
        .filter(|n| !position.contains_key(n))
        .collect();
    if mode == LabelMode::Required && !position.contains_key(label_name) {
        absent.insert(0, label_name);
    }
    if !absent.is_empty() {
        return Err(DataError::header(format!(
            "columns declared in the schema but not in the CSV: {}",
            list(&absent)
        )));
    }
    let declared: HashSet<&str> = schema.columns.iter().map(|c| c.name()).collect();
    let extra: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| *n != label_name && !declared.contains(n))
        .collect();
    if !extra.is_empty() {
        return Err(DataError::header(format!(
            "columns not in the schema: {} (declare them with \"type\": \"ignore\" to skip them)",
            list(&extra)
        )));
    }
    let mut features: Vec<(usize, usize)> = names
        .iter()
        .enumerate()
        .filter_map(|(i, n)| encoder.column_role(n).flatten().map(|f| (i, f)))
        .collect();
    features.sort_by_key(|&(_, f)| f);
    Ok(Layout {
        width: names.len(),
        features,
        label: position.get(label_name).copied(),
    })
}

/// The label column as it is read: class bits, or regression values.
enum LabelColumn {
    Binary(BitVec),
    Numeric(Vec<f64>),
}

impl LabelColumn {
    fn for_task(task: Task) -> LabelColumn {
        match task {
            Task::Binary => LabelColumn::Binary(BitVec::new()),
            Task::Regression { .. } => LabelColumn::Numeric(Vec::new()),
        }
    }
}

/// One row's label as encoded.
enum Label {
    Binary(bool),
    Numeric(f64),
}

/// One row encoded: its literals' range in [`Encoded::active`] and its
/// label, or why it was refused.
type RowResult = Result<(std::ops::Range<usize>, Option<Label>), DataError>;

/// A chunk of records encoded: every row's literals back to back in
/// `active`, and per row its range there and its label, or its error.
struct Encoded {
    active: Vec<u32>,
    results: Vec<RowResult>,
}

/// Encode `records`, the first being data row `first_row`.
fn encode_chunk(
    records: &[csv::ByteRecord],
    first_row: usize,
    layout: &Layout,
    encoder: &Encoder,
) -> Encoded {
    let mut active = Vec::with_capacity(records.len() * layout.features.len());
    let results = records
        .iter()
        .enumerate()
        .map(|(k, record)| {
            let start = active.len();
            let result = encode_record(record, layout, encoder, first_row + k, &mut active);
            // A failed row keeps no literals.
            match result {
                Ok(label) => Ok((start..active.len(), label)),
                Err(e) => {
                    active.truncate(start);
                    Err(e)
                }
            }
        })
        .collect();
    Encoded { active, results }
}

/// Encode one record, appending its literals to `active`; returns its label
/// (if the layout has one).
fn encode_record(
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
    for &(i, f) in &layout.features {
        let value = field(record, i, row, &encoder.feature_names()[f])?;
        encoder.encode_cell(f, Some(value), row, active)?;
    }
    let Some(i) = layout.label else {
        return Ok(None);
    };
    let name = encoder.schema().label_column();
    let value = field(record, i, row, name)?;
    Ok(Some(match encoder.schema().task() {
        Task::Binary => Label::Binary(encoder.encode_label(value, row)?),
        Task::Regression { .. } => Label::Numeric(encoder.encode_target(value, row)?),
    }))
}

/// Field `i` decoded and trimmed.
fn field<'r>(
    record: &'r csv::ByteRecord,
    i: usize,
    row: usize,
    column: &str,
) -> Result<&'r str, DataError> {
    // The record has `layout.width` fields (checked first), and `i` is a header index.
    let bytes = &record[i];
    std::str::from_utf8(bytes)
        .map(str::trim)
        .map_err(|_| DataError::cell(row, column, "not valid UTF-8"))
}

/// A `csv` error as ours, telling an over-long record from a real I/O error.
/// `row` 0 is the header.
fn csv_failure<R: Read>(csv: &csv::Reader<Bounded<R>>, e: csv::Error, row: usize) -> DataError {
    if !csv.get_ref().tripped {
        return from_csv(e, row);
    }
    if row == 0 {
        DataError::header(format!(
            "the header row is longer than {MAX_RECORD_BYTES} bytes"
        ))
    } else {
        DataError::row(
            row,
            format!("the record is longer than {MAX_RECORD_BYTES} bytes"),
        )
        .at_line(Some(csv.position().line()))
    }
}

/// A `csv` error as ours. With byte records and flexible field counts only I/O errors
/// remain in practice; anything else is reported without its text, which could quote
/// data.
fn from_csv(e: csv::Error, row: usize) -> DataError {
    let line = e.position().map(csv::Position::line);
    match e.into_kind() {
        csv::ErrorKind::Io(io) => DataError::Io(io),
        _ if row == 0 => DataError::header("malformed header row"),
        _ => DataError::row(row, "malformed CSV record").at_line(line),
    }
}

/// `"a", "b"` for an error message.
fn list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Schema;

    const SCHEMA: &str = r#"{
      "label": {"column": "y", "positive": "+", "negative": "-"},
      "columns": [
        {"name": "age", "type": "numeric", "min": 0, "max": 100, "thresholds": [50]},
        {"name": "id", "type": "ignore"},
        {"name": "work", "type": "categorical", "categories": ["a", "b"], "missing": ["?"]},
        {"name": "flag", "type": "boolean"}
      ]
    }"#;

    fn encoder() -> Encoder {
        Encoder::new(&Schema::from_json(SCHEMA).unwrap()).unwrap()
    }

    fn read(text: &[u8], mode: LabelMode) -> Result<Dataset, DataError> {
        read_csv(text, &encoder(), mode)
    }

    fn err(text: &str) -> String {
        read(text.as_bytes(), LabelMode::Required)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn reads_and_encodes() {
        // Columns in another order than the schema, quoting, whitespace, CRLF.
        let text = "flag,y,work,id,age\r\n yes , + ,a,1,10\r\n0,-,?,2,\"50\"\r\nn,-,\"b\",3,99\r\n";
        let d = read(text.as_bytes(), LabelMode::Required).unwrap();
        assert_eq!(d.n_rows(), 3);
        assert_eq!(d.n_literals(), 2 + 3 + 1);
        // Literals: age<=50 (as interval, first), age>50, work==a, work==b, work missing, flag
        assert_eq!(d.features.row_active(0), [0, 2, 5]);
        assert_eq!(d.features.row_active(1), [0, 4]);
        assert_eq!(d.features.row_active(2), [1, 3]);
        let y = d.labels.unwrap();
        assert_eq!((y.get(0), y.get(1), y.get(2)), (true, false, false));
    }

    #[test]
    fn utf8_bom_and_blank_lines() {
        let text = "\u{feff}age,id,work,flag,y\n1,2,a,1,+\n\n1,2,b,0,-\n";
        let d = read(text.as_bytes(), LabelMode::Required).unwrap();
        assert_eq!(d.n_rows(), 2);
    }

    #[test]
    fn regression_labels_are_clamped_numbers_and_errors_hide_the_value() {
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "type": "numeric", "min": 0, "max": 10},
                "columns": [{"name": "a", "type": "boolean"}]}"#,
        )
        .unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        let d = read_csv(
            "a,y\n1,2.5\n0,-4\n1,99\n".as_bytes(),
            &encoder,
            LabelMode::Required,
        )
        .unwrap();
        assert_eq!(d.labels, None);
        assert_eq!(d.targets, Some(vec![2.5, 0.0, 10.0]));
        for (bad, message) in [
            ("abc", "not a number"),
            ("NaN", "not a finite"),
            ("", "empty label"),
        ] {
            let e = read_csv(
                format!("a,y\n1,{bad}\n").as_bytes(),
                &encoder,
                LabelMode::Required,
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains(message), "{bad}: {e}");
            if !bad.is_empty() {
                assert!(!e.contains(bad), "the error shows the value: {e}");
            }
        }
    }

    #[test]
    fn optional_label() {
        let d = read(b"age,id,work,flag\n1,2,a,1\n", LabelMode::Optional).unwrap();
        assert_eq!(d.labels, None);
        let d = read(b"age,id,work,flag,y\n1,2,a,1,+\n", LabelMode::Optional).unwrap();
        assert_eq!(d.labels.unwrap().count_ones(), 1);
        let e = read(b"age,id,work,flag\n1,2,a,1\n", LabelMode::Required).unwrap_err();
        assert!(e.to_string().contains(r#"not in the CSV: "y""#), "{e}");
    }

    #[test]
    fn row_errors_name_row_and_column_but_not_the_value() {
        let h = "age,id,work,flag,y\n";
        let ok = "1,2,a,1,+\n";
        let cases = [
            (
                format!("{h}{ok}{ok}1,2,a,1\n"),
                "row 3 (line 4): expected 5 fields, found 4",
            ),
            (
                format!("{h}{ok}4x7,2,a,1,+\n"),
                r#"row 2 (line 3), column "age": not a number"#,
            ),
            (
                format!("{h}NaN,2,a,1,+\n"),
                r#"row 1 (line 2), column "age": not a finite number"#,
            ),
            (
                format!("{h}{ok}1,2,Zeta,1,+\n"),
                r#"row 2 (line 3), column "work": unknown category (not in the schema)"#,
            ),
            (
                format!("{h}1,2,a,1,\n"),
                r#"row 1 (line 2), column "y": empty label"#,
            ),
            (
                format!("{h}1,2,a,1,Zeta\n"),
                r#"row 1 (line 2), column "y": label is neither the positive nor the negative value"#,
            ),
            (
                format!("{h}1,2,a,Zeta,+\n"),
                r#"row 1 (line 2), column "flag": not a boolean (expected true/false, yes/no, 1/0)"#,
            ),
            (
                format!("{h}1,2,,1,+\n"),
                r#"row 1 (line 2), column "work": empty value (declare "missing" to allow it)"#,
            ),
        ];
        for (text, want) in cases {
            let got = err(&text);
            assert_eq!(got, want);
            assert!(!got.contains("4x7") && !got.contains("Zeta") && !got.contains("NaN"));
        }
    }

    #[test]
    fn quoted_newlines_shift_lines_not_rows() {
        let got = err("age,id,work,flag,y\n1,\"multi\nline\",a,1,+\n1,2,Zeta,1,+\n");
        assert_eq!(
            got,
            r#"row 2 (line 4), column "work": unknown category (not in the schema)"#
        );
    }

    #[test]
    fn invalid_utf8() {
        let e = read(
            b"age,id,work,flag,y\n1,2,\xff\xfe,1,+\n",
            LabelMode::Required,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"row 1 (line 2), column "work": not valid UTF-8"#
        );
        // Bad bytes in an ignored column are never decoded.
        assert!(read(b"age,id,work,flag,y\n1,\xff,a,1,+\n", LabelMode::Required).is_ok());
        let e = read(b"age,\xff\n", LabelMode::Required).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CSV header: the header row is not valid UTF-8"
        );
    }

    #[test]
    fn header_errors() {
        assert_eq!(
            err("age,work,flag,y\n1,a,1,+\n"),
            r#"CSV header: columns declared in the schema but not in the CSV: "id""#
        );
        assert_eq!(
            err("age,id,work,flag,y,zip,ssn\n1,2,a,1,+,3,4\n"),
            r#"CSV header: columns not in the schema: "zip", "ssn" (declare them with "type": "ignore" to skip them)"#
        );
        assert_eq!(
            err("age,id,work,flag,y,age\n1,2,a,1,+,1\n"),
            r#"CSV header: duplicate columns "age""#
        );
    }

    #[test]
    fn empty_and_header_only() {
        assert!(matches!(
            read(b"", LabelMode::Required),
            Err(DataError::Empty)
        ));
        assert_eq!(err(""), "empty CSV: the input has no header row");
        assert!(matches!(
            read(b"age,id,work,flag,y\n", LabelMode::Required),
            Err(DataError::NoRows)
        ));
        assert_eq!(
            err("age,id,work,flag,y"),
            "CSV has a header row but no data rows"
        );
    }

    /// Batches and parallel chunks do not show: over several batches
    /// (16 Ki records each) of chunks, the rows keep their order, bad rows
    /// are reported in order with their row and line, and a refusal names
    /// the same first rows as a one-at-a-time read would.
    #[test]
    fn rows_and_errors_keep_their_order_across_batches() {
        let n = 40_000;
        let bad = [1_500usize, 20_000, 39_999];
        let mut text = String::from("age,id,work,flag,y\n");
        for row in 1..=n {
            if bad.contains(&row) {
                text.push_str("x,2,a,1,+\n");
            } else {
                let work = if row % 3 == 0 { "a" } else { "b" };
                let y = if row % 7 == 0 { "+" } else { "-" };
                text.push_str(&format!("{},2,{work},{},{y}\n", row % 50, row % 2));
            }
        }
        let mut options = ReadOptions::new(LabelMode::Required);
        options.max_errors = 10;
        options.on_bad_row = OnBadRow::Skip;
        let report = read_csv_with(text.as_bytes(), &encoder(), &options).unwrap();
        assert_eq!(report.dataset.n_rows(), n - bad.len());
        assert_eq!(report.skipped, bad.len());
        let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
        for (e, row) in errors.iter().zip(bad) {
            assert!(
                e.starts_with(&format!("row {row} (line {})", row + 1)),
                "{e}"
            );
        }
        // Every kept row in order: its label and its flag literal.
        let kept: Vec<usize> = (1..=n).filter(|r| !bad.contains(r)).collect();
        let reference = read_csv_with(
            "age,id,work,flag,y\n0,2,a,1,+\n0,2,a,0,+\n".as_bytes(),
            &encoder(),
            &ReadOptions::new(LabelMode::Required),
        )
        .unwrap();
        let flag_on = reference.dataset.features.row_active(0);
        let flag_off = reference.dataset.features.row_active(1);
        let flag: Vec<u32> = flag_on
            .iter()
            .filter(|l| !flag_off.contains(l))
            .copied()
            .collect();
        let labels = report.dataset.labels.as_ref().unwrap();
        for (i, &row) in kept.iter().enumerate() {
            assert_eq!(labels.get(i), row % 7 == 0, "row {row}");
            let active = report.dataset.features.row_active(i);
            assert_eq!(
                flag.iter().all(|l| active.contains(l)),
                row % 2 == 1,
                "row {row}"
            );
        }
        // Refusing at the first 2 bad rows: those two, not the third.
        options.on_bad_row = OnBadRow::Refuse;
        options.max_errors = 2;
        let e = read_csv_with(text.as_bytes(), &encoder(), &options).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("row 1500 (line 1501)") && e.contains("row 20000 (line 20001)"),
            "{e}"
        );
        assert!(!e.contains("row 39999"), "{e}");
    }

    #[test]
    fn several_errors_or_skipping() {
        let text = "age,id,work,flag,y\n1,2,a,1,+\n1,2,Zeta,1,+\n1,2,a,1\n1,2,b,0,-\nx,2,a,1,+\n";
        let mut options = ReadOptions::new(LabelMode::Required);
        options.max_errors = 2;
        let e = read_csv_with(text.as_bytes(), &encoder(), &options).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"invalid rows (the first 2): row 2 (line 3), column "work": unknown category (not in the schema); row 3 (line 4): expected 5 fields, found 4"#
        );
        options.on_bad_row = OnBadRow::Skip;
        let report = read_csv_with(text.as_bytes(), &encoder(), &options).unwrap();
        assert_eq!(
            (report.dataset.n_rows(), report.skipped, report.errors.len()),
            (2, 3, 2)
        );
        assert_eq!(report.dataset.labels.unwrap().count_ones(), 1);
        assert_eq!(report.dataset.features.row_active(1), [0, 3]);
        let all_bad = "age,id,work,flag,y\nx,2,a,1,+\n";
        let e = read_csv_with(all_bad.as_bytes(), &encoder(), &options).unwrap_err();
        assert!(matches!(e, DataError::NoRows), "{e}");
    }

    /// `prefix`, then `len` bytes of `fill`, then `suffix`, generated as read (so a
    /// test of a 100 MB field does not hold 100 MB itself).
    struct Generated {
        prefix: std::io::Cursor<Vec<u8>>,
        fill: u8,
        len: u64,
        suffix: std::io::Cursor<Vec<u8>>,
    }

    impl Generated {
        fn new(prefix: &str, fill: u8, len: u64, suffix: &str) -> Generated {
            Generated {
                prefix: std::io::Cursor::new(prefix.into()),
                fill,
                len,
                suffix: std::io::Cursor::new(suffix.into()),
            }
        }
    }

    impl Read for Generated {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.prefix.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            if self.len > 0 {
                let n = buf
                    .len()
                    .min(usize::try_from(self.len).unwrap_or(usize::MAX));
                buf[..n].fill(self.fill);
                self.len -= n as u64;
                return Ok(n);
            }
            self.suffix.read(buf)
        }
    }

    /// Regression: the `csv` crate buffers a whole record, so one 100 MB field (or
    /// an unclosed quote running to the end of the input) took memory in proportion
    /// to the input. Records longer than MAX_RECORD_BYTES are now refused while
    /// they are read.
    #[test]
    fn a_huge_field_is_refused_without_buffering_it() {
        let h = "age,id,work,flag,y\n1,2,a,1,+\n";
        let huge = 100 << 20;
        let want = format!("row 2 (line 3): the record is longer than {MAX_RECORD_BYTES} bytes");
        let e = read_csv(
            Generated::new(&format!("{h}1,"), b'7', huge, ",a,1,+\n"),
            &encoder(),
            LabelMode::Required,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), want);
        // An unclosed quote: the rest of the input is one field.
        let e = read_csv(
            Generated::new(&format!("{h}1,\""), b'x', huge, ""),
            &encoder(),
            LabelMode::Required,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), want);
        let e = read_csv(
            Generated::new("age,", b'x', huge, "\n"),
            &encoder(),
            LabelMode::Required,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("CSV header: the header row is longer than {MAX_RECORD_BYTES} bytes")
        );
        // Skipping bad rows does not skip past the limit either.
        let mut options = ReadOptions::new(LabelMode::Required);
        options.on_bad_row = OnBadRow::Skip;
        let e = read_csv_with(
            Generated::new(&format!("{h}1,"), b'7', huge, ",a,1,+\n"),
            &encoder(),
            &options,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), want);
    }

    #[test]
    fn records_up_to_the_limit_are_read() {
        // An ignored field just under the limit, between ordinary rows.
        let h = "age,id,work,flag,y\n1,2,a,1,+\n1,";
        let len = MAX_RECORD_BYTES - 20;
        let d = read_csv(
            Generated::new(h, b'x', len, ",a,1,+\n1,2,b,0,-\n"),
            &encoder(),
            LabelMode::Required,
        )
        .unwrap();
        assert_eq!(d.n_rows(), 3);
        // Many records whose total is far over the limit.
        let rows = "1,2,a,1,+\n".repeat(300_000);
        let d = read_csv(
            format!("age,id,work,flag,y\n{rows}").as_bytes(),
            &encoder(),
            LabelMode::Required,
        )
        .unwrap();
        assert_eq!(d.n_rows(), 300_000);
    }

    /// Regression: duplicate header names were collected with a linear search per
    /// name, quadratic in a header that repeats many names (2.5e9 comparisons for
    /// this one, which is just under MAX_RECORD_BYTES).
    #[test]
    fn many_duplicate_header_names_are_listed_once_each() {
        let names: Vec<String> = (0..70_000).map(|i| format!("c{i}")).collect();
        let header = format!("{0},{0}\n", names.join(","));
        assert!(header.len() < MAX_RECORD_BYTES as usize);
        let start = std::time::Instant::now();
        let e = err(&header);
        // Loose enough for a loaded machine: the set makes it milliseconds.
        assert!(start.elapsed().as_secs_f64() < 5.0, "{:?}", start.elapsed());
        assert!(
            e.starts_with(r#"CSV header: duplicate columns "c0", "c1", "#),
            "{}",
            &e[..80]
        );
        assert_eq!(e.matches("\"c69999\"").count(), 1);
    }

    #[test]
    fn io_errors_pass_through() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk on fire"))
            }
        }
        let e = read_csv(Failing, &encoder(), LabelMode::Required).unwrap_err();
        assert!(matches!(e, DataError::Io(_)), "{e}");
    }
}
