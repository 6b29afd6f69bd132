//! The MCP upstream executor: an [`Agent`] whose turns call a tool of a remote
//! MCP server (revision 2026-07-28 over Streamable HTTP).
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
//! A server that speaks only revision 2025-11-25 (it refuses
//! `server/discover`, but answers `initialize`), or any server when
//! [`McpVersion::V2025_11_25`] is asked for, is served by `rev_2025_11_25` (this module's child):
//! a session, the experimental task methods of 2025-11-25 for tools that
//! allow them, else blocking `tools/call`s whose elicitations arrive on the
//! call's SSE answer.

mod rev_2025_11_25;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use taskwire_client::mcp::{
    DetailedTask, ElicitResult, McpClient, McpClient2025_11_25, ToolCallOutcome,
};
use taskwire_client::{BackoffPolicy, ClientError};
use taskwire_core::{
    async_trait, Agent, AgentError, AgentInfo, CoreError, Message, Skill, TaskStore, TurnContext,
    TurnOutcome,
};
use taskwire_vocab::upstream::mcp::{self as vocab, UpstreamAsk};
use taskwire_vocab::upstream::UpstreamState;
use tracing::{debug, info, info_span, warn, Instrument};

use crate::cancel_watch::{downstream_canceled, end_canceled, watch_cancels};
use crate::error::BridgeError;
use crate::options::{client_config, retrying, UpstreamOptions, LINK_KEY};
use crate::ready::ReadyCache;
use crate::retry::answered;
use crate::telemetry::{reattached, timed};

/// The link protocol name of MCP upstream tasks.
const PROTOCOL: &str = "mcp";

/// The longest wait between two `tasks/get` polls, whatever the upstream
/// suggests.
const MAX_POLL: Duration = Duration::from_secs(5);

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

/// What a turn asked its caller on behalf of the upstream task.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    /// The upstream input request key (2025-11-25: a key of the bridge's own,
    /// `upstream-elicitation-<turn>-<n>`).
    pub key: String,
    /// For a URL elicitation: the downstream provider whose grant answers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// For a form: its schema (to read a plain-text answer against).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// 2025-11-25: the JSON-RPC id of the upstream's `elicitation/create`
    /// request, which the answer is the response to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<Value>,
    /// 2025-11-25: the question's prompt (to ask it again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// 2025-11-25: a URL elicitation's URL (to ask it again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The link of a downstream task to its upstream MCP task, as stored in the
/// downstream task's agent state under [`LINK_KEY`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpLink {
    /// `mcp`.
    pub protocol: String,
    /// The upstream task id.
    pub task_id: String,
    /// The tool called.
    pub tool: String,
    /// The downstream turn that last sent something upstream.
    pub turn: u32,
    /// The upstream input requests the last turn raised downstream.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<Asked>,
    /// The tool answered `input_required` without a task (SEP-2322): the
    /// next turn calls it again with the answers (and this `requestState`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeat: bool,
    /// The `requestState` of that answer, sent back with the repeated call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// The protocol revision spoken, when it is not 2026-07-28: `2025-11-25`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// 2025-11-25: the `Mcp-Session-Id` of the session the upstream task (or
    /// the call) was made in; a re-attach asks in it first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// 2025-11-25: the JSON-RPC id of a blocking `tools/call` that waits for
    /// the answers to `asked` (its connection is held by the bridge process
    /// that made it, `LOSS_MCP_2025_11_25_BLOCKING_INPUT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Value>,
}

impl McpLink {
    /// The MCP link stored in an agent state, if any.
    pub fn read(state: Option<&Value>) -> Option<Self> {
        crate::link::read_link(state, PROTOCOL)
    }

    pub(crate) fn to_state(&self) -> Value {
        json!({ LINK_KEY: self })
    }

    /// The link a turn makes to a tool call (`task_id` empty when the call
    /// made no upstream task): nothing asked, not repeated, revision 2026-07-28.
    pub(crate) fn new(task_id: String, tool: String, turn: u32) -> Self {
        Self {
            protocol: PROTOCOL.into(),
            task_id,
            tool,
            turn,
            asked: Vec::new(),
            repeat: false,
            request_state: None,
            version: None,
            session: None,
            call: None,
        }
    }

    /// As [`McpLink::new`], for a 2025-11-25 upstream: in `session`, with the
    /// open blocking call's request id `call`.
    pub(crate) fn rev_2025_11_25(
        task_id: String,
        tool: String,
        turn: u32,
        session: Option<String>,
        call: Option<Value>,
    ) -> Self {
        Self {
            version: Some(vocab::VERSION_2025_11_25.into()),
            session,
            call,
            ..Self::new(task_id, tool, turn)
        }
    }

    /// A link of a 2025-11-25 upstream.
    pub fn is_2025_11_25(&self) -> bool {
        self.version.is_some()
    }
}

/// An MCP server's tools, run as this server's agent.
#[derive(Clone)]
pub struct McpUpstream {
    client: McpClient,
    endpoint: String,
    /// The tools served (all of the server's, or the URL's `#tool`), with
    /// their input schemas.
    pub(crate) tools: Vec<(String, Value)>,
    /// The server offers the tasks extension.
    tasks: bool,
    pub(crate) info: AgentInfo,
    pub(crate) store: Option<Arc<dyn TaskStore>>,
    pub(crate) backoff: BackoffPolicy,
    pub(crate) poll_interval: Duration,
    link_bounds: crate::link::LinkBounds,
    watcher: Option<Arc<crate::cancel_watch::Watcher>>,
    ready: Arc<ReadyCache>,
    /// Spoken to in revision 2025-11-25 (`rev_2025_11_25`).
    rev_2025_11_25: Option<rev_2025_11_25::Upstream2025_11_25>,
}

impl std::fmt::Debug for McpUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpUpstream")
            .field("endpoint", &self.endpoint)
            .field("tools", &self.tool_names())
            .field("tasks", &self.tasks)
            .field("rev_2025_11_25", &self.rev_2025_11_25.is_some())
            .field("store", &self.store.as_ref().map(|s| s.kind()))
            .finish_non_exhaustive()
    }
}

impl McpUpstream {
    /// The `upstream_link` records of this executor's tasks (with a store).
    pub(crate) fn link_records(&self) -> Option<&Arc<crate::link::LinkRecords>> {
        self.watcher.as_ref().map(|w| &w.records)
    }

    /// Discovers the MCP server at `endpoint` (`server/discover`, then
    /// `tools/list`) and builds the agent: with `tool`, that tool is its one
    /// skill; without, every tool of the server is one.
    pub async fn discover(
        endpoint: &str,
        tool: Option<&str>,
        opts: &UpstreamOptions,
    ) -> Result<Self, BridgeError> {
        Self::discover_as(endpoint, tool, opts, McpVersion::Auto).await
    }

    /// As [`McpUpstream::discover`], speaking `version`: with
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
        if version == McpVersion::V2025_11_25 {
            return Self::discover_2025_11_25(endpoint, tool, opts, client).await;
        }
        let discovered =
            match retrying(endpoint, opts, "server/discover", || client.discover()).await {
                Ok(d) => d.into_inner(),
                Err(BridgeError::Discovery { url, source })
                    if version == McpVersion::Auto && answered_at_all(&source) =>
                {
                    debug!(upstream = %endpoint, error = %source,
                        "server/discover refused; trying MCP 2025-11-25 (initialize)");
                    return match Self::discover_2025_11_25(endpoint, tool, opts, client).await {
                        Ok(up) => Ok(up),
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
        let tasks = McpClient::offers_tasks(&discovered) && opts.mcp_tasks;
        let listed = retrying(endpoint, opts, "tools/list", || client.list_tools())
            .await?
            .into_inner();
        let chosen = choose_tools(listed, tool)?;
        let (name, version) = discovered
            .meta
            .as_ref()
            .map(|m| (m.server_info.name.clone(), m.server_info.version.clone()))
            .unwrap_or_else(|| ("upstream".to_string(), String::new()));
        let (info, tools) = agent_info(
            endpoint,
            name,
            version,
            discovered.instructions.clone(),
            &chosen,
        );
        info!(upstream = %endpoint, tasks, tools = ?tools.iter().map(|t| &t.0).collect::<Vec<_>>(),
            "MCP upstream discovered");
        Ok(Self {
            client: client.declare_tasks_extension(tasks),
            endpoint: endpoint.to_string(),
            tools,
            tasks,
            info,
            store: None,
            backoff: opts.backoff.clone(),
            poll_interval: opts.poll_interval,
            link_bounds: crate::link::LinkBounds::of(opts),
            watcher: None,
            ready: Arc::new(ReadyCache::default()),
            rev_2025_11_25: None,
        })
    }

    /// Discovery in revision 2025-11-25: `initialize` (declaring form and
    /// URL elicitation) opens the bridge's session, then `tools/list`.
    async fn discover_2025_11_25(
        endpoint: &str,
        tool: Option<&str>,
        opts: &UpstreamOptions,
        client: McpClient,
    ) -> Result<Self, BridgeError> {
        let config = client_config(endpoint, opts);
        let rev_2025_11_25_client =
            McpClient2025_11_25::with_endpoint(config, endpoint).map_err(|source| {
                BridgeError::Discovery {
                    url: endpoint.to_string(),
                    source: Box::new(source),
                }
            })?;
        let capabilities = rev_2025_11_25::client_capabilities();
        let init = retrying(endpoint, opts, "initialize", || {
            rev_2025_11_25_client.initialize(capabilities.clone())
        })
        .await?
        .into_inner();
        let listed = retrying(endpoint, opts, "tools/list", || {
            rev_2025_11_25_client.list_tools()
        })
        .await?
        .into_inner();
        let chosen = choose_tools(listed, tool)?;
        let as_task: std::collections::HashSet<String> = chosen
            .iter()
            .filter(|t| {
                opts.mcp_tasks && vocab::rev_2025_11_25_calls_as_task(&init.capabilities, t)
            })
            .map(|t| t.name.clone())
            .collect();
        let idempotent: std::collections::HashSet<String> = chosen
            .iter()
            .filter(|t| vocab::tool_is_idempotent(t))
            .map(|t| t.name.clone())
            .collect();
        let (info, tools) = agent_info(
            endpoint,
            init.server_info.name.clone(),
            init.server_info.version.clone(),
            init.instructions.clone(),
            &chosen,
        );
        info!(upstream = %endpoint, version = %init.protocol_version,
            session = ?rev_2025_11_25_client.session_id(), as_tasks = ?as_task,
            tools = ?tools.iter().map(|t| &t.0).collect::<Vec<_>>(),
            "MCP upstream discovered (revision 2025-11-25)");
        Ok(Self {
            client,
            endpoint: endpoint.to_string(),
            tools,
            tasks: !as_task.is_empty(),
            info,
            store: None,
            backoff: opts.backoff.clone(),
            poll_interval: opts.poll_interval,
            link_bounds: crate::link::LinkBounds::of(opts),
            watcher: None,
            ready: Arc::new(ReadyCache::default()),
            rev_2025_11_25: Some(rev_2025_11_25::Upstream2025_11_25::new(
                rev_2025_11_25_client,
                capabilities,
                as_task,
                idempotent,
                opts,
            )),
        })
    }

    /// Gives the agent the store its tasks live in (as
    /// [`crate::A2aUpstream::with_store`]): a downstream cancel is told from a
    /// lost lease, an upstream cancel ends the downstream task canceled, and a
    /// watcher cancels the upstream task of a downstream task canceled while no
    /// turn runs.
    pub fn with_store(self, store: Arc<dyn TaskStore>) -> Self {
        self.with_store_routed(store, None)
    }

    /// As [`McpUpstream::with_store`], for one member of several upstreams.
    pub(crate) fn with_store_routed(
        mut self,
        store: Arc<dyn TaskStore>,
        route: Option<crate::many::Route>,
    ) -> Self {
        if let Some(older) = self.rev_2025_11_25.take() {
            let (older, watcher) = older.with_store(store.clone(), route);
            self.rev_2025_11_25 = Some(older);
            self.watcher = Some(Arc::new(watcher));
            self.store = Some(store);
            return self;
        }
        let client = self.client.clone();
        let watcher = watch_cancels(
            store.clone(),
            PROTOCOL,
            route,
            self.link_bounds,
            move |task_id| {
                let client = client.clone();
                async move {
                    timed(PROTOCOL, "tasks/cancel", client.cancel_task(&task_id))
                        .await
                        .map(|_| ())
                }
            },
        );
        self.watcher = Some(Arc::new(watcher));
        self.store = Some(store);
        self
    }

    /// The MCP endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Whether the upstream offers the tasks extension (2025-11-25: whether
    /// any of the tools served is called as a task).
    pub fn offers_tasks(&self) -> bool {
        self.tasks
    }

    /// Whether the upstream is spoken to in revision 2025-11-25.
    pub fn is_2025_11_25(&self) -> bool {
        self.rev_2025_11_25.is_some()
    }

    /// The 2025-11-25 session the bridge opened (`None` in 2026-07-28).
    pub fn rev_2025_11_25_session(&self) -> Option<String> {
        self.rev_2025_11_25.as_ref().and_then(|l| l.session_id())
    }

    /// The arguments of a call of `tool` for the task's first message, by
    /// the tool's input schema.
    pub(crate) fn arguments(
        &self,
        tool: &str,
        ctx: &TurnContext,
    ) -> serde_json::Map<String, Value> {
        static NO_SCHEMA: Value = Value::Null;
        let schema = self
            .tools
            .iter()
            .find(|t| t.0 == tool)
            .map_or(&NO_SCHEMA, |t| &t.1);
        let first = ctx.task().history.first().or(ctx.input().first());
        vocab::tool_arguments(schema, first)
    }

    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.0.clone()).collect()
    }
}

#[async_trait]
impl Agent for McpUpstream {
    fn info(&self) -> AgentInfo {
        self.info.clone()
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        if let Some(older) = &self.rev_2025_11_25 {
            return rev_2025_11_25::run_turn(self, older, ctx).await;
        }
        let turn = Turn::new(self, ctx);
        let span = info_span!("bridged_turn", protocol = PROTOCOL, task = %ctx.task().id,
            turn = turn.number, upstream_task = tracing::field::Empty);
        if let Some(l) = turn.link.as_ref().filter(|l| !l.task_id.is_empty()) {
            span.record("upstream_task", l.task_id.as_str());
        }
        crate::outcome::turn_result(ctx, turn.run().instrument(span).await)
    }

    /// Ready when `server/discover` is answered (any JSON-RPC answer counts).
    async fn ready(&self) -> Result<(), String> {
        if let Some(older) = &self.rev_2025_11_25 {
            return self.ready.check(|| older.ready(&self.endpoint)).await;
        }
        self.ready
            .check(|| async {
                match timed(PROTOCOL, "server/discover", self.client.discover()).await {
                    Ok(_) => Ok(()),
                    Err(e) if answered(&e) => Ok(()),
                    Err(e) => Err(format!("upstream {}: {e}", self.endpoint)),
                }
            })
            .await
    }
}

/// One downstream turn.
struct Turn<'a> {
    up: &'a McpUpstream,
    ctx: &'a TurnContext,
    number: u32,
    link: Option<McpLink>,
}

impl<'a> Turn<'a> {
    fn new(up: &'a McpUpstream, ctx: &'a TurnContext) -> Self {
        let number = crate::link::turn_number(ctx.task());
        Self {
            up,
            ctx,
            number,
            link: McpLink::read(ctx.state()),
        }
    }

    async fn run(mut self) -> Result<TurnOutcome, BridgeError> {
        match self.link.clone() {
            Some(l) if l.repeat => {
                let responses = self.responses(&l);
                let tool = l.tool.clone();
                self.call_tool(tool, Some(responses), l.request_state.clone())
                    .await
            }
            Some(l) if l.turn >= self.number => {
                info!(task = %self.ctx.task().id, upstream_task = %l.task_id, turn = self.number,
                    "re-attaching to the upstream MCP task");
                reattached(PROTOCOL);
                self.follow(&l.task_id).await
            }
            Some(l) => {
                let responses = self.responses(&l);
                if !responses.is_empty() {
                    debug!(task = %self.ctx.task().id, upstream_task = %l.task_id,
                        keys = ?responses.keys().collect::<Vec<_>>(), "answering upstream");
                    // Sent again only when nothing of it reached the
                    // upstream: answers given twice may be refused.
                    let sent = crate::retry::sent_again(
                        self.ctx,
                        &self.up.backoff,
                        "tasks/update",
                        ClientError::is_unsent,
                        || {
                            timed(
                                PROTOCOL,
                                "tasks/update",
                                self.up.client.update_task(&l.task_id, responses.clone()),
                            )
                        },
                    )
                    .await?;
                    if sent.is_none() {
                        return self.stopped().await;
                    }
                }
                let next = McpLink {
                    turn: self.number,
                    asked: Vec::new(),
                    ..l.clone()
                };
                self.store_link(next).await?;
                // Without a usable answer the upstream task still asks: the
                // follow raises its requests again.
                self.follow(&l.task_id).await
            }
            None => self.call().await,
        }
    }

    /// The first turn: calls the tool.
    async fn call(&mut self) -> Result<TurnOutcome, BridgeError> {
        let names = self.up.tool_names();
        let tool = match crate::outcome::chosen_tool(self.ctx.task(), &names) {
            Ok(t) => t,
            Err(refused) => return Ok(refused),
        };
        self.call_tool(tool, None, None).await
    }

    /// Calls `tool` with the arguments of the task's first message (the
    /// first call, or a repeat with answers after an `input_required`
    /// answer) and continues with what it answers.
    async fn call_tool(
        &mut self,
        tool: String,
        input_responses: Option<BTreeMap<String, ElicitResult>>,
        request_state: Option<String>,
    ) -> Result<TurnOutcome, BridgeError> {
        let args = self.up.arguments(&tool, self.ctx);
        debug!(task = %self.ctx.task().id, tool = %tool, tasks = self.up.tasks,
            repeat = input_responses.is_some(), "calling the upstream tool");
        // Made again only when nothing of it reached the upstream: a
        // `tools/call` has no idempotency key.
        let call = crate::retry::sent_again(
            self.ctx,
            &self.up.backoff,
            "tools/call",
            ClientError::is_unsent,
            || {
                timed(
                    PROTOCOL,
                    "tools/call",
                    self.up.client.call_tool_answering(
                        &tool,
                        Value::Object(args.clone()),
                        input_responses.clone(),
                        request_state.clone(),
                    ),
                )
            },
        );
        // A call answered with a task is not given up on a cancel: it answers
        // at once with the task the cancel must reach (a blocking call is,
        // dropping its connection being the only cancel 2026-07-28 has).
        let called = if self.up.tasks {
            call.await
        } else {
            tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped().await,
                r = call => r,
            }
        };
        let Some(outcome) = called? else {
            return self.stopped().await;
        };
        match outcome.into_inner() {
            ToolCallOutcome::Task(t) => {
                let link = McpLink::new(t.task_id.clone(), tool, self.number);
                if let Err(e) = self.store_link(link.clone()).await {
                    if self.ctx.is_cancelled() {
                        // Canceled while the task was being created: it is
                        // canceled upstream too.
                        self.link = Some(link);
                        return self.stopped().await;
                    }
                    return Err(e);
                }
                self.follow(&t.task_id).await
            }
            ToolCallOutcome::Complete(r) => self.finish(&r).await,
            ToolCallOutcome::InputRequired(r) => {
                let asks = vocab::asks_of(&r.input_requests);
                let (asked, prompt) = match self.raise(asks)? {
                    Ok(raised) => raised,
                    Err(refused) => return Ok(refused),
                };
                let link = McpLink {
                    asked,
                    repeat: true,
                    request_state: r.request_state,
                    ..McpLink::new(String::new(), tool, self.number)
                };
                self.ctx.set_state(link.to_state()).await?;
                self.link = Some(link);
                Ok(TurnOutcome::Waiting {
                    message: Some(Message::agent_text(if prompt.is_empty() {
                        "the upstream tool asks for input".to_string()
                    } else {
                        prompt
                    })),
                })
            }
        }
    }

    /// Stores the link and commits it before anything else of the turn.
    async fn store_link(&mut self, link: McpLink) -> Result<(), BridgeError> {
        self.ctx.set_state(link.to_state()).await?;
        self.ctx.flush().await?;
        tracing::Span::current().record("upstream_task", link.task_id.as_str());
        debug!(task = %self.ctx.task().id, upstream_task = %link.task_id, turn = link.turn,
            "upstream link stored");
        self.link = Some(link);
        Ok(())
    }

    /// The downstream answers to what the last turn asked, as input responses.
    fn responses(&self, link: &McpLink) -> BTreeMap<String, ElicitResult> {
        responses(self.ctx, &link.asked)
    }

    /// Follows the upstream task by polling `tasks/get` until the turn ends.
    async fn follow(&mut self, task_id: &str) -> Result<TurnOutcome, BridgeError> {
        let _record = self
            .up
            .link_records()
            .map(|r| r.running(self.ctx.task(), task_id));
        let backoff = self.up.backoff.clone();
        let mut failures: u32 = 0;
        let mut last_message: Option<String> = None;
        loop {
            let got = tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped().await,
                r = timed(PROTOCOL, "tasks/get", self.up.client.get_task(task_id)) => r,
            };
            let wait = match got {
                Ok(t) => {
                    failures = 0;
                    let t = t.into_inner();
                    let suggested = t.poll_interval_ms.map(Duration::from_millis);
                    match self.apply(t, &mut last_message).await {
                        Ok(Some(outcome)) => return Ok(outcome),
                        Ok(None) => {}
                        Err(BridgeError::Core(_)) if self.ctx.is_cancelled() => {
                            return self.stopped().await
                        }
                        Err(e) => return Err(e),
                    }
                    suggested.unwrap_or(self.up.poll_interval).min(MAX_POLL)
                }
                Err(e) => crate::retry::after_failed_poll(
                    &backoff,
                    &mut failures,
                    e,
                    "tasks/get",
                    task_id,
                )?,
            };
            tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped().await,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Applies one polled upstream task; `Some` when the turn ends with it.
    async fn apply(
        &mut self,
        t: DetailedTask,
        last_message: &mut Option<String>,
    ) -> Result<Option<TurnOutcome>, BridgeError> {
        let ctx = self.ctx;
        let t = t.task;
        match vocab::upstream_state_of_mcp(t.status) {
            UpstreamState::Running | UpstreamState::Unknown => {
                // A working upstream's new status message is progress.
                if let Some(m) = t.status_message.filter(|m| !m.trim().is_empty()) {
                    if last_message.as_ref() != Some(&m) {
                        ctx.emit_message(Message::agent_text(m.clone())).await?;
                        *last_message = Some(m);
                    }
                }
                Ok(None)
            }
            UpstreamState::Completed => match &t.result {
                Some(r) => self.finish(r).await.map(Some),
                None => Ok(Some(TurnOutcome::Completed { message: None })),
            },
            UpstreamState::Failed => Ok(Some(TurnOutcome::Failed {
                message: t
                    .error
                    .map(|e| e.message)
                    .or(t.status_message)
                    .unwrap_or_else(|| "the upstream task failed".into()),
            })),
            UpstreamState::Canceled => end_canceled(
                self.up.store.as_ref(),
                &self.up.info.name,
                &self.ctx.task().id,
            )
            .await
            .map(Some),
            UpstreamState::InputRequired | UpstreamState::AuthRequired => {
                let requests = t.input_requests.unwrap_or_default();
                let asks = vocab::asks_of(&requests);
                if asks.is_empty() {
                    // input_required without requests: wait for the next poll.
                    return Ok(None);
                }
                let (asked, prompt) = match self.raise(asks)? {
                    Ok(raised) => raised,
                    Err(refused) => return Ok(Some(refused)),
                };
                if let Some(mut l) = self.link.clone() {
                    l.asked = asked;
                    ctx.set_state(l.to_state()).await?;
                    self.link = Some(l);
                }
                let prompt = t.status_message.unwrap_or(prompt);
                Ok(Some(TurnOutcome::Waiting {
                    message: Some(Message::agent_text(prompt)),
                }))
            }
            UpstreamState::Rejected => Ok(Some(TurnOutcome::Rejected {
                reason: t
                    .status_message
                    .unwrap_or_else(|| "the upstream rejected the task".into()),
            })),
        }
    }

    /// Raises the upstream's input requests on the downstream task
    /// ([`crate::outcome::raise`]).
    fn raise(
        &self,
        asks: Vec<UpstreamAsk>,
    ) -> Result<Result<(Vec<Asked>, String), TurnOutcome>, BridgeError> {
        Ok(
            crate::outcome::raise(self.ctx, asks, "input request")?.map(|(raised, prompt)| {
                let asked = raised
                    .into_iter()
                    .map(|r| Asked {
                        key: r.key,
                        provider: r.provider,
                        schema: r.schema,
                        request_id: None,
                        prompt: None,
                        url: None,
                    })
                    .collect();
                (asked, prompt)
            }),
        )
    }

    /// Ends the turn with an upstream tool result: a failure for `isError`,
    /// else its content as one artifact.
    async fn finish(
        &mut self,
        r: &taskwire_client::mcp::CallToolResult,
    ) -> Result<TurnOutcome, BridgeError> {
        finish(self.ctx, self.number, r).await
    }

    /// The turn's cancellation token fired: cancel upstream if the downstream
    /// task was canceled; leave it for the next worker otherwise.
    async fn stopped(&mut self) -> Result<TurnOutcome, BridgeError> {
        let id = &self.ctx.task().id;
        if !downstream_canceled(self.up.store.as_ref(), id).await {
            debug!(task = %id, "turn stopped without a downstream cancel; the upstream task is left running");
            return Err(BridgeError::Core(CoreError::LeaseLost));
        }
        match self.link.as_ref().filter(|l| !l.task_id.is_empty()) {
            Some(l) => match timed(
                PROTOCOL,
                "tasks/cancel",
                self.up.client.cancel_task(&l.task_id),
            )
            .await
            {
                Ok(_) => info!(task = %id, upstream_task = %l.task_id, "upstream task canceled"),
                Err(e) => warn!(task = %id, upstream_task = %l.task_id, error = %e,
                    "canceling the upstream task failed"),
            },
            None => {
                debug!(task = %id, "no upstream task to cancel (none named yet, or a call without a task)")
            }
        }
        Err(BridgeError::Core(CoreError::Terminal {
            state: taskwire_core::TaskState::Canceled,
        }))
    }
}

/// The downstream answers (of the turn `ctx`) to what the last turn asked, as
/// input responses by key: keyed answers, granted providers (an accepting
/// empty answer), and a plain-text answer read against the first form it fits.
pub(crate) fn responses(ctx: &TurnContext, asked: &[Asked]) -> BTreeMap<String, ElicitResult> {
    let text: String = ctx
        .input()
        .iter()
        .map(Message::text)
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = BTreeMap::new();
    let mut text_used = false;
    for a in asked {
        if let Some(provider) = &a.provider {
            if ctx.is_granted(provider) {
                out.insert(a.key.clone(), ElicitResult::accept(Map::new()));
            }
            continue;
        }
        if let Some(r) = ctx.answers().get(&a.key) {
            out.insert(a.key.clone(), vocab::elicit_result(r));
            continue;
        }
        if text_used || text.is_empty() {
            continue;
        }
        let schema = a.schema.clone().unwrap_or(Value::Null);
        if let Some(content) = vocab::content_of_text(&schema, &text) {
            out.insert(a.key.clone(), ElicitResult::accept(content));
            text_used = true;
        }
    }
    out
}

/// Ends turn `number` with an upstream tool result: a failure for `isError`
/// (with the result's text), else its content as one artifact.
pub(crate) async fn finish(
    ctx: &TurnContext,
    number: u32,
    r: &taskwire_client::mcp::CallToolResult,
) -> Result<TurnOutcome, BridgeError> {
    if r.is_error == Some(true) {
        let text = vocab::result_text(r);
        return Ok(TurnOutcome::Failed {
            message: if text.trim().is_empty() {
                "the upstream tool failed".into()
            } else {
                text
            },
        });
    }
    let parts = vocab::parts_of_result(r)?;
    if !parts.is_empty() {
        ctx.emit_artifact(
            &vocab::result_artifact_id(number),
            Some(vocab::RESULT_ARTIFACT_NAME),
            parts,
        )
        .await?;
    }
    Ok(TurnOutcome::Completed { message: None })
}

/// The tools to serve: `tool` alone (an error naming the server's tools
/// when it has none of that name), else all of them.
fn choose_tools(
    listed: Vec<taskwire_client::mcp::Tool>,
    tool: Option<&str>,
) -> Result<Vec<taskwire_client::mcp::Tool>, BridgeError> {
    let all: Vec<String> = listed.iter().map(|t| t.name.clone()).collect();
    match tool {
        Some(name) => {
            let found: Vec<_> = listed.into_iter().filter(|t| t.name == name).collect();
            if found.is_empty() {
                return Err(BridgeError::NoSuchTool {
                    tool: name.to_string(),
                    tools: all,
                });
            }
            Ok(found)
        }
        None => Ok(listed),
    }
}

/// The agent info of an MCP server (its name, version and instructions) whose
/// `tools` are its skills, and the tools' input schemas.
fn agent_info(
    endpoint: &str,
    name: String,
    version: String,
    instructions: Option<String>,
    tools: &[taskwire_client::mcp::Tool],
) -> (AgentInfo, Vec<(String, Value)>) {
    let description = instructions
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| format!("The MCP server at {endpoint}, bridged by taskwire"));
    let mut info = AgentInfo::new(
        if name.trim().is_empty() {
            "upstream".to_string()
        } else {
            name
        },
        description,
    );
    if !version.is_empty() {
        info.version = version;
    }
    let mut out = Vec::new();
    for t in tools {
        let schema = Value::Object(t.input_schema.clone());
        info.skills.push(Skill::new(
            t.name.clone(),
            t.title.clone().unwrap_or_else(|| t.name.clone()),
            t.description.clone().unwrap_or_default(),
            schema.clone(),
        ));
        out.push((t.name.clone(), schema));
    }
    (info, out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_round_trips_and_is_told_from_an_a2a_link() {
        let l = McpLink {
            protocol: PROTOCOL.into(),
            task_id: "t-1".into(),
            tool: "run_script".into(),
            turn: 2,
            asked: vec![Asked {
                key: "ask-0".into(),
                provider: None,
                schema: Some(json!({"type": "object"})),
                request_id: None,
                prompt: None,
                url: None,
            }],
            repeat: false,
            request_state: None,
            version: None,
            session: None,
            call: None,
        };
        let state = l.to_state();
        assert_eq!(state["upstream"]["protocol"], "mcp");
        assert_eq!(McpLink::read(Some(&state)), Some(l));
        let a2a = json!({"upstream": {"protocol": "a2a", "taskId": "x", "turn": 1}});
        assert_eq!(McpLink::read(Some(&a2a)), None);
        assert_eq!(McpLink::read(None), None);
    }
}
