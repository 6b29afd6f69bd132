//! The MCP upstream executor's revision 2025-11-25 half: a server that
//! refuses `server/discover` but answers `initialize` (or any server, when
//! [`super::McpVersion::V2025_11_25`] is asked for).
//!
//! The bridge opens one session at discovery (`initialize`, declaring form and
//! URL elicitation) and re-initializes when the upstream no longer holds it.
//! A tool is called:
//!
//! - as a task when the server advertises `capabilities.tasks.requests.tools.call`
//!   and the tool's `execution.taskSupport` allows it: `tools/call` with
//!   `params.task`; the upstream task id (and the session) is stored in the
//!   link and committed before anything else; `tasks/get` is polled (at the
//!   task's `pollInterval`, at most 5 s); while the task is `input_required`
//!   a `tasks/result` stream is read for the server's `elicitation/create`
//!   requests, which become the downstream task's input requests
//!   (authorisations for URL elicitations), keyed
//!   `upstream-elicitation-<turn>-<n>`; the next turn sends each downstream
//!   answer as the JSON-RPC response to its request (whose id the link
//!   keeps), and once the task is terminal `tasks/result` gives its result;
//! - else blocking: `tools/call` whose SSE answer may carry `elicitation/create`
//!   requests before the result. The turn raises them and ends waiting, and
//!   the open call (its stream) stays in this process's memory, bounded, until
//!   the next turn answers it and reads on. A call lost with its process cannot
//!   be answered: that turn fails (`LOSS_MCP_2025_11_25_BLOCKING_INPUT`), unless
//!   the tool is marked idempotent (`annotations.idempotentHint`), which is
//!   called again, its repeated questions answered with the answers given.
//!
//! A downstream cancel sends `tasks/cancel` for a task, and
//! `notifications/cancelled` with the request id for a blocking call (then
//! drops its connection). A re-attach (a re-run of a turn that stored a link)
//! asks in the link's session first, then in the bridge's own
//! (`LOSS_MCP_2025_11_25_SESSION`).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use taskwire_client::mcp::{method, CallToolResult, ElicitResult, McpClient2025_11_25};
use taskwire_client::{ClientError, Received, RpcError};
use taskwire_core::{CoreError, Message, TaskId, TaskState, TaskStore, TurnContext, TurnOutcome};
use taskwire_vocab::upstream::mcp::{self as vocab, UpstreamAsk};
use taskwire_vocab::upstream::UpstreamState;
use tracing::{debug, info, warn};

use super::link::{Asked, McpLink, PROTOCOL};
use super::plan::Plan;
use super::served::{agent_info, choose_tools, Served};
use crate::bridged::TurnStart;
use crate::cancel_watch::{downstream_canceled, end_canceled, watch_cancels, AbortOnDrop};
use crate::error::BridgeError;
use crate::options::{client_config, retrying, UpstreamOptions};
use crate::retry::after_failed_send;
use crate::telemetry::{reattached, timed};

/// The longest wait between two `tasks/get` polls, and the longest a turn
/// reads a `tasks/result` stream before polling again.
const MAX_POLL: Duration = Duration::from_secs(5);

/// After a first server request, how long more are awaited before the turn
/// raises what it has (a server sends the requests of one moment together).
const GRACE: Duration = Duration::from_millis(150);

/// After answering without a live stream of the questions (a restart, or the
/// held stream broke), how long an `input_required` task is polled before a
/// new `tasks/result` stream is read (see `Turn::settle_until`).
const SETTLE: Duration = Duration::from_secs(2);

/// The poll interval while settling.
const SETTLE_POLL: Duration = Duration::from_millis(100);

/// At most this many upstream questions are raised at once.
const MAX_ASKS: usize = 32;

/// An open call older than this is dropped when another is put away (a
/// downstream task that never answers nor ends does not hold a connection
/// for ever).
const MAX_OPEN_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// What the bridge declares at `initialize`.
pub(crate) fn client_capabilities() -> Map<String, Value> {
    let mut caps = Map::new();
    caps.insert("elicitation".into(), json!({"form": {}, "url": {}}));
    caps
}

/// What an open stream answers.
#[derive(Clone, Debug, PartialEq)]
enum OpenKind {
    /// A blocking `tools/call`.
    Call,
    /// `tasks/result` of an upstream task.
    TaskResult,
}

/// Whose downstream task an open call serves: its tenant and owner.
type Principal = (String, String);

/// An upstream request whose answer is still being read: its SSE stream.
struct OpenCall {
    kind: OpenKind,
    /// The JSON-RPC id of the request (the response carries it; a blocking
    /// call is cancelled by it).
    request_id: Value,
    /// The session it was made in.
    client: McpClient2025_11_25,
    stream: BoxStream<'static, Result<Value, ClientError>>,
    opened: Instant,
}

/// The open calls of this process, by downstream task: an open call holds an
/// upstream connection while its downstream task waits for an answer, so
/// their number is bounded, per principal ([`OpenCalls::per_principal`]) and
/// in all ([`OpenCalls::max`]).
struct OpenCalls {
    map: Mutex<HashMap<TaskId, (Principal, OpenCall)>>,
    max: usize,
    per_principal: usize,
}

impl OpenCalls {
    fn new(max: usize, per_principal: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            max: max.max(1),
            per_principal: per_principal.max(1),
        }
    }

    /// Keeps `call` of task `id` (of `principal`). Past a bound, one open call
    /// is dropped first (its task fails or polls on its next turn; see
    /// [`evicted`]).
    fn put(&self, id: TaskId, principal: Principal, call: OpenCall) {
        let Ok(mut m) = self.map.lock() else {
            return;
        };
        m.retain(|k, (_, c)| {
            let keep = c.opened.elapsed() < MAX_OPEN_AGE;
            if !keep {
                warn!(task = %k, "an open upstream MCP call waited too long for an answer: dropped");
            }
            keep
        });
        m.remove(&id);
        let held: Vec<(&TaskId, &Principal, Instant)> =
            m.iter().map(|(k, (p, c))| (k, p, c.opened)).collect();
        if let Some(k) = evicted(&held, &principal, self.max, self.per_principal) {
            warn!(task = %k, max = self.max, per_principal = self.per_principal,
                "too many open upstream MCP calls: one is dropped (its task fails or polls on its next turn)");
            m.remove(&k);
        }
        m.insert(id, (principal, call));
    }

    fn take(&self, id: &TaskId) -> Option<OpenCall> {
        self.map
            .lock()
            .ok()
            .and_then(|mut m| m.remove(id))
            .map(|(_, c)| c)
    }
}

/// Which held call (task, principal, opened) to drop before one more of
/// `principal` is kept: the principal's own oldest when it holds
/// `per_principal` already; else, when `max` are held, the oldest of the
/// principal holding the most (so that one caller's calls never push out
/// those of a caller holding fewer); else none.
fn evicted(
    held: &[(&TaskId, &Principal, Instant)],
    principal: &Principal,
    max: usize,
    per_principal: usize,
) -> Option<TaskId> {
    let oldest_of = |p: &Principal| {
        held.iter()
            .filter(|(_, q, _)| *q == p)
            .min_by_key(|(_, _, at)| *at)
            .map(|(k, _, _)| (*k).clone())
    };
    let own = held.iter().filter(|(_, q, _)| *q == principal).count();
    if own >= per_principal {
        return oldest_of(principal);
    }
    if held.len() < max {
        return None;
    }
    let mut counts: HashMap<&Principal, usize> = HashMap::new();
    for (_, p, _) in held {
        *counts.entry(*p).or_default() += 1;
    }
    let hog = counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(p, _)| p.clone())?;
    oldest_of(&hog)
}

/// An MCP upstream spoken to in revision 2025-11-25 (a part of
/// [`super::McpUpstream`]).
#[derive(Clone)]
pub struct Upstream2025_11_25 {
    /// The bridge's own session.
    client: McpClient2025_11_25,
    capabilities: Map<String, Value>,
    reinit: Arc<tokio::sync::Mutex<()>>,
    /// The tools called as tasks.
    as_task: Arc<HashSet<String>>,
    /// The tools marked idempotent (`annotations.idempotentHint`): a blocking
    /// call of one lost while it waited for an answer is made again.
    idempotent: Arc<HashSet<String>>,
    open: Arc<OpenCalls>,
    open_watcher: Option<Arc<AbortOnDrop>>,
    pub(crate) served: Served,
}

impl Upstream2025_11_25 {
    pub(crate) fn new(
        client: McpClient2025_11_25,
        capabilities: Map<String, Value>,
        as_task: HashSet<String>,
        idempotent: HashSet<String>,
        served: Served,
        opts: &UpstreamOptions,
    ) -> Self {
        Self {
            client,
            capabilities,
            reinit: Arc::new(tokio::sync::Mutex::new(())),
            as_task: Arc::new(as_task),
            idempotent: Arc::new(idempotent),
            open: Arc::new(OpenCalls::new(
                opts.max_open_calls,
                opts.max_open_calls_per_principal,
            )),
            open_watcher: None,
            served,
        }
    }

    /// Discovery in revision 2025-11-25: `initialize` (declaring form and
    /// URL elicitation) opens the bridge's session, then `tools/list`.
    pub(crate) async fn discover(
        endpoint: &str,
        tool: Option<&str>,
        opts: &UpstreamOptions,
    ) -> Result<Self, BridgeError> {
        let config = client_config(endpoint, opts);
        let rev_2025_11_25_client =
            McpClient2025_11_25::with_endpoint(config, endpoint).map_err(|source| {
                BridgeError::Discovery {
                    url: endpoint.to_string(),
                    source: Box::new(source),
                }
            })?;
        let capabilities = client_capabilities();
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
        let tasks = !as_task.is_empty();
        Ok(Self::new(
            rev_2025_11_25_client,
            capabilities,
            as_task,
            idempotent,
            Served::new(endpoint, info, tools, tasks, opts),
            opts,
        ))
    }

    /// The bridge's session id.
    pub(crate) fn session_id(&self) -> Option<String> {
        self.client.session_id()
    }

    /// With the store: a watcher cancelling (`tasks/cancel`, in the bridge's
    /// session) the upstream task of a linked downstream task that ends
    /// canceled while no turn runs, and one that cancels
    /// (`notifications/cancelled`) and drops the open call of a downstream
    /// task that ends while it waits.
    pub(crate) fn with_store(
        mut self,
        store: Arc<dyn TaskStore>,
        route: Option<crate::many::Route>,
    ) -> Self {
        let client = self.client.clone();
        let tasks = watch_cancels(
            store.clone(),
            PROTOCOL,
            route,
            self.served.link_bounds,
            move |task_id| {
                let client = client.clone();
                async move {
                    timed(PROTOCOL, "tasks/cancel", client.cancel_task(&task_id))
                        .await
                        .map(|_| ())
                }
            },
        );
        let open = self.open.clone();
        self.open_watcher = Some(Arc::new(watch_open_calls(store.clone(), open)));
        self.served = self.served.with_store(store, tasks);
        self
    }

    /// Readiness: a `ping` in the bridge's session (re-initialized when the
    /// upstream no longer holds it); any JSON-RPC answer counts.
    pub(crate) async fn probe(&self) -> Result<(), String> {
        let endpoint = &self.served.endpoint;
        let ping = || async {
            timed(
                PROTOCOL,
                "ping",
                self.client
                    .call_raw(method::PING, Value::Object(Map::new())),
            )
            .await
        };
        let r = match ping().await {
            Err(e) if session_lost(&e) => match self.reinitialize(self.client.session_id()).await {
                Ok(()) => ping().await,
                Err(e) => Err(e),
            },
            other => other,
        };
        match r {
            Ok(_) => Ok(()),
            Err(e) if !e.is_transient() && matches!(e, ClientError::Rpc(_)) => Ok(()),
            Err(e) => Err(format!("upstream {endpoint}: {e}")),
        }
    }

    /// Opens a new session for the bridge, unless another caller already
    /// replaced `failed` (the session that was found lost).
    async fn reinitialize(&self, failed: Option<String>) -> Result<(), ClientError> {
        let _guard = self.reinit.lock().await;
        if self.client.session_id() != failed {
            return Ok(());
        }
        info!(upstream = %self.client.endpoint(), old_session = ?failed,
            "the upstream MCP server no longer holds the bridge's session; initializing again");
        timed(
            PROTOCOL,
            "initialize",
            self.client.initialize(self.capabilities.clone()),
        )
        .await
        .map(|_| ())
    }
}

/// Whether an error says the upstream does not hold the session (HTTP 404,
/// taskwire's -32001).
fn session_lost(e: &ClientError) -> bool {
    match e {
        ClientError::Http { status: 404, .. } => true,
        ClientError::Rpc(r) => r.http_status == Some(404) || r.code == -32001,
        _ => false,
    }
}

/// The watcher of [`Upstream2025_11_25::with_store`] for open calls.
fn watch_open_calls(store: Arc<dyn TaskStore>, open: Arc<OpenCalls>) -> AbortOnDrop {
    AbortOnDrop::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        let mut rx = store.hub().firehose();
        loop {
            let id = match rx.recv().await {
                Ok((id, wake)) if wake.state.is_terminal() => id,
                Ok(_) => continue,
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            };
            let Some(call) = open.take(&id) else {
                continue;
            };
            if call.kind == OpenKind::Call {
                match timed(
                    PROTOCOL,
                    "notifications/cancelled",
                    call.client
                        .cancel_request(&call.request_id, Some("the bridged task ended")),
                )
                .await
                {
                    Ok(()) => info!(task = %id, "blocking upstream call cancelled"),
                    Err(e) => {
                        debug!(task = %id, error = %e, "cancelling the blocking upstream call failed")
                    }
                }
            }
            // Dropping the call closes its connection.
        }
    })
}

impl Upstream2025_11_25 {
    /// Carries out the plan of one downstream turn. An open call the turn
    /// ends waiting on (or loses its lease with) is put away for the next.
    pub(crate) async fn run(
        &self,
        start: TurnStart<'_, McpLink>,
        plan: Plan,
    ) -> Result<TurnOutcome, BridgeError> {
        let ctx = start.ctx;
        let mut turn = Turn {
            up: &self.served,
            upstream: self,
            ctx,
            number: start.number,
            link: start.link,
            client: self.client.clone(),
            open: self.open.take(&ctx.task().id),
            switched: false,
            settle_until: None,
            replay: std::collections::VecDeque::new(),
        };
        let r = turn.run(plan).await;
        if let Some(open) = turn.open.take() {
            let keep = matches!(
                r,
                Ok(TurnOutcome::Waiting { .. }) | Err(BridgeError::Core(CoreError::LeaseLost))
            );
            if keep {
                let t = ctx.task();
                self.open
                    .put(t.id.clone(), (t.tenant.clone(), t.owner.clone()), open);
            }
        }
        r
    }
}

/// One downstream turn.
struct Turn<'a> {
    up: &'a Served,
    upstream: &'a Upstream2025_11_25,
    ctx: &'a TurnContext,
    number: u32,
    link: Option<McpLink>,
    /// The session the turn speaks in: the link's, else the bridge's.
    client: McpClient2025_11_25,
    /// The open call or `tasks/result` stream of the task, if this process
    /// holds one.
    open: Option<OpenCall>,
    /// The link's session was lost and the turn went on in the bridge's.
    switched: bool,
    /// Until then, an `input_required` task is not read for questions with a
    /// new `tasks/result` stream: the answers this turn sent may not be
    /// applied yet, and a server may send their questions again on a new
    /// stream.
    settle_until: Option<tokio::time::Instant>,
    /// A blocking call made again (its first was lost): the answers given to
    /// the first call's questions, in order, each with its question; a
    /// question of the new call that is the next one here is answered with
    /// it instead of being asked again.
    replay: std::collections::VecDeque<(Option<String>, ElicitResult)>,
}

/// What a message of an open stream is.
enum Incoming {
    /// The response to the stream's request.
    Response(Value),
    /// A server-to-client request.
    Request(Value),
    /// Anything else (notifications, other responses).
    Other,
}

fn classify(msg: Value, request_id: &Value) -> Incoming {
    let has_method = msg.get("method").is_some();
    let id = msg.get("id").filter(|i| !i.is_null());
    match (has_method, id) {
        (true, Some(_)) => Incoming::Request(msg),
        (false, Some(i)) if same_id(i, request_id) => Incoming::Response(msg),
        _ => Incoming::Other,
    }
}

/// JSON-RPC ids compare as sent; a server may echo a number as a string.
fn same_id(a: &Value, b: &Value) -> bool {
    a == b
        || match (a, b) {
            (Value::String(s), Value::Number(n)) | (Value::Number(n), Value::String(s)) => {
                *s == n.to_string()
            }
            _ => false,
        }
}

/// What reading an open stream came to.
enum Read {
    /// The turn ends with this.
    Done(TurnOutcome),
    /// Nothing yet (idle, or the stream ended): poll again.
    Nothing,
}

impl Turn<'_> {
    async fn run(&mut self, plan: Plan) -> Result<TurnOutcome, BridgeError> {
        if let Some(s) = self.link.as_ref().and_then(|l| l.session.clone()) {
            if Some(&s) != self.upstream.session_id().as_ref() {
                self.client = self.upstream.client.with_session(Some(s));
            }
        }
        if let Some(open) = &self.open {
            // An open call carries its own session.
            self.client = open.client.clone();
        }
        match plan {
            Plan::Call => self.call().await,
            Plan::Lost(l) => {
                if !self.upstream.idempotent.contains(&l.tool) {
                    warn!(task = %self.ctx.task().id, tool = %l.tool,
                        "a blocking upstream call was cut by a stop of the bridge; the tool is not idempotent, so it is not called again");
                    return Ok(super::rev_2026_07_28::lost_call(&l.tool));
                }
                info!(task = %self.ctx.task().id, tool = %l.tool,
                    "the blocking call of an idempotent upstream tool was lost; calling it again");
                reattached(PROTOCOL);
                self.open = None;
                self.link = None;
                self.call().await
            }
            Plan::Resume(l) => self.resume_call(l).await,
            Plan::Reattach(l) => {
                info!(task = %self.ctx.task().id, upstream_task = %l.task_id, turn = self.number,
                    session = ?l.session, "re-attaching to the upstream MCP task (2025-11-25)");
                reattached(PROTOCOL);
                if !l.asked.is_empty() {
                    // Stopped after raising its questions: they still wait.
                    return self.ask_again(&l, l.asked.clone()).await;
                }
                self.follow(&l.task_id).await
            }
            Plan::Answer(l) => {
                let Some(unanswered) = self.answer(&l).await? else {
                    return self.stopped().await;
                };
                if !unanswered.is_empty() {
                    return self.ask_again(&l, unanswered).await;
                }
                // Answers sent: until they are applied the upstream task may
                // still show input_required, and a new tasks/result stream
                // would be asked the same questions again. Settle whenever a
                // new stream may be opened: none is held (a restart), or the
                // one held broke while the turn waited (the connection was
                // cut; found only when it is read). A live held stream is read
                // on, and the settle never applies to it.
                if !l.asked.is_empty() {
                    self.settle_until = Some(tokio::time::Instant::now() + SETTLE);
                }
                let next = McpLink {
                    turn: self.number,
                    asked: Vec::new(),
                    session: self.client.session_id(),
                    ..l.clone()
                };
                self.store_link(next, false).await?;
                self.follow(&l.task_id).await
            }
        }
    }

    /// Runs `op` in the turn's session; when the upstream no longer holds it,
    /// goes on in the bridge's own (initialized again if it was that one).
    async fn in_session<T, F, Fut>(&mut self, op: &'static str, f: F) -> Result<T, ClientError>
    where
        F: Fn(McpClient2025_11_25) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let first = timed(PROTOCOL, op, f(self.client.clone())).await;
        match first {
            Err(e) if session_lost(&e) => {
                let lost = self.client.session_id();
                if lost == self.upstream.session_id() {
                    self.upstream.reinitialize(lost.clone()).await?;
                }
                self.client = self.upstream.client.clone();
                self.switched = true;
                warn!(task = %self.ctx.task().id, lost_session = ?lost,
                    session = ?self.client.session_id(),
                    "the upstream no longer holds the session; going on in the bridge's");
                if let Some(l) = self.link.as_mut() {
                    l.session = self.client.session_id();
                }
                timed(PROTOCOL, op, f(self.client.clone())).await
            }
            other => other,
        }
    }

    /// Makes `op` (a `tools/call`, an answer to the server's request) with
    /// `f` in the turn's session, and makes it again with backoff while
    /// nothing of it reached the upstream (neither has an idempotency key).
    /// `None` when the task is canceled during a wait, or during the call
    /// when `give_up_on_cancel`.
    async fn unsent_again<T, F, Fut>(
        &mut self,
        op: &'static str,
        give_up_on_cancel: bool,
        f: F,
    ) -> Result<Option<T>, BridgeError>
    where
        F: Fn(McpClient2025_11_25) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let ctx = self.ctx;
        let mut attempt = 0;
        loop {
            let called = tokio::select! {
                biased;
                _ = ctx.cancelled(), if give_up_on_cancel => return Ok(None),
                r = self.in_session(op, &f) => r,
            };
            match called {
                Ok(v) => return Ok(Some(v)),
                Err(e) => {
                    let backoff = &self.up.backoff;
                    let again = ClientError::is_unsent;
                    if !after_failed_send(ctx, backoff, &mut attempt, e, op, again).await? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// The first turn: calls the tool, as a task when both sides allow it.
    async fn call(&mut self) -> Result<TurnOutcome, BridgeError> {
        let names = self.up.tool_names();
        let tool = match crate::outcome::chosen_tool(self.ctx.task(), &names) {
            Ok(t) => t,
            Err(refused) => return Ok(refused),
        };
        let args = Value::Object(self.up.arguments(&tool, self.ctx));
        let as_task = self.upstream.as_task.contains(&tool);
        debug!(task = %self.ctx.task().id, tool = %tool, as_task, "calling the upstream tool (2025-11-25)");
        let ctx = self.ctx;
        if as_task {
            // Not given up on a cancel: the call answers at once with the
            // task the cancel must reach.
            let called = self
                .unsent_again("tools/call", false, |c| {
                    let (tool, args) = (tool.clone(), args.clone());
                    async move { c.call_tool_as_task(&tool, args, None).await }
                })
                .await?;
            let Some(t) = called.map(Received::into_inner) else {
                return self.stopped().await;
            };
            let link = McpLink::rev_2025_11_25(
                t.task_id.clone(),
                tool,
                self.number,
                self.client.session_id(),
                None,
            );
            if let Err(e) = self.store_link(link.clone(), true).await {
                if ctx.is_cancelled() {
                    // Canceled while the task was being created: it is
                    // canceled upstream too.
                    self.link = Some(link);
                    return self.stopped().await;
                }
                return Err(e);
            }
            return self.follow(&t.task_id).await;
        }
        // A blocking call: committed as made before it is, so that a re-run
        // of this turn knows the upstream may have run the tool.
        let marker = McpLink {
            blocking: true,
            ..McpLink::rev_2025_11_25(
                String::new(),
                tool.clone(),
                self.number,
                self.client.session_id(),
                None,
            )
        };
        self.store_link(marker, true).await?;
        let params = json!({"name": tool, "arguments": args});
        let opened = self
            .unsent_again("tools/call", true, |c| {
                let params = params.clone();
                async move { c.request_events_with_id(method::TOOLS_CALL, params).await }
            })
            .await?;
        let Some((request_id, stream)) = opened else {
            return self.stopped().await;
        };
        self.open = Some(OpenCall {
            kind: OpenKind::Call,
            request_id,
            client: self.client.clone(),
            stream,
            opened: Instant::now(),
        });
        self.read_call(&tool).await
    }

    /// A blocking call of an idempotent tool that asked `l.asked` was lost
    /// (the bridge restarted, or dropped it): calls the tool again, answering
    /// the questions it asks again with the answers given to them (in order,
    /// while each is the same question), and asking the others.
    async fn call_again(&mut self, l: &McpLink) -> Result<TurnOutcome, BridgeError> {
        // A re-run of the turn that asked has no answers yet (its input is
        // the message that called the tool, not an answer).
        let mut responses = if l.turn < self.number {
            super::link::responses(self.ctx, &l.asked)
        } else {
            std::collections::BTreeMap::new()
        };
        self.replay = l
            .asked
            .iter()
            .map_while(|a| responses.remove(&a.key).map(|r| (a.prompt.clone(), r)))
            .collect();
        info!(task = %self.ctx.task().id, tool = %l.tool, answers = self.replay.len(),
            "the blocking call of an idempotent upstream tool was lost; calling it again");
        reattached(PROTOCOL);
        self.open = None;
        self.link = None;
        self.call().await
    }

    /// A later turn of a blocking call that waits for answers: answers it on
    /// the open call (held by this process) and reads on.
    async fn resume_call(&mut self, l: McpLink) -> Result<TurnOutcome, BridgeError> {
        let held = self.open.as_ref().is_some_and(|o| {
            o.kind == OpenKind::Call && l.call.as_ref().is_some_and(|c| same_id(c, &o.request_id))
        });
        if !held && self.upstream.idempotent.contains(&l.tool) {
            return self.call_again(&l).await;
        }
        if !held {
            self.open = None;
            warn!(task = %self.ctx.task().id, tool = %l.tool,
                "the blocking upstream call that waits for the answer is not held by this process");
            return Ok(TurnOutcome::Failed {
                message: format!(
                    "the upstream tool {} asked for input inside a blocking call, and that call was lost (the bridge restarted, or dropped it) before the answer could be sent: {}",
                    l.tool,
                    vocab::LOSS_MCP_2025_11_25_BLOCKING_INPUT.0
                ),
            });
        }
        if l.turn >= self.number {
            // A re-run of the turn that asked: ask again.
            return self.ask_again(&l, l.asked.clone()).await;
        }
        let Some(unanswered) = self.answer(&l).await? else {
            return self.stopped().await;
        };
        if !unanswered.is_empty() {
            return self.ask_again(&l, unanswered).await;
        }
        let next = McpLink {
            turn: self.number,
            asked: Vec::new(),
            ..l.clone()
        };
        self.ctx.set_state(next.to_state()).await?;
        self.link = Some(next);
        self.read_call(&l.tool).await
    }

    /// Sends the downstream answers to what `l` asked as the responses to the
    /// upstream's requests; returns what is still unanswered (`None`: the
    /// task was canceled while an answer waited to be sent again).
    async fn answer(&mut self, l: &McpLink) -> Result<Option<Vec<Asked>>, BridgeError> {
        let responses = super::link::responses(self.ctx, &l.asked);
        let mut unanswered = Vec::new();
        for a in &l.asked {
            let (Some(r), Some(id)) = (responses.get(&a.key), a.request_id.as_ref()) else {
                unanswered.push(a.clone());
                continue;
            };
            debug!(task = %self.ctx.task().id, key = %a.key, request = %id, "answering the upstream's request");
            let sent = self
                .unsent_again("elicitation/create response", false, |c| {
                    let (id, r) = (id.clone(), r.clone());
                    async move { c.respond(id, &r).await }
                })
                .await?;
            if sent.is_none() {
                return Ok(None);
            }
        }
        Ok(Some(unanswered))
    }

    /// Raises `asked` (questions of `l` still unanswered) again and waits.
    async fn ask_again(
        &mut self,
        l: &McpLink,
        asked: Vec<Asked>,
    ) -> Result<TurnOutcome, BridgeError> {
        let asks = asked
            .iter()
            .map(|a| {
                let ask = match &a.provider {
                    Some(p) => UpstreamAsk::Auth {
                        key: a.key.clone(),
                        provider: p.clone(),
                        prompt: a.prompt.clone().unwrap_or_default(),
                        url: a.url.clone().unwrap_or_default(),
                    },
                    None => UpstreamAsk::Form {
                        key: a.key.clone(),
                        prompt: a
                            .prompt
                            .clone()
                            .unwrap_or_else(|| "the upstream tool asks for input".into()),
                        schema: a
                            .schema
                            .clone()
                            .unwrap_or_else(|| json!({"type": "object"})),
                    },
                };
                (ask, a.request_id.clone().unwrap_or(Value::Null))
            })
            .collect();
        if self.link.is_none() {
            self.link = Some(l.clone());
        }
        self.raise_and_wait(asks).await
    }

    /// Stores the link (committing it when `flush`).
    async fn store_link(&mut self, link: McpLink, flush: bool) -> Result<(), BridgeError> {
        self.ctx.set_state(link.to_state()).await?;
        if flush {
            self.ctx.flush().await?;
            tracing::Span::current().record("upstream_task", link.task_id.as_str());
            debug!(task = %self.ctx.task().id, upstream_task = %link.task_id, turn = link.turn,
                session = ?link.session, "upstream link stored");
        }
        self.link = Some(link);
        Ok(())
    }

    /// Reads a blocking call's stream: its requests are raised (the turn
    /// waits, the call stays open), its response ends the turn.
    async fn read_call(&mut self, tool: &str) -> Result<TurnOutcome, BridgeError> {
        let ctx = self.ctx;
        let mut requests: Vec<Value> = Vec::new();
        loop {
            let Some(open) = self.open.as_mut() else {
                return Err(BridgeError::Protocol("no open tools/call".into()));
            };
            let request_id = open.request_id.clone();
            let next = tokio::select! {
                biased;
                _ = ctx.cancelled() => return self.stopped().await,
                r = next_within(&mut open.stream, (!requests.is_empty()).then_some(GRACE)) => r,
            };
            let msg = match next {
                Next::Idle => break,
                Next::Ended => {
                    self.open = None;
                    return Err(BridgeError::Protocol(format!(
                        "the upstream's answer to tools/call of {tool} ended without its result"
                    )));
                }
                Next::Failed(e) => {
                    self.open = None;
                    return Err(BridgeError::Upstream {
                        operation: "tools/call",
                        source: Box::new(e),
                    });
                }
                Next::Message(m) => m,
            };
            match classify(msg, &request_id) {
                Incoming::Response(r) => {
                    self.open = None;
                    return self.finish_response("tools/call", r).await;
                }
                Incoming::Request(req) => {
                    if let Some(req) = self.handle_request(req).await {
                        if requests.is_empty() && self.replayed(&req).await? {
                            continue;
                        }
                        if requests.len() < MAX_ASKS {
                            requests.push(req);
                        }
                    }
                }
                Incoming::Other => {}
            }
        }
        self.raise_requests(requests, Some(tool)).await
    }

    /// Answers `req` with the next answer of a call made again (see
    /// [`Turn::call_again`]) when it asks the same question; true if it did.
    /// Once a question differs, nothing more is replayed.
    async fn replayed(&mut self, req: &Value) -> Result<bool, BridgeError> {
        let Some((prompt, _)) = self.replay.front() else {
            return Ok(false);
        };
        if prompt.as_deref() != vocab::elicitation_message(req) {
            self.replay.clear();
            return Ok(false);
        }
        let Some((_, answer)) = self.replay.pop_front() else {
            return Ok(false);
        };
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        debug!(task = %self.ctx.task().id, request = %id, "answering a repeated question as before");
        self.client
            .respond(id, &answer)
            .await
            .map_err(|e| BridgeError::Upstream {
                operation: "elicitation/create response",
                source: Box::new(e),
            })?;
        Ok(true)
    }

    /// Answers what a server request needs no person for (`ping`); returns
    /// the others.
    async fn handle_request(&mut self, req: Value) -> Option<Value> {
        if req.get("method").and_then(Value::as_str) == Some(method::PING) {
            let id = req.get("id").cloned().unwrap_or(Value::Null);
            if let Err(e) = self.client.respond(id, &json!({})).await {
                debug!(error = %e, "answering the upstream's ping failed");
            }
            return None;
        }
        Some(req)
    }

    /// Raises the upstream's requests on the downstream task and waits. For
    /// a blocking call (`tool`), the link names the open call.
    async fn raise_requests(
        &mut self,
        requests: Vec<Value>,
        tool: Option<&str>,
    ) -> Result<TurnOutcome, BridgeError> {
        let mut asks = Vec::new();
        for (n, req) in requests.iter().enumerate() {
            let key = vocab::rev_2025_11_25_input_key(self.number, n);
            let id = req.get("id").cloned().unwrap_or(Value::Null);
            match vocab::ask_of_server_request(&key, req) {
                Some(a) => asks.push((a, id)),
                None => {
                    let m = req.get("method").and_then(Value::as_str).unwrap_or("?");
                    warn!(task = %self.ctx.task().id, method = m, "an upstream request the bridge cannot read");
                    asks.push((
                        UpstreamAsk::Unsupported {
                            key,
                            method: "an unreadable request",
                        },
                        id,
                    ));
                }
            }
        }
        if let Some(tool) = tool {
            let call = self.open.as_ref().map(|o| o.request_id.clone());
            self.link = Some(McpLink::rev_2025_11_25(
                String::new(),
                tool.to_string(),
                self.number,
                self.client.session_id(),
                call,
            ));
        }
        self.raise_and_wait(asks).await
    }

    /// Raises `asks` (each with the id of its upstream request), records them
    /// in the link, and ends the turn waiting. A question the bridge does not
    /// carry fails the turn and cancels upstream.
    async fn raise_and_wait(
        &mut self,
        asks: Vec<(UpstreamAsk, Value)>,
    ) -> Result<TurnOutcome, BridgeError> {
        let ids: Vec<(Value, Option<String>, Option<String>)> = asks
            .iter()
            .map(|(a, id)| match a {
                UpstreamAsk::Form { prompt, .. } => (id.clone(), Some(prompt.clone()), None),
                UpstreamAsk::Auth { prompt, url, .. } => {
                    (id.clone(), Some(prompt.clone()), Some(url.clone()))
                }
                UpstreamAsk::Unsupported { .. } => (id.clone(), None, None),
            })
            .collect();
        let raised = crate::outcome::raise(
            self.ctx,
            asks.into_iter().map(|(a, _)| a).collect(),
            "request",
        )?;
        let (raised, prompt) = match raised {
            Ok(r) => r,
            Err(refused) => {
                self.cancel_upstream("the bridge does not carry the upstream's request")
                    .await;
                return Ok(refused);
            }
        };
        let asked: Vec<Asked> = raised
            .into_iter()
            .zip(ids)
            .map(|(r, (id, prompt, url))| Asked {
                key: r.key,
                provider: r.provider,
                schema: r.schema,
                request_id: (!id.is_null()).then_some(id),
                prompt,
                url,
            })
            .collect();
        let Some(mut link) = self.link.clone() else {
            return Err(BridgeError::Protocol(
                "an upstream question without a link".into(),
            ));
        };
        link.asked = asked;
        link.session = self.client.session_id();
        self.ctx.set_state(link.to_state()).await?;
        self.link = Some(link);
        Ok(TurnOutcome::Waiting {
            message: Some(Message::agent_text(if prompt.trim().is_empty() {
                "the upstream tool asks for input".to_string()
            } else {
                prompt
            })),
        })
    }

    /// Follows the upstream task: polls `tasks/get`; while it waits for
    /// input, reads a `tasks/result` stream for its questions; once it is
    /// terminal, its result.
    async fn follow(&mut self, task_id: &str) -> Result<TurnOutcome, BridgeError> {
        let ctx = self.ctx;
        let _record = self
            .up
            .link_records()
            .map(|r| r.running(ctx.task(), task_id));
        let backoff = self.up.backoff.clone();
        let mut failures: u32 = 0;
        let mut last_message: Option<String> = None;
        loop {
            let got = tokio::select! {
                biased;
                _ = ctx.cancelled() => return self.stopped().await,
                r = self.in_session("tasks/get", |c| {
                    let id = task_id.to_string();
                    async move { c.get_task(&id).await }
                }) => r,
            };
            let t = match got {
                Ok(t) => {
                    failures = 0;
                    t.into_inner()
                }
                Err(ClientError::Rpc(e)) if self.switched => {
                    return Ok(TurnOutcome::Failed {
                        message: format!(
                            "the upstream MCP task {task_id} cannot be found in a new session ({}): {}",
                            e.message,
                            vocab::LOSS_MCP_2025_11_25_SESSION.0
                        ),
                    });
                }
                Err(e) => {
                    let d = crate::retry::after_failed_poll(
                        &backoff,
                        &mut failures,
                        e,
                        "tasks/get",
                        task_id,
                    )?;
                    self.pause(d).await?;
                    continue;
                }
            };
            let wait = t
                .poll_interval
                .map(Duration::from_millis)
                .unwrap_or(self.up.poll_interval)
                .min(MAX_POLL);
            match vocab::upstream_state_of_mcp(t.status) {
                UpstreamState::Running | UpstreamState::Unknown => {
                    if let Some(m) = t.status_message.filter(|m| !m.trim().is_empty()) {
                        if last_message.as_ref() != Some(&m) {
                            match ctx.emit_message(Message::agent_text(m.clone())).await {
                                Ok(()) => {}
                                Err(_) if ctx.is_cancelled() => return self.stopped().await,
                                Err(e) => return Err(e.into()),
                            }
                            last_message = Some(m);
                        }
                    }
                }
                UpstreamState::InputRequired | UpstreamState::AuthRequired => {
                    let settling = self.open.is_none()
                        && self
                            .settle_until
                            .is_some_and(|u| tokio::time::Instant::now() < u);
                    if settling {
                        self.pause(SETTLE_POLL).await?;
                        continue;
                    }
                    if let Read::Done(outcome) = self.read_task_stream(task_id).await? {
                        return Ok(outcome);
                    }
                    continue;
                }
                UpstreamState::Completed | UpstreamState::Failed => {
                    self.open = None;
                    return self.task_result(task_id, t.status_message).await;
                }
                UpstreamState::Canceled => {
                    self.open = None;
                    return end_canceled(
                        self.up.store.as_ref(),
                        &self.up.info.name,
                        &self.ctx.task().id,
                    )
                    .await;
                }
                UpstreamState::Rejected => {
                    return Ok(TurnOutcome::Rejected {
                        reason: t
                            .status_message
                            .unwrap_or_else(|| "the upstream rejected the task".into()),
                    })
                }
            }
            self.pause(wait).await?;
        }
    }

    /// Sleeps `d`, unless the turn is cancelled.
    async fn pause(&mut self, d: Duration) -> Result<(), BridgeError> {
        let ctx = self.ctx;
        tokio::select! {
            biased;
            _ = ctx.cancelled() => match self.stopped().await {
                Ok(_) => Err(BridgeError::Core(CoreError::LeaseLost)),
                Err(e) => Err(e),
            },
            _ = tokio::time::sleep(d) => Ok(()),
        }
    }

    /// Reads the task's `tasks/result` stream (opening one unless this
    /// process holds it) for up to [`MAX_POLL`]: the questions on it are
    /// raised; the final answer ends the turn with the result.
    async fn read_task_stream(&mut self, task_id: &str) -> Result<Read, BridgeError> {
        let ctx = self.ctx;
        if self.open.is_none() {
            let opened = self
                .in_session("tasks/result", |c| {
                    let id = task_id.to_string();
                    async move {
                        c.request_events_with_id(method::TASKS_RESULT, json!({"taskId": id}))
                            .await
                    }
                })
                .await;
            match opened {
                Ok((request_id, stream)) => {
                    self.open = Some(OpenCall {
                        kind: OpenKind::TaskResult,
                        request_id,
                        client: self.client.clone(),
                        stream,
                        opened: Instant::now(),
                    })
                }
                Err(e) => {
                    debug!(upstream_task = %task_id, error = %e, "tasks/result could not be opened; polling");
                    self.pause(self.up.poll_interval.min(MAX_POLL)).await?;
                    return Ok(Read::Nothing);
                }
            }
        }
        let deadline = tokio::time::Instant::now() + MAX_POLL;
        let mut requests: Vec<Value> = Vec::new();
        while let Some(open) = self.open.as_mut() {
            let request_id = open.request_id.clone();
            let left = match requests.is_empty() {
                true => deadline.saturating_duration_since(tokio::time::Instant::now()),
                false => GRACE,
            };
            let next = tokio::select! {
                biased;
                _ = ctx.cancelled() => return self.stopped().await.map(Read::Done),
                r = next_within(&mut open.stream, Some(left)) => r,
            };
            let msg = match next {
                Next::Idle => break,
                Next::Ended => {
                    self.open = None;
                    break;
                }
                Next::Failed(e) => {
                    debug!(upstream_task = %task_id, error = %e, "the tasks/result stream broke");
                    self.open = None;
                    break;
                }
                Next::Message(m) => m,
            };
            match classify(msg, &request_id) {
                Incoming::Response(r) => {
                    self.open = None;
                    return self
                        .finish_response("tasks/result", r)
                        .await
                        .map(Read::Done);
                }
                Incoming::Request(req) => {
                    let other = vocab::related_task(&req).is_some_and(|t| t != task_id);
                    if other {
                        debug!(upstream_task = %task_id, "a request of another task on the stream; left unanswered");
                        continue;
                    }
                    if let Some(req) = self.handle_request(req).await {
                        if requests.len() < MAX_ASKS {
                            requests.push(req);
                        }
                    }
                }
                Incoming::Other => {}
            }
        }
        if requests.is_empty() {
            return Ok(Read::Nothing);
        }
        self.raise_requests(requests, None).await.map(Read::Done)
    }

    /// The result of a terminal upstream task (`tasks/result`).
    async fn task_result(
        &mut self,
        task_id: &str,
        status_message: Option<String>,
    ) -> Result<TurnOutcome, BridgeError> {
        let got = self
            .in_session("tasks/result", |c| {
                let id = task_id.to_string();
                async move {
                    c.call_raw(method::TASKS_RESULT, json!({ "taskId": id }))
                        .await
                }
            })
            .await;
        let failed = || TurnOutcome::Failed {
            message: status_message
                .clone()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| "the upstream task failed".into()),
        };
        match got {
            Ok(v) if v.get("content").is_some() => {
                let r: CallToolResult = serde_json::from_value(v).map_err(|e| {
                    BridgeError::Protocol(format!("tasks/result: not a tool result: {e}"))
                })?;
                super::link::finish(self.ctx, self.number, &r).await
            }
            // Without a tool result (a task that failed without one).
            Ok(_) => Ok(failed()),
            Err(ClientError::Rpc(e)) => Ok(TurnOutcome::Failed { message: e.message }),
            Err(e) => {
                warn!(upstream_task = %task_id, error = %e, "tasks/result failed");
                Ok(failed())
            }
        }
    }

    /// Ends the turn with the response to a blocking call or to
    /// `tasks/result`: the tool's result, or the JSON-RPC error.
    async fn finish_response(
        &mut self,
        operation: &'static str,
        response: Value,
    ) -> Result<TurnOutcome, BridgeError> {
        if let Some(err) = response.get("error").filter(|e| !e.is_null()) {
            let e = RpcError::from_json(err, None).ok_or_else(|| {
                BridgeError::Protocol(format!("{operation}: a malformed JSON-RPC error: {err}"))
            })?;
            return Err(BridgeError::Upstream {
                operation,
                source: Box::new(ClientError::Rpc(e)),
            });
        }
        let result = response.get("result").cloned().unwrap_or(Value::Null);
        let r: CallToolResult = serde_json::from_value(result)
            .map_err(|e| BridgeError::Protocol(format!("{operation}: not a tool result: {e}")))?;
        super::link::finish(self.ctx, self.number, &r).await
    }

    /// Cancels upstream (best effort): the open blocking call with
    /// `notifications/cancelled`, the linked task with `tasks/cancel`.
    async fn cancel_upstream(&mut self, reason: &str) {
        let id = self.ctx.task().id.clone();
        if let Some(open) = self.open.take() {
            if open.kind == OpenKind::Call {
                match timed(
                    PROTOCOL,
                    "notifications/cancelled",
                    open.client.cancel_request(&open.request_id, Some(reason)),
                )
                .await
                {
                    Ok(()) => info!(task = %id, "blocking upstream call cancelled"),
                    Err(e) => {
                        warn!(task = %id, error = %e, "cancelling the blocking upstream call failed")
                    }
                }
                return;
            }
        }
        let Some(task_id) = self
            .link
            .as_ref()
            .map(|l| l.task_id.clone())
            .filter(|t| !t.is_empty())
        else {
            debug!(task = %id, "no upstream task to cancel");
            return;
        };
        let r = self
            .in_session("tasks/cancel", |c| {
                let t = task_id.clone();
                async move { c.cancel_task(&t).await }
            })
            .await;
        match r {
            Ok(_) => info!(task = %id, upstream_task = %task_id, "upstream task canceled"),
            Err(e) => warn!(task = %id, upstream_task = %task_id, error = %e,
                "canceling the upstream task failed"),
        }
    }

    /// The turn's cancellation token fired: cancel upstream if the downstream
    /// task was canceled; leave it (and any open call) for the next worker
    /// otherwise.
    async fn stopped(&mut self) -> Result<TurnOutcome, BridgeError> {
        let id = self.ctx.task().id.clone();
        if !downstream_canceled(self.up.store.as_ref(), &id).await {
            debug!(task = %id, "turn stopped without a downstream cancel; the upstream call is left running");
            return Err(BridgeError::Core(CoreError::LeaseLost));
        }
        self.cancel_upstream("the bridged task was canceled").await;
        self.open = None;
        Err(BridgeError::Core(CoreError::Terminal {
            state: TaskState::Canceled,
        }))
    }
}

/// The next message of a stream.
enum Next {
    Message(Value),
    /// Nothing within the wait.
    Idle,
    Ended,
    Failed(ClientError),
}

/// The next message of `stream`, waiting at most `within` (without limit:
/// the stream's own idle timeout applies).
async fn next_within(
    stream: &mut BoxStream<'static, Result<Value, ClientError>>,
    within: Option<Duration>,
) -> Next {
    let next = match within {
        Some(d) => match tokio::time::timeout(d, stream.next()).await {
            Ok(n) => n,
            Err(_) => return Next::Idle,
        },
        None => stream.next().await,
    };
    match next {
        Some(Ok(v)) => Next::Message(v),
        Some(Err(e)) => Next::Failed(e),
        None => Next::Ended,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_told_apart_by_id_and_method() {
        let id = json!(7);
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "id": 7, "result": {}}), &id),
            Incoming::Response(_)
        ));
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "id": "7", "result": {}}), &id),
            Incoming::Response(_)
        ));
        assert!(matches!(
            classify(
                json!({"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {}}),
                &id
            ),
            Incoming::Request(_)
        ));
        assert!(matches!(
            classify(
                json!({"jsonrpc": "2.0", "method": "notifications/progress"}),
                &id
            ),
            Incoming::Other
        ));
        assert!(matches!(
            classify(json!({"jsonrpc": "2.0", "id": 8, "result": {}}), &id),
            Incoming::Other
        ));
    }

    #[test]
    fn lost_sessions_are_recognised() {
        let http = ClientError::Http {
            status: 404,
            code: Some("-32600".into()),
            message: Some("Session not found".into()),
            body: String::new(),
        };
        assert!(session_lost(&http));
        let rpc = RpcError::from_json(
            &json!({"code": -32001, "message": "session not found"}),
            Some(404),
        )
        .map(ClientError::Rpc);
        assert!(rpc.as_ref().is_some_and(session_lost));
        let other = RpcError::from_json(&json!({"code": -32602, "message": "no task"}), Some(200))
            .map(ClientError::Rpc);
        assert!(!other.as_ref().is_some_and(session_lost));
    }

    #[test]
    fn open_calls_are_bounded_per_principal_before_anyone_else_loses_one() {
        let t0 = Instant::now();
        let at = |i: u64| t0 + Duration::from_secs(i);
        let ids: Vec<TaskId> = (0..8).map(|_| TaskId::new()).collect();
        let a: Principal = ("".into(), "alice".into());
        let b: Principal = ("".into(), "bob".into());
        let c: Principal = ("".into(), "carol".into());
        // Room left: nothing is dropped.
        let held = vec![(&ids[0], &a, at(0)), (&ids[1], &b, at(1))];
        assert_eq!(evicted(&held, &a, 4, 2), None);
        // Alice at her own bound loses her own oldest, not Bob's older one.
        let held = vec![
            (&ids[0], &b, at(0)),
            (&ids[1], &a, at(2)),
            (&ids[2], &a, at(1)),
        ];
        assert_eq!(evicted(&held, &a, 8, 2), Some(ids[2].clone()));
        // All held: Carol (holding none) pushes out the oldest call of the
        // one holding the most (Alice), not the oldest of all (Bob's).
        let held = vec![
            (&ids[0], &b, at(0)),
            (&ids[1], &a, at(2)),
            (&ids[2], &a, at(1)),
            (&ids[3], &a, at(3)),
        ];
        assert_eq!(evicted(&held, &c, 4, 8), Some(ids[2].clone()));
        // A tie between the largest holders is broken the same way each time.
        let held = vec![(&ids[0], &b, at(0)), (&ids[1], &a, at(1))];
        assert_eq!(evicted(&held, &c, 2, 8), Some(ids[1].clone()));
    }
}
