//! A record-length guard for readers built on the `csv` crate, which
//! buffers a whole record: without a bound, one huge field or an unclosed
//! quote takes memory in proportion to the input (up to the upload limit).

use std::io::Read;

/// The input as the parser sees it: fails when the parser asks for more
/// input while it has already consumed `max` bytes of the current record.
/// Records are read with [`read_record`], which marks where each starts;
/// on a read error, [`RecordBound::tripped`] says whether the guard caused
/// it.
pub(crate) struct RecordBound<R> {
    inner: R,
    taken: u64,
    record_start: u64,
    max: u64,
    tripped: bool,
}

impl<R> RecordBound<R> {
    /// `inner`, with records of at most `max` bytes.
    pub(crate) fn new(inner: R, max: u64) -> RecordBound<R> {
        RecordBound {
            inner,
            taken: 0,
            record_start: 0,
            max,
            tripped: false,
        }
    }

    /// A `csv` reader over `inner` with a header row and records of any
    /// number of fields, each record at most `max` bytes.
    pub(crate) fn csv_reader(inner: R, max: u64) -> csv::Reader<RecordBound<R>>
    where
        R: Read,
    {
        csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_reader(RecordBound::new(inner, max))
    }

    /// The limit, in bytes.
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// Whether a read failed because a record passed the limit.
    pub(crate) fn tripped(&self) -> bool {
        self.tripped
    }
}

/// Read the next record of `csv` into `record` (false at the end), after
/// marking where it starts, so that the bound applies to it alone.
pub(crate) fn read_record<R: Read>(
    csv: &mut csv::Reader<RecordBound<R>>,
    record: &mut csv::ByteRecord,
) -> csv::Result<bool> {
    let start = csv.position().byte();
    csv.get_mut().record_start = start;
    csv.read_byte_record(record)
}

impl<R: Read> Read for RecordBound<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.taken.saturating_sub(self.record_start) >= self.max {
            self.tripped = true;
            return Err(std::io::Error::other("CSV record too long"));
        }
        let n = self.inner.read(buf)?;
        self.taken += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads of a record stop once it has taken `max` bytes; marking the
    /// next record's start lets reading go on.
    #[test]
    fn a_record_may_take_up_to_max_bytes() {
        let mut r = RecordBound::new(&[7u8; 100][..], 10);
        let mut buf = [0u8; 4];
        let mut got = 0;
        while let Ok(n) = r.read(&mut buf) {
            got += n;
            if n == 0 {
                break;
            }
        }
        assert_eq!(got, 12, "three reads of 4: the third starts at 8 < 10");
        assert!(r.tripped());
        r.record_start = 12;
        assert_eq!(r.read(&mut buf).unwrap(), 4);
    }
}
