//! `privboost serve`: arrives with the service issue.

use clap::Args;

/// Options of `privboost serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {}

/// Run the service.
pub fn run(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("the service is not built yet (see the service issue); use the CLI commands")
}
