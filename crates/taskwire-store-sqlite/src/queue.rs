//! The writer's in-memory index of the work queue.
//!
//! The `queue` table is the durable record of every entry (its epoch, attempt count
//! and lease); this index mirrors it so that the writer finds what it needs without
//! a query: the claimable entries in FIFO order, the leases by deadline, and each
//! entry's row id, epoch and lease holder for fencing a commit. Only the writer
//! thread touches it, always together with the matching change to the table in
//! the open transaction. If a transaction is rolled back, the index no longer
//! matches the table, and the writer reloads it from the table (see
//! [`WorkQueue::load`]) before it applies anything else.

use std::collections::{BTreeSet, HashMap, VecDeque};

use rusqlite::Connection;
use taskwire_core::TaskId;

/// One queue entry, as in its `queue` row.
#[derive(Debug)]
pub(crate) struct Entry {
    /// The task's row id.
    pub(crate) tid: i64,
    /// Fencing token: incremented by every claim.
    pub(crate) epoch: i64,
    /// Claims so far.
    pub(crate) attempts: i64,
    /// The holder and deadline (ns) of the lease, while leased.
    pub(crate) lease: Option<(String, i64)>,
}

/// What a new lease records: the entry's row id and its new epoch and attempts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Leased {
    pub(crate) tid: i64,
    pub(crate) epoch: i64,
    pub(crate) attempts: i64,
}

/// The index.
#[derive(Debug, Default)]
pub(crate) struct WorkQueue {
    entries: HashMap<TaskId, Entry>,
    /// Candidates for claiming, oldest first. An id whose entry is gone or leased
    /// by the time it comes up is skipped.
    ready: VecDeque<TaskId>,
    /// (deadline, task) of every lease.
    leases: BTreeSet<(i64, TaskId)>,
}

const LOAD: &str = "SELECT q.tid, t.id, q.available, q.lease_owner, q.lease_until, q.epoch, \
     q.attempts FROM queue q JOIN tasks t ON t.tid = q.tid ORDER BY q.ready_seq";

impl WorkQueue {
    /// Reads the index from the `queue` table; claimable entries keep their FIFO
    /// order, leased ones their holder and deadline.
    pub(crate) fn load(conn: &Connection) -> Result<WorkQueue, rusqlite::Error> {
        let mut q = WorkQueue::default();
        let mut stmt = conn.prepare(LOAD)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let tid: i64 = r.get(0)?;
            let id: String = r.get(1)?;
            let Ok(id) = TaskId::parse(&id) else {
                tracing::error!(
                    tid,
                    id,
                    "queue entry of a task with a malformed id; skipped"
                );
                continue;
            };
            let available: bool = r.get(2)?;
            let owner: Option<String> = r.get(3)?;
            let until: Option<i64> = r.get(4)?;
            let lease = match (available, owner) {
                (false, Some(owner)) => Some((owner, until.unwrap_or(0))),
                _ => None,
            };
            match &lease {
                Some((_, until)) => {
                    q.leases.insert((*until, id.clone()));
                }
                None => q.ready.push_back(id.clone()),
            }
            q.entries.insert(
                id,
                Entry {
                    tid,
                    epoch: r.get(5)?,
                    attempts: r.get(6)?,
                    lease,
                },
            );
        }
        Ok(q)
    }

    /// The entry of a task, if it has one.
    pub(crate) fn get(&self, id: &TaskId) -> Option<&Entry> {
        self.entries.get(id)
    }

    /// The row id of a task's entry if `worker` holds its lease at `epoch`.
    pub(crate) fn holder(&self, id: &TaskId, epoch: i64, worker: &str) -> Option<i64> {
        self.entries.get(id).and_then(|e| {
            let held = e.epoch == epoch && e.lease.as_ref().is_some_and(|(w, _)| w == worker);
            held.then_some(e.tid)
        })
    }

    /// Adds a claimable entry (epoch and attempts from its row).
    pub(crate) fn insert(&mut self, id: TaskId, tid: i64, epoch: i64, attempts: i64) {
        if let Some(old) = self.entries.insert(
            id.clone(),
            Entry {
                tid,
                epoch,
                attempts,
                lease: None,
            },
        ) {
            if let Some((_, until)) = old.lease {
                self.leases.remove(&(until, id.clone()));
            }
        }
        self.ready.push_back(id);
    }

    /// Ends the lease of an entry, if any, and makes it claimable (last in line).
    pub(crate) fn make_available(&mut self, id: &TaskId) {
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if let Some((_, until)) = e.lease.take() {
            self.leases.remove(&(until, id.clone()));
        }
        self.ready.push_back(id.clone());
    }

    /// Sets an entry's attempt count (a requeue starts counting again).
    pub(crate) fn set_attempts(&mut self, id: &TaskId, attempts: i64) {
        if let Some(e) = self.entries.get_mut(id) {
            e.attempts = attempts;
        }
    }

    /// Removes an entry; returns its row id.
    pub(crate) fn remove(&mut self, id: &TaskId) -> Option<i64> {
        let e = self.entries.remove(id)?;
        if let Some((_, until)) = e.lease {
            self.leases.remove(&(until, id.clone()));
        }
        Some(e.tid)
    }

    /// Takes the oldest claimable entry and leases it to `worker` until `until`,
    /// incrementing its epoch and attempts; returns the task and what the claim
    /// records.
    pub(crate) fn lease_next(&mut self, worker: &str, until: i64) -> Option<(TaskId, Leased)> {
        loop {
            let id = self.ready.pop_front()?;
            let Some(e) = self.entries.get_mut(&id) else {
                continue;
            };
            if e.lease.is_some() {
                continue;
            }
            e.epoch = e.epoch.saturating_add(1);
            e.attempts = e.attempts.saturating_add(1);
            e.lease = Some((worker.to_string(), until));
            let leased = Leased {
                tid: e.tid,
                epoch: e.epoch,
                attempts: e.attempts,
            };
            self.leases.insert((until, id.clone()));
            return Some((id, leased));
        }
    }

    /// Moves the deadline of a held lease.
    pub(crate) fn renew(&mut self, id: &TaskId, until: i64) {
        let Some(e) = self.entries.get_mut(id) else {
            return;
        };
        if let Some((_, old)) = e.lease.as_mut() {
            self.leases.remove(&(*old, id.clone()));
            *old = until;
            self.leases.insert((until, id.clone()));
        }
    }

    /// The tasks whose lease ends before `now`, earliest first.
    pub(crate) fn lapsed(&self, now: i64) -> Vec<TaskId> {
        self.leases
            .iter()
            .take_while(|(until, _)| *until < now)
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// Number of entries.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_fifo_and_skip_stale_candidates() {
        let mut q = WorkQueue::default();
        let (a, b, c) = (TaskId::new(), TaskId::new(), TaskId::new());
        q.insert(a.clone(), 1, 0, 0);
        q.insert(b.clone(), 2, 0, 0);
        q.insert(c.clone(), 3, 0, 0);
        assert_eq!(q.remove(&b), Some(2));
        let (first, e) = q.lease_next("w", 10).unwrap();
        assert_eq!((first.clone(), e.epoch, e.attempts), (a.clone(), 1, 1));
        // a is leased: a second candidate entry for it is skipped.
        q.ready.push_front(a.clone());
        let (second, _) = q.lease_next("w", 20).unwrap();
        assert_eq!(second, c);
        assert!(q.lease_next("w", 30).is_none());
        assert_eq!(q.holder(&a, 1, "w"), Some(1));
        assert_eq!(q.holder(&a, 1, "other"), None);
        assert_eq!(q.holder(&a, 2, "w"), None);
    }

    #[test]
    fn lapsed_leases_come_earliest_first_and_follow_renewals() {
        let mut q = WorkQueue::default();
        let (a, b) = (TaskId::new(), TaskId::new());
        q.insert(a.clone(), 1, 0, 0);
        q.insert(b.clone(), 2, 0, 0);
        q.lease_next("w", 50).unwrap();
        q.lease_next("w", 40).unwrap();
        assert_eq!(q.lapsed(60), vec![b.clone(), a.clone()]);
        q.renew(&a, 100);
        assert_eq!(q.lapsed(60), vec![b.clone()]);
        q.make_available(&b);
        assert!(q.lapsed(60).is_empty());
        assert_eq!(q.lapsed(101), vec![a.clone()]);
        q.remove(&a);
        assert!(q.lapsed(1000).is_empty());
        assert_eq!(q.len(), 1);
    }
}
