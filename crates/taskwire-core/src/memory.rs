//! The in-memory store: everything in one mutex-guarded map. For tests, benchmarks
//! and `--store memory://`; nothing survives the process.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

/// Hash maps keyed by ids, with a fast seeded hasher.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use crate::error::StoreError;
use crate::event::Event;
use crate::ids::TaskId;
use crate::store::{
    decode_cursor, encode_cursor, Claim, Commit, CreateOutcome, IdempotencyKey, ListOrder,
    ListPage, ListQuery, QueueOp, TaskStore, TaskWake, WakeHub,
};
use crate::types::{Task, TaskState, Timestamp};

#[derive(Debug)]
struct Entry {
    lease: Option<(String, Timestamp)>,
    epoch: u64,
    attempts: u32,
}

/// Everything stored about one task, under one key: one lookup per operation.
#[derive(Debug)]
struct Slot {
    /// The snapshot, shared so that reads copy nothing under the lock.
    task: Arc<Task>,
    /// The event log (sequence n at index n-1), without spare capacity.
    events: Vec<Event>,
    /// The queue entry, while the task has one.
    queue: Option<Entry>,
    /// The idempotency key that names the task, if it was created with one.
    idem: Option<IdempotencyKey>,
}

#[derive(Debug, Default)]
struct Inner {
    tasks: HashMap<TaskId, Slot>,
    idem: HashMap<IdempotencyKey, TaskId>,
    /// Number of queue entries (available and leased).
    queued: usize,
    /// Candidates for claiming, in FIFO order; stale ids are skipped on pop.
    ready: VecDeque<TaskId>,
    /// (created_at micros, id) for newest-first listing.
    order: BTreeSet<(i64, TaskId)>,
}

/// A store that keeps everything in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    hub: WakeHub,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        self.inner
            .lock()
            .map_err(|_| StoreError::Backend("memory store mutex poisoned".into()))
    }
}

fn holds(entry: Option<&Entry>, claim: &Claim) -> bool {
    matches!(entry, Some(e) if e.epoch == claim.epoch
        && e.lease.as_ref().is_some_and(|(w, _)| *w == claim.worker))
}

impl Inner {
    /// The queue entry of a task, if it has one.
    fn entry(&self, id: &TaskId) -> Option<&Entry> {
        self.tasks.get(id).and_then(|s| s.queue.as_ref())
    }

    fn entry_mut(&mut self, id: &TaskId) -> Option<&mut Entry> {
        self.tasks.get_mut(id).and_then(|s| s.queue.as_mut())
    }
}

/// Logs up to this many events grow exactly (most tasks end with a handful of
/// events, and a stored log then keeps no spare capacity); longer ones grow by
/// doubling, so that a task streaming many small commits does not copy its whole
/// log at every one.
const EXACT_LOG_GROWTH: usize = 16;

/// Makes room for `more` events in a stored log.
fn grow_log(log: &mut Vec<Event>, more: usize) {
    if log.len() + more <= EXACT_LOG_GROWTH {
        log.reserve_exact(more);
    } else {
        log.reserve(more);
    }
}

/// A fresh, available queue entry.
fn fresh_entry() -> Entry {
    Entry {
        lease: None,
        epoch: 0,
        attempts: 0,
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn hub(&self) -> &WakeHub {
        &self.hub
    }

    async fn create(
        &self,
        task: Task,
        events: Vec<Event>,
        key: Option<IdempotencyKey>,
        enqueue: bool,
    ) -> Result<CreateOutcome, StoreError> {
        let wake = TaskWake {
            last_seq: task.last_seq,
            state: task.state,
        };
        let id = task.id.clone();
        let task = Arc::new(task);
        {
            let mut g = self.lock()?;
            if let Some(k) = &key {
                if let Some(existing) = g
                    .idem
                    .get(k)
                    .and_then(|id| g.tasks.get(id))
                    .map(|s| s.task.clone())
                {
                    drop(g);
                    return Ok(CreateOutcome::Existing(Arc::unwrap_or_clone(existing)));
                }
            }
            if g.tasks.contains_key(&id) {
                return Err(StoreError::Backend("duplicate task id".into()));
            }
            if let Some(k) = &key {
                g.idem.insert(k.clone(), id.clone());
            }
            g.order
                .insert((task.created_at.timestamp_micros(), id.clone()));
            if enqueue {
                g.ready.push_back(id.clone());
                g.queued += 1;
            }
            let mut events = events;
            events.shrink_to_fit();
            g.tasks.insert(
                id.clone(),
                Slot {
                    task: task.clone(),
                    events,
                    queue: enqueue.then(fresh_entry),
                    idem: key,
                },
            );
        }
        // Copied outside the lock.
        let task = Arc::unwrap_or_clone(task);
        self.hub.publish(&id, wake);
        if enqueue {
            self.hub.work_queued();
        }
        Ok(CreateOutcome::Created(task))
    }

    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<Task>>, StoreError> {
        Ok(self.lock()?.tasks.get(id).map(|s| s.task.clone()))
    }

    async fn commit(&self, c: Commit) -> Result<(), StoreError> {
        let id = c.task.id.clone();
        let wake = TaskWake {
            last_seq: c.task.last_seq,
            state: c.task.state,
        };
        let mut queued = false;
        let replaced;
        {
            let mut g = self.lock()?;
            let inner = &mut *g;
            let slot = inner.tasks.get_mut(&id).ok_or(StoreError::NotFound)?;
            if slot.task.version != c.expected_version {
                return Err(StoreError::Conflict);
            }
            if let Some(f) = &c.fence {
                if !holds(slot.queue.as_ref(), f) {
                    return Err(StoreError::LeaseLost);
                }
            }
            match c.queue {
                QueueOp::Keep => {}
                QueueOp::Enqueue => {
                    if slot.queue.is_none() {
                        slot.queue = Some(fresh_entry());
                        inner.queued += 1;
                        inner.ready.push_back(id.clone());
                        queued = true;
                    }
                }
                QueueOp::Requeue => {
                    match &mut slot.queue {
                        Some(e) => {
                            e.lease = None;
                            e.attempts = 0;
                        }
                        None => {
                            slot.queue = Some(fresh_entry());
                            inner.queued += 1;
                        }
                    }
                    inner.ready.push_back(id.clone());
                    queued = true;
                }
                QueueOp::Remove => {
                    if slot.queue.take().is_some() {
                        inner.queued -= 1;
                    }
                }
            }
            grow_log(&mut slot.events, c.events.len());
            slot.events.extend(c.events);
            replaced = std::mem::replace(&mut slot.task, c.task);
        }
        // The old snapshot is freed outside the lock.
        drop(replaced);
        self.hub.publish(&id, wake);
        if queued {
            self.hub.work_queued();
        }
        Ok(())
    }

    async fn events(
        &self,
        id: &TaskId,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        let g = self.lock()?;
        let Some(log) = g.tasks.get(id).map(|s| &s.events) else {
            return Ok(Vec::new());
        };
        // Sequence numbers start at 1 and have no gaps, so seq n sits at index n-1.
        let start = usize::try_from(after_seq)
            .unwrap_or(usize::MAX)
            .min(log.len());
        Ok(log[start..].iter().take(limit).cloned().collect())
    }

    async fn list(&self, q: &ListQuery) -> Result<ListPage, StoreError> {
        let g = self.lock()?;
        let after = match &q.cursor {
            Some(c) => Some(decode_cursor(c).ok_or_else(|| {
                StoreError::Backend("invalid cursor".into()) // mapped to InvalidInput by the service
            })?),
            None => None,
        };
        let matches = |t: &Task| {
            t.tenant == q.tenant
                && q.owner.as_ref().is_none_or(|o| *o == t.owner)
                && q.reviewer
                    .as_ref()
                    .is_none_or(|r| t.pending_reviews.iter().any(|rv| rv.reviewer == *r))
                && q.context_id.as_ref().is_none_or(|c| *c == t.context_id)
                && q.state.is_none_or(|s| s == t.state)
                && q.updated_after.is_none_or(|u| t.updated_at > u)
        };
        let size = q.page_size.clamp(1, 1000);
        // To the microsecond, as the order key and every store's cursor.
        let changed_ok = |t: &Task| {
            q.changed_since
                .is_none_or(|c| t.state_changed_at.timestamp_micros() >= c.timestamp_micros())
        };
        // Candidates newest first, as (order key in microseconds, task).
        let candidates: Vec<(i64, &Arc<Task>)> = match q.order {
            ListOrder::Created => g
                .order
                .iter()
                .rev()
                .filter_map(|(micros, id)| g.tasks.get(id).map(|s| (*micros, &s.task)))
                .filter(|(_, t)| matches(t) && changed_ok(t))
                .collect(),
            ListOrder::StateChanged => {
                let mut v: Vec<(i64, &Arc<Task>)> = g
                    .tasks
                    .values()
                    .map(|s| &s.task)
                    .filter(|t| matches(t) && changed_ok(t))
                    .map(|t| (t.state_changed_at.timestamp_micros(), t))
                    .collect();
                v.sort_unstable_by(|a, b| (b.0, &b.1.id).cmp(&(a.0, &a.1.id)));
                v
            }
        };
        let total = candidates.len() as u64;
        let mut tasks = Vec::new();
        let mut next = None;
        for (micros, t) in candidates {
            let past_cursor = match &after {
                Some((cm, cid)) => (micros, t.id.as_str()) < (*cm, cid.as_str()),
                None => true,
            };
            if past_cursor {
                if tasks.len() < size {
                    tasks.push(Task::clone(t));
                } else {
                    if let Some(last) = tasks.last() {
                        next = Some(encode_cursor(q.order.key(last), &last.id));
                    }
                    break;
                }
            }
        }
        Ok(ListPage {
            tasks,
            next_cursor: next,
            total,
        })
    }

    async fn claim(
        &self,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<Claim>, StoreError> {
        let until = now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let mut g = self.lock()?;
        let mut out = Vec::new();
        while out.len() < max {
            let Some(id) = g.ready.pop_front() else { break };
            let Some(e) = g.entry_mut(&id) else {
                continue;
            };
            if e.lease.is_some() {
                continue;
            }
            e.lease = Some((worker.to_string(), until));
            e.epoch += 1;
            e.attempts += 1;
            out.push(Claim {
                task_id: id,
                worker: worker.to_string(),
                epoch: e.epoch,
                attempts: e.attempts,
            });
        }
        Ok(out)
    }

    async fn renew(
        &self,
        claim: &Claim,
        lease: Duration,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let until = now + chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::MAX);
        let mut g = self.lock()?;
        if !holds(g.entry(&claim.task_id), claim) {
            return Ok(false);
        }
        if let Some(e) = g.entry_mut(&claim.task_id) {
            e.lease = Some((claim.worker.clone(), until));
        }
        Ok(true)
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        {
            let mut g = self.lock()?;
            if !holds(g.entry(&claim.task_id), claim) {
                return Ok(());
            }
            if let Some(e) = g.entry_mut(&claim.task_id) {
                e.lease = None;
            }
            g.ready.push_back(claim.task_id.clone());
        }
        self.hub.work_queued();
        Ok(())
    }

    async fn drop_claim(&self, claim: &Claim) -> Result<(), StoreError> {
        let mut g = self.lock()?;
        if holds(g.entry(&claim.task_id), claim) {
            if let Some(s) = g.tasks.get_mut(&claim.task_id) {
                s.queue = None;
            }
            g.queued -= 1;
        }
        Ok(())
    }

    async fn reap(&self, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        let mut reaped = Vec::new();
        {
            let mut g = self.lock()?;
            for (id, s) in g.tasks.iter_mut() {
                if let Some(e) = &mut s.queue {
                    if e.lease.as_ref().is_some_and(|(_, until)| *until < now) {
                        e.lease = None;
                        reaped.push(id.clone());
                    }
                }
            }
            g.ready.extend(reaped.iter().cloned());
        }
        if !reaped.is_empty() {
            self.hub.work_queued();
        }
        Ok(reaped)
    }

    async fn sweep(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError> {
        let mut g = self.lock()?;
        let doomed: Vec<(TaskId, i64)> = g
            .tasks
            .values()
            .map(|s| &s.task)
            .filter(|t| t.state.is_terminal() && t.expires_at.is_some_and(|e| e < now))
            .take(limit)
            .map(|t| (t.id.clone(), t.created_at.timestamp_micros()))
            .collect();
        for (id, micros) in &doomed {
            if let Some(s) = g.tasks.remove(id) {
                if s.queue.is_some() {
                    g.queued -= 1;
                }
                if let Some(k) = s.idem {
                    g.idem.remove(&k);
                }
            }
            g.order.remove(&(*micros, id.clone()));
        }
        Ok(doomed.len())
    }

    async fn idle_expired(&self, now: Timestamp, limit: usize) -> Result<Vec<TaskId>, StoreError> {
        let g = self.lock()?;
        Ok(g.tasks
            .values()
            .map(|s| &s.task)
            .filter(|t| !t.state.is_terminal() && t.idle_expires_at.is_some_and(|e| e < now))
            .take(limit)
            .map(|t| t.id.clone())
            .collect())
    }

    async fn queue_depth(&self) -> Result<u64, StoreError> {
        Ok(self.lock()?.queued as u64)
    }

    async fn count_by_state(&self) -> Result<Vec<(TaskState, u64)>, StoreError> {
        let g = self.lock()?;
        let mut counts: HashMap<TaskState, u64> = HashMap::default();
        for s in g.tasks.values() {
            *counts.entry(s.task.state).or_default() += 1;
        }
        Ok(TaskState::ALL
            .into_iter()
            .map(|s| (s, counts.get(&s).copied().unwrap_or(0)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;

    fn event(seq: u64) -> Event {
        Event {
            task_id: TaskId::new(),
            seq,
            version: seq,
            at: chrono::Utc::now(),
            kind: EventKind::TurnStarted { turn: 1 },
        }
    }

    /// Short logs keep no spare capacity; long ones grow geometrically, so a task
    /// committing one event at a time reallocates its log O(log n) times, not n.
    #[test]
    fn logs_grow_exactly_while_short_then_geometrically() {
        let mut log = Vec::new();
        for seq in 1..=EXACT_LOG_GROWTH as u64 {
            grow_log(&mut log, 1);
            log.push(event(seq));
            assert_eq!(log.capacity(), log.len(), "short logs grow exactly");
        }
        let mut reallocations = 0;
        for seq in EXACT_LOG_GROWTH as u64 + 1..=4096 {
            let before = log.capacity();
            grow_log(&mut log, 1);
            if log.capacity() != before {
                reallocations += 1;
            }
            log.push(event(seq));
        }
        assert!(
            reallocations <= 12,
            "{reallocations} reallocations for 4080 appends"
        );
    }
}
