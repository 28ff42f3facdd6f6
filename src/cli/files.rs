//! Reading and writing the files the commands take, with the path as context
//! in every error, and atomic writes so that a failure never leaves half a file.

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::Path;

use anyhow::Context;
use privboost::data::sampled_column::{SampledColumn, read_reports};
use privboost::data::{Dataset, Encoder, LabelMode, ReadOptions, Schema, read_csv};
use privboost::learn::Model;

/// Read and validate a schema file.
pub fn load_schema(path: &Path) -> anyhow::Result<Schema> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read schema {}", path.display()))?;
    Schema::from_json(&text).with_context(|| format!("schema {}", path.display()))
}

/// Read a CSV file with a header row and encode it.
pub fn load_dataset(path: &Path, encoder: &Encoder, label: LabelMode) -> anyhow::Result<Dataset> {
    let file = File::open(path).with_context(|| format!("cannot open data {}", path.display()))?;
    read_csv(BufReader::new(file), encoder, label)
        .with_context(|| format!("data {}", path.display()))
}

/// Read a sampled-column report file (`randomize --protocol
/// sampled-column`) into the stored form (`data::sampled_column`).
pub fn load_reports(path: &Path, encoder: &Encoder, epsilon: f64) -> anyhow::Result<Dataset> {
    let protocol = SampledColumn::new(encoder.schema(), epsilon)?;
    let file = File::open(path).with_context(|| format!("cannot open data {}", path.display()))?;
    let options = ReadOptions::new(LabelMode::Required);
    read_reports(BufReader::new(file), encoder, &protocol, &options)
        .map(|r| r.dataset)
        .with_context(|| format!("data {}", path.display()))
}

/// Read and check a model file.
pub fn load_model(path: &Path) -> anyhow::Result<Model> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read model {}", path.display()))?;
    Model::from_json(&text).with_context(|| format!("model {}", path.display()))
}

/// Write `bytes` to `path` through a temporary file in the same directory,
/// renamed into place only once complete and synced.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let file_name = path
        .file_name()
        .with_context(|| format!("{} is not a file path", path.display()))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(file_name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = path.with_file_name(temp_name);
    let written = File::create(&temp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temp);
        return Err(error).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}
