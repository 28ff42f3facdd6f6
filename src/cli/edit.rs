//! `privboost edit`: a new version of a model with a post-processing edit of
//! one feature's shape function (DP-EBM §5). It reads only the model file,
//! never data, so it costs no privacy budget; the edit is recorded in the new
//! file's privacy statement.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;
use privboost::learn::ModelEdit;

use super::files;

/// Options of `privboost edit`.
#[derive(Debug, Args)]
pub struct EditArgs {
    /// The model file to edit (left unchanged).
    model: PathBuf,
    /// The feature (column) whose shape function is edited.
    #[arg(long)]
    feature: String,
    /// Make the function non-decreasing over the feature's ordered bins
    /// (pool-adjacent-violators weighted by the public noisy counts).
    #[arg(long, conflicts_with_all = ["decreasing", "values"])]
    increasing: bool,
    /// Make the function non-increasing over the feature's ordered bins.
    #[arg(long, conflicts_with = "values")]
    decreasing: bool,
    /// Set the function's values by hand, one per bin, comma-separated
    /// (`privboost inspect` lists the bins).
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    values: Vec<f64>,
    /// Where to write the new version.
    #[arg(long)]
    out: PathBuf,
}

/// Edit and write the new version.
pub fn run(args: EditArgs) -> anyhow::Result<()> {
    let edit = match (args.increasing, args.decreasing, args.values.is_empty()) {
        (true, false, true) => ModelEdit::Monotone {
            feature: args.feature,
            increasing: true,
        },
        (false, true, true) => ModelEdit::Monotone {
            feature: args.feature,
            increasing: false,
        },
        (false, false, false) => ModelEdit::SetValues {
            feature: args.feature,
            values: args.values,
        },
        _ => bail!("give one of --increasing, --decreasing or --values"),
    };
    let model = files::load_model(&args.model)?;
    let edited = model.edited(&edit)?;
    files::write_atomically(&args.out, edited.to_json().as_bytes())?;
    eprintln!(
        "wrote {} (post-processing of the released model: no privacy cost)",
        args.out.display()
    );
    Ok(())
}
