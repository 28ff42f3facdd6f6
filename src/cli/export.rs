//! `privboost export`: write a model in another runtime's format (ONNX).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use privboost::export::{ExportFormat, export};

use super::files;

/// Options of `privboost export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The model file.
    #[arg(long)]
    model: PathBuf,
    /// The format: `onnx` (the graph is described in docs/export.md).
    #[arg(long, default_value = "onnx")]
    format: String,
    /// Write the exported model here.
    #[arg(long)]
    out: PathBuf,
}

/// Export the model (post-processing of the released model: free of
/// privacy cost).
pub fn run(args: ExportArgs) -> anyhow::Result<()> {
    let format = ExportFormat::parse(&args.format)?;
    let model = files::load_model(&args.model)?;
    let bytes = export(&model, format).with_context(|| {
        format!(
            "cannot export model {} as {}",
            args.model.display(),
            args.format
        )
    })?;
    files::write_atomically(&args.out, &bytes)
}
