//! Upstream executors: [`Agent`] implementations that forward each task to a
//! remote agent, so that `taskwire serve --upstream URL` serves that agent on
//! every protocol taskwire speaks.
//!
//! The upstream is chosen by the URL's scheme ([`UpstreamSpec::parse`]):
//!
//! | scheme | upstream | status |
//! |---|---|---|
//! | `a2a+http://…`, `a2a+https://…` | A2A 1.0 over JSON-RPC ([`A2aUpstream`]) | works |
//! | `a2a+grpc://host:port` | A2A 1.0 over gRPC ([`A2aUpstream::discover_grpc`]) | works |
//! | `mcp+http(s)://…/mcp[#tool]` | an MCP server's tools, 2026-07-28 or 2025-11-25 ([`McpUpstream`]) | works (tasks, else blocking `tools/call`) |
//! | `agui+http(s)://…/path` | an AG-UI agent's run endpoint ([`AguiUpstream`]) | works (runs, interrupts and resume) |
//!
//! Translation between the upstream protocol and the core goes through
//! `taskwire_vocab::upstream`; docs/bridging.md describes what crosses and what
//! does not.

mod bridged;
mod cancel_watch;
mod error;
mod link;
pub mod many;
mod options;
mod outcome;
mod ready;
mod retry;
pub mod spec;
mod telemetry;
pub mod upstream;

use std::sync::Arc;

use taskwire_core::{Agent, TaskStore};

pub use bridged::{Bridged, Link, TurnStart, Upstream};
pub use error::BridgeError;
pub use many::{Member, Upstreams};
pub use options::{
    UpstreamOptions, DEFAULT_CATCH_UP_RECORDS, DEFAULT_MAX_LINK_RECORDS, DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_OPEN_CALLS, DEFAULT_MAX_OPEN_CALLS_PER_PRINCIPAL, MAX_OPEN_MESSAGES,
};
pub use spec::UpstreamSpec;
/// The outbound OAuth client an upstream may be given ([`UpstreamOptions::oauth`]).
pub use taskwire_client::oauth;
pub use taskwire_client::ClientIdentityPem;
pub use telemetry::metric;
pub use upstream::a2a::{A2aUpstream, UpstreamLink};
pub use upstream::agui::AguiUpstream;
pub use upstream::mcp::{McpUpstream, McpVersion};

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
    Ok(match UpstreamSpec::parse(url)? {
        UpstreamSpec::A2aJsonRpc { base_url } => {
            let a = upstream::a2a::A2a::discover(&base_url, options).await?;
            bridged(a, store, |a, s| a.with_store_routed(s, route))
        }
        UpstreamSpec::A2aGrpc { target } => {
            let a = upstream::a2a::A2a::discover_grpc(&target, options).await?;
            bridged(a, store, |a, s| a.with_store_routed(s, route))
        }
        UpstreamSpec::Agui { endpoint } => {
            let a = upstream::agui::Agui::discover(&endpoint, options).await?;
            bridged(a, store, |a, s| a.with_store(s))
        }
        UpstreamSpec::Mcp { endpoint, tool } => {
            let m =
                upstream::mcp::Mcp::discover_as(&endpoint, tool.as_deref(), options, mcp).await?;
            bridged(m, store, |m, s| m.with_store_routed(s, route))
        }
    })
}

/// The bridged agent of `upstream`, given `store` by `with_store` if any.
fn bridged<U: Upstream>(
    upstream: U,
    store: Option<Arc<dyn TaskStore>>,
    with_store: impl FnOnce(U, Arc<dyn TaskStore>) -> U,
) -> Arc<dyn Agent> {
    let upstream = match store {
        Some(s) => with_store(upstream, s),
        None => upstream,
    };
    Arc::new(Bridged::new(upstream))
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
