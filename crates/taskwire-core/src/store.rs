//! The storage contract. The store is the only source of truth: tasks, their event
//! logs, idempotency keys and the claimable work queue live there, and every change
//! is one atomic compare-and-set commit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, watch, Notify};

use crate::error::StoreError;
use crate::event::Event;
use crate::ids::TaskId;
use crate::record::{PutOutcome, Quota, Record, RecordKind, RecordLease, RecordScope};
use crate::types::{Task, TaskState, Timestamp};

/// The idempotency key of a create: the same key returns the same task.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IdempotencyKey {
    /// Tenant.
    pub tenant: String,
    /// Owner (principal).
    pub owner: String,
    /// The messageId of the creating message.
    pub message_id: String,
}

/// What a create did.
#[derive(Clone, Debug)]
pub enum CreateOutcome {
    /// The task was inserted (the stored snapshot, shared: nothing is copied).
    Created(Arc<Task>),
    /// A task with the same idempotency key exists; it is returned unchanged.
    Existing(Arc<Task>),
}

/// What a commit does to the task's queue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QueueOp {
    /// Leave the queue entry as it is.
    #[default]
    Keep,
    /// Make sure an entry exists: insert one available now, or leave an existing one
    /// (queued or leased) alone. Used to resume an interrupted task.
    Enqueue,
    /// Release the lease and make the entry available now (another turn is due).
    Requeue,
    /// Delete the entry (the task is terminal or waits for someone outside).
    Remove,
}

/// A worker's lease on one queue entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The task.
    pub task_id: TaskId,
    /// The worker holding the lease.
    pub worker: String,
    /// Fencing token: incremented by every claim of the entry.
    pub epoch: u64,
    /// How many times the entry has been claimed.
    pub attempts: u32,
}

/// One atomic change: replace the task's snapshot if its version still matches,
/// append events, and apply a queue operation.
#[derive(Clone, Debug)]
pub struct Commit {
    /// The new snapshot; its `version` is `expected_version + 1`. Shared, so that
    /// the committer keeps it without a copy of what the store keeps.
    pub task: Arc<Task>,
    /// The version the change was computed from.
    pub expected_version: u64,
    /// New events, with consecutive sequence numbers after the old `last_seq`.
    pub events: Vec<Event>,
    /// What happens to the queue entry.
    pub queue: QueueOp,
    /// If set, the commit only succeeds while this lease is still held.
    pub fence: Option<Claim>,
}

/// Filters and paging for listing tasks. Tenant is mandatory; owner and reviewer narrow.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ListQuery {
    /// Tenant.
    pub tenant: String,
    /// Only tasks of this owner.
    pub owner: Option<String>,
    /// Only tasks with a pending review addressed to this principal.
    pub reviewer: Option<String>,
    /// Only this context.
    pub context_id: Option<String>,
    /// Only this state.
    pub state: Option<TaskState>,
    /// Only tasks updated strictly after this time.
    pub updated_after: Option<Timestamp>,
    /// Only tasks whose state last changed at or after this time (compared to the
    /// microsecond).
    pub changed_since: Option<Timestamp>,
    /// The order of the pages (newest first either way).
    pub order: ListOrder,
    /// Page size (1..=1000).
    pub page_size: usize,
    /// Opaque cursor from a previous page (of a query with the same order).
    pub cursor: Option<String>,
}

impl ListQuery {
    /// Whether a task passes every filter of the query (tenant, owner, reviewer,
    /// context, state, updated-after, and changed-since to the microsecond); paging
    /// aside, the stores list exactly these tasks.
    pub fn matches(&self, t: &Task) -> bool {
        t.tenant == self.tenant
            && self.owner.as_ref().is_none_or(|o| *o == t.owner)
            && self
                .reviewer
                .as_ref()
                .is_none_or(|r| t.pending_reviews.iter().any(|rv| rv.reviewer == *r))
            && self.context_id.as_ref().is_none_or(|c| *c == t.context_id)
            && self.state.is_none_or(|s| s == t.state)
            && self.updated_after.is_none_or(|u| t.updated_at > u)
            && self
                .changed_since
                .is_none_or(|c| t.state_changed_at.timestamp_micros() >= c.timestamp_micros())
    }
}

/// How a list is ordered: newest first by creation time (stable while paging), or
/// newest first by the time of the last state change (A2A's "status timestamp"
/// order; a task that changes state while someone pages moves to the front).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListOrder {
    /// By `created_at`, then id, descending.
    #[default]
    Created,
    /// By `state_changed_at` (to the microsecond), then id, descending.
    StateChanged,
}

impl ListOrder {
    /// The time a task is ordered by.
    pub fn key(self, t: &Task) -> Timestamp {
        match self {
            ListOrder::Created => t.created_at,
            ListOrder::StateChanged => t.state_changed_at,
        }
    }
}

/// A page of tasks, newest first.
#[derive(Clone, Debug)]
pub struct ListPage {
    /// The tasks.
    pub tasks: Vec<Task>,
    /// Cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
    /// Total number of tasks that match the filters.
    pub total: u64,
}

/// The latest known position of a task's log, as published to watchers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskWake {
    /// Sequence number of the latest event.
    pub last_seq: u64,
    /// The task's state after it.
    pub state: TaskState,
}

/// The in-process fan-out of changes: per-task watch channels, a firehose of all
/// changes, and a signal that new work was queued. Stores publish to it after each
/// commit; a distributed store also publishes what other nodes committed (for
/// example from LISTEN/NOTIFY).
#[derive(Debug)]
pub struct WakeHub {
    tasks: Mutex<
        std::collections::HashMap<TaskId, watch::Sender<TaskWake>, foldhash::fast::RandomState>,
    >,
    all: broadcast::Sender<(TaskId, TaskWake)>,
    work: Notify,
    /// Number of per-task channels at which `watch` drops those nobody listens
    /// to any more (a task's channel otherwise outlives its last watcher until
    /// the task is published again, which a finished task never is).
    purge_at: AtomicUsize,
}

/// The fewest per-task channels at which stale ones are purged.
const MIN_PURGE_AT: usize = 1024;

impl Default for WakeHub {
    fn default() -> Self {
        Self::new()
    }
}

impl WakeHub {
    /// An empty hub.
    pub fn new() -> Self {
        let (all, _) = broadcast::channel(4096);
        Self {
            tasks: Mutex::new(Default::default()),
            all,
            work: Notify::new(),
            purge_at: AtomicUsize::new(MIN_PURGE_AT),
        }
    }

    /// Publishes that `task` has events up to `wake.last_seq`.
    pub fn publish(&self, task: &TaskId, wake: TaskWake) {
        if let Ok(mut map) = self.tasks.lock() {
            if let Some(tx) = map.get(task) {
                if tx.receiver_count() == 0 {
                    map.remove(task);
                } else {
                    tx.send_if_modified(|cur| {
                        if wake.last_seq > cur.last_seq {
                            *cur = wake;
                            true
                        } else {
                            false
                        }
                    });
                }
            }
        }
        if self.all.receiver_count() > 0 {
            let _ = self.all.send((task.clone(), wake));
        }
    }

    /// Wakes every watcher of every task, and every claimer, without a new value:
    /// for when wake-ups may have been lost (a store's connection that carries
    /// other nodes' commits was down), so that subscribers re-read their logs at
    /// once instead of on their fallback timer.
    pub fn wake_all(&self) {
        if let Ok(map) = self.tasks.lock() {
            for tx in map.values() {
                tx.send_modify(|_| {});
            }
        }
        self.work_queued();
    }

    /// Watches one task. Subscribe before reading the log, then read, then wait.
    pub fn watch(&self, task: &TaskId) -> watch::Receiver<TaskWake> {
        let initial = TaskWake {
            last_seq: 0,
            state: TaskState::Submitted,
        };
        match self.tasks.lock() {
            Ok(mut map) => {
                if map.len() >= self.purge_at.load(Ordering::Relaxed) {
                    // Amortised: the map at least doubles between two purges.
                    map.retain(|_, tx| tx.receiver_count() > 0);
                    self.purge_at
                        .store((map.len() * 2).max(MIN_PURGE_AT), Ordering::Relaxed);
                }
                map.entry(task.clone())
                    .or_insert_with(|| watch::channel(initial).0)
                    .subscribe()
            }
            // A poisoned map cannot publish; hand out a channel that never fires and
            // let the subscriber's periodic re-read carry it.
            Err(_) => watch::channel(initial).1,
        }
    }

    /// Every change of every task (lossy under lag: re-read the store on `Lagged`).
    pub fn firehose(&self) -> broadcast::Receiver<(TaskId, TaskWake)> {
        self.all.subscribe()
    }

    /// Signals that work was queued.
    pub fn work_queued(&self) {
        self.work.notify_waiters();
    }

    /// A future that resolves when work is queued; create (and `enable`) it before
    /// checking the queue so that no signal is missed.
    pub fn work_notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.work.notified()
    }
}

/// The storage contract every store implements and the shared suite checks.
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// A short name for logs (`memory`, `sqlite`, `postgres`).
    fn kind(&self) -> &'static str;

    /// The fan-out hub the store publishes to.
    fn hub(&self) -> &WakeHub;

    /// Inserts a task with its first events, optionally enqueued, unless the
    /// idempotency key already names a task, which is then returned. Durable when it returns.
    async fn create(
        &self,
        task: Task,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        enqueue: bool,
    ) -> Result<CreateOutcome, StoreError>;

    /// Creates a task with its first turn already leased to `worker` until `now +
    /// lease`, for a node that runs the turn itself: what [`TaskStore::create`]
    /// with `enqueue` and a claim of the new entry by `worker` would leave, in one
    /// write, and without telling other claimers that work is waiting. Returns the
    /// claim when the task was inserted. The default creates and queues the task
    /// for any claimer and returns no claim.
    async fn create_claimed(
        &self,
        task: Task,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        worker: &str,
        lease: Duration,
        now: Timestamp,
    ) -> Result<(CreateOutcome, Option<Claim>), StoreError> {
        let _ = (worker, lease, now);
        Ok((self.create(task, events, key, true).await?, None))
    }

    /// Reads a task's current snapshot, shared with the store (no copy).
    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<Task>>, StoreError>;

    /// Reads a task (an owned copy of [`TaskStore::get_shared`]).
    async fn get(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        Ok(self.get_shared(id).await?.map(Arc::unwrap_or_clone))
    }

    /// Applies a commit atomically: `Conflict` if the version moved, `LeaseLost` if the
    /// fence no longer holds, `NotFound` if the task is gone.
    async fn commit(&self, commit: Commit) -> Result<(), StoreError>;

    /// Events with `seq > after_seq`, in order, at most `limit`.
    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;

    /// Lists tasks, newest first, with an opaque cursor.
    async fn list(&self, query: &ListQuery) -> Result<ListPage, StoreError>;

    /// Leases up to `max` available queue entries to `worker` until `now + lease`.
    async fn claim(
        &self,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<Claim>, StoreError>;

    /// A snapshot of `id` whose last event is `last_seq`, if this store has one at
    /// hand without a read (one it committed itself a moment ago); `None`
    /// otherwise. A snapshot at a committed sequence number is a fact, so a
    /// caller woken for that sequence number may answer it instead of reading:
    /// a read would find that state or a later one.
    fn committed_snapshot(&self, id: &TaskId, last_seq: u64) -> Option<Arc<Task>> {
        let _ = (id, last_seq);
        None
    }

    /// [`TaskStore::claim`], with the snapshot of each claimed task where the store
    /// reads it in the same step as the claim (`None`: the caller reads it). A
    /// store that reads the task in another round trip leaves this as it is.
    async fn claim_tasks(
        &self,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<(Claim, Option<Arc<Task>>)>, StoreError> {
        Ok(self
            .claim(worker, max, lease, now)
            .await?
            .into_iter()
            .map(|c| (c, None))
            .collect())
    }

    /// Extends a lease; false if it is no longer held.
    async fn renew(
        &self,
        claim: &Claim,
        lease: Duration,
        now: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Gives a lease back, making the entry available now (used when draining).
    async fn release(&self, claim: &Claim) -> Result<(), StoreError>;

    /// Deletes a queue entry held under `claim` (a claimed task that needs no turn).
    async fn drop_claim(&self, claim: &Claim) -> Result<(), StoreError>;

    /// Makes every entry whose lease lapsed before `now` available again; returns their tasks.
    async fn reap(&self, now: Timestamp) -> Result<Vec<TaskId>, StoreError>;

    /// Deletes up to `limit` terminal tasks whose `expires_at` is before `now`, with
    /// their events, idempotency keys and records; returns how many tasks.
    async fn sweep(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;

    /// Inserts `record`, or replaces the one stored under its `(kind, id)` (its data,
    /// cursor, active flag and expiry; owner and lease stay), bumping the version.
    /// `NotFound` if it names a task that does not exist. With a quota, an insert
    /// (never a replacement) is refused when the owner already has `quota.max` live
    /// records of the kind; the check and the insert are one atomic step.
    async fn put_record(
        &self,
        record: Record,
        quota: Option<Quota>,
    ) -> Result<PutOutcome, StoreError>;

    /// The record stored under `(kind, id)`.
    async fn get_record(&self, kind: RecordKind, id: &str) -> Result<Option<Record>, StoreError>;

    /// The records of `kind` in `scope`, ordered by id.
    async fn list_records(
        &self,
        kind: RecordKind,
        scope: &RecordScope,
    ) -> Result<Vec<Record>, StoreError>;

    /// Replaces a record's data, cursor, active flag and expiry if its version is
    /// still `record.version` (`Conflict` otherwise) and, with a fence, while that
    /// lease is held (`LeaseLost` otherwise); `NotFound` if it is gone. Returns the
    /// new version.
    async fn update_record(
        &self,
        record: &Record,
        fence: Option<&RecordLease>,
    ) -> Result<u64, StoreError>;

    /// Deletes a record; false if there was none.
    async fn delete_record(&self, kind: RecordKind, id: &str) -> Result<bool, StoreError>;

    /// Leases to `worker`, until `now + lease`, up to `max` active records of `kind`
    /// that nobody holds or whose lease lapsed before `now`; each claim increments
    /// the record's epoch.
    async fn claim_records(
        &self,
        kind: RecordKind,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<(Record, RecordLease)>, StoreError>;

    /// Extends a record lease; false if it is no longer held.
    async fn renew_record(
        &self,
        lease: &RecordLease,
        duration: Duration,
        now: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Gives a record lease back (the record can be claimed at once if active).
    async fn release_record(&self, lease: &RecordLease) -> Result<(), StoreError>;

    /// Deletes up to `limit` records that expired before `now`; returns how many.
    async fn sweep_records(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;

    /// Number of records per kind.
    async fn count_records(&self) -> Result<Vec<(RecordKind, u64)>, StoreError>;

    /// Up to `limit` non-terminal tasks whose inactivity deadline is before `now`.
    async fn idle_expired(&self, now: Timestamp, limit: usize) -> Result<Vec<TaskId>, StoreError>;

    /// Number of queue entries (available and leased).
    async fn queue_depth(&self) -> Result<u64, StoreError>;

    /// Number of tasks per state.
    async fn count_by_state(&self) -> Result<Vec<(TaskState, u64)>, StoreError>;
}

/// Conversions of core values to and from the integer columns of SQL stores
/// (SQLite's and PostgreSQL's alike), saturating instead of failing.
pub mod columns {
    use std::time::Duration;

    use crate::types::Timestamp;

    /// A time in nanoseconds since the epoch, saturated outside 1677..2262.
    pub fn ns(t: Timestamp) -> i64 {
        t.timestamp_nanos_opt().unwrap_or(if t.timestamp() < 0 {
            i64::MIN
        } else {
            i64::MAX
        })
    }

    /// A duration in nanoseconds, saturated.
    pub fn dur_ns(d: Duration) -> i64 {
        i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
    }

    /// An unsigned counter as a column value, saturated.
    pub fn int(v: u64) -> i64 {
        i64::try_from(v).unwrap_or(i64::MAX)
    }

    /// A column value as an unsigned counter (negative values read as 0).
    pub fn uint(v: i64) -> u64 {
        u64::try_from(v).unwrap_or(0)
    }

    /// A page size or limit as a SQL `LIMIT`, saturated.
    pub fn limit(v: usize) -> i64 {
        i64::try_from(v).unwrap_or(i64::MAX)
    }
}

/// Encodes a list cursor from the last task of a page.
pub fn encode_cursor(at: Timestamp, id: &TaskId) -> String {
    use base64::Engine;
    let raw = format!("{}:{}", at.timestamp_micros(), id);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw.as_bytes())
}

/// Decodes a list cursor into (created_at in microseconds, task id).
pub fn decode_cursor(cursor: &str) -> Option<(i64, String)> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor.as_bytes())
        .ok()?;
    let raw = String::from_utf8(raw).ok()?;
    let (micros, id) = raw.split_once(':')?;
    let micros = micros.parse().ok()?;
    TaskId::parse(id).ok()?;
    Some((micros, id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Channels of tasks nobody watches any more do not pile up (a finished task is
    /// never published again, so `publish` alone would never drop them), and live
    /// watchers keep theirs.
    #[test]
    fn watch_channels_without_watchers_are_purged() {
        let hub = WakeHub::new();
        let kept = TaskId::new();
        let mut rx = hub.watch(&kept);
        for _ in 0..20 * MIN_PURGE_AT {
            drop(hub.watch(&TaskId::new()));
        }
        let len = hub.tasks.lock().map(|m| m.len()).unwrap_or(usize::MAX);
        assert!(len <= 2 * MIN_PURGE_AT, "{len} channels kept");
        hub.publish(
            &kept,
            TaskWake {
                last_seq: 3,
                state: TaskState::Working,
            },
        );
        assert!(rx.has_changed().unwrap_or(false));
        assert_eq!(rx.borrow_and_update().last_seq, 3);
    }
}
