//! Rendering a task's event log as AG-UI runs.
//!
//! A run is one turn of a task: it opens with `RUN_STARTED` and closes at the first
//! status event that interrupts or ends the task. Every core event of the run is
//! rendered as something (see the table in `docs/agui.md`); core events without an
//! AG-UI counterpart become `CUSTOM` events named in [`crate::wire::custom`].
//!
//! Rendering is a pure function of the log: the same events always give the same
//! frames, which is what lets a reconnecting client resume by frame id.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};
use taskwire_core::event::{Event as CoreEvent, EventKind, StepPhase};
use taskwire_core::types::{
    Artifact, AuthWait, InputRequest, Message, Review, Role, TaskError, TerminalCause, Timestamp,
};
use taskwire_core::TaskState;
use taskwire_vocab::agui::{self as vocab, InterruptKind, InterruptRef, RunEnd};

use crate::wire::custom::Custom;
use crate::wire::role;
use crate::wire::{
    to_value, Event, EventBody, Interrupt, Outcome, PatchOp, RunResult, SnapshotMessage,
};

/// The position of a frame in a run's stream: the core sequence number it was
/// rendered from and its index among that event's frames (0 is `RUN_STARTED`,
/// placed at the sequence number the run starts after). Written `seq.k` in SSE
/// `id:` lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// Core sequence number.
    pub seq: u64,
    /// Index within that event's frames.
    pub k: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.seq, self.k)
    }
}

impl Pos {
    /// Parses `seq.k`.
    pub fn parse(s: &str) -> Option<Self> {
        let (a, b) = s.trim().split_once('.')?;
        Some(Self {
            seq: a.parse().ok()?,
            k: b.parse().ok()?,
        })
    }
}

/// One frame of a stream: an event and its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Where it sits.
    pub pos: Pos,
    /// The event.
    pub event: Event,
}

/// Who a run belongs to and what it is called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSpec {
    /// The thread (core context id).
    pub thread_id: String,
    /// The run id.
    pub run_id: String,
    /// The run this one continues.
    pub parent_run_id: Option<String>,
    /// The task.
    pub task_id: String,
    /// The task's inactivity lifespan, for `expiresAt`.
    pub idle_lifespan_ms: Option<u64>,
}

/// A message of the task in the thread view: a snapshot message, or an artifact
/// whose activity message is built when a snapshot needs it (artifacts grow by
/// chunks; rebuilding them per chunk would be quadratic).
#[derive(Clone, Debug)]
enum Entry {
    Message(SnapshotMessage),
    Artifact(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunPhase {
    NotStarted,
    Open,
    Closed,
}

/// Renders one task's log as AG-UI events. Feed the events up to where the run
/// starts with [`Renderer::fold`], open the run with [`Renderer::begin`], then
/// [`Renderer::render`] each following event until [`Renderer::is_closed`].
#[derive(Clone, Debug)]
pub struct Renderer {
    spec: RunSpec,
    prior_messages: Vec<SnapshotMessage>,
    messages: Vec<Entry>,
    artifacts: Vec<Artifact>,
    state: Option<Value>,
    inputs: BTreeMap<String, InputRequest>,
    auth: Vec<AuthWait>,
    reviews: Vec<Review>,
    phase: RunPhase,
    open_steps: BTreeSet<String>,
}

fn ms(t: &Timestamp) -> i64 {
    t.timestamp_millis()
}

/// The activity message id of an artifact.
pub fn activity_id(task_id: &str, artifact_id: &str) -> String {
    format!("{task_id}/artifact/{artifact_id}")
}

fn artifact_content(a: &Artifact) -> Value {
    to_value(&vocab::artifact_activity(a))
}

/// The snapshot form of a core message (`user` or `assistant`).
pub fn snapshot_message(m: &Message) -> SnapshotMessage {
    let (text, _loss) = vocab::message_text(&m.parts);
    SnapshotMessage::text(m.message_id.clone(), vocab::role(m.role), text)
}

impl Renderer {
    /// A renderer for a run of `spec.task_id`; `prior_messages` are the snapshot
    /// messages of the thread's earlier tasks, restated in `MESSAGES_SNAPSHOT`.
    pub fn new(spec: RunSpec, prior_messages: Vec<SnapshotMessage>) -> Self {
        Self {
            spec,
            prior_messages,
            messages: Vec::new(),
            artifacts: Vec::new(),
            state: None,
            inputs: BTreeMap::new(),
            auth: Vec::new(),
            reviews: Vec::new(),
            phase: RunPhase::NotStarted,
            open_steps: BTreeSet::new(),
        }
    }

    /// The run's spec.
    pub fn spec(&self) -> &RunSpec {
        &self.spec
    }

    /// Replaces the run identity (used by replay, where each run has its own id).
    pub fn set_run(&mut self, run_id: String, parent_run_id: Option<String>) {
        self.spec.run_id = run_id;
        self.spec.parent_run_id = parent_run_id;
    }

    /// True once the run has closed.
    pub fn is_closed(&self) -> bool {
        self.phase == RunPhase::Closed
    }

    /// True while the run is open.
    pub fn is_open(&self) -> bool {
        self.phase == RunPhase::Open
    }

    /// The thread's messages as a `MESSAGES_SNAPSHOT` restates them.
    pub fn thread_messages(&self) -> Vec<SnapshotMessage> {
        let mut v = self.prior_messages.clone();
        for e in &self.messages {
            match e {
                Entry::Message(m) => v.push(m.clone()),
                Entry::Artifact(aid) => {
                    if let Some(a) = self.artifacts.iter().find(|a| &a.artifact_id == aid) {
                        v.push(SnapshotMessage::activity(
                            activity_id(&self.spec.task_id, aid),
                            vocab::ARTIFACT_ACTIVITY_TYPE,
                            artifact_content(a),
                        ));
                    }
                }
            }
        }
        v
    }

    /// The agent state, if any.
    pub fn state(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    /// Applies an event to the thread view without rendering it (history before
    /// the run).
    pub fn fold(&mut self, e: &CoreEvent) {
        match &e.kind {
            EventKind::Message { message, .. } => self
                .messages
                .push(Entry::Message(snapshot_message(message))),
            EventKind::Status {
                to: TaskState::Completed,
                message: Some(m),
                ..
            } => self.messages.push(Entry::Message(snapshot_message(m))),
            EventKind::Artifact {
                artifact, append, ..
            } => self.apply_artifact(artifact, *append),
            EventKind::InputRequested { requests } => {
                for r in requests {
                    self.inputs.insert(r.key.clone(), r.clone());
                }
            }
            EventKind::InputAnswered { keys } | EventKind::InputSuperseded { keys } => {
                for k in keys {
                    self.inputs.remove(k);
                }
            }
            EventKind::AuthRequired { auth } => {
                self.auth.retain(|a| a.provider != auth.provider);
                self.auth.push(AuthWait::clone(auth));
            }
            EventKind::AuthGranted { provider } => self.auth.retain(|a| &a.provider != provider),
            EventKind::ReviewRequested { review } => {
                self.reviews.retain(|r| r.id != review.id);
                self.reviews.push(Review::clone(review));
            }
            EventKind::ReviewDecided { review_id, .. } => {
                self.reviews.retain(|r| &r.id != review_id)
            }
            EventKind::Status { to, .. } if to.is_terminal() => {
                self.inputs.clear();
                self.auth.clear();
                self.reviews.clear();
            }
            EventKind::StateSnapshot { snapshot } => self.state = Some(snapshot.clone()),
            EventKind::StateDelta { delta } => {
                let mut s = self
                    .state
                    .take()
                    .unwrap_or_else(|| Value::Object(Map::new()));
                if let Ok(p) = serde_json::from_value::<json_patch::Patch>(delta.clone()) {
                    // A patch the core accepted applies; if it does not, the next
                    // snapshot resynchronises.
                    let _ = json_patch::patch(&mut s, &p);
                }
                self.state = Some(s);
            }
            _ => {}
        }
    }

    fn apply_artifact(&mut self, a: &Artifact, append: bool) {
        match self
            .artifacts
            .iter_mut()
            .find(|x| x.artifact_id == a.artifact_id)
        {
            Some(existing) if append => {
                existing.parts.extend(a.parts.iter().cloned());
                existing.complete = a.complete;
            }
            Some(existing) => *existing = a.clone(),
            None => {
                self.artifacts.push(a.clone());
                self.messages.push(Entry::Artifact(a.artifact_id.clone()));
            }
        }
    }

    /// Opens the run: `RUN_STARTED` (timestamp `at`).
    pub fn begin(&mut self, at: i64) -> Vec<Event> {
        self.phase = RunPhase::Open;
        self.open_steps.clear();
        vec![Event::at(
            EventBody::RunStarted {
                thread_id: self.spec.thread_id.clone(),
                run_id: self.spec.run_id.clone(),
                protocol_version: Some(vocab::PROTOCOL_VERSION.to_string()),
                parent_run_id: self.spec.parent_run_id.clone(),
            },
            at,
        )]
    }

    fn iid(&self, kind: InterruptKind) -> String {
        InterruptRef {
            task_id: self.spec.task_id.clone(),
            kind,
        }
        .id()
    }

    /// Renders one event of the run. Events before [`Renderer::begin`] or after
    /// the run closed are only folded into the thread view.
    pub fn render(&mut self, e: &CoreEvent) -> Vec<Event> {
        if self.phase != RunPhase::Open {
            self.fold(e);
            return Vec::new();
        }
        let at = ms(&e.at);
        let mut out: Vec<EventBody> = Vec::new();
        match &e.kind {
            EventKind::Created { context_id, .. } => out.push(
                Custom::TaskCreated {
                    task_id: self.spec.task_id.clone(),
                    context_id: context_id.clone(),
                }
                .into(),
            ),
            EventKind::Status {
                from,
                to,
                message,
                cause,
                error,
            } => {
                out.push(
                    Custom::Status {
                        from: from.as_str().to_string(),
                        to: to.as_str().to_string(),
                        cause: cause.map(|c| c.as_str().to_string()),
                        message: message.as_ref().map(|m| m.text()),
                    }
                    .into(),
                );
                out.extend(self.close(
                    *to,
                    message.as_deref(),
                    *cause,
                    error.as_deref(),
                    at,
                    false,
                ));
            }
            EventKind::Message { message, queued } => match message.role {
                Role::User => out.push(
                    Custom::InputReceived {
                        message_id: message.message_id.clone(),
                        queued: *queued,
                    }
                    .into(),
                ),
                Role::Agent => out.extend(text_triad(message)),
            },
            EventKind::InputCommitted { message_ids } => out.push(
                Custom::InputCommitted {
                    message_ids: message_ids.clone(),
                }
                .into(),
            ),
            EventKind::TurnStarted { turn } => out.push(Custom::TurnStarted { turn: *turn }.into()),
            EventKind::Artifact {
                artifact, append, ..
            } => {
                let id = activity_id(&self.spec.task_id, &artifact.artifact_id);
                let known = self
                    .artifacts
                    .iter()
                    .any(|a| a.artifact_id == artifact.artifact_id);
                if *append && known {
                    let mut patch: Vec<PatchOp> = artifact
                        .parts
                        .iter()
                        .map(|p| PatchOp::Add {
                            path: "/parts/-".into(),
                            value: vocab::part_json(p),
                        })
                        .collect();
                    patch.push(PatchOp::Replace {
                        path: "/complete".into(),
                        value: Value::Bool(artifact.complete),
                    });
                    out.push(EventBody::ActivityDelta {
                        message_id: id,
                        activity_type: vocab::ARTIFACT_ACTIVITY_TYPE.to_string(),
                        patch: PatchOp::patch(&patch),
                    });
                } else {
                    out.push(EventBody::ActivitySnapshot {
                        message_id: id,
                        activity_type: vocab::ARTIFACT_ACTIVITY_TYPE.to_string(),
                        content: artifact_content(artifact),
                        replace: Some(true),
                    });
                }
            }
            EventKind::InputRequested { requests } => {
                let ids: Vec<String> = requests
                    .iter()
                    .map(|r| self.iid(InterruptKind::Input(r.key.clone())))
                    .collect();
                out.push(Custom::InputRequested { interrupt_ids: ids }.into());
            }
            EventKind::InputAnswered { keys } | EventKind::InputSuperseded { keys } => {
                let interrupt_ids: Vec<String> = keys
                    .iter()
                    .map(|k| self.iid(InterruptKind::Input(k.clone())))
                    .collect();
                out.push(
                    if matches!(e.kind, EventKind::InputAnswered { .. }) {
                        Custom::InputAnswered { interrupt_ids }
                    } else {
                        Custom::InputSuperseded { interrupt_ids }
                    }
                    .into(),
                );
            }
            EventKind::AuthRequired { auth } => {
                out.push(
                    Custom::AuthRequired {
                        interrupt_id: self.iid(InterruptKind::Auth(auth.provider.clone())),
                        provider: auth.provider.clone(),
                        url: auth.url.clone(),
                    }
                    .into(),
                );
            }
            EventKind::AuthGranted { provider } => out.push(
                Custom::AuthGranted {
                    interrupt_id: self.iid(InterruptKind::Auth(provider.clone())),
                    provider: provider.clone(),
                }
                .into(),
            ),
            EventKind::ReviewRequested { review } => out.push(
                Custom::ReviewRequested {
                    interrupt_id: self.iid(InterruptKind::Review(review.id.clone())),
                    reviewer: review.reviewer.clone(),
                    summary: review.summary.clone(),
                }
                .into(),
            ),
            EventKind::ReviewDecided {
                review_id,
                decision,
                by,
            } => out.push(
                Custom::ReviewDecided {
                    interrupt_id: self.iid(InterruptKind::Review(review_id.clone())),
                    decision: decision.as_str().to_string(),
                    by: by.clone(),
                }
                .into(),
            ),
            EventKind::Step { name, phase } => match phase {
                StepPhase::Started if !self.open_steps.contains(name) => {
                    self.open_steps.insert(name.clone());
                    out.push(EventBody::StepStarted {
                        step_name: name.clone(),
                    });
                }
                StepPhase::Finished if self.open_steps.contains(name) => {
                    self.open_steps.remove(name);
                    out.push(EventBody::StepFinished {
                        step_name: name.clone(),
                    });
                }
                _ => out.push(
                    Custom::Step {
                        step_name: name.clone(),
                        phase: phase.as_str().to_string(),
                    }
                    .into(),
                ),
            },
            EventKind::StateSnapshot { snapshot } => out.push(EventBody::StateSnapshot {
                snapshot: snapshot.clone(),
            }),
            EventKind::StateDelta { delta } => out.push(EventBody::StateDelta {
                delta: delta.clone(),
            }),
        }
        // Status events fold inside `close` (it needs the state before the change
        // for nothing, but folding twice would duplicate messages).
        if !matches!(e.kind, EventKind::Status { .. }) {
            self.fold(e);
        } else if let EventKind::Status { to, .. } = &e.kind {
            if to.is_terminal() {
                self.inputs.clear();
                self.auth.clear();
                self.reviews.clear();
            }
        }
        out.into_iter().map(|b| Event::at(b, at)).collect()
    }

    /// The interrupts of the task as it waits now.
    pub fn interrupts(&self, waiting_since: i64) -> Vec<Interrupt> {
        let expires_at = self.spec.idle_lifespan_ms.and_then(|l| {
            chrono::DateTime::from_timestamp_millis(waiting_since.saturating_add(l as i64))
                .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        });
        // The pending interactions, in the order and shape `taskwire_vocab::agui`
        // gives them.
        self.inputs
            .values()
            .map(vocab::input_interrupt)
            .chain(self.auth.iter().map(vocab::auth_interrupt))
            .chain(self.reviews.iter().map(vocab::review_interrupt))
            .map(|i| self.interrupt(i, expires_at.clone()))
            .collect()
    }

    fn interrupt(&self, i: vocab::InterruptView, expires_at: Option<String>) -> Interrupt {
        Interrupt {
            id: self.iid(i.kind),
            reason: i.reason.to_string(),
            message: Some(i.message),
            response_schema: i.response_schema,
            expires_at,
            metadata: i.metadata,
        }
    }

    fn result(&self) -> Value {
        to_value(&RunResult {
            task_id: self.spec.task_id.clone(),
            artifacts: self
                .artifacts
                .iter()
                .map(vocab::artifact_activity)
                .collect(),
        })
    }

    /// The events that close the run for a status change to `to` (none if the run
    /// stays open). `restating` leaves out the streamed final message (replay
    /// restates it in the messages snapshot instead).
    fn close(
        &mut self,
        to: TaskState,
        message: Option<&Message>,
        cause: Option<TerminalCause>,
        error: Option<&TaskError>,
        at: i64,
        restating: bool,
    ) -> Vec<EventBody> {
        let (end, _loss) = vocab::run_end(to, cause, error);
        if end == RunEnd::Open {
            return Vec::new();
        }
        let mut out = Vec::new();
        for s in std::mem::take(&mut self.open_steps) {
            out.push(EventBody::StepFinished { step_name: s });
        }
        let thread_id = self.spec.thread_id.clone();
        let run_id = self.spec.run_id.clone();
        match end {
            RunEnd::Open => {}
            RunEnd::Completed => {
                if let Some(m) = message {
                    if !restating {
                        out.extend(text_triad(m));
                    }
                    self.messages.push(Entry::Message(snapshot_message(m)));
                }
                out.push(EventBody::RunFinished {
                    thread_id,
                    run_id,
                    result: Some(self.result()),
                    outcome: None,
                });
            }
            RunEnd::Interrupted => {
                let mut interrupts = self.interrupts(at);
                if interrupts.is_empty() {
                    // The core never waits on nothing; if a log says otherwise the
                    // run still ends as an interrupt the client can see.
                    let mut p = self.interrupt(
                        vocab::placeholder_interrupt(message.map(Message::text)),
                        None,
                    );
                    p.message = message.map(Message::text);
                    interrupts.push(p);
                }
                if let Some(s) = &self.state {
                    out.push(EventBody::StateSnapshot {
                        snapshot: s.clone(),
                    });
                }
                out.push(EventBody::MessagesSnapshot {
                    messages: self
                        .thread_messages()
                        .iter()
                        .map(SnapshotMessage::to_value)
                        .collect(),
                });
                out.push(EventBody::RunFinished {
                    thread_id,
                    run_id,
                    result: None,
                    outcome: Some(Outcome::Interrupt { interrupts }),
                });
            }
            RunEnd::Cancelled => out.push(EventBody::RunFinished {
                thread_id,
                run_id,
                result: None,
                outcome: Some(Outcome::Cancelled),
            }),
            RunEnd::Error { code, message } => out.push(EventBody::RunError {
                message: if message.is_empty() {
                    "the task failed".into()
                } else {
                    message
                },
                code: Some(code),
            }),
        }
        self.phase = RunPhase::Closed;
        out
    }

    /// Replay: restates the run that a run-ending status event closes as
    /// `RUN_STARTED`, `MESSAGES_SNAPSHOT`, `STATE_SNAPSHOT` and the closing event.
    /// Returns nothing for events that do not end a run. The event is folded.
    pub fn restate(&mut self, e: &CoreEvent) -> Vec<Event> {
        let EventKind::Status {
            to,
            message,
            cause,
            error,
            ..
        } = &e.kind
        else {
            self.fold(e);
            return Vec::new();
        };
        if vocab::run_end(*to, *cause, error.as_deref()).0 == RunEnd::Open {
            return Vec::new();
        }
        let at = ms(&e.at);
        let mut out = self.begin(at);
        if to.is_interrupted() {
            // The interrupting close restates messages and state itself.
            out.extend(
                self.close(*to, message.as_deref(), *cause, error.as_deref(), at, true)
                    .into_iter()
                    .map(|b| Event::at(b, at)),
            );
        } else {
            let closing = self.close(*to, message.as_deref(), *cause, error.as_deref(), at, true);
            out.push(Event::at(
                EventBody::MessagesSnapshot {
                    messages: self
                        .thread_messages()
                        .iter()
                        .map(SnapshotMessage::to_value)
                        .collect(),
                },
                at,
            ));
            if let Some(s) = &self.state {
                out.push(Event::at(
                    EventBody::StateSnapshot {
                        snapshot: s.clone(),
                    },
                    at,
                ));
            }
            out.extend(closing.into_iter().map(|b| Event::at(b, at)));
        }
        if to.is_terminal() {
            self.inputs.clear();
            self.auth.clear();
            self.reviews.clear();
        }
        out
    }

    /// Ends an open run because the stream broke (the log could not be read).
    pub fn abort(&mut self, message: &str, at: i64) -> Vec<Event> {
        if self.phase != RunPhase::Open {
            return Vec::new();
        }
        self.phase = RunPhase::Closed;
        self.open_steps.clear();
        vec![Event::at(
            EventBody::RunError {
                message: message.to_string(),
                code: Some(vocab::codes::INTERNAL.to_string()),
            },
            at,
        )]
    }
}

fn text_triad(m: &Message) -> Vec<EventBody> {
    let (text, _loss) = vocab::message_text(&m.parts);
    let mut v = vec![EventBody::TextMessageStart {
        message_id: m.message_id.clone(),
        role: Some(role::ASSISTANT.to_string()),
    }];
    if !text.is_empty() {
        v.push(EventBody::TextMessageContent {
            message_id: m.message_id.clone(),
            delta: text,
        });
    }
    v.push(EventBody::TextMessageEnd {
        message_id: m.message_id.clone(),
    });
    v
}

/// Renders a run of one task from its log: events with `seq <= after_seq` are
/// history, the run opens after them and ends at the first interrupting or
/// terminal status. Returns the frames and whether the run closed.
pub fn render_run(
    renderer: &mut Renderer,
    after_seq: u64,
    events: &[CoreEvent],
    started_at: i64,
) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut begun = false;
    for e in events {
        if e.seq <= after_seq {
            renderer.fold(e);
            continue;
        }
        if renderer.is_closed() {
            break;
        }
        if !begun {
            begun = true;
            frames.extend(frames_at(after_seq, 0, renderer.begin(started_at)));
        }
        frames.extend(frames_at(e.seq, 1, renderer.render(e)));
    }
    if !begun {
        frames.extend(frames_at(after_seq, 0, renderer.begin(started_at)));
    }
    frames
}

/// Numbers events as frames of core sequence `seq`, from index `first`.
pub fn frames_at(seq: u64, first: u32, events: Vec<Event>) -> Vec<Frame> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| Frame {
            pos: Pos {
                seq,
                k: first + i as u32,
            },
            event,
        })
        .collect()
}

/// Tracks what a prefix of a run's stream left open, so a resumed stream can
/// re-open it and be valid on its own.
#[derive(Clone, Debug, Default)]
pub struct OpenTracker {
    steps: BTreeSet<String>,
    messages: BTreeMap<String, Option<String>>,
    state: Option<Value>,
    activities: BTreeMap<String, (String, Value)>,
}

impl OpenTracker {
    /// Records an event the client already received.
    pub fn push(&mut self, e: &Event) {
        match &e.body {
            EventBody::RunStarted { .. } => *self = Self::default(),
            EventBody::StepStarted { step_name } => {
                self.steps.insert(step_name.clone());
            }
            EventBody::StepFinished { step_name } => {
                self.steps.remove(step_name);
            }
            EventBody::TextMessageStart { message_id, role } => {
                self.messages.insert(message_id.clone(), role.clone());
            }
            EventBody::TextMessageEnd { message_id } => {
                self.messages.remove(message_id);
            }
            EventBody::StateSnapshot { snapshot } => self.state = Some(snapshot.clone()),
            EventBody::StateDelta { delta } => {
                let mut s = self
                    .state
                    .take()
                    .unwrap_or_else(|| Value::Object(Map::new()));
                if let Ok(p) = serde_json::from_value::<json_patch::Patch>(delta.clone()) {
                    let _ = json_patch::patch(&mut s, &p);
                }
                self.state = Some(s);
            }
            EventBody::ActivitySnapshot {
                message_id,
                activity_type,
                content,
                ..
            } => {
                self.activities
                    .insert(message_id.clone(), (activity_type.clone(), content.clone()));
            }
            EventBody::ActivityDelta {
                message_id, patch, ..
            } => {
                if let Some((_, c)) = self.activities.get_mut(message_id) {
                    if let Ok(p) = serde_json::from_value::<json_patch::Patch>(patch.clone()) {
                        let _ = json_patch::patch(c, &p);
                    }
                }
            }
            _ => {}
        }
    }

    /// The events that re-open what is open (after a fresh `RUN_STARTED`): open
    /// steps, open text messages, the current state, and incomplete artifacts.
    pub fn reopen(&self, at: i64) -> Vec<Event> {
        let mut v = Vec::new();
        for s in &self.steps {
            v.push(EventBody::StepStarted {
                step_name: s.clone(),
            });
        }
        for (id, role) in &self.messages {
            v.push(EventBody::TextMessageStart {
                message_id: id.clone(),
                role: role.clone(),
            });
        }
        if let Some(s) = &self.state {
            v.push(EventBody::StateSnapshot {
                snapshot: s.clone(),
            });
        }
        for (id, (t, c)) in &self.activities {
            if c.get("complete") == Some(&Value::Bool(false)) {
                v.push(EventBody::ActivitySnapshot {
                    message_id: id.clone(),
                    activity_type: t.clone(),
                    content: c.clone(),
                    replace: Some(true),
                });
            }
        }
        v.into_iter().map(|b| Event::at(b, at)).collect()
    }
}

/// Resumes a run's stream after frame `last`, frame by frame: frames the client
/// already has are tracked and dropped; the first new frame is preceded by the
/// run's `RUN_STARTED` (at position `last`) and the events that re-open what was
/// open, so the resumed stream is valid on its own.
#[derive(Clone, Debug)]
pub struct Resumer {
    last: Pos,
    tracker: OpenTracker,
    start: Option<Event>,
    passing: bool,
}

impl Resumer {
    /// Resumes after `last`.
    pub fn new(last: Pos) -> Self {
        Self {
            last,
            tracker: OpenTracker::default(),
            start: None,
            passing: false,
        }
    }

    /// The frames to send for the next frame of the run.
    pub fn push(&mut self, f: Frame) -> Vec<Frame> {
        if self.passing {
            return vec![f];
        }
        if f.pos <= self.last {
            self.tracker.push(&f.event);
            if matches!(f.event.body, EventBody::RunStarted { .. }) {
                self.start = Some(f.event);
            }
            return Vec::new();
        }
        self.passing = true;
        let Some(start) = self.start.take() else {
            // The client never had the start: it gets the run from the beginning.
            return vec![f];
        };
        let at = start.timestamp.unwrap_or(0);
        let mut out = vec![Frame {
            pos: self.last,
            event: start,
        }];
        out.extend(self.tracker.reopen(at).into_iter().map(|event| Frame {
            pos: self.last,
            event,
        }));
        out.push(f);
        out
    }
}

/// [`Resumer`] over a complete list of frames.
pub fn resume_after(frames: &[Frame], last: Pos) -> Vec<Frame> {
    let mut r = Resumer::new(last);
    frames.iter().cloned().flat_map(|f| r.push(f)).collect()
}
