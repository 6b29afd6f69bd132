//! What a turn becomes: the failure of an upstream call mapped to the task's
//! end, the upstream's questions raised downstream, the tool a task runs.

use serde_json::Value;
use taskwire_client::ClientError;
use taskwire_core::TurnOutcome;

use crate::error::BridgeError;
use tracing::warn;

/// A turn's result as the core takes it: an upstream's refusal (a JSON-RPC
/// or gRPC error answering a call) fails the task with the upstream's words,
/// which the caller needs to see; an upstream that could not be reached, did
/// not answer in time or answered with an HTTP error (after the retries the
/// call allows) fails it saying which, without the details (addresses, the
/// error chain), which are logged; other failures are internal errors, whose
/// details the core keeps out of the task.
pub(crate) fn turn_result(
    ctx: &taskwire_core::TurnContext,
    r: Result<TurnOutcome, BridgeError>,
) -> Result<TurnOutcome, taskwire_core::AgentError> {
    if let Err(BridgeError::Upstream { operation, source }) = &r {
        if let Some(what) = plain_failure(source) {
            warn!(task = %ctx.task().id, operation, error = %source,
                "the upstream call failed; the task fails");
            return Ok(TurnOutcome::Failed {
                message: format!("{what} ({operation})"),
            });
        }
    }
    match r {
        Err(BridgeError::Upstream { operation, source })
            if matches!(*source, ClientError::Rpc(_) | ClientError::Grpc { .. }) =>
        {
            Ok(TurnOutcome::Failed {
                message: format!("the upstream refused {operation}: {source}"),
            })
        }
        // An answer the bridge cannot use (too large, not the protocol's
        // shape) would be the same on a retry: the task fails, saying why.
        Err(BridgeError::Upstream { operation, source })
            if matches!(*source, ClientError::Decode { .. }) =>
        {
            Ok(TurnOutcome::Failed {
                message: format!("the upstream's answer to {operation} is unusable: {source}"),
            })
        }
        Err(BridgeError::Protocol(why)) => Ok(TurnOutcome::Failed {
            message: format!("the upstream broke the protocol: {why}"),
        }),
        other => Ok(other?),
    }
}

/// What a downstream caller is told of an upstream call that failed without
/// an answer of the protocol (None: an internal error).
pub(crate) fn plain_failure(e: &ClientError) -> Option<String> {
    Some(match e {
        ClientError::Connect(_) => "the upstream agent could not be reached".into(),
        ClientError::Timeout(_) => "the upstream agent did not answer in time".into(),
        ClientError::Transport(_) => "the connection to the upstream agent broke".into(),
        ClientError::StreamBroken { .. } => {
            "the upstream agent's stream broke and could not be resumed".into()
        }
        ClientError::Http { status, .. } => {
            format!("the upstream agent answered with HTTP status {status}")
        }
        _ => return None,
    })
}

/// The tool a downstream task calls, of `names` (its skill, or the one tool),
/// or the refusal of a task that names none of several.
pub(crate) fn chosen_tool(
    task: &taskwire_core::Task,
    names: &[String],
) -> Result<String, TurnOutcome> {
    match taskwire_vocab::upstream::mcp::tool_of_task(&task.metadata, names) {
        Some(t) => Ok(t.to_string()),
        None => Err(TurnOutcome::Rejected {
            reason: format!(
                "the upstream MCP server has several tools ({}): call one of them as an MCP tool, or bridge one with --upstream URL#tool",
                names.join(", ")
            ),
        }),
    }
}

/// One upstream question raised on the downstream task by [`raise`].
pub(crate) struct Raised {
    /// The upstream key (also the downstream input request key).
    pub(crate) key: String,
    /// For an authorisation: the downstream provider.
    pub(crate) provider: Option<String>,
    /// For a form: its schema.
    pub(crate) schema: Option<Value>,
}

/// Raises an upstream's questions on the downstream task: forms as input
/// requests of the same key, prompt and schema; URL elicitations and
/// authorisation interrupts as provider authorisations. `Ok(Err(outcome))`
/// fails the turn for a question the bridge does not carry (`what` names the
/// upstream's word for a question in the message); else what was raised and
/// the prompts, one per line.
pub(crate) fn raise(
    ctx: &taskwire_core::TurnContext,
    asks: Vec<taskwire_vocab::upstream::mcp::UpstreamAsk>,
    what: &str,
) -> Result<Result<(Vec<Raised>, String), TurnOutcome>, BridgeError> {
    use taskwire_vocab::upstream::mcp::UpstreamAsk;
    let mut raised = Vec::new();
    let mut prompts = Vec::new();
    for a in asks {
        match a {
            UpstreamAsk::Form {
                key,
                prompt,
                schema,
            } => {
                ctx.request_input(&key, &prompt, schema.clone())?;
                prompts.push(prompt);
                raised.push(Raised {
                    key,
                    provider: None,
                    schema: Some(schema),
                });
            }
            UpstreamAsk::Auth {
                key,
                provider,
                prompt,
                url,
            } => {
                let url = (!url.is_empty()).then_some(url);
                ctx.require_auth(&provider, &key, url.as_deref())?;
                prompts.push(prompt);
                raised.push(Raised {
                    key,
                    provider: Some(provider),
                    schema: None,
                });
            }
            UpstreamAsk::Unsupported { key, method } => {
                warn!(task = %ctx.task().id, key = %key, method,
                    "the upstream asked for something the bridge does not carry");
                return Ok(Err(TurnOutcome::Failed {
                    message: format!(
                        "the upstream asked for {method} ({what} {key}), which the bridge does not carry"
                    ),
                }));
            }
        }
    }
    Ok(Ok((raised, prompts.join("\n"))))
}
