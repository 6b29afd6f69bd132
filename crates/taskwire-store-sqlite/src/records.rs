//! Records (see [`taskwire_core::record`]) in the `records` table: writes go
//! through the writer thread like every other write (one group commit), reads
//! through the reader pool.

use std::time::Duration;

use rusqlite::{params, Connection, OptionalExtension, Row};
use taskwire_core::record::{
    lease_until, PutOutcome, Quota, Record, RecordKind, RecordLease, RecordScope,
};
use taskwire_core::{StoreError, TaskId};

use crate::row::{int, ns, uint};

/// A record write, applied by the writer inside its transaction.
#[derive(Debug)]
pub(crate) enum RecordOp {
    Put {
        record: Box<Record>,
        quota: Option<Quota>,
    },
    Update {
        record: Box<Record>,
        fence: Option<RecordLease>,
    },
    Delete {
        kind: RecordKind,
        id: String,
    },
    Claim {
        kind: RecordKind,
        worker: String,
        max: usize,
        now: i64,
        until: i64,
    },
    Renew {
        lease: RecordLease,
        until: i64,
    },
    Release {
        lease: RecordLease,
    },
    Sweep {
        now: i64,
        limit: i64,
    },
}

/// What a record write answers.
#[derive(Debug)]
pub(crate) enum RecordDone {
    Put(PutOutcome),
    Version(u64),
    Bool(bool),
    Claimed(Vec<(Record, RecordLease)>),
    Count(usize),
}

const COLUMNS: &str = "kind, id, task_id, tenant, owner, data, cursor, active, expires_ns, version";
const HEAD: &str = "SELECT version, lease_owner, epoch FROM records WHERE kind = ?1 AND id = ?2";
const INSERT: &str = "INSERT INTO records (kind, id, tid, task_id, tenant, owner, data, \
     cursor, active, expires_ns, version, lease_owner, lease_until, epoch) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, NULL, NULL, 0)";
const REPLACE: &str = "UPDATE records SET data = ?3, cursor = ?4, active = ?5, expires_ns = ?6, \
     version = version + 1 WHERE kind = ?1 AND id = ?2";
const LIVE: &str = "SELECT count(*) FROM records r LEFT JOIN tasks t ON t.tid = r.tid \
     WHERE r.kind = ?1 AND r.tenant = ?2 AND r.owner = ?3 \
     AND (r.expires_ns IS NULL OR r.expires_ns > ?4) AND (r.tid IS NULL OR t.terminal = 0)";
const DELETE: &str = "DELETE FROM records WHERE kind = ?1 AND id = ?2";
const CLAIMABLE: &str = "SELECT kind, id, task_id, tenant, owner, data, cursor, active, \
     expires_ns, version, epoch FROM records \
     WHERE kind = ?1 AND active = 1 AND (lease_until IS NULL OR lease_until < ?2) \
     ORDER BY id LIMIT ?3";
const TAKE: &str = "UPDATE records SET lease_owner = ?3, lease_until = ?4, epoch = ?5 \
     WHERE kind = ?1 AND id = ?2";
const SWEEP: &str = "DELETE FROM records WHERE (kind, id) IN (SELECT kind, id FROM records \
     WHERE expires_ns IS NOT NULL AND expires_ns <= ?1 LIMIT ?2)";
/// Deletes the records of a swept task.
pub(crate) const DELETE_OF_TASK: &str = "DELETE FROM records WHERE tid = ?1";

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("stored record: {what}"))
}

/// A record from a row of [`COLUMNS`] (in that order).
fn from_row(r: &Row<'_>) -> Result<Result<Record, StoreError>, rusqlite::Error> {
    let kind: String = r.get(0)?;
    let id: String = r.get(1)?;
    let task_id: Option<String> = r.get(2)?;
    let tenant: String = r.get(3)?;
    let owner: String = r.get(4)?;
    let data: Vec<u8> = r.get(5)?;
    let cursor: i64 = r.get(6)?;
    let active: bool = r.get(7)?;
    let expires: Option<i64> = r.get(8)?;
    let version: i64 = r.get(9)?;
    Ok((|| {
        let kind = RecordKind::parse(&kind).ok_or_else(|| corrupt(format!("kind {kind:?}")))?;
        let data = serde_json::from_slice(&data).map_err(corrupt)?;
        let task = match task_id {
            Some(t) => Some(TaskId::parse(&t).map_err(|_| corrupt(format!("task id {t:?}")))?),
            None => None,
        };
        let mut rec = Record::new(kind, id, tenant, owner, data)
            .at(uint(cursor))
            .active(active)
            .expiring(expires.map(chrono::DateTime::from_timestamp_nanos));
        rec.task_id = task;
        rec.version = uint(version);
        Ok(rec)
    })())
}

fn encode(data: &serde_json::Value) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(data).map_err(|e| StoreError::Backend(format!("record data: {e}")))
}

/// Applies one record write inside the writer's transaction. `tid` is the row id
/// of the record's task when it names one (None: the task does not exist).
pub(crate) fn apply(
    conn: &Connection,
    op: &RecordOp,
    tid: Option<i64>,
) -> Result<Result<RecordDone, StoreError>, rusqlite::Error> {
    match op {
        RecordOp::Put { record, quota } => {
            if record.task_id.is_some() && tid.is_none() {
                return Ok(Err(StoreError::NotFound));
            }
            let data = match encode(&record.data) {
                Ok(d) => d,
                Err(e) => return Ok(Err(e)),
            };
            let kind = record.kind.as_str();
            let expires = record.expires_at.map(ns);
            let head: Option<i64> = conn
                .prepare_cached(HEAD)?
                .query_row(params![kind, record.id], |r| r.get(0))
                .optional()?;
            if let Some(v) = head {
                conn.prepare_cached(REPLACE)?.execute(params![
                    kind,
                    record.id,
                    data,
                    int(record.cursor),
                    record.active,
                    expires
                ])?;
                return Ok(Ok(RecordDone::Put(PutOutcome::Stored {
                    version: uint(v) + 1,
                })));
            }
            if let Some(q) = quota {
                let live: i64 = conn
                    .prepare_cached(LIVE)?
                    .query_row(params![kind, record.tenant, record.owner, ns(q.now)], |r| {
                        r.get(0)
                    })?;
                if uint(live) as usize >= q.max {
                    return Ok(Ok(RecordDone::Put(PutOutcome::OverQuota { max: q.max })));
                }
            }
            conn.prepare_cached(INSERT)?.execute(params![
                kind,
                record.id,
                tid,
                record.task_id.as_ref().map(|t| t.as_str()),
                record.tenant,
                record.owner,
                data,
                int(record.cursor),
                record.active,
                expires
            ])?;
            Ok(Ok(RecordDone::Put(PutOutcome::Stored { version: 1 })))
        }
        RecordOp::Update { record, fence } => {
            let kind = record.kind.as_str();
            let head: Option<(i64, Option<String>, i64)> = conn
                .prepare_cached(HEAD)?
                .query_row(params![kind, record.id], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()?;
            let Some((version, holder, epoch)) = head else {
                return Ok(Err(StoreError::NotFound));
            };
            if uint(version) != record.version {
                return Ok(Err(StoreError::Conflict));
            }
            if let Some(f) = fence {
                if holder.as_deref() != Some(f.worker.as_str()) || uint(epoch) != f.epoch {
                    return Ok(Err(StoreError::LeaseLost));
                }
            }
            let data = match encode(&record.data) {
                Ok(d) => d,
                Err(e) => return Ok(Err(e)),
            };
            conn.prepare_cached(REPLACE)?.execute(params![
                kind,
                record.id,
                data,
                int(record.cursor),
                record.active,
                record.expires_at.map(ns)
            ])?;
            Ok(Ok(RecordDone::Version(uint(version) + 1)))
        }
        RecordOp::Delete { kind, id } => {
            let n = conn
                .prepare_cached(DELETE)?
                .execute(params![kind.as_str(), id])?;
            Ok(Ok(RecordDone::Bool(n > 0)))
        }
        RecordOp::Claim {
            kind,
            worker,
            max,
            now,
            until,
            ..
        } => {
            let rows: Vec<(Result<Record, StoreError>, i64)> = conn
                .prepare_cached(CLAIMABLE)?
                .query_map(params![kind.as_str(), now, crate::row::limit(*max)], |r| {
                    Ok((from_row(r)?, r.get(10)?))
                })?
                .collect::<Result<_, _>>()?;
            let mut out = Vec::with_capacity(rows.len());
            for (rec, epoch) in rows {
                let rec = match rec {
                    Ok(r) => r,
                    Err(e) => return Ok(Err(e)),
                };
                let epoch = epoch.saturating_add(1);
                conn.prepare_cached(TAKE)?.execute(params![
                    kind.as_str(),
                    rec.id,
                    worker,
                    until,
                    epoch
                ])?;
                let lease = RecordLease {
                    kind: *kind,
                    id: rec.id.clone(),
                    worker: worker.clone(),
                    epoch: uint(epoch),
                };
                out.push((rec, lease));
            }
            Ok(Ok(RecordDone::Claimed(out)))
        }
        RecordOp::Renew { lease, until } => {
            let n = conn.execute(
                "UPDATE records SET lease_until = ?5 WHERE kind = ?1 AND id = ?2 \
                 AND lease_owner = ?3 AND epoch = ?4",
                params![
                    lease.kind.as_str(),
                    lease.id,
                    lease.worker,
                    int(lease.epoch),
                    until
                ],
            )?;
            Ok(Ok(RecordDone::Bool(n > 0)))
        }
        RecordOp::Release { lease } => {
            conn.execute(
                "UPDATE records SET lease_owner = NULL, lease_until = NULL WHERE kind = ?1 \
                 AND id = ?2 AND lease_owner = ?3 AND epoch = ?4",
                params![
                    lease.kind.as_str(),
                    lease.id,
                    lease.worker,
                    int(lease.epoch)
                ],
            )?;
            Ok(Ok(RecordDone::Bool(true)))
        }
        RecordOp::Sweep { now, limit } => {
            let n = conn.prepare_cached(SWEEP)?.execute(params![now, limit])?;
            Ok(Ok(RecordDone::Count(n)))
        }
    }
}

/// The lease end of a claim or renewal, in nanoseconds.
pub(crate) fn until_ns(now: taskwire_core::Timestamp, lease: Duration) -> i64 {
    ns(lease_until(now, lease))
}

fn collect(
    rows: impl Iterator<Item = Result<Result<Record, StoreError>, rusqlite::Error>>,
) -> Result<Vec<Record>, StoreError> {
    let mut out = Vec::new();
    for r in rows {
        out.push(r.map_err(crate::error::backend)??);
    }
    Ok(out)
}

/// A record by key.
pub(crate) fn get(
    conn: &Connection,
    kind: RecordKind,
    id: &str,
) -> Result<Option<Record>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM records WHERE kind = ?1 AND id = ?2");
    let mut st = conn.prepare_cached(&sql).map_err(crate::error::backend)?;
    let rows = st
        .query_map(params![kind.as_str(), id], from_row)
        .map_err(crate::error::backend)?;
    Ok(collect(rows)?.into_iter().next())
}

/// The records of a kind in a scope (`tid`: the task's row id, for a task scope).
pub(crate) fn list(
    conn: &Connection,
    kind: RecordKind,
    scope: &RecordScope,
    tid: Option<i64>,
) -> Result<Vec<Record>, StoreError> {
    match scope {
        RecordScope::Task(_) => {
            let Some(tid) = tid else {
                return Ok(Vec::new());
            };
            let sql =
                format!("SELECT {COLUMNS} FROM records WHERE tid = ?1 AND kind = ?2 ORDER BY id");
            let mut st = conn.prepare_cached(&sql).map_err(crate::error::backend)?;
            let rows = st
                .query_map(params![tid, kind.as_str()], from_row)
                .map_err(crate::error::backend)?;
            collect(rows)
        }
        RecordScope::Owner { tenant, owner } => {
            let sql = format!(
                "SELECT {COLUMNS} FROM records WHERE kind = ?1 AND tenant = ?2 AND owner = ?3 \
                 ORDER BY id"
            );
            let mut st = conn.prepare_cached(&sql).map_err(crate::error::backend)?;
            let rows = st
                .query_map(params![kind.as_str(), tenant, owner], from_row)
                .map_err(crate::error::backend)?;
            collect(rows)
        }
    }
}

/// Records per kind.
pub(crate) fn counts(conn: &Connection) -> Result<Vec<(RecordKind, u64)>, StoreError> {
    let mut st = conn
        .prepare_cached("SELECT kind, count(*) FROM records GROUP BY kind")
        .map_err(crate::error::backend)?;
    let rows: Vec<(String, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(crate::error::backend)?
        .collect::<Result<_, _>>()
        .map_err(crate::error::backend)?;
    Ok(RecordKind::ALL
        .iter()
        .map(|k| {
            let n = rows
                .iter()
                .find(|(name, _)| name == k.as_str())
                .map_or(0, |(_, n)| uint(*n));
            (*k, n)
        })
        .collect())
}
