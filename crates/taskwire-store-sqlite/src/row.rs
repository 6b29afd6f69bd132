//! Conversions between core values and stored columns.

use taskwire_core::{Event, StoreError, Task};

pub(crate) use taskwire_core::store::columns::{dur_ns, int, limit, ns, uint};

/// The columns of one task row, computed on the caller's thread so that the
/// writer thread only binds values.
#[derive(Debug)]
pub(crate) struct TaskRow {
    pub(crate) id: String,
    pub(crate) tenant: String,
    pub(crate) owner: String,
    pub(crate) context_id: String,
    pub(crate) state: &'static str,
    pub(crate) terminal: bool,
    pub(crate) version: i64,
    pub(crate) created_us: i64,
    /// When the state last changed, in microseconds (the status-time list order).
    pub(crate) changed_us: i64,
    pub(crate) updated_ns: i64,
    pub(crate) expires_ns: Option<i64>,
    pub(crate) idle_ns: Option<i64>,
    pub(crate) reviewers: Option<String>,
    pub(crate) body: Vec<u8>,
}

impl TaskRow {
    pub(crate) fn new(task: &Task) -> Result<Self, StoreError> {
        let body = serde_json::to_vec(task)
            .map_err(|e| StoreError::Backend(format!("encoding task: {e}")))?;
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
            Some(
                serde_json::to_string(&names)
                    .map_err(|e| StoreError::Backend(format!("encoding reviewers: {e}")))?,
            )
        };
        Ok(Self {
            id: task.id.as_str().to_string(),
            tenant: task.tenant.clone(),
            owner: task.owner.clone(),
            context_id: task.context_id.clone(),
            state: task.state.as_str(),
            terminal: task.state.is_terminal(),
            version: int(task.version),
            created_us: task.created_at.timestamp_micros(),
            changed_us: task.state_changed_at.timestamp_micros(),
            updated_ns: ns(task.updated_at),
            expires_ns: task.expires_at.map(ns),
            idle_ns: task.idle_expires_at.map(ns),
            reviewers,
            body,
        })
    }
}

/// One event-log row: the sequence number of its last event and the events of one
/// commit as a JSON array.
pub(crate) type EventRow = (i64, Vec<u8>);

/// The event-log rows of one commit's events: none or one.
pub(crate) fn event_rows(events: &[Event]) -> Result<Vec<EventRow>, StoreError> {
    let Some(last) = events.last() else {
        return Ok(Vec::new());
    };
    let body = serde_json::to_vec(events)
        .map_err(|err| StoreError::Backend(format!("encoding events: {err}")))?;
    Ok(vec![(int(last.seq), body)])
}

pub(crate) fn decode_task(body: &[u8]) -> Result<Task, StoreError> {
    serde_json::from_slice(body).map_err(|e| StoreError::Corrupt(format!("task: {e}")))
}

pub(crate) fn decode_events(body: &[u8]) -> Result<Vec<Event>, StoreError> {
    serde_json::from_slice(body).map_err(|e| StoreError::Corrupt(format!("events: {e}")))
}
