//! `subscriptions/listen` for tasks (revision 2026-07-28): an SSE response that
//! acknowledges the task ids it accepted, sends a `notifications/tasks` with the
//! full detailed task whenever a task's status or pending input changes, and ends
//! with the listen result once every subscribed task has ended.

use std::sync::Arc;

use axum::response::Response;
use futures::StreamExt;
use serde_json::{Map, Value};
use taskwire_core::service::Access;
use taskwire_core::{Caller, Task};
use taskwire_vocab::mcp as vocab;
use taskwire_wire::mcp as msg;
use tokio::sync::mpsc;

use crate::rev_2026_07_28::to_json;

use crate::error::RpcError;
use crate::wire::{self, method};
use crate::{error_response, Inner};

fn subscription(id: &Value) -> msg::SubscriptionMeta {
    msg::SubscriptionMeta {
        subscription_id: id.clone(),
    }
}

/// A notification of typed params.
fn notification<T: serde::Serialize>(method: &str, params: &T) -> Value {
    match to_json(params) {
        Ok(p) => wire::notification(method, p),
        Err(e) => wire::notification(method, e.object()),
    }
}

/// The `notifications/tasks` message for a task.
pub(crate) fn task_notification(inner: &Inner, t: &Task, sub: &Value) -> Value {
    let task = vocab::detailed_task(
        t,
        inner.config.poll_interval_ms,
        &inner.config.auth_url_base,
    );
    notification(
        method::NOTIFY_TASKS,
        &msg::TaskNotificationParams {
            task,
            meta: subscription(sub),
        },
    )
}

fn signature(t: &Task) -> (String, Option<String>, Vec<String>) {
    let (st, _) = vocab::status(t, vocab::Revision::V2026_07_28);
    let (reqs, _) = vocab::input_requests(t, vocab::Revision::V2026_07_28, "");
    (
        st.as_str().to_string(),
        vocab::status_message(t),
        reqs.keys().cloned().collect(),
    )
}

pub(crate) async fn listen(
    inner: Arc<Inner>,
    caller: Caller,
    id: Value,
    params: Map<String, Value>,
) -> Response {
    let Some(filter) = params.get("notifications").and_then(Value::as_object) else {
        return error_response(
            &id,
            &RpcError::invalid_params("params.notifications (the subscription filter) is required"),
        );
    };
    let requested: Vec<String> = match filter.get("taskIds") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            let ids: Option<Vec<String>> =
                a.iter().map(|v| v.as_str().map(str::to_string)).collect();
            match ids {
                Some(ids) => ids,
                None => {
                    return error_response(
                        &id,
                        &RpcError::invalid_params("params.notifications.taskIds must be strings"),
                    )
                }
            }
        }
        Some(_) => {
            return error_response(
                &id,
                &RpcError::invalid_params("params.notifications.taskIds must be an array"),
            )
        }
    };
    // Only the caller's own tasks are accepted; others are left out of the
    // acknowledgement (indistinguishable from unknown ones).
    let mut tasks = Vec::new();
    for raw in requested.iter().take(100) {
        if let Ok(t) = inner.get(&caller, raw).await {
            if !tasks.iter().any(|x: &Task| x.id == t.id) {
                tasks.push(t);
            }
        }
    }
    let (tx, rx) = mpsc::channel::<Value>(32);
    tokio::spawn(drive(inner, caller, id, tasks, tx));
    crate::rev_2025_11_25::sse_of(rx)
}

async fn drive(
    inner: Arc<Inner>,
    caller: Caller,
    id: Value,
    tasks: Vec<Task>,
    tx: mpsc::Sender<Value>,
) {
    let accepted: Vec<String> = tasks.iter().map(|t| t.id.to_string()).collect();
    let ack = notification(
        method::NOTIFY_SUBSCRIPTIONS_ACK,
        &msg::SubscriptionsAcknowledgedParams {
            notifications: msg::NotificationFilter { task_ids: accepted },
            meta: subscription(&id),
        },
    );
    if tx.send(ack).await.is_err() {
        return;
    }
    let mut last = std::collections::HashMap::new();
    let mut streams = Vec::new();
    for t in &tasks {
        last.insert(t.id.clone(), signature(t));
        if tx.send(task_notification(&inner, t, &id)).await.is_err() {
            return;
        }
        if t.state.is_terminal() {
            continue;
        }
        match inner
            .service
            .subscribe(Access::Owner(&caller), &t.id, t.last_seq)
            .await
        {
            Ok(s) => streams.push(s),
            Err(e) => tracing::debug!(task = %t.id, error = %e, "mcp: subscribe"),
        }
    }
    let mut merged = futures::stream::select_all(streams);
    loop {
        let ev = tokio::select! {
            ev = merged.next() => ev,
            // The client went away: stop following the tasks.
            _ = tx.closed() => return,
        };
        let Some(ev) = ev else { break };
        let Ok(ev) = ev else { continue };
        if !vocab::notifies(&ev.kind).0 {
            continue;
        }
        let Ok(t) = inner.service.get(&caller, &ev.task_id).await else {
            continue;
        };
        let sig = signature(&t);
        if last.get(&t.id) == Some(&sig) {
            continue;
        }
        last.insert(t.id.clone(), sig);
        if tx.send(task_notification(&inner, &t, &id)).await.is_err() {
            return;
        }
    }
    let done = msg::ListenResult {
        result_type: msg::Complete::Complete,
        meta: subscription(&id),
    };
    let answer = match to_json(&done) {
        Ok(r) => wire::result(&id, r),
        Err(e) => wire::error(&id, &e),
    };
    let _ = tx.send(answer).await;
}
