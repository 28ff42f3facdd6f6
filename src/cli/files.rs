//! Reading and writing the files the commands take, with the path as context
//! in every error, and atomic writes so that a failure never leaves half a file.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::Path;

use anyhow::Context;
use privboost::data::{
    Dataset, Encoder, Format, LabelMode, ReadOptions, ReadReport, Schema, read_arrow_ipc_with,
    read_csv_with, read_parquet_with, to_csv,
};
use privboost::learn::Model;
use privboost::local_dp::sampled_column::{SampledColumn, read_reports};

/// Read and validate a schema file.
pub fn load_schema(path: &Path) -> anyhow::Result<Schema> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read schema {}", path.display()))?;
    Schema::from_json(&text).with_context(|| format!("schema {}", path.display()))
}

/// Read a data file and encode it: a CSV with a header row, or a Parquet
/// or Arrow IPC file (told by its extension or its first bytes,
/// [`Format::of_path`]).
pub fn load_dataset(path: &Path, encoder: &Encoder, label: LabelMode) -> anyhow::Result<Dataset> {
    load_report(path, encoder, label).map(|r| r.dataset)
}

/// [`load_dataset`] with its read report: the rows, and with a privacy
/// unit each kept row's unit key (for evaluation folds by unit).
pub fn load_report(path: &Path, encoder: &Encoder, label: LabelMode) -> anyhow::Result<ReadReport> {
    let format =
        Format::of_path(path).with_context(|| format!("cannot open data {}", path.display()))?;
    let file = File::open(path).with_context(|| format!("cannot open data {}", path.display()))?;
    let options = ReadOptions::new(label);
    match format {
        Format::Csv => read_csv_with(BufReader::new(file), encoder, &options),
        Format::Parquet => read_parquet_with(file, encoder, &options, usize::MAX),
        Format::ArrowIpc => read_arrow_ipc_with(file, encoder, &options, usize::MAX),
    }
    .with_context(|| format!("data {}", path.display()))
}

/// A data file as CSV text, for the commands that read rows without a
/// schema (`schema propose`, `randomize`): a CSV as it is, a Parquet or
/// Arrow IPC file rendered batch by batch ([`to_csv`]).
pub fn open_csv_text(path: &Path) -> anyhow::Result<Box<dyn Read>> {
    let format =
        Format::of_path(path).with_context(|| format!("cannot open data {}", path.display()))?;
    let file = File::open(path).with_context(|| format!("cannot open data {}", path.display()))?;
    Ok(match format {
        Format::Csv => Box::new(BufReader::new(file)),
        other => Box::new(to_csv(file, other).with_context(|| format!("data {}", path.display()))?),
    })
}

/// Read a sampled-column report file (`randomize --protocol
/// sampled-column`) into the stored form (`local_dp::sampled_column`).
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
