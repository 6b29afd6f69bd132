//! The in-memory store's records (see [`crate::record`]): one map under one mutex,
//! with indexes by task, by owner, of active records and of expiry times.
//!
//! Lock order: the records mutex is taken before a task shard (a put checks its
//! task under both, so that a sweep, which removes the task first and its records
//! after, never leaves a record behind).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use crate::error::StoreError;
use crate::ids::TaskId;
use crate::record::{lease_until, PutOutcome, Quota, Record, RecordKind, RecordLease, RecordScope};
use crate::types::Timestamp;

type Key = (RecordKind, String);

#[derive(Debug)]
struct Row {
    rec: Record,
    lease: Option<(String, Timestamp)>,
    epoch: u64,
}

/// What a task lookup says: whether it exists, and whether it is terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskLook {
    Missing,
    Live,
    Terminal,
}

#[derive(Debug, Default)]
pub(crate) struct MemRecords {
    rows: BTreeMap<Key, Row>,
    by_task: HashMap<TaskId, BTreeSet<Key>>,
    by_owner: HashMap<(RecordKind, String, String), BTreeSet<String>>,
    active: BTreeSet<Key>,
    expiring: BTreeSet<(Timestamp, RecordKind, String)>,
}

impl MemRecords {
    fn unindex(&mut self, key: &Key, rec: &Record) {
        if let Some(t) = &rec.task_id {
            if let Some(set) = self.by_task.get_mut(t) {
                set.remove(key);
                if set.is_empty() {
                    self.by_task.remove(t);
                }
            }
        }
        let ok = (rec.kind, rec.tenant.clone(), rec.owner.clone());
        if let Some(set) = self.by_owner.get_mut(&ok) {
            set.remove(&rec.id);
            if set.is_empty() {
                self.by_owner.remove(&ok);
            }
        }
        self.active.remove(key);
        if let Some(at) = rec.expires_at {
            self.expiring.remove(&(at, rec.kind, rec.id.clone()));
        }
    }

    fn index(&mut self, key: &Key, rec: &Record) {
        if let Some(t) = &rec.task_id {
            self.by_task
                .entry(t.clone())
                .or_default()
                .insert(key.clone());
        }
        self.by_owner
            .entry((rec.kind, rec.tenant.clone(), rec.owner.clone()))
            .or_default()
            .insert(rec.id.clone());
        if rec.active {
            self.active.insert(key.clone());
        }
        if let Some(at) = rec.expires_at {
            self.expiring.insert((at, rec.kind, rec.id.clone()));
        }
    }

    /// Inserts or replaces; `look` tells about a task.
    pub(crate) fn put(
        &mut self,
        mut record: Record,
        quota: Option<Quota>,
        look: &mut dyn FnMut(&TaskId) -> Result<TaskLook, StoreError>,
    ) -> Result<PutOutcome, StoreError> {
        if let Some(t) = &record.task_id {
            if look(t)? == TaskLook::Missing {
                return Err(StoreError::NotFound);
            }
        }
        let key = (record.kind, record.id.clone());
        if let Some(row) = self.rows.remove(&key) {
            let old = row.rec.clone();
            self.unindex(&key, &old);
            record.tenant = old.tenant;
            record.owner = old.owner;
            record.task_id = old.task_id;
            record.version = old.version + 1;
            let version = record.version;
            self.index(&key, &record);
            self.rows.insert(key, Row { rec: record, ..row });
            return Ok(PutOutcome::Stored { version });
        }
        if let Some(q) = quota {
            let live = self.live_count(&record, q.now, look)?;
            if live >= q.max {
                return Ok(PutOutcome::OverQuota { max: q.max });
            }
        }
        record.version = 1;
        self.index(&key, &record);
        self.rows.insert(
            key,
            Row {
                rec: record,
                lease: None,
                epoch: 0,
            },
        );
        Ok(PutOutcome::Stored { version: 1 })
    }

    fn live_count(
        &self,
        like: &Record,
        now: Timestamp,
        look: &mut dyn FnMut(&TaskId) -> Result<TaskLook, StoreError>,
    ) -> Result<usize, StoreError> {
        let Some(ids) = self
            .by_owner
            .get(&(like.kind, like.tenant.clone(), like.owner.clone()))
        else {
            return Ok(0);
        };
        let mut n = 0;
        for id in ids {
            let Some(row) = self.rows.get(&(like.kind, id.clone())) else {
                continue;
            };
            if row.rec.expired(now) {
                continue;
            }
            let live = match &row.rec.task_id {
                None => true,
                Some(t) => look(t)? == TaskLook::Live,
            };
            if live {
                n += 1;
            }
        }
        Ok(n)
    }

    pub(crate) fn get(&self, kind: RecordKind, id: &str) -> Option<Record> {
        self.rows
            .get(&(kind, id.to_string()))
            .map(|r| r.rec.clone())
    }

    pub(crate) fn list(&self, kind: RecordKind, scope: &RecordScope) -> Vec<Record> {
        let keys: Vec<Key> = match scope {
            RecordScope::Task(t) => self
                .by_task
                .get(t)
                .map(|s| s.iter().filter(|(k, _)| *k == kind).cloned().collect())
                .unwrap_or_default(),
            RecordScope::Owner { tenant, owner } => self
                .by_owner
                .get(&(kind, tenant.clone(), owner.clone()))
                .map(|s| s.iter().map(|id| (kind, id.clone())).collect())
                .unwrap_or_default(),
        };
        let mut out: Vec<Record> = keys
            .iter()
            .filter_map(|k| self.rows.get(k).map(|r| r.rec.clone()))
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    pub(crate) fn update(
        &mut self,
        record: &Record,
        fence: Option<&RecordLease>,
    ) -> Result<u64, StoreError> {
        let key = (record.kind, record.id.clone());
        let Some(row) = self.rows.get(&key) else {
            return Err(StoreError::NotFound);
        };
        if row.rec.version != record.version {
            return Err(StoreError::Conflict);
        }
        if let Some(f) = fence {
            if !holds(row, f) {
                return Err(StoreError::LeaseLost);
            }
        }
        let Some(row) = self.rows.remove(&key) else {
            return Err(StoreError::NotFound);
        };
        let old = row.rec.clone();
        self.unindex(&key, &old);
        let mut rec = old;
        rec.data = record.data.clone();
        rec.cursor = record.cursor;
        rec.active = record.active;
        rec.expires_at = record.expires_at;
        rec.version += 1;
        let version = rec.version;
        self.index(&key, &rec);
        self.rows.insert(key, Row { rec, ..row });
        Ok(version)
    }

    pub(crate) fn delete(&mut self, kind: RecordKind, id: &str) -> bool {
        let key = (kind, id.to_string());
        match self.rows.remove(&key) {
            Some(row) => {
                self.unindex(&key, &row.rec);
                true
            }
            None => false,
        }
    }

    /// Deletes every record of a task (its task was swept).
    pub(crate) fn delete_task(&mut self, task: &TaskId) {
        let Some(keys) = self.by_task.remove(task) else {
            return;
        };
        for key in keys {
            if let Some(row) = self.rows.remove(&key) {
                self.unindex(&key, &row.rec);
            }
        }
    }

    pub(crate) fn claim(
        &mut self,
        kind: RecordKind,
        worker: &str,
        max: usize,
        lease: Duration,
        now: Timestamp,
    ) -> Vec<(Record, RecordLease)> {
        let until = lease_until(now, lease);
        let lo = (kind, String::new());
        let candidates: Vec<Key> = self
            .active
            .range(lo..)
            .take_while(|(k, _)| *k == kind)
            .cloned()
            .collect();
        let mut out = Vec::new();
        for key in candidates {
            if out.len() >= max {
                break;
            }
            let Some(row) = self.rows.get_mut(&key) else {
                continue;
            };
            if row.lease.as_ref().is_some_and(|(_, u)| *u >= now) {
                continue;
            }
            row.epoch += 1;
            row.lease = Some((worker.to_string(), until));
            out.push((
                row.rec.clone(),
                RecordLease {
                    kind,
                    id: key.1.clone(),
                    worker: worker.to_string(),
                    epoch: row.epoch,
                },
            ));
        }
        out
    }

    pub(crate) fn renew(
        &mut self,
        lease: &RecordLease,
        duration: Duration,
        now: Timestamp,
    ) -> bool {
        match self.rows.get_mut(&(lease.kind, lease.id.clone())) {
            Some(row) if holds(row, lease) => {
                row.lease = Some((lease.worker.clone(), lease_until(now, duration)));
                true
            }
            _ => false,
        }
    }

    pub(crate) fn release(&mut self, lease: &RecordLease) {
        if let Some(row) = self.rows.get_mut(&(lease.kind, lease.id.clone())) {
            if holds(row, lease) {
                row.lease = None;
            }
        }
    }

    pub(crate) fn sweep(&mut self, now: Timestamp, limit: usize) -> usize {
        let doomed: Vec<(Timestamp, RecordKind, String)> = self
            .expiring
            .iter()
            .take_while(|(at, ..)| *at <= now)
            .take(limit)
            .cloned()
            .collect();
        for (_, kind, id) in &doomed {
            self.delete(*kind, id);
        }
        doomed.len()
    }

    pub(crate) fn counts(&self) -> Vec<(RecordKind, u64)> {
        let mut n: BTreeMap<RecordKind, u64> = BTreeMap::new();
        for (kind, _) in self.rows.keys() {
            *n.entry(*kind).or_default() += 1;
        }
        RecordKind::ALL
            .iter()
            .map(|k| (*k, n.get(k).copied().unwrap_or(0)))
            .collect()
    }
}

fn holds(row: &Row, lease: &RecordLease) -> bool {
    row.epoch == lease.epoch && row.lease.as_ref().is_some_and(|(w, _)| *w == lease.worker)
}
