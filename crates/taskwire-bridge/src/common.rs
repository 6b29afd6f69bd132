//! What every upstream executor shares: the cancel watcher, and the decision
//! whether a stopped turn was a downstream cancel.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;
use taskwire_client::ClientError;
use taskwire_core::{Access, CoreError, TaskId, TaskService, TaskState, TaskStore, TurnOutcome};

use crate::error::BridgeError;
use tracing::{debug, info, warn};

use crate::a2a::LINK_KEY;

/// Aborts the watcher task when the last agent clone goes.
#[derive(Debug)]
pub(crate) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The upstream task id of a downstream task's agent state, when its link is
/// of `protocol`.
pub(crate) fn linked_task(state: Option<&Value>, protocol: &str) -> Option<String> {
    let link = state?.get(LINK_KEY)?;
    if link.get("protocol").and_then(Value::as_str) != Some(protocol) {
        return None;
    }
    link.get("taskId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Starts (on the current tokio runtime) a watcher that cancels the upstream
/// task of every linked downstream task that ends canceled (a downstream
/// cancel or an inactivity expiry), through `cancel`. A turn that was running
/// cancels upstream itself too; a second cancel is harmless (refused by an
/// upstream whose task has ended, and only logged).
pub(crate) fn watch_cancels<F, Fut>(
    store: Arc<dyn TaskStore>,
    protocol: &'static str,
    cancel: F,
) -> AbortOnDrop
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), ClientError>> + Send + 'static,
{
    AbortOnDrop(tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        let mut rx = store.hub().firehose();
        loop {
            let id: TaskId = match rx.recv().await {
                Ok((id, wake)) if wake.state == TaskState::Canceled => id,
                Ok(_) => continue,
                Err(RecvError::Lagged(n)) => {
                    warn!(
                        missed = n,
                        "the cancel watcher fell behind; some upstream tasks may not be canceled"
                    );
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            let task = match store.get_shared(&id).await {
                Ok(Some(t)) => t,
                Ok(None) => continue,
                Err(e) => {
                    warn!(task = %id, error = %e, "reading a canceled task failed");
                    continue;
                }
            };
            let Some(upstream) = linked_task(task.agent_state.as_ref(), protocol) else {
                continue;
            };
            match cancel(upstream.clone()).await {
                Ok(()) => info!(task = %id, upstream_task = %upstream, "upstream task canceled"),
                Err(e) => debug!(task = %id, upstream_task = %upstream, error = %e,
                    "the upstream refused the cancel (already ended?)"),
            }
        }
    }))
}

/// Whether the downstream task `id` was canceled (so a stopped turn should
/// cancel upstream), as opposed to its worker losing it (a lease lapsed, a
/// restart), after which the next worker re-attaches. Without a store every
/// stop counts as a cancel.
pub(crate) async fn downstream_canceled(store: Option<&Arc<dyn TaskStore>>, id: &TaskId) -> bool {
    match store {
        Some(store) => match store.get_shared(id).await {
            Ok(Some(t)) => t.state == TaskState::Canceled,
            Ok(None) => false,
            Err(e) => {
                warn!(task = %id, error = %e, "reading the stopped task failed; not canceling upstream");
                false
            }
        },
        None => true,
    }
}

/// The upstream task ended canceled: the downstream task `id` ends canceled
/// too (failed, without a store to cancel it in). The turn's result is the
/// core's "already terminal" error, which ends the turn without a transition.
pub(crate) async fn end_canceled(
    store: Option<&Arc<dyn TaskStore>>,
    agent: &str,
    id: &TaskId,
) -> Result<TurnOutcome, BridgeError> {
    let Some(store) = store else {
        return Ok(TurnOutcome::Failed {
            message: "the upstream task was canceled".into(),
        });
    };
    let service = TaskService::new(store.clone(), agent.to_string());
    match service
        .cancel(
            Access::System,
            id,
            Some("the upstream task was canceled".into()),
        )
        .await
    {
        Ok(_) | Err(CoreError::NotCancelable { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    Err(BridgeError::Core(CoreError::Terminal {
        state: TaskState::Canceled,
    }))
}

/// A turn's result as the core takes it: an upstream's refusal (a JSON-RPC
/// or gRPC error answering a call) fails the task with the upstream's words,
/// which the caller needs to see; other failures are internal errors, whose
/// details the core keeps out of the task.
pub(crate) fn turn_result(
    r: Result<TurnOutcome, BridgeError>,
) -> Result<TurnOutcome, taskwire_core::AgentError> {
    match r {
        Err(BridgeError::Upstream { operation, source })
            if matches!(*source, ClientError::Rpc(_) | ClientError::Grpc { .. }) =>
        {
            Ok(TurnOutcome::Failed {
                message: format!("the upstream refused {operation}: {source}"),
            })
        }
        other => Ok(other?),
    }
}
