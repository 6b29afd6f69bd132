//! A turn: the [`TurnContext`] an agent works through (its emit buffer,
//! flushes and requests for input, authorisations and reviews), the
//! [`TurnOutcome`] it ends with, and how the runtime applies that outcome to the
//! task in the turn's final commit.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::{CoreError, Result};
use crate::event::{EventKind, StepPhase};
use crate::service::{Access, Draft, TaskService};
use crate::store::{Claim, QueueOp};
use crate::types::{
    Artifact, AuthWait, InputKind, InputRequest, InputResponse, Message, Part, Review,
    ReviewDecision, Role, Task, TaskError, TaskState, TerminalCause,
};

/// How a turn ended.
#[derive(Clone, Debug, PartialEq)]
pub enum TurnOutcome {
    /// The work is done; an optional final message becomes the status message.
    Completed {
        /// Final message.
        message: Option<Message>,
    },
    /// The work failed (an agent fault, shown to the caller).
    Failed {
        /// What went wrong.
        message: String,
    },
    /// The agent refuses the work.
    Rejected {
        /// Why.
        reason: String,
    },
    /// The turn ends waiting for what it requested through the context (input,
    /// an authorisation, a review); the message says what is awaited.
    Waiting {
        /// Status message.
        message: Option<Message>,
    },
}

/// A change a turn makes, buffered until the next flush.
#[derive(Debug)]
enum Pending {
    Begin(Vec<String>),
    Text(Message),
    Chunk {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    },
    Step(String, StepPhase),
    State(Value),
    Delta(Value),
    Input(InputRequest),
    Auth(AuthWait),
    Review(Review),
}

struct Buffer {
    items: Vec<Pending>,
    oldest: Option<Instant>,
    requested_keys: Vec<String>,
}

pub(crate) struct TurnShared {
    service: TaskService,
    claim: Claim,
    buffer: Mutex<Buffer>,
    flush_lock: tokio::sync::Mutex<()>,
    flush_interval: Duration,
    /// The snapshot this turn committed last (at first the one it started from):
    /// the next commit is computed from it without reading the task again.
    latest: Mutex<Option<Arc<Task>>>,
    pub(crate) cancel: CancellationToken,
    /// Live [`FlushHold`]s: while any, no flush is due.
    holds: std::sync::atomic::AtomicUsize,
}

/// While alive, the turn's automatic flushes wait (see
/// [`TurnContext::hold_flushes`]); dropping it lets the next one happen.
#[must_use = "the hold ends when this is dropped"]
pub struct FlushHold {
    shared: Arc<TurnShared>,
}

impl std::fmt::Debug for FlushHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlushHold").finish_non_exhaustive()
    }
}

impl Drop for FlushHold {
    fn drop(&mut self) {
        self.shared
            .holds
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// What an agent sees and does during one turn. Emitted changes are buffered and
/// committed in batches (at most `flush_interval` apart, and at the end of the turn).
#[derive(Clone)]
pub struct TurnContext {
    task: Arc<Task>,
    input: Arc<Vec<Message>>,
    shared: Arc<TurnShared>,
}

impl std::fmt::Debug for TurnContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnContext")
            .field("task", &self.task.id)
            .field("input", &self.input.len())
            .finish()
    }
}

impl TurnContext {
    pub(crate) fn new(
        task: Arc<Task>,
        input: Vec<Message>,
        new_ids: Vec<String>,
        service: TaskService,
        claim: Claim,
        flush_interval: Duration,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            shared: Arc::new(TurnShared {
                latest: Mutex::new(Some(task.clone())),
                service,
                claim,
                buffer: Mutex::new(Buffer {
                    items: vec![Pending::Begin(new_ids)],
                    oldest: Some(Instant::now()),
                    requested_keys: Vec::new(),
                }),
                flush_lock: tokio::sync::Mutex::new(()),
                holds: std::sync::atomic::AtomicUsize::new(0),
                flush_interval,
                cancel,
            }),
            task,
            input: Arc::new(input),
        }
    }

    /// The task as it was when the turn started.
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The input this turn handles, in arrival order (the first message on the
    /// first turn; answers and queued messages on later ones).
    pub fn input(&self) -> &[Message] {
        &self.input
    }

    /// Stored answers to input requests, by key.
    pub fn answers(&self) -> &BTreeMap<String, InputResponse> {
        &self.task.input_answers
    }

    /// True if the provider has been authorised for this task.
    pub fn is_granted(&self, provider: &str) -> bool {
        self.task.granted_providers.contains(provider)
    }

    /// The decision on a review, if taken.
    pub fn review_decision(&self, review_id: &str) -> Option<ReviewDecision> {
        self.task.review_decisions.get(review_id).copied()
    }

    /// The agent state as it was when the turn started.
    pub fn state(&self) -> Option<&Value> {
        self.task.agent_state.as_ref()
    }

    /// True once the task is canceled (or the worker lost the task).
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }

    /// Resolves when the task is canceled (or the worker lost the task).
    pub async fn cancelled(&self) {
        self.shared.cancel.cancelled().await
    }

    pub(crate) fn cancel_turn(&self) {
        self.shared.cancel.cancel();
    }

    fn push(&self, item: Pending) {
        if let Ok(mut b) = self.shared.buffer.lock() {
            if let Pending::Input(r) = &item {
                b.requested_keys.push(r.key.clone());
            }
            if b.oldest.is_none() {
                b.oldest = Some(Instant::now());
            }
            b.items.push(item);
        }
    }

    async fn push_and_maybe_flush(&self, item: Pending) -> Result<()> {
        self.push(item);
        if self.flush_due() {
            self.flush().await?;
        }
        Ok(())
    }

    /// Holds the automatic flushes (those due every `flush_interval`, from
    /// an emit or the runtime's timer) until the returned guard is dropped, so
    /// that the changes emitted meanwhile are committed together, all or none:
    /// e.g. a bridged upstream event's outputs and the stream position that
    /// says they are applied. An explicit [`TurnContext::flush`] still
    /// commits. Hold only for a bounded piece of work.
    pub fn hold_flushes(&self) -> FlushHold {
        self.shared
            .holds
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        FlushHold {
            shared: self.shared.clone(),
        }
    }

    pub(crate) fn flush_due(&self) -> bool {
        if self.shared.holds.load(std::sync::atomic::Ordering::Acquire) > 0 {
            return false;
        }
        self.shared.buffer.lock().is_ok_and(|b| {
            b.oldest
                .is_some_and(|t| t.elapsed() >= self.shared.flush_interval)
        })
    }

    /// Emits an agent text message.
    pub async fn emit_text(&self, text: impl Into<String>) -> Result<()> {
        self.push_and_maybe_flush(Pending::Text(Message::agent_text(text)))
            .await
    }

    /// Emits an agent message.
    pub async fn emit_message(&self, mut message: Message) -> Result<()> {
        message.role = Role::Agent;
        self.push_and_maybe_flush(Pending::Text(message)).await
    }

    /// Emits a chunk of an artifact. `append` extends the artifact with the same id;
    /// `last_chunk` marks it complete.
    pub async fn emit_artifact_chunk(
        &self,
        artifact_id: &str,
        name: Option<&str>,
        parts: Vec<Part>,
        append: bool,
        last_chunk: bool,
    ) -> Result<()> {
        let artifact = Artifact {
            artifact_id: artifact_id.to_string(),
            name: name.map(str::to_string),
            description: None,
            parts,
            metadata: Default::default(),
            complete: last_chunk,
        };
        self.push_and_maybe_flush(Pending::Chunk {
            artifact,
            append,
            last_chunk,
        })
        .await
    }

    /// Emits a whole artifact in one chunk.
    pub async fn emit_artifact(
        &self,
        artifact_id: &str,
        name: Option<&str>,
        parts: Vec<Part>,
    ) -> Result<()> {
        self.emit_artifact_chunk(artifact_id, name, parts, false, true)
            .await
    }

    /// Marks a named step as started.
    pub async fn step_started(&self, name: &str) -> Result<()> {
        self.push_and_maybe_flush(Pending::Step(name.to_string(), StepPhase::Started))
            .await
    }

    /// Marks a named step as finished.
    pub async fn step_finished(&self, name: &str) -> Result<()> {
        self.push_and_maybe_flush(Pending::Step(name.to_string(), StepPhase::Finished))
            .await
    }

    /// Replaces the agent state.
    pub async fn set_state(&self, snapshot: Value) -> Result<()> {
        self.push_and_maybe_flush(Pending::State(snapshot)).await
    }

    /// Changes the agent state with a JSON Patch (RFC 6902 array of operations).
    pub async fn patch_state(&self, delta: Value) -> Result<()> {
        if serde_json::from_value::<json_patch::Patch>(delta.clone()).is_err() {
            return Err(CoreError::InvalidInput {
                field: "stateDelta".into(),
                reason: "not a JSON Patch".into(),
            });
        }
        self.push_and_maybe_flush(Pending::Delta(delta)).await
    }

    /// Requests keyed input; the answer must satisfy `schema`. End the turn with
    /// [`TurnOutcome::Waiting`] to wait for it.
    pub fn request_input(&self, key: &str, prompt: &str, schema: Value) -> Result<()> {
        self.request_kind(key, prompt, schema, InputKind::Form)
    }

    /// Requests a completion from the caller's own model (MCP
    /// `sampling/createMessage`; a form with `prompt` elsewhere), answered
    /// under `key`. End the turn with [`TurnOutcome::Waiting`].
    pub fn request_sampling(&self, key: &str, prompt: &str, max_tokens: u32) -> Result<()> {
        self.request_kind(
            key,
            prompt,
            InputKind::sampling_answer_schema(),
            InputKind::Sampling { max_tokens },
        )
    }

    /// Requests the caller's roots (MCP `roots/list`; a form with `prompt`
    /// elsewhere), answered under `key`. End the turn with
    /// [`TurnOutcome::Waiting`].
    pub fn request_roots(&self, key: &str, prompt: &str) -> Result<()> {
        self.request_kind(
            key,
            prompt,
            InputKind::roots_answer_schema(),
            InputKind::Roots,
        )
    }

    fn request_kind(&self, key: &str, prompt: &str, schema: Value, kind: InputKind) -> Result<()> {
        crate::ids::validate_external_id("input key", key)?;
        self.push(Pending::Input(InputRequest {
            key: key.to_string(),
            prompt: prompt.to_string(),
            schema,
            since: chrono::Utc::now(),
            kind,
            subject: None,
        }));
        Ok(())
    }

    /// Requires an authorisation of `provider` for `operation`. Several operations
    /// waiting on one provider make one authorisation. End the turn with
    /// [`TurnOutcome::Waiting`].
    pub fn require_auth(&self, provider: &str, operation: &str, url: Option<&str>) -> Result<()> {
        crate::ids::validate_external_id("provider", provider)?;
        self.push(Pending::Auth(AuthWait {
            provider: provider.to_string(),
            since: chrono::Utc::now(),
            operations: vec![operation.to_string()],
            url: url.map(str::to_string),
        }));
        Ok(())
    }

    /// Requests a review by `reviewer` (the task's responsible user when `None`).
    /// Returns the review id. End the turn with [`TurnOutcome::Waiting`].
    pub fn request_review(
        &self,
        review_id: &str,
        reviewer: Option<&str>,
        summary: &str,
    ) -> Result<String> {
        crate::ids::validate_external_id("review id", review_id)?;
        self.push(Pending::Review(Review {
            id: review_id.to_string(),
            reviewer: reviewer
                .map(str::to_string)
                .unwrap_or_else(|| self.task.responsible_user.clone()),
            summary: summary.to_string(),
            since: chrono::Utc::now(),
        }));
        Ok(review_id.to_string())
    }

    /// Commits everything emitted so far. Fails if the task was canceled or the
    /// lease lost (the cancellation token fires too).
    pub async fn flush(&self) -> Result<()> {
        self.commit(None).await
    }

    fn take(&self) -> (Vec<Pending>, Vec<String>) {
        match self.shared.buffer.lock() {
            Ok(mut b) => {
                b.oldest = None;
                (std::mem::take(&mut b.items), b.requested_keys.clone())
            }
            Err(_) => (Vec::new(), Vec::new()),
        }
    }

    /// Commits the buffer, plus the turn's outcome when given.
    pub(crate) async fn commit(&self, outcome: Option<&Finish>) -> Result<()> {
        let _guard = self.shared.flush_lock.lock().await;
        let (items, requested) = self.take();
        if items.is_empty() && outcome.is_none() {
            return Ok(());
        }
        let shared = &self.shared;
        let latest = shared.latest.lock().ok().and_then(|mut l| l.take());
        let res = shared
            .service
            .mutate_shared_from(
                &self.task.id,
                Access::System,
                Some(&shared.claim),
                latest,
                |d| {
                    for item in &items {
                        apply(d, item)?;
                    }
                    if let Some(o) = outcome {
                        finish(d, o, &requested)?;
                    }
                    Ok(())
                },
            )
            .await;
        match res {
            Ok((task, ())) => {
                if let Ok(mut l) = shared.latest.lock() {
                    *l = Some(task);
                }
                Ok(())
            }
            Err(e) => {
                if matches!(
                    e,
                    CoreError::Terminal { .. } | CoreError::LeaseLost | CoreError::NotFound
                ) {
                    shared.cancel.cancel();
                }
                Err(e)
            }
        }
    }
}

/// How the runtime ends a turn.
#[derive(Debug)]
pub(crate) enum Finish {
    Outcome(TurnOutcome),
    Crashed,
}

fn apply(d: &mut Draft, item: &Pending) -> Result<()> {
    let now = d.now();
    match item {
        Pending::Begin(ids) => crate::service::apply_begin(d, ids)?,
        Pending::Text(m) => {
            d.ensure_active()?;
            let mut m = m.clone();
            m.received_at.get_or_insert(now);
            m.committed_at = Some(now);
            d.task.history.push(m.clone());
            d.record(EventKind::Message {
                message: Box::new(m),
                queued: false,
            });
        }
        Pending::Chunk {
            artifact,
            append,
            last_chunk,
        } => {
            d.ensure_active()?;
            let t = &mut d.task;
            match t
                .artifacts
                .iter_mut()
                .find(|a| a.artifact_id == artifact.artifact_id)
            {
                Some(existing) if *append => {
                    existing.parts.extend(artifact.parts.iter().cloned());
                    existing.complete = *last_chunk;
                }
                Some(existing) => *existing = artifact.clone(),
                None => t.artifacts.push(artifact.clone()),
            }
            d.record(EventKind::Artifact {
                artifact: Box::new(artifact.clone()),
                append: *append,
                last_chunk: *last_chunk,
            });
        }
        Pending::Step(name, phase) => d.record(EventKind::Step {
            name: name.clone(),
            phase: *phase,
        }),
        Pending::State(v) => {
            d.task.agent_state = Some(v.clone());
            d.record(EventKind::StateSnapshot {
                snapshot: v.clone(),
            });
        }
        Pending::Delta(delta) => {
            let patch: json_patch::Patch =
                serde_json::from_value(delta.clone()).map_err(|e| CoreError::InvalidInput {
                    field: "stateDelta".into(),
                    reason: e.to_string(),
                })?;
            let mut state = d
                .task
                .agent_state
                .clone()
                .unwrap_or(Value::Object(Default::default()));
            json_patch::patch(&mut state, &patch).map_err(|e| CoreError::InvalidInput {
                field: "stateDelta".into(),
                reason: e.to_string(),
            })?;
            d.task.agent_state = Some(state);
            d.record(EventKind::StateDelta {
                delta: delta.clone(),
            });
        }
        Pending::Input(r) => {
            d.task.superseded_keys.remove(&r.key);
            d.task.answered_keys.remove(&r.key);
            d.task.input_answers.remove(&r.key);
            d.task.input_requests.insert(r.key.clone(), r.clone());
            d.record(EventKind::InputRequested {
                requests: vec![r.clone()],
            });
        }
        Pending::Auth(a) => {
            if d.task.granted_providers.contains(&a.provider) {
                return Ok(());
            }
            match d
                .task
                .pending_auth
                .iter_mut()
                .find(|p| p.provider == a.provider)
            {
                Some(p) => {
                    for op in &a.operations {
                        if !p.operations.contains(op) {
                            p.operations.push(op.clone());
                        }
                    }
                }
                None => {
                    d.task.pending_auth.push(a.clone());
                    d.record(EventKind::AuthRequired {
                        auth: Box::new(a.clone()),
                    });
                }
            }
        }
        Pending::Review(r) => {
            if d.task.review_decisions.contains_key(&r.id)
                || d.task.pending_reviews.iter().any(|p| p.id == r.id)
            {
                return Ok(());
            }
            d.task.pending_reviews.push(r.clone());
            d.record(EventKind::ReviewRequested {
                review: Box::new(r.clone()),
            });
        }
    }
    Ok(())
}

/// Applies a turn's outcome to the draft (called inside the final commit).
pub(crate) fn finish(d: &mut Draft, finish: &Finish, requested: &[String]) -> Result<()> {
    d.ensure_active()?;
    d.task.turn_open = false;
    let queued = d.task.has_queued_input();
    match finish {
        Finish::Outcome(TurnOutcome::Completed { message }) => {
            if queued {
                // Input arrived during the turn: it is handled in another turn
                // before the task may end.
                if let Some(m) = message {
                    push_agent_message(d, m.clone());
                }
                d.set_queue(QueueOp::Requeue);
                return Ok(());
            }
            d.transition_with(
                TaskState::Completed,
                message.clone(),
                Some(TerminalCause::Completed),
                None,
            )
        }
        Finish::Outcome(TurnOutcome::Failed { message }) => d.transition_with(
            TaskState::Failed,
            Some(Message::agent_text(message.clone())),
            Some(TerminalCause::AgentFailed),
            Some(TaskError {
                code: "agent_failed".into(),
                message: message.clone(),
            }),
        ),
        Finish::Outcome(TurnOutcome::Rejected { reason }) => d.transition_with(
            TaskState::Rejected,
            Some(Message::agent_text(reason.clone())),
            Some(TerminalCause::Rejected),
            Some(TaskError {
                code: "rejected".into(),
                message: reason.clone(),
            }),
        ),
        Finish::Outcome(TurnOutcome::Waiting { message }) => {
            // Requests of earlier turns that this turn did not raise again are superseded.
            let stale: Vec<String> = d
                .task
                .input_requests
                .keys()
                .filter(|k| !requested.contains(k))
                .cloned()
                .collect();
            if !stale.is_empty() {
                for k in &stale {
                    d.task.input_requests.remove(k);
                    d.task.superseded_keys.insert(k.clone());
                }
                d.record(crate::event::EventKind::InputSuperseded { keys: stale });
            }
            if queued {
                d.set_queue(QueueOp::Requeue);
                return Ok(());
            }
            match d.task.waiting_state() {
                Some(s) => {
                    d.transition(s, message.clone())?;
                    d.set_queue(QueueOp::Remove);
                    Ok(())
                }
                None => d.fail_internal("the agent waited without requesting anything"),
            }
        }
        Finish::Crashed => d.fail_internal("internal error"),
    }
}

fn push_agent_message(d: &mut Draft, mut m: Message) {
    let now = d.now();
    m.received_at.get_or_insert(now);
    m.committed_at = Some(now);
    d.task.history.push(m.clone());
    d.record(crate::event::EventKind::Message {
        message: Box::new(m),
        queued: false,
    });
}
