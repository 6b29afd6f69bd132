//! What the server tests share: a `taskwire serve` built in process from its
//! command line; what the bridge tests share besides, in [`bridge`].

use clap::Parser;
use taskwire::cli::{Cli, Command};

#[allow(dead_code, reason = "each bridge test uses some of its helpers")]
pub(crate) mod bridge;

/// The server `taskwire serve --listen 127.0.0.1:0 --store memory:// EXTRA…` builds
/// (bound, not yet running).
pub(crate) async fn build_serve(extra: &[&str]) -> taskwire::Server {
    let mut argv = vec![
        "taskwire",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--store",
        "memory://",
    ];
    argv.extend_from_slice(extra);
    let cli = Cli::try_parse_from(argv).expect("parse");
    let Command::Serve(args) = cli.command else {
        panic!("parsed as another command");
    };
    taskwire::cli::build_server(&args).await.expect("build")
}
