//! The MCP upstream executor: an [`Agent`](taskwire_core::Agent) whose turns
//! call a tool of a remote MCP server.
//!
//! When the server offers the tasks extension, a turn's `tools/call` is
//! answered with a task, which the turn follows by polling `tasks/get`; an
//! `input_required` upstream task's input requests become the downstream
//! task's (form elicitations as keyed input requests with the same key, prompt
//! and schema; URL elicitations as provider authorisations), and the next
//! turn sends the downstream answers back with `tasks/update`. A server
//! without the extension is called with a plain blocking `tools/call`.
//!
//! The upstream link (task id, tool, turn, the keys asked) is stored in the
//! downstream task's agent state under `upstream` with `protocol: "mcp"` and
//! committed as soon as `tools/call` names the task; a re-run of the turn
//! follows that task instead of calling again. Translation goes through
//! `taskwire_vocab::upstream::mcp`.
//!
//! Each revision is a part of its own (`rev_2026_07_28`, `rev_2025_11_25`);
//! what both serve is in `served`, the link both keep in `link`, and this
//! module chooses the revision at discovery and plans every turn the same
//! way ([`Plan`]).
//!
//! A server that speaks only revision 2025-11-25 (it refuses
//! `server/discover`, but answers `initialize`), or any server when
//! [`McpVersion::V2025_11_25`] is asked for, is served by `rev_2025_11_25`:
//! a session, the experimental task methods of 2025-11-25 for tools that
//! allow them, else blocking `tools/call`s whose elicitations arrive on the
//! call's SSE answer.

mod link;
mod plan;
mod rev_2025_11_25;
mod rev_2026_07_28;
mod served;

use std::sync::Arc;

use serde_json::json;
use taskwire_client::mcp::McpClient;
use taskwire_core::{AgentInfo, TaskStore, TurnOutcome};
use taskwire_vocab::upstream::mcp as vocab;
use tracing::debug;

pub use link::{Asked, McpLink};
pub use plan::Plan;
pub use rev_2025_11_25::Upstream2025_11_25;
pub use rev_2026_07_28::Upstream2026_07_28;
pub use served::Served;

use crate::bridged::{Bridged, TurnStart, Upstream};
use crate::error::BridgeError;
use crate::options::{client_config, retrying, UpstreamOptions};

/// Which MCP protocol revision the bridge speaks to an MCP upstream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpVersion {
    /// 2026-07-28 (`server/discover`) when the server answers it, else
    /// 2025-11-25 when it answers `initialize` (the default).
    #[default]
    Auto,
    /// 2025-11-25 only (`initialize`, a session, the experimental tasks),
    /// even with a server that also speaks 2026-07-28.
    V2025_11_25,
    /// 2026-07-28 only: a server that refuses `server/discover` is an error.
    V2026_07_28,
}

impl std::str::FromStr for McpVersion {
    type Err = BridgeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "auto" => Ok(Self::Auto),
            "2025-11-25" => Ok(Self::V2025_11_25),
            "2026-07-28" => Ok(Self::V2026_07_28),
            other => Err(BridgeError::Config(format!(
                "unknown MCP protocol version {other:?}: use auto, 2025-11-25 or 2026-07-28"
            ))),
        }
    }
}

/// An MCP server's tools, run as this server's agent.
pub type McpUpstream = Bridged<Mcp>;

/// The MCP part of a bridged agent ([`McpUpstream`]): the server, spoken to
/// in the revision discovery chose.
#[derive(Clone)]
pub enum Mcp {
    /// Revision 2026-07-28.
    V2026_07_28(Upstream2026_07_28),
    /// Revision 2025-11-25.
    V2025_11_25(Upstream2025_11_25),
}

impl std::fmt::Debug for Mcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.served();
        f.debug_struct("Mcp")
            .field("endpoint", &s.endpoint)
            .field("tools", &s.tool_names())
            .field("tasks", &s.tasks)
            .field("rev_2025_11_25", &self.is_2025_11_25())
            .field("store", &s.store.as_ref().map(|s| s.kind()))
            .finish_non_exhaustive()
    }
}

impl McpUpstream {
    /// Discovers the MCP server at `endpoint` and builds the agent: with
    /// `tool`, that tool is its one skill; without, every tool of the server
    /// is one ([`Mcp::discover_as`] with [`McpVersion::Auto`]).
    pub async fn discover(
        endpoint: &str,
        tool: Option<&str>,
        opts: &UpstreamOptions,
    ) -> Result<Self, BridgeError> {
        Self::discover_as(endpoint, tool, opts, McpVersion::Auto).await
    }

    /// As [`McpUpstream::discover`], speaking `version` ([`Mcp::discover_as`]).
    pub async fn discover_as(
        endpoint: &str,
        tool: Option<&str>,
        opts: &UpstreamOptions,
        version: McpVersion,
    ) -> Result<Self, BridgeError> {
        Mcp::discover_as(endpoint, tool, opts, version)
            .await
            .map(Bridged::new)
    }

    /// Gives the agent the store its tasks live in ([`Mcp::with_store`]).
    pub fn with_store(self, store: Arc<dyn TaskStore>) -> Self {
        self.map(|m| m.with_store(store))
    }

    /// The MCP endpoint.
    pub fn endpoint(&self) -> &str {
        &self.upstream().served().endpoint
    }

    /// Whether the upstream offers the tasks extension (2025-11-25: whether
    /// any of the tools served is called as a task).
    pub fn offers_tasks(&self) -> bool {
        self.upstream().served().tasks
    }

    /// Whether the upstream is spoken to in revision 2025-11-25.
    pub fn is_2025_11_25(&self) -> bool {
        self.upstream().is_2025_11_25()
    }

    /// The 2025-11-25 session the bridge opened (`None` in 2026-07-28).
    pub fn rev_2025_11_25_session(&self) -> Option<String> {
        match self.upstream() {
            Mcp::V2025_11_25(u) => u.session_id(),
            Mcp::V2026_07_28(_) => None,
        }
    }
}

impl Mcp {
    /// Discovers the MCP server at `endpoint`, speaking `version`: with
    /// [`McpVersion::Auto`] a server that answers `server/discover` with
    /// anything but a result (a 2025-11-25 server: -32601, or an HTTP 400 for
    /// a request without a session) and then accepts `initialize` is spoken
    /// to in 2025-11-25.
    pub async fn discover_as(
        endpoint: &str,
        tool: Option<&str>,
        opts: &UpstreamOptions,
        version: McpVersion,
    ) -> Result<Self, BridgeError> {
        if version == McpVersion::V2025_11_25 {
            return Upstream2025_11_25::discover(endpoint, tool, opts)
                .await
                .map(Self::V2025_11_25);
        }
        let config = client_config(endpoint, opts);
        // Discovery already declares what the bridge can carry (form and URL
        // elicitations), and the tasks extension only once the server offers it.
        let client = McpClient::with_endpoint(config, endpoint)
            .map_err(|source| BridgeError::Discovery {
                url: endpoint.to_string(),
                source: Box::new(source),
            })?
            .declare_tasks_extension(false)
            .capability("elicitation", json!({"form": {}, "url": {}}));
        let discovered =
            match retrying(endpoint, opts, "server/discover", || client.discover()).await {
                Ok(d) => d.into_inner(),
                Err(BridgeError::Discovery { url, source })
                    if version == McpVersion::Auto && answered_at_all(&source) =>
                {
                    debug!(upstream = %endpoint, error = %source,
                        "server/discover refused; trying MCP 2025-11-25 (initialize)");
                    return match Upstream2025_11_25::discover(endpoint, tool, opts).await {
                        Ok(up) => Ok(Self::V2025_11_25(up)),
                        Err(e @ BridgeError::NoSuchTool { .. }) => Err(e),
                        Err(older) => {
                            debug!(upstream = %endpoint, error = %older,
                                "initialize refused too");
                            Err(BridgeError::Discovery { url, source })
                        }
                    };
                }
                Err(e) => return Err(e),
            };
        Upstream2026_07_28::discovered(endpoint, tool, opts, client, discovered)
            .await
            .map(Self::V2026_07_28)
    }

    /// Gives the agent the store its tasks live in (as
    /// [`crate::upstream::a2a::A2a::with_store`]): a downstream cancel is told
    /// from a lost lease, an upstream cancel ends the downstream task
    /// canceled, and a watcher cancels the upstream task of a downstream task
    /// canceled while no turn runs.
    pub fn with_store(self, store: Arc<dyn TaskStore>) -> Self {
        self.with_store_routed(store, None)
    }

    /// As [`Mcp::with_store`], for one member of several upstreams.
    pub(crate) fn with_store_routed(
        self,
        store: Arc<dyn TaskStore>,
        route: Option<crate::many::Route>,
    ) -> Self {
        match self {
            Self::V2026_07_28(u) => Self::V2026_07_28(u.with_store(store, route)),
            Self::V2025_11_25(u) => Self::V2025_11_25(u.with_store(store, route)),
        }
    }

    /// What the server serves.
    pub fn served(&self) -> &Served {
        match self {
            Self::V2026_07_28(u) => &u.served,
            Self::V2025_11_25(u) => &u.served,
        }
    }

    /// Whether the upstream is spoken to in revision 2025-11-25.
    pub fn is_2025_11_25(&self) -> bool {
        matches!(self, Self::V2025_11_25(_))
    }
}

impl Upstream for Mcp {
    type Link = McpLink;
    type Plan = Plan;

    fn protocol(&self) -> &'static str {
        link::PROTOCOL
    }

    fn revision(&self) -> Option<&'static str> {
        self.is_2025_11_25().then_some(vocab::VERSION_2025_11_25)
    }

    fn info(&self) -> &AgentInfo {
        &self.served().info
    }

    fn plan(&self, turn: &TurnStart<'_, McpLink>) -> Plan {
        plan::plan(turn)
    }

    async fn run(
        &self,
        turn: TurnStart<'_, McpLink>,
        plan: Plan,
    ) -> Result<TurnOutcome, BridgeError> {
        match self {
            Self::V2026_07_28(u) => u.run(turn, plan).await,
            Self::V2025_11_25(u) => u.run(turn, plan).await,
        }
    }

    async fn probe(&self) -> Result<(), String> {
        match self {
            Self::V2026_07_28(u) => u.probe().await,
            Self::V2025_11_25(u) => u.probe().await,
        }
    }
}

/// Whether a failed `server/discover` was still answered by a server (any
/// HTTP answer: a 2025-11-25 server refuses the method, or a request without
/// a session) rather than not reached at all.
fn answered_at_all(e: &taskwire_client::ClientError) -> bool {
    !matches!(
        e,
        taskwire_client::ClientError::Connect(_)
            | taskwire_client::ClientError::Transport(_)
            | taskwire_client::ClientError::Timeout(_)
    )
}
