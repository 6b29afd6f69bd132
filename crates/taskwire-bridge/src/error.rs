//! The bridge's one error type.

use taskwire_client::ClientError;
use taskwire_core::{AgentError, CoreError};
use taskwire_vocab::VocabError;

/// Everything that can go wrong in the bridge: a bad upstream spec, an upstream
/// that cannot be discovered, and failures while a turn talks to it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The upstream URL's scheme is not one the bridge knows.
    #[error("unknown upstream scheme in {url:?}: expected a2a+http://…, a2a+https://…, a2a+grpc(s)://host:port, mcp+http(s)://…[#tool] or agui+http(s)://…")]
    UnknownScheme {
        /// The URL as given.
        url: String,
    },
    /// The URL has a known scheme but is not usable.
    #[error("invalid upstream URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The upstreams as configured cannot be served (names, tools).
    #[error("{0}")]
    Config(String),
    /// The MCP upstream has no tool of the URL's `#tool` name.
    #[error("the upstream MCP server has no tool {tool:?}; its tools: {}", tools.join(", "))]
    NoSuchTool {
        /// The tool asked for.
        tool: String,
        /// The tools it has.
        tools: Vec<String>,
    },
    /// The upstream's agent card could not be fetched or read.
    #[error("discovering the upstream agent at {url}: {source}")]
    Discovery {
        /// The base URL discovered from.
        url: String,
        /// The client's error (boxed: it is large).
        #[source]
        source: Box<ClientError>,
    },
    /// A call to the upstream failed during a turn.
    #[error("upstream {operation}: {source}")]
    Upstream {
        /// What was being done (for example `SendStreamingMessage`).
        operation: &'static str,
        /// The client's error (boxed: it is large).
        #[source]
        source: Box<ClientError>,
    },
    /// The upstream sent something the bridge cannot carry.
    #[error("upstream sent an unusable value: {0}")]
    Vocab(#[from] VocabError),
    /// The upstream broke the protocol (for example a stream that ended before a
    /// task was named).
    #[error("upstream protocol: {0}")]
    Protocol(String),
    /// A core operation failed.
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl From<BridgeError> for AgentError {
    fn from(e: BridgeError) -> Self {
        match e {
            BridgeError::Core(c) => AgentError::Core(c),
            other => AgentError::Internal(other.to_string()),
        }
    }
}
