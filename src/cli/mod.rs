//! The command-line interface: one file per subcommand, each a thin layer
//! that reads files, calls the library and prints.
//!
//! Errors are returned as `anyhow::Error` with the file as context; `main`
//! prints them on one line and exits with 1 (clap's usage errors exit with 2).

use clap::{Parser, Subcommand};

mod algorithm;
mod bench;
mod edit;
mod eval;
mod evaluate;
mod experiment;
mod export;
mod files;
mod inspect;
mod log_writer;
mod predict;
mod randomize;
mod schema;
mod serve;
mod train;

/// privboost: differentially private boosted decision trees.
#[derive(Debug, Parser)]
#[command(name = "privboost", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Train a differentially private model (LazyBB, DP-EBM, dp-linear, DPBoost or auto) on a CSV file.
    Train(train::TrainArgs),
    /// Make a new version of a DP-EBM model with a shape function edited (free post-processing).
    Edit(edit::EditArgs),
    /// Predict the rows of a CSV file with a model.
    Predict(predict::PredictArgs),
    /// Export a model to another runtime's format (ONNX; free post-processing).
    Export(export::ExportArgs),
    /// Show a model's inspection (vote table or shape functions) and privacy statement.
    Inspect(inspect::InspectArgs),
    /// Measure accuracy and AUC (owner-side: train/test or k-fold CV, grids, baselines).
    Eval(eval::EvalArgs),
    /// Release a model's accuracy and ROC AUC, or RMSE, on labelled rows with epsilon-DP.
    Evaluate(evaluate::EvaluateArgs),
    /// Reproduce the paper's experiment on the shipped data (tables and plots).
    Experiment(experiment::ExperimentArgs),
    /// Randomize a CSV on the owner's side (k-ary randomized response per column: epsilon-local DP) for a local_dp upload.
    Randomize(randomize::RandomizeArgs),
    /// Schema tools (owner-side).
    Schema(schema::SchemaArgs),
    /// Benchmark training and prediction speed.
    Bench(bench::BenchArgs),
    /// Run the REST service.
    Serve(serve::ServeArgs),
}

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Train(args) => train::run(args),
        Command::Edit(args) => edit::run(args),
        Command::Predict(args) => predict::run(args),
        Command::Export(args) => export::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Eval(args) => eval::run(args),
        Command::Evaluate(args) => evaluate::run(args),
        Command::Experiment(args) => experiment::run(args),
        Command::Randomize(args) => randomize::run(args),
        Command::Schema(args) => schema::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Serve(args) => serve::run(args),
    }
}
