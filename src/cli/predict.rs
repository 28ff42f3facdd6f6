//! `privboost predict`: apply a model to the rows of a CSV file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use privboost::data::{LabelMode, Schema, Task};
use privboost::learn::Output;

use super::files;

/// Options of `privboost predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// The model file.
    #[arg(long)]
    model: PathBuf,
    /// Rows to predict: CSV with a header row naming the schema's columns
    /// (the label column may be present; it is ignored).
    #[arg(long)]
    data: PathBuf,
    /// Write the predictions here instead of standard output.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Predict and write `class,score,probability` (classification) or `value`
/// (regression) per input row, in order.
pub fn run(args: PredictArgs) -> anyhow::Result<()> {
    let model = files::load_model(&args.model)?;
    let encoder = model.encoder()?;
    let rows = files::load_dataset(&args.data, &encoder, LabelMode::Optional)?;
    let predictor = model.predictor();
    let (positive, negative) = class_names(model.schema());

    let mut out = csv::Writer::from_writer(Vec::new());
    match model.task() {
        Task::Binary => out.write_record(["class", "score", "probability"])?,
        Task::Regression { .. } => out.write_record(["value"])?,
        Task::Multiclass { .. } => {
            // `class`, then one probability column per class in schema order.
            let mut header = vec!["class".to_owned()];
            header.extend(
                model
                    .schema()
                    .class_names()
                    .iter()
                    .map(|c| format!("probability_{c}")),
            );
            out.write_record(&header)?
        }
    }
    for output in predictor.predict_all(&rows) {
        match output {
            Output::Class(p) => {
                let class = if p.positive { &positive } else { &negative };
                out.write_record([
                    class.as_str(),
                    &p.score.to_string(),
                    &p.probability.to_string(),
                ])?;
            }
            Output::Value(v) => out.write_record([v.to_string()])?,
            Output::Classes(p) => {
                let mut record = vec![p.class];
                record.extend(p.probabilities.iter().map(f64::to_string));
                out.write_record(&record)?
            }
        }
    }
    let bytes = out.into_inner().context("writing predictions")?;
    match &args.out {
        Some(path) => files::write_atomically(path, &bytes)?,
        None => match std::io::stdout().write_all(&bytes) {
            // `privboost predict ... | head` closes the pipe early: not an error.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other?,
        },
    }
    Ok(())
}

/// The label values to print: the schema's positive and negative values
/// (`not <positive>` when the schema declares no negative value).
fn class_names(schema: &Schema) -> (String, String) {
    (schema.label.positive.clone(), schema.label.negative_name())
}
