//! The streaming CSV reader: header check against the schema, then rows -> bits.
//!
//! Input is RFC 4180 CSV (comma separated, `"` quoting, UTF-8, header row required),
//! parsed with `csv_core` (or, where a chunk has no quote at all, split in place)
//! without a per-field allocation: the file is never held as strings, only the
//! growing bit matrix and a bounded window of the input are.
//! Every field is trimmed of surrounding whitespace. Cells of ignored columns are not
//! even decoded. A record longer than [`MAX_RECORD_BYTES`] is refused while it is
//! being read, so that memory stays bounded whatever the input (one endless field,
//! an unclosed quote).
//!
//! Header rules: every schema column (and the label, when required) must be present;
//! a header column the schema does not declare is an error (the owner should declare
//! it `"type": "ignore"`), as are duplicate header names. Row errors carry the 1-based
//! data row, the file line and the column; never the cell's value (SPEC §2).
//!
//! # Parallel, with the results of a sequential read
//!
//! The calling thread reads the input in chunks of about 256 KiB that begin and
//! end at record boundaries ([`chunks`] explains why the cuts are safe). The
//! chunks are parsed and encoded in waves on rayon's global pool, each chunk by
//! one task with its own parser, into its own block of column-major bits; a
//! separate thread takes the waves so that reading goes on meanwhile, and
//! takes one wave's results while the pool parses the next (so the serial
//! taking does not leave the pool idle between waves). The
//! blocks, labels and row errors are then taken strictly in input order
//! ([`Assembly`]), with row numbers and lines counted across chunks the way
//! the `csv` crate counts them, so the rows, the errors, the error limit and
//! the refusals are those of a one-record-at-a-time read. A chunk's errors
//! beyond the limit are only counted, and a read that stops early (a refusal)
//! throws away at most the chunks already in flight.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::mpsc;

use rayon::prelude::*;

use super::bits::{BitMatrixBuilder, BitVec, words_for};
use super::dataset::Dataset;
use super::encode::Encoder;
use super::error::DataError;
use super::schema::Task;
use super::unit::{self, UnitHasher, UnitKey};
use crate::privacy::NoiseRng;

mod chunks;
mod columnar;
#[cfg(test)]
mod sequential;
#[cfg(test)]
mod tests_parallel;

use chunks::{Chunk, Fields, HeaderError, Input, Piece};
pub use columnar::{Format, read_arrow_ipc_with, read_parquet_with, to_csv};

/// Longest record (a whole CSV row, header included) the reader accepts, in bytes,
/// counted from the end of the previous record (so blank lines before it count).
/// A parser buffers one whole record, so without a limit a single huge field or an
/// unclosed quote would grow that buffer to the size of the input. A longer record
/// is refused once this much of it has been read, so it is never buffered whole.
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

/// Bytes read from the input per chunk (plus the unfinished record carried
/// over): large enough that a chunk's task (about 4 k rows of issue 13's
/// table, a millisecond) dwarfs the cost of handing it over, small enough
/// that the chunks in flight and their results (about 3 times a chunk
/// each, two waves) stay a few MiB: with 1 MiB chunks they were about
/// 30 MB, ten times the bits of a 4 M-row upload of 6 literals.
const CHUNK_BYTES: usize = 256 << 10;

/// Chunks parsed together per rayon thread: a wave of several chunks per
/// thread keeps the threads busy while the assembling thread appends the
/// previous wave, and bounds the input held at once.
const CHUNKS_PER_THREAD: usize = 4;

/// The sizes the reader works with; tests shrink them to put chunk and
/// record limits where the test wants them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// See [`CHUNK_BYTES`].
    pub chunk_bytes: usize,
    /// See [`MAX_RECORD_BYTES`].
    pub max_record: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            chunk_bytes: CHUNK_BYTES,
            max_record: MAX_RECORD_BYTES,
        }
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
    /// Field index of the privacy unit's identifier, when the schema
    /// declares a unit and the label is required (training data; prediction
    /// rows release nothing and need no bounding).
    unit: Option<usize>,
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
    /// Rows left out by the privacy unit's contribution bound (`super::unit`;
    /// 0 without a unit). Data-dependent: for the owner only.
    pub unit_dropped: usize,
    /// The kept rows' unit keys, in row order, with a privacy unit (`None`
    /// without one): keyed hashes under this read's own key, so they group
    /// rows by person for evaluation folds (`eval::Protocol`) and mean
    /// nothing after the read. The service never stores them.
    pub units: Option<Vec<UnitKey>>,
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
    match read(reader, encoder, &ReadOptions::new(label), Limits::default()) {
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
    read_with_limits(reader, encoder, options, Limits::default())
}

/// [`read_csv_with`] with other sizes (tests).
pub(crate) fn read_with_limits<R: Read>(
    reader: R,
    encoder: &Encoder,
    options: &ReadOptions,
    limits: Limits,
) -> Result<ReadReport, DataError> {
    read(reader, encoder, options, limits).map_err(|f| match f {
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

/// What every chunk's task needs.
struct Context<'a> {
    layout: &'a Layout,
    encoder: &'a Encoder,
    /// Errors a chunk keeps (more are only counted).
    max_errors: usize,
    max_record: u64,
    /// The upload's keyed hash of unit identifiers (with `layout.unit`).
    hasher: Option<&'a UnitHasher>,
}

fn read<R: Read>(
    reader: R,
    encoder: &Encoder,
    options: &ReadOptions,
    limits: Limits,
) -> Result<ReadReport, Failure> {
    let max_errors = options.max_errors.max(1);
    let mut input = Input::new(reader, limits);
    let (header, header_bytes, header_newlines) = match input.header() {
        Ok(Some(h)) => h,
        Ok(None) => return Err(DataError::Empty.into()),
        Err(HeaderError::Io(e)) => return Err(DataError::Io(e).into()),
        Err(HeaderError::TooLong) => {
            return Err(DataError::header(format!(
                "the header row is longer than {} bytes",
                limits.max_record
            ))
            .into());
        }
    };
    if header.is_empty() {
        return Err(DataError::Empty.into());
    }
    let layout = layout(&header, encoder, options.label)?;
    // A key per upload, from the OS CSPRNG, dropped when the read ends.
    let hasher = layout.unit.map(|_| unit_hasher()).transpose()?;
    let context = Context {
        layout: &layout,
        encoder,
        max_errors,
        max_record: limits.max_record,
        hasher: hasher.as_ref(),
    };
    let mut assembly = Assembly {
        on_bad_row: options.on_bad_row,
        max_errors,
        max_record: limits.max_record,
        bits: BitMatrixBuilder::new(encoder.n_literals()),
        labels: layout
            .label
            .map(|_| LabelColumn::for_task(encoder.schema().task())),
        units: layout.unit.map(|_| Vec::new()),
        errors: Vec::new(),
        rows: 0,
        skipped: 0,
        offset: header_bytes as u64,
        newlines: header_newlines,
        last_end: header_bytes as u64,
        last_line: 1 + header_newlines,
    };
    let wave = CHUNKS_PER_THREAD * rayon::current_num_threads();
    if rayon::current_thread_index().is_some() {
        // Called from a rayon task: this thread is one of the pool's, and
        // blocking it on a channel while the pool parses could leave the
        // pool without a thread, so read, parse and assemble in turn here.
        loop {
            let (chunks, tail) = gather(wave, || Some(input.next_piece()));
            let stop = assembly.take_wave(&chunks, tail, &context)?;
            for c in chunks {
                input.give_back(c.bytes);
            }
            if stop {
                break;
            }
        }
    } else {
        // This thread reads and cuts; another takes waves of chunks, has the
        // pool parse them and assembles the results. The channel holds one
        // wave ahead, which bounds the input in memory to about two waves.
        let (to_parse, pieces) = mpsc::sync_channel::<Piece>(wave);
        let (give_back, spares) = mpsc::channel::<Vec<u8>>();
        std::thread::scope(|scope| {
            let assembler = scope.spawn(|| -> Result<(), Failure> {
                let pieces = pieces;
                // A pipeline of two waves: the pool parses the next wave
                // while one of its threads takes the previous wave's
                // results in order (`rayon::join`), so the serial taking
                // (appending bits, counting lines) overlaps the parsing
                // instead of leaving the pool idle between waves. Results
                // are still taken strictly in input order.
                let mut parsed: Option<(Vec<Chunk>, Vec<ChunkResult>, Option<Piece>)> = None;
                loop {
                    // After a wave that ended the input (its tail piece),
                    // nothing more is read.
                    let next = match &parsed {
                        Some((_, _, Some(_))) => None,
                        _ => Some(gather(wave, || pieces.recv().ok())),
                    };
                    let (results, taken) = rayon::join(
                        || {
                            next.as_ref()
                                .map(|(chunks, _)| parse_wave(chunks, &context))
                        },
                        || match parsed.take() {
                            None => Ok((false, None)),
                            Some((chunks, results, tail)) => assembly
                                .take_results(results, tail)
                                .map(|stop| (stop, Some(chunks))),
                        },
                    );
                    let (stop, done) = taken?;
                    for c in done.into_iter().flatten() {
                        // The reader may be gone (it stops after its last piece).
                        let _ = give_back.send(c.bytes);
                    }
                    if stop {
                        return Ok(());
                    }
                    match (next, results) {
                        (Some((chunks, tail)), Some(results)) => {
                            parsed = Some((chunks, results, tail));
                        }
                        _ => unreachable!("a wave without a tail is followed by another"),
                    }
                }
                // Returning drops `pieces`, so a reader blocked on a full
                // channel fails its send and stops.
            });
            loop {
                for spare in spares.try_iter() {
                    input.give_back(spare);
                }
                let piece = input.next_piece();
                let last = !matches!(&piece, Piece::Chunk(c) if !c.last);
                // A failed send: the assembler stopped (a refusal or an
                // error); its result says why.
                if to_parse.send(piece).is_err() || last {
                    break;
                }
            }
            drop(to_parse);
            match assembler.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })?;
    }
    assembly.finish(encoder)
}

/// Up to `wave` chunks from `next` (fewer if a piece that is not a chunk, the
/// last chunk or the end of the pieces comes first), and that piece.
/// `None` from `next` means the pieces ended (as `Piece::End`).
fn gather(wave: usize, mut next: impl FnMut() -> Option<Piece>) -> (Vec<Chunk>, Option<Piece>) {
    let mut chunks = Vec::with_capacity(wave);
    while chunks.len() < wave {
        match next().unwrap_or(Piece::End) {
            Piece::Chunk(c) => {
                let last = c.last;
                chunks.push(c);
                if last {
                    return (chunks, Some(Piece::End));
                }
            }
            other => return (chunks, Some(other)),
        }
    }
    (chunks, None)
}

/// Parse and encode a wave of chunks in parallel; the results in order.
fn parse_wave(chunks: &[Chunk], context: &Context<'_>) -> Vec<ChunkResult> {
    chunks
        .par_iter()
        .map(|c| encode_chunk(c, context))
        .collect()
}

/// The results of the chunks so far, taken in input order, and where the
/// input stands.
struct Assembly {
    on_bad_row: OnBadRow,
    max_errors: usize,
    max_record: u64,
    bits: BitMatrixBuilder,
    labels: Option<LabelColumn>,
    /// The first `max_errors` row errors.
    errors: Vec<DataError>,
    /// The kept rows' unit keys, in row order (with a unit).
    units: Option<Vec<UnitKey>>,
    /// Records taken (good and bad): the data row number of the last one.
    rows: usize,
    /// Records refused.
    skipped: usize,
    /// Byte offset (in the input) where the next chunk starts.
    offset: u64,
    /// `\n` bytes before the next chunk.
    newlines: u64,
    /// Byte offset just after the last record (the header at first):
    /// where the next record's length is counted from.
    last_end: u64,
    /// The line the `csv` crate reports for the next record: 1 + the `\n`
    /// bytes its parser had consumed when it returned the previous record
    /// (so blank lines, and the `\n` of a `\r\n`, after a record count only
    /// from the record after the next: a quirk kept for the same lines).
    last_line: u64,
}

/// One chunk parsed and encoded.
struct ChunkResult {
    /// Records parsed.
    records: usize,
    /// The rows kept: column-major bits, `words_for(good)` words a column.
    good: usize,
    bits: Vec<u64>,
    labels: Labels,
    /// The kept rows' unit keys (empty without a unit).
    units: Vec<UnitKey>,
    /// Records refused.
    bad: usize,
    /// The first `max_errors` of them: the record's index in the chunk, the
    /// `\n` count in the chunk at the previous record (`None` for the
    /// chunk's first record), and the error (row and line still unset).
    errors: Vec<(usize, Option<u64>, DataError)>,
    /// A record over the length limit (other than the chunk's first, which
    /// the assembly checks): its index and the `\n` count before it as for
    /// errors. Parsing stopped there.
    too_long: Option<(usize, Option<u64>)>,
    /// Where the chunk's first record ended (offset in the chunk), and
    /// whether the end of the input ended it.
    first_end: Option<(usize, bool)>,
    /// Where its last record ended and the `\n` count at that point.
    last_end: Option<(usize, u64)>,
    /// Bytes and `\n` bytes in the chunk.
    len: usize,
    newlines: u64,
    /// Whether the parser ended the chunk between records (see [`chunks`]).
    cut_ok: bool,
    /// Whether the input ended with this chunk.
    last: bool,
}

/// The labels of a chunk's kept rows.
enum Labels {
    None,
    Binary(Vec<bool>),
    Numeric(Vec<f64>),
    Class(Vec<u16>),
}

impl Assembly {
    /// Parse a wave of chunks in parallel and take the results in order,
    /// then the piece that ended the wave. `Ok(true)` when the input ended.
    fn take_wave(
        &mut self,
        chunks: &[Chunk],
        tail: Option<Piece>,
        context: &Context<'_>,
    ) -> Result<bool, Failure> {
        self.take_results(parse_wave(chunks, context), tail)
    }

    /// Take a wave's results in order, then the piece that ended the wave.
    /// `Ok(true)` when the input ended.
    fn take_results(
        &mut self,
        results: Vec<ChunkResult>,
        tail: Option<Piece>,
    ) -> Result<bool, Failure> {
        for result in results {
            self.take(result)?;
        }
        match tail {
            None => Ok(false),
            Some(Piece::End) => Ok(true),
            Some(Piece::TooLong) => Err(self.too_long(self.rows + 1, self.last_line)),
            Some(Piece::Io(e)) => Err(DataError::Io(e).into()),
            Some(Piece::Chunk(_)) => unreachable!("gather ends a wave only at another piece"),
        }
    }

    fn too_long(&self, row: usize, line: u64) -> Failure {
        DataError::row(
            row,
            format!("the record is longer than {} bytes", self.max_record),
        )
        .at_line(Some(line))
        .into()
    }

    /// Take one chunk's result, the next in input order.
    fn take(&mut self, r: ChunkResult) -> Result<(), Failure> {
        if !r.cut_ok {
            return Err(chunks::internal("a chunk did not end at a record boundary").into());
        }
        let chunk_line = 1 + self.newlines;
        let line = |before: Option<u64>, last_line: u64| match before {
            None => last_line,
            Some(n) => chunk_line + n,
        };
        if let Some((end, eof)) = r.first_end
            && chunks::over_limit(
                self.offset + end as u64 - self.last_end,
                eof,
                self.max_record,
            )
        {
            return Err(self.too_long(self.rows + 1, self.last_line));
        }
        for (index, before, e) in r.errors {
            if self.errors.len() < self.max_errors {
                let row = self.rows + index + 1;
                self.errors
                    .push(placed(e, row, line(before, self.last_line)));
            }
            if self.on_bad_row == OnBadRow::Refuse && self.errors.len() == self.max_errors {
                return Err(Failure::Rows(std::mem::take(&mut self.errors)));
            }
        }
        if let Some((index, before)) = r.too_long {
            return Err(self.too_long(self.rows + index + 1, line(before, self.last_line)));
        }
        self.skipped += r.bad;
        self.bits.append_block(&r.bits, r.good);
        match (self.labels.as_mut(), r.labels) {
            (Some(LabelColumn::Binary(bits)), Labels::Binary(ys)) => {
                for y in ys {
                    bits.push(y);
                }
            }
            (Some(LabelColumn::Numeric(values)), Labels::Numeric(ys)) => values.extend(ys),
            (Some(LabelColumn::Class(values)), Labels::Class(ys)) => values.extend(ys),
            _ => {}
        }
        if let Some(units) = self.units.as_mut() {
            units.extend(r.units);
        }
        self.rows += r.records;
        if let Some((end, newlines)) = r.last_end {
            self.last_end = self.offset + end as u64;
            self.last_line = chunk_line + newlines;
        }
        self.offset += r.len as u64;
        self.newlines += r.newlines;
        // At the end of the input, what follows the last record (blank
        // lines) counts like the start of one more record.
        if r.last && chunks::over_limit(self.offset - self.last_end, true, self.max_record) {
            return Err(self.too_long(self.rows + 1, self.last_line));
        }
        Ok(())
    }

    fn finish(self, encoder: &Encoder) -> Result<ReadReport, Failure> {
        if self.on_bad_row == OnBadRow::Refuse && !self.errors.is_empty() {
            return Err(Failure::Rows(self.errors));
        }
        if self.bits.n_rows() == 0 {
            return Err(DataError::NoRows.into());
        }
        let (labels, targets, classes) = match self.labels {
            None => (None, None, None),
            Some(LabelColumn::Binary(bits)) => (Some(bits), None, None),
            Some(LabelColumn::Numeric(values)) => (None, Some(values), None),
            Some(LabelColumn::Class(values)) => (None, None, Some(values)),
        };
        let dataset = Dataset {
            features: self.bits.finish(),
            labels,
            targets,
            classes,
            one_hot_groups: encoder.one_hot_groups().to_vec(),
        };
        // Contribution bounding, after parsing, before anything else sees
        // the rows (`super::unit`).
        let (dataset, unit_dropped, units) = bound_units(dataset, self.units, encoder)?;
        Ok(ReadReport {
            dataset,
            skipped: self.skipped,
            errors: self.errors,
            unit_dropped,
            units,
        })
    }
}

/// A row error with its data row and file line set.
fn placed(e: DataError, row: usize, line: u64) -> DataError {
    match e {
        DataError::Row {
            column, message, ..
        } => DataError::Row {
            row,
            line: Some(line),
            column,
            message,
        },
        other => other,
    }
}

/// Parse and encode one chunk (a rayon task).
fn encode_chunk(chunk: &Chunk, context: &Context<'_>) -> ChunkResult {
    let layout = context.layout;
    let encoder = context.encoder;
    // Every kept row's literals back to back, and where each row starts.
    // About one literal per 4 bytes of CSV (issue 13's table has 20 per
    // 60-byte row); it grows if a table is denser.
    let mut active: Vec<u32> = Vec::with_capacity(chunk.bytes.len() / 4);
    let mut starts: Vec<usize> = Vec::new();
    let mut labels = match (layout.label, encoder.schema().task()) {
        (None, _) => Labels::None,
        (Some(_), Task::Binary) => Labels::Binary(Vec::new()),
        (Some(_), Task::Regression { .. }) => Labels::Numeric(Vec::new()),
        (Some(_), Task::Multiclass { .. }) => Labels::Class(Vec::new()),
    };
    let mut units = Vec::new();
    let mut errors = Vec::new();
    let (mut records, mut bad) = (0, 0);
    let mut too_long = None;
    let mut first_end = None;
    let mut previous: Option<chunks::Parsed> = None;
    let (newlines, cut_ok) = chunks::parse(chunk, |fields, at| {
        if let Some(p) = &previous
            && chunks::over_limit((at.end - p.end) as u64, at.eof, context.max_record)
        {
            too_long = Some((records, Some(p.newlines)));
            return false;
        }
        first_end.get_or_insert((at.end, at.eof));
        let start = active.len();
        match encode_record(fields, layout, encoder, &mut active)
            .and_then(|label| Ok((label, unit_key(fields, layout, encoder, context.hasher)?)))
        {
            Ok((label, unit)) => {
                starts.push(start);
                units.extend(unit);
                match (&mut labels, label) {
                    (Labels::Binary(ys), Some(Label::Binary(y))) => ys.push(y),
                    (Labels::Numeric(ys), Some(Label::Numeric(y))) => ys.push(y),
                    (Labels::Class(ys), Some(Label::Class(y))) => ys.push(y),
                    _ => {}
                }
            }
            Err(e) => {
                // A refused row keeps no literals.
                active.truncate(start);
                bad += 1;
                if errors.len() < context.max_errors {
                    errors.push((records, previous.as_ref().map(|p| p.newlines), e));
                }
            }
        }
        records += 1;
        previous = Some(at);
        true
    });
    let good = starts.len();
    let bits = column_block(&active, &mut starts, encoder.n_literals());
    ChunkResult {
        records,
        good,
        bits,
        labels,
        units,
        bad,
        errors,
        too_long,
        first_end,
        last_end: previous.map(|p| (p.end, p.newlines)),
        len: chunk.bytes.len(),
        newlines,
        cut_ok,
        last: chunk.last,
    }
}

/// The column-major bits (`words_for(rows)` words a column) of rows whose
/// literals are `active[starts[r]..starts[r + 1]]` (the last row's run ends
/// at the end of `active`; `starts` gets that end pushed).
fn column_block(active: &[u32], starts: &mut Vec<usize>, n_literals: usize) -> Vec<u64> {
    let w = words_for(starts.len());
    let mut bits = vec![0u64; n_literals * w];
    starts.push(active.len());
    for (r, row) in starts.windows(2).enumerate() {
        let (word, bit) = (r / 64, 1u64 << (r % 64));
        for &l in &active[row[0]..row[1]] {
            bits[l as usize * w + word] |= bit;
        }
    }
    bits
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
    layout_names(&names, encoder, mode, "the CSV").map_err(DataError::header)
}

/// Check column names (a CSV header's, a Parquet file's) against the schema
/// and locate the fields; `source` names the input in a message ("the CSV").
fn layout_names(
    names: &[&str],
    encoder: &Encoder,
    mode: LabelMode,
    source: &str,
) -> Result<Layout, String> {
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
        return Err(format!("duplicate columns {}", list(&duplicates)));
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
        return Err(format!(
            "columns declared in the schema but not in {source}: {}",
            list(&absent)
        ));
    }
    let unit_name = schema.privacy_unit.as_ref().map(|u| u.column.as_str());
    if mode == LabelMode::Required
        && let Some(unit) = unit_name
        && !position.contains_key(unit)
    {
        return Err(format!(
            "the privacy unit column {unit:?} is not in {source}"
        ));
    }
    let declared: HashSet<&str> = schema.columns.iter().map(|c| c.name()).collect();
    let extra: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| *n != label_name && Some(*n) != unit_name && !declared.contains(n))
        .collect();
    if !extra.is_empty() {
        return Err(format!(
            "columns not in the schema: {} (declare them with \"type\": \"ignore\" to skip them)",
            list(&extra)
        ));
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
        unit: match mode {
            LabelMode::Required => unit_name.and_then(|u| position.get(u).copied()),
            LabelMode::Optional => None,
        },
    })
}

/// The label column as it is read: class bits, regression values, or
/// multiclass class indices.
enum LabelColumn {
    Binary(BitVec),
    Numeric(Vec<f64>),
    Class(Vec<u16>),
}

impl LabelColumn {
    fn for_task(task: Task) -> LabelColumn {
        match task {
            Task::Binary => LabelColumn::Binary(BitVec::new()),
            Task::Regression { .. } => LabelColumn::Numeric(Vec::new()),
            Task::Multiclass { .. } => LabelColumn::Class(Vec::new()),
        }
    }
}

/// One row's label as encoded.
enum Label {
    Binary(bool),
    Numeric(f64),
    Class(u16),
}

/// Encode one record, appending its literals to `active`; returns its label
/// (if the layout has one). Errors carry row 0 and no line; the assembly
/// places them.
fn encode_record(
    record: &Fields<'_>,
    layout: &Layout,
    encoder: &Encoder,
    active: &mut Vec<u32>,
) -> Result<Option<Label>, DataError> {
    if record.len() != layout.width {
        return Err(DataError::row(
            0,
            format!("expected {} fields, found {}", layout.width, record.len()),
        ));
    }
    for &(i, f) in &layout.features {
        encoder.encode_field(f, record.get(i), 0, &encoder.feature_names()[f], active)?;
    }
    let Some(i) = layout.label else {
        return Ok(None);
    };
    encode_label_field(record.get(i), encoder).map(Some)
}

/// Encode one raw label field (not yet decoded or trimmed; a Parquet null
/// is an empty field). Errors carry row 0.
fn encode_label_field(raw: &[u8], encoder: &Encoder) -> Result<Label, DataError> {
    let name = encoder.schema().label_column();
    let value = std::str::from_utf8(raw)
        .map(str::trim)
        .map_err(|_| DataError::cell(0, name, "not valid UTF-8"))?;
    Ok(match encoder.schema().task() {
        Task::Binary => Label::Binary(encoder.encode_label(value, 0)?),
        Task::Regression { .. } => Label::Numeric(encoder.encode_target(value, 0)?),
        Task::Multiclass { .. } => Label::Class(encoder.encode_class(value, 0)?),
    })
}

/// The unit key of one record (with a unit in the layout): the keyed hash
/// of its trimmed identifier. An empty identifier is a row error (it would
/// otherwise make every such row one unit); the message never has the value.
fn unit_key(
    record: &Fields<'_>,
    layout: &Layout,
    encoder: &Encoder,
    hasher: Option<&UnitHasher>,
) -> Result<Option<UnitKey>, DataError> {
    let (Some(i), Some(hasher)) = (layout.unit, hasher) else {
        return Ok(None);
    };
    unit_key_of_cell(Some(record.get(i)), encoder, hasher).map(Some)
}

/// The keyed hash of one unit identifier cell, trimmed, as every reader
/// (CSV, Parquet, Arrow) computes it. An empty or null identifier is a row
/// error (it would otherwise make every such row one unit); the message
/// never has the value.
fn unit_key_of_cell(
    cell: Option<&[u8]>,
    encoder: &Encoder,
    hasher: &UnitHasher,
) -> Result<UnitKey, DataError> {
    match cell.map(<[u8]>::trim_ascii) {
        Some(cell) if !cell.is_empty() => Ok(hasher.key_of(cell)),
        _ => {
            let name = encoder
                .schema()
                .privacy_unit
                .as_ref()
                .map_or("", |u| u.column.as_str());
            Err(DataError::cell(
                0,
                name,
                "the privacy unit identifier is empty",
            ))
        }
    }
}

/// A fresh upload key for unit identifiers, from the OS CSPRNG (dropped
/// when the read ends, so the stored keys cannot be linked across uploads).
fn unit_hasher() -> Result<UnitHasher, DataError> {
    UnitHasher::from_os().map_err(|e| DataError::Io(std::io::Error::other(e.to_string())))
}

/// Contribution bounding (`super::unit`), after parsing, before anything
/// else sees the rows: with unit keys (one per kept row), each unit keeps
/// a uniformly random `max_rows` of its rows; returns the rows dropped and
/// the kept rows' keys. Every reader ends here, so no format stores
/// unbounded rows.
fn bound_units(
    dataset: Dataset,
    units: Option<Vec<UnitKey>>,
    encoder: &Encoder,
) -> Result<(Dataset, usize, Option<Vec<UnitKey>>), DataError> {
    let Some(units) = units else {
        return Ok((dataset, 0, None));
    };
    let mut rng =
        NoiseRng::from_os().map_err(|e| DataError::Io(std::io::Error::other(e.to_string())))?;
    let (dataset, dropped, kept) =
        unit::bound_dataset(dataset, units, encoder.schema().unit_max_rows(), &mut rng)
            .map_err(|e| DataError::Io(std::io::Error::other(e.to_string())))?;
    Ok((dataset, dropped, Some(kept)))
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

    /// The privacy unit at read time (issue 28): the unit column must be in
    /// a training header, an empty identifier is a row error that never
    /// shows the value, units of 1..10 rows are cut to max_rows (each unit
    /// keeps only its own rows, labels follow their rows), the count goes
    /// to the report; prediction rows ignore the column.
    #[test]
    fn the_privacy_unit_is_read_hashed_and_bounded() {
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "positive": "1", "negative": "0"},
                "columns": [{"name": "x", "type": "numeric", "min": 0, "max": 100, "thresholds": [50]}],
                "privacy_unit": {"column": "pid", "max_rows": 3}}"#,
        )
        .unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        let options = ReadOptions::new(LabelMode::Required);
        let e = read_csv(&b"x,y\n1,1\n"[..], &encoder, LabelMode::Required)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            r#"CSV header: the privacy unit column "pid" is not in the CSV"#
        );
        let e = read_csv(
            &b"x,pid,y\n1,secret-7,1\n2, ,0\n"[..],
            &encoder,
            LabelMode::Required,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("row 2") && e.contains("\"pid\"") && e.contains("identifier is empty"),
            "{e}"
        );
        assert!(!e.contains("secret"), "{e}");
        // Units 1..=10 with u rows each; a row's x is its unit (x <= 50 for
        // every unit here) and its label says whether it is the unit's
        // first row: the bound must keep whole rows, min(u, 3) per unit.
        let mut csv = String::from("pid,x,y\n");
        for round in 0..10 {
            for u in 1..=10 {
                if round < u {
                    csv.push_str(&format!("person {u},{u},{}\n", u8::from(round == 0)));
                }
            }
        }
        let report = read_csv_with(csv.as_bytes(), &encoder, &options).unwrap();
        let kept: usize = (1..=10).map(|u: usize| u.min(3)).sum();
        assert_eq!(report.dataset.n_rows(), kept);
        assert_eq!(report.unit_dropped, 55 - kept);
        assert_eq!(report.skipped, 0);
        // Without a unit, the same rows are all read.
        let plain = Schema {
            privacy_unit: None,
            ..schema.clone()
        };
        let all = read_csv_with(csv.as_bytes(), &Encoder::new(&plain).unwrap(), &options);
        let e = all.unwrap_err().to_string();
        assert!(e.contains("columns not in the schema: \"pid\""), "{e}");
        // Prediction rows: the unit column may be there or not, unread.
        for text in [&b"x\n1\n"[..], &b"pid,x\nsomeone,1\n"[..]] {
            let d = read_csv(text, &encoder, LabelMode::Optional).unwrap();
            assert_eq!(d.n_rows(), 1);
        }
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
    fn multiclass_labels_are_class_indices_and_errors_hide_the_value() {
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "classes": ["low", "mid", "high"]},
                "columns": [{"name": "a", "type": "boolean"}]}"#,
        )
        .unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        let d = read_csv(
            "a,y\n1,high\n0, low \n1,mid\n0,high\n".as_bytes(),
            &encoder,
            LabelMode::Required,
        )
        .unwrap();
        assert_eq!(d.labels, None);
        assert_eq!(d.targets, None);
        assert_eq!(d.classes, Some(vec![2, 0, 1, 2]));
        for (bad, message) in [
            ("medium", "label is not one of the schema's classes"),
            ("HIGH", "label is not one of the schema's classes"),
            ("", "empty label"),
        ] {
            let e = read_csv(
                format!("a,y\n1,low\n1,{bad}\n").as_bytes(),
                &encoder,
                LabelMode::Required,
            )
            .unwrap_err()
            .to_string();
            assert!(e.contains(message), "{bad}: {e}");
            assert!(e.contains("row 2"), "{bad}: {e}");
            if !bad.is_empty() {
                assert!(!e.contains(bad), "the error shows the value: {e}");
            }
        }
        // Prediction rows may leave the label out.
        let d = read_csv("a\n1\n".as_bytes(), &encoder, LabelMode::Optional).unwrap();
        assert_eq!(d.classes, None);
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
