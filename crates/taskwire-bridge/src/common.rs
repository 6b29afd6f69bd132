//! What every upstream executor shares: the cancel watcher, and the decision
//! whether a stopped turn was a downstream cancel.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use taskwire_client::ClientError;
use taskwire_core::{Access, CoreError, TaskId, TaskService, TaskState, TaskStore, TurnOutcome};

use crate::error::BridgeError;
use tracing::{debug, info, warn};

use crate::many::{owns, Route};
use crate::options::{DEFAULT_CATCH_UP_RECORDS, DEFAULT_MAX_LINK_RECORDS, LINK_KEY};

/// Aborts the watcher task when the last agent clone goes.
#[derive(Debug)]
pub(crate) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    /// Spawns `fut` on the current runtime, aborted when this is dropped.
    pub(crate) fn spawn(fut: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(tokio::spawn(fut))
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The upstream task id of a downstream task's agent state, when its link is
/// of `protocol`.
pub(crate) fn linked_task(state: Option<&Value>, protocol: &str) -> Option<String> {
    let link = state?.get(LINK_KEY)?;
    if link.get("protocol").and_then(Value::as_str) != Some(protocol) {
        return None;
    }
    link.get("taskId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Starts (on the current tokio runtime) a watcher that cancels the upstream
/// task of every linked downstream task that ends canceled (a downstream
/// cancel or an inactivity expiry), through `cancel`. A turn that was running
/// cancels upstream itself too; a second cancel is harmless (refused by an
/// upstream whose task has ended, and only logged).
///
/// Cancels made while no bridge ran are not lost: when a linked task starts
/// waiting (for input, an authorisation, a review: the long waits, with the
/// upstream task held open), the watcher stores an `upstream_link` record of
/// it, and deletes it when the task ends. On start the watcher first claims
/// the records left behind, cancels the upstream tasks of those whose
/// downstream task was canceled meanwhile, and deletes the records of ended
/// tasks.
///
/// With several upstreams, each executor's watcher has its `route` and acts
/// only on the tasks that run on its member.
pub(crate) fn watch_cancels<F, Fut>(
    store: Arc<dyn TaskStore>,
    protocol: &'static str,
    route: Option<Route>,
    bounds: LinkBounds,
    cancel: F,
) -> Watcher
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ClientError>> + Send + 'static,
{
    let records = Arc::new(LinkRecords {
        store: store.clone(),
        protocol,
        recorded: std::sync::Mutex::new(std::collections::HashMap::new()),
        running: std::sync::Mutex::new(std::collections::HashMap::new()),
        max_tracked: bounds.tracked,
    });
    let recorded = records.clone();
    let task = AbortOnDrop(tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        let recorded = &recorded;
        // Subscribed before the catch-up, so nothing falls between the two.
        let mut rx = store.hub().firehose();
        catch_up_cancels(
            &store,
            protocol,
            route.as_ref(),
            recorded,
            bounds.catch_up,
            &cancel,
        )
        .await;
        let mut tick = tokio::time::interval(RECORD_RUNNING_AFTER);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let got = tokio::select! {
                got = rx.recv() => got,
                _ = tick.tick() => {
                    recorded.record_long_turns().await;
                    continue;
                }
            };
            let (id, state) = match got {
                Ok((id, wake)) => (id, wake.state),
                Err(RecvError::Lagged(n)) => {
                    warn!(
                        missed = n,
                        "the cancel watcher fell behind; some upstream tasks may not be canceled"
                    );
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            let waiting = state.is_interrupted();
            if state != TaskState::Canceled && !waiting {
                if state.is_terminal() && recorded.remove(&id) {
                    forget_link(&store, &id).await;
                }
                continue;
            }
            let task = match store.get_shared(&id).await {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    warn!(task = %id, error = %e, "reading a canceled or waiting task failed");
                    continue;
                }
            };
            if !owns(route.as_ref(), &task) {
                continue;
            }
            let Some(upstream) = linked_task(task.agent_state.as_ref(), protocol) else {
                continue;
            };
            if waiting {
                recorded.remember(&Linked::of(&task, &upstream)).await;
                continue;
            }
            send_cancel(&cancel, &id, &upstream).await;
            recorded.remove(&id);
            forget_link(&store, &id).await;
        }
    }));
    Watcher {
        _task: task,
        records,
    }
}

/// A running cancel watcher ([`watch_cancels`]; stopped when dropped) and its
/// executor's `upstream_link` records.
#[derive(Debug)]
pub(crate) struct Watcher {
    _task: AbortOnDrop,
    /// The records of the executor's tasks.
    pub(crate) records: Arc<LinkRecords>,
}

/// How long a turn runs on its upstream task before the task's
/// `upstream_link` record is stored (see [`LinkRecords::running`]).
pub(crate) const RECORD_RUNNING_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// A linked downstream task, as its `upstream_link` record needs it.
#[derive(Clone, Debug)]
pub(crate) struct Linked {
    id: TaskId,
    tenant: String,
    owner: String,
    upstream: String,
}

impl Linked {
    fn of(task: &taskwire_core::Task, upstream: &str) -> Self {
        Self {
            id: task.id.clone(),
            tenant: task.tenant.clone(),
            owner: task.owner.clone(),
            upstream: upstream.to_string(),
        }
    }
}

/// The `upstream_link` records of one executor's tasks: stored when a linked
/// task waits, or when its turn has run upstream for [`RECORD_RUNNING_AFTER`]
/// (both by the watcher, which looks at the running turns once a
/// [`RECORD_RUNNING_AFTER`]), and deleted by the watcher when the task ends.
/// This process remembers which it stored (and the upstream task each
/// names), to delete them, and to store one again when a later turn links
/// another upstream task.
pub(crate) struct LinkRecords {
    store: Arc<dyn TaskStore>,
    protocol: &'static str,
    recorded: std::sync::Mutex<std::collections::HashMap<TaskId, String>>,
    /// The linked turns running now, since when.
    running: std::sync::Mutex<std::collections::HashMap<TaskId, (Linked, std::time::Instant)>>,
    /// Most records kept track of ([`LinkBounds::tracked`]).
    max_tracked: usize,
}

impl std::fmt::Debug for LinkRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkRecords")
            .field("protocol", &self.protocol)
            .field("store", &self.store.kind())
            .finish_non_exhaustive()
    }
}

impl LinkRecords {
    fn remove(&self, id: &TaskId) -> bool {
        self.recorded
            .lock()
            .is_ok_and(|mut r| r.remove(id).is_some())
    }

    /// Notes a record of `id` naming upstream task `upstream` as stored;
    /// false when it was already, or beyond [`LinkBounds::tracked`].
    fn track(&self, id: &TaskId, upstream: &str) -> bool {
        self.recorded.lock().is_ok_and(|mut r| {
            let full = r.len() >= self.max_tracked;
            match r.get_mut(id) {
                Some(u) if u == upstream => false,
                Some(u) => {
                    *u = upstream.to_string();
                    true
                }
                None if !full => {
                    r.insert(id.clone(), upstream.to_string());
                    true
                }
                None => false,
            }
        })
    }

    /// Stores the record of a linked task, unless stored already with the
    /// same upstream task.
    async fn remember(&self, linked: &Linked) {
        if !self.track(&linked.id, &linked.upstream) {
            return;
        }
        if !remember_link(&self.store, linked, self.protocol).await {
            self.remove(&linked.id);
        }
    }

    /// Notes that `task`'s turn runs on upstream task `upstream`, until the
    /// returned guard is dropped with the turn. A turn still running after
    /// [`RECORD_RUNNING_AFTER`] has its task's record stored, so that a cancel
    /// made while no bridge runs reaches that upstream task; turns that end
    /// sooner cost no store write (and no timer of their own).
    pub(crate) fn running(
        self: &Arc<Self>,
        task: &taskwire_core::Task,
        upstream: &str,
    ) -> RunningTurn {
        if let Ok(mut r) = self.running.lock() {
            r.insert(
                task.id.clone(),
                (Linked::of(task, upstream), std::time::Instant::now()),
            );
        }
        RunningTurn {
            records: self.clone(),
            id: task.id.clone(),
        }
    }

    /// Stores the records of the turns running for [`RECORD_RUNNING_AFTER`]
    /// or longer (each once).
    async fn record_long_turns(&self) {
        let now = std::time::Instant::now();
        let long: Vec<Linked> = match self.running.lock() {
            Ok(r) => r
                .values()
                .filter(|(_, since)| now.duration_since(*since) >= RECORD_RUNNING_AFTER)
                .map(|(l, _)| l.clone())
                .collect(),
            Err(_) => return,
        };
        for linked in long {
            self.remember(&linked).await;
        }
    }
}

/// A linked turn running (see [`LinkRecords::running`]).
pub(crate) struct RunningTurn {
    records: Arc<LinkRecords>,
    id: TaskId,
}

impl Drop for RunningTurn {
    fn drop(&mut self) {
        if let Ok(mut r) = self.records.running.lock() {
            r.remove(&self.id);
        }
    }
}

/// The bounds of one watcher's `upstream_link` records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LinkBounds {
    /// Most records kept track of at once.
    pub(crate) tracked: usize,
    /// Most records read by the start-up catch-up.
    pub(crate) catch_up: usize,
}

impl LinkBounds {
    /// The bounds `opts` asks for (each at least 1).
    pub(crate) fn of(opts: &crate::UpstreamOptions) -> Self {
        Self {
            tracked: opts.max_link_records.max(1),
            catch_up: opts.catch_up_records.max(1),
        }
    }
}

impl Default for LinkBounds {
    fn default() -> Self {
        Self {
            tracked: DEFAULT_MAX_LINK_RECORDS,
            catch_up: DEFAULT_CATCH_UP_RECORDS,
        }
    }
}

/// Records claimed by the start-up catch-up at once.
const CATCH_UP_BATCH: usize = 100;

async fn send_cancel<F, Fut>(cancel: &F, id: &TaskId, upstream: &str)
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<(), ClientError>>,
{
    match cancel(upstream.to_string()).await {
        Ok(()) => info!(task = %id, upstream_task = %upstream, "upstream task canceled"),
        Err(e) => debug!(task = %id, upstream_task = %upstream, error = %e,
            "the upstream refused the cancel (already ended?)"),
    }
}

/// Stores the `upstream_link` record of a linked task; true if stored.
async fn remember_link(store: &Arc<dyn TaskStore>, linked: &Linked, protocol: &str) -> bool {
    let record = taskwire_core::Record::new(
        taskwire_core::RecordKind::UpstreamLink,
        linked.id.as_str(),
        linked.tenant.clone(),
        linked.owner.clone(),
        serde_json::json!({ "protocol": protocol, "taskId": linked.upstream }),
    )
    .for_task(linked.id.clone())
    .active(true);
    match store.put_record(record, None).await {
        Ok(_) => {
            debug!(task = %linked.id, upstream_task = %linked.upstream, "upstream link record stored");
            true
        }
        Err(e) => {
            warn!(task = %linked.id, error = %e,
                "storing the upstream link record failed; a cancel made while the bridge is down will not reach the upstream");
            false
        }
    }
}

async fn forget_link(store: &Arc<dyn TaskStore>, id: &TaskId) {
    if let Err(e) = store
        .delete_record(taskwire_core::RecordKind::UpstreamLink, id.as_str())
        .await
    {
        debug!(task = %id, error = %e, "deleting the upstream link record failed");
    }
}

/// The start-up pass over the `upstream_link` records (see [`watch_cancels`]),
/// bounded: at most `limit` records, claimed [`CATCH_UP_BATCH`] at a time.
///
/// The watchers of one process take turns (one lock), and each holds every
/// record it claimed until its pass ends: the records of other protocols and
/// members, and of tasks still waiting, are given back only then, so that its
/// next claim returns records it has not seen, and the next watcher's claims
/// find them all free.
async fn catch_up_cancels<F, Fut>(
    store: &Arc<dyn TaskStore>,
    protocol: &str,
    route: Option<&Route>,
    records: &LinkRecords,
    limit: usize,
    cancel: &F,
) where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<(), ClientError>>,
{
    use taskwire_core::RecordKind;
    static TURNS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _turn = TURNS.lock().await;
    let member = route.map_or("", Route::name);
    let worker = format!("taskwire-bridge-{protocol}-{member}-{}", std::process::id());
    let (mut canceled, mut ended) = (0usize, 0usize);
    let mut held = Vec::new();
    let mut left = limit;
    while left > 0 {
        let batch = match store
            .claim_records(
                RecordKind::UpstreamLink,
                &worker,
                left.min(CATCH_UP_BATCH),
                std::time::Duration::from_secs(60),
                chrono::Utc::now(),
            )
            .await
        {
            Ok(b) => b,
            Err(e) => {
                warn!(error = %e, "reading the upstream link records failed; cancels made while the bridge was down are not sent");
                break;
            }
        };
        if batch.is_empty() {
            break;
        }
        left = left.saturating_sub(batch.len());
        for (record, lease) in batch {
            let ours = record.data.get("protocol").and_then(Value::as_str) == Some(protocol);
            let (Some(task_id), true) = (record.task_id.clone(), ours) else {
                // Another watcher's: given back when this pass ends.
                held.push(lease);
                continue;
            };
            let upstream = record
                .data
                .get("taskId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            match store.get_shared(&task_id).await {
                Ok(Some(t)) if !owns(route, &t) => held.push(lease),
                Ok(Some(t)) if t.state == TaskState::Canceled => {
                    if !upstream.is_empty() {
                        send_cancel(cancel, &task_id, &upstream).await;
                    }
                    canceled += 1;
                    forget_link(store, &task_id).await;
                }
                // Still waiting (or running again): the watcher and the turns
                // take it from here; its record stays, deleted by this
                // watcher when the task ends.
                Ok(Some(t)) if !t.state.is_terminal() => {
                    records.track(&t.id, &upstream);
                    held.push(lease);
                }
                Ok(_) => {
                    ended += 1;
                    forget_link(store, &task_id).await;
                }
                Err(e) => {
                    warn!(task = %task_id, error = %e, "reading a linked task failed");
                    held.push(lease);
                }
            }
        }
    }
    for lease in &held {
        let _ = store.release_record(lease).await;
    }
    if canceled + ended > 0 {
        info!(protocol, member, canceled, ended,
            "upstream link records left by an earlier run: upstream tasks of tasks canceled meanwhile canceled");
    }
}

/// Whether the downstream task `id` was canceled (so a stopped turn should
/// cancel upstream), as opposed to its worker losing it (a lease lapsed, a
/// restart), after which the next worker re-attaches. Without a store every
/// stop counts as a cancel.
pub(crate) async fn downstream_canceled(store: Option<&Arc<dyn TaskStore>>, id: &TaskId) -> bool {
    match store {
        Some(store) => match store.get_shared(id).await {
            Ok(Some(t)) => t.state == TaskState::Canceled,
            Ok(None) => false,
            Err(e) => {
                warn!(task = %id, error = %e, "reading the stopped task failed; not canceling upstream");
                false
            }
        },
        None => true,
    }
}

/// The upstream task ended canceled: the downstream task `id` ends canceled
/// too (failed, without a store to cancel it in). The turn's result is the
/// core's "already terminal" error, which ends the turn without a transition.
pub(crate) async fn end_canceled(
    store: Option<&Arc<dyn TaskStore>>,
    agent: &str,
    id: &TaskId,
) -> Result<TurnOutcome, BridgeError> {
    let Some(store) = store else {
        return Ok(TurnOutcome::Failed {
            message: "the upstream task was canceled".into(),
        });
    };
    let service = TaskService::new(store.clone(), agent.to_string());
    match service
        .cancel(
            Access::System,
            id,
            Some("the upstream task was canceled".into()),
        )
        .await
    {
        Ok(_) | Err(CoreError::NotCancelable { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    Err(BridgeError::Core(CoreError::Terminal {
        state: TaskState::Canceled,
    }))
}

/// A turn's result as the core takes it: an upstream's refusal (a JSON-RPC
/// or gRPC error answering a call) fails the task with the upstream's words,
/// which the caller needs to see; an upstream that could not be reached, did
/// not answer in time or answered with an HTTP error (after the retries the
/// call allows) fails it saying which, without the details (addresses, the
/// error chain), which are logged; other failures are internal errors, whose
/// details the core keeps out of the task.
pub(crate) fn turn_result(
    ctx: &taskwire_core::TurnContext,
    r: Result<TurnOutcome, BridgeError>,
) -> Result<TurnOutcome, taskwire_core::AgentError> {
    if let Err(BridgeError::Upstream { operation, source }) = &r {
        if let Some(what) = plain_failure(source) {
            warn!(task = %ctx.task().id, operation, error = %source,
                "the upstream call failed; the task fails");
            return Ok(TurnOutcome::Failed {
                message: format!("{what} ({operation})"),
            });
        }
    }
    match r {
        Err(BridgeError::Upstream { operation, source })
            if matches!(*source, ClientError::Rpc(_) | ClientError::Grpc { .. }) =>
        {
            Ok(TurnOutcome::Failed {
                message: format!("the upstream refused {operation}: {source}"),
            })
        }
        // An answer the bridge cannot use (too large, not the protocol's
        // shape) would be the same on a retry: the task fails, saying why.
        Err(BridgeError::Upstream { operation, source })
            if matches!(*source, ClientError::Decode { .. }) =>
        {
            Ok(TurnOutcome::Failed {
                message: format!("the upstream's answer to {operation} is unusable: {source}"),
            })
        }
        Err(BridgeError::Protocol(why)) => Ok(TurnOutcome::Failed {
            message: format!("the upstream broke the protocol: {why}"),
        }),
        other => Ok(other?),
    }
}

/// What a downstream caller is told of an upstream call that failed without
/// an answer of the protocol (None: an internal error).
fn plain_failure(e: &ClientError) -> Option<String> {
    Some(match e {
        ClientError::Connect(_) => "the upstream agent could not be reached".into(),
        ClientError::Timeout(_) => "the upstream agent did not answer in time".into(),
        ClientError::Transport(_) => "the connection to the upstream agent broke".into(),
        ClientError::StreamBroken { .. } => {
            "the upstream agent's stream broke and could not be resumed".into()
        }
        ClientError::Http { status, .. } => {
            format!("the upstream agent answered with HTTP status {status}")
        }
        _ => return None,
    })
}

/// Makes an upstream call, and makes it again while it fails in a way
/// `again` says is safe to repeat (see [`after_failed_send`]). `Ok(None)` when
/// the task is canceled during a wait.
pub(crate) async fn sent_again<T, F, Fut>(
    ctx: &taskwire_core::TurnContext,
    backoff: &taskwire_client::BackoffPolicy,
    operation: &'static str,
    again: fn(&ClientError) -> bool,
    mut call: F,
) -> Result<Option<T>, BridgeError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut attempt = 0;
    loop {
        match call().await {
            Ok(v) => return Ok(Some(v)),
            Err(e) => {
                match after_failed_send(ctx, backoff, &mut attempt, e, operation, again).await {
                    Ok(true) => {}
                    Ok(false) => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

/// After a failed upstream call: waits the backoff policy's delay and says
/// `true` (make it again) while `again(&e)` and fewer than its attempts were
/// made; `false` when the task is canceled during the wait; else the error
/// that ends the turn. `again` is [`ClientError::is_transient`] for an A2A
/// send (sent again with the same message id) and
/// [`ClientError::is_unsent`] for a call that has no idempotency key (an MCP
/// `tools/call`, an AG-UI run), made again only when nothing of it reached
/// the upstream.
pub(crate) async fn after_failed_send(
    ctx: &taskwire_core::TurnContext,
    backoff: &taskwire_client::BackoffPolicy,
    attempt: &mut u32,
    e: ClientError,
    operation: &'static str,
    again: fn(&ClientError) -> bool,
) -> Result<bool, BridgeError> {
    let (wait, e) = retry_delay(backoff, attempt, e, operation, again)?;
    warn!(task = %ctx.task().id, error = %e, attempt = *attempt, retry_in = ?wait,
        "{operation} failed; sending it again");
    tokio::select! {
        _ = ctx.cancelled() => Ok(false),
        _ = tokio::time::sleep(wait) => Ok(true),
    }
}

/// Whether a failed upstream call is made again: the backoff policy's delay
/// before it (counting the attempt, and handing the error back for the log)
/// while `again(&e)` and fewer than the policy's attempts were made; else the
/// error that ends the turn.
fn retry_delay(
    backoff: &taskwire_client::BackoffPolicy,
    attempt: &mut u32,
    e: ClientError,
    operation: &'static str,
    again: fn(&ClientError) -> bool,
) -> Result<(std::time::Duration, ClientError), BridgeError> {
    if !again(&e) || *attempt >= backoff.max_attempts {
        return Err(BridgeError::Upstream {
            operation,
            source: Box::new(e),
        });
    }
    let wait = backoff.delay(*attempt);
    *attempt += 1;
    Ok((wait, e))
}

/// After a failed poll of an upstream task: the wait before the next one, or
/// (when the failure is not transient, or `failures` already reached the
/// policy's attempts) the error that ends the turn. Counts the failure.
pub(crate) fn after_failed_poll(
    backoff: &taskwire_client::BackoffPolicy,
    failures: &mut u32,
    e: ClientError,
    operation: &'static str,
    upstream_task: &str,
) -> Result<std::time::Duration, BridgeError> {
    let (d, e) = retry_delay(backoff, failures, e, operation, ClientError::is_transient)?;
    tracing::debug!(upstream_task = %upstream_task, error = %e, attempt = *failures,
        "{operation} failed; retrying");
    Ok(d)
}

/// The tool a downstream task calls, of `names` (its skill, or the one tool),
/// or the refusal of a task that names none of several.
pub(crate) fn chosen_tool(
    task: &taskwire_core::Task,
    names: &[String],
) -> Result<String, TurnOutcome> {
    match taskwire_vocab::upstream::mcp::tool_of_task(&task.metadata, names) {
        Some(t) => Ok(t.to_string()),
        None => Err(TurnOutcome::Rejected {
            reason: format!(
                "the upstream MCP server has several tools ({}): call one of them as an MCP tool, or bridge one with --upstream URL#tool",
                names.join(", ")
            ),
        }),
    }
}

/// The bridge's metric names.
pub mod metric {
    /// Histogram: latency of each call to an upstream (for a stream: until its
    /// response head), by `protocol` and `operation`.
    pub const REQUEST_SECONDS: &str = "taskwire_upstream_request_duration_seconds";
    /// Counter: calls to an upstream that failed, by `protocol` and `operation`.
    pub const ERRORS: &str = "taskwire_upstream_errors_total";
    /// Counter: turns that followed an existing upstream task instead of
    /// sending (re-runs after a restart or a lost lease), by `protocol`.
    pub const REATTACHMENTS: &str = "taskwire_upstream_reattachments_total";
}

/// Runs one upstream call, recording its latency and, if it fails, an error.
pub(crate) async fn timed<T>(
    protocol: &'static str,
    operation: &'static str,
    call: impl Future<Output = Result<T, ClientError>>,
) -> Result<T, ClientError> {
    let start = std::time::Instant::now();
    let r = call.await;
    metrics::histogram!(metric::REQUEST_SECONDS, "protocol" => protocol, "operation" => operation)
        .record(start.elapsed().as_secs_f64());
    if r.is_err() {
        metrics::counter!(metric::ERRORS, "protocol" => protocol, "operation" => operation)
            .increment(1);
    }
    r
}

/// Counts a re-attachment.
pub(crate) fn reattached(protocol: &'static str) {
    metrics::counter!(metric::REATTACHMENTS, "protocol" => protocol).increment(1);
}

/// How long a readiness answer is reused: `/readyz` is public, so a client
/// polling it fast makes at most one upstream call a second.
const READY_REUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// The last readiness probe of an upstream, reused for [`READY_REUSE`].
#[derive(Debug, Default)]
pub(crate) struct ReadyCache {
    last: tokio::sync::Mutex<Option<(std::time::Instant, Result<(), String>)>>,
}

impl ReadyCache {
    /// The upstream's readiness: the last answer if fresh, else `probe`'s
    /// (concurrent callers wait for one probe).
    pub(crate) async fn check<Fut>(&self, probe: impl FnOnce() -> Fut) -> Result<(), String>
    where
        Fut: Future<Output = Result<(), String>>,
    {
        let mut last = self.last.lock().await;
        if let Some((at, r)) = last.as_ref() {
            if at.elapsed() < READY_REUSE {
                return r.clone();
            }
        }
        let r = probe().await;
        *last = Some((std::time::Instant::now(), r.clone()));
        r
    }
}

/// Whether a probe's error still shows a server that answers (an A2A or
/// JSON-RPC error) rather than one that cannot be reached.
pub(crate) fn answered(e: &ClientError) -> bool {
    !e.is_transient() && matches!(e, ClientError::Rpc(_) | ClientError::Grpc { .. })
}

/// The number of the turn `task` is in: a re-run of a turn that had started
/// counts as the same turn (its upstream link names it), a new turn is the
/// next one.
pub(crate) fn turn_number(task: &taskwire_core::Task) -> u32 {
    if task.turn_open {
        task.turns
    } else {
        task.turns.saturating_add(1)
    }
}

/// The link of `protocol` stored in an agent state under [`LINK_KEY`], read
/// as `T` (`None` without one, or for another protocol's link).
pub(crate) fn read_link<T: serde::de::DeserializeOwned>(
    state: Option<&Value>,
    protocol: &str,
) -> Option<T> {
    let v = state?.get(LINK_KEY)?;
    if v.get("protocol").and_then(Value::as_str) != Some(protocol) {
        return None;
    }
    serde_json::from_value(v.clone()).ok()
}

/// One upstream question raised on the downstream task by [`raise`].
pub(crate) struct Raised {
    /// The upstream key (also the downstream input request key).
    pub(crate) key: String,
    /// For an authorisation: the downstream provider.
    pub(crate) provider: Option<String>,
    /// For a form: its schema.
    pub(crate) schema: Option<Value>,
}

/// Raises an upstream's questions on the downstream task: forms as input
/// requests of the same key, prompt and schema; URL elicitations and
/// authorisation interrupts as provider authorisations. `Ok(Err(outcome))`
/// fails the turn for a question the bridge does not carry (`what` names the
/// upstream's word for a question in the message); else what was raised and
/// the prompts, one per line.
pub(crate) fn raise(
    ctx: &taskwire_core::TurnContext,
    asks: Vec<taskwire_vocab::upstream::mcp::UpstreamAsk>,
    what: &str,
) -> Result<Result<(Vec<Raised>, String), TurnOutcome>, BridgeError> {
    use taskwire_vocab::upstream::mcp::UpstreamAsk;
    let mut raised = Vec::new();
    let mut prompts = Vec::new();
    for a in asks {
        match a {
            UpstreamAsk::Form {
                key,
                prompt,
                schema,
            } => {
                ctx.request_input(&key, &prompt, schema.clone())?;
                prompts.push(prompt);
                raised.push(Raised {
                    key,
                    provider: None,
                    schema: Some(schema),
                });
            }
            UpstreamAsk::Auth {
                key,
                provider,
                prompt,
                url,
            } => {
                let url = (!url.is_empty()).then_some(url);
                ctx.require_auth(&provider, &key, url.as_deref())?;
                prompts.push(prompt);
                raised.push(Raised {
                    key,
                    provider: Some(provider),
                    schema: None,
                });
            }
            UpstreamAsk::Unsupported { key, method } => {
                warn!(task = %ctx.task().id, key = %key, method,
                    "the upstream asked for something the bridge does not carry");
                return Ok(Err(TurnOutcome::Failed {
                    message: format!(
                        "the upstream asked for {method} ({what} {key}), which the bridge does not carry"
                    ),
                }));
            }
        }
    }
    Ok(Ok((raised, prompts.join("\n"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;
    use taskwire_core::{Caller, CreateTask, MemoryStore, Message};

    type Sent = Arc<Mutex<Vec<String>>>;

    /// A watcher of `route` whose cancels are recorded in `sent`.
    fn watcher(store: &Arc<dyn TaskStore>, route: Option<Route>, sent: &Sent) -> Watcher {
        bounded_watcher(store, route, sent, LinkBounds::default())
    }

    /// [`watcher`] with the record bounds `bounds`.
    fn bounded_watcher(
        store: &Arc<dyn TaskStore>,
        route: Option<Route>,
        sent: &Sent,
        bounds: LinkBounds,
    ) -> Watcher {
        let sent = sent.clone();
        watch_cancels(store.clone(), "a2a", route, bounds, move |id| {
            let sent = sent.clone();
            async move {
                sent.lock().unwrap_or_else(|e| e.into_inner()).push(id);
                Ok(())
            }
        })
    }

    fn sent(s: &Sent) -> Vec<String> {
        s.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A task on member `skill` linked to upstream task `upstream`, in
    /// INPUT_REQUIRED (the link state and the state written as a turn would).
    async fn linked(
        service: &TaskService,
        store: &Arc<dyn TaskStore>,
        skill: &str,
        upstream: &str,
    ) -> TaskId {
        let mut req = CreateTask::new(Message::user_text("hi"));
        req.metadata.insert("skill".into(), Value::from(skill));
        let t = service
            .create(&Caller::new("t", "alice"), req)
            .await
            .expect("create")
            .task;
        let mut next = (*t).clone();
        next.agent_state = Some(serde_json::json!({
            LINK_KEY: {"protocol": "a2a", "taskId": upstream, "turn": 1}
        }));
        next.state = TaskState::InputRequired;
        next.version = t.version + 1;
        store
            .commit(taskwire_core::store::Commit {
                task: Arc::new(next),
                expected_version: t.version,
                events: Vec::new(),
                queue: Default::default(),
                fence: None,
            })
            .await
            .expect("commit");
        t.id.clone()
    }

    /// The `upstream_link` records stored.
    async fn link_records(store: &Arc<dyn TaskStore>) -> u64 {
        store
            .count_records()
            .await
            .expect("count")
            .iter()
            .find(|(k, _)| *k == taskwire_core::RecordKind::UpstreamLink)
            .map_or(0, |(_, n)| *n)
    }

    /// Waits (at most 10 s) until `n` `upstream_link` records are stored.
    async fn until_records(store: &Arc<dyn TaskStore>, n: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while link_records(store).await < n {
            assert!(tokio::time::Instant::now() < deadline, "records not stored");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Cancels every task of `ids`.
    async fn cancel_all(service: &TaskService, ids: &[TaskId]) {
        for id in ids {
            service
                .cancel(Access::System, id, None)
                .await
                .expect("cancel");
        }
    }

    /// Lets the watchers just spawned subscribe to the store's changes.
    async fn started() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    async fn until(what: &str, f: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !f() {
            assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn each_member_cancels_only_its_own_tasks() {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store.clone(), "bridge".to_string());
        let routes = Route::all(vec!["a".into(), "b".into()]);
        let (sa, sb): (Sent, Sent) = Default::default();
        let _wa = watcher(&store, Some(routes[0].clone()), &sa);
        let _wb = watcher(&store, Some(routes[1].clone()), &sb);
        started().await;
        let on_a = linked(&service, &store, "a", "up-a").await;
        let on_b = linked(&service, &store, "b", "up-b").await;
        service
            .cancel(Access::System, &on_a, None)
            .await
            .expect("cancel a");
        service
            .cancel(Access::System, &on_b, None)
            .await
            .expect("cancel b");
        until("both cancels sent", || {
            sent(&sa).len() + sent(&sb).len() >= 2
        })
        .await;
        // A misrouted cancel would be sent in the same pass as the right one.
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(sent(&sa), vec!["up-a".to_string()]);
        assert_eq!(sent(&sb), vec!["up-b".to_string()]);
    }

    /// A record names the upstream task of the task's latest link: a later
    /// turn linked to another upstream task (an MCP tool called again)
    /// stores it again; the same link is stored once.
    #[tokio::test]
    async fn a_later_link_replaces_the_record() {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store.clone(), "bridge".to_string());
        let id = linked(&service, &store, "a", "up-1").await;
        let task = store.get_shared(&id).await.expect("get").expect("task");
        let records = LinkRecords {
            store: store.clone(),
            protocol: "a2a",
            recorded: std::sync::Mutex::new(std::collections::HashMap::new()),
            running: std::sync::Mutex::new(std::collections::HashMap::new()),
            max_tracked: DEFAULT_MAX_LINK_RECORDS,
        };
        let stored = || async {
            store
                .get_record(taskwire_core::RecordKind::UpstreamLink, id.as_str())
                .await
                .expect("get record")
                .map(|r| (r.data["taskId"].clone(), r.version))
        };
        records.remember(&Linked::of(&task, "up-1")).await;
        let first = stored().await.expect("stored");
        assert_eq!(first.0, "up-1");
        records.remember(&Linked::of(&task, "up-1")).await;
        assert_eq!(
            stored().await,
            Some(first.clone()),
            "the same link is not stored again"
        );
        records.remember(&Linked::of(&task, "up-2")).await;
        assert_eq!(stored().await.map(|s| s.0), Some(Value::from("up-2")));
    }

    /// The start-up catch-up of several watchers: every member finds the
    /// records of its tasks canceled while no bridge ran, however the claims
    /// of the watchers interleave, and records beyond one claim's batch.
    #[tokio::test]
    async fn every_member_catches_up_on_its_own_records() {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store.clone(), "bridge".to_string());
        let routes = Route::all(vec!["a".into(), "b".into()]);
        // A first run records the links of waiting tasks: b's several times
        // one claim's batch, so that a's claims (in record id order, which is
        // random) mostly find b's records first.
        let (sa, sb): (Sent, Sent) = Default::default();
        let n_b = 4 * CATCH_UP_BATCH;
        let n_a = 5;
        let mut ids = Vec::new();
        {
            let _wa = watcher(&store, Some(routes[0].clone()), &sa);
            let _wb = watcher(&store, Some(routes[1].clone()), &sb);
            started().await;
            for i in 0..n_b {
                ids.push(linked(&service, &store, "b", &format!("up-b{i}")).await);
            }
            for i in 0..n_a {
                ids.push(linked(&service, &store, "a", &format!("up-a{i}")).await);
            }
            until_records(&store, ids.len() as u64).await;
        }
        // No bridge runs: every task is canceled.
        cancel_all(&service, &ids).await;
        assert!(sent(&sa).is_empty() && sent(&sb).is_empty());
        // The bridge again: both watchers start at once.
        let _wa = watcher(&store, Some(routes[0].clone()), &sa);
        let _wb = watcher(&store, Some(routes[1].clone()), &sb);
        until("every cancel sent", || {
            sent(&sa).len() + sent(&sb).len() >= ids.len()
        })
        .await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        let want =
            |member: &str, n: usize| sorted((0..n).map(|i| format!("up-{member}{i}")).collect());
        assert_eq!(sorted(sent(&sa)), want("a", n_a));
        assert_eq!(sorted(sent(&sb)), want("b", n_b));
    }

    /// A watcher stores at most `tracked` records, and its start-up
    /// catch-up reads at most `catch_up` of them: the rest are read by the
    /// next start.
    #[tokio::test]
    async fn the_link_records_are_bounded() {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store.clone(), "bridge".to_string());
        let sent_at: Sent = Default::default();
        let mut ids = Vec::new();
        {
            let three = LinkBounds {
                tracked: 3,
                catch_up: 100,
            };
            let _w = bounded_watcher(&store, None, &sent_at, three);
            started().await;
            for i in 0..5 {
                ids.push(linked(&service, &store, "a", &format!("up-{i}")).await);
            }
            until_records(&store, 3).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert_eq!(link_records(&store).await, 3, "past the bound, none stored");
        }
        // Five records, from a watcher without the bound.
        {
            let _w = watcher(&store, None, &sent_at);
            started().await;
            for i in 5..7 {
                ids.push(linked(&service, &store, "a", &format!("up-{i}")).await);
            }
            until_records(&store, 5).await;
        }
        cancel_all(&service, &ids).await;
        assert!(sent(&sent_at).is_empty());
        // A start that reads two records cancels two upstream tasks.
        let (first, second): (Sent, Sent) = Default::default();
        let two = LinkBounds {
            tracked: 100,
            catch_up: 2,
        };
        let _w1 = bounded_watcher(&store, None, &first, two);
        until("two cancels sent", || sent(&first).len() >= 2).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(sent(&first).len(), 2, "{:?}", sent(&first));
        assert_eq!(link_records(&store).await, 3);
        // The next start reads the other three.
        let _w2 = watcher(&store, None, &second);
        until("the other cancels sent", || sent(&second).len() >= 3).await;
        let mut all = [sent(&first), sent(&second)].concat();
        all.sort();
        let recorded = ["up-0", "up-1", "up-2", "up-5", "up-6"];
        let mut want: Vec<String> = recorded.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(all, want);
    }
}
