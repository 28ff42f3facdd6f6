//! The command-line interface: one file per subcommand, each a thin layer
//! that reads files, calls the library and prints.
//!
//! Errors are returned as `anyhow::Error` with the file as context; `main`
//! prints them on one line and exits with 1 (clap's usage errors exit with 2).

use clap::{Parser, Subcommand};

mod serve;

/// privboost: differentially private boosted decision trees.
#[derive(Debug, Parser)]
#[command(name = "privboost", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the REST service.
    Serve(serve::ServeArgs),
}

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => serve::run(args),
    }
}
