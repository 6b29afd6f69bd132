//! The `taskwire` command line: argument parsing and the `serve` command, built on
//! [`Server`](crate::Server) like any other embedding program.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::Error;

mod args;
#[cfg(feature = "conformance")]
mod conformance;
mod serve;
mod store;
mod tls_files;
mod upstream;

#[cfg(feature = "conformance")]
pub use self::args::ConformanceArgs;
pub use self::args::{
    ListenerArgs, LogFormat, OptionalDuration, PgArgs, QuotaArgs, ServeArgs, Ttl, UpstreamArgs,
};
#[cfg(feature = "conformance")]
use self::conformance::conformance;
pub use self::serve::build_server;
use self::serve::{init_tracing, serve};

/// Exit status after a second SIGTERM/Ctrl-C cut the drain short.
pub const FORCED_EXIT_CODE: i32 = 130;

/// The agents this binary can run, for `--agent`.
#[cfg(all(feature = "a2a", feature = "mcp"))]
pub const AGENTS: &str = "scripted, tck, mcp-conformance";

/// The agents this binary can run, for `--agent`.
#[cfg(all(feature = "a2a", not(feature = "mcp")))]
pub const AGENTS: &str = "scripted, tck";

/// The agents this binary can run, for `--agent`.
#[cfg(all(not(feature = "a2a"), feature = "mcp"))]
pub const AGENTS: &str = "scripted, mcp-conformance";

/// The agents this binary can run, for `--agent`.
#[cfg(not(any(feature = "a2a", feature = "mcp")))]
pub const AGENTS: &str = "scripted";

/// taskwire: one agent task, every agent protocol. Serves an agent's tasks and
/// (as adapters are compiled in) exposes them over each protocol on one listener.
#[derive(Debug, Parser)]
#[command(name = "taskwire", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once per process; boxing would only move the bytes"
)]
pub enum Command {
    /// Serve an agent's tasks over HTTP (health, readiness, metrics and every
    /// adapter compiled in) until SIGTERM or Ctrl-C.
    Serve(ServeArgs),
    /// Run the conformance suite against a server: the same task lifecycle
    /// through every protocol it offers and across them (docs/conformance.md).
    /// Exit status 0 when every failure is in the baseline and no baseline
    /// entry passes, 1 otherwise, 2 when the suite could not run (including a
    /// target that offers none of the selected protocols).
    #[cfg(feature = "conformance")]
    Conformance(ConformanceArgs),
}

/// The binary's main: runs the command and turns errors into a message on stderr
/// and a nonzero exit code.
pub fn main(cli: Cli) -> ExitCode {
    let result = match cli.command {
        #[cfg(feature = "conformance")]
        Command::Conformance(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build();
            let res = match rt {
                Ok(rt) => rt.block_on(conformance(args)),
                Err(e) => Err(taskwire_conformance::Error::Io {
                    path: "tokio runtime".into(),
                    source: e,
                }),
            };
            return match res {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            };
        }
        Command::Serve(args) => init_tracing(args.log_format).and_then(|()| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(Error::Io)?
                .block_on(serve(args))
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests;
