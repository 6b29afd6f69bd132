//! Upstream executors: [`Agent`] implementations that forward each task to a
//! remote agent, so that `taskwire serve --upstream URL` serves that agent on
//! every protocol taskwire speaks.
//!
//! The upstream is chosen by the URL's scheme ([`UpstreamSpec::parse`]):
//!
//! | scheme | upstream | status |
//! |---|---|---|
//! | `a2a+http://…`, `a2a+https://…` | A2A 1.0 over JSON-RPC ([`a2a::A2aUpstream`]) | works |
//! | `a2a+grpc://host:port` | A2A 1.0 over gRPC ([`a2a::A2aUpstream::discover_grpc`]) | works |
//! | `mcp+http(s)://…/mcp[#tool]` | an MCP server's tools, 2026-07-28 or 2025-11-25 ([`mcp::McpUpstream`]) | works (tasks, else blocking `tools/call`) |
//! | `agui+http(s)://…/path` | an AG-UI agent's run endpoint ([`agui::AguiUpstream`]) | works (runs, interrupts and resume) |
//!
//! Translation between the upstream protocol and the core goes through
//! `taskwire_vocab::upstream`; docs/bridging.md describes what crosses and what
//! does not.

pub mod a2a;
pub mod agui;
mod cancel_watch;
mod error;
mod link;
pub mod many;
pub mod mcp;
mod options;
mod outcome;
mod ready;
mod retry;
pub mod spec;
mod telemetry;

use std::sync::Arc;

use taskwire_core::{Agent, TaskStore};

pub use a2a::{A2aUpstream, UpstreamLink};
pub use agui::AguiUpstream;
pub use error::BridgeError;
pub use many::{Member, Upstreams};
pub use mcp::{McpUpstream, McpVersion};
pub use options::{
    UpstreamOptions, DEFAULT_CATCH_UP_RECORDS, DEFAULT_MAX_LINK_RECORDS, DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_OPEN_CALLS, DEFAULT_MAX_OPEN_CALLS_PER_PRINCIPAL, MAX_OPEN_MESSAGES,
};
pub use spec::UpstreamSpec;
pub use taskwire_client::ClientIdentityPem;
pub use telemetry::metric;

/// The agent for the upstream at `url`: parses the spec, discovers the
/// upstream (its agent card), and gives the agent `store` (the store its tasks
/// live in, see [`A2aUpstream::with_store`]). `mcp` is the MCP revision spoken
/// to an MCP upstream ([`McpVersion::Auto`] unless asked; `taskwire serve
/// --upstream-mcp-version`); other upstreams ignore it.
pub async fn connect(
    url: &str,
    options: &UpstreamOptions,
    mcp: McpVersion,
    store: Option<Arc<dyn TaskStore>>,
) -> Result<Arc<dyn Agent>, BridgeError> {
    connect_routed(url, options, mcp, store, None).await
}

/// As [`connect`], for one member (`route`) of several upstreams.
async fn connect_routed(
    url: &str,
    options: &UpstreamOptions,
    mcp: McpVersion,
    store: Option<Arc<dyn TaskStore>>,
    route: Option<many::Route>,
) -> Result<Arc<dyn Agent>, BridgeError> {
    let mut agent = match UpstreamSpec::parse(url)? {
        UpstreamSpec::A2aJsonRpc { base_url } => A2aUpstream::discover(&base_url, options).await?,
        UpstreamSpec::A2aGrpc { target } => A2aUpstream::discover_grpc(&target, options).await?,
        UpstreamSpec::Agui { endpoint } => {
            let mut agent = AguiUpstream::discover(&endpoint, options).await?;
            if let Some(s) = store {
                agent = agent.with_store(s);
            }
            return Ok(Arc::new(agent));
        }
        UpstreamSpec::Mcp { endpoint, tool } => {
            let mut agent =
                McpUpstream::discover_as(&endpoint, tool.as_deref(), options, mcp).await?;
            if let Some(s) = store {
                agent = agent.with_store_routed(s, route);
            }
            return Ok(Arc::new(agent));
        }
    };
    if let Some(s) = store {
        agent = agent.with_store_routed(s, route);
    }
    Ok(Arc::new(agent))
}

/// The agent for several named upstreams (`--upstream NAME=URL`, repeated):
/// each is discovered with its own options and becomes one skill `NAME`
/// ([`Upstreams`]). An MCP upstream must offer one tool (`#TOOL`).
/// `mcp` is the MCP revision spoken to every MCP upstream.
pub async fn connect_many(
    upstreams: &[(String, String, UpstreamOptions)],
    mcp: McpVersion,
    store: Option<Arc<dyn TaskStore>>,
) -> Result<Arc<dyn Agent>, BridgeError> {
    let mut members = Vec::with_capacity(upstreams.len());
    let routes = many::Route::all(upstreams.iter().map(|u| u.0.clone()).collect());
    for ((name, url, options), route) in upstreams.iter().zip(routes) {
        let agent = connect_routed(url, options, mcp, store.clone(), Some(route)).await?;
        if matches!(UpstreamSpec::parse(url)?, UpstreamSpec::Mcp { .. }) {
            let tools = agent.info().skills;
            if tools.len() != 1 {
                return Err(BridgeError::Config(format!(
                    "upstream {name}: the MCP server at {url} has {} tools ({}); name one with #TOOL",
                    tools.len(),
                    tools.iter().map(|t| t.id.as_str()).collect::<Vec<_>>().join(", ")
                )));
            }
        }
        members.push(Member {
            name: name.clone(),
            agent,
        });
    }
    Ok(Arc::new(Upstreams::new(members)?))
}
