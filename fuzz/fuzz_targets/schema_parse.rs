//! A schema and a CSV file together: the input up to the first NUL byte is the
//! schema JSON, the rest the CSV (and, if it parses, a JSON prediction row).
//! Parsing, validation, the encoder, the reader and the row encoder must return
//! errors, never panic; a schema that loads must survive its own JSON.

#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;
use privboost::data::{Encoder, Schema};

fuzz_target!(|data: &[u8]| {
    let (schema_bytes, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(schema_bytes) else {
        return;
    };
    let Ok(schema) = Schema::from_json(text) else {
        return;
    };
    let encoder = Encoder::new(&schema).expect("a schema that validates builds an encoder");
    assert_eq!(Schema::from_json(&schema.to_json_pretty()).unwrap(), schema);
    let mut active = Vec::new();
    encoder
        .encode_json_row(&common::valid_row(&encoder), 1, &mut active)
        .expect("a row of declared values encodes");
    common::check_active(&active, &encoder);
    common::read_all_ways(rest, &encoder);
    if let Ok(serde_json::Value::Object(row)) = serde_json::from_slice(rest) {
        if encoder.encode_json_row(&row, 1, &mut active).is_ok() {
            common::check_active(&active, &encoder);
        }
    }
});
