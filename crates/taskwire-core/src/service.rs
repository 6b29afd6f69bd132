//! Commands and queries on tasks. Every change goes through [`TaskService::mutate`]:
//! read the snapshot, check access, build the change on a [`Draft`] (which checks the
//! transition table), then commit it with a compare-and-set on the version.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::Map;

use crate::error::{CoreError, Result, StoreError};
use crate::event::{Event, EventKind};
use crate::guardrail::InputGuardrail;
use crate::ids::{random_id, validate_external_id, TaskId};
use crate::limits::Limits;
use crate::store::{
    decode_cursor, Claim, Commit, CreateOutcome, IdempotencyKey, ListPage, ListQuery, QueueOp,
    TaskStore, TaskWake,
};
use crate::transition;
use crate::types::{
    Caller, InputAction, InputResponse, Message, Metadata, Permission, ReviewDecision, Role, Task,
    TaskError, TaskState, TerminalCause, Timestamp,
};

/// How many times a command re-reads and retries after losing a compare-and-set.
const MAX_CAS_RETRIES: usize = 64;
/// How long [`TaskService::wait_for_state_shared`] waits for a wake-up before it
/// reads the task anyway.
const RECHECK_EVERY: Duration = Duration::from_secs(5);

/// Who performs a command.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Access<'a> {
    /// A caller: the task must be theirs (same tenant and owner), or it is "not found".
    Owner(&'a Caller),
    /// A reviewer: the caller must be the owner or the reviewer of a pending review.
    Reviewer(&'a Caller),
    /// A participant (CAS): the caller must be the owner or the task's responsible
    /// user, in the task's tenant.
    Participant(&'a Caller),
    /// The runtime itself (workers, reaper, sweeper, trusted callbacks).
    System,
}

impl Access<'_> {
    /// `Ok` if the credential behind this access grants `needed` (the runtime
    /// always may).
    fn require(&self, needed: Permission) -> Result<()> {
        match self {
            Access::Owner(c) | Access::Reviewer(c) | Access::Participant(c) => c.require(needed),
            Access::System => Ok(()),
        }
    }

    fn allows(&self, t: &Task) -> bool {
        match self {
            Access::Owner(c) => t.is_visible_to(c),
            Access::Reviewer(c) => {
                t.tenant == c.tenant
                    && (t.owner == c.principal
                        || t.pending_reviews.iter().any(|r| r.reviewer == c.principal))
            }
            Access::Participant(c) => {
                t.tenant == c.tenant
                    && (t.owner == c.principal || t.responsible_user == c.principal)
            }
            Access::System => true,
        }
    }
}

/// Defaults applied to new tasks.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct TaskDefaults {
    /// How long terminal tasks and their logs are kept (None: forever).
    pub ttl: Option<Duration>,
    /// Inactivity lifespan of tasks waiting on a person (None: no lifespan).
    pub idle_lifespan: Option<Duration>,
}

impl TaskDefaults {
    /// These defaults with `ttl` (None: kept forever).
    pub fn with_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl;
        self
    }

    /// These defaults with `idle_lifespan` (None: no lifespan).
    pub fn with_idle_lifespan(mut self, idle_lifespan: Option<Duration>) -> Self {
        self.idle_lifespan = idle_lifespan;
        self
    }
}

impl Default for TaskDefaults {
    fn default() -> Self {
        Self {
            ttl: Some(Duration::from_secs(7 * 24 * 3600)),
            idle_lifespan: None,
        }
    }
}

/// A request to create a task.
#[derive(Clone, Debug)]
pub struct CreateTask {
    /// The first message; its `message_id` is the idempotency key.
    pub message: Message,
    /// Join this context (conversation); a new random one otherwise.
    pub context_id: Option<String>,
    /// Task metadata.
    pub metadata: Metadata,
    /// Retention after terminal; the service default otherwise.
    pub ttl: Option<Duration>,
    /// The task on whose behalf this one is created (its responsible user carries over).
    pub parent: Option<TaskId>,
}

impl CreateTask {
    /// A create request from a first message, with defaults for everything else.
    pub fn new(message: Message) -> Self {
        Self {
            message,
            context_id: None,
            metadata: Map::new(),
            ttl: None,
            parent: None,
        }
    }
}

/// What create returned.
#[derive(Clone, Debug)]
pub struct Created {
    /// The task (the stored snapshot, shared).
    pub task: Arc<Task>,
    /// False when an earlier create with the same key returned this task.
    pub created: bool,
    /// A watch of the task that began before `task` was stored (or read): with
    /// it, [`TaskService::wait_for_state_from`] follows the task from `task` on
    /// without reading it again. Set by [`TaskService::create_watched`] when the
    /// task is new; `None` otherwise.
    pub watch: Option<tokio::sync::watch::Receiver<TaskWake>>,
}

/// What answering input requests did.
#[derive(Clone, Debug)]
pub struct Answered {
    /// The task after the answers.
    pub task: Task,
    /// Keys whose answers were stored.
    pub applied: Vec<String>,
    /// Keys that were unknown, already answered or superseded.
    pub ignored: Vec<String>,
}

/// A change being built on a task snapshot.
#[derive(Debug)]
pub struct Draft {
    /// The snapshot being changed.
    pub task: Task,
    events: Vec<EventKind>,
    queue: QueueOp,
    now: Timestamp,
    was_terminal: bool,
    transitions: Vec<(TaskState, TaskState)>,
}

impl Draft {
    fn new(task: Task, now: Timestamp) -> Self {
        let was_terminal = task.state.is_terminal();
        Self {
            task,
            events: Vec::new(),
            queue: QueueOp::Keep,
            now,
            was_terminal,
            transitions: Vec::new(),
        }
    }

    /// The time the change is made at.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Fails with `Terminal` if the task is terminal.
    pub fn ensure_active(&self) -> Result<()> {
        if self.task.state.is_terminal() {
            Err(CoreError::Terminal {
                state: self.task.state,
            })
        } else {
            Ok(())
        }
    }

    /// Records an event.
    pub fn record(&mut self, kind: EventKind) {
        self.events.push(kind);
    }

    /// Sets what happens to the queue entry.
    pub fn set_queue(&mut self, op: QueueOp) {
        self.queue = op;
    }

    /// Changes state through the transition table, with a status message.
    pub fn transition(&mut self, to: TaskState, message: Option<Message>) -> Result<()> {
        self.transition_with(to, message, None, None)
    }

    /// Changes state, recording why a terminal state was reached.
    pub fn transition_with(
        &mut self,
        to: TaskState,
        message: Option<Message>,
        cause: Option<TerminalCause>,
        error: Option<TaskError>,
    ) -> Result<()> {
        let from = self.task.state;
        transition::check(from, to)?;
        let t = &mut self.task;
        t.state = to;
        t.state_changed_at = self.now;
        t.status_message = message.clone();
        if to.is_terminal() {
            t.terminal_cause = cause;
            t.error = error.clone();
            t.idle_expires_at = None;
            t.turn_open = false;
            t.expires_at = t.ttl_ms.map(|ms| after_ms(self.now, ms));
            // Nothing is outstanding on a terminal task.
            let open: Vec<String> = std::mem::take(&mut t.input_requests).into_keys().collect();
            t.superseded_keys.extend(open);
            t.pending_auth.clear();
            t.pending_reviews.clear();
            self.queue = QueueOp::Remove;
        } else if to.is_interrupted() {
            t.idle_expires_at = t.idle_lifespan_ms.map(|ms| after_ms(self.now, ms));
        } else {
            t.idle_expires_at = None;
        }
        self.transitions.push((from, to));
        self.events.push(EventKind::Status {
            from,
            to,
            message: message.map(Box::new),
            cause,
            error: error.map(Box::new),
        });
        Ok(())
    }

    /// Ends the task failed for an internal reason: the caller sees only the safe
    /// status message "internal error"; `detail` goes into the task's error.
    pub fn fail_internal(&mut self, detail: impl Into<String>) -> Result<()> {
        self.transition_with(
            TaskState::Failed,
            Some(Message::agent_text("internal error")),
            Some(TerminalCause::Internal),
            Some(TaskError {
                code: "internal".into(),
                message: detail.into(),
            }),
        )
    }

    /// Resumes an interrupted task: back to working and onto the queue.
    pub fn resume(&mut self) -> Result<()> {
        self.transition(TaskState::Working, None)?;
        self.queue = QueueOp::Enqueue;
        Ok(())
    }

    /// After a wait was resolved: resume if nothing is pending any more, or move
    /// to the state that matches what is still pending.
    pub fn settle_wait(&mut self) -> Result<()> {
        if !self.task.state.is_interrupted() {
            return Ok(());
        }
        match self.task.waiting_state() {
            None => self.resume(),
            Some(s) if s != self.task.state => {
                let msg = self.task.status_message.clone();
                self.transition(s, msg)
            }
            Some(_) => Ok(()),
        }
    }

    fn into_commit(
        mut self,
        fence: Option<Claim>,
    ) -> Result<(Commit, Vec<(TaskState, TaskState)>)> {
        if self.was_terminal {
            return Err(CoreError::Terminal {
                state: self.task.state,
            });
        }
        let expected_version = self.task.version;
        let version = expected_version + 1;
        let mut events = Vec::with_capacity(self.events.len());
        for kind in self.events {
            self.task.last_seq += 1;
            events.push(Event {
                task_id: self.task.id.clone(),
                seq: self.task.last_seq,
                version,
                at: self.now,
                kind,
            });
        }
        self.task.version = version;
        self.task.updated_at = self.now;
        Ok((
            Commit {
                task: Arc::new(self.task),
                expected_version,
                events,
                queue: self.queue,
                fence,
            },
            self.transitions,
        ))
    }
}

/// `now` plus `ms` milliseconds, saturating.
fn after_ms(now: Timestamp, ms: u64) -> Timestamp {
    now + chrono::Duration::milliseconds(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// A duration in whole milliseconds, saturating.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

pub use crate::subscribe::EventStream;

/// Where the first turns of tasks created in this process run: the runtime
/// plugs into the service here ([`crate::runtime::Runtime::start`] sets it),
/// so that the service never calls up into the runtime by name.
pub(crate) trait Dispatch: Send + Sync + std::fmt::Debug {
    /// This node's name in leases, and the lease length.
    fn lease(&self) -> (&str, Duration);
    /// A free turn slot, if there is one now.
    fn try_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit>;
    /// Runs the first turn of a task created with `claim`, in `slot`.
    fn run(&self, claim: Claim, task: Arc<Task>, slot: tokio::sync::OwnedSemaphorePermit);
}

/// The command and query surface of the core, shared by every adapter.
#[derive(Clone)]
pub struct TaskService {
    store: Arc<dyn TaskStore>,
    agent_name: Arc<str>,
    limits: Arc<Limits>,
    defaults: Arc<TaskDefaults>,
    guardrails: Arc<Vec<Arc<dyn InputGuardrail>>>,
    streams: Arc<OpenStreams>,
    /// The runtime of this process that runs the turns of tasks created here, if
    /// one is started (local dispatch; see [`Dispatch`]).
    dispatch: Arc<std::sync::RwLock<Option<Arc<dyn Dispatch>>>>,
}

/// The event streams open per caller in this process.
#[derive(Debug, Default)]
struct OpenStreams {
    open: std::sync::Mutex<HashMap<(String, String), usize>>,
}

/// One open stream of a caller; dropping it closes the count.
struct StreamPermit {
    streams: Arc<OpenStreams>,
    key: (String, String),
}

impl OpenStreams {
    fn open(self: &Arc<Self>, caller: &Caller, max: usize) -> Result<StreamPermit> {
        let key = (caller.tenant.clone(), caller.principal.clone());
        let mut open = self
            .open
            .lock()
            .map_err(|_| CoreError::Store(StoreError::Backend("stream count poisoned".into())))?;
        let n = open.entry(key.clone()).or_insert(0);
        if *n >= max {
            let size = *n + 1;
            if *n == 0 {
                open.remove(&key);
            }
            return Err(CoreError::TooLarge {
                what: "open streams of this caller".into(),
                size,
                limit: max,
            });
        }
        *n += 1;
        Ok(StreamPermit {
            streams: self.clone(),
            key,
        })
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        if let Ok(mut open) = self.streams.open.lock() {
            if let Some(n) = open.get_mut(&self.key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    open.remove(&self.key);
                }
            }
        }
    }
}

impl std::fmt::Debug for TaskService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskService")
            .field("store", &self.store.kind())
            .field("agent", &self.agent_name)
            .finish()
    }
}

impl TaskService {
    /// A service over a store, for tasks run by the named agent.
    pub fn new(store: Arc<dyn TaskStore>, agent_name: impl Into<String>) -> Self {
        Self {
            store,
            agent_name: Arc::from(agent_name.into()),
            limits: Arc::new(Limits::default()),
            defaults: Arc::new(TaskDefaults::default()),
            guardrails: Arc::new(Vec::new()),
            streams: Arc::default(),
            dispatch: Arc::default(),
        }
    }

    /// Hands the first turns of tasks created from now on to `dispatch`.
    pub(crate) fn set_dispatch(&self, dispatch: Arc<dyn Dispatch>) {
        if let Ok(mut d) = self.dispatch.write() {
            *d = Some(dispatch);
        }
    }

    /// Stops handing first turns to `dispatch` (if it is the one set).
    pub(crate) fn clear_dispatch(&self, dispatch: &Arc<dyn Dispatch>) {
        if let Ok(mut d) = self.dispatch.write() {
            // The same object: compared by address, not by vtable.
            let same =
                |x: &Arc<dyn Dispatch>| std::ptr::addr_eq(Arc::as_ptr(x), Arc::as_ptr(dispatch));
            if d.as_ref().is_some_and(same) {
                *d = None;
            }
        }
    }

    /// The local runtime and a free turn slot of it, if both exist now.
    fn local_slot(&self) -> Option<(Arc<dyn Dispatch>, tokio::sync::OwnedSemaphorePermit)> {
        let d = self.dispatch.read().ok()?.clone()?;
        let slot = d.try_slot()?;
        Some((d, slot))
    }

    /// Replaces the input limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = Arc::new(limits);
        self
    }

    /// Replaces the task defaults (TTL, inactivity lifespan).
    pub fn with_defaults(mut self, defaults: TaskDefaults) -> Self {
        self.defaults = Arc::new(defaults);
        self
    }

    /// Adds an input guardrail; guardrails run in order before anything is stored.
    pub fn with_guardrail(mut self, g: Arc<dyn InputGuardrail>) -> Self {
        let mut v: Vec<_> = self.guardrails.iter().cloned().collect();
        v.push(g);
        self.guardrails = Arc::new(v);
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The agent's name.
    pub fn agent_name(&self) -> &str {
        &self.agent_name
    }

    fn check_input(&self, caller: &Caller, m: &Message) -> Result<()> {
        caller.require(Permission::Write)?;
        self.limits.check_message(m)?;
        if m.role != Role::User {
            return Err(CoreError::InvalidInput {
                field: "role".into(),
                reason: "input messages must have the user role".into(),
            });
        }
        for g in self.guardrails.iter() {
            g.check(caller, m)?;
        }
        Ok(())
    }

    /// Applies `f` to the task and commits the result with a compare-and-set,
    /// re-reading and retrying when another writer got there first.
    pub async fn mutate<T>(
        &self,
        id: &TaskId,
        access: Access<'_>,
        fence: Option<&Claim>,
        f: impl FnMut(&mut Draft) -> Result<T>,
    ) -> Result<(Task, T)> {
        let (task, out) = self.mutate_shared(id, access, fence, f).await?;
        Ok((Arc::unwrap_or_clone(task), out))
    }

    /// [`TaskService::mutate`] returning the committed snapshot as shared with the
    /// store (no copy), for callers that only look at it.
    pub async fn mutate_shared<T>(
        &self,
        id: &TaskId,
        access: Access<'_>,
        fence: Option<&Claim>,
        f: impl FnMut(&mut Draft) -> Result<T>,
    ) -> Result<(Arc<Task>, T)> {
        self.mutate_shared_from(id, access, fence, None, f).await
    }

    /// [`TaskService::mutate_shared`] starting from `latest`, a snapshot the caller
    /// holds (the one it committed last), instead of reading the task first. The
    /// commit's version check makes this safe: if the task moved on since, the
    /// commit conflicts and the change is computed again from a fresh read.
    pub async fn mutate_shared_from<T>(
        &self,
        id: &TaskId,
        access: Access<'_>,
        fence: Option<&Claim>,
        mut latest: Option<Arc<Task>>,
        mut f: impl FnMut(&mut Draft) -> Result<T>,
    ) -> Result<(Arc<Task>, T)> {
        access.require(Permission::Write)?;
        for _ in 0..MAX_CAS_RETRIES {
            let current = match latest.take() {
                Some(t) if t.id == *id => t,
                _ => self
                    .store
                    .get_shared(id)
                    .await?
                    .ok_or(CoreError::NotFound)?,
            };
            if !access.allows(&current) {
                return Err(CoreError::NotFound);
            }
            let mut draft = Draft::new(Task::clone(&current), Utc::now());
            drop(current);
            let out = f(&mut draft)?;
            if draft.events.is_empty() && draft.queue == QueueOp::Keep {
                return Ok((Arc::new(draft.task), out));
            }
            let (commit, transitions) = draft.into_commit(fence.cloned())?;
            let task = commit.task.clone();
            match self.store.commit(commit).await {
                Ok(()) => {
                    for (from, to) in transitions {
                        metrics::counter!("taskwire_transitions_total",
                            "from" => from.as_str(), "to" => to.as_str())
                        .increment(1);
                    }
                    return Ok((task, out));
                }
                Err(StoreError::Conflict) => {
                    tokio::task::yield_now().await;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::Contention)
    }

    /// Creates a task (idempotent on tenant, owner and the first message's id) and
    /// queues its first turn. Returns once the task is durably stored.
    pub async fn create(&self, caller: &Caller, req: CreateTask) -> Result<Created> {
        self.create_with(caller, req, false).await
    }

    /// [`TaskService::create`], with [`Created::watch`] set when the task is new:
    /// for a caller that waits for the task right after creating it.
    pub async fn create_watched(&self, caller: &Caller, req: CreateTask) -> Result<Created> {
        self.create_with(caller, req, true).await
    }

    async fn create_with(
        &self,
        caller: &Caller,
        req: CreateTask,
        watched: bool,
    ) -> Result<Created> {
        caller.require(Permission::Write)?;
        let mut message = req.message;
        self.check_input(caller, &message)?;
        self.limits.check_metadata("metadata", &req.metadata)?;
        if let Some(c) = &req.context_id {
            validate_external_id("contextId", c)?;
        }
        let responsible_user = match &req.parent {
            Some(pid) => {
                // Only a task the caller may read can be a parent: another
                // principal's task is "not found", exactly as a random id is (no
                // existence oracle), and lends nobody its responsible user.
                let parent = self
                    .store
                    .get_shared(pid)
                    .await?
                    .ok_or(CoreError::NotFound)?;
                if !Access::Participant(caller).allows(&parent) {
                    return Err(CoreError::NotFound);
                }
                parent.responsible_user.clone()
            }
            None => caller.principal.clone(),
        };
        let now = Utc::now();
        message.received_at = Some(now);
        message.committed_at = None;
        let key = IdempotencyKey {
            tenant: caller.tenant.clone(),
            owner: caller.principal.clone(),
            message_id: message.message_id.clone(),
        };
        let id = TaskId::new();
        let context_id = req.context_id.unwrap_or_else(random_id);
        let ttl = req.ttl.or(self.defaults.ttl);
        let task = Task {
            id: id.clone(),
            context_id: context_id.clone(),
            tenant: caller.tenant.clone(),
            owner: caller.principal.clone(),
            responsible_user,
            parent_task: req.parent,
            agent: self.agent_name.to_string(),
            state: TaskState::Submitted,
            status_message: None,
            state_changed_at: now,
            terminal_cause: None,
            error: None,
            created_at: now,
            updated_at: now,
            version: 1,
            last_seq: 2,
            history: vec![message.clone()],
            artifacts: Vec::new(),
            metadata: req.metadata,
            agent_state: None,
            input_requests: BTreeMap::new(),
            input_answers: BTreeMap::new(),
            answered_keys: Default::default(),
            superseded_keys: Default::default(),
            pending_auth: Vec::new(),
            granted_providers: Default::default(),
            pending_reviews: Vec::new(),
            review_decisions: BTreeMap::new(),
            turns: 0,
            turn_open: false,
            turn_input: Vec::new(),
            ttl_ms: ttl.map(millis),
            expires_at: None,
            idle_lifespan_ms: self.defaults.idle_lifespan.map(millis),
            idle_expires_at: None,
        };
        let ev = |seq, kind| Event {
            task_id: id.clone(),
            seq,
            version: 1,
            at: now,
            kind,
        };
        let events = vec![
            ev(
                1,
                EventKind::Created {
                    context_id,
                    agent: self.agent_name.to_string(),
                },
            ),
            ev(
                2,
                EventKind::Message {
                    message: Box::new(message),
                    queued: true,
                },
            ),
        ];
        // Watch before storing, so that nothing committed after the create is
        // missed by a caller that waits from the created snapshot.
        let watch = watched.then(|| self.store.hub().watch(&task.id));
        // With a free turn slot here, the first turn is leased to this node as the
        // task is stored, and starts at once.
        let local = self.local_slot();
        let asked = std::time::Instant::now();
        let (outcome, claim) = match &local {
            Some((d, _)) => {
                let (worker, lease) = d.lease();
                self.store
                    .create_claimed(task, events, Some(key), worker, lease, Utc::now())
                    .await?
            }
            None => (
                self.store.create(task, events, Some(key), true).await?,
                None,
            ),
        };
        match outcome {
            CreateOutcome::Created(task) => {
                if let (Some((d, slot)), Some(claim)) = (local, claim) {
                    let (_, lease) = d.lease();
                    if asked.elapsed() < lease / 3 {
                        d.run(claim, task.clone(), slot);
                    } else {
                        // The create was answered late (a slow or cut-off
                        // database): its lease, counted from before the write,
                        // may lapse before the turn's first renewal, and a reaper
                        // would hand the turn to another node while this one
                        // runs it. It is given back to the queue instead, for
                        // exactly one claimer (the release is fenced by the
                        // lease's epoch).
                        drop(slot);
                        metrics::counter!("taskwire_late_creates_requeued_total").increment(1);
                        tracing::warn!(task = %task.id, took = ?asked.elapsed(),
                            "create answered late; its first turn goes back to the queue");
                        let store = self.store.clone();
                        tokio::spawn(async move {
                            if let Err(e) = store.release(&claim).await {
                                tracing::warn!(task = %claim.task_id, error = %e,
                                    "releasing a late create's lease failed; the reaper will hand it over");
                            }
                        });
                    }
                }
                metrics::counter!("taskwire_tasks_created_total").increment(1);
                Ok(Created {
                    task,
                    created: true,
                    watch,
                })
            }
            CreateOutcome::Existing(task) => Ok(Created {
                task,
                created: false,
                watch: None,
            }),
        }
    }

    /// Sends input to a task. An interrupted task that waits only for input resumes;
    /// otherwise the message is queued for the next turn (a turn in flight is never
    /// interrupted). A terminal task refuses it.
    pub async fn send_input(&self, caller: &Caller, id: &TaskId, message: Message) -> Result<Task> {
        self.check_input(caller, &message)?;
        let (task, ()) = self
            .mutate(id, Access::Owner(caller), None, |d| {
                d.ensure_active()?;
                if d.task.history.len() >= self.limits.max_history {
                    return Err(CoreError::TooLarge {
                        what: "history".into(),
                        size: d.task.history.len() + 1,
                        limit: self.limits.max_history,
                    });
                }
                if d.task
                    .history
                    .iter()
                    .any(|m| m.message_id == message.message_id)
                {
                    // A retried send of the same message: already stored, nothing to do.
                    return Ok(());
                }
                let mut m = message.clone();
                m.received_at = Some(d.now());
                m.committed_at = None;
                // A message may carry a provider authorisation.
                let grants = authorisations_in(&m);
                d.task.history.push(m.clone());
                d.record(EventKind::Message {
                    message: Box::new(m),
                    queued: true,
                });
                for p in grants {
                    grant_in(d, &p);
                }
                if d.task.state.is_interrupted()
                    && d.task.pending_reviews.is_empty()
                    && d.task.pending_auth.is_empty()
                {
                    // The message answers whatever was asked: open requests are superseded.
                    let open: Vec<String> = std::mem::take(&mut d.task.input_requests)
                        .into_keys()
                        .collect();
                    if !open.is_empty() {
                        d.task.superseded_keys.extend(open.iter().cloned());
                        d.record(EventKind::InputSuperseded { keys: open });
                    }
                    d.resume()?;
                } else {
                    d.settle_wait()?;
                }
                Ok(())
            })
            .await?;
        Ok(task)
    }

    /// Answers input requests by key. Unknown, answered and superseded keys are ignored;
    /// partial answers are stored. The task resumes once nothing is pending.
    pub async fn answer_inputs(
        &self,
        caller: &Caller,
        id: &TaskId,
        answers: BTreeMap<String, InputResponse>,
    ) -> Result<Answered> {
        for (k, r) in &answers {
            validate_external_id("inputResponses key", k)?;
            if let Some(c) = &r.content {
                let size = crate::types::json_size(c);
                if size > self.limits.max_message_bytes {
                    return Err(CoreError::TooLarge {
                        what: format!("inputResponses[{k}]"),
                        size,
                        limit: self.limits.max_message_bytes,
                    });
                }
            }
            if r.action == InputAction::Accept && r.content.is_none() {
                return Err(CoreError::InvalidInput {
                    field: format!("inputResponses[{k}].content"),
                    reason: "an accepted answer needs content".into(),
                });
            }
        }
        let (task, (applied, ignored)) = self
            .mutate(id, Access::Owner(caller), None, |d| {
                d.ensure_active()?;
                let mut applied = Vec::new();
                let mut ignored = Vec::new();
                for (k, r) in &answers {
                    if d.task.input_requests.remove(k).is_some() {
                        d.task.input_answers.insert(k.clone(), r.clone());
                        d.task.answered_keys.insert(k.clone());
                        applied.push(k.clone());
                    } else {
                        ignored.push(k.clone());
                    }
                }
                if !applied.is_empty() {
                    d.record(EventKind::InputAnswered {
                        keys: applied.clone(),
                    });
                    d.settle_wait()?;
                }
                Ok((applied, ignored))
            })
            .await?;
        Ok(Answered {
            task,
            applied,
            ignored,
        })
    }

    /// Grants a provider authorisation: every operation waiting on it resumes at once.
    /// Granting a provider nothing waits for is a no-op.
    pub async fn grant_auth(
        &self,
        access: Access<'_>,
        id: &TaskId,
        provider: &str,
    ) -> Result<Task> {
        validate_external_id("provider", provider)?;
        let (task, ()) = self
            .mutate(id, access, None, |d| {
                d.ensure_active()?;
                grant_in(d, provider);
                d.settle_wait()
            })
            .await?;
        Ok(task)
    }

    /// Decides a review. Only its reviewer may; anyone else gets "not found". A
    /// rejection ends the task rejected; an approval resumes it once nothing else waits.
    pub async fn decide_review(
        &self,
        caller: &Caller,
        id: &TaskId,
        review_id: &str,
        decision: ReviewDecision,
    ) -> Result<Task> {
        let (task, ()) = self
            .mutate(id, Access::Reviewer(caller), None, |d| {
                d.ensure_active()?;
                let Some(pos) = d
                    .task
                    .pending_reviews
                    .iter()
                    .position(|r| r.id == review_id && r.reviewer == caller.principal)
                else {
                    return Err(CoreError::NotFound);
                };
                d.task.pending_reviews.remove(pos);
                d.task
                    .review_decisions
                    .insert(review_id.to_string(), decision);
                d.record(EventKind::ReviewDecided {
                    review_id: review_id.to_string(),
                    decision,
                    by: caller.principal.clone(),
                });
                match decision {
                    ReviewDecision::Reject => d.transition_with(
                        TaskState::Rejected,
                        Some(Message::agent_text("rejected by reviewer")),
                        Some(TerminalCause::Rejected),
                        Some(TaskError {
                            code: "rejected".into(),
                            message: "rejected by reviewer".into(),
                        }),
                    ),
                    ReviewDecision::Approve => d.settle_wait(),
                }
            })
            .await?;
        Ok(task)
    }

    /// Cancels a task. Idempotent on a canceled task; a task that ended otherwise
    /// cannot be canceled. A running turn sees its cancellation token fire.
    pub async fn cancel(
        &self,
        access: Access<'_>,
        id: &TaskId,
        reason: Option<String>,
    ) -> Result<Task> {
        let (task, ()) = self
            .mutate(id, access, None, |d| match d.task.state {
                TaskState::Canceled => Ok(()),
                s if s.is_terminal() => Err(CoreError::NotCancelable { state: s }),
                _ => d.transition_with(
                    TaskState::Canceled,
                    reason.clone().map(Message::agent_text),
                    Some(TerminalCause::Canceled),
                    None,
                ),
            })
            .await?;
        Ok(task)
    }

    /// Interrupts the turn in flight (host lifecycle control). The task stops
    /// working and waits for its next input: input-required with nothing pending.
    /// Its queue entry is removed, so the running turn loses its lease: the
    /// supervisor fires the turn's cancellation token and nothing more the turn
    /// emits is committed (what it already committed stays). Input queued during
    /// the turn stays queued and is handed to the turn the next input starts. Only
    /// a working task can be interrupted (`WrongState` otherwise, `Terminal` when
    /// it has ended).
    pub async fn interrupt_turn(
        &self,
        access: Access<'_>,
        id: &TaskId,
        reason: Option<String>,
    ) -> Result<Task> {
        let (task, ()) = self
            .mutate(id, access, None, |d| {
                d.ensure_active()?;
                if d.task.state != TaskState::Working {
                    return Err(CoreError::WrongState {
                        what: "interrupting a turn".into(),
                        state: d.task.state,
                    });
                }
                d.task.turn_open = false;
                d.transition(
                    TaskState::InputRequired,
                    reason.clone().map(Message::agent_text),
                )?;
                d.set_queue(QueueOp::Remove);
                Ok(())
            })
            .await?;
        Ok(task)
    }

    /// Ends a task whose inactivity deadline passed (used by the sweeper).
    pub async fn expire_idle(&self, id: &TaskId) -> Result<Task> {
        let (task, ()) = self
            .mutate(id, Access::System, None, |d| {
                let due = d.task.idle_expires_at.is_some_and(|e| e <= d.now());
                if d.task.state.is_terminal() || !due {
                    return Ok(());
                }
                d.transition_with(
                    TaskState::Canceled,
                    Some(Message::agent_text("inactivity lifespan expired")),
                    Some(TerminalCause::Expired),
                    None,
                )
            })
            .await?;
        Ok(task)
    }

    /// Reads a task.
    pub async fn get(&self, caller: &Caller, id: &TaskId) -> Result<Task> {
        self.get_shared(caller, id).await.map(Arc::unwrap_or_clone)
    }

    /// Reads one of the caller's tasks as the store's shared snapshot (no copy): for
    /// handlers that only render it.
    pub async fn get_shared(&self, caller: &Caller, id: &TaskId) -> Result<Arc<Task>> {
        caller.require(Permission::Read)?;
        let t = self
            .store
            .get_shared(id)
            .await?
            .ok_or(CoreError::NotFound)?;
        if t.is_visible_to(caller) {
            Ok(t)
        } else {
            Err(CoreError::NotFound)
        }
    }

    /// Reads a task as a reviewer may see it (owner, or reviewer of a pending review).
    pub async fn get_as(&self, access: Access<'_>, id: &TaskId) -> Result<Task> {
        access.require(Permission::Read)?;
        let t = self.store.get(id).await?.ok_or(CoreError::NotFound)?;
        if access.allows(&t) {
            Ok(t)
        } else {
            Err(CoreError::NotFound)
        }
    }

    /// Lists the caller's tasks with filters and an opaque cursor.
    pub async fn list(&self, caller: &Caller, mut q: ListQuery) -> Result<ListPage> {
        caller.require(Permission::Read)?;
        if let Some(c) = &q.cursor {
            if decode_cursor(c).is_none() {
                return Err(CoreError::InvalidInput {
                    field: "pageToken".into(),
                    reason: "not a cursor this server issued".into(),
                });
            }
        }
        if let Some(c) = &q.context_id {
            validate_external_id("contextId", c)?;
        }
        if q.page_size == 0 {
            q.page_size = 50;
        }
        if q.page_size > 1000 {
            return Err(CoreError::InvalidInput {
                field: "pageSize".into(),
                reason: "at most 1000".into(),
            });
        }
        q.tenant = caller.tenant.clone();
        q.owner = Some(caller.principal.clone());
        q.reviewer = None;
        Ok(self.store.list(&q).await?)
    }

    /// Lists tasks with a pending review addressed to the caller.
    pub async fn list_reviews(
        &self,
        caller: &Caller,
        page_size: usize,
        cursor: Option<String>,
    ) -> Result<ListPage> {
        caller.require(Permission::Read)?;
        if let Some(c) = &cursor {
            if decode_cursor(c).is_none() {
                return Err(CoreError::InvalidInput {
                    field: "cursor".into(),
                    reason: "not a cursor this server issued".into(),
                });
            }
        }
        let q = ListQuery {
            tenant: caller.tenant.clone(),
            reviewer: Some(caller.principal.clone()),
            page_size: page_size.clamp(1, 1000),
            cursor,
            ..ListQuery::default()
        };
        Ok(self.store.list(&q).await?)
    }

    /// Reads the event log after `after_seq`.
    pub async fn events(
        &self,
        caller: &Caller,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        self.get(caller, id).await?;
        Ok(self.store.events(id, after_seq, limit).await?)
    }

    /// Reads the event log after `after_seq` with the given access.
    pub async fn events_as(
        &self,
        access: Access<'_>,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        access.require(Permission::Read)?;
        let t = self
            .store
            .get_shared(id)
            .await?
            .ok_or(CoreError::NotFound)?;
        if !access.allows(&t) {
            return Err(CoreError::NotFound);
        }
        Ok(self.store.events(id, after_seq, limit).await?)
    }

    /// Subscribes to a task's log: every event after `after_seq`, then live events,
    /// with no gap and no duplicate. The stream ends after the terminal status event.
    pub async fn subscribe(
        &self,
        access: Access<'_>,
        id: &TaskId,
        after_seq: u64,
    ) -> Result<EventStream> {
        access.require(Permission::Read)?;
        // Watch before reading so that nothing committed in between is missed.
        let rx = self.store.hub().watch(id);
        let task = self
            .store
            .get_shared(id)
            .await?
            .ok_or(CoreError::NotFound)?;
        if !access.allows(&task) {
            return Err(CoreError::NotFound);
        }
        let caller = match access {
            Access::Owner(c) | Access::Reviewer(c) | Access::Participant(c) => Some(c),
            Access::System => None,
        };
        // The snapshot read after the watch began: a task that was not terminal
        // then needs no second look, and one that ended before `after_seq` ends
        // the stream at once.
        let ended = task.state.is_terminal().then_some(task.last_seq);
        drop(task);
        let stream = crate::subscribe::stream(self.store.clone(), id.clone(), after_seq, rx, ended);
        match caller {
            None => Ok(stream),
            Some(c) => {
                let permit = self
                    .streams
                    .open(c, self.limits.max_streams_per_principal.max(1))?;
                Ok(Box::pin(futures::StreamExt::map(stream, move |e| {
                    let _open = &permit;
                    e
                })))
            }
        }
    }

    /// Waits until `pred` holds for the task (checked after every change), or the
    /// task is terminal, or `timeout` passes; returns the latest snapshot.
    pub async fn wait_until(
        &self,
        caller: &Caller,
        id: &TaskId,
        timeout: Duration,
        pred: impl Fn(&Task) -> bool,
    ) -> Result<Task> {
        self.wait_until_shared(caller, id, timeout, pred)
            .await
            .map(Arc::unwrap_or_clone)
    }

    /// Waits until the task's state satisfies `want`, or the task is terminal, or
    /// `timeout` passes; returns the latest snapshot (shared with the store).
    ///
    /// [`wait_until_shared`](Self::wait_until_shared) for a condition on the state
    /// alone: a change whose wake-up carries a state that does not satisfy it (a
    /// task moving to working, an artifact appended) is not read from the store.
    pub async fn wait_for_state_shared(
        &self,
        caller: &Caller,
        id: &TaskId,
        timeout: Duration,
        want: impl Fn(TaskState) -> bool,
    ) -> Result<Arc<Task>> {
        let rx = self.store.hub().watch(id);
        let t = self.get_shared(caller, id).await?;
        self.wait_for_state_from(caller, t, rx, timeout, want).await
    }

    /// [`wait_for_state_shared`](Self::wait_for_state_shared) from a snapshot the
    /// caller holds, `task`, and a watch of the task that began before `task`
    /// was read (as [`Created::watch`]): no read to start with.
    pub async fn wait_for_state_from(
        &self,
        caller: &Caller,
        task: Arc<Task>,
        mut rx: tokio::sync::watch::Receiver<TaskWake>,
        timeout: Duration,
        want: impl Fn(TaskState) -> bool,
    ) -> Result<Arc<Task>> {
        caller.require(Permission::Read)?;
        let done = |s: TaskState| want(s) || s.is_terminal();
        let deadline = tokio::time::Instant::now() + timeout;
        if !task.is_visible_to(caller) {
            return Err(CoreError::NotFound);
        }
        if done(task.state) {
            return Ok(task);
        }
        let id = task.id.clone();
        let id = &id;
        let mut seen = task.last_seq;
        drop(task);
        loop {
            // A wake-up from another node can be lost (a reconnect of its
            // channel): read again now and then without one.
            let recheck = (tokio::time::Instant::now() + RECHECK_EVERY).min(deadline);
            let changed = tokio::time::timeout_at(recheck, rx.changed()).await;
            match changed {
                Err(_) if tokio::time::Instant::now() >= deadline => {
                    return self.get_shared(caller, id).await
                }
                Err(_) => {}
                Ok(Err(_)) => {
                    // The hub dropped the channel; fall back to polling.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    rx = self.store.hub().watch(id);
                }
                Ok(Ok(())) => {
                    let wake = *rx.borrow_and_update();
                    if wake.last_seq <= seen || !done(wake.state) {
                        continue;
                    }
                    if let Some(t) = self.store.committed_snapshot(id, wake.last_seq) {
                        if !t.is_visible_to(caller) {
                            return Err(CoreError::NotFound);
                        }
                        return Ok(t);
                    }
                }
            }
            let t = self.get_shared(caller, id).await?;
            if done(t.state) {
                return Ok(t);
            }
            seen = t.last_seq;
        }
    }

    /// [`wait_until`](Self::wait_until) answering the store's shared snapshot (no
    /// copy): for handlers that only render the task.
    pub async fn wait_until_shared(
        &self,
        caller: &Caller,
        id: &TaskId,
        timeout: Duration,
        pred: impl Fn(&Task) -> bool,
    ) -> Result<Arc<Task>> {
        let mut rx = self.store.hub().watch(id);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let t = self.get_shared(caller, id).await?;
            if pred(&t) || t.state.is_terminal() {
                return Ok(t);
            }
            drop(t);
            let changed = tokio::time::timeout_at(deadline, rx.changed()).await;
            match changed {
                Err(_) => return self.get_shared(caller, id).await,
                Ok(Err(_)) => {
                    // The hub dropped the channel; fall back to polling.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    rx = self.store.hub().watch(id);
                }
                Ok(Ok(())) => {}
            }
        }
    }
}

/// Providers a message says were authorised: `metadata.authorization.provider`
/// (one) or `metadata.authorization.providers` (several).
fn authorisations_in(m: &Message) -> Vec<String> {
    let Some(a) = m.metadata.get("authorization") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(p) = a.get("provider").and_then(|v| v.as_str()) {
        out.push(p.to_string());
    }
    if let Some(ps) = a.get("providers").and_then(|v| v.as_array()) {
        out.extend(ps.iter().filter_map(|v| v.as_str().map(str::to_string)));
    }
    out
}

fn grant_in(d: &mut Draft, provider: &str) {
    let before = d.task.pending_auth.len();
    d.task.pending_auth.retain(|a| a.provider != provider);
    if d.task.pending_auth.len() != before {
        d.task.granted_providers.insert(provider.to_string());
        d.record(EventKind::AuthGranted {
            provider: provider.to_string(),
        });
    }
}

/// Plans a turn on a claimed task without changing it: returns the input the turn
/// sees and the ids of queued messages it takes. A re-run after a lost lease replays
/// the input of the turn that did not finish.
pub(crate) fn plan_turn(task: &Task) -> Result<(Vec<Message>, Vec<String>)> {
    match task.state {
        s if s.is_terminal() => return Err(CoreError::Terminal { state: s }),
        TaskState::Submitted | TaskState::Working => {}
        s => {
            return Err(CoreError::WrongState {
                what: "starting a turn".into(),
                state: s,
            })
        }
    }
    let new_ids: Vec<String> = task.queued_input().map(|m| m.message_id.clone()).collect();
    let input = task
        .history
        .iter()
        .filter(|m| {
            (task.turn_open && task.turn_input.contains(&m.message_id))
                || new_ids.contains(&m.message_id)
        })
        .cloned()
        .collect();
    Ok((input, new_ids))
}

/// Applies the start of a planned turn: working state, the planned input committed.
pub(crate) fn apply_begin(d: &mut Draft, new_ids: &[String]) -> Result<()> {
    d.ensure_active()?;
    if d.task.state == TaskState::Submitted {
        d.transition(TaskState::Working, None)?;
    }
    if d.task.state != TaskState::Working {
        return Err(CoreError::WrongState {
            what: "starting a turn".into(),
            state: d.task.state,
        });
    }
    let now = d.now();
    let mut committed = Vec::new();
    for m in d.task.history.iter_mut() {
        if m.committed_at.is_none() && new_ids.contains(&m.message_id) {
            m.committed_at = Some(now);
            committed.push(m.message_id.clone());
        }
    }
    if d.task.turn_open {
        d.task.turn_input.extend(committed.iter().cloned());
    } else {
        d.task.turns += 1;
        d.task.turn_open = true;
        d.task.turn_input = committed.clone();
        let turn = d.task.turns;
        d.record(EventKind::TurnStarted { turn });
    }
    if !committed.is_empty() {
        d.record(EventKind::InputCommitted {
            message_ids: committed,
        });
    }
    Ok(())
}
