//! When a failed upstream call is made again: sent again while nothing reached
//! the upstream, polls again on transient errors, each with the backoff policy.

use std::future::Future;

use taskwire_client::ClientError;

use crate::error::BridgeError;
use tracing::warn;

/// Makes an upstream call, and makes it again while it fails in a way
/// `again` says is safe to repeat (see [`after_failed_send`]). `Ok(None)` when
/// the task is canceled during a wait.
pub(crate) async fn sent_again<T, F, Fut>(
    ctx: &taskwire_core::TurnContext,
    backoff: &taskwire_client::BackoffPolicy,
    operation: &'static str,
    again: fn(&ClientError) -> bool,
    mut call: F,
) -> Result<Option<T>, BridgeError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ClientError>>,
{
    let mut attempt = 0;
    loop {
        match call().await {
            Ok(v) => return Ok(Some(v)),
            Err(e) => {
                match after_failed_send(ctx, backoff, &mut attempt, e, operation, again).await {
                    Ok(true) => {}
                    Ok(false) => return Ok(None),
                    Err(e) => return Err(e),
                }
            }
        }
    }
}

/// After a failed upstream call: waits the backoff policy's delay and says
/// `true` (make it again) while `again(&e)` and fewer than its attempts were
/// made; `false` when the task is canceled during the wait; else the error
/// that ends the turn. `again` is [`ClientError::is_transient`] for an A2A
/// send (sent again with the same message id) and
/// [`ClientError::is_unsent`] for a call that has no idempotency key (an MCP
/// `tools/call`, an AG-UI run), made again only when nothing of it reached
/// the upstream.
pub(crate) async fn after_failed_send(
    ctx: &taskwire_core::TurnContext,
    backoff: &taskwire_client::BackoffPolicy,
    attempt: &mut u32,
    e: ClientError,
    operation: &'static str,
    again: fn(&ClientError) -> bool,
) -> Result<bool, BridgeError> {
    let (wait, e) = retry_delay(backoff, attempt, e, operation, again)?;
    warn!(task = %ctx.task().id, error = %e, attempt = *attempt, retry_in = ?wait,
        "{operation} failed; sending it again");
    tokio::select! {
        _ = ctx.cancelled() => Ok(false),
        _ = tokio::time::sleep(wait) => Ok(true),
    }
}

/// Whether a failed upstream call is made again: the backoff policy's delay
/// before it (counting the attempt, and handing the error back for the log)
/// while `again(&e)` and fewer than the policy's attempts were made; else the
/// error that ends the turn.
pub(crate) fn retry_delay(
    backoff: &taskwire_client::BackoffPolicy,
    attempt: &mut u32,
    e: ClientError,
    operation: &'static str,
    again: fn(&ClientError) -> bool,
) -> Result<(std::time::Duration, ClientError), BridgeError> {
    if !again(&e) || *attempt >= backoff.max_attempts {
        return Err(BridgeError::Upstream {
            operation,
            source: Box::new(e),
        });
    }
    let wait = backoff.delay(*attempt);
    *attempt += 1;
    Ok((wait, e))
}

/// After a failed poll of an upstream task: the wait before the next one, or
/// (when the failure is not transient, or `failures` already reached the
/// policy's attempts) the error that ends the turn. Counts the failure.
pub(crate) fn after_failed_poll(
    backoff: &taskwire_client::BackoffPolicy,
    failures: &mut u32,
    e: ClientError,
    operation: &'static str,
    upstream_task: &str,
) -> Result<std::time::Duration, BridgeError> {
    let (d, e) = retry_delay(backoff, failures, e, operation, ClientError::is_transient)?;
    tracing::debug!(upstream_task = %upstream_task, error = %e, attempt = *failures,
        "{operation} failed; retrying");
    Ok(d)
}

/// Whether a probe's error still shows a server that answers (an A2A or
/// JSON-RPC error) rather than one that cannot be reached.
pub(crate) fn answered(e: &ClientError) -> bool {
    !e.is_transient() && matches!(e, ClientError::Rpc(_) | ClientError::Grpc { .. })
}
