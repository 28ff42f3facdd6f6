//! `privboost evaluate`: release a model file's quality on the rows of a CSV
//! file through the same epsilon-DP mechanism as `POST
//! /v1/models/{id}/evaluate` (`learn::private_metrics`; docs/privacy.md,
//! "Releasing a model's quality on private rows"), with noise from the OS.
//! The command has no ledger: the caller accounts for the epsilon it prints.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use privboost::data::LabelMode;
use privboost::learn::{PrivateMetrics, check_private_metrics, private_metrics};
use privboost::privacy::{NoiseRng, metrics};

use super::files;

/// Largest epsilon one evaluation may spend (as over HTTP).
const MAX_EPSILON: f64 = 100.0;

/// Options of `privboost evaluate`.
#[derive(Debug, Args)]
pub struct EvaluateArgs {
    /// The model file.
    #[arg(long)]
    model: PathBuf,
    /// Rows with labels: CSV with a header row naming the model's schema's
    /// columns, the label column included.
    #[arg(long)]
    data: PathBuf,
    /// Epsilon of the release (pure DP), in (0, 100].
    #[arg(long)]
    epsilon: f64,
    /// Print the release as JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Check the epsilon, read the model and the rows (the schema of the model
/// decides the columns), release the metrics and print them.
pub fn run(args: EvaluateArgs) -> anyhow::Result<()> {
    if !(args.epsilon > 0.0 && args.epsilon <= MAX_EPSILON) {
        bail!(
            "--epsilon must be in (0, {MAX_EPSILON}], got {}",
            args.epsilon
        );
    }
    metrics::check_epsilon(args.epsilon).context("--epsilon")?;
    let model = files::load_model(&args.model)?;
    check_private_metrics(&model, args.epsilon).context("--epsilon")?;
    let encoder = model.encoder()?;
    let rows = files::load_dataset(&args.data, &encoder, LabelMode::Required)?;
    let mut rng = NoiseRng::from_os().context("the OS random number generator")?;
    let released = private_metrics(&model, &rows, args.epsilon, &mut rng)
        .with_context(|| format!("evaluating on {}", args.data.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&released)?);
        return Ok(());
    }
    match released {
        PrivateMetrics::Classification {
            accuracy,
            roc_auc,
            n_rows,
            epsilon,
            mechanism,
        } => {
            let auc = roc_auc.map_or(
                "undefined (a class has no rows after noise)".to_owned(),
                |a| format!("{a:.4}"),
            );
            println!("accuracy {accuracy:.4}, ROC AUC {auc} (noisy, epsilon-DP) on {n_rows} rows");
            println!("epsilon spent: {epsilon} (pure DP, delta 0)");
            println!("mechanism: {mechanism}");
        }
        PrivateMetrics::Multiclass {
            accuracy,
            macro_f1,
            classes,
            confusion,
            n_rows,
            epsilon,
            mechanism,
        } => {
            let f1 = macro_f1.map_or(
                "undefined (no class has rows after noise)".to_owned(),
                |f| format!("{f:.4}"),
            );
            println!(
                "accuracy {accuracy:.4}, macro-F1 {f1} (noisy, epsilon-DP) on {n_rows} rows, {} classes",
                classes.len()
            );
            println!("noisy confusion matrix (rows: actual class, columns: predicted class):");
            println!("\t{}", classes.join("\t"));
            for (class, row) in classes.iter().zip(&confusion) {
                let cells: Vec<String> = row.iter().map(i64::to_string).collect();
                println!("{class}\t{}", cells.join("\t"));
            }
            println!("epsilon spent: {epsilon} (pure DP, delta 0)");
            println!("mechanism: {mechanism}");
        }
        PrivateMetrics::Regression {
            rmse,
            n_rows,
            epsilon,
            mechanism,
        } => {
            println!("RMSE {rmse:.4} (noisy, epsilon-DP) on {n_rows} rows");
            println!("epsilon spent: {epsilon} (pure DP, delta 0)");
            println!("mechanism: {mechanism}");
        }
    }
    Ok(())
}
