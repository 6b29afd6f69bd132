//! `tasks/stream` (SEP-2694, Resumable Task Event Streams): a task's event log
//! as `notifications/tasks/event`s on the response to the request, from the
//! start or after a cursor, ending with an empty result after the terminal
//! event.
//!
//! The stream is the core's subscription ([`TaskService::subscribe`]): the
//! store's log read page by page, then live events on the store's wake-ups (on
//! PostgreSQL, LISTEN/NOTIFY, so a stream opened on one node follows a task run
//! by another), counted against the caller's stream quota
//! (`Limits::max_streams_per_principal`). Sequence numbers are the log's, less
//! one (the log counts from 1, SEP-2694 from 0). Events after the cursor that
//! are no longer all in the store are `events_gone` (-32010), never skipped.
//!
//! [`TaskService::subscribe`]: taskwire_core::TaskService::subscribe

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::response::Response;
use futures::StreamExt;
use serde_json::{Map, Value};
use taskwire_core::service::Access;
use taskwire_core::{Caller, TaskId};
use taskwire_vocab::mcp as vocab;
use taskwire_wire::mcp as msg;
use tokio::sync::mpsc;

use crate::error::RpcError;
use crate::ops::task_id_param;
use crate::rev_2026_07_28::to_json;
use crate::wire::{self, code, method};
use crate::{error_response, json_response, Inner};

/// The `tasks/stream` requests open on each connection (by peer address),
/// per task: SEP-2694 allows one per task per connection.
#[derive(Default)]
pub(crate) struct OpenStreams(Mutex<HashSet<(SocketAddr, TaskId)>>);

/// Holds a connection's claim on a task's stream until dropped.
pub(crate) struct StreamClaim {
    inner: Arc<Inner>,
    key: Option<(SocketAddr, TaskId)>,
}

impl Drop for StreamClaim {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            if let Ok(mut set) = self.inner.open_streams.0.lock() {
                set.remove(&k);
            }
        }
    }
}

impl OpenStreams {
    /// Claims the task's stream on the connection `peer` (no claim without a
    /// known peer: an adapter served without connection info cannot tell
    /// connections apart). `None` if one is open already.
    fn claim(inner: &Arc<Inner>, peer: Option<SocketAddr>, id: &TaskId) -> Option<StreamClaim> {
        let Some(peer) = peer else {
            return Some(StreamClaim {
                inner: inner.clone(),
                key: None,
            });
        };
        let key = (peer, id.clone());
        let mut set = inner.open_streams.0.lock().ok()?;
        if !set.insert(key.clone()) {
            return None;
        }
        Some(StreamClaim {
            inner: inner.clone(),
            key: Some(key),
        })
    }
}

/// The `events_gone` error (-32010): the events after the cursor are not all
/// in the store any more; `earliest` is the oldest one that is (as a stream
/// sequence number).
pub(crate) fn events_gone(task_id: &str, earliest: u64) -> RpcError {
    RpcError::new(code::EVENTS_GONE, "Task events are no longer available").with_data(
        &msg::EventsGoneData {
            reason: "events_gone".into(),
            task_id: task_id.to_string(),
            earliest_seq: earliest,
        },
    )
}

/// The empty result that ends a stream.
fn done() -> Value {
    to_json(&msg::EmptyResult {
        result_type: msg::Complete::Complete,
        meta: None,
    })
    .unwrap_or_else(|e| e.object())
}

/// The `after` cursor: absent (or null), or a non-negative integer.
fn after_param(params: &Map<String, Value>) -> Result<Option<u64>, RpcError> {
    match params.get("after") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "params.after must be a non-negative integer (a sequence number), not {v}"
            ))
        }),
    }
}

/// Answers `tasks/stream`: an error, an empty result at once (a task that
/// ended with nothing after the cursor), or an SSE stream of its events ending
/// with the result.
pub(crate) async fn open(
    inner: Arc<Inner>,
    caller: Caller,
    peer: Option<SocketAddr>,
    id: Value,
    params: Map<String, Value>,
) -> Response {
    match prepare(&inner, &caller, peer, &params).await {
        Ok(Opened::Done) => json_response(axum::http::StatusCode::OK, &wire::result(&id, done())),
        Ok(Opened::Stream(s)) => {
            let (tx, rx) = mpsc::channel::<Value>(32);
            tokio::spawn(drive(inner, caller, id, s, tx));
            crate::rev_2025_11_25::sse_of(rx)
        }
        Err(e) => error_response(&id, &e),
    }
}

enum Opened {
    Done,
    Stream(Box<Prepared>),
}

struct Prepared {
    task_id: TaskId,
    /// The core sequence number of the last event sent (or the cursor).
    last: u64,
    events: taskwire_core::service::EventStream,
    _claim: StreamClaim,
}

async fn prepare(
    inner: &Arc<Inner>,
    caller: &Caller,
    peer: Option<SocketAddr>,
    params: &Map<String, Value>,
) -> Result<Opened, RpcError> {
    let raw = task_id_param(params)?;
    let after = after_param(params)?;
    let task = inner.get(caller, raw).await?;
    let mut from = vocab::core_after(after);
    if after.is_none() {
        // No cursor: from the earliest event the log still holds (none: the
        // events to come).
        let first = inner
            .service
            .events_as(Access::Owner(caller), &task.id, 0, 1)
            .await
            .map_err(|e| RpcError::from_core(e, Some(raw)))?;
        from = first
            .first()
            .map_or(task.last_seq, |ev| ev.seq.saturating_sub(1));
    }
    if from > task.last_seq {
        return Err(RpcError::invalid_params(format!(
            "params.after {} is past the task's last event ({})",
            after.unwrap_or_default(),
            vocab::stream_seq(task.last_seq)
        )));
    }
    if task.state.is_terminal() && from == task.last_seq {
        return Ok(Opened::Done);
    }
    let claim = OpenStreams::claim(inner, peer, &task.id).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "a tasks/stream for task {raw} is already open on this connection; cancel it first"
        ))
    })?;
    // Gap-free from the cursor: the first event after it must be in the log.
    if from < task.last_seq {
        let first = inner
            .service
            .events_as(Access::Owner(caller), &task.id, from, 1)
            .await
            .map_err(|e| RpcError::from_core(e, Some(raw)))?;
        match first.first() {
            Some(ev) if ev.seq == from + 1 => {}
            Some(ev) => return Err(events_gone(raw, vocab::stream_seq(ev.seq))),
            None => return Err(events_gone(raw, task.last_seq)),
        }
    }
    let events = inner
        .service
        .subscribe(Access::Owner(caller), &task.id, from)
        .await
        .map_err(|e| RpcError::from_core(e, Some(raw)))?;
    Ok(Opened::Stream(Box::new(Prepared {
        task_id: task.id,
        last: from,
        events,
        _claim: claim,
    })))
}

async fn drive(
    inner: Arc<Inner>,
    caller: Caller,
    id: Value,
    mut s: Box<Prepared>,
    tx: mpsc::Sender<Value>,
) {
    let raw = s.task_id.to_string();
    let end = loop {
        let next = tokio::select! {
            next = s.events.next() => next,
            // The client went away: stop reading (the task goes on).
            () = tx.closed() => return,
        };
        match next {
            Some(Ok(ev)) => {
                if ev.seq != s.last + 1 {
                    break wire::error(&id, &events_gone(&raw, vocab::stream_seq(ev.seq)));
                }
                s.last = ev.seq;
                let terminal = ev.kind.terminal_state().is_some();
                let n = match to_json(&vocab::task_event(&ev)) {
                    Ok(p) => wire::notification(method::NOTIFY_TASKS_EVENT, p),
                    Err(e) => break wire::error(&id, &e),
                };
                if tx.send(n).await.is_err() {
                    return;
                }
                if terminal {
                    break wire::result(&id, done());
                }
            }
            Some(Err(e)) => break wire::error(&id, &RpcError::from_core(e, Some(&raw))),
            // The log ended before the terminal event: the task was swept
            // meanwhile (its log with it), or the server closes the stream
            // early (the client resumes from its cursor).
            None => match inner.get(&caller, &raw).await {
                Err(e) if e.code == code::INVALID_PARAMS => {
                    break wire::error(&id, &events_gone(&raw, s.last))
                }
                _ => break wire::result(&id, done()),
            },
        }
    };
    let _ = tx.send(end).await;
}
