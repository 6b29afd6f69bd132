//! The `taskwire` command. See `taskwire --help` and docs/operations.md.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc instead of the system allocator: a task's life is many small, short-lived
/// allocations spread over worker threads, where glibc's malloc spends more time
/// consolidating free lists than the server spends on the task itself. The choice
/// is this program's: the library crates leave it to whoever embeds them.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (the same index in v2 and v3).
const MI_OPTION_PURGE_DELAY: i32 = 15;
/// How long freed memory stays unused before mimalloc gives it back to the OS.
const PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// Lets freed memory sit for [`PURGE_DELAY_MS`] before mimalloc returns it to the
/// OS (its default is 10 ms). Under load the same pages are freed and reused all
/// the time; purging them that early makes the kernel fault and zero them again
/// on every reuse, which profiles of the runtime showed as about a tenth of its
/// CPU. An explicit `MIMALLOC_PURGE_DELAY` in the environment wins.
fn tune_mimalloc() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: mi_option_set stores an option value; any value is valid for this
    // option, and mimalloc reads options with atomic loads.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
    }
}

fn main() -> ExitCode {
    tune_mimalloc();
    taskwire::cli::main(taskwire::cli::Cli::parse())
}
