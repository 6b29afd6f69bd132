//! Conversions between core values and stored columns.

use taskwire_core::record::{Record, RecordKind};
use taskwire_core::{StoreError, Task, TaskId};
use tokio_postgres::types::Json;
use tokio_postgres::Row;

pub(crate) use taskwire_core::store::columns::{dur_ns, int, limit, ns, uint};

/// The indexed columns of one task row (the snapshot itself is bound as JSON),
/// borrowed from the task.
#[derive(Debug)]
pub(crate) struct TaskRow<'a> {
    pub(crate) tenant: &'a str,
    pub(crate) owner: &'a str,
    pub(crate) context_id: &'a str,
    pub(crate) state: &'static str,
    pub(crate) terminal: bool,
    pub(crate) version: i64,
    pub(crate) last_seq: i64,
    pub(crate) created_us: i64,
    pub(crate) changed_us: i64,
    pub(crate) updated_ns: i64,
    pub(crate) expires_ns: Option<i64>,
    pub(crate) idle_ns: Option<i64>,
    pub(crate) reviewers: Option<Vec<&'a str>>,
}

impl<'a> TaskRow<'a> {
    pub(crate) fn new(task: &'a Task) -> Self {
        let reviewers = if task.pending_reviews.is_empty() {
            None
        } else {
            let mut names: Vec<&str> = task
                .pending_reviews
                .iter()
                .map(|r| r.reviewer.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            Some(names)
        };
        Self {
            tenant: &task.tenant,
            owner: &task.owner,
            context_id: &task.context_id,
            state: task.state.as_str(),
            terminal: task.state.is_terminal(),
            version: int(task.version),
            last_seq: int(task.last_seq),
            created_us: task.created_at.timestamp_micros(),
            changed_us: task.state_changed_at.timestamp_micros(),
            updated_ns: ns(task.updated_at),
            expires_ns: task.expires_at.map(ns),
            idle_ns: task.idle_expires_at.map(ns),
            reviewers,
        }
    }
}

/// A stored task id.
pub(crate) fn task_id(s: &str) -> Result<TaskId, StoreError> {
    TaskId::parse(s).map_err(|_| StoreError::Corrupt(format!("stored task id {s:?}")))
}

/// The columns a record is read from, in the order [`record`] expects.
pub(crate) const RECORD_COLUMNS: &str =
    "kind, id, task_id, tenant, owner, data, cursor, active, expires_ns, version";

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("stored record: {what}"))
}

/// A record from a row of [`RECORD_COLUMNS`] (from column `at` on).
pub(crate) fn record(r: &Row, at: usize) -> Result<Record, StoreError> {
    let get = |e: tokio_postgres::Error| corrupt(e);
    let kind: &str = r.try_get(at).map_err(get)?;
    let id: String = r.try_get(at + 1).map_err(get)?;
    let task: Option<&str> = r.try_get(at + 2).map_err(get)?;
    let tenant: String = r.try_get(at + 3).map_err(get)?;
    let owner: String = r.try_get(at + 4).map_err(get)?;
    let Json(data): Json<serde_json::Value> = r.try_get(at + 5).map_err(get)?;
    let cursor: i64 = r.try_get(at + 6).map_err(get)?;
    let active: bool = r.try_get(at + 7).map_err(get)?;
    let expires: Option<i64> = r.try_get(at + 8).map_err(get)?;
    let version: i64 = r.try_get(at + 9).map_err(get)?;
    let kind = RecordKind::parse(kind).ok_or_else(|| corrupt(format!("kind {kind:?}")))?;
    let mut rec = Record::new(kind, id, tenant, owner, data)
        .at(uint(cursor))
        .active(active)
        .expiring(expires.map(chrono::DateTime::from_timestamp_nanos));
    rec.task_id = task.map(task_id).transpose()?;
    rec.version = uint(version);
    Ok(rec)
}
