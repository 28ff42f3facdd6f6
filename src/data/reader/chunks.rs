//! Cutting the input into chunks at record boundaries, and parsing and
//! encoding one chunk: the two halves of the parallel CSV reader
//! ([`super`] assembles the chunks' results in order).
//!
//! # Why a cut is always at a record boundary
//!
//! Every chunk starts where a record ends (the first one right after the
//! header). Within a chunk that contains no `"` byte, no field is quoted, so
//! the CSV parser treats every `\n` as the end of a record or of a blank
//! line: after any `\n` it is at the start of a record. Such a chunk is cut
//! after its last `\n` (found with `memchr`). A chunk that contains a quote
//! (or no `\n`, e.g. `\r` line ends) is scanned with the same parser that
//! parses it later (`csv_core`, same settings) and cut where that parser
//! returned its last complete record. Either way the parser that parses the
//! next chunk from its first byte, in its start state, sees what a
//! sequential parser would see there. A worker checks at the end of each
//! chunk that its parser is between records, and the read fails rather than
//! store rows from a wrong cut (`Chunk::cut_ok`).
//!
//! Memory: a chunk is [`super::Limits::chunk_bytes`] read from the input
//! plus the unfinished record carried over from the previous one; an
//! unfinished record longer than the record limit stops the read
//! ([`Piece::TooLong`]), so no chunk holds more than about the chunk size
//! plus the limit.

use std::io::Read;

use csv_core::ReadRecordResult;

use super::Limits;
use crate::data::error::DataError;

/// What the input gives next, in input order.
pub(super) enum Piece {
    /// Complete records (and blank lines).
    Chunk(Chunk),
    /// A record longer than the limit starts here: reading stopped.
    TooLong,
    /// Reading failed (after the records read before the failure).
    Io(std::io::Error),
    /// The end of the input, after its last chunk.
    End,
}

/// Bytes that begin at a record boundary and end at one, or at the end of
/// the input.
pub(super) struct Chunk {
    pub bytes: Vec<u8>,
    /// Whether the input ends with this chunk (its last record may then
    /// lack a line end).
    pub last: bool,
    /// Whether the chunk has no `"` byte (then [`parse`] splits it without
    /// a CSV parser: see [`parse_plain`]).
    pub quote_free: bool,
}

/// A `csv_core` parser with the settings of the `csv` crate's defaults
/// (what the reader has always used: `,`, `"` quoting with doubled quotes,
/// no escape, no comments, `\r`, `\n` and `\r\n` as line ends), ready to
/// parse from the middle of the input: it has already read one blank line,
/// so it will not take a leading U+FEFF for a byte-order mark (`csv_core`
/// strips one only in its first read, i.e. at the start of the file), and
/// its line count is reset to 1.
pub(super) fn mid_file_parser() -> csv_core::Reader {
    let mut core = csv_core::ReaderBuilder::new().build();
    let (mut out, mut ends) = ([0u8; 1], [0usize; 1]);
    // A blank line leaves the parser in its start state (blank lines are
    // skipped) and marks it as having read.
    let _ = core.read_record(b"\n", &mut out, &mut ends);
    core.set_line(1);
    core
}

/// The parser for the start of the input (it strips a byte-order mark).
pub(super) fn start_parser() -> csv_core::Reader {
    csv_core::ReaderBuilder::new().build()
}

/// The input, read in chunks.
pub(super) struct Input<R> {
    reader: R,
    limits: Limits,
    /// Bytes read and not yet handed out; they start at a record boundary.
    buf: Vec<u8>,
    /// Whether the reader reported the end of the input.
    eof: bool,
    /// A read error to report once the records before it are handed out.
    error: Option<std::io::Error>,
    /// Whether `TooLong`, `Io` or `End` was handed out (nothing follows).
    done: bool,
    /// Buffers handed back for reuse (fewer page faults than fresh ones).
    spare: Vec<Vec<u8>>,
    /// Scratch output for scanning chunks with quotes (discarded).
    scratch: Vec<u8>,
    scratch_ends: Vec<usize>,
}

impl<R: Read> Input<R> {
    pub(super) fn new(reader: R, limits: Limits) -> Input<R> {
        Input {
            reader,
            limits,
            buf: Vec::new(),
            eof: false,
            error: None,
            done: false,
            spare: Vec::new(),
            scratch: vec![0; 64 << 10],
            scratch_ends: vec![0; 1024],
        }
    }

    /// Read until the buffer holds `want` bytes, the input ends or a read
    /// fails (the error is kept for later).
    fn fill(&mut self, want: usize) {
        while !self.eof && self.error.is_none() && self.buf.len() < want {
            let need = (want - self.buf.len()) as u64;
            // `read_to_end` on a `take` reads into spare capacity without
            // zeroing it first, and retries interrupted reads.
            match (&mut self.reader).take(need).read_to_end(&mut self.buf) {
                Ok(n) if (n as u64) < need => self.eof = true,
                Ok(_) => {}
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// The header record: its fields, the bytes it took (a byte-order mark
    /// included) and the number of `\n` in them. `Ok(None)` when the input
    /// has no record at all. Errors: I/O, or a header longer than the limit.
    pub(super) fn header(&mut self) -> Result<Option<(csv::ByteRecord, usize, u64)>, HeaderError> {
        let mut core = start_parser();
        let mut fields = vec![0u8; 1024];
        let mut ends = vec![0usize; 64];
        let (mut pos, mut out, mut end) = (0, 0, 0);
        // More than 3 bytes before the first parse: `csv_core` strips a
        // byte-order mark only if its first input holds it whole, and takes
        // an input that is empty after the mark for the end of the input.
        self.fill(self.limits.chunk_bytes.max(4));
        loop {
            if pos == self.buf.len() {
                // The parser needs more input (or to learn that it ended)
                // after `pos` bytes without a complete header: too long
                // from `max_record` on, as in [`over_limit`] for a record
                // the input ends.
                if pos as u64 >= self.limits.max_record {
                    return Err(HeaderError::TooLong);
                }
                if !self.eof {
                    if let Some(e) = self.error.take() {
                        return Err(HeaderError::Io(e));
                    }
                    let want = self.buf.len() + self.limits.chunk_bytes;
                    self.fill(want);
                    continue;
                }
            }
            let eof = pos == self.buf.len();
            let (res, nin, nout, nend) =
                core.read_record(&self.buf[pos..], &mut fields[out..], &mut ends[end..]);
            pos += nin;
            out += nout;
            end += nend;
            match res {
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => fields.resize(fields.len() * 2, 0),
                ReadRecordResult::OutputEndsFull => ends.resize(ends.len() * 2, 0),
                ReadRecordResult::Record => {
                    if over_limit(pos as u64, eof, self.limits.max_record) {
                        return Err(HeaderError::TooLong);
                    }
                    let mut record = csv::ByteRecord::with_capacity(out, end);
                    let mut start = 0;
                    for &e in &ends[..end] {
                        record.push_field(&fields[start..e]);
                        start = e;
                    }
                    let newlines = core.line() - 1;
                    self.buf.drain(..pos);
                    return Ok(Some((record, pos, newlines)));
                }
                ReadRecordResult::End => return Ok(None),
            }
        }
    }

    /// The next piece of the input.
    pub(super) fn next_piece(&mut self) -> Piece {
        if self.done {
            return Piece::End;
        }
        loop {
            let want = self.buf.len() + self.limits.chunk_bytes;
            self.fill(want);
            if self.eof && self.error.is_none() {
                self.done = true;
                if self.buf.is_empty() {
                    return Piece::End;
                }
                let bytes = std::mem::take(&mut self.buf);
                return Piece::Chunk(Chunk {
                    quote_free: memchr::memchr(b'"', &bytes).is_none(),
                    bytes,
                    last: true,
                });
            }
            if let Some((cut, quote_free)) = self.cut() {
                let rest = self.take_spare(self.buf.len() - cut + self.limits.chunk_bytes);
                let mut bytes = std::mem::replace(&mut self.buf, rest);
                self.buf.extend_from_slice(&bytes[cut..]);
                bytes.truncate(cut);
                return Piece::Chunk(Chunk {
                    bytes,
                    last: false,
                    quote_free,
                });
            }
            // No complete record in the buffer: the record that starts it
            // is at least this long.
            if self.buf.len() as u64 > self.limits.max_record {
                self.done = true;
                return Piece::TooLong;
            }
            if let Some(e) = self.error.take() {
                self.done = true;
                return Piece::Io(e);
            }
        }
    }

    /// Where to end the next chunk: just after the last record end in the
    /// buffer, if it has one; and whether the chunk is free of quotes.
    fn cut(&mut self) -> Option<(usize, bool)> {
        let buf = &self.buf[..];
        let quote_free = memchr::memchr(b'"', buf).is_none();
        if quote_free && let Some(i) = memchr::memrchr(b'\n', buf) {
            return Some((i + 1, true));
        }
        let mut core = mid_file_parser();
        let (mut pos, mut cut) = (0, None);
        loop {
            let (res, nin, _, _) =
                core.read_record(&buf[pos..], &mut self.scratch, &mut self.scratch_ends);
            pos += nin;
            match res {
                ReadRecordResult::Record => cut = Some((pos, quote_free)),
                // The output is scratch: overwrite it.
                ReadRecordResult::OutputFull | ReadRecordResult::OutputEndsFull => {}
                ReadRecordResult::InputEmpty | ReadRecordResult::End => return cut,
            }
            if pos == buf.len() {
                return cut;
            }
        }
    }

    /// A buffer with at least `capacity` bytes of room, reused if one was
    /// handed back.
    fn take_spare(&mut self, capacity: usize) -> Vec<u8> {
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b.reserve(capacity);
        b
    }

    /// Hand back a chunk's buffer for reuse (a few are kept).
    pub(super) fn give_back(&mut self, mut bytes: Vec<u8>) {
        if self.spare.len() < 4 {
            bytes.clear();
            self.spare.push(bytes);
        }
    }
}

/// Why the header could not be read.
pub(super) enum HeaderError {
    Io(std::io::Error),
    TooLong,
}

/// The parsed fields of one record: field `i` is `bytes[start..ends[i]]`,
/// where `start` is 0 for the first field and `ends[i - 1] + gap` for the
/// others (`gap` is 0 in `csv_core`'s output, where fields are back to
/// back, and 1 in a record split in place, where a comma separates them).
pub(super) struct Fields<'a> {
    bytes: &'a [u8],
    ends: &'a [usize],
    gap: usize,
}

impl<'a> Fields<'a> {
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Field `i`; panics if `i >= len()` (callers check the width first).
    pub(super) fn get(&self, i: usize) -> &'a [u8] {
        let start = if i == 0 {
            0
        } else {
            self.ends[i - 1] + self.gap
        };
        &self.bytes[start..self.ends[i]]
    }
}

/// One record as a chunk's parser returns it.
pub(super) struct Parsed {
    /// Byte offset in the chunk just after the record (where the parser
    /// returned it).
    pub end: usize,
    /// `\n` bytes the parser had consumed in the chunk at that point.
    pub newlines: u64,
    /// Whether the input ended the record (it has no line end).
    pub eof: bool,
}

/// Whether a record of `len` bytes (counted from the end of the previous
/// one) is over the limit. It mirrors the sequential reader, which failed
/// when its parser asked for more input after `max` bytes of the record:
/// a record with a line end needs more after `max` bytes only if it is
/// longer than `max`; one that the end of the input ends asks once more
/// (to learn that the input ended), so `max` bytes are already too many.
pub(super) fn over_limit(len: u64, eof: bool, max: u64) -> bool {
    if eof { len >= max } else { len > max }
}

/// Parse `chunk` (with `csv_core`, or [`parse_plain`] if it has no quote)
/// and call `record` with each record's fields and position, in order,
/// until it returns `false`. Returns the
/// number of `\n` bytes in the chunk (counted by the parser) and whether
/// the parser ended between records (`false` only for a chunk that was not
/// cut at a record boundary, which would be a bug in [`Input::cut`]).
pub(super) fn parse(
    chunk: &Chunk,
    mut record: impl FnMut(&Fields<'_>, Parsed) -> bool,
) -> (u64, bool) {
    if chunk.quote_free {
        return parse_plain(chunk, record);
    }
    let mut core = mid_file_parser();
    let input = &chunk.bytes[..];
    let mut fields = vec![0u8; 4096];
    let mut ends = vec![0usize; 256];
    let (mut pos, mut out, mut end) = (0, 0, 0);
    loop {
        if pos == input.len() && !chunk.last {
            return (core.line() - 1, out == 0 && end == 0);
        }
        let eof = pos == input.len();
        let (res, nin, nout, nend) =
            core.read_record(&input[pos..], &mut fields[out..], &mut ends[end..]);
        pos += nin;
        out += nout;
        end += nend;
        match res {
            ReadRecordResult::InputEmpty => {}
            ReadRecordResult::OutputFull => fields.resize(fields.len() * 2, 0),
            ReadRecordResult::OutputEndsFull => ends.resize(ends.len() * 2, 0),
            ReadRecordResult::Record => {
                let more = record(
                    &Fields {
                        bytes: &fields[..out],
                        ends: &ends[..end],
                        gap: 0,
                    },
                    Parsed {
                        end: pos,
                        newlines: core.line() - 1,
                        eof,
                    },
                );
                (out, end) = (0, 0);
                if !more {
                    return (core.line() - 1, true);
                }
            }
            ReadRecordResult::End => return (core.line() - 1, true),
        }
    }
}

/// [`parse`] for a chunk without quotes, in place: what `csv_core` does
/// with such input, without its byte-at-a-time state machine (a third of
/// the reader's time on issue 13's table). Without a `"` no field is
/// quoted, so `csv_core` (with the reader's settings: no comments, no
/// escape) returns a record at each `\r` or `\n` that ends a non-empty
/// line, skips empty lines and the `\n` of a `\r\n`, splits the record at
/// every `,`, and returns a last line without a line end at the end of the
/// input. Positions are the ones `csv_core` reports: a record "ends" just
/// after the byte that ended it (`\r` for `\r\n`), and the `\n` count is
/// the one it had consumed there. The tests compare the two on random
/// input (`tests_parallel`).
fn parse_plain(chunk: &Chunk, mut record: impl FnMut(&Fields<'_>, Parsed) -> bool) -> (u64, bool) {
    let input = &chunk.bytes[..];
    let mut ends = Vec::with_capacity(64);
    let (mut pos, mut newlines) = (0, 0u64);
    while pos < input.len() {
        match input[pos] {
            b'\n' => {
                newlines += 1;
                pos += 1;
                continue;
            }
            b'\r' => {
                pos += 1;
                continue;
            }
            _ => {}
        }
        let rest = &input[pos..];
        let (line, end, eof) = match memchr::memchr2(b'\n', b'\r', rest) {
            Some(i) => {
                newlines += u64::from(rest[i] == b'\n');
                (&rest[..i], pos + i + 1, false)
            }
            // A line without an end: only the input's last (a chunk that
            // is not the last ends with a record end).
            None if chunk.last => (rest, input.len(), true),
            None => return (newlines, false),
        };
        // The commas' positions, without a branch per byte (fields are a
        // few bytes, too short for memchr's per-call setup to pay, and a
        // branch on each comma mispredicts): every position is written and
        // only a comma's is kept.
        ends.clear();
        ends.resize(line.len() + 1, 0);
        let mut n = 0;
        for (i, &b) in line.iter().enumerate() {
            ends[n] = i;
            n += usize::from(b == b',');
        }
        ends[n] = line.len();
        ends.truncate(n + 1);
        let fields = Fields {
            bytes: line,
            ends: &ends,
            gap: 1,
        };
        if !record(&fields, Parsed { end, newlines, eof }) {
            return (newlines, true);
        }
        pos = end;
    }
    (newlines, true)
}

/// `DataError::Io` for a failure that is a bug of the reader, not of the
/// input (reported rather than storing wrong rows).
pub(super) fn internal(message: &str) -> DataError {
    DataError::Io(std::io::Error::other(format!(
        "internal error of the CSV reader: {message}"
    )))
}
