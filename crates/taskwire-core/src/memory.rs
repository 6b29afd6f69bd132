//! The in-memory store. For tests, benchmarks and `--store memory://`; nothing
//! survives the process.
//!
//! # Layout
//!
//! - Task slots (snapshot, event log, queue entry) live in `SHARDS` (64) maps, each
//!   behind its own mutex, chosen by a hash of the task id. A map that grows copies
//!   only its shard (of boxed slots, so small entries) and blocks only that shard.
//! - Idempotency keys live in as many shards of their own, chosen by a hash of the
//!   key, for the same reason.
//! - What spans tasks lives behind two more mutexes. The `Index`: the
//!   created-order and state-change-order listing indexes, the expiring terminal
//!   tasks and the inactivity deadlines of live tasks (ordered by those times), and
//!   the number of tasks in each state. The `Work` queue: the FIFO of claimable ids
//!   and the leases (ordered by a time no later than their end). So `reap`,
//!   `sweep`, `idle_expired` and `count_by_state` visit only what they need, not
//!   every task, and listing never sorts; and claims, which touch only the queue,
//!   do not wait for creates and state changes, which touch mostly the index.
//! - The number of queue entries is an atomic counter, changed under the shard lock
//!   of the entry's task.
//!
//! The indexes are exact: they reflect the stored snapshots (`state`,
//! `state_changed_at`, `expires_at` of terminal tasks, `idle_expires_at` of live
//! ones) and leases once every operation has returned; every change that moves an
//! index entry takes the index lock with the shard lock. A lease sits in the
//! queue's lease order at a time no later than its end (a renewal that extends it
//! does not move it; `reap` re-files it when it gets there). A create, commit or
//! sweep changes the slot's queue entry under the shard lock and files the change
//! in the queue (an id to claim, a lease that ended) right after, with no other
//! lock held: in between, a claim does not see the new id yet and the reaper finds
//! the ended lease stale. Readers of an index or of the queue still re-check each
//! entry against its slot under the shard lock.
//!
//! # Lock order
//!
//! An idempotency shard, then the index, then the work queue, then a task shard.
//! Any of them may be skipped, but a thread never takes a lock that comes earlier
//! in this order than one it holds, and never holds two shards of the same kind (so
//! `sweep` forgets the idempotency keys of the tasks it deleted only after
//! releasing the index, and `commit`, `renew` try the task shard alone first, then
//! drop it and take the index or the queue and the shard again when they must
//! change). No operation holds the index and the queue together. This order is
//! total, so there is no deadlock. The hub is published to and signalled only
//! after every lock is released, and no lock is held across an `.await` (the
//! methods have none inside).

use std::collections::{BTreeSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;

/// Hash maps keyed by ids, with a fast seeded hasher.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

use crate::error::StoreError;
use crate::event::Event;
use crate::ids::TaskId;
use crate::record::{PutOutcome, Quota, Record, RecordKind, RecordLease, RecordScope};
use crate::record_memory::{MemRecords, TaskLook};
use crate::store::{
    decode_cursor, encode_cursor, Claim, Commit, CreateOutcome, IdempotencyKey, ListOrder,
    ListPage, ListQuery, QueueOp, TaskStore, TaskWake, WakeHub,
};
use crate::types::{Task, TaskState, Timestamp};

/// log2 of the number of shards.
const SHARD_BITS: u32 = 6;
/// Number of task shards, and of idempotency-key shards.
const SHARDS: usize = 1 << SHARD_BITS;

/// Number of task states (the length of [`TaskState::ALL`]).
const STATES: usize = TaskState::ALL.len();

/// A value on its own cache line, so that two cores locking neighbouring shards
/// do not contend for one line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded<T>(T);

/// A lease on a queue entry.
#[derive(Debug)]
struct Lease {
    worker: String,
    until: Timestamp,
    /// The time under which the lease is filed in [`Index::leases`]; never after
    /// `until`.
    filed: Timestamp,
}

#[derive(Debug)]
struct Entry {
    lease: Option<Lease>,
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
    /// `created_at` in microseconds when the task was created: its key in
    /// [`Index::order`].
    created: i64,
}

/// One shard of the tasks. Slots are boxed, so that growing the map moves small
/// entries.
type TaskShard = HashMap<TaskId, Box<Slot>>;

/// One shard of the idempotency keys.
type IdemShard = HashMap<IdempotencyKey, TaskId>;

/// The claimable queue, under its own mutex.
#[derive(Debug, Default)]
struct Work {
    /// Candidates for claiming, in FIFO order; stale ids are skipped on pop.
    ready: VecDeque<TaskId>,
    /// (filed time, id) of every leased entry (see [`Lease::filed`]).
    leases: BTreeSet<(Timestamp, TaskId)>,
}

impl Work {
    /// Forgets a lease that ends (released, lapsed, or its entry deleted).
    fn unfile(&mut self, id: &TaskId, lease: &Lease) {
        self.unfile_at(id, lease.filed);
    }

    /// Forgets the lease of `id` filed at `filed`.
    fn unfile_at(&mut self, id: &TaskId, filed: Timestamp) {
        self.leases.remove(&(filed, id.clone()));
    }
}

/// What a create, commit or sweep leaves for the work queue, applied once the
/// index and shard locks are released.
#[derive(Debug, Default)]
#[must_use]
struct Filing {
    /// The `filed` time of the lease that ended (an operation ends at most one).
    ended: Option<Timestamp>,
    /// The entry became claimable.
    ready: bool,
}

/// The listing, expiry and count indexes, under one mutex.
#[derive(Debug, Default)]
struct Index {
    /// (created_at micros, id) for newest-first listing.
    order: BTreeSet<(i64, TaskId)>,
    /// (state_changed_at micros, id) for newest-first listing by status time.
    changed: BTreeSet<(i64, TaskId)>,
    /// (expires_at, id) of terminal tasks with an expiry.
    expiring: BTreeSet<(Timestamp, TaskId)>,
    /// (idle_expires_at, id) of non-terminal tasks with an inactivity deadline.
    idle: BTreeSet<(Timestamp, TaskId)>,
    /// Number of tasks per state, in the order of [`TaskState::ALL`].
    counts: [u64; STATES],
}

/// What the index knows about a task snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Keys {
    state: TaskState,
    /// `state_changed_at` in microseconds.
    changed: i64,
    /// `expires_at`, if the task is terminal.
    expiring: Option<Timestamp>,
    /// `idle_expires_at`, if the task is not terminal.
    idle: Option<Timestamp>,
}

fn keys(t: &Task) -> Keys {
    let terminal = t.state.is_terminal();
    Keys {
        state: t.state,
        changed: t.state_changed_at.timestamp_micros(),
        expiring: if terminal { t.expires_at } else { None },
        idle: if terminal { None } else { t.idle_expires_at },
    }
}

/// The position of a state in [`TaskState::ALL`].
fn state_pos(s: TaskState) -> Option<usize> {
    TaskState::ALL.iter().position(|x| *x == s)
}

/// Moves a task's entry in a time-ordered index.
fn refile<K: Ord + Copy>(
    set: &mut BTreeSet<(K, TaskId)>,
    id: &TaskId,
    old: Option<K>,
    new: Option<K>,
) {
    if old == new {
        return;
    }
    if let Some(k) = old {
        set.remove(&(k, id.clone()));
    }
    if let Some(k) = new {
        set.insert((k, id.clone()));
    }
}

impl Index {
    /// Moves a task from the index entries of `old` to those of `new` (either may
    /// be absent: a task being created or deleted).
    fn update(&mut self, id: &TaskId, old: Option<Keys>, new: Option<Keys>) {
        let state = |k: Option<Keys>| k.map(|k| k.state);
        if state(old) != state(new) {
            if let Some(c) = old
                .and_then(|k| state_pos(k.state))
                .and_then(|i| self.counts.get_mut(i))
            {
                *c = c.saturating_sub(1);
            }
            if let Some(c) = new
                .and_then(|k| state_pos(k.state))
                .and_then(|i| self.counts.get_mut(i))
            {
                *c += 1;
            }
        }
        refile(
            &mut self.changed,
            id,
            old.map(|k| k.changed),
            new.map(|k| k.changed),
        );
        refile(
            &mut self.expiring,
            id,
            old.and_then(|k| k.expiring),
            new.and_then(|k| k.expiring),
        );
        refile(
            &mut self.idle,
            id,
            old.and_then(|k| k.idle),
            new.and_then(|k| k.idle),
        );
    }
}

/// A store that keeps everything in memory.
#[derive(Debug)]
pub struct MemoryStore {
    /// Idempotency keys, by a hash of the key.
    idem: [Padded<Mutex<IdemShard>>; SHARDS],
    /// The listing, expiry and count indexes.
    index: Mutex<Index>,
    /// The claimable queue and the leases.
    work: Mutex<Work>,
    /// Task slots, by a hash of the id.
    tasks: [Padded<Mutex<TaskShard>>; SHARDS],
    /// Picks shards. Seeded apart from the maps' own hashers, so that the keys of
    /// one shard still spread over all the buckets of its map.
    picker: foldhash::fast::RandomState,
    /// Number of queue entries (available and leased).
    queued: AtomicUsize,
    /// Records (see [`crate::record`]); taken before a task shard.
    records: Mutex<MemRecords>,
    hub: WakeHub,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self {
            idem: std::array::from_fn(|_| Padded::default()),
            index: Mutex::default(),
            work: Mutex::default(),
            tasks: std::array::from_fn(|_| Padded::default()),
            picker: foldhash::fast::RandomState::default(),
            queued: AtomicUsize::new(0),
            records: Mutex::default(),
            hub: WakeHub::default(),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> Result<MutexGuard<'_, T>, StoreError> {
    m.lock()
        .map_err(|_| StoreError::Backend("memory store mutex poisoned".into()))
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The shard of a hashable key (from the top bits of its hash).
    fn pick<K: std::hash::Hash>(&self, key: &K) -> usize {
        (self.picker.hash_one(key) >> (64 - SHARD_BITS)) as usize & (SHARDS - 1)
    }

    fn index(&self) -> Result<MutexGuard<'_, Index>, StoreError> {
        lock(&self.index)
    }

    fn work(&self) -> Result<MutexGuard<'_, Work>, StoreError> {
        lock(&self.work)
    }

    /// Files in the work queue what an operation on `id` left for it (taken with
    /// no other lock held).
    fn file(&self, id: &TaskId, f: Filing) -> Result<(), StoreError> {
        if f.ended.is_none() && !f.ready {
            return Ok(());
        }
        let mut work = self.work()?;
        if let Some(filed) = f.ended {
            work.unfile_at(id, filed);
        }
        if f.ready {
            work.ready.push_back(id.clone());
        }
        Ok(())
    }

    /// Whether a task exists and is terminal (for the records).
    fn look(&self, id: &TaskId) -> Result<TaskLook, StoreError> {
        Ok(match self.shard(id)?.get(id) {
            None => TaskLook::Missing,
            Some(s) if s.task.state.is_terminal() => TaskLook::Terminal,
            Some(_) => TaskLook::Live,
        })
    }

    fn shard(&self, id: &TaskId) -> Result<MutexGuard<'_, TaskShard>, StoreError> {
        lock(&self.tasks[self.pick(id)].0)
    }

    fn idem_shard(&self, key: &IdempotencyKey) -> Result<MutexGuard<'_, IdemShard>, StoreError> {
        lock(&self.idem[self.pick(key)].0)
    }

    fn add_queued(&self) {
        self.queued.fetch_add(1, Ordering::SeqCst);
    }

    fn sub_queued(&self) {
        self.queued.fetch_sub(1, Ordering::SeqCst);
    }

    /// A commit under the task's shard lock alone, if it moves nothing in the
    /// index; otherwise the commit is handed back untouched.
    fn commit_fast(&self, c: Commit) -> Result<Result<(Arc<Task>, Filing), Commit>, StoreError> {
        let mut shard = self.shard(&c.task.id)?;
        let slot = shard.get_mut(&c.task.id).ok_or(StoreError::NotFound)?;
        check_commit(slot, &c)?;
        if keys(&slot.task) != keys(&c.task) {
            return Ok(Err(c));
        }
        let filing = self.queue_op(slot, c.queue);
        Ok(Ok((apply(slot, c), filing)))
    }

    /// A commit under the index lock and the task's shard lock; returns the old
    /// snapshot and what to file in the work queue.
    fn commit_indexed(&self, c: Commit) -> Result<(Arc<Task>, Filing), StoreError> {
        let id = c.task.id.clone();
        let mut idx = self.index()?;
        let mut shard = self.shard(&id)?;
        let slot = shard.get_mut(&id).ok_or(StoreError::NotFound)?;
        check_commit(slot, &c)?;
        let filing = self.queue_op(slot, c.queue);
        idx.update(&id, Some(keys(&slot.task)), Some(keys(&c.task)));
        Ok((apply(slot, c), filing))
    }

    /// Applies a commit's queue operation to the slot (under its shard lock).
    fn queue_op(&self, slot: &mut Slot, op: QueueOp) -> Filing {
        let mut f = Filing::default();
        match op {
            QueueOp::Keep => {}
            QueueOp::Enqueue => {
                if slot.queue.is_none() {
                    slot.queue = Some(fresh_entry());
                    self.add_queued();
                    f.ready = true;
                }
            }
            QueueOp::Requeue => {
                match &mut slot.queue {
                    Some(e) => {
                        if let Some(lease) = e.lease.take() {
                            f.ended = Some(lease.filed);
                        }
                        e.attempts = 0;
                    }
                    None => {
                        slot.queue = Some(fresh_entry());
                        self.add_queued();
                    }
                }
                f.ready = true;
            }
            QueueOp::Remove => {
                if let Some(e) = slot.queue.take() {
                    self.sub_queued();
                    if let Some(lease) = e.lease {
                        f.ended = Some(lease.filed);
                    }
                }
            }
        }
        f
    }
}

fn holds(entry: Option<&Entry>, claim: &Claim) -> bool {
    matches!(entry, Some(e) if e.epoch == claim.epoch
        && e.lease.as_ref().is_some_and(|l| l.worker == claim.worker))
}

/// The compare-and-set and fence checks of a commit.
fn check_commit(slot: &Slot, c: &Commit) -> Result<(), StoreError> {
    if slot.task.version != c.expected_version {
        return Err(StoreError::Conflict);
    }
    if let Some(f) = &c.fence {
        if !holds(slot.queue.as_ref(), f) {
            return Err(StoreError::LeaseLost);
        }
    }
    Ok(())
}

/// Appends a commit's events and replaces the snapshot; returns the old one (to
/// be freed outside the lock).
fn apply(slot: &mut Slot, c: Commit) -> Arc<Task> {
    grow_log(&mut slot.events, c.events.len());
    slot.events.extend(c.events);
    std::mem::replace(&mut slot.task, c.task)
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
            // Held to the end, so that a concurrent create with the same key waits
            // and then finds this task.
            let mut names = match &key {
                Some(k) => Some(self.idem_shard(k)?),
                None => None,
            };
            let existing = match (&key, &names) {
                (Some(k), Some(names)) => match names.get(k) {
                    // None if its task was swept and the key is about to go.
                    Some(existing) => self.shard(existing)?.get(existing).map(|s| s.task.clone()),
                    None => None,
                },
                _ => None,
            };
            if let Some(existing) = existing {
                drop(names);
                return Ok(CreateOutcome::Existing(existing));
            }
            // Grow the shard, if it is full, before taking the index lock, so that
            // the growth blocks only this shard.
            {
                let mut shard = self.shard(&id)?;
                if shard.len() == shard.capacity() {
                    shard.reserve(1);
                }
            }
            {
                let mut idx = self.index()?;
                let mut shard = self.shard(&id)?;
                if shard.contains_key(&id) {
                    return Err(StoreError::Backend("duplicate task id".into()));
                }
                let created = task.created_at.timestamp_micros();
                idx.order.insert((created, id.clone()));
                idx.update(&id, None, Some(keys(&task)));
                if enqueue {
                    self.add_queued();
                }
                let mut events = events;
                events.shrink_to_fit();
                shard.insert(
                    id.clone(),
                    Box::new(Slot {
                        task: task.clone(),
                        events,
                        queue: enqueue.then(fresh_entry),
                        idem: key.clone(),
                        created,
                    }),
                );
            }
            if let (Some(k), Some(names)) = (key, &mut names) {
                names.insert(k, id.clone());
            }
        }
        self.file(
            &id,
            Filing {
                ended: None,
                ready: enqueue,
            },
        )?;
        self.hub.publish(&id, wake);
        if enqueue {
            self.hub.work_queued();
        }
        Ok(CreateOutcome::Created(task))
    }

    async fn get_shared(&self, id: &TaskId) -> Result<Option<Arc<Task>>, StoreError> {
        Ok(self.shard(id)?.get(id).map(|s| s.task.clone()))
    }

    async fn commit(&self, c: Commit) -> Result<(), StoreError> {
        let id = c.task.id.clone();
        let wake = TaskWake {
            last_seq: c.task.last_seq,
            state: c.task.state,
        };
        // A commit that changes the state (it carries a status event) always moves
        // the index: it goes there directly, without first trying the shard lock
        // alone.
        let moves_index = c
            .events
            .iter()
            .any(|e| matches!(e.kind, crate::event::EventKind::Status { .. }));
        let (replaced, filing) = if moves_index {
            self.commit_indexed(c)?
        } else {
            match self.commit_fast(c)? {
                Ok(done) => done,
                // Re-checked under both locks: the task may have moved in between.
                Err(c) => self.commit_indexed(c)?,
            }
        };
        let queued = filing.ready;
        self.file(&id, filing)?;
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
        let shard = self.shard(id)?;
        let Some(log) = shard.get(id).map(|s| &s.events) else {
            return Ok(Vec::new());
        };
        // Sequence numbers start at 1 and have no gaps, so seq n sits at index n-1.
        let start = usize::try_from(after_seq)
            .unwrap_or(usize::MAX)
            .min(log.len());
        Ok(log[start..].iter().take(limit).cloned().collect())
    }

    async fn list(&self, q: &ListQuery) -> Result<ListPage, StoreError> {
        let after = match &q.cursor {
            Some(c) => Some(decode_cursor(c).ok_or_else(|| {
                StoreError::Backend("invalid cursor".into()) // mapped to InvalidInput by the service
            })?),
            None => None,
        };
        let size = q.page_size.clamp(1, 1000);
        let mut page: Vec<Arc<Task>> = Vec::new();
        let mut more = false;
        let mut total = 0u64;
        {
            let idx = self.index()?;
            // Both indexes hold (order key in microseconds, id), walked newest first.
            let walk = match q.order {
                ListOrder::Created => &idx.order,
                ListOrder::StateChanged => &idx.changed,
            };
            for (micros, id) in walk.iter().rev() {
                let shard = self.shard(id)?;
                let Some(t) = shard.get(id).map(|s| &s.task) else {
                    continue;
                };
                if !q.matches(t) {
                    continue;
                }
                // `total` counts every match; the page stops at `size`.
                total += 1;
                if more {
                    continue;
                }
                let past_cursor = match &after {
                    Some((cm, cid)) => (*micros, t.id.as_str()) < (*cm, cid.as_str()),
                    None => true,
                };
                if past_cursor {
                    if page.len() < size {
                        page.push(t.clone());
                    } else {
                        more = true;
                    }
                }
            }
        }
        let next = if more {
            page.last()
                .map(|last| encode_cursor(q.order.key(last), &last.id))
        } else {
            None
        };
        // Copied outside the locks.
        let tasks = page.into_iter().map(Arc::unwrap_or_clone).collect();
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
        let mut idx = self.work()?;
        let mut out = Vec::new();
        while out.len() < max {
            let Some(id) = idx.ready.pop_front() else {
                break;
            };
            let mut shard = self.shard(&id)?;
            let Some(e) = shard.get_mut(&id).and_then(|s| s.queue.as_mut()) else {
                continue;
            };
            if e.lease.is_some() {
                continue;
            }
            e.lease = Some(Lease {
                worker: worker.to_string(),
                until,
                filed: until,
            });
            e.epoch += 1;
            e.attempts += 1;
            let (epoch, attempts) = (e.epoch, e.attempts);
            drop(shard);
            idx.leases.insert((until, id.clone()));
            out.push(Claim {
                task_id: id,
                worker: worker.to_string(),
                epoch,
                attempts,
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
        let id = &claim.task_id;
        {
            // A renewal that ends no earlier than where the lease is filed leaves
            // the index alone.
            let mut shard = self.shard(id)?;
            let entry = shard.get_mut(id).and_then(|s| s.queue.as_mut());
            if !holds(entry.as_deref(), claim) {
                return Ok(false);
            }
            if let Some(l) = entry.and_then(|e| e.lease.as_mut()) {
                if until >= l.filed {
                    l.until = until;
                    return Ok(true);
                }
            }
        }
        // The lease ends earlier than it is filed: re-file it, re-checking under
        // both locks.
        let mut idx = self.work()?;
        let mut shard = self.shard(id)?;
        let entry = shard.get_mut(id).and_then(|s| s.queue.as_mut());
        if !holds(entry.as_deref(), claim) {
            return Ok(false);
        }
        if let Some(l) = entry.and_then(|e| e.lease.as_mut()) {
            idx.unfile(id, l);
            idx.leases.insert((until, id.clone()));
            l.filed = until;
            l.until = until;
        }
        Ok(true)
    }

    async fn release(&self, claim: &Claim) -> Result<(), StoreError> {
        {
            let mut idx = self.work()?;
            let mut shard = self.shard(&claim.task_id)?;
            let entry = shard.get_mut(&claim.task_id).and_then(|s| s.queue.as_mut());
            if !holds(entry.as_deref(), claim) {
                return Ok(());
            }
            if let Some(lease) = entry.and_then(|e| e.lease.take()) {
                idx.unfile(&claim.task_id, &lease);
            }
            drop(shard);
            idx.ready.push_back(claim.task_id.clone());
        }
        self.hub.work_queued();
        Ok(())
    }

    async fn drop_claim(&self, claim: &Claim) -> Result<(), StoreError> {
        let mut idx = self.work()?;
        let mut shard = self.shard(&claim.task_id)?;
        let Some(slot) = shard.get_mut(&claim.task_id) else {
            return Ok(());
        };
        if holds(slot.queue.as_ref(), claim) {
            if let Some(lease) = slot.queue.take().and_then(|e| e.lease) {
                idx.unfile(&claim.task_id, &lease);
            }
            self.sub_queued();
        }
        Ok(())
    }

    async fn reap(&self, now: Timestamp) -> Result<Vec<TaskId>, StoreError> {
        let mut reaped = Vec::new();
        {
            let mut idx = self.work()?;
            // Only leases filed before `now`; each is re-checked against its entry.
            while idx.leases.first().is_some_and(|(at, _)| *at < now) {
                let Some((filed, id)) = idx.leases.pop_first() else {
                    break;
                };
                let mut shard = self.shard(&id)?;
                let Some(e) = shard.get_mut(&id).and_then(|s| s.queue.as_mut()) else {
                    continue; // stale
                };
                let Some(l) = e.lease.as_mut() else {
                    continue; // stale
                };
                if l.filed != filed {
                    continue; // stale: the lease is filed elsewhere
                }
                if l.until < now {
                    e.lease = None;
                    reaped.push(id);
                } else {
                    // Renewed since it was filed: file it at its end.
                    l.filed = l.until;
                    let until = l.until;
                    drop(shard);
                    idx.leases.insert((until, id));
                }
            }
            idx.ready.extend(reaped.iter().cloned());
        }
        if !reaped.is_empty() {
            self.hub.work_queued();
        }
        Ok(reaped)
    }

    async fn sweep(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError> {
        let mut doomed: Vec<(TaskId, Box<Slot>)> = Vec::new();
        {
            let mut idx = self.index()?;
            while doomed.len() < limit {
                let Some((at, id)) = idx.expiring.first().cloned() else {
                    break;
                };
                if at >= now {
                    break;
                }
                let mut shard = self.shard(&id)?;
                let current = shard
                    .get(&id)
                    .is_some_and(|s| keys(&s.task).expiring == Some(at));
                if !current {
                    drop(shard);
                    idx.expiring.remove(&(at, id));
                    continue; // stale
                }
                let Some(slot) = shard.remove(&id) else {
                    continue;
                };
                drop(shard);
                if slot.queue.is_some() {
                    self.sub_queued();
                }
                idx.order.remove(&(slot.created, id.clone()));
                idx.update(&id, Some(keys(&slot.task)), None);
                doomed.push((id, slot));
            }
        }
        // Ended leases and the keys go after the index lock is released (see the
        // lock order); a create that meanwhile finds a key whose task is gone
        // creates anew, and a key that names a newer task by then is kept.
        {
            let mut work = self.work()?;
            for (id, slot) in &doomed {
                if let Some(lease) = slot.queue.as_ref().and_then(|e| e.lease.as_ref()) {
                    work.unfile(id, lease);
                }
            }
        }
        for (id, slot) in &doomed {
            if let Some(k) = &slot.idem {
                let mut names = self.idem_shard(k)?;
                if names.get(k) == Some(id) {
                    names.remove(k);
                }
            }
        }
        if !doomed.is_empty() {
            let mut records = lock(&self.records)?;
            for (id, _) in &doomed {
                records.delete_task(id);
            }
        }
        // The slots and their logs are freed outside the locks.
        Ok(doomed.len())
    }

    async fn put_record(
        &self,
        record: Record,
        quota: Option<Quota>,
    ) -> Result<PutOutcome, StoreError> {
        let mut records = lock(&self.records)?;
        records.put(record, quota, &mut |t| self.look(t))
    }

    async fn get_record(&self, kind: RecordKind, id: &str) -> Result<Option<Record>, StoreError> {
        Ok(lock(&self.records)?.get(kind, id))
    }

    async fn list_records(
        &self,
        kind: RecordKind,
        scope: &RecordScope,
    ) -> Result<Vec<Record>, StoreError> {
        Ok(lock(&self.records)?.list(kind, scope))
    }

    async fn update_record(
        &self,
        record: &Record,
        fence: Option<&RecordLease>,
    ) -> Result<u64, StoreError> {
        lock(&self.records)?.update(record, fence)
    }

    async fn delete_record(&self, kind: RecordKind, id: &str) -> Result<bool, StoreError> {
        Ok(lock(&self.records)?.delete(kind, id))
    }

    async fn claim_records(
        &self,
        kind: RecordKind,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Result<Vec<(Record, RecordLease)>, StoreError> {
        Ok(lock(&self.records)?.claim(kind, worker, max, lease, now))
    }

    async fn renew_record(
        &self,
        lease: &RecordLease,
        duration: Duration,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        Ok(lock(&self.records)?.renew(lease, duration, now))
    }

    async fn release_record(&self, lease: &RecordLease) -> Result<(), StoreError> {
        lock(&self.records)?.release(lease);
        Ok(())
    }

    async fn sweep_records(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError> {
        Ok(lock(&self.records)?.sweep(now, limit))
    }

    async fn count_records(&self) -> Result<Vec<(RecordKind, u64)>, StoreError> {
        Ok(lock(&self.records)?.counts())
    }

    async fn idle_expired(&self, now: Timestamp, limit: usize) -> Result<Vec<TaskId>, StoreError> {
        let mut out = Vec::new();
        let mut stale = Vec::new();
        let mut idx = self.index()?;
        for (at, id) in idx.idle.iter() {
            if out.len() >= limit || *at >= now {
                break;
            }
            let current = self
                .shard(id)?
                .get(id)
                .is_some_and(|s| keys(&s.task).idle == Some(*at));
            if current {
                out.push(id.clone());
            } else {
                stale.push((*at, id.clone()));
            }
        }
        for entry in &stale {
            idx.idle.remove(entry);
        }
        Ok(out)
    }

    async fn queue_depth(&self) -> Result<u64, StoreError> {
        Ok(self.queued.load(Ordering::SeqCst) as u64)
    }

    async fn count_by_state(&self) -> Result<Vec<(TaskState, u64)>, StoreError> {
        let counts = self.index()?.counts;
        Ok(TaskState::ALL.into_iter().zip(counts).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;
    use crate::service::{CreateTask, TaskService};
    use crate::types::{Caller, Message};

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

    /// A deterministic pseudo-random sequence (64-bit LCG, high bits).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn pick<T: Copy>(&mut self, items: &[T]) -> T {
            items[self.below(items.len() as u64) as usize]
        }
    }

    /// A task as the service creates it, to copy under new ids.
    async fn template() -> Task {
        let svc = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
        let mut m = Message::user_text("hi");
        m.message_id = "m1".into();
        let created = svc
            .create(&Caller::new("t1", "alice"), CreateTask::new(m))
            .await
            .unwrap();
        (*created.task).clone()
    }

    fn copy(template: &Task) -> Task {
        let mut t = template.clone();
        t.id = TaskId::new();
        t
    }

    async fn put(store: &MemoryStore, t: Task, enqueue: bool) -> TaskId {
        match store.create(t, Vec::new(), None, enqueue).await.unwrap() {
            CreateOutcome::Created(t) => t.id.clone(),
            CreateOutcome::Existing(_) => panic!("no key, no existing task"),
        }
    }

    /// Commits a change of the stored snapshot.
    async fn change(
        store: &MemoryStore,
        id: &TaskId,
        queue: QueueOp,
        fence: Option<Claim>,
        f: impl FnOnce(&mut Task),
    ) -> Result<(), StoreError> {
        let old = store.get(id).await?.ok_or(StoreError::NotFound)?;
        let mut t = old.clone();
        t.version += 1;
        f(&mut t);
        store
            .commit(Commit {
                task: Arc::new(t),
                expected_version: old.version,
                events: Vec::new(),
                queue,
                fence,
            })
            .await
    }

    fn end(t: &mut Task, state: TaskState, expires_at: Option<Timestamp>) {
        t.state = state;
        t.state_changed_at = chrono::Utc::now();
        t.idle_expires_at = None;
        t.expires_at = expires_at;
    }

    /// What a full scan sees of one slot.
    struct Scanned {
        shard: usize,
        id: TaskId,
        task: Arc<Task>,
        /// The queue entry, as its lease's (filed, until) if leased.
        queue: Option<Option<(Timestamp, Timestamp)>>,
        created: i64,
    }

    fn scan(store: &MemoryStore) -> Vec<Scanned> {
        let mut out = Vec::new();
        for (i, shard) in store.tasks.iter().enumerate() {
            for (id, s) in shard.0.lock().unwrap().iter() {
                out.push(Scanned {
                    shard: i,
                    id: id.clone(),
                    task: s.task.clone(),
                    queue: s
                        .queue
                        .as_ref()
                        .map(|e| e.lease.as_ref().map(|l| (l.filed, l.until))),
                    created: s.created,
                });
            }
        }
        out
    }

    /// The indexes, counters and queue agree with a full scan of the slots.
    fn check_invariants(store: &MemoryStore) {
        let idx = store.index.lock().unwrap();
        let work = store.work.lock().unwrap();
        let slots = scan(store);
        let mut counts = [0u64; STATES];
        let mut order = BTreeSet::new();
        let mut changed = BTreeSet::new();
        let mut expiring = BTreeSet::new();
        let mut idle = BTreeSet::new();
        let mut leases = BTreeSet::new();
        let mut queued = 0;
        for Scanned {
            shard,
            id,
            task: t,
            queue: q,
            created,
        } in &slots
        {
            assert_eq!(store.pick(id), *shard, "a task sits in the shard of its id");
            counts[state_pos(t.state).unwrap()] += 1;
            order.insert((*created, id.clone()));
            let k = keys(t);
            changed.insert((k.changed, id.clone()));
            if let Some(e) = k.expiring {
                expiring.insert((e, id.clone()));
            }
            if let Some(e) = k.idle {
                idle.insert((e, id.clone()));
            }
            if let Some(entry) = q {
                queued += 1;
                match entry {
                    Some((filed, until)) => {
                        assert!(filed <= until, "a lease is filed no later than its end");
                        leases.insert((*filed, id.clone()));
                    }
                    None => assert!(
                        work.ready.contains(id),
                        "an available entry is in the ready queue"
                    ),
                }
            }
        }
        assert_eq!(idx.counts, counts);
        assert_eq!(idx.order, order);
        assert_eq!(idx.changed, changed);
        assert_eq!(idx.expiring, expiring);
        assert_eq!(idx.idle, idle);
        assert_eq!(work.leases, leases);
        assert_eq!(store.queued.load(Ordering::SeqCst), queued);
    }

    fn counted(counts: &[(TaskState, u64)], s: TaskState) -> u64 {
        counts.iter().find(|(x, _)| *x == s).map_or(0, |(_, n)| *n)
    }

    /// `count_by_state` reads counters that follow creates, commits and sweeps.
    #[tokio::test]
    async fn counts_follow_creates_commits_and_sweeps() {
        let tpl = template().await;
        let store = MemoryStore::new();
        let now = chrono::Utc::now();
        let mut ids = Vec::new();
        for _ in 0..10 {
            ids.push(put(&store, copy(&tpl), true).await);
        }
        let c = store.count_by_state().await.unwrap();
        assert_eq!(c.len(), TaskState::ALL.len());
        assert_eq!(counted(&c, TaskState::Submitted), 10);
        for id in &ids[..3] {
            change(&store, id, QueueOp::Keep, None, |t| {
                t.state = TaskState::Working;
            })
            .await
            .unwrap();
        }
        for id in &ids[3..5] {
            change(&store, id, QueueOp::Remove, None, |t| {
                end(
                    t,
                    TaskState::Completed,
                    Some(now - chrono::Duration::seconds(1)),
                );
            })
            .await
            .unwrap();
        }
        change(&store, &ids[5], QueueOp::Remove, None, |t| {
            end(
                t,
                TaskState::Canceled,
                Some(now + chrono::Duration::hours(1)),
            );
        })
        .await
        .unwrap();
        let c = store.count_by_state().await.unwrap();
        assert_eq!(counted(&c, TaskState::Submitted), 4);
        assert_eq!(counted(&c, TaskState::Working), 3);
        assert_eq!(counted(&c, TaskState::Completed), 2);
        assert_eq!(counted(&c, TaskState::Canceled), 1);
        assert_eq!(store.queue_depth().await.unwrap(), 7);
        check_invariants(&store);
        assert_eq!(store.sweep(now, 100).await.unwrap(), 2);
        let c = store.count_by_state().await.unwrap();
        assert_eq!(counted(&c, TaskState::Completed), 0);
        assert_eq!(counted(&c, TaskState::Canceled), 1);
        assert_eq!(c.iter().map(|(_, n)| n).sum::<u64>(), 8);
        check_invariants(&store);
    }

    /// `reap` visits only the lease index: it returns lapsed leases only, and a
    /// lease renewed after it was filed is re-filed at its new end, not reaped.
    #[tokio::test]
    async fn reap_returns_lapsed_leases_and_skips_renewed_ones() {
        let tpl = template().await;
        let store = MemoryStore::new();
        for _ in 0..50 {
            put(&store, copy(&tpl), false).await;
        }
        let ids = [
            put(&store, copy(&tpl), true).await,
            put(&store, copy(&tpl), true).await,
            put(&store, copy(&tpl), true).await,
        ];
        let now = chrono::Utc::now();
        let secs = chrono::Duration::seconds;
        let claims = store
            .claim("w", 10, Duration::from_secs(10), now)
            .await
            .unwrap();
        assert_eq!(
            claims.iter().map(|c| c.task_id.clone()).collect::<Vec<_>>(),
            ids.to_vec()
        );
        assert_eq!(store.work.lock().unwrap().leases.len(), 3);
        // Extended to now+15 (stays filed at now+10); shortened to now+1 (re-filed).
        assert!(store
            .renew(&claims[0], Duration::from_secs(10), now + secs(5))
            .await
            .unwrap());
        assert!(store
            .renew(&claims[2], Duration::from_secs(1), now)
            .await
            .unwrap());
        check_invariants(&store);
        assert_eq!(
            store.reap(now + secs(2)).await.unwrap(),
            vec![ids[2].clone()]
        );
        assert_eq!(
            store.reap(now + secs(11)).await.unwrap(),
            vec![ids[1].clone()]
        );
        assert!(store
            .work
            .lock()
            .unwrap()
            .leases
            .contains(&(now + secs(15), ids[0].clone())));
        check_invariants(&store);
        assert!(store.reap(now + secs(14)).await.unwrap().is_empty());
        assert_eq!(
            store.reap(now + secs(16)).await.unwrap(),
            vec![ids[0].clone()]
        );
        assert!(store.work.lock().unwrap().leases.is_empty());
        // The old holder is fenced off; the entries are claimable again.
        assert!(!store
            .renew(&claims[0], Duration::from_secs(10), now)
            .await
            .unwrap());
        assert_eq!(
            store
                .claim("w2", 10, Duration::from_secs(10), now + secs(16))
                .await
                .unwrap()
                .len(),
            3
        );
        check_invariants(&store);
    }

    /// A lease that ends (commit, release, drop) leaves the lease index at once,
    /// so reaping never wades through finished work.
    #[tokio::test]
    async fn ended_leases_leave_the_lease_index() {
        let tpl = template().await;
        let store = MemoryStore::new();
        let ids = [
            put(&store, copy(&tpl), true).await,
            put(&store, copy(&tpl), true).await,
            put(&store, copy(&tpl), true).await,
            put(&store, copy(&tpl), true).await,
        ];
        let now = chrono::Utc::now();
        let claims = store
            .claim("w", 10, Duration::from_secs(10), now)
            .await
            .unwrap();
        assert_eq!(claims.len(), 4);
        change(
            &store,
            &ids[0],
            QueueOp::Remove,
            Some(claims[0].clone()),
            |t| {
                end(t, TaskState::Completed, None);
            },
        )
        .await
        .unwrap();
        change(
            &store,
            &ids[1],
            QueueOp::Requeue,
            Some(claims[1].clone()),
            |_| {},
        )
        .await
        .unwrap();
        store.release(&claims[2]).await.unwrap();
        store.drop_claim(&claims[3]).await.unwrap();
        assert!(store.work.lock().unwrap().leases.is_empty());
        assert_eq!(store.queue_depth().await.unwrap(), 2);
        check_invariants(&store);
    }

    /// `sweep` and `idle_expired` re-check each index entry against its task and
    /// skip (and drop) stale ones; a task committed after it was indexed is judged
    /// by what it is now.
    #[tokio::test]
    async fn sweep_and_idle_expired_skip_stale_entries() {
        let tpl = template().await;
        let store = MemoryStore::new();
        let now = chrono::Utc::now();
        let past = now - chrono::Duration::seconds(5);
        let idle = put(&store, copy(&tpl), false).await;
        change(&store, &idle, QueueOp::Keep, None, |t| {
            t.state = TaskState::InputRequired;
            t.idle_expires_at = Some(past);
        })
        .await
        .unwrap();
        let done = put(&store, copy(&tpl), false).await;
        change(&store, &done, QueueOp::Keep, None, |t| {
            end(t, TaskState::Completed, Some(past));
        })
        .await
        .unwrap();
        // Answered in time: no longer idle-expired.
        let answered = put(&store, copy(&tpl), false).await;
        change(&store, &answered, QueueOp::Keep, None, |t| {
            t.state = TaskState::InputRequired;
            t.idle_expires_at = Some(past);
        })
        .await
        .unwrap();
        change(&store, &answered, QueueOp::Enqueue, None, |t| {
            t.state = TaskState::Working;
            t.idle_expires_at = None;
        })
        .await
        .unwrap();
        // Reopened with a new expiry (never done by the service, allowed by the store).
        let kept = put(&store, copy(&tpl), false).await;
        change(&store, &kept, QueueOp::Keep, None, |t| {
            end(t, TaskState::Failed, Some(past));
        })
        .await
        .unwrap();
        change(&store, &kept, QueueOp::Keep, None, |t| {
            t.expires_at = Some(now + chrono::Duration::hours(1));
        })
        .await
        .unwrap();
        check_invariants(&store);
        // Stale entries, as a lazily maintained index would hold them.
        {
            let mut idx = store.index.lock().unwrap();
            idx.idle.insert((past, done.clone()));
            idx.idle.insert((past, answered.clone()));
            idx.expiring.insert((past, idle.clone()));
            idx.expiring.insert((past, kept.clone()));
            idx.expiring.insert((past, TaskId::new()));
        }
        assert_eq!(
            store.idle_expired(now, 10).await.unwrap(),
            vec![idle.clone()]
        );
        assert_eq!(store.sweep(now, 10).await.unwrap(), 1);
        assert!(store.get(&done).await.unwrap().is_none());
        for id in [&idle, &answered, &kept] {
            assert!(store.get(id).await.unwrap().is_some());
        }
        // The stale entries are gone.
        check_invariants(&store);
        // Committed after being indexed: judged by its new deadline.
        change(&store, &idle, QueueOp::Keep, None, |t| {
            t.idle_expires_at = Some(now + chrono::Duration::hours(1));
        })
        .await
        .unwrap();
        assert!(store.idle_expired(now, 10).await.unwrap().is_empty());
        check_invariants(&store);
    }

    /// Limits are honoured and candidates come earliest deadline first.
    #[tokio::test]
    async fn sweep_and_idle_expired_honour_limits() {
        let tpl = template().await;
        let store = MemoryStore::new();
        let now = chrono::Utc::now();
        let mut idle = Vec::new();
        for i in 0..5 {
            let id = put(&store, copy(&tpl), false).await;
            change(&store, &id, QueueOp::Keep, None, |t| {
                t.state = TaskState::AuthRequired;
                t.idle_expires_at = Some(now - chrono::Duration::seconds(10 - i));
            })
            .await
            .unwrap();
            idle.push(id);
            let done = put(&store, copy(&tpl), false).await;
            change(&store, &done, QueueOp::Keep, None, |t| {
                end(
                    t,
                    TaskState::Rejected,
                    Some(now - chrono::Duration::seconds(1)),
                );
            })
            .await
            .unwrap();
        }
        assert_eq!(
            store.idle_expired(now, 2).await.unwrap(),
            idle[..2].to_vec()
        );
        assert_eq!(
            store.idle_expired(now, 0).await.unwrap(),
            Vec::<TaskId>::new()
        );
        assert_eq!(store.sweep(now, 0).await.unwrap(), 0);
        assert_eq!(store.sweep(now, 3).await.unwrap(), 3);
        assert_eq!(store.sweep(now, 3).await.unwrap(), 2);
        assert_eq!(store.sweep(now, 3).await.unwrap(), 0);
        check_invariants(&store);
    }

    /// The listing of the state-change index, page by page, equals what the store
    /// returned before it had one: every match, sorted by (micros, id) descending.
    #[tokio::test]
    async fn state_changed_listing_equals_a_full_sort() {
        let tpl = template().await;
        let store = MemoryStore::new();
        let mut rng = Rng(7);
        let base = chrono::Utc::now();
        // Few distinct times, so that many ties are broken by id.
        let at = |rng: &mut Rng| base + chrono::Duration::microseconds(rng.below(60) as i64 * 500);
        let mut ids = Vec::new();
        for _ in 0..300 {
            let mut t = copy(&tpl);
            t.owner = rng.pick(&["alice", "bob"]).into();
            t.state = rng.pick(&TaskState::ALL);
            t.created_at = at(&mut rng);
            t.state_changed_at = at(&mut rng);
            ids.push(put(&store, t, false).await);
        }
        for _ in 0..200 {
            let id = ids[rng.below(ids.len() as u64) as usize].clone();
            let state = rng.pick(&TaskState::ALL);
            let changed = at(&mut rng);
            change(&store, &id, QueueOp::Keep, None, |t| {
                t.state = state;
                t.state_changed_at = changed;
            })
            .await
            .unwrap();
        }
        check_invariants(&store);
        let queries = [
            ListQuery::default(),
            ListQuery {
                owner: Some("bob".into()),
                ..ListQuery::default()
            },
            ListQuery {
                state: Some(TaskState::Working),
                ..ListQuery::default()
            },
            ListQuery {
                changed_since: Some(base + chrono::Duration::microseconds(15_000)),
                ..ListQuery::default()
            },
            ListQuery {
                tenant: "nobody".into(),
                ..ListQuery::default()
            },
        ];
        let all: Vec<Task> = scan(&store)
            .into_iter()
            .map(|s| Task::clone(&s.task))
            .collect();
        for order in [ListOrder::StateChanged, ListOrder::Created] {
            for q in &queries {
                let q = ListQuery {
                    tenant: if q.tenant.is_empty() {
                        "t1".into()
                    } else {
                        q.tenant.clone()
                    },
                    order,
                    page_size: 7,
                    ..q.clone()
                };
                // The old implementation: filter everything, then sort.
                let mut want: Vec<&Task> = all
                    .iter()
                    .filter(|t| {
                        t.tenant == q.tenant
                            && q.owner.as_ref().is_none_or(|o| *o == t.owner)
                            && q.state.is_none_or(|s| s == t.state)
                            && q.changed_since.is_none_or(|c| {
                                t.state_changed_at.timestamp_micros() >= c.timestamp_micros()
                            })
                    })
                    .collect();
                want.sort_unstable_by(|a, b| {
                    let (ka, kb) = (
                        order.key(a).timestamp_micros(),
                        order.key(b).timestamp_micros(),
                    );
                    (kb, &b.id).cmp(&(ka, &a.id))
                });
                let want: Vec<TaskId> = want.into_iter().map(|t| t.id.clone()).collect();
                let mut got = Vec::new();
                let mut cursor = None;
                loop {
                    let page = store
                        .list(&ListQuery {
                            cursor: cursor.clone(),
                            ..q.clone()
                        })
                        .await
                        .unwrap();
                    assert_eq!(page.total, want.len() as u64);
                    assert!(page.tasks.len() <= 7);
                    got.extend(page.tasks.into_iter().map(|t| t.id));
                    match page.next_cursor {
                        Some(c) => cursor = Some(c),
                        None => break,
                    }
                }
                assert_eq!(got, want, "{order:?} {q:?}");
            }
        }
    }

    /// Many concurrent creates with one idempotency key make one task: one
    /// `Created`, every other one `Existing` with the same task.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_creates_with_one_key_make_one_task() {
        let tpl = template().await;
        for round in 0..200 {
            let store = Arc::new(MemoryStore::new());
            let key = IdempotencyKey {
                tenant: "t1".into(),
                owner: "alice".into(),
                message_id: format!("m{round}"),
            };
            // Lined up, so that the creates overlap.
            let start = Arc::new(tokio::sync::Barrier::new(32));
            let mut handles = Vec::new();
            for _ in 0..32 {
                let (store, key, t) = (store.clone(), key.clone(), copy(&tpl));
                let start = start.clone();
                handles.push(tokio::spawn(async move {
                    start.wait().await;
                    store.create(t, Vec::new(), Some(key), true).await
                }));
            }
            let mut created = Vec::new();
            let mut existing = Vec::new();
            for h in handles {
                match h.await.unwrap().unwrap() {
                    CreateOutcome::Created(t) => created.push(t.id.clone()),
                    CreateOutcome::Existing(t) => existing.push(t.id.clone()),
                }
            }
            assert_eq!(created.len(), 1, "round {round}");
            assert!(existing.iter().all(|id| *id == created[0]));
            assert_eq!(store.queue_depth().await.unwrap(), 1);
            let counts = store.count_by_state().await.unwrap();
            assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), 1);
            check_invariants(&store);
        }
    }

    /// A duplicate id is refused and leaves nothing behind.
    #[tokio::test]
    async fn duplicate_ids_are_refused() {
        let tpl = template().await;
        let store = MemoryStore::new();
        let t = copy(&tpl);
        put(&store, t.clone(), true).await;
        let key = IdempotencyKey {
            tenant: "t1".into(),
            owner: "alice".into(),
            message_id: "other".into(),
        };
        let err = store.create(t, Vec::new(), Some(key.clone()), true).await;
        assert!(matches!(err, Err(StoreError::Backend(m)) if m == "duplicate task id"));
        assert!(store.idem[store.pick(&key)].0.lock().unwrap().is_empty());
        assert_eq!(store.queue_depth().await.unwrap(), 1);
        check_invariants(&store);
    }

    /// Where random operations draw their tasks and claims from.
    #[derive(Default)]
    struct Pool {
        ids: std::sync::Mutex<Vec<TaskId>>,
        claims: std::sync::Mutex<Vec<Claim>>,
    }

    impl Pool {
        fn any_id(&self, rng: &mut Rng) -> Option<TaskId> {
            let ids = self.ids.lock().unwrap();
            (!ids.is_empty()).then(|| ids[rng.below(ids.len() as u64) as usize].clone())
        }

        fn any_claim(&self, rng: &mut Rng) -> Option<Claim> {
            let claims = self.claims.lock().unwrap();
            (!claims.is_empty()).then(|| claims[rng.below(claims.len() as u64) as usize].clone())
        }
    }

    /// One random operation of any kind, at a random time within 100 s of `base`.
    async fn random_op(
        store: &MemoryStore,
        tpl: &Task,
        base: Timestamp,
        pool: &Pool,
        rng: &mut Rng,
    ) {
        let at = |rng: &mut Rng| base + chrono::Duration::seconds(rng.below(100) as i64);
        let ops = [
            QueueOp::Keep,
            QueueOp::Enqueue,
            QueueOp::Requeue,
            QueueOp::Remove,
        ];
        match rng.below(10) {
            0 => {
                let mut t = copy(tpl);
                t.created_at = at(rng);
                let key = (rng.below(2) == 0).then(|| IdempotencyKey {
                    tenant: "t1".into(),
                    owner: "alice".into(),
                    message_id: format!("m{}", rng.below(20)),
                });
                let enqueue = rng.below(2) == 0;
                if let CreateOutcome::Created(t) =
                    store.create(t, Vec::new(), key, enqueue).await.unwrap()
                {
                    pool.ids.lock().unwrap().push(t.id.clone());
                }
            }
            1..=3 => {
                let Some(id) = pool.any_id(rng) else { return };
                let state = rng.pick(&TaskState::ALL);
                let changed = at(rng);
                let expires = (rng.below(2) == 0).then(|| at(rng));
                let idle = (rng.below(2) == 0).then(|| at(rng));
                let fence = if rng.below(3) == 0 {
                    pool.any_claim(rng)
                } else {
                    None
                };
                let op = rng.pick(&ops);
                let same_keys = rng.below(3) == 0;
                let r = change(store, &id, op, fence, |t| {
                    if !same_keys {
                        t.state = state;
                        t.state_changed_at = changed;
                        t.expires_at = expires;
                        t.idle_expires_at = idle;
                    }
                })
                .await;
                assert!(
                    matches!(
                        r,
                        Ok(())
                            | Err(StoreError::NotFound
                                | StoreError::LeaseLost
                                | StoreError::Conflict)
                    ),
                    "{r:?}"
                );
            }
            4 => {
                let now = at(rng);
                let n = rng.below(4) as usize;
                let lease = Duration::from_secs(rng.below(60));
                let got = store.claim("w", n, lease, now).await.unwrap();
                pool.claims.lock().unwrap().extend(got);
            }
            5 => {
                let Some(c) = pool.any_claim(rng) else { return };
                let now = at(rng);
                let lease = Duration::from_secs(rng.below(60));
                match rng.below(3) {
                    0 => {
                        store.renew(&c, lease, now).await.unwrap();
                    }
                    1 => store.release(&c).await.unwrap(),
                    _ => store.drop_claim(&c).await.unwrap(),
                }
            }
            6 => {
                store.reap(at(rng)).await.unwrap();
            }
            7 => {
                let limit = rng.below(5) as usize;
                store.sweep(at(rng), limit).await.unwrap();
            }
            8 => {
                let now = at(rng);
                let limit = rng.below(5) as usize;
                let got = store.idle_expired(now, limit).await.unwrap();
                assert!(got.len() <= limit);
            }
            _ => {
                let q = ListQuery {
                    tenant: "t1".into(),
                    order: rng.pick(&[ListOrder::Created, ListOrder::StateChanged]),
                    page_size: 5,
                    ..ListQuery::default()
                };
                let page = store.list(&q).await.unwrap();
                assert!(page.tasks.len() <= 5);
            }
        }
    }

    /// Random operations of every kind keep the indexes, counters and queue exact.
    #[tokio::test]
    async fn random_operations_keep_the_indexes_exact() {
        let tpl = template().await;
        let store = MemoryStore::new();
        let pool = Pool::default();
        let mut rng = Rng(42);
        let base = chrono::Utc::now();
        for _ in 0..3000 {
            random_op(&store, &tpl, base, &pool, &mut rng).await;
            check_invariants(&store);
            // What idle_expired returns is due.
            let now = base + chrono::Duration::seconds(50);
            for id in store.idle_expired(now, 3).await.unwrap() {
                let t = store.get(&id).await.unwrap().unwrap();
                assert!(!t.state.is_terminal());
                assert!(t.idle_expires_at.is_some_and(|e| e < now));
            }
        }
        assert!(!pool.ids.lock().unwrap().is_empty());
        assert!(!pool.claims.lock().unwrap().is_empty());
    }

    /// The same operations from many tasks at once, on several threads, leave the
    /// indexes, counters and queue exact.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_random_operations_keep_the_indexes_exact() {
        let tpl = Arc::new(template().await);
        let store = Arc::new(MemoryStore::new());
        let pool = Arc::new(Pool::default());
        let base = chrono::Utc::now();
        let mut handles = Vec::new();
        for seed in 0..8 {
            let (store, pool, tpl) = (store.clone(), pool.clone(), tpl.clone());
            handles.push(tokio::spawn(async move {
                let mut rng = Rng(seed);
                for _ in 0..1500 {
                    random_op(&store, &tpl, base, &pool, &mut rng).await;
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        check_invariants(&store);
    }
}
