//! A bounded, write-through cache of the latest committed task snapshots.
//!
//! Workers, subscribers and waiters read the same few hot tasks over and over;
//! serving those reads from memory spares a connection, a blocking-pool hop and a
//! JSON decode each. The cache is only correct because this process is the only
//! writer of the database (see [`crate::lock`]):
//!
//! - the writer thread puts every snapshot it committed, after the commit and before
//!   anyone is told about it, so a read that follows a write always sees it;
//! - a reader that missed puts what it read only if no transaction committed since
//!   it started: the writer bumps a counter *before* each commit becomes visible,
//!   so a read that could have been overtaken (by a newer version, possibly
//!   already read from the database by someone else and evicted from here since,
//!   or by a sweep that deleted the task) never puts its older snapshot back;
//! - sweeps drop the deleted tasks;
//! - each entry carries the generation of the transaction that put it (see
//!   [`crate::durable`]): the store answers it only once that generation is durable.
//!
//! Eviction is by generations: new entries go into the current map; when it is
//! full it becomes the previous map (whose entries are dropped), and a hit in the
//! previous map moves the entry back to the current one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use taskwire_core::{Task, TaskId};

/// A snapshot and the generation that must be durable before it is shown.
type Entry = (Arc<Task>, u64);

#[derive(Default)]
struct Inner {
    current: HashMap<TaskId, Entry>,
    previous: HashMap<TaskId, Entry>,
    /// Incremented before every transaction commits and by every sweep.
    writes: u64,
}

impl Inner {
    fn cached_version(&self, id: &TaskId) -> Option<u64> {
        self.current
            .get(id)
            .or_else(|| self.previous.get(id))
            .map(|(t, _)| t.version)
    }
}

/// The snapshot cache.
pub(crate) struct SnapshotCache {
    inner: Mutex<Inner>,
    /// Entries per generation; 0 disables the cache.
    generation: usize,
}

impl SnapshotCache {
    /// A cache holding between `capacity / 2` and `capacity` tasks.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            generation: capacity / 2,
        }
    }

    fn lock(&self) -> Option<MutexGuard<'_, Inner>> {
        if self.generation == 0 {
            return None;
        }
        // A poisoned cache is dropped rather than trusted.
        match self.inner.lock() {
            Ok(g) => Some(g),
            Err(poisoned) => {
                let mut g = poisoned.into_inner();
                g.current.clear();
                g.previous.clear();
                self.inner.clear_poison();
                Some(g)
            }
        }
    }

    fn insert(&self, g: &mut Inner, task: Arc<Task>, durable_at: u64) {
        if g.current.len() >= self.generation && !g.current.contains_key(&task.id) {
            g.previous = std::mem::take(&mut g.current);
        }
        g.previous.remove(&task.id);
        g.current.insert(task.id.clone(), (task, durable_at));
    }

    /// The cached snapshot of a task, if any, with the generation that must be
    /// durable before it is shown.
    pub(crate) fn get(&self, id: &TaskId) -> Option<Entry> {
        let mut g = self.lock()?;
        if let Some(e) = g.current.get(id) {
            return Some(e.clone());
        }
        let (t, at) = g.previous.remove(id)?;
        self.insert(&mut g, t.clone(), at);
        Some((t, at))
    }

    /// The write counter; take it before reading the database and pass it to
    /// [`Self::put_read`].
    pub(crate) fn epoch(&self) -> u64 {
        self.lock().map_or(0, |g| g.writes)
    }

    /// Called by the writer just before a transaction commits: reads that started
    /// before may have read what it replaces.
    pub(crate) fn committing(&self) {
        if let Some(mut g) = self.lock() {
            g.writes += 1;
        }
    }

    /// Puts a snapshot the writer has just committed in the transaction of
    /// generation `durable_at`.
    pub(crate) fn put_committed(&self, task: Arc<Task>, durable_at: u64) {
        if let Some(mut g) = self.lock() {
            self.insert(&mut g, task, durable_at);
        }
    }

    /// Puts a snapshot read from the database by a read that started when
    /// [`Self::epoch`] returned `epoch_before` (and that waited for what it read
    /// to be durable).
    pub(crate) fn put_read(&self, task: Arc<Task>, epoch_before: u64) {
        if let Some(mut g) = self.lock() {
            if g.writes != epoch_before {
                return;
            }
            if g.cached_version(&task.id)
                .is_some_and(|v| v >= task.version)
            {
                return;
            }
            self.insert(&mut g, task, 0);
        }
    }

    /// Drops swept tasks.
    pub(crate) fn remove_swept(&self, ids: &[TaskId]) {
        if ids.is_empty() {
            return;
        }
        if let Some(mut g) = self.lock() {
            g.writes += 1;
            for id in ids {
                g.current.remove(id);
                g.previous.remove(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(id: &TaskId, version: u64) -> Arc<Task> {
        let now = chrono::Utc::now();
        Arc::new(
            serde_json::from_value(json!({
                "id": id, "contextId": "c", "tenant": "t", "owner": "o",
                "responsibleUser": "o", "agent": "a", "state": "submitted",
                "stateChangedAt": now, "createdAt": now, "updatedAt": now,
                "version": version, "lastSeq": 1, "history": [], "artifacts": [], "turns": 0,
            }))
            .unwrap(),
        )
    }

    #[test]
    fn reads_never_replace_newer_snapshots_nor_revive_swept_ones() {
        let c = SnapshotCache::new(8);
        let id = TaskId::new();
        c.put_committed(task(&id, 2), 1);
        let before = c.epoch();
        c.put_read(task(&id, 1), before);
        assert_eq!(c.get(&id).unwrap().0.version, 2);
        c.remove_swept(std::slice::from_ref(&id));
        assert!(c.get(&id).is_none());
        // A read that started before the sweep does not bring it back.
        c.put_read(task(&id, 2), before);
        assert!(c.get(&id).is_none());
        c.put_read(task(&id, 3), c.epoch());
        assert_eq!(c.get(&id).unwrap().0.version, 3);
    }

    /// A read that started before a commit never puts its (possibly older)
    /// snapshot, even when the committed one was already evicted.
    #[test]
    fn reads_overtaken_by_a_commit_are_not_cached() {
        let c = SnapshotCache::new(2);
        let id = TaskId::new();
        let before = c.epoch();
        c.committing();
        c.put_committed(task(&id, 2), 1);
        for _ in 0..4 {
            c.put_committed(task(&TaskId::new(), 1), 1);
        }
        assert!(c.get(&id).is_none(), "evicted");
        c.put_read(task(&id, 1), before);
        assert!(c.get(&id).is_none(), "the stale read was not cached");
        c.put_read(task(&id, 2), c.epoch());
        assert_eq!(c.get(&id).unwrap().0.version, 2);
    }

    #[test]
    fn it_is_bounded_and_keeps_what_is_used() {
        let c = SnapshotCache::new(8);
        let hot = TaskId::new();
        c.put_committed(task(&hot, 1), 1);
        for _ in 0..100 {
            c.put_committed(task(&TaskId::new(), 1), 1);
            assert!(c.get(&hot).is_some(), "a task read often stays");
        }
        let g = c.inner.lock().unwrap();
        assert!(g.current.len() + g.previous.len() <= 8);
    }

    #[test]
    fn capacity_zero_disables_it() {
        let c = SnapshotCache::new(0);
        let id = TaskId::new();
        c.put_committed(task(&id, 1), 1);
        assert!(c.get(&id).is_none());
    }
}
