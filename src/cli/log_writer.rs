//! The server's log writer: stderr writes off the request path.
//!
//! With INFO logging the service writes one line per response. Written to
//! stderr by the thread that answers, each line is a `write` system call
//! on the request's path (and stderr's lock is shared by both executor
//! threads). Here a request's thread formats its line and hands it to a
//! channel; one writer thread appends lines to a buffer and writes it to
//! stderr whenever the channel is empty, then pauses for [`BATCH_PAUSE`]:
//! under load many lines share one system call, and a request's thread
//! finds the writer asleep rather than waiting on the channel, so it
//! hands its line over without waking another thread (which cost a third
//! of the single-row predictions per second with INFO logs on 2 cores:
//! docs/performance.md, "Logging without a wake-up per line"). When idle,
//! a line is written at once, or at most [`BATCH_PAUSE`] after the last
//! write.
//!
//! No line is dropped: the channel is bounded ([`QUEUE_LINES`]) and a full
//! channel makes the logging thread wait (back-pressure, as a slow stderr
//! did before). [`LogWriter::flush`] waits until every line handed over so
//! far is written; `serve` calls it before the process exits.

use std::io::Write;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// Lines that may wait for the writer thread before a logging thread waits.
const QUEUE_LINES: usize = 65_536;

/// The writer thread's pause after each write (see [`write_lines`]): under
/// load at most this many milliseconds of lines share one write, at most
/// 1 / `BATCH_PAUSE` wake-ups a second instead of one per line. A line
/// logged when the server is idle still goes out at once (at most this
/// long after the previous write).
const BATCH_PAUSE: Duration = Duration::from_millis(2);

/// How long [`LogWriter::flush`] waits for the writer thread.
const FLUSH_WAIT: Duration = Duration::from_secs(5);

enum Message {
    Line(Vec<u8>),
    /// Acknowledge once every earlier line is written.
    Flush(SyncSender<()>),
}

/// Hands formatted lines to the writer thread (see the module comment).
#[derive(Clone)]
pub(super) struct LogWriter {
    tx: SyncSender<Message>,
}

impl LogWriter {
    /// Start the writer thread on stderr.
    pub(super) fn stderr() -> std::io::Result<LogWriter> {
        let (tx, rx) = sync_channel(QUEUE_LINES);
        std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_lines(&rx, &mut std::io::stderr()))?;
        Ok(LogWriter { tx })
    }

    /// Wait (at most [`FLUSH_WAIT`]) until every line handed over so far
    /// is written.
    pub(super) fn flush(&self) {
        let (ack, done) = sync_channel(1);
        if self.tx.send(Message::Flush(ack)).is_ok() {
            let _ = done.recv_timeout(FLUSH_WAIT);
        }
    }
}

/// The writer thread: until every sender is gone, write what arrives,
/// batching what is already queued into one write, then pause
/// ([`BATCH_PAUSE`]).
fn write_lines(rx: &Receiver<Message>, out: &mut impl Write) {
    let mut buf = Vec::with_capacity(64 << 10);
    let mut acks = Vec::new();
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        while let Some(message) = next {
            match message {
                Message::Line(line) => buf.extend_from_slice(&line),
                Message::Flush(ack) => acks.push(ack),
            }
            next = rx.try_recv().ok();
        }
        // A log that cannot be written has nowhere to report it.
        let _ = out.write_all(&buf);
        let _ = out.flush();
        buf.clear();
        for ack in acks.drain(..) {
            let _ = ack.send(());
        }
        // Let lines gather before the next write: while this thread
        // sleeps instead of waiting on the channel, a sender has no one to
        // wake, so under load a request pays no wake-up (a system call and
        // a context switch on a busy core) for its line.
        std::thread::sleep(BATCH_PAUSE);
    }
}

/// One event's line, sent when the formatter drops it.
pub(super) struct Line<'a> {
    buf: Vec<u8>,
    tx: &'a SyncSender<Message>,
}

impl Write for Line<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            let _ = self.tx.send(Message::Line(std::mem::take(&mut self.buf)));
        }
    }
}

impl<'a> MakeWriter<'a> for LogWriter {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line {
            buf: Vec::with_capacity(256),
            tx: &self.tx,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_arrives_in_order_and_flush_waits_for_them() {
        let (tx, rx) = sync_channel(4);
        let (done_tx, done_rx) = sync_channel(1);
        let thread = std::thread::spawn(move || {
            let mut out = Vec::new();
            write_lines(&rx, &mut out);
            done_tx.send(out).unwrap();
        });
        let writer = LogWriter { tx };
        for i in 0..100 {
            let mut line = writer.make_writer();
            write!(line, "line {i}").unwrap();
            writeln!(line, " end").unwrap();
        }
        writer.flush();
        drop(writer);
        thread.join().unwrap();
        let out = String::from_utf8(done_rx.recv().unwrap()).unwrap();
        let expected: String = (0..100).map(|i| format!("line {i} end\n")).collect();
        assert_eq!(out, expected);
    }
}
