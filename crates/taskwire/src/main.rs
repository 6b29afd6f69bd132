//! The `taskwire` command. See `taskwire --help` and docs/operations.md.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    taskwire::cli::main(taskwire::cli::Cli::parse())
}
