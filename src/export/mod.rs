//! Export of a trained model to other runtimes' formats (issue 29): for now
//! ONNX ([`onnx`]). Export reads only the released model and its public
//! schema: it is post-processing and charges no privacy budget
//! (docs/privacy.md).
//!
//! Learners expose what export needs through the family's types
//! ([`crate::learn::LiteralForm`] from [`crate::learn::Model::literal_form`]);
//! this module never reaches into one learner.

pub mod onnx;
pub mod proto;

use crate::learn::{LearnError, Model};

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// ONNX (`ai.onnx` opset 21, `ai.onnx.ml` opset 5).
    Onnx,
}

impl ExportFormat {
    /// The formats, as named in requests.
    pub const NAMES: &'static [&'static str] = &["onnx"];

    /// Parse a format name (`onnx`); the error lists the formats.
    pub fn parse(name: &str) -> Result<ExportFormat, ExportError> {
        match name {
            "onnx" => Ok(ExportFormat::Onnx),
            other => Err(ExportError::Unsupported(format!(
                "unknown export format {other:?}; supported: {}",
                ExportFormat::NAMES.join(", ")
            ))),
        }
    }

    /// The media type of an exported file.
    pub fn media_type(self) -> &'static str {
        match self {
            ExportFormat::Onnx => "application/octet-stream",
        }
    }

    /// The usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Onnx => "onnx",
        }
    }
}

/// Why a model was not exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The model (or the format) cannot be exported; the message says why.
    #[error("{0}")]
    Unsupported(String),
    /// The model file does not load or check.
    #[error(transparent)]
    Model(#[from] LearnError),
}

/// Export `model` in `format`: the file's bytes.
pub fn export(model: &Model, format: ExportFormat) -> Result<Vec<u8>, ExportError> {
    match format {
        ExportFormat::Onnx => onnx::to_onnx(model),
    }
}
