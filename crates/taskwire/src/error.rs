//! The crate's error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything that can stop the server from being built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The builder was given no agent.
    #[error("no agent configured: call ServerBuilder::agent")]
    MissingAgent,
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A non-loopback address was requested without authentication.
    #[error(
        "refusing to listen on {addr} without authentication: it is not a loopback address, so \
         anyone who can reach it would act as the local principal. Configure bearer tokens \
         (--auth-tokens FILE / TASKWIRE_AUTH_TOKENS), listen on 127.0.0.1 or [::1], or accept \
         the risk explicitly with --insecure-no-auth"
    )]
    InsecureListen {
        /// The address.
        addr: SocketAddr,
    },
    /// The auth token file could not be read.
    #[error("cannot read auth token file {path}: {source}")]
    TokenFileRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The auth token file is malformed.
    #[error("auth token file {path}, line {line}: {reason}")]
    TokenFile {
        /// The file (`<inline>` when parsed from a string).
        path: PathBuf,
        /// The 1-based line number (0 for the file as a whole).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// The store URL has a scheme this build does not know.
    #[error("unsupported store URL {url:?}: expected {expected}")]
    UnknownStore {
        /// The URL given.
        url: String,
        /// The schemes this build supports.
        expected: &'static str,
    },
    /// The store could not be opened.
    #[error("cannot open store {url}: {reason}")]
    StoreOpen {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The upstream of bridge mode (`--upstream`) is unusable: an unknown or
    /// unsupported scheme, or an agent that could not be discovered.
    #[error("upstream {url}: {reason}")]
    Upstream {
        /// The URL given.
        url: String,
        /// Why.
        reason: String,
    },
    /// The agent name is not one this binary knows.
    #[error("unknown agent {name:?}: available agents are: {available}")]
    UnknownAgent {
        /// The name given.
        name: String,
        /// The names this binary knows.
        available: &'static str,
    },
    /// Routes could not be mounted (two of them claim the same path).
    #[error("cannot mount {what}: {reason}")]
    Mount {
        /// What was being mounted.
        what: String,
        /// Why (axum's message).
        reason: String,
    },
    /// Flags that cannot work together.
    #[error("{0}")]
    Usage(String),
    /// Logging could not be set up.
    #[error("cannot set up logging: {0}")]
    Logging(String),
    /// The HTTP server failed.
    #[error("server I/O error: {0}")]
    Io(#[from] std::io::Error),
}
