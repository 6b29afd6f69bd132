//! The `taskwire` command. See `taskwire --help` and docs/operations.md.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of the system allocator: a task's life is many small, short-lived
/// allocations spread over worker threads, where glibc's malloc spends more time
/// consolidating free lists than the server spends on the task itself.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    taskwire::allocator::tune_mimalloc();
    taskwire::cli::main(taskwire::cli::Cli::parse())
}
