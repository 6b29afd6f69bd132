//! The `taskwire` command. See `taskwire --help` and docs/operations.md.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of the system allocator: a task's life is many small, short-lived
/// allocations spread over worker threads, where glibc's malloc spends more time
/// consolidating free lists than the server spends on the task itself
/// (`taskwire::allocator::Allocator`: mimalloc, by its plain entry points where the
/// layout allows).
#[global_allocator]
static GLOBAL: taskwire::allocator::Allocator = taskwire::allocator::Allocator;

fn main() -> ExitCode {
    taskwire::allocator::tune_mimalloc();
    taskwire::cli::main(taskwire::cli::Cli::parse())
}
