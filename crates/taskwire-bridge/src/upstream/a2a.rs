//! The A2A upstream executor: an [`Agent`](taskwire_core::Agent) whose turns are run by a remote A2A
//! agent, over JSON-RPC (`a2a+http(s)://`) or gRPC (`a2a+grpc://`); both
//! bindings carry the same messages (one [`A2aBinding`]), so one turn logic
//! serves both.
//!
//! A turn sends the downstream input upstream with `SendStreamingMessage` (the
//! first turn creates the upstream task; later turns continue it with its
//! `taskId` and `contextId`), reads the stream, and turns upstream status
//! updates, messages and artifacts into the core's turn API through
//! `taskwire_vocab::upstream`. The client's stream resubscribes after a break
//! and falls back to `GetTask` polling; if it still ends without a final
//! state, the turn polls `GetTask` itself, with backoff, for a bounded number
//! of failed attempts.
//!
//! The upstream link (task id, context id, the turn that last sent) is written
//! to the downstream task's agent state and committed as soon as the first
//! upstream event names the task, before anything else of the turn. A turn that
//! finds a link for its own turn number (a re-run after a worker died or a
//! restart) re-attaches (`SubscribeToTask`, else `GetTask` polling) instead of
//! sending again; every upstream message id is derived from the downstream
//! task id and turn number, so a send that is repeated anyway is the same
//! message to an upstream that deduplicates.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};
use taskwire_client::a2a::{self, pb, A2aClient, A2aStream};
use taskwire_client::grpc::A2aGrpcClient;
use taskwire_client::{A2aBinding, BackoffPolicy, ClientError, Received};
use taskwire_core::types::InputResponse;
use taskwire_core::{
    AgentInfo, CoreError, Message, Skill, TaskState, TaskStore, TurnContext, TurnOutcome,
};
use taskwire_vocab::upstream::{
    self as vocab, upstream_state_of_a2a_number, UpstreamState, UPSTREAM_AUTH_PROVIDER,
};
use tracing::{debug, info, warn};

use crate::bridged::{Bridged, Link, TurnStart, Upstream};
use crate::error::BridgeError;
use crate::options::{client_config, retrying};
pub use crate::options::{UpstreamOptions, DEFAULT_MAX_MESSAGE_BYTES, LINK_KEY};
use crate::telemetry::{reattached, timed};

/// The link of a downstream task to its upstream task, as stored in the
/// downstream task's agent state under [`LINK_KEY`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpstreamLink {
    /// `a2a`.
    pub protocol: String,
    /// The upstream task id.
    pub task_id: String,
    /// The upstream context id.
    #[serde(default)]
    pub context_id: String,
    /// The downstream turn that last sent a message upstream.
    pub turn: u32,
    /// The key of the input request the last turn raised for an upstream
    /// INPUT_REQUIRED, whose answer the next turn sends upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<String>,
    /// The stream position: the SSE id of the last upstream event whose
    /// effects are committed downstream (committed with them, all or none). A
    /// re-attach resumes after it (`Last-Event-ID`) instead of from the task
    /// snapshot. None over gRPC (its frames carry no ids) and before the first
    /// event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl UpstreamLink {
    /// The link stored in an agent state, if any.
    pub fn read(state: Option<&Value>) -> Option<Self> {
        let v = state?.get(LINK_KEY)?;
        serde_json::from_value(v.clone()).ok()
    }

    fn to_state(&self) -> Value {
        json!({ LINK_KEY: self })
    }
}

/// The upstream message id of a downstream turn: stable across re-runs of the
/// turn, so a repeated send is the same message.
pub fn upstream_message_id(downstream_task: &str, turn: u32) -> String {
    format!("tw-{downstream_task}-turn-{turn}")
}

/// The key of the input request a turn raises for an upstream INPUT_REQUIRED.
pub fn input_key(turn: u32) -> String {
    format!("upstream-input-{turn}")
}

/// The binding an A2A upstream is called over ([`A2aBinding`]: JSON-RPC or
/// gRPC), each call timed into the upstream metrics.
#[derive(Clone, Debug)]
pub(crate) struct A2aTransport {
    binding: Arc<dyn A2aBinding>,
    /// The protocol label of the upstream metrics.
    metric_protocol: &'static str,
}

impl A2aTransport {
    fn new(binding: Arc<dyn A2aBinding>) -> Self {
        let metric_protocol = match binding.binding() {
            a2a::BINDING_GRPC => "a2a-grpc",
            taskwire_client::a2a_rest::BINDING_HTTP_JSON => "a2a-rest",
            _ => "a2a",
        };
        Self {
            binding,
            metric_protocol,
        }
    }

    /// Where the calls go (the JSON-RPC endpoint or the gRPC target).
    pub(crate) fn endpoint(&self) -> &str {
        self.binding.endpoint()
    }

    /// The binding's name, as agent cards spell it.
    pub(crate) fn binding(&self) -> &'static str {
        self.binding.binding()
    }

    /// The protocol label of the upstream metrics.
    pub(crate) fn metric_protocol(&self) -> &'static str {
        self.metric_protocol
    }

    /// `SendStreamingMessage` (timed until the stream's response head).
    pub(crate) async fn send_streaming_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<A2aStream, ClientError> {
        let call = self.binding.send_streaming_message(req);
        timed(self.metric_protocol, "SendStreamingMessage", call).await
    }

    /// `SubscribeToTask` resuming after the event `cursor` (JSON-RPC:
    /// `Last-Event-ID`; gRPC: taskwire's `last-event-id` metadata), timed
    /// until the stream's response head.
    pub(crate) async fn resubscribe(
        &self,
        id: &str,
        cursor: Option<&str>,
    ) -> Result<A2aStream, ClientError> {
        let call = self.binding.resubscribe(id, cursor);
        timed(self.metric_protocol, "SubscribeToTask", call).await
    }

    /// `GetTask`.
    pub(crate) async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Received<pb::Task>, ClientError> {
        let call = self.binding.get_task(id, history_length);
        timed(self.metric_protocol, "GetTask", call).await
    }

    /// `CancelTask`.
    pub(crate) async fn cancel_task(&self, id: &str) -> Result<Received<pb::Task>, ClientError> {
        let call = self.binding.cancel_task(id);
        timed(self.metric_protocol, "CancelTask", call).await
    }

    /// Whether the upstream answers ([`A2aBinding::probe`]: its agent card
    /// over JSON-RPC; a `GetTask` of an id no agent holds over gRPC).
    async fn probe(&self) -> Result<(), String> {
        let operation = if self.binding.binding() == a2a::BINDING_JSONRPC {
            "GetAgentCard"
        } else {
            "GetTask"
        };
        timed(self.metric_protocol, operation, self.binding.probe())
            .await
            .map_err(|e| format!("upstream {}: {e}", self.binding.endpoint()))
    }
}

/// An A2A agent reached over JSON-RPC or gRPC, run as this server's agent.
pub type A2aUpstream = Bridged<A2a>;

/// The A2A part of a bridged agent ([`A2aUpstream`]): the upstream's binding,
/// its card, and what turns need to reach it.
#[derive(Clone)]
pub struct A2a {
    client: A2aTransport,
    base_url: String,
    info: AgentInfo,
    store: Option<Arc<dyn TaskStore>>,
    backoff: BackoffPolicy,
    poll_interval: Duration,
    link_bounds: crate::link::LinkBounds,
    watcher: Option<Arc<crate::cancel_watch::Watcher>>,
}

impl std::fmt::Debug for A2a {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2a")
            .field("base_url", &self.base_url)
            .field("endpoint", &self.client.endpoint())
            .field("agent", &self.info.name)
            .field("store", &self.store.as_ref().map(|s| s.kind()))
            .finish_non_exhaustive()
    }
}

impl A2aUpstream {
    /// Fetches the upstream's agent card from `base_url` and builds the agent
    /// ([`A2a::discover`]).
    pub async fn discover(base_url: &str, opts: &UpstreamOptions) -> Result<Self, BridgeError> {
        A2a::discover(base_url, opts).await.map(Bridged::new)
    }

    /// Builds the agent for an A2A gRPC upstream at `target`
    /// ([`A2a::discover_grpc`]).
    pub async fn discover_grpc(target: &str, opts: &UpstreamOptions) -> Result<Self, BridgeError> {
        A2a::discover_grpc(target, opts).await.map(Bridged::new)
    }

    /// The agent `info` whose turns go to `binding` ([`A2a::over`]).
    pub fn over(binding: Arc<dyn A2aBinding>, info: AgentInfo, opts: &UpstreamOptions) -> Self {
        Bridged::new(A2a::over(binding, info, opts))
    }

    /// Gives the agent the store its tasks live in ([`A2a::with_store`]).
    pub fn with_store(self, store: Arc<dyn TaskStore>) -> Self {
        self.map(|a| a.with_store(store))
    }

    /// The A2A client the agent calls the upstream with.
    pub fn client(&self) -> &dyn A2aBinding {
        self.upstream().client()
    }

    /// The upstream's base URL.
    pub fn base_url(&self) -> &str {
        self.upstream().base_url()
    }
}

/// An upstream OAuth client left to discovery takes the authorization
/// server the card's security scheme names (A2A: the card tells clients how
/// to authenticate; the card itself is public).
async fn adopt_card_scheme(opts: &UpstreamOptions, card: &taskwire_client::a2a::pb::AgentCard) {
    if let Some(oauth) = &opts.oauth {
        if let Some(server) = taskwire_client::oauth::authorization_server_of_card(card) {
            if oauth.adopt_authorization_server(server).await {
                tracing::debug!(
                    "upstream OAuth: the authorization server of the card's security scheme"
                );
            }
        }
    }
}

impl A2a {
    /// Fetches the upstream's agent card from `base_url` and builds the agent:
    /// the card's name, description, version and skills become its
    /// [`AgentInfo`], and the card's JSONRPC interface is called.
    pub async fn discover(base_url: &str, opts: &UpstreamOptions) -> Result<Self, BridgeError> {
        let config = client_config(base_url, opts);
        // An upstream that is starting at the same time as the bridge gets the
        // backoff policy's attempts to answer; other failures are final.
        let (client, card) = retrying(base_url, opts, "agent card", || {
            A2aClient::discover(config.clone())
        })
        .await?;
        adopt_card_scheme(opts, &card).await;
        let info = info_of_card(&card, base_url);
        Ok(Self::assemble(
            A2aTransport::new(Arc::new(client)),
            base_url,
            info,
            opts,
        ))
    }

    /// Builds the agent for an A2A gRPC upstream at `target`
    /// (`http://host:port`, h2c). A gRPC service has no well-known card URL,
    /// so the agent card is read, in order, from `GetExtendedAgentCard` on the
    /// service itself, then from `{target}/.well-known/agent-card.json` (an
    /// agent serving both bindings on one port, as taskwire does). With neither,
    /// the upstream is described by its URL with no skills (callers then see
    /// one `run` skill taking `text`). The service must answer first: a
    /// `GetTask` of an id no agent holds is sent until it is answered, with
    /// any A2A error (task not found, unauthenticated, …) counting as an
    /// answer.
    pub async fn discover_grpc(target: &str, opts: &UpstreamOptions) -> Result<Self, BridgeError> {
        let config = client_config(target, opts);
        let grpc = A2aGrpcClient::with_target(config.clone(), target).map_err(|source| {
            BridgeError::Discovery {
                url: target.to_string(),
                source: Box::new(source),
            }
        })?;
        retrying(target, opts, "gRPC service", || async {
            match grpc.get_task(PROBE_TASK_ID, None).await {
                Ok(_) => Ok(()),
                Err(e) if e.is_transient() => Err(e),
                Err(ClientError::Grpc { .. } | ClientError::Rpc(_)) => Ok(()),
                Err(e) => Err(e),
            }
        })
        .await?;
        let card = match grpc.extended_agent_card().await {
            Ok(card) => Some(card.into_inner()),
            Err(e) => {
                debug!(upstream = %target, error = %e, "GetExtendedAgentCard refused; trying the HTTP card");
                match A2aClient::new(config) {
                    Ok(http) => match http.agent_card().await {
                        Ok(card) => Some(card.into_inner()),
                        Err(e) => {
                            debug!(upstream = %target, error = %e, "no HTTP agent card either");
                            None
                        }
                    },
                    Err(_) => None,
                }
            }
        };
        let info = match &card {
            Some(card) => info_of_card(card, target),
            None => {
                warn!(upstream = %target, "the gRPC upstream serves no agent card; it is offered as one `run` skill");
                AgentInfo::new(
                    "upstream",
                    format!("The A2A agent at {target} (gRPC), bridged by taskwire"),
                )
            }
        };
        Ok(Self::assemble(
            A2aTransport::new(Arc::new(grpc)),
            target,
            info,
            opts,
        ))
    }

    /// The part for an upstream reached through `binding` (a binding of
    /// one's own, or a test's in-process upstream), offered as `info`: no
    /// card is fetched.
    pub fn over(binding: Arc<dyn A2aBinding>, info: AgentInfo, opts: &UpstreamOptions) -> Self {
        let endpoint = binding.endpoint().to_string();
        Self::assemble(A2aTransport::new(binding), &endpoint, info, opts)
    }

    fn assemble(
        client: A2aTransport,
        base_url: &str,
        info: AgentInfo,
        opts: &UpstreamOptions,
    ) -> Self {
        info!(upstream = %base_url, endpoint = %client.endpoint(), binding = client.binding(),
            agent = %info.name, skills = info.skills.len(), "A2A upstream discovered");
        Self {
            client,
            base_url: base_url.to_string(),
            info,
            store: None,
            backoff: opts.backoff.clone(),
            poll_interval: opts.poll_interval,
            link_bounds: crate::link::LinkBounds::of(opts),
            watcher: None,
        }
    }

    /// Gives the agent the store its tasks live in, so that it can tell a
    /// downstream cancel (which it propagates upstream) from a lost lease
    /// (which it does not), and end a task canceled upstream as canceled.
    /// Without it, every stop of a turn cancels upstream and an upstream
    /// cancel ends the downstream task failed.
    ///
    /// It also starts a watcher of the store's changes (on the current tokio
    /// runtime; it stops when the last clone of the agent is dropped): a
    /// downstream task canceled while no turn runs (waiting for input or an
    /// authorisation) has its upstream task canceled too.
    pub fn with_store(self, store: Arc<dyn TaskStore>) -> Self {
        self.with_store_routed(store, None)
    }

    /// As [`A2a::with_store`], for one member of several upstreams.
    pub(crate) fn with_store_routed(
        mut self,
        store: Arc<dyn TaskStore>,
        route: Option<crate::many::Route>,
    ) -> Self {
        let client = self.client.clone();
        let bounds = self.link_bounds;
        let watcher = crate::cancel_watch::watch_cancels(
            store.clone(),
            "a2a",
            route,
            bounds,
            move |task_id| {
                let client = client.clone();
                async move { client.cancel_task(&task_id).await.map(|_| ()) }
            },
        );
        self.watcher = Some(Arc::new(watcher));
        self.store = Some(store);
        self
    }

    /// The A2A client the agent calls the upstream with.
    pub fn client(&self) -> &dyn A2aBinding {
        &*self.client.binding
    }

    /// The upstream's base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }
}

/// Whether applying an upstream event emits something downstream (an
/// artifact, a progress message), as opposed to only settling a state.
fn has_output(resp: &pb::StreamResponse) -> bool {
    use pb::stream_response::Payload;
    match &resp.payload {
        Some(Payload::ArtifactUpdate(_) | Payload::Message(_)) => true,
        Some(Payload::StatusUpdate(s)) => s
            .status
            .as_ref()
            .and_then(|st| st.message.as_ref())
            .is_some_and(|m| !m.parts.is_empty()),
        Some(Payload::Task(t)) => !t.artifacts.is_empty(),
        None => false,
    }
}

/// The `SendStreamingMessage` of a turn's message. It asks for no history
/// (`historyLength` 0): the upstream task's history is not copied downstream
/// (`LOSS_UPSTREAM_HISTORY`), so neither side spends anything on it; the same
/// goes for the `GetTask` polls.
fn send_request(message: pb::Message) -> pb::SendMessageRequest {
    let mut req = a2a::send_request(message);
    req.configuration = Some(pb::SendMessageConfiguration {
        history_length: Some(0),
        ..Default::default()
    });
    req
}

/// The id the gRPC discovery probe asks for: no agent holds it, so an
/// answering service says "not found".
const PROBE_TASK_ID: &str = "taskwire-bridge-probe";

/// The schema of a bridged skill's arguments: A2A skills declare none, so
/// every skill takes one `text`, the message sent upstream.
fn text_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The message to the upstream agent"}},
        "required": ["text"]
    })
}

/// The agent info of an upstream agent card.
pub fn info_of_card(card: &pb::AgentCard, base_url: &str) -> AgentInfo {
    let name = if card.name.trim().is_empty() {
        "upstream".to_string()
    } else {
        card.name.clone()
    };
    let description = if card.description.trim().is_empty() {
        format!("The A2A agent at {base_url}, bridged by taskwire")
    } else {
        card.description.clone()
    };
    let mut info = AgentInfo::new(name, description);
    if !card.version.is_empty() {
        info.version = card.version.clone();
    }
    info.skills = card
        .skills
        .iter()
        .filter(|s| !s.id.trim().is_empty())
        .map(|s| {
            let name = if s.name.is_empty() { &s.id } else { &s.name };
            Skill::new(
                s.id.clone(),
                name.clone(),
                s.description.clone(),
                text_schema(),
            )
        })
        .collect();
    info
}

impl Link for UpstreamLink {
    fn read(state: Option<&Value>) -> Option<Self> {
        UpstreamLink::read(state)
    }

    fn upstream_task(&self) -> Option<&str> {
        Some(&self.task_id)
    }
}

impl Upstream for A2a {
    type Link = UpstreamLink;
    type Plan = Plan;

    fn protocol(&self) -> &'static str {
        self.client.metric_protocol()
    }

    fn info(&self) -> &AgentInfo {
        &self.info
    }

    fn plan(&self, turn: &TurnStart<'_, UpstreamLink>) -> Plan {
        plan(turn)
    }

    fn run<'a>(
        &'a self,
        turn: TurnStart<'a, UpstreamLink>,
        plan: Plan,
    ) -> impl Future<Output = Result<TurnOutcome, BridgeError>> + Send + 'a {
        Turn::new(self, turn).run(plan)
    }

    fn probe(&self) -> impl Future<Output = Result<(), String>> + Send + '_ {
        self.client.probe()
    }
}

/// What an A2A turn does first.
#[derive(Debug, PartialEq)]
pub enum Plan {
    /// Send this message (creating or continuing the upstream task).
    Send(Box<pb::Message>),
    /// Follow the upstream task without sending anything: the turn already
    /// sent (a re-run), or has nothing new to say to a task that exists.
    Reattach(String),
    /// Nothing to send and no upstream task.
    Nothing,
}

/// The plan of a turn: a re-run of a turn that sent re-attaches; otherwise
/// the turn's input (with the answer to what the upstream asked, if any) is
/// sent, with the message id of the task and turn.
fn plan(turn: &TurnStart<'_, UpstreamLink>) -> Plan {
    if let Some(l) = &turn.link {
        if l.turn >= turn.number {
            return Plan::Reattach(l.task_id.clone());
        }
    }
    let answers: Vec<&InputResponse> = turn
        .link
        .as_ref()
        .and_then(|l| l.asked.as_ref())
        .and_then(|k| turn.ctx.answers().get(k))
        .into_iter()
        .collect();
    let id = upstream_message_id(turn.ctx.task().id.as_str(), turn.number);
    let message = vocab::upstream_message(
        &id,
        turn.ctx.input(),
        &answers,
        turn.link.as_ref().map(|l| l.task_id.as_str()),
        turn.link.as_ref().map(|l| l.context_id.as_str()),
    );
    match (message, &turn.link) {
        (Some(m), _) => Plan::Send(Box::new(m)),
        (None, Some(l)) => Plan::Reattach(l.task_id.clone()),
        (None, None) => Plan::Nothing,
    }
}

/// One downstream turn.
struct Turn<'a> {
    up: &'a A2a,
    ctx: &'a TurnContext,
    /// This turn's number (stable across re-runs of the turn).
    number: u32,
    link: Option<UpstreamLink>,
    running: Option<crate::link::RunningTurn>,
}

impl<'a> Turn<'a> {
    fn new(up: &'a A2a, turn: TurnStart<'a, UpstreamLink>) -> Self {
        Self {
            up,
            ctx: turn.ctx,
            number: turn.number,
            link: turn.link,
            running: None,
        }
    }

    fn task_id(&self) -> Option<String> {
        self.link.as_ref().map(|l| l.task_id.clone())
    }

    /// Once the upstream task is known, notes the turn as running on it (see
    /// `LinkRecords::running`), until the turn ends.
    fn note_running(&mut self) {
        if self.running.is_some() {
            return;
        }
        if let (Some(w), Some(l)) = (&self.up.watcher, &self.link) {
            self.running = Some(w.records.running(self.ctx.task(), &l.task_id));
        }
    }

    async fn run(mut self, plan: Plan) -> Result<TurnOutcome, BridgeError> {
        let stream = match plan {
            Plan::Nothing => {
                return Ok(TurnOutcome::Failed {
                    message: "nothing to send to the upstream agent".into(),
                })
            }
            Plan::Send(m) => {
                debug!(task = %self.ctx.task().id, turn = self.number, message = %m.message_id,
                    upstream_task = ?self.task_id(), "sending upstream");
                let req = send_request(*m);
                // Sent again with the same message id, as a re-run of the
                // turn would (an upstream that makes create idempotent on it
                // returns the same task).
                let sent = crate::retry::sent_again(
                    self.ctx,
                    &self.up.backoff,
                    "SendStreamingMessage",
                    ClientError::is_transient,
                    || self.up.client.send_streaming_message(req.clone()),
                )
                .await?;
                match sent {
                    Some(s) => s,
                    None => return self.stopped(None).await,
                }
            }
            Plan::Reattach(id) => {
                let cursor = self.link.as_ref().and_then(|l| l.cursor.clone());
                info!(task = %self.ctx.task().id, upstream_task = %id, turn = self.number,
                    after_event = cursor.as_deref().unwrap_or("none (from the snapshot)"),
                    "re-attaching to the upstream task");
                reattached(self.up.client.metric_protocol());
                match self.up.client.resubscribe(&id, cursor.as_deref()).await {
                    Ok(s) => s,
                    Err(e) => {
                        debug!(upstream_task = %id, error = %e, "SubscribeToTask refused; polling GetTask");
                        return self.poll(id).await;
                    }
                }
            }
        };
        self.follow(stream).await
    }

    /// Reads the stream until the turn ends.
    async fn follow(&mut self, mut stream: A2aStream) -> Result<TurnOutcome, BridgeError> {
        loop {
            self.note_running();
            let item = tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped(Some(&mut stream)).await,
                item = stream.next() => item,
            };
            match item {
                Some(Ok(ev)) => match self.apply_at(ev.response, ev.event_id).await {
                    Ok(Some(outcome)) => return Ok(outcome),
                    Ok(None) => {}
                    Err(BridgeError::Core(_)) if self.ctx.is_cancelled() => {
                        return self.stopped(Some(&mut stream)).await
                    }
                    Err(e) => return Err(e),
                },
                Some(Err(e)) => match self.task_id() {
                    Some(id) => {
                        warn!(upstream_task = %id, error = %e, "upstream stream broke; polling GetTask");
                        return self.poll(id).await;
                    }
                    None => {
                        return Err(BridgeError::Upstream {
                            operation: "SendStreamingMessage",
                            source: Box::new(e),
                        })
                    }
                },
                None => match self.task_id() {
                    Some(id) => return self.poll(id).await,
                    None => {
                        return Err(BridgeError::Protocol(
                            "the upstream stream ended before naming a task".into(),
                        ))
                    }
                },
            }
        }
    }

    /// Follows the upstream task by polling `GetTask` until the turn ends;
    /// failed polls are retried with backoff, at most the policy's attempts in a
    /// row.
    async fn poll(&mut self, id: String) -> Result<TurnOutcome, BridgeError> {
        self.note_running();
        let backoff = self.up.backoff.clone();
        let mut failures: u32 = 0;
        let mut last: Option<pb::Task> = None;
        loop {
            let got = tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped(None).await,
                r = self.up.client.get_task(&id, Some(0)) => r,
            };
            let wait = match got {
                Ok(t) => {
                    failures = 0;
                    let t = t.into_inner();
                    if last.as_ref() != Some(&t) {
                        last = Some(t.clone());
                        let payload = pb::stream_response::Payload::Task(t);
                        let resp = pb::StreamResponse {
                            payload: Some(payload),
                        };
                        match self.apply(resp).await {
                            Ok(Some(outcome)) => return Ok(outcome),
                            Ok(None) => {}
                            Err(BridgeError::Core(_)) if self.ctx.is_cancelled() => {
                                return self.stopped(None).await
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    self.up.poll_interval
                }
                Err(e) => {
                    crate::retry::after_failed_poll(&backoff, &mut failures, e, "GetTask", &id)?
                }
            };
            tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped(None).await,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Stores the upstream link as soon as an event names the upstream task
    /// (committed before anything else of the turn).
    async fn note(&mut self, task_id: &str, context_id: &str) -> Result<(), BridgeError> {
        if task_id.is_empty() {
            return Ok(());
        }
        if let Some(l) = &self.link {
            if l.task_id == task_id && l.turn >= self.number {
                return Ok(());
            }
            if l.task_id != task_id {
                warn!(task = %self.ctx.task().id, linked = %l.task_id, got = %task_id,
                    "the upstream answered for another task than the linked one");
            }
        }
        let link = UpstreamLink {
            protocol: "a2a".into(),
            task_id: task_id.to_string(),
            context_id: context_id.to_string(),
            turn: self.number,
            asked: None,
            cursor: None,
        };
        self.ctx.set_state(link.to_state()).await?;
        self.ctx.flush().await?;
        tracing::Span::current().record("upstream_task", task_id);
        debug!(task = %self.ctx.task().id, upstream_task = %task_id, turn = self.number,
            "upstream link stored");
        self.link = Some(link);
        Ok(())
    }

    /// Applies one streamed upstream event and, when it has an SSE id,
    /// advances the link's cursor to it: the event's effects and the cursor
    /// are committed together (the turn's automatic flushes wait meanwhile), so
    /// a re-attach after a crash resumes after exactly the events applied.
    async fn apply_at(
        &mut self,
        resp: pb::StreamResponse,
        event_id: Option<String>,
    ) -> Result<Option<TurnOutcome>, BridgeError> {
        let _hold = self.ctx.hold_flushes();
        let output = has_output(&resp);
        let outcome = self.apply(resp).await?;
        // Only events with outputs move the cursor: re-applying the others
        // after a re-attach changes nothing (a snapshot's artifacts replace
        // theirs whole, a status without a message only settles), and each
        // cursor write is a state change of the downstream task.
        if outcome.is_none() && output {
            if let (Some(id), Some(link)) = (event_id, self.link.as_mut()) {
                if link.cursor.as_deref() != Some(id.as_str()) {
                    debug!(task = %self.ctx.task().id, upstream_task = %link.task_id, cursor = %id,
                        "upstream position stored (committed with the event's outputs)");
                    link.cursor = Some(id);
                    let state = link.to_state();
                    self.ctx.set_state(state).await?;
                }
            }
        }
        Ok(outcome)
    }

    /// Applies one upstream event (streamed, or a polled `GetTask` snapshot);
    /// `Some` when the turn ends with it.
    async fn apply(
        &mut self,
        resp: pb::StreamResponse,
    ) -> Result<Option<TurnOutcome>, BridgeError> {
        use pb::stream_response::Payload;
        let ctx = self.ctx;
        match resp.payload {
            None => Ok(None),
            Some(Payload::Task(t)) => {
                self.note(&t.id, &t.context_id).await?;
                for a in &t.artifacts {
                    let parts = vocab::parts_from_pb(&a.parts)?;
                    let name = (!a.name.is_empty()).then_some(a.name.as_str());
                    ctx.emit_artifact(&a.artifact_id, name, parts).await?;
                }
                self.settle(t.status.as_ref()).await
            }
            Some(Payload::StatusUpdate(s)) => {
                self.note(&s.task_id, &s.context_id).await?;
                let status = s.status.as_ref();
                let state = status.map_or(UpstreamState::Unknown, |st| {
                    upstream_state_of_a2a_number(st.state)
                });
                if state == UpstreamState::Running {
                    // A progress message of a working upstream.
                    if let Some(m) = status.and_then(|st| st.message.as_ref()) {
                        if !m.parts.is_empty() {
                            ctx.emit_message(vocab::agent_message_from_pb(m)?).await?;
                        }
                    }
                }
                self.settle(status).await
            }
            Some(Payload::ArtifactUpdate(a)) => {
                self.note(&a.task_id, &a.context_id).await?;
                if let Some(art) = &a.artifact {
                    let parts = vocab::parts_from_pb(&art.parts)?;
                    let name = (!art.name.is_empty()).then_some(art.name.as_str());
                    ctx.emit_artifact_chunk(&art.artifact_id, name, parts, a.append, a.last_chunk)
                        .await?;
                }
                Ok(None)
            }
            Some(Payload::Message(m)) => {
                let message = vocab::agent_message_from_pb(&m)?;
                if m.task_id.is_empty() {
                    // A direct reply: the upstream made no task.
                    return Ok(Some(TurnOutcome::Completed {
                        message: Some(message),
                    }));
                }
                self.note(&m.task_id, &m.context_id).await?;
                ctx.emit_message(message).await?;
                Ok(None)
            }
        }
    }

    /// The turn's outcome for an upstream status, if the status ends the turn.
    async fn settle(
        &mut self,
        status: Option<&pb::TaskStatus>,
    ) -> Result<Option<TurnOutcome>, BridgeError> {
        let Some(st) = status else {
            return Ok(None);
        };
        let state = upstream_state_of_a2a_number(st.state);
        let text = vocab::status_text(Some(st));
        let status_message = st
            .message
            .as_ref()
            .filter(|m| !m.parts.is_empty())
            .map(vocab::agent_message_from_pb)
            .transpose()?;
        let ctx = self.ctx;
        Ok(Some(match state {
            UpstreamState::Running | UpstreamState::Unknown => return Ok(None),
            UpstreamState::Completed => TurnOutcome::Completed {
                message: status_message,
            },
            UpstreamState::Failed => TurnOutcome::Failed {
                message: text.unwrap_or_else(|| "the upstream task failed".into()),
            },
            UpstreamState::Rejected => TurnOutcome::Rejected {
                reason: text.unwrap_or_else(|| "the upstream agent rejected the task".into()),
            },
            UpstreamState::Canceled => return self.canceled_upstream().await.map(Some),
            UpstreamState::InputRequired => {
                let prompt = text.unwrap_or_else(|| "the upstream agent asks for input".into());
                let key = input_key(self.number);
                ctx.request_input(&key, &prompt, vocab::upstream_input_schema())?;
                if let Some(mut l) = self.link.clone() {
                    l.asked = Some(key);
                    ctx.set_state(l.to_state()).await?;
                    self.link = Some(l);
                }
                TurnOutcome::Waiting {
                    message: Some(status_message.unwrap_or_else(|| Message::agent_text(prompt))),
                }
            }
            UpstreamState::AuthRequired => {
                // One authorisation per provider and task: a second
                // AUTH_REQUIRED after `upstream` was granted waits on a
                // provider named after the turn.
                let provider = if ctx.is_granted(UPSTREAM_AUTH_PROVIDER) {
                    format!("{UPSTREAM_AUTH_PROVIDER}-{}", self.number)
                } else {
                    UPSTREAM_AUTH_PROVIDER.to_string()
                };
                let prompt =
                    text.unwrap_or_else(|| "the upstream agent requires an authorization".into());
                ctx.require_auth(&provider, &format!("upstream-turn-{}", self.number), None)?;
                TurnOutcome::Waiting {
                    message: Some(status_message.unwrap_or_else(|| Message::agent_text(prompt))),
                }
            }
        }))
    }

    /// The upstream task ended canceled: the downstream task ends canceled too
    /// (failed, without a store to cancel it in).
    async fn canceled_upstream(&mut self) -> Result<TurnOutcome, BridgeError> {
        crate::cancel_watch::end_canceled(
            self.up.store.as_ref(),
            &self.up.info.name,
            &self.ctx.task().id,
        )
        .await
    }

    /// The turn's cancellation token fired: if the downstream task was
    /// canceled, cancel the upstream task; if the worker lost the task (lease,
    /// restart), leave the upstream alone for the next worker to re-attach.
    async fn stopped(
        &mut self,
        stream: Option<&mut A2aStream>,
    ) -> Result<TurnOutcome, BridgeError> {
        let id = &self.ctx.task().id;
        let canceled = crate::cancel_watch::downstream_canceled(self.up.store.as_ref(), id).await;
        if !canceled {
            debug!(task = %id, "turn stopped without a downstream cancel; the upstream task is left running");
            return Err(BridgeError::Core(CoreError::LeaseLost));
        }
        let mut upstream = self.task_id();
        if upstream.is_none() {
            if let Some(s) = stream {
                // The send went out but no event named the task yet: wait
                // briefly for the first one, so the upstream task is not
                // left running.
                upstream = s.task_id();
                if upstream.is_none() {
                    let first = tokio::time::timeout(Duration::from_secs(5), s.next()).await;
                    if let Ok(Some(Ok(ev))) = first {
                        upstream = ev.task_id().map(str::to_string);
                    }
                }
            }
        }
        match upstream {
            Some(up) => match self.up.client.cancel_task(&up).await {
                Ok(t) => info!(task = %id, upstream_task = %up,
                    state = ?t.status.as_ref().map(|s| s.state()), "upstream task canceled"),
                Err(e) => warn!(task = %id, upstream_task = %up, error = %e,
                    "canceling the upstream task failed"),
            },
            None => {
                warn!(task = %id, "canceled before the upstream named its task; nothing to cancel")
            }
        }
        Err(BridgeError::Core(CoreError::Terminal {
            state: TaskState::Canceled,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_round_trips_through_agent_state() {
        let l = UpstreamLink {
            protocol: "a2a".into(),
            task_id: "up-1".into(),
            context_id: "ctx".into(),
            turn: 2,
            asked: Some(input_key(2)),
            cursor: Some("7".into()),
        };
        let state = l.to_state();
        assert_eq!(state["upstream"]["taskId"], "up-1");
        assert_eq!(UpstreamLink::read(Some(&state)), Some(l));
        assert_eq!(UpstreamLink::read(None), None);
        assert_eq!(UpstreamLink::read(Some(&json!({"other": 1}))), None);
        assert_eq!(
            UpstreamLink::read(Some(&json!({"upstream": {"taskId": 5}}))),
            None
        );
    }

    #[test]
    fn sends_ask_for_no_history() {
        let m = pb::Message {
            message_id: upstream_message_id("abc", 1),
            role: pb::Role::User as i32,
            ..Default::default()
        };
        let v = serde_json::to_value(send_request(m)).expect("ProtoJSON");
        assert_eq!(v["configuration"], json!({"historyLength": 0}), "{v}");
        assert_eq!(v["message"]["messageId"], "tw-abc-turn-1");
    }

    #[test]
    fn message_ids_are_stable_per_turn() {
        assert_eq!(upstream_message_id("abc", 1), upstream_message_id("abc", 1));
        assert_ne!(upstream_message_id("abc", 1), upstream_message_id("abc", 2));
        assert_ne!(upstream_message_id("abc", 1), upstream_message_id("abd", 1));
    }

    #[test]
    fn card_skills_become_agent_skills() {
        let card = pb::AgentCard {
            name: "scripted".into(),
            description: "d".into(),
            version: "1.2.3".into(),
            skills: vec![
                pb::AgentSkill {
                    id: "run_script".into(),
                    name: "Run a script".into(),
                    description: "runs".into(),
                    ..Default::default()
                },
                pb::AgentSkill {
                    id: " ".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let info = info_of_card(&card, "http://h");
        assert_eq!(info.name, "scripted");
        assert_eq!(info.version, "1.2.3");
        assert_eq!(info.skills.len(), 1);
        assert_eq!(info.skills[0].id, "run_script");
        assert_eq!(info.skills[0].name, "Run a script");
        assert_eq!(info.skills[0].input_schema["required"][0], "text");
        let bare = info_of_card(&pb::AgentCard::default(), "http://h");
        assert_eq!(bare.name, "upstream");
        assert!(bare.description.contains("http://h"));
    }
}
