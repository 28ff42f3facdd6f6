//! `privboost schema propose`: a starting schema for the data owner to edit.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

/// Options of `privboost schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    #[command(subcommand)]
    command: SchemaCommand,
}

#[derive(Debug, Subcommand)]
enum SchemaCommand {
    /// Propose a schema from a CSV file. OWNER-SIDE ONLY: it reads the data
    /// (bounds and categories come from the rows), so its output is not
    /// private. Edit it into public knowledge (published ranges, documented
    /// category lists) before you train, and never run it on behalf of an
    /// analyst.
    Propose {
        /// CSV file with a header row.
        file: PathBuf,
        /// The label column.
        #[arg(long)]
        label: String,
        /// The label value of the positive class.
        #[arg(long)]
        positive: String,
    },
}

/// Run `schema propose`.
pub fn run(args: SchemaArgs) -> anyhow::Result<()> {
    match args.command {
        SchemaCommand::Propose {
            file,
            label,
            positive,
        } => {
            let reader = super::files::open_csv_text(&file)?;
            let schema = privboost::data::propose_schema(reader, &label, &positive)
                .with_context(|| format!("data {}", file.display()))?;
            println!("{}", serde_json::to_string_pretty(&schema)?);
            eprintln!(
                "note: this schema was derived from the rows of {}; replace bounds and category lists with public knowledge before training",
                file.display()
            );
            Ok(())
        }
    }
}
