//! The AG-UI upstream executor: an [`Agent`](taskwire_core::Agent) whose turns are runs of a remote
//! AG-UI agent (`POST` of a `RunAgentInput`, events back as SSE).
//!
//! Each downstream task is one upstream thread (`tw-<task>`); each turn is one
//! run (`tw-<task>-turn-<n>`). The first run carries the task's first message;
//! a run that ends with interrupts raises them on the downstream task (forms
//! as input requests keyed by the interrupt id, `taskwire:auth_required` as a
//! provider authorisation), and the next turn's run resumes every one of them
//! with the downstream answers. Text messages become agent messages (the last
//! one of a completed run its final message), `taskwire.artifact` activities
//! and the run result become artifacts, steps become steps.
//!
//! The link (thread, run, turn, the interrupts asked) is stored under
//! `upstream` with `protocol: "agui"` before the run is posted, and with it the
//! run's stream position (`cursor`: the SSE id of the last event whose outputs
//! are committed, committed with them). A re-run turn re-reads the run from
//! taskwire's `GET …/threads/{thread}/runs/{run}/events` where the upstream
//! offers it (and fails otherwise), from its start: the events up to the
//! cursor only rebuild the turn's state (the text being streamed, the message
//! held back), so no output is emitted twice. (Not after `Last-Event-ID`:
//! a resumed stream re-opens a text message without the text streamed
//! before, which the bridge may not have emitted yet.) A run whose `POST`
//! broke after it was sent is followed on the same path where the upstream
//! has it. A downstream cancel calls taskwire's `POST …/runs/{run}/cancel`
//! and drops the stream.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use serde_json::{json, Value};
use taskwire_client::agui::{AguiClient, AguiEncoding, AguiEvent, AguiStream};
use taskwire_client::{BackoffPolicy, ClientError};
use taskwire_core::{AgentInfo, CoreError, Message, Skill, TaskStore, TurnContext, TurnOutcome};
use taskwire_vocab::upstream::agui as vocab;
use taskwire_wire::agui::{event_type as ev, ResumeEntry, RunAgentInput};
use tracing::{debug, info};

use crate::bridged::{Bridged, Link, TurnStart, Upstream};
use crate::cancel_watch::{downstream_canceled, end_canceled};
use crate::error::BridgeError;
use crate::options::{client_config, retrying, UpstreamOptions, LINK_KEY};
use crate::telemetry::{reattached, timed};

/// The link protocol name of AG-UI upstream runs.
const PROTOCOL: &str = "agui";

/// An interrupt a turn raised downstream.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskedInterrupt {
    /// The interrupt id (also the downstream input request key).
    pub id: String,
    /// For an authorisation: the downstream provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// For a form: its schema (to read a plain-text answer against).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
}

/// The link of a downstream task to its upstream AG-UI thread.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AguiLink {
    /// `agui`.
    pub protocol: String,
    /// The upstream thread.
    pub thread_id: String,
    /// The last run posted.
    pub run_id: String,
    /// The turn that posted it.
    pub turn: u32,
    /// The interrupts that run ended with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asked: Vec<AskedInterrupt>,
    /// The run's stream position: the SSE id of the last upstream event
    /// whose outputs are committed downstream (committed with them, all or
    /// none). None before the first output and for events without ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl AguiLink {
    /// The AG-UI link stored in an agent state, if any.
    pub fn read(state: Option<&Value>) -> Option<Self> {
        crate::link::read_link(state, PROTOCOL)
    }

    fn to_state(&self) -> Value {
        json!({ LINK_KEY: self })
    }
}

/// The upstream thread of a downstream task.
pub fn thread_id(task: &str) -> String {
    format!("tw-{task}")
}

/// The upstream run of a downstream turn.
pub fn run_id(task: &str, turn: u32) -> String {
    format!("tw-{task}-turn-{turn}")
}

/// An AG-UI agent, run as this server's agent.
pub type AguiUpstream = Bridged<Agui>;

/// The AG-UI part of a bridged agent ([`AguiUpstream`]).
#[derive(Clone)]
pub struct Agui {
    client: AguiClient,
    endpoint: String,
    info: AgentInfo,
    store: Option<Arc<dyn TaskStore>>,
    /// Most bytes of text held for the messages being streamed at once.
    max_text_bytes: usize,
    /// Most text messages streamed at once.
    max_open_messages: usize,
    /// How often, and after how long, a run that could not be posted (no
    /// connection) is posted again.
    backoff: BackoffPolicy,
}

pub use crate::options::MAX_OPEN_MESSAGES;

impl std::fmt::Debug for Agui {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agui")
            .field("endpoint", &self.endpoint)
            .field("store", &self.store.as_ref().map(|s| s.kind()))
            .finish_non_exhaustive()
    }
}

impl AguiUpstream {
    /// The agent for the AG-UI endpoint `endpoint` ([`Agui::discover`]).
    pub async fn discover(endpoint: &str, opts: &UpstreamOptions) -> Result<Self, BridgeError> {
        Agui::discover(endpoint, opts).await.map(Bridged::new)
    }

    /// Gives the agent the store its tasks live in ([`Agui::with_store`]).
    pub fn with_store(self, store: Arc<dyn TaskStore>) -> Self {
        self.map(|a| a.with_store(store))
    }

    /// The AG-UI endpoint.
    pub fn endpoint(&self) -> &str {
        self.upstream().endpoint()
    }
}

impl Agui {
    /// The agent for the AG-UI endpoint `endpoint`: AG-UI has no discovery, so
    /// the agent is described by its URL and offered as one `run` skill taking
    /// `text`; the endpoint must answer HTTP (retried with backoff while it
    /// does not).
    pub async fn discover(endpoint: &str, opts: &UpstreamOptions) -> Result<Self, BridgeError> {
        let config = client_config(endpoint, opts);
        let client = AguiClient::with_endpoint(config, endpoint).map_err(|source| {
            BridgeError::Discovery {
                url: endpoint.to_string(),
                source: Box::new(source),
            }
        })?;
        retrying(endpoint, opts, "AG-UI endpoint", || client.probe()).await?;
        let info = AgentInfo::new(
            "upstream",
            format!("The AG-UI agent at {endpoint}, bridged by taskwire"),
        )
        .with_skill(Skill::new(
            "run",
            "Run the agent",
            format!("A run of the AG-UI agent at {endpoint}"),
            json!({"type": "object", "properties": {"text": {"type": "string", "description": "The message to the agent"}}, "required": ["text"]}),
        ));
        info!(upstream = %endpoint, "AG-UI upstream reachable");
        Ok(Self {
            client,
            endpoint: endpoint.to_string(),
            info,
            store: None,
            max_text_bytes: opts.max_message_bytes,
            max_open_messages: opts.max_open_messages.max(1),
            backoff: opts.backoff.clone(),
        })
    }

    /// Gives the agent the store its tasks live in (to tell a downstream
    /// cancel from a lost lease, and to end a task whose run was cancelled
    /// upstream as canceled).
    pub fn with_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The AG-UI endpoint.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Link for AguiLink {
    fn read(state: Option<&Value>) -> Option<Self> {
        AguiLink::read(state)
    }

    fn upstream_task(&self) -> Option<&str> {
        Some(&self.thread_id)
    }
}

impl Upstream for Agui {
    type Link = AguiLink;
    type Plan = Plan;

    fn protocol(&self) -> &'static str {
        PROTOCOL
    }

    fn info(&self) -> &AgentInfo {
        &self.info
    }

    /// The thread is known before the first run: it is the task's.
    fn span_task(&self, turn: &TurnStart<'_, AguiLink>) -> Option<String> {
        Some(thread_id(turn.ctx.task().id.as_str()))
    }

    fn plan(&self, turn: &TurnStart<'_, AguiLink>) -> Plan {
        plan(turn)
    }

    fn run<'a>(
        &'a self,
        turn: TurnStart<'a, AguiLink>,
        plan: Plan,
    ) -> impl Future<Output = Result<TurnOutcome, BridgeError>> + Send + 'a {
        Turn::new(self, turn).run(plan)
    }

    async fn probe(&self) -> Result<(), String> {
        timed(PROTOCOL, "GET", self.client.probe())
            .await
            .map(|_| ())
            .map_err(|e| format!("upstream {}: {e}", self.endpoint))
    }
}

/// What an AG-UI turn does first.
#[derive(Debug, PartialEq)]
pub enum Plan {
    /// Re-read the run this turn posted (a re-run of the turn), from its
    /// start: the events up to the link's cursor only rebuild the turn's
    /// state.
    Reread(AguiLink),
    /// Post this run: the first carries the task's first message, a later
    /// one resumes every interrupt of the last run.
    Post(Box<RunAgentInput>),
    /// Nothing to send (a first turn without a message).
    Nothing,
}

/// The plan of a turn (see [`Plan`]).
fn plan(turn: &TurnStart<'_, AguiLink>) -> Plan {
    let ctx = turn.ctx;
    let task = ctx.task().id.as_str();
    if let Some(l) = turn.link.clone().filter(|l| l.turn >= turn.number) {
        return Plan::Reread(l);
    }
    let input = RunAgentInput::new(thread_id(task), run_id(task, turn.number));
    match &turn.link {
        None => match ctx.task().history.first().or(ctx.input().first()) {
            Some(m) => Plan::Post(Box::new(input.user_message(&m.message_id, m.text()))),
            None => Plan::Nothing,
        },
        Some(l) => Plan::Post(Box::new(input.resume(resume_entries(ctx, l)))),
    }
}

/// The resume of every open interrupt of the last run (AG-UI refuses a
/// partial resume): with its keyed answer, a granted authorisation, or a
/// plain-text answer that fits its form; else cancelled.
fn resume_entries(ctx: &TurnContext, l: &AguiLink) -> Vec<ResumeEntry> {
    let text: String = ctx
        .input()
        .iter()
        .map(Message::text)
        .filter(|t| !t.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let mut text_used = false;
    let mut entries = Vec::new();
    for a in &l.asked {
        let granted = a.provider.as_deref().is_some_and(|p| ctx.is_granted(p));
        let mut answer = ctx.answers().get(&a.id).cloned();
        if answer.is_none() && a.provider.is_none() && !text_used && !text.is_empty() {
            let schema = a.schema.clone().unwrap_or(Value::Null);
            if let Some(c) = taskwire_vocab::upstream::mcp::content_of_text(&schema, &text) {
                answer = Some(taskwire_core::types::InputResponse::accept(Value::Object(
                    c,
                )));
                text_used = true;
            }
        }
        entries.push(vocab::resume_entry(&a.id, answer.as_ref(), granted));
    }
    entries
}

/// One downstream turn.
struct Turn<'a> {
    up: &'a Agui,
    ctx: &'a TurnContext,
    number: u32,
    link: Option<AguiLink>,
    /// Text of messages being streamed, by message id (at most the
    /// upstream's `max_open_messages` of them, together at most its
    /// `max_text_bytes`).
    texts: BTreeMap<String, String>,
    /// The bytes held in `texts`.
    text_bytes: usize,
    /// The last text message that ended, not yet emitted.
    pending: Option<String>,
    /// While re-reading a run: the stored cursor, up to which (inclusive)
    /// events only rebuild the turn's state, their outputs being committed.
    replay_until: Option<String>,
    /// Outputs emitted (or, while replaying, passed over) by the event being
    /// applied.
    outputs: usize,
}

impl<'a> Turn<'a> {
    fn new(up: &'a Agui, turn: TurnStart<'a, AguiLink>) -> Self {
        Self {
            up,
            ctx: turn.ctx,
            number: turn.number,
            link: turn.link,
            texts: BTreeMap::new(),
            text_bytes: 0,
            pending: None,
            replay_until: None,
            outputs: 0,
        }
    }

    async fn run(mut self, plan: Plan) -> Result<TurnOutcome, BridgeError> {
        let task = self.ctx.task().id.as_str().to_string();
        let input = match plan {
            Plan::Nothing => {
                return Ok(TurnOutcome::Failed {
                    message: "nothing to send to the upstream agent".into(),
                })
            }
            Plan::Reread(l) => {
                info!(task = %task, run = %l.run_id, after_event = l.cursor.as_deref().unwrap_or(""),
                    "re-reading the upstream run");
                reattached(PROTOCOL);
                self.replay_until = l.cursor.clone();
                let stream = timed(
                    PROTOCOL,
                    "run events",
                    self.up
                        .client
                        .run_events(&l.thread_id, &l.run_id, None, AguiEncoding::Sse),
                )
                .await
                .map_err(|source| BridgeError::Upstream {
                    operation: "run events",
                    source: Box::new(source),
                })?;
                return self.follow(stream).await;
            }
            Plan::Post(input) => *input,
        };
        let thread = input.thread_id.clone();
        let run = input.run_id.clone();
        let link = AguiLink {
            protocol: PROTOCOL.into(),
            thread_id: thread.clone(),
            run_id: run.clone(),
            turn: self.number,
            asked: Vec::new(),
            cursor: None,
        };
        self.ctx.set_state(link.to_state()).await?;
        self.ctx.flush().await?;
        debug!(task = %task, run = %link.run_id, turn = link.turn, "upstream link stored");
        self.link = Some(link);
        debug!(task = %task, run = %run, "posting the upstream run");
        // Posted again only when nothing of it reached the upstream: a run's
        // id is not an idempotency key.
        let posted = tokio::select! {
            biased;
            _ = self.ctx.cancelled() => return self.stopped().await,
            r = crate::retry::sent_again(self.ctx, &self.up.backoff, "run", ClientError::is_unsent, || {
                timed(PROTOCOL, "run", self.up.client.run(&input, AguiEncoding::Sse))
            }) => r,
        };
        let stream = match posted {
            Ok(Some(stream)) => stream,
            Ok(None) => return self.stopped().await,
            Err(e) => match self.after_broken_post(&e, &thread, &run).await {
                Some(stream) => stream,
                None if self.ctx.is_cancelled() => return self.stopped().await,
                None => return Err(e),
            },
        };
        self.follow(stream).await
    }

    /// The run's `POST` failed after it was sent (the connection broke, or
    /// no answer came in time): the upstream may have started the run, which
    /// must not be posted again. Follows it on taskwire's run-events path
    /// when the upstream has it (that `GET` made again while it fails
    /// transiently); None for other errors, or when the upstream has no such
    /// run (or path): then the task fails.
    async fn after_broken_post(
        &self,
        e: &BridgeError,
        thread: &str,
        run: &str,
    ) -> Option<AguiStream> {
        let BridgeError::Upstream { source, .. } = e else {
            return None;
        };
        if !matches!(
            **source,
            ClientError::Transport(_) | ClientError::Timeout(_)
        ) {
            return None;
        }
        let task = &self.ctx.task().id;
        info!(task = %task, run = %run, error = %source,
            "the run's POST broke after it was sent; looking for the run upstream");
        let found = crate::retry::sent_again(
            self.ctx,
            &self.up.backoff,
            "run events",
            ClientError::is_transient,
            || {
                timed(
                    PROTOCOL,
                    "run events",
                    self.up
                        .client
                        .run_events(thread, run, None, AguiEncoding::Sse),
                )
            },
        )
        .await;
        match found {
            Ok(Some(stream)) => {
                info!(task = %task, run = %run, "following the upstream run on its events path");
                reattached(PROTOCOL);
                Some(stream)
            }
            Ok(None) => None,
            Err(e) => {
                debug!(task = %task, run = %run, error = %e, "the upstream has no such run to follow");
                None
            }
        }
    }

    async fn follow(&mut self, mut stream: AguiStream) -> Result<TurnOutcome, BridgeError> {
        loop {
            let item = tokio::select! {
                biased;
                _ = self.ctx.cancelled() => return self.stopped().await,
                item = stream.next() => item,
            };
            match item {
                Some(Ok(e)) => match self.apply_at(e).await {
                    Ok(Some(outcome)) => return Ok(outcome),
                    Ok(None) => {}
                    Err(BridgeError::Core(_)) if self.ctx.is_cancelled() => {
                        return self.stopped().await
                    }
                    Err(e) => return Err(e),
                },
                Some(Err(e)) => {
                    return Err(BridgeError::Upstream {
                        operation: "run",
                        source: Box::new(e),
                    })
                }
                None => {
                    return Err(BridgeError::Protocol(
                        "the upstream run's stream ended without RUN_FINISHED or RUN_ERROR".into(),
                    ))
                }
            }
        }
    }

    /// Applies one upstream event and, when it had outputs and an SSE id,
    /// advances the link's cursor to it: the outputs and the cursor are
    /// committed together (the turn's automatic flushes wait meanwhile). While
    /// re-reading up to the stored cursor, the event only rebuilds the turn's
    /// state.
    async fn apply_at(&mut self, mut e: AguiEvent) -> Result<Option<TurnOutcome>, BridgeError> {
        let _hold = self.ctx.hold_flushes();
        // `apply` reads the event's kind and JSON, not its id.
        let id = e.id.take();
        if self.replay_until.is_some() && e.ends_run() {
            // The run ended before the stored position came again: what it
            // streams is not the run the cursor was taken from.
            tracing::warn!(task = %self.ctx.task().id, cursor = self.replay_until.as_deref().unwrap_or(""),
                "the re-read upstream run ended before its stored position; the rest is applied");
            self.replay_until = None;
        }
        self.outputs = 0;
        let outcome = self.apply(e).await?;
        if let Some(until) = &self.replay_until {
            if id.as_deref() == Some(until.as_str()) {
                debug!(task = %self.ctx.task().id, cursor = %until, "re-read up to the stored position");
                self.replay_until = None;
            }
            return Ok(outcome);
        }
        if outcome.is_none() && self.outputs > 0 {
            if let (Some(id), Some(link)) = (id, self.link.as_mut()) {
                debug!(task = %self.ctx.task().id, run = %link.run_id, cursor = %id,
                    "upstream position stored (committed with the event's outputs)");
                link.cursor = Some(id);
                let state = link.to_state();
                self.ctx.set_state(state).await?;
            }
        }
        Ok(outcome)
    }

    /// Whether outputs are to be emitted (not while re-reading what is
    /// committed); counts them either way.
    fn emits(&mut self) -> bool {
        self.outputs += 1;
        self.replay_until.is_none()
    }

    /// Emits the held text message, if any.
    async fn flush_pending(&mut self) -> Result<(), BridgeError> {
        if let Some(t) = self.pending.take() {
            if self.emits() {
                self.ctx.emit_message(Message::agent_text(t)).await?;
            }
        }
        Ok(())
    }

    async fn apply(&mut self, e: AguiEvent) -> Result<Option<TurnOutcome>, BridgeError> {
        let ctx = self.ctx;
        let s = |k: &str| {
            e.raw
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match e.kind.as_str() {
            ev::TEXT_MESSAGE_START if e.raw.get("role").and_then(Value::as_str) != Some("user") => {
                let id = s("messageId");
                let max = self.up.max_open_messages;
                if !self.texts.contains_key(&id) && self.texts.len() >= max {
                    return Err(BridgeError::Protocol(format!(
                        "the upstream streams more than {max} text messages at once"
                    )));
                }
                if let Some(old) = self.texts.insert(id, String::new()) {
                    self.text_bytes -= old.len();
                }
            }
            ev::TEXT_MESSAGE_CONTENT => {
                let delta = e
                    .raw
                    .get("delta")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let Some(t) = self.texts.get_mut(&s("messageId")) {
                    if self.text_bytes + delta.len() > self.up.max_text_bytes {
                        return Err(BridgeError::Protocol(format!(
                            "the upstream's text messages grew past {} bytes",
                            self.up.max_text_bytes
                        )));
                    }
                    t.push_str(delta);
                    self.text_bytes += delta.len();
                }
            }
            ev::TEXT_MESSAGE_END => {
                if let Some(t) = self.texts.remove(&s("messageId")) {
                    self.text_bytes -= t.len();
                    self.flush_pending().await?;
                    self.pending = Some(t);
                }
            }
            ev::STEP_STARTED | ev::STEP_FINISHED => {
                let name = s("stepName");
                if self.emits() {
                    if e.kind == ev::STEP_STARTED {
                        ctx.step_started(&name).await?
                    } else {
                        ctx.step_finished(&name).await?
                    }
                }
            }
            ev::ACTIVITY_SNAPSHOT => {
                let content = e.raw.get("content").cloned().unwrap_or(Value::Null);
                if let Some((id, name, parts)) =
                    vocab::artifact_of_activity(&s("activityType"), &content)
                {
                    if self.emits() {
                        ctx.emit_artifact(&id, name.as_deref(), parts).await?;
                    }
                }
            }
            ev::RUN_ERROR => {
                self.flush_pending().await?;
                let message = s("message");
                return Ok(Some(if s("code") == "rejected" {
                    TurnOutcome::Rejected { reason: message }
                } else {
                    TurnOutcome::Failed { message }
                }));
            }
            ev::RUN_FINISHED => return self.finished(&e).await.map(Some),
            _ => {}
        }
        Ok(None)
    }

    async fn finished(&mut self, e: &AguiEvent) -> Result<TurnOutcome, BridgeError> {
        let ctx = self.ctx;
        match e.outcome_type().as_deref() {
            Some("interrupt") => {
                let asks = vocab::asks_of_interrupts(&e.interrupts());
                let (raised, prompt) = match crate::outcome::raise(ctx, asks, "interrupt")? {
                    Ok(r) => r,
                    Err(refused) => return Ok(refused),
                };
                let asked: Vec<AskedInterrupt> = raised
                    .into_iter()
                    .map(|r| AskedInterrupt {
                        id: r.key,
                        provider: r.provider,
                        schema: r.schema,
                    })
                    .collect();
                if asked.is_empty() {
                    return Ok(TurnOutcome::Failed {
                        message: "the upstream run was interrupted without an interrupt the bridge can read".into(),
                    });
                }
                if let Some(mut l) = self.link.clone() {
                    l.asked = asked;
                    ctx.set_state(l.to_state()).await?;
                    self.link = Some(l);
                }
                let message = self.pending.take().unwrap_or(prompt);
                Ok(TurnOutcome::Waiting {
                    message: Some(Message::agent_text(message)),
                })
            }
            Some("cancelled") => {
                self.flush_pending().await?;
                end_canceled(self.up.store.as_ref(), &self.up.info.name, &ctx.task().id).await
            }
            _ => {
                if let Some(result) = e.raw.get("result") {
                    for (id, name, parts) in vocab::artifacts_of_result(result, self.number) {
                        ctx.emit_artifact(&id, name.as_deref(), parts).await?;
                    }
                }
                Ok(TurnOutcome::Completed {
                    message: self.pending.take().map(Message::agent_text),
                })
            }
        }
    }

    /// The turn's cancellation token fired: on a downstream cancel, ask a
    /// taskwire upstream to cancel the run (others answer 404) and drop the
    /// stream; on a lost lease, leave the run for the next worker.
    async fn stopped(&mut self) -> Result<TurnOutcome, BridgeError> {
        let id = &self.ctx.task().id;
        if !downstream_canceled(self.up.store.as_ref(), id).await {
            return Err(BridgeError::Core(CoreError::LeaseLost));
        }
        if let Some(l) = &self.link {
            match timed(
                PROTOCOL,
                "cancel",
                self.up.client.cancel_run(&l.thread_id, &l.run_id),
            )
            .await
            {
                Ok(()) => info!(task = %id, run = %l.run_id, "upstream run canceled"),
                Err(e) => {
                    debug!(task = %id, run = %l.run_id, error = %e, "the upstream has no run cancel; its stream is dropped")
                }
            }
        }
        Err(BridgeError::Core(CoreError::Terminal {
            state: taskwire_core::TaskState::Canceled,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_round_trips_and_ids_are_stable() {
        let l = AguiLink {
            protocol: PROTOCOL.into(),
            thread_id: thread_id("t"),
            run_id: run_id("t", 2),
            turn: 2,
            asked: vec![AskedInterrupt {
                id: "t/input/ask-0".into(),
                provider: None,
                schema: None,
            }],
            cursor: Some("7.1".into()),
        };
        assert_eq!(AguiLink::read(Some(&l.to_state())), Some(l));
        assert_eq!(run_id("t", 1), "tw-t-turn-1");
        assert_ne!(run_id("t", 1), run_id("t", 2));
        let mcp = json!({"upstream": {"protocol": "mcp", "taskId": "x", "tool": "t", "turn": 1}});
        assert_eq!(AguiLink::read(Some(&mcp)), None);
    }
}
