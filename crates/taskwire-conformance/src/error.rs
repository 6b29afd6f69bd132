//! The crate's error type.

/// What can stop the suite from running at all (a failing scenario is a result,
/// not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A protocol name that is not one of a2a, grpc, a2a-rest, mcp, mcp-2025,
    /// agui, cas.
    #[error("unknown protocol `{0}` (expected a2a, grpc, a2a-rest, mcp, mcp-2025, agui or cas)")]
    UnknownProtocol(String),
    /// A scenario file that does not parse or is inconsistent.
    #[error("scenario {file}: {reason}")]
    Scenario {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// A baseline file that does not parse.
    #[error("baseline {file}: {reason}")]
    Baseline {
        /// The file.
        file: String,
        /// What is wrong.
        reason: String,
    },
    /// The target offers none of the selected protocols (or does not answer).
    #[error("the target offers none of the selected protocols: {0}")]
    NothingOffered(String),
    /// The target url is not usable.
    #[error("target {0}: expected an http:// or https:// url")]
    Target(String),
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The HTTP client could not be built.
    #[error("http client: {0}")]
    Http(String),
    /// Serialising a report.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}
