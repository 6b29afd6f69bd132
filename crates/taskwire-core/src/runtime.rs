//! The runtime: a claim loop feeding a bounded pool of turns, lease renewal, a
//! reaper for lapsed leases, a sweeper for retention and inactivity, and draining
//! on shutdown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::agent::Agent;
use crate::error::{CoreError, Result};
use crate::ids::random_id;
use crate::service::{plan_turn, Dispatch, TaskService};
use crate::store::Claim;
use crate::turn::{Finish, TurnContext};

/// Runtime settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RuntimeConfig {
    /// This node's name in leases (random by default).
    pub node_id: String,
    /// Most turns running at once; 0 runs none on this node (it serves requests,
    /// reaps and sweeps, and other nodes sharing the store run the turns).
    pub max_concurrent_turns: usize,
    /// Lease length; a turn renews it at a third of this.
    pub lease: Duration,
    /// How often lapsed leases are reaped.
    pub reap_interval: Duration,
    /// How often retention and inactivity are enforced.
    pub sweep_interval: Duration,
    /// Most tasks (or records) one sweep transaction deletes. A pass repeats full
    /// batches until a batch comes back short, so the sweep rate follows the write
    /// rate however far behind it is, while no transaction grows without bound.
    pub sweep_batch: usize,
    /// How often the queue is polled when no wake-up arrives.
    pub poll_interval: Duration,
    /// Longest time emitted changes wait in a turn's buffer before being committed.
    pub flush_interval: Duration,
    /// Claims of one queue entry after which the task fails.
    pub max_attempts: u32,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            node_id: format!("node-{}", &random_id()[..8]),
            max_concurrent_turns: 256,
            lease: Duration::from_secs(30),
            reap_interval: Duration::from_secs(5),
            sweep_interval: Duration::from_secs(60),
            sweep_batch: 1000,
            poll_interval: Duration::from_millis(500),
            flush_interval: Duration::from_millis(5),
            max_attempts: 5,
        }
    }
}

type Running = Arc<Mutex<HashMap<u64, (Claim, tokio::task::AbortHandle)>>>;

/// A started runtime. Dropping it does not stop it: call [`Runtime::shutdown`].
#[derive(Debug)]
pub struct Runtime {
    stop: CancellationToken,
    tracker: TaskTracker,
    loops: Vec<JoinHandle<()>>,
    running: Running,
    service: TaskService,
    dispatch: Option<Arc<dyn Dispatch>>,
}

impl Runtime {
    /// Starts the claim loop, reaper and sweeper for `agent` over the service's store.
    pub fn start(service: TaskService, agent: Arc<dyn Agent>, config: RuntimeConfig) -> Self {
        let stop = CancellationToken::new();
        let tracker = TaskTracker::new();
        let running: Running = Arc::new(Mutex::new(HashMap::new()));
        let config = Arc::new(config);
        let mut loops = vec![
            tokio::spawn(reaper_loop(service.clone(), config.clone(), stop.clone())),
            tokio::spawn(sweeper_loop(service.clone(), config.clone(), stop.clone())),
        ];
        let mut dispatch = None;
        if config.max_concurrent_turns > 0 {
            let spawner = Arc::new(Spawner {
                service: service.clone(),
                agent,
                config: config.clone(),
                stop: stop.clone(),
                tracker: tracker.clone(),
                running: running.clone(),
                permits: Arc::new(Semaphore::new(config.max_concurrent_turns)),
                next_turn_id: AtomicU64::new(0),
            });
            // Tasks this node creates while it has a free slot run here at once.
            let local: Arc<dyn Dispatch> = spawner.clone();
            service.set_dispatch(local.clone());
            dispatch = Some(local);
            loops.push(tokio::spawn(claim_loop(spawner)));
        }
        Self {
            stop,
            tracker,
            loops,
            running,
            service,
            dispatch,
        }
    }

    /// Turns running now.
    pub fn running_turns(&self) -> usize {
        self.running.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Stops claiming, lets running turns finish for up to `drain`, then aborts the
    /// rest and releases their leases so another node (or the next start) takes them.
    pub async fn shutdown(self, drain: Duration) {
        if let Some(d) = &self.dispatch {
            self.service.clear_dispatch(d);
        }
        self.stop.cancel();
        for l in &self.loops {
            l.abort();
        }
        self.tracker.close();
        if tokio::time::timeout(drain, self.tracker.wait())
            .await
            .is_err()
        {
            let left: Vec<(Claim, tokio::task::AbortHandle)> = self
                .running
                .lock()
                .map(|mut m| m.drain().map(|(_, v)| v).collect())
                .unwrap_or_default();
            warn!(
                turns = left.len(),
                "drain timeout: aborting turns and releasing leases"
            );
            for (claim, handle) in left {
                handle.abort();
                if let Err(e) = self.service.store().release(&claim).await {
                    warn!(task = %claim.task_id, error = %e, "releasing lease failed");
                }
            }
        }
        info!("runtime stopped");
    }
}

/// Starts turns: of claimed queue entries (the claim loop) and of tasks this node
/// created with their first turn leased to it, sharing one pool of
/// `max_concurrent_turns` slots.
///
/// Local dispatch: a task created on this node while it has a free turn slot is
/// stored with its first turn leased to this node ([`TaskStore::create_claimed`]),
/// and the turn starts at once, with no claim (on a database store: no claim
/// statement, and no other node woken for it). If this node dies, the lease lapses
/// and the reaper hands the turn to any node, as for a claimed turn.
///
/// [`TaskStore::create_claimed`]: crate::store::TaskStore::create_claimed
pub(crate) struct Spawner {
    service: TaskService,
    agent: Arc<dyn Agent>,
    config: Arc<RuntimeConfig>,
    stop: CancellationToken,
    tracker: TaskTracker,
    running: Running,
    permits: Arc<Semaphore>,
    next_turn_id: AtomicU64,
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner")
            .field("node_id", &self.config.node_id)
            .finish_non_exhaustive()
    }
}

impl Spawner {
    /// Runs the turn of `claim` in the slot `permit`; `via` names how the turn was
    /// obtained, for `taskwire_turns_started_total`.
    fn spawn(
        &self,
        claim: Claim,
        snapshot: Option<Arc<crate::Task>>,
        permit: OwnedSemaphorePermit,
        via: &'static str,
    ) {
        metrics::counter!("taskwire_turns_started_total", "via" => via).increment(1);
        let turn_id = self.next_turn_id.fetch_add(1, Ordering::Relaxed);
        let running = self.running.clone();
        // The turn's future is large: keep it on the heap so that spawning and
        // finishing the task moves a pointer instead of the whole state machine.
        let turn = Box::pin(run_claim(
            self.service.clone(),
            self.agent.clone(),
            self.config.clone(),
            claim.clone(),
            snapshot,
        ));
        let handle = self.tracker.spawn(async move {
            turn.await;
            if let Ok(mut m) = running.lock() {
                m.remove(&turn_id);
            }
            drop(permit);
        });
        if let Ok(mut m) = self.running.lock() {
            if !handle.is_finished() {
                m.insert(turn_id, (claim, handle.abort_handle()));
            }
        }
    }
}

impl Dispatch for Spawner {
    fn lease(&self) -> (&str, Duration) {
        (&self.config.node_id, self.config.lease)
    }

    fn try_slot(&self) -> Option<OwnedSemaphorePermit> {
        if self.stop.is_cancelled() {
            return None;
        }
        self.permits.clone().try_acquire_owned().ok()
    }

    fn run(&self, claim: Claim, task: Arc<crate::Task>, slot: OwnedSemaphorePermit) {
        if self.stop.is_cancelled() {
            // Stopping: give the lease back so that another node (or the next
            // start) runs the turn.
            let store = self.service.store().clone();
            tokio::spawn(async move {
                if let Err(e) = store.release(&claim).await {
                    warn!(task = %claim.task_id, error = %e, "releasing lease failed");
                }
            });
            return;
        }
        self.spawn(claim, Some(task), slot, "create");
    }
}

async fn claim_loop(spawner: Arc<Spawner>) {
    let service = &spawner.service;
    let config = &spawner.config;
    let stop = &spawner.stop;
    let permits = &spawner.permits;
    let store = service.store().clone();
    loop {
        if stop.is_cancelled() {
            return;
        }
        // Wait for at least one free slot.
        let first = tokio::select! {
            p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => return },
            _ = stop.cancelled() => return,
        };
        let free = permits.available_permits() + 1;
        let notified = store.hub().work_notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let asked = free.min(128);
        let claims = match store
            .claim_tasks(&config.node_id, asked, config.lease, Utc::now())
            .await
        {
            Ok(c) => c,
            Err(e) => {
                warn!(error = %e, "claim failed");
                drop(first);
                tokio::select! {
                    _ = tokio::time::sleep(config.poll_interval) => {},
                    _ = stop.cancelled() => return,
                }
                continue;
            }
        };
        if claims.is_empty() {
            drop(first);
            tokio::select! {
                _ = &mut notified => {},
                _ = tokio::time::sleep(config.poll_interval) => {},
                _ = stop.cancelled() => return,
            }
            continue;
        }
        // Fewer than asked: the queue was drained. Work queued since the claim
        // began has signalled `notified` (enabled before it), so wait for that
        // instead of asking again at once for nothing (a statement per wake-up on
        // a database store).
        let drained = claims.len() < asked;
        let mut first = Some(first);
        for (claim, snapshot) in claims {
            let permit = match first.take() {
                Some(p) => p,
                None => match permits.clone().try_acquire_owned() {
                    Ok(p) => p,
                    Err(_) => {
                        // Local dispatch took the slot meanwhile: never hold a lease
                        // we cannot run; give it back.
                        let _ = store.release(&claim).await;
                        continue;
                    }
                },
            };
            spawner.spawn(claim, snapshot, permit, "claim");
        }
        if drained {
            tokio::select! {
                _ = &mut notified => {},
                _ = tokio::time::sleep(config.poll_interval) => {},
                _ = stop.cancelled() => return,
            }
        }
    }
}

/// How long a turn runs before its supervisor reads the task once, for a cancel
/// committed before the supervisor watched it.
const CHECK_AFTER: Duration = Duration::from_secs(1);

async fn run_claim(
    service: TaskService,
    agent: Arc<dyn Agent>,
    config: Arc<RuntimeConfig>,
    claim: Claim,
    snapshot: Option<Arc<crate::Task>>,
) {
    let store = service.store().clone();
    let id = claim.task_id.clone();
    let read = match snapshot {
        Some(t) => Ok(Some(t)),
        None => store.get_shared(&id).await,
    };
    let task = match read {
        Ok(Some(t)) => t,
        Ok(None) => {
            let _ = store.drop_claim(&claim).await;
            return;
        }
        Err(e) => {
            warn!(task = %id, error = %e, "loading claimed task failed");
            let _ = store.release(&claim).await;
            return;
        }
    };
    if claim.attempts > config.max_attempts {
        let r = service
            .mutate(&id, crate::service::Access::System, Some(&claim), |d| {
                if d.task.state.is_terminal() {
                    return Ok(());
                }
                d.fail_internal(format!(
                    "the task was attempted {} times without finishing",
                    claim.attempts - 1
                ))
            })
            .await;
        if let Err(e) = r {
            debug!(task = %id, error = %e, "failing an exhausted task");
        }
        let _ = store.drop_claim(&claim).await;
        return;
    }
    let (input, new_ids) = match plan_turn(&task) {
        Ok(p) => p,
        Err(_) => {
            // Terminal, or waiting for someone: nothing to run.
            let _ = store.drop_claim(&claim).await;
            return;
        }
    };
    let cancel = CancellationToken::new();
    let ctx = TurnContext::new(
        task,
        input,
        new_ids,
        service.clone(),
        claim.clone(),
        config.flush_interval,
        cancel.clone(),
    );
    let started = std::time::Instant::now();
    // The agent runs inline (a panic is caught, not propagated); the supervisor runs
    // beside it in the same task and only starts working if the turn lasts.
    let result = {
        use futures::FutureExt;
        let agent_fut = std::panic::AssertUnwindSafe(agent.run_turn(&ctx)).catch_unwind();
        tokio::pin!(agent_fut);
        let sup = supervise(ctx.clone(), service.clone(), claim.clone(), config.clone());
        tokio::pin!(sup);
        tokio::select! {
            biased;
            r = &mut agent_fut => r,
            _ = &mut sup => agent_fut.await,
        }
    };
    metrics::histogram!("taskwire_turn_seconds").record(started.elapsed().as_secs_f64());
    let finish = match result {
        Ok(Ok(outcome)) => Finish::Outcome(outcome),
        Ok(Err(crate::agent::AgentError::Core(e))) if cancel.is_cancelled() => {
            debug!(task = %id, error = %e, "turn stopped after cancellation");
            return;
        }
        Ok(Err(e)) => {
            warn!(task = %id, error = %e, "agent error");
            Finish::Crashed
        }
        Err(_panic) => {
            warn!(task = %id, "agent turn panicked");
            Finish::Crashed
        }
    };
    match ctx.commit(Some(&finish)).await {
        Ok(_) => {}
        Err(CoreError::Terminal { .. } | CoreError::LeaseLost | CoreError::NotFound) => {
            debug!(task = %id, "turn outcome discarded: the task ended or moved on");
        }
        Err(e) => {
            warn!(task = %id, error = %e, "committing turn outcome failed; the reaper will re-run it");
        }
    }
}

/// Renews the lease, flushes the buffer on time, and fires the cancellation token
/// when the task ends elsewhere (for example a cancel from any node).
async fn supervise(
    ctx: TurnContext,
    service: TaskService,
    claim: Claim,
    config: Arc<RuntimeConfig>,
) {
    let tick = config.flush_interval.max(Duration::from_millis(1));
    let started = tokio::time::Instant::now();
    // Most turns end before this: they never pay for the timers and the watch.
    tokio::time::sleep(tick).await;
    let store = service.store().clone();
    let mut rx = store.hub().watch(&claim.task_id);
    // A cancel committed before the watch existed is not in the channel: the task
    // is read once the turn has lasted CHECK_AFTER. Until then, a commit of the
    // turn meets such a cancel anyway (its version check fails, the task is read
    // again and found ended); reading at once would cost a read per turn
    // whenever commits take longer than a tick.
    let check = tokio::time::sleep_until(started + CHECK_AFTER);
    tokio::pin!(check);
    let mut checked = false;
    let renew_every = config.lease / 3;
    let mut next_renew = tokio::time::Instant::now() + renew_every;
    let mut flush_timer = tokio::time::interval(tick);
    flush_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut check, if !checked => {
                checked = true;
                match store.get_shared(&claim.task_id).await {
                    Ok(Some(t)) if !t.state.is_terminal() && !t.state.is_interrupted() => {}
                    Ok(_) => {
                        ctx.cancel_turn();
                        return;
                    }
                    Err(e) => {
                        warn!(task = %claim.task_id, error = %e, "reading the task in the supervisor failed")
                    }
                }
            }
            _ = tokio::time::sleep_until(next_renew) => {
                match store.renew(&claim, config.lease, Utc::now()).await {
                    Ok(true) => next_renew = tokio::time::Instant::now() + renew_every,
                    Ok(false) => { ctx.cancel_turn(); return; }
                    Err(e) => {
                        warn!(task = %claim.task_id, error = %e, "lease renewal failed");
                        next_renew = tokio::time::Instant::now() + Duration::from_secs(1);
                    }
                }
            }
            _ = flush_timer.tick() => {
                if ctx.flush_due() && ctx.flush().await.is_err() {
                    return;
                }
            }
            changed = rx.changed() => {
                if changed.is_err() {
                    rx = store.hub().watch(&claim.task_id);
                    continue;
                }
                let state = rx.borrow_and_update().state;
                // Terminal (canceled elsewhere) or interrupted by the host
                // (`interrupt_turn`): a turn's own commits never leave working
                // before its final one, which runs after this supervisor.
                if state.is_terminal() || state.is_interrupted() {
                    ctx.cancel_turn();
                    return;
                }
            }
        }
    }
}

async fn reaper_loop(service: TaskService, config: Arc<RuntimeConfig>, stop: CancellationToken) {
    let mut every = tokio::time::interval(config.reap_interval.max(Duration::from_millis(10)));
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.cancelled() => return,
        }
        match service.store().reap(Utc::now()).await {
            Ok(ids) if !ids.is_empty() => {
                metrics::counter!("taskwire_lease_expiries_total").increment(ids.len() as u64);
                info!(count = ids.len(), "re-queued tasks whose lease lapsed");
            }
            Ok(_) => {}
            Err(e) => warn!(error = %e, "reaper failed"),
        }
    }
}

async fn sweeper_loop(service: TaskService, config: Arc<RuntimeConfig>, stop: CancellationToken) {
    let mut every = tokio::time::interval(config.sweep_interval.max(Duration::from_millis(10)));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.cancelled() => return,
        }
        sweep_pass(&service, config.sweep_batch.max(1), &stop).await;
    }
}

/// One pass of the sweeper: expired terminal tasks (with their logs, keys and
/// records), then expired records, each in batches of `batch` repeated while a
/// batch comes back full; then the tasks idle past their lifespan.
pub(crate) async fn sweep_pass(service: &TaskService, batch: usize, stop: &CancellationToken) {
    let now = Utc::now();
    let store = service.store();
    sweep_batches("tasks", "taskwire_tasks_swept_total", batch, stop, || {
        store.sweep(now, batch)
    })
    .await;
    sweep_batches(
        "records",
        "taskwire_records_swept_total",
        batch,
        stop,
        || store.sweep_records(now, batch),
    )
    .await;
    match store.idle_expired(now, batch).await {
        Ok(ids) => {
            for id in ids {
                if let Err(e) = service.expire_idle(&id).await {
                    debug!(task = %id, error = %e, "idle expiry skipped");
                }
            }
        }
        Err(e) => warn!(error = %e, "idle scan failed"),
    }
}

/// Runs `sweep` (one batch of at most `batch`) until a batch comes back short or
/// the runtime stops, counting what it deleted in `metric`.
async fn sweep_batches<F, Fut>(
    what: &str,
    metric: &'static str,
    batch: usize,
    stop: &CancellationToken,
    mut sweep: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<usize, crate::error::StoreError>>,
{
    loop {
        match sweep().await {
            Ok(n) => {
                if n > 0 {
                    metrics::counter!(metric).increment(n as u64);
                    debug!(count = n, "swept expired {what}");
                }
                if n < batch || stop.is_cancelled() {
                    return;
                }
            }
            Err(e) => {
                warn!(error = %e, "sweeping {what} failed");
                return;
            }
        }
        // Let the store serve the requests that queued behind this batch.
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::memory::MemoryStore;
    use crate::record::{Record, RecordKind};
    use crate::service::{Access, CreateTask, TaskDefaults};
    use crate::store::TaskStore;
    use crate::types::{Caller, Message};

    /// One pass deletes every expired task and record however many batches that
    /// takes (a sweeper that took one batch a pass fell ever further behind a
    /// write rate above a batch per interval), and leaves the rest.
    #[tokio::test]
    async fn a_sweep_pass_repeats_batches_until_nothing_is_left() {
        let store = Arc::new(MemoryStore::new());
        let svc = TaskService::new(store.clone(), "t").with_defaults(
            TaskDefaults::default()
                .with_ttl(Some(Duration::from_millis(1)))
                .with_idle_lifespan(None),
        );
        let me = Caller::local();
        for i in 0..25 {
            let mut m = Message::user_text("x");
            m.message_id = format!("m{i}");
            let t = svc.create(&me, CreateTask::new(m)).await.unwrap().task;
            svc.cancel(Access::Owner(&me), &t.id, None).await.unwrap();
        }
        let live = svc
            .create(&me, CreateTask::new(Message::user_text("live")))
            .await
            .unwrap()
            .task;
        let past = Some(Utc::now() - chrono::Duration::seconds(1));
        for i in 0..23 {
            let r = Record::new(
                RecordKind::McpSession,
                format!("s{i}"),
                "t",
                "o",
                "{}".into(),
            )
            .expiring(past);
            store.put_record(r, None).await.unwrap();
        }
        let kept = Record::new(RecordKind::McpSession, "kept", "t", "o", "{}".into());
        store.put_record(kept, None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        sweep_pass(&svc, 10, &CancellationToken::new()).await;
        let counts = store.count_by_state().await.unwrap();
        let total: u64 = counts.iter().map(|(_, n)| n).sum();
        assert_eq!(total, 1, "{counts:?}");
        assert!(store.get(&live.id).await.unwrap().is_some());
        let records = store.count_records().await.unwrap();
        let sessions = records
            .iter()
            .find(|(k, _)| *k == RecordKind::McpSession)
            .map(|(_, n)| *n);
        assert_eq!(sessions, Some(1));
    }
}
