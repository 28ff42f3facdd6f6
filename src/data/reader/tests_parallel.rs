//! The parallel reader against the sequential one ([`super::sequential`]):
//! random CSVs with quotes (around fields, inside them, doubled, followed by
//! text), quoted line breaks, `\n`, `\r\n` and `\r` line ends, byte-order
//! marks, blank lines, bad rows and wrong field counts, cut into chunks of
//! a few bytes so that chunk boundaries fall everywhere, must give the same
//! rows, labels, skipped count and errors (row and line), or the same
//! refusal.

use std::io::Read;

use proptest::prelude::*;

use super::{
    Limits, MAX_RECORD_BYTES, OnBadRow, ReadOptions, ReadReport, read_with_limits, sequential,
};
use crate::data::encode::plain_decimal;
use crate::data::{DataError, Encoder, LabelMode, Schema};

const SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "+", "negative": "-"},
  "columns": [
    {"name": "age", "type": "numeric", "min": 0, "max": 100, "thresholds": [0.5, 50, 99.25]},
    {"name": "id", "type": "ignore"},
    {"name": "work", "type": "categorical", "categories": ["a", "b"], "missing": ["?"]},
    {"name": "flag", "type": "boolean"}
  ]
}"#;

fn encoder() -> Encoder {
    Encoder::new(&Schema::from_json(SCHEMA).unwrap()).unwrap()
}

/// The same columns with a multiclass label over the rows' label values
/// (`Zeta` and empty labels are then row errors).
fn multiclass_encoder() -> Encoder {
    let text = SCHEMA.replace(
        r#""positive": "+", "negative": "-""#,
        r#""classes": ["-", "+"]"#,
    );
    let schema = Schema::from_json(&text).unwrap();
    assert_eq!(schema.task(), crate::data::Task::Multiclass { k: 2 });
    Encoder::new(&schema).unwrap()
}

/// What a read gave, in a comparable form.
#[derive(Debug, PartialEq)]
enum Outcome {
    Read {
        rows: Vec<Vec<u32>>,
        labels: Option<Vec<bool>>,
        targets: Option<Vec<u64>>,
        classes: Option<Vec<u16>>,
        skipped: usize,
        errors: Vec<String>,
    },
    Refused(String),
}

/// An over-long record's error names the row the same way in both readers;
/// its line is where the record starts in the parallel reader and where the
/// sequential one gave up, so the line is left out of the comparison there.
fn normalise(message: String) -> String {
    if !message.contains("is longer than") {
        return message;
    }
    match (message.find(" (line "), message.find("): ")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &message[..a], &message[b + 1..]),
        _ => message,
    }
}

fn outcome(result: Result<ReadReport, DataError>) -> Outcome {
    match result {
        Ok(r) => {
            let d = &r.dataset;
            Outcome::Read {
                rows: (0..d.n_rows()).map(|i| d.features.row_active(i)).collect(),
                labels: d
                    .labels
                    .as_ref()
                    .map(|l| (0..l.len()).map(|i| l.get(i)).collect()),
                targets: d
                    .targets
                    .as_ref()
                    .map(|t| t.iter().map(|v| v.to_bits()).collect()),
                classes: d.classes.clone(),
                skipped: r.skipped,
                errors: r.errors.iter().map(|e| normalise(e.to_string())).collect(),
            }
        }
        Err(e) => Outcome::Refused(normalise(e.to_string())),
    }
}

/// Hands out one byte per read, so that the sequential reader's record
/// limit (checked when its parser asks for more) acts at an exact byte;
/// but the first 4 bytes at once, because `csv_core` strips a byte-order
/// mark only when its first input holds it whole (both readers then do).
struct OneByte<'a>(&'a [u8], bool);

impl Read for OneByte<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = if self.1 { 1 } else { 4 }.min(self.0.len()).min(buf.len());
        self.1 = true;
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Both readers on `text`; panics with the input if they differ. The
/// parallel one runs twice: with its reading thread, and inside a rayon
/// pool of one thread (where it reads and parses in turn).
fn check(text: &[u8], encoder: &Encoder, options: &ReadOptions, limits: Limits) -> Outcome {
    let want = outcome(sequential::read(
        OneByte(text, false),
        encoder,
        options,
        limits.max_record,
    ));
    let got = outcome(read_with_limits(text, encoder, options, limits));
    assert_eq!(
        got,
        want,
        "chunks of {} bytes, limit {}, {options:?}, input {:?}",
        limits.chunk_bytes,
        limits.max_record,
        String::from_utf8_lossy(text)
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let inline = outcome(pool.install(|| read_with_limits(text, encoder, options, limits)));
    assert_eq!(
        inline,
        want,
        "in a rayon pool: {:?}",
        String::from_utf8_lossy(text)
    );
    want
}

fn cell(choices: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::sample::select(choices).prop_map(str::to_owned)
}

fn age() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u32..130).prop_map(|v| v.to_string()),
        2 => (-500i32..12_000, 0u32..4).prop_map(|(v, k)| {
            let s = format!("{:.*}", k as usize, f64::from(v) / 100.0);
            s
        }),
        3 => cell(&[
            " 42 ", "\"50\"", "\" 7\"", "1e2", "+7", ".5", "5.", "-0", "0.5", "99.25", "50",
            "12345678901234567890", "00000000000000000001", "4x7", "NaN", "inf", "", "-",
            "\"1\n2\"", "5\"", "\u{a0}3", "1.5.2", "\"\"",
        ]),
    ]
}

fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (0u32..1000).prop_map(|v| v.to_string()),
        2 => cell(&[
            "\"a,b\nc\"", "\"x\"\"y\"", "\"a\"b", "\u{feff}z", "\"\r\n\"", "q\"q", "\"\"\"\"",
            "\"\n\n\"", "", " ", "\"open,\"\"close\"\"\"",
        ]),
        1 => "[a-z\"\n\r,]{0,12}",
    ]
}

fn row() -> impl Strategy<Value = String> {
    let fields = (
        age(),
        id(),
        cell(&["a", "b", "?", "Zeta", "", "\"a\"", " a ", "\"b\nb\""]),
        cell(&["1", "0", "yes", "no", "Zeta", "", " true "]),
        cell(&["+", "-", " + ", "", "Zeta", "\"-\""]),
    );
    prop_oneof![
        12 => fields.prop_map(|(a, i, w, f, y)| format!("{a},{i},{w},{f},{y}")),
        1 => Just(String::new()),
        1 => Just("1,2,a,1".to_owned()),
        1 => Just("1,2,a,1,+,extra".to_owned()),
        1 => Just("\u{feff}3,2,a,1,+".to_owned()),
        1 => Just(",,,,".to_owned()),
    ]
}

fn csv_text() -> impl Strategy<Value = Vec<u8>> {
    let line_end = proptest::sample::select(&["\n", "\r\n", "\r", "\n\n", "\r\n\r\n"][..]);
    (
        any::<bool>(),
        line_end.clone(),
        proptest::collection::vec((row(), line_end), 0..40),
        any::<bool>(),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 1..4)),
        any::<bool>(),
    )
        .prop_map(|(bom, header_end, rows, final_end, bad_bytes, unquoted)| {
            let mut text = Vec::new();
            if bom {
                text.extend_from_slice("\u{feff}".as_bytes());
            }
            text.extend_from_slice(b"age,id,work,flag,y");
            text.extend_from_slice(header_end.as_bytes());
            let n = rows.len();
            for (k, (r, end)) in rows.into_iter().enumerate() {
                text.extend_from_slice(r.as_bytes());
                if k + 1 < n || final_end {
                    text.extend_from_slice(end.as_bytes());
                }
            }
            // Some arbitrary bytes (invalid UTF-8 among them) in the middle.
            if let Some(bytes) = bad_bytes {
                let at = text.len() / 2;
                text.splice(at..at, bytes);
            }
            // Half the inputs without quotes, where every chunk takes the
            // quote-free path.
            if unquoted {
                text.retain(|&b| b != b'"');
            }
            text
        })
}

/// Options with a required label: skip bad rows or refuse, after
/// `max_errors` errors.
fn options_with(skip: bool, max_errors: usize) -> ReadOptions {
    ReadOptions {
        label: LabelMode::Required,
        on_bad_row: if skip {
            OnBadRow::Skip
        } else {
            OnBadRow::Refuse
        },
        max_errors,
    }
}

fn options() -> impl Strategy<Value = ReadOptions> {
    (any::<bool>(), 1usize..4).prop_map(|(skip, max_errors)| options_with(skip, max_errors))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The main property: same result as the sequential reader, for chunks
    /// from 1 byte up.
    #[test]
    fn parallel_equals_sequential(text in csv_text(), options in options(), chunk in 1usize..96) {
        let limits = Limits { chunk_bytes: chunk, max_record: MAX_RECORD_BYTES };
        check(&text, &encoder(), &options, limits);
    }

    /// The same for a multiclass label (class indices instead of bits).
    #[test]
    fn multiclass_parallel_equals_sequential(text in csv_text(), options in options(), chunk in 1usize..96) {
        let limits = Limits { chunk_bytes: chunk, max_record: MAX_RECORD_BYTES };
        check(&text, &multiclass_encoder(), &options, limits);
    }

    /// The same with a record limit of a few bytes, so that records over
    /// it (and their refusal, with the rows and errors before them) fall
    /// anywhere relative to the chunks.
    #[test]
    fn record_limit_equals_sequential(text in csv_text(), options in options(), chunk in 1usize..64, max in 4u64..48) {
        let limits = Limits { chunk_bytes: chunk, max_record: max };
        check(&text, &encoder(), &options, limits);
    }

    /// Splitting a quote-free chunk in place gives `csv_core`'s records,
    /// positions and line counts.
    #[test]
    fn plain_split_equals_csv_core(text in "[a,\r\n]{0,60}", last in any::<bool>()) {
        let mut bytes = text.into_bytes();
        if !last {
            // A chunk that is not the last ends at a record end.
            bytes.push(b'\n');
        }
        let parse = |quote_free: bool| {
            let chunk = super::chunks::Chunk { bytes: bytes.clone(), last, quote_free };
            let mut records = Vec::new();
            let (newlines, ok) = super::chunks::parse(&chunk, |fields, at| {
                let fields: Vec<Vec<u8>> = (0..fields.len()).map(|i| fields.get(i).to_vec()).collect();
                records.push((fields, at.end, at.newlines, at.eof));
                true
            });
            (records, newlines, ok)
        };
        prop_assert_eq!(parse(true), parse(false), "{:?}", String::from_utf8_lossy(&bytes));
    }

    /// The plain-decimal fast path gives exactly `str::parse`'s value
    /// whenever it gives one.
    #[test]
    fn plain_decimals_parse_like_std(text in "[-+]?[0-9]{0,21}(\\.[0-9]{0,23})?") {
        if let Some(x) = plain_decimal(text.as_bytes()) {
            let y: f64 = text.parse().expect("std parses what the fast path accepts");
            prop_assert_eq!(x.to_bits(), y.to_bits(), "{}", text);
        }
    }
}

/// Every chunk size on one input that has all the hard cases, with errors
/// right before, at and after the places where chunks get cut.
#[test]
fn every_chunk_size_gives_the_same_result() {
    let text = "\u{feff}age,id,work,flag,y\r\n\
                1,\"multi\nline\",a,1,+\r\n\
                \r\n\
                x,2,a,1,+\n\
                7,\"q\"\"uote,\",b,0,-\r\
                8,2\",a,1,+\n\
                9,\"a\"b,Zeta,1,+\n\
                \n\n\
                10,2,a,1\n\
                11,\"\n\",?,no,-\n\
                12,2,b,yes, + ";
    let encoder = encoder();
    let mut outcomes = Vec::new();
    for max_errors in [1, 2, 10] {
        for skip in [false, true] {
            let options = options_with(skip, max_errors);
            for chunk in 1..=text.len() + 1 {
                let limits = Limits {
                    chunk_bytes: chunk,
                    max_record: MAX_RECORD_BYTES,
                };
                outcomes.push(check(text.as_bytes(), &encoder, &options, limits));
            }
        }
    }
    // The input does have bad rows, and lines that differ from rows. (The
    // lines are the `csv` crate's: after a record that ends in `\r\n` it
    // has not yet counted the `\n` when it notes the next record's line,
    // nor the blank lines before that record.)
    let Outcome::Read {
        errors,
        skipped,
        rows,
        ..
    } = outcomes.last().unwrap()
    else {
        panic!("skipping should read it: {:?}", outcomes.last());
    };
    assert_eq!((*skipped, rows.len()), (3, 5), "{errors:?}");
    assert_eq!(
        errors,
        &[
            r#"row 2 (line 3), column "age": not a number"#,
            r#"row 5 (line 7), column "work": unknown category (not in the schema)"#,
            "row 6 (line 8): expected 5 fields, found 4",
        ]
    );
}

/// A refusal stops the reading: after a bad first row, at most the chunks
/// in flight are read, not the rest of a large input.
#[test]
fn a_refusal_stops_reading_early() {
    struct Endless {
        header: std::io::Cursor<Vec<u8>>,
        taken: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }
    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.header.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            let row = b"1,2,a,1,+\n";
            let n = buf.len() / row.len() * row.len();
            for c in buf[..n].chunks_exact_mut(row.len()) {
                c.copy_from_slice(row);
            }
            self.taken
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(n)
        }
    }
    let taken = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let input = Endless {
        header: std::io::Cursor::new(b"age,id,work,flag,y\nx,2,a,1,+\n".to_vec()),
        taken: taken.clone(),
    };
    let e = read_with_limits(
        input,
        &encoder(),
        &ReadOptions::new(LabelMode::Required),
        Limits::default(),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"row 1 (line 2), column "age": not a number"#
    );
    let taken = taken.load(std::sync::atomic::Ordering::Relaxed);
    assert!(taken < 64 << 20, "read {taken} bytes after the refusal");
}

/// Errors and refusals keep their order across waves of chunks: bad rows
/// far apart in a long input, with the default chunks.
#[test]
fn errors_keep_their_order_across_waves() {
    let n = 400_000;
    let bad = [3usize, 150_001, 399_999];
    let mut text = String::from("age,id,work,flag,y\n");
    for row in 1..=n {
        if bad.contains(&row) {
            text.push_str("x,2,a,1,+\n");
        } else {
            text.push_str(&format!("{},\"{row}\",b,{},-\n", row % 101, row % 2));
        }
    }
    let encoder = encoder();
    for max_errors in [1, 2, 3] {
        for skip in [false, true] {
            let options = options_with(skip, max_errors);
            let want = outcome(sequential::read(
                text.as_bytes(),
                &encoder,
                &options,
                MAX_RECORD_BYTES,
            ));
            let got = outcome(super::read_csv_with(text.as_bytes(), &encoder, &options));
            assert_eq!(got, want, "{options:?}");
        }
    }
}

#[test]
fn plain_decimal_cases() {
    for (text, want) in [
        ("0", Some(0.0)),
        ("-0", Some(-0.0)),
        ("+7", Some(7.0)),
        (".5", Some(0.5)),
        ("5.", Some(5.0)),
        ("99.25", Some(99.25)),
        ("0.1", Some(0.1)),
        ("9007199254740992", Some(9_007_199_254_740_992.0)),
        // 2^53 + 1 does not fit: left to std.
        ("9007199254740993", None),
        ("1e2", None),
        ("", None),
        (".", None),
        ("-", None),
        (" 1", None),
        ("1.2.3", None),
        ("12345678901234567890", None),
        ("0.00000000000000000000001", None),
    ] {
        let got = plain_decimal(text.as_bytes());
        assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{text:?}");
    }
}
