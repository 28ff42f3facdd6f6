//! Arbitrary bytes as a CSV file, read with a fixed schema that has every column
//! type. The reader must return an error or a well-formed dataset, never panic.

#![no_main]

mod common;

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use privboost::data::{Encoder, Schema};

static ENCODER: LazyLock<Encoder> =
    LazyLock::new(|| Encoder::new(&Schema::from_json(common::ALL_TYPES_SCHEMA).unwrap()).unwrap());

fuzz_target!(|data: &[u8]| {
    common::read_all_ways(data, &ENCODER);
});
