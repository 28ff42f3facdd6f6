//! The `privboost` binary: parses the command line and maps errors to exit
//! codes (0 success, 1 error, 2 usage error from clap).

use clap::Parser;

mod cli;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // One line: the context chain joined by ": ".
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
