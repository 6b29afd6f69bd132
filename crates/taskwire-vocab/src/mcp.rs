//! The MCP view of the core vocabulary: task states as MCP task statuses (the
//! SEP-2663 tasks extension of revision 2026-07-28 and the experimental tasks of
//! revision 2025-11-25), task outputs as a `CallToolResult`, pending interactions
//! as elicitation requests, and elicitation results back as core answers.
//!
//! Everything here is a pure function from core types to the typed wire messages
//! of [`taskwire_wire::mcp`] (and back, for answers); the adapter (crate
//! `taskwire-mcp`) serializes them and owns the transport and the JSON-RPC
//! envelope.
//! Each lossy edge returns or names a [`Loss`]; the tests pin them.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{json, Map, Value};
use taskwire_wire::mcp as wire;

use taskwire_core::agent::Skill;
use taskwire_core::types::{
    InputAction, InputKind, InputResponse, Message, Part, PartContent, ReviewDecision, Task,
    TaskState, TerminalCause, Timestamp,
};
use taskwire_core::CoreError;

use crate::{Loss, VocabError};

/// Id of the tasks extension (SEP-2663), in capabilities and `_meta`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key relating a message to a task (revision 2025-11-25).
pub const RELATED_TASK_META: &str = crate::names::mcp::meta::RELATED_TASK;
/// Prefix of the input-request key of a provider authorisation.
pub const AUTH_KEY_PREFIX: &str = "taskwire.auth/";
/// The task metadata key under which the MCP adapter records the tool a
/// `tools/call` called (read by agents that serve several tools, and by the
/// bridge to choose the upstream tool).
pub const TOOL_METADATA_KEY: &str = "mcpTool";
/// Prefix of the input-request key of a review.
pub const REVIEW_KEY_PREFIX: &str = "taskwire.review/";
/// The JSON-RPC code of an internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// The JSON-RPC code of an invalid request (also: a token without the scope
/// the request needs, with HTTP 403).
pub const INVALID_REQUEST: i64 = -32600;
/// The JSON-RPC code of invalid params (also: unknown or foreign task).
pub const INVALID_PARAMS: i64 = -32602;
/// Longest status message put on the wire, in characters.
pub const MAX_STATUS_MESSAGE: usize = 512;

/// Which MCP task revision a view is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Revision {
    /// Revision 2026-07-28 with the tasks extension (SEP-2663).
    V2026_07_28,
    /// Revision 2025-11-25 experimental tasks (SEP-1686).
    V2025_11_25,
}

/// An MCP task status (both generations use the same five words): the wire
/// layer's type, whose `Unknown` stands for a word a newer peer may send.
pub use taskwire_wire::mcp::TaskStatus as McpStatus;

/// Lost: a submitted task (not yet picked up) looks the same as a running one.
pub const LOSS_SUBMITTED: Loss = Loss("submitted and working are both `working`");
/// Lost: the difference between waiting for input and waiting for an authorisation.
pub const LOSS_AUTH_REQUIRED: Loss =
    Loss("auth-required is `input_required` with a URL-mode elicitation; the provider's operation list is not shown");
/// Lost: an agent failure is a completed tool call with `isError` (revision 2026-07-28).
pub const LOSS_AGENT_FAILED: Loss =
    Loss("an agent failure is `completed` with isError:true; the failure code is not shown");
/// Lost: a rejection is a completed tool call with `isError`.
pub const LOSS_REJECTED: Loss = Loss(
    "rejected is `completed` with isError:true (`failed` in 2025-11-25); the refusal is only text",
);
/// Lost: a guardrail lock is a completed tool call with `isError`.
pub const LOSS_RESTRICTED: Loss =
    Loss("restricted is `completed` with isError:true (`failed` in 2025-11-25)");
/// Lost: an inactivity expiry looks like a cancellation.
pub const LOSS_EXPIRED: Loss =
    Loss("an inactivity expiry is `cancelled`; the cause is only in statusMessage");
/// Lost (2025-11-25): an agent failure and an internal failure are both `failed`.
pub const LOSS_2025_11_25_FAILED: Loss =
    Loss("2025-11-25 `failed` covers agent failures (isError result) and internal errors alike");
/// Lost: binary parts that are neither image nor audio become embedded resources.
pub const LOSS_RAW_AS_RESOURCE: Loss =
    Loss("raw bytes that are not image/* or audio/* become an embedded blob resource with a synthetic uri");
/// Lost: several data parts, or a data part that is not an object, are wrapped.
pub const LOSS_DATA_WRAPPED: Loss =
    Loss("structuredContent is one object: several data parts (or a non-object) are wrapped under `data`");
/// Lost: content blocks carry no part metadata, and most carry no file name.
pub const LOSS_PART_METADATA: Loss = Loss(
    "part metadata is dropped, and so is the file name except on resource links and embedded resources",
);
/// Lost: artifact names, ids and metadata do not survive as content.
pub const LOSS_ARTIFACT_FRAMING: Loss =
    Loss("artifact ids, names and metadata are dropped; only their parts become content");
/// Lost: a review is a confirmation form; the reviewer and the summary's structure are not shown.
pub const LOSS_REVIEW_AS_FORM: Loss =
    Loss("a review is a confirmation form (approved: boolean); only reviews of the responsible user are offered");
/// Lost: the core keeps a task for its TTL after it ends; MCP counts `ttlMs` (and
/// `ttl`) from creation. The value sent is the core's retention, so a task may
/// outlive the advertised deadline by its running time (never the reverse).
pub const LOSS_TTL_ORIGIN: Loss =
    Loss("ttlMs is the core's retention after the task ends; MCP counts it from creation, so tasks outlive it by their running time");
/// Lost: a task that waits for its next message with nothing pending (the host
/// interrupted its turn) has nothing an MCP client can answer.
pub const LOSS_NOTHING_TO_ANSWER: Loss = Loss(
    "input_required with empty inputRequests: the task waits for a new message, which MCP cannot send; it can only be cancelled",
);
/// Lost: an authorisation dismissed with `cancel` is left pending.
pub const LOSS_AUTH_CANCEL: Loss = Loss("cancel on an authorisation leaves it pending");
/// Lost: the core has no "authorisation refused": declining one cancels the task.
pub const LOSS_AUTH_DECLINE_CANCELS: Loss = Loss(
    "decline on an authorisation cancels the whole task (the core has no refused authorisation)",
);
/// Lost: every refusal of a request is -32602.
pub const LOSS_ERROR_REFUSALS: Loss = Loss(
    "unknown task, terminal task, wrong state, over-limit and guardrail refusals are all -32602; only the message tells them apart",
);
/// Lost: a retryable condition is reported as an internal error.
pub const LOSS_ERROR_RETRYABLE: Loss =
    Loss("contention and shutdown are -32603 like a failure; MCP has no retryable error code");

/// Lost from MCP task notifications: the task's progress between states.
pub const LOSS_PROGRESS_NOT_NOTIFIED: Loss = Loss(
    "agent messages, artifact chunks, steps and agent state are not notified; a task notification carries only status, inputRequests and the final result",
);

/// True if a core log event may change what an MCP task notification
/// (`notifications/tasks` of the extension, `notifications/tasks/status` of
/// 2025-11-25) carries: the status, the open interactions or the outcome. Other
/// events are not notified ([`LOSS_PROGRESS_NOT_NOTIFIED`] for the ones a client
/// could have used).
pub fn notifies(kind: &taskwire_core::EventKind) -> (bool, Option<Loss>) {
    use taskwire_core::EventKind as E;
    match kind {
        E::Status { .. }
        | E::InputRequested { .. }
        | E::InputAnswered { .. }
        | E::InputSuperseded { .. }
        | E::AuthRequired { .. }
        | E::AuthGranted { .. }
        | E::ReviewRequested { .. }
        | E::ReviewDecided { .. } => (true, None),
        E::Message { .. }
        | E::Artifact { .. }
        | E::Step { .. }
        | E::StateSnapshot { .. }
        | E::StateDelta { .. } => (false, Some(LOSS_PROGRESS_NOT_NOTIFIED)),
        E::Created { .. } | E::TurnStarted { .. } | E::InputCommitted { .. } => (false, None),
    }
}

/// The message of a `notifications/progress` for an event a client waiting on
/// a `tools/call` with a `progressToken` is told about (steps, artifacts, agent
/// messages), or `None`. The progress value is the event's sequence number,
/// which only grows; no total is known.
pub fn progress_message(kind: &taskwire_core::EventKind) -> Option<String> {
    use taskwire_core::EventKind as E;
    match kind {
        E::Step { name, phase } => Some(format!(
            "{} {}",
            short(name),
            match phase {
                taskwire_core::StepPhase::Started => "started",
                taskwire_core::StepPhase::Finished => "finished",
            }
        )),
        E::Artifact { artifact, .. } => Some(format!(
            "artifact {}",
            short(artifact.name.as_deref().unwrap_or(&artifact.artifact_id))
        )),
        E::Message { message, .. } if message.role == taskwire_core::Role::Agent => {
            Some(short(&message.text()))
        }
        _ => None,
    }
}

/// The prefix of the event types of taskwire's `tasks/stream` events
/// (SEP-2694 reserves unprefixed types for MCP itself): `taskwire.` and the core
/// event kind (`taskwire.status`, `taskwire.artifact`, `taskwire.step`, …), the
/// vendor namespace of taskwire's other MCP keys (`taskwire.auth/…`).
pub const EVENT_TYPE_PREFIX: &str = "taskwire.";

/// The sub-capability of the tasks extension that offers `tasks/stream`
/// (SEP-2694).
pub const EVENT_STREAMS: &str = "eventStreams";

/// The SEP-2694 sequence number of a core event: the core log counts from 1,
/// a task event stream from 0.
pub fn stream_seq(core_seq: u64) -> u64 {
    core_seq.saturating_sub(1)
}

/// The core sequence number to read after for a SEP-2694 `after` cursor
/// (`None`: from the start).
pub fn core_after(after: Option<u64>) -> u64 {
    after.map_or(0, |a| a.saturating_add(1))
}

/// A core event as a SEP-2694 task event (`notifications/tasks/event`
/// params): its type is [`EVENT_TYPE_PREFIX`] and the core's event kind, its
/// payload the kind's fields (as the core writes them, camelCase) and `at`,
/// when it was committed.
pub fn task_event(ev: &taskwire_core::Event) -> wire::TaskEvent {
    let mut payload = match serde_json::to_value(&ev.kind) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let kind = match payload.remove("type") {
        Some(Value::String(k)) => k,
        _ => "event".to_string(),
    };
    if let Ok(at) = serde_json::to_value(ev.at) {
        payload.insert("at".into(), at);
    }
    let task_id = ev.task_id.to_string();
    wire::TaskEvent {
        seq: stream_seq(ev.seq),
        task_id: task_id.clone(),
        event_type: format!("{EVENT_TYPE_PREFIX}{kind}"),
        payload,
        meta: wire::TaskEventMeta {
            related_task: wire::RelatedTask { task_id },
        },
    }
}

/// The JSON-RPC error (code, message safe to show) of a core error; `task_id`
/// names the task in the unknown-task message. Store and lease failures become a
/// bare "internal error" (their details are for logs only).
pub fn error_from_core(e: &CoreError, task_id: Option<&str>) -> (i64, String) {
    match e {
        CoreError::NotFound => (
            INVALID_PARAMS,
            format!("unknown task: {}", task_id.unwrap_or("")),
        ),
        CoreError::InvalidInput { .. }
        | CoreError::TooLarge { .. }
        | CoreError::DeniedByGuardrail { .. }
        | CoreError::Terminal { .. }
        | CoreError::NotCancelable { .. }
        | CoreError::WrongState { .. }
        | CoreError::IllegalTransition { .. } => (INVALID_PARAMS, e.to_string()),
        CoreError::Contention => (
            INTERNAL_ERROR,
            "too much contention on the task, retry".into(),
        ),
        CoreError::ShuttingDown => (INTERNAL_ERROR, "the server is shutting down".into()),
        CoreError::LeaseLost | CoreError::Store(_) => (INTERNAL_ERROR, "internal error".into()),
        CoreError::Unavailable(_) => (INTERNAL_ERROR, UNAVAILABLE_MESSAGE.into()),
        // Travels with HTTP 403 and `WWW-Authenticate: Bearer
        // error="insufficient_scope"` (the MCP authorization spec's step-up).
        CoreError::Forbidden { .. } => (INVALID_REQUEST, e.to_string()),
    }
}

/// The message of a store that did not answer.
pub const UNAVAILABLE_MESSAGE: &str =
    "the task store did not answer; retry (a retried request is safe: see error.data)";

/// The `error.data` of a JSON-RPC error for a core error: for a store that did
/// not answer, `{"reason": "unavailable", "retryable": true, "retryAfterSeconds":
/// 1, "retrySafeWith": [...]}` naming what makes a retry create nothing twice
/// (the request's task id in `_meta`, or the task id for a task method).
pub fn error_data(e: &CoreError) -> Option<serde_json::Value> {
    match e {
        CoreError::Unavailable(_) => Some(serde_json::json!({
            "reason": "unavailable",
            "retryable": true,
            "retryAfterSeconds": taskwire_wire::a2a::errors::RETRY_AFTER_SECS,
        })),
        _ => None,
    }
}

/// Lost: JSON-RPC has no code for "unavailable".
pub const LOSS_ERROR_UNAVAILABLE: Loss = Loss(
    "a store that did not answer is -32603 like an internal error; only error.data (reason unavailable, retryable) tells it apart",
);

/// Lost: JSON-RPC has no code for a missing scope.
pub const LOSS_ERROR_FORBIDDEN: Loss = Loss(
    "a token without the scope is -32600 like an invalid request; HTTP 403 and its `WWW-Authenticate: Bearer error=\"insufficient_scope\"` tell it apart",
);

/// What the MCP error of a core error loses (see [`error_from_core`]).
pub fn error_loss(e: &CoreError) -> Option<Loss> {
    match e {
        CoreError::NotFound
        | CoreError::TooLarge { .. }
        | CoreError::DeniedByGuardrail { .. }
        | CoreError::Terminal { .. }
        | CoreError::NotCancelable { .. }
        | CoreError::WrongState { .. }
        | CoreError::IllegalTransition { .. } => Some(LOSS_ERROR_REFUSALS),
        CoreError::Contention | CoreError::ShuttingDown => Some(LOSS_ERROR_RETRYABLE),
        CoreError::LeaseLost => Some(crate::LOSS_LEASE_LOST),
        CoreError::Unavailable(_) => Some(LOSS_ERROR_UNAVAILABLE),
        CoreError::Forbidden { .. } => Some(LOSS_ERROR_FORBIDDEN),
        CoreError::InvalidInput { .. } | CoreError::Store(_) => None,
    }
}

/// The MCP status of a task, and what the mapping loses.
pub fn status(task: &Task, revision: Revision) -> (McpStatus, Option<Loss>) {
    match task.state {
        TaskState::Submitted => (McpStatus::Working, Some(LOSS_SUBMITTED)),
        TaskState::Working => (McpStatus::Working, None),
        TaskState::InputRequired if task.waiting_state().is_none() => {
            (McpStatus::InputRequired, Some(LOSS_NOTHING_TO_ANSWER))
        }
        TaskState::InputRequired => (McpStatus::InputRequired, None),
        TaskState::AuthRequired => (McpStatus::InputRequired, Some(LOSS_AUTH_REQUIRED)),
        TaskState::Completed => (McpStatus::Completed, None),
        TaskState::Canceled => match task.terminal_cause {
            Some(TerminalCause::Expired) => (McpStatus::Cancelled, Some(LOSS_EXPIRED)),
            _ => (McpStatus::Cancelled, None),
        },
        TaskState::Rejected => {
            let loss = if task.terminal_cause == Some(TerminalCause::Restricted) {
                LOSS_RESTRICTED
            } else {
                LOSS_REJECTED
            };
            match revision {
                Revision::V2026_07_28 => (McpStatus::Completed, Some(loss)),
                Revision::V2025_11_25 => (McpStatus::Failed, Some(loss)),
            }
        }
        TaskState::Failed => match (task.terminal_cause, revision) {
            (Some(TerminalCause::AgentFailed), Revision::V2026_07_28) => {
                (McpStatus::Completed, Some(LOSS_AGENT_FAILED))
            }
            (Some(TerminalCause::Restricted), Revision::V2026_07_28) => {
                (McpStatus::Completed, Some(LOSS_RESTRICTED))
            }
            (Some(TerminalCause::AgentFailed), Revision::V2025_11_25) => {
                (McpStatus::Failed, Some(LOSS_2025_11_25_FAILED))
            }
            (Some(TerminalCause::Restricted), Revision::V2025_11_25) => {
                (McpStatus::Failed, Some(LOSS_RESTRICTED))
            }
            _ => (McpStatus::Failed, None),
        },
    }
}

/// The core state an MCP status stands for, read back (by a client, or a check
/// that two views agree). Exact wherever [`status`] reports no loss; a lossy
/// status reads back as the state it is shared with (`working` as working,
/// `completed` as completed, 2025-11-25 `failed` as failed). A status word this
/// version does not know reads as working: the task has not ended as far as
/// anyone here can tell.
pub fn state_from_status(s: McpStatus) -> TaskState {
    match s {
        McpStatus::InputRequired => TaskState::InputRequired,
        McpStatus::Completed => TaskState::Completed,
        McpStatus::Failed => TaskState::Failed,
        McpStatus::Cancelled => TaskState::Canceled,
        _ => TaskState::Working,
    }
}

/// How a terminal task answers the original `tools/call`.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Not terminal yet.
    Pending,
    /// A `CallToolResult` (possibly with `isError: true`).
    Result(wire::CallToolResult2025_11_25),
    /// A JSON-RPC error object (`{code, message}`): an internal or protocol failure.
    Error(wire::ErrorObject),
    /// Cancelled: no result.
    Cancelled,
}

/// True if the task's failure is an internal or protocol one (a JSON-RPC error),
/// as opposed to an agent fault shown as an `isError` result.
pub fn is_internal_failure(task: &Task) -> bool {
    task.state == TaskState::Failed
        && !matches!(
            task.terminal_cause,
            Some(TerminalCause::AgentFailed) | Some(TerminalCause::Restricted)
        )
}

/// The answer a task gives to its `tools/call`.
pub fn outcome(task: &Task) -> Outcome {
    match task.state {
        s if !s.is_terminal() => Outcome::Pending,
        TaskState::Canceled => Outcome::Cancelled,
        // The core keeps an internal failure's details in the task's error, for
        // operators; the caller sees the safe status message.
        TaskState::Failed if is_internal_failure(task) => Outcome::Error(error_object(
            INTERNAL_ERROR,
            task.status_message
                .as_ref()
                .map(|m| short(&m.text()))
                .filter(|m| !m.is_empty())
                .unwrap_or_else(|| "internal error".to_string()),
        )),
        _ => Outcome::Result(call_tool_result(task).0),
    }
}

/// Which request a terminal task's outcome answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answering {
    /// The original `tools/call` (answered when the task ends while the call waits).
    ToolCall,
    /// A 2025-11-25 `tasks/result`.
    TasksResult,
}

/// Lost: MCP results have no cancelled form.
pub const LOSS_CANCELLED_AS_ERROR: Loss = Loss(
    "a cancelled tool call has no result: the waiting request is answered with a JSON-RPC error",
);

/// The JSON-RPC answer a task's outcome gives the request waiting on it: a
/// `CallToolResult`, or an error object (`{code, message}`) for an internal
/// failure, a cancellation ([`LOSS_CANCELLED_AS_ERROR`]) or a task that has not
/// ended.
pub fn answer(
    task: &Task,
    to: Answering,
) -> (
    Result<wire::CallToolResult2025_11_25, wire::ErrorObject>,
    Option<Loss>,
) {
    match outcome(task) {
        Outcome::Result(r) => (Ok(r), None),
        Outcome::Error(e) => (Err(e), None),
        Outcome::Cancelled => {
            let e = match to {
                Answering::ToolCall => error_object(INTERNAL_ERROR, "the tool call was cancelled"),
                Answering::TasksResult => error_object(
                    INVALID_PARAMS,
                    format!("task {} was cancelled: it has no result", task.id),
                ),
            };
            (Err(e), Some(LOSS_CANCELLED_AS_ERROR))
        }
        Outcome::Pending => (
            Err(error_object(INTERNAL_ERROR, "the task has not ended")),
            None,
        ),
    }
}

/// A JSON-RPC error object without data.
fn error_object(code: i64, message: impl Into<String>) -> wire::ErrorObject {
    wire::ErrorObject {
        code,
        message: message.into(),
        data: None,
    }
}

/// A `CallToolResult` from a terminal task's artifacts and final message.
///
/// Text parts become text content, image and audio bytes become image and audio
/// content, other bytes embedded blob resources, URLs resource links, and data
/// parts `structuredContent` (and a text rendering of it). A failed or rejected
/// task is `isError: true` with the error's message as text.
pub fn call_tool_result(task: &Task) -> (wire::CallToolResult2025_11_25, Vec<Loss>) {
    let mut losses = Vec::new();
    let mut content = Vec::new();
    let mut data = Vec::new();
    for a in &task.artifacts {
        if a.name.is_some() || !a.metadata.is_empty() {
            push_loss(&mut losses, LOSS_ARTIFACT_FRAMING);
        }
        for p in &a.parts {
            let (c, ls) = content_of_part(p, &a.artifact_id);
            for l in ls {
                push_loss(&mut losses, l);
            }
            match c {
                PartView::Content(v) => content.push(v),
                PartView::Data(v) => data.push(v),
            }
        }
    }
    if let Some(m) = &task.status_message {
        if task.state == TaskState::Completed {
            for p in &m.parts {
                let (c, ls) = content_of_part(p, &m.message_id);
                for l in ls {
                    push_loss(&mut losses, l);
                }
                match c {
                    PartView::Content(v) => content.push(v),
                    PartView::Data(v) => data.push(v),
                }
            }
        }
    }
    let is_error = matches!(task.state, TaskState::Failed | TaskState::Rejected);
    if is_error {
        let msg = task
            .error
            .as_ref()
            .map(|e| short(&e.message))
            .or_else(|| status_message(task))
            .unwrap_or_else(|| "the tool failed".to_string());
        content.push(wire::ContentBlock::Text { text: msg });
    }
    let wrapped = |data: Value| {
        let mut m = Map::new();
        m.insert("data".into(), data);
        m
    };
    let structured = match data.len() {
        0 => None,
        1 => match data.pop() {
            Some(Value::Object(o)) => Some(o),
            Some(other) => {
                push_loss(&mut losses, LOSS_DATA_WRAPPED);
                Some(wrapped(other))
            }
            None => None,
        },
        _ => {
            push_loss(&mut losses, LOSS_DATA_WRAPPED);
            Some(wrapped(Value::Array(data)))
        }
    };
    if let Some(s) = &structured {
        // Clients that do not read structuredContent still see it as text.
        content.push(wire::ContentBlock::Text {
            text: Value::Object(s.clone()).to_string(),
        });
    }
    let out = wire::CallToolResult2025_11_25 {
        content,
        structured_content: structured,
        is_error: is_error.then_some(true),
        meta: None,
    };
    (out, losses)
}

fn push_loss(v: &mut Vec<Loss>, l: Loss) {
    if !v.contains(&l) {
        v.push(l);
    }
}

/// What one part becomes in a `CallToolResult`.
#[derive(Clone, Debug, PartialEq)]
pub enum PartView {
    /// A content block.
    Content(wire::ContentBlock),
    /// Structured data for `structuredContent`.
    Data(Value),
}

/// One part as a content block (or structured data), and what that loses.
/// `owner_id` (the artifact or message id) names embedded resources.
pub fn content_of_part(p: &Part, owner_id: &str) -> (PartView, Vec<Loss>) {
    let (view, loss) = content_block(p, owner_id);
    let mut losses: Vec<Loss> = loss.into_iter().collect();
    // A file name survives as a resource link's name or in an embedded
    // resource's uri; metadata never does.
    let name_kept = matches!(
        view,
        PartView::Content(
            wire::ContentBlock::ResourceLink { .. } | wire::ContentBlock::Resource { .. }
        )
    );
    if !p.metadata.is_empty() || (p.filename.is_some() && !name_kept) {
        losses.push(LOSS_PART_METADATA);
    }
    (view, losses)
}

fn content_block(p: &Part, owner_id: &str) -> (PartView, Option<Loss>) {
    match &p.content {
        PartContent::Text { text } => (
            PartView::Content(wire::ContentBlock::Text { text: text.clone() }),
            None,
        ),
        PartContent::Raw { bytes } => {
            let data = base64::engine::general_purpose::STANDARD.encode(bytes);
            let mime = p
                .media_type
                .clone()
                .unwrap_or_else(|| "application/octet-stream".to_string());
            if mime.starts_with("image/") {
                (
                    PartView::Content(wire::ContentBlock::Image {
                        data,
                        mime_type: mime,
                    }),
                    None,
                )
            } else if mime.starts_with("audio/") {
                (
                    PartView::Content(wire::ContentBlock::Audio {
                        data,
                        mime_type: mime,
                    }),
                    None,
                )
            } else {
                let name = p.filename.clone().unwrap_or_else(|| owner_id.to_string());
                (
                    PartView::Content(wire::ContentBlock::Resource {
                        resource: wire::ResourceContents {
                            uri: format!("taskwire:artifact/{owner_id}/{name}"),
                            mime_type: Some(mime),
                            text: None,
                            blob: Some(data),
                        },
                    }),
                    Some(LOSS_RAW_AS_RESOURCE),
                )
            }
        }
        PartContent::Url { url } => (
            PartView::Content(wire::ContentBlock::ResourceLink {
                uri: url.clone(),
                name: p.filename.clone().unwrap_or_else(|| url.clone()),
                mime_type: p.media_type.clone(),
                size: None,
            }),
            None,
        ),
        PartContent::Data { data } => (PartView::Data(data.clone()), None),
    }
}

/// A short, safe status message for the task (its latest agent status text, or its
/// error's message), at most [`MAX_STATUS_MESSAGE`] characters.
pub fn status_message(task: &Task) -> Option<String> {
    if let Some(m) = &task.status_message {
        let t = m.text();
        if !t.is_empty() {
            return Some(short(&t));
        }
    }
    if is_internal_failure(task) {
        // The error of an internal failure holds details for operators only.
        return Some("internal error".to_string());
    }
    task.error.as_ref().map(|e| short(&e.message))
}

fn short(s: &str) -> String {
    if s.chars().count() <= MAX_STATUS_MESSAGE {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(MAX_STATUS_MESSAGE - 1).collect();
        out.push('…');
        out
    }
}

/// An ISO 8601 timestamp in UTC with milliseconds.
pub fn timestamp(t: &Timestamp) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// The TTL to advertise (null for unlimited), and what it loses.
pub fn ttl(task: &Task) -> (Option<u64>, Loss) {
    (task.ttl_ms, LOSS_TTL_ORIGIN)
}

/// The SEP-2663 `Task` (flat): `taskId`, `status`, `statusMessage?`,
/// `createdAt`, `lastUpdatedAt`, `ttlMs` (null for unlimited) and
/// `pollIntervalMs`, without the details of a [`detailed_task`].
pub fn current_task(task: &Task, poll_interval_ms: u64) -> wire::TaskFields {
    wire::TaskFields {
        task_id: task.id.to_string(),
        status: status(task, Revision::V2026_07_28).0,
        status_message: status_message(task),
        created_at: timestamp(&task.created_at),
        last_updated_at: timestamp(&task.updated_at),
        ttl_ms: ttl(task).0,
        poll_interval_ms: Some(poll_interval_ms),
        input_requests: None,
        result: None,
        error: None,
    }
}

/// The SEP-2663 `CreateTaskResult` answering a `tools/call` that became a task.
pub fn create_task_result(task: &Task, poll_interval_ms: u64) -> wire::CreateTaskResult {
    let t = current_task(task, poll_interval_ms);
    wire::CreateTaskResult {
        result_type: wire::TaskResultType::Task,
        task_id: t.task_id,
        status: t.status,
        status_message: t.status_message,
        created_at: t.created_at,
        last_updated_at: t.last_updated_at,
        ttl_ms: t.ttl_ms,
        poll_interval_ms: t.poll_interval_ms,
        meta: None,
    }
}

/// The members of a SEP-2663 `DetailedTask`: the task plus `inputRequests`
/// while input is required, `result` when completed and `error` when failed.
pub fn detailed_task(task: &Task, poll_interval_ms: u64, auth_url_base: &str) -> wire::TaskFields {
    let mut o = current_task(task, poll_interval_ms);
    let (st, _) = status(task, Revision::V2026_07_28);
    match st {
        McpStatus::InputRequired => {
            let (reqs, _) = input_requests(task, Revision::V2026_07_28, auth_url_base);
            o.input_requests = Some(reqs);
        }
        McpStatus::Completed | McpStatus::Failed => match outcome(task) {
            Outcome::Result(r) => o.result = Some(r),
            Outcome::Error(e) => o.error = Some(e),
            Outcome::Pending | Outcome::Cancelled => {}
        },
        _ => {}
    }
    o
}

/// The 2025-11-25 `Task`: `ttl` (null for unlimited) and `pollInterval`.
pub fn rev_2025_11_25_task(task: &Task, poll_interval_ms: u64) -> wire::Task2025_11_25 {
    wire::Task2025_11_25 {
        task_id: task.id.to_string(),
        status: status(task, Revision::V2025_11_25).0,
        status_message: status_message(task),
        created_at: timestamp(&task.created_at),
        last_updated_at: timestamp(&task.updated_at),
        ttl: ttl(task).0,
        poll_interval: Some(poll_interval_ms),
        meta: None,
    }
}

/// The field of a review answer, on MCP as on AG-UI (`{approved: boolean}`).
pub const REVIEW_FIELD: &str = "approved";
/// The field name MCP review answers used before it was [`REVIEW_FIELD`]; still
/// read, so that clients written against it keep working.
pub const REVIEW_FIELD_OLD: &str = "approve";

/// The confirmation schema of a review.
pub fn review_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            REVIEW_FIELD: {
                "type": "boolean",
                "title": "Approved",
                "description": "true to approve and continue, false to reject"
            }
        },
        "required": [REVIEW_FIELD]
    })
}

/// The task's pending interactions as keyed requests (`{method, params}`):
/// input requests as `elicitation/create` form mode with the requested schema
/// (sampling requests as `sampling/createMessage`, roots requests as
/// `roots/list`), provider authorisations as URL mode (the provider's URL, or
/// `<auth_url_base><provider>`), reviews of the responsible user as a confirmation
/// form. In 2025-11-25 URL mode carries an `elicitationId` (the key).
pub fn input_requests(
    task: &Task,
    revision: Revision,
    auth_url_base: &str,
) -> (BTreeMap<String, wire::InputRequest>, Vec<Loss>) {
    let mut out = BTreeMap::new();
    let mut losses = Vec::new();
    for (key, r) in &task.input_requests {
        let req = match r.kind {
            InputKind::Form => form(r.prompt.clone(), object_schema(&r.schema)),
            InputKind::Sampling { max_tokens } => {
                wire::InputRequest::CreateMessage(sampling_params(&r.prompt, max_tokens))
            }
            InputKind::Roots => wire::InputRequest::ListRoots(Some(Map::new())),
        };
        out.insert(key.clone(), req);
    }
    for a in &task.pending_auth {
        push_loss(&mut losses, LOSS_AUTH_REQUIRED);
        let key = format!("{AUTH_KEY_PREFIX}{}", a.provider);
        let url = a
            .url
            .clone()
            .unwrap_or_else(|| format!("{auth_url_base}{}", a.provider));
        let params = wire::ElicitRequestParams::Url {
            mode: wire::UrlMode::Url,
            message: format!("Authorize {} to continue", a.provider),
            url,
            elicitation_id: (revision == Revision::V2025_11_25).then(|| key.clone()),
            meta: None,
        };
        out.insert(key, wire::InputRequest::Elicit(params));
    }
    if !task.pending_reviews.is_empty() {
        push_loss(&mut losses, LOSS_REVIEW_AS_FORM);
    }
    for r in task.reviews_for_responsible_user() {
        out.insert(
            format!("{REVIEW_KEY_PREFIX}{}", r.id),
            form(
                format!("Review required: {}", r.summary),
                object_schema(&review_schema()),
            ),
        );
    }
    (out, losses)
}

/// A form-mode `elicitation/create`.
fn form(message: String, requested_schema: Map<String, Value>) -> wire::InputRequest {
    wire::InputRequest::Elicit(wire::ElicitRequestParams::Form {
        mode: Some(wire::FormMode::Form),
        message,
        requested_schema,
        meta: None,
    })
}

/// A JSON Schema as the object it must be on the wire (a schema that is not an
/// object, which the core does not produce, becomes the empty object schema).
fn object_schema(schema: &Value) -> Map<String, Value> {
    match schema {
        Value::Object(o) => o.clone(),
        _ => {
            let mut o = Map::new();
            o.insert("type".into(), Value::String("object".into()));
            o
        }
    }
}

/// The params of a `sampling/createMessage` asking the client's model `prompt`.
fn sampling_params(prompt: &str, max_tokens: u32) -> wire::CreateMessageRequestParams {
    wire::CreateMessageRequestParams {
        messages: vec![wire::SamplingMessage {
            role: wire::SamplingRole::User,
            content: wire::ContentBlock::Text {
                text: prompt.to_string(),
            },
        }],
        max_tokens,
        other: Map::new(),
    }
}

/// What an input response (an `ElicitResult`) means for the core.
#[derive(Clone, Debug, PartialEq)]
pub enum InputAnswer {
    /// An answer to a core input request.
    Input {
        /// The key.
        key: String,
        /// The answer.
        response: InputResponse,
    },
    /// A provider authorisation was completed (accept) or refused (decline).
    Auth {
        /// The provider.
        provider: String,
        /// True for accept.
        granted: bool,
    },
    /// A review decision.
    Review {
        /// The review id.
        review_id: String,
        /// The decision.
        decision: ReviewDecision,
    },
    /// Unknown, already answered, superseded, or dismissed with `cancel` where that
    /// leaves the interaction pending: ignored.
    Ignored,
}

/// Reads an `ElicitResult` (`{action, content?}`) given for `key` on `task`.
///
/// Keys that are not outstanding are [`InputAnswer::Ignored`]; a value that is
/// not an `ElicitResult` is an error naming the key.
pub fn input_answer(task: &Task, key: &str, value: &Value) -> Result<InputAnswer, VocabError> {
    // Keys that are not outstanding are ignored unread (a client may send
    // more than was asked, SEP-2322).
    let outstanding = if let Some(provider) = key.strip_prefix(AUTH_KEY_PREFIX) {
        task.pending_auth.iter().any(|a| a.provider == provider)
    } else if let Some(review_id) = key.strip_prefix(REVIEW_KEY_PREFIX) {
        task.reviews_for_responsible_user()
            .any(|r| r.id == review_id)
    } else {
        task.input_requests.contains_key(key)
    };
    if !outstanding {
        return Ok(InputAnswer::Ignored);
    }
    let invalid = |reason: &str| VocabError::Invalid {
        field: format!("inputResponses[{key}]"),
        reason: reason.to_string(),
    };
    // The answer to a sampling or roots request is that request's result
    // (CreateMessageResult, ListRootsResult), which is the content.
    if let Some(r) = task.input_requests.get(key) {
        if r.kind != InputKind::Form && value.get("action").is_none() {
            let ok = match r.kind {
                InputKind::Roots => value.get("roots").is_some_and(Value::is_array),
                _ => value.get("content").is_some_and(Value::is_object),
            };
            if !ok {
                return Err(invalid(if r.kind == InputKind::Roots {
                    "a ListRootsResult ({roots: [...]}) is expected"
                } else {
                    "a CreateMessageResult ({role, content, model}) is expected"
                }));
            }
            return Ok(InputAnswer::Input {
                key: key.to_string(),
                response: InputResponse {
                    action: InputAction::Accept,
                    content: Some(value.clone()),
                },
            });
        }
    }
    let obj = value
        .as_object()
        .ok_or_else(|| invalid("an ElicitResult object is expected"))?;
    let action = match obj.get("action").and_then(Value::as_str) {
        Some("accept") => InputAction::Accept,
        Some("decline") => InputAction::Decline,
        Some("cancel") => InputAction::Cancel,
        Some(other) => {
            return Err(invalid(&format!(
                "action must be accept, decline or cancel, not {other:?}"
            )))
        }
        None => return Err(invalid("action is required")),
    };
    let content = obj.get("content").cloned().filter(|c| !c.is_null());
    if let Some(c) = &content {
        if !c.is_object() {
            return Err(invalid("content must be an object"));
        }
    }
    if let Some(provider) = key.strip_prefix(AUTH_KEY_PREFIX) {
        if !task.pending_auth.iter().any(|a| a.provider == provider) {
            return Ok(InputAnswer::Ignored);
        }
        return Ok(match action {
            InputAction::Accept => InputAnswer::Auth {
                provider: provider.to_string(),
                granted: true,
            },
            InputAction::Decline => InputAnswer::Auth {
                provider: provider.to_string(),
                granted: false,
            },
            InputAction::Cancel => InputAnswer::Ignored,
        });
    }
    if let Some(review_id) = key.strip_prefix(REVIEW_KEY_PREFIX) {
        if !task
            .reviews_for_responsible_user()
            .any(|r| r.id == review_id)
        {
            return Ok(InputAnswer::Ignored);
        }
        let decision = match action {
            InputAction::Accept => {
                let approve = content
                    .as_ref()
                    .and_then(|c| c.get(REVIEW_FIELD).or_else(|| c.get(REVIEW_FIELD_OLD)))
                    .and_then(Value::as_bool)
                    .ok_or_else(|| invalid("content.approved (boolean) is required"))?;
                if approve {
                    ReviewDecision::Approve
                } else {
                    ReviewDecision::Reject
                }
            }
            InputAction::Decline => ReviewDecision::Reject,
            InputAction::Cancel => return Ok(InputAnswer::Ignored),
        };
        return Ok(InputAnswer::Review {
            review_id: review_id.to_string(),
            decision,
        });
    }
    if !task.input_requests.contains_key(key) {
        return Ok(InputAnswer::Ignored);
    }
    if action == InputAction::Accept && content.is_none() {
        return Err(invalid("an accepted answer needs content"));
    }
    Ok(InputAnswer::Input {
        key: key.to_string(),
        response: InputResponse {
            action,
            content: if action == InputAction::Accept {
                content
            } else {
                None
            },
        },
    })
}

/// A skill as an MCP `Tool`. In 2025-11-25 it carries `execution.taskSupport`,
/// the skill's [`taskwire_core::TaskSupport`].
pub fn tool_of_skill(skill: &Skill, revision: Revision) -> wire::Tool {
    use taskwire_core::agent::TaskSupport as S;
    let execution = (revision == Revision::V2025_11_25).then_some(wire::ToolExecution {
        task_support: Some(match skill.task_support {
            S::Forbidden => wire::TaskSupport::Forbidden,
            S::Optional => wire::TaskSupport::Optional,
            S::Required => wire::TaskSupport::Required,
        }),
    });
    wire::Tool {
        name: skill.id.clone(),
        title: Some(skill.name.clone()),
        description: Some(skill.description.clone()),
        input_schema: object_schema(&skill.input_schema),
        output_schema: None,
        execution,
        other: Map::new(),
    }
}

/// The first message of a task from `tools/call` arguments: the `text` argument as
/// a text part, and any other arguments as one data part. Required properties of
/// the skill's input schema must be present and `string` properties must be
/// strings.
pub fn message_of_arguments(
    skill: &Skill,
    arguments: Option<&Value>,
) -> Result<Message, VocabError> {
    let empty = Map::new();
    let args = match arguments {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => {
            return Err(VocabError::Invalid {
                field: "arguments".into(),
                reason: "must be an object".into(),
            })
        }
    };
    if let Some(req) = skill.input_schema.get("required").and_then(Value::as_array) {
        for k in req.iter().filter_map(Value::as_str) {
            if !args.contains_key(k) {
                return Err(VocabError::Invalid {
                    field: format!("arguments.{k}"),
                    reason: "is required".into(),
                });
            }
        }
    }
    if let Some(props) = skill
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (k, p) in props {
            let want = p.get("type").and_then(Value::as_str);
            if let (Some("string"), Some(v)) = (want, args.get(k)) {
                if !v.is_string() {
                    return Err(VocabError::Invalid {
                        field: format!("arguments.{k}"),
                        reason: "must be a string".into(),
                    });
                }
            }
        }
    }
    let mut parts = Vec::new();
    if let Some(t) = args.get("text").and_then(Value::as_str) {
        parts.push(Part::text(t));
    }
    let rest: Map<String, Value> = args
        .iter()
        .filter(|(k, _)| k.as_str() != "text")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !rest.is_empty() || parts.is_empty() {
        parts.push(Part::data(Value::Object(rest)));
    }
    Ok(Message::new(taskwire_core::Role::User, parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// A typed wire value as JSON.
    fn j<T: serde::Serialize>(v: &T) -> Value {
        serde_json::to_value(v).unwrap()
    }
    use std::collections::BTreeMap;
    use taskwire_core::types::{Artifact, AuthWait, InputKind, InputRequest, Review, TaskError};
    use taskwire_core::TaskId;

    fn task(state: TaskState) -> Task {
        let t0 = chrono::Utc
            .with_ymd_and_hms(2026, 1, 2, 3, 4, 5)
            .single()
            .unwrap();
        Task {
            id: TaskId::parse("0123456789abcdef0123456789abcdef").unwrap(),
            context_id: "ctx".into(),
            tenant: "t".into(),
            owner: "alice".into(),
            responsible_user: "alice".into(),
            parent_task: None,
            agent: "scripted".into(),
            state,
            status_message: None,
            state_changed_at: t0,
            terminal_cause: None,
            error: None,
            created_at: t0,
            updated_at: t0,
            version: 1,
            last_seq: 1,
            history: vec![],
            artifacts: vec![],
            metadata: Map::new(),
            agent_state: None,
            input_requests: BTreeMap::new(),
            input_answers: BTreeMap::new(),
            answered_keys: Default::default(),
            superseded_keys: Default::default(),
            pending_auth: vec![],
            granted_providers: Default::default(),
            pending_reviews: vec![],
            review_decisions: BTreeMap::new(),
            turns: 0,
            turn_open: false,
            turn_input: vec![],
            ttl_ms: Some(60_000),
            expires_at: None,
            idle_lifespan_ms: None,
            idle_expires_at: None,
        }
    }

    fn failed(cause: TerminalCause) -> Task {
        let mut t = task(TaskState::Failed);
        t.terminal_cause = Some(cause);
        t.error = Some(TaskError {
            code: "x".into(),
            message: "boom".into(),
        });
        t
    }

    #[test]
    fn submitted_is_working_with_a_loss() {
        assert_eq!(
            status(&task(TaskState::Submitted), Revision::V2026_07_28),
            (McpStatus::Working, Some(LOSS_SUBMITTED))
        );
        assert_eq!(
            status(&task(TaskState::Working), Revision::V2026_07_28),
            (McpStatus::Working, None)
        );
    }

    #[test]
    fn auth_required_is_input_required_with_url_elicitation() {
        let mut t = task(TaskState::AuthRequired);
        t.pending_auth.push(AuthWait {
            provider: "github".into(),
            since: t.created_at,
            operations: vec!["line-0".into()],
            url: None,
        });
        assert_eq!(
            status(&t, Revision::V2026_07_28),
            (McpStatus::InputRequired, Some(LOSS_AUTH_REQUIRED))
        );
        let (reqs, losses) = input_requests(&t, Revision::V2026_07_28, "urn:auth:");
        assert_eq!(losses, vec![LOSS_AUTH_REQUIRED]);
        assert_eq!(
            j(&reqs["taskwire.auth/github"]),
            json!({"method": "elicitation/create", "params": {
                "mode": "url", "message": "Authorize github to continue", "url": "urn:auth:github"}})
        );
        let (older, _) = input_requests(&t, Revision::V2025_11_25, "urn:auth:");
        assert_eq!(
            j(&older["taskwire.auth/github"])["params"]["elicitationId"],
            "taskwire.auth/github"
        );
        assert_eq!(
            input_answer(&t, "taskwire.auth/github", &json!({"action": "accept"})).unwrap(),
            InputAnswer::Auth {
                provider: "github".into(),
                granted: true
            }
        );
        // LOSS_AUTH_CANCEL: cancel leaves the authorisation pending.
        assert_eq!(
            input_answer(&t, "taskwire.auth/github", &json!({"action": "cancel"})).unwrap(),
            InputAnswer::Ignored
        );
        let _ = LOSS_AUTH_CANCEL;
    }

    #[test]
    fn agent_failure_is_completed_with_is_error() {
        let t = failed(TerminalCause::AgentFailed);
        assert_eq!(
            status(&t, Revision::V2026_07_28),
            (McpStatus::Completed, Some(LOSS_AGENT_FAILED))
        );
        assert_eq!(
            status(&t, Revision::V2025_11_25),
            (McpStatus::Failed, Some(LOSS_2025_11_25_FAILED))
        );
        match outcome(&t) {
            Outcome::Result(r) => {
                let r = j(&r);
                assert_eq!(r["isError"], true);
                assert_eq!(r["content"][0]["text"], "boom");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn internal_failure_is_failed_with_an_error() {
        let t = failed(TerminalCause::Internal);
        assert_eq!(status(&t, Revision::V2026_07_28), (McpStatus::Failed, None));
        // The error's message holds details for operators; the caller sees the
        // safe status message.
        assert_eq!(
            outcome(&t),
            Outcome::Error(error_object(-32603, "internal error"))
        );
        assert_eq!(status_message(&t).as_deref(), Some("internal error"));
        let mut t = t;
        t.status_message = Some(Message::agent_text("internal error (safe)"));
        assert_eq!(
            outcome(&t),
            Outcome::Error(error_object(-32603, "internal error (safe)"))
        );
        let d = j(&detailed_task(&t, 500, ""));
        assert_eq!(d["error"]["code"], -32603);
        assert!(d.get("result").is_none());
    }

    #[test]
    fn rejected_and_restricted_are_completed_with_is_error() {
        let mut r = task(TaskState::Rejected);
        r.terminal_cause = Some(TerminalCause::Rejected);
        assert_eq!(
            status(&r, Revision::V2026_07_28),
            (McpStatus::Completed, Some(LOSS_REJECTED))
        );
        assert_eq!(
            status(&r, Revision::V2025_11_25),
            (McpStatus::Failed, Some(LOSS_REJECTED))
        );
        let x = failed(TerminalCause::Restricted);
        assert_eq!(
            status(&x, Revision::V2026_07_28),
            (McpStatus::Completed, Some(LOSS_RESTRICTED))
        );
        assert_eq!(
            status(&x, Revision::V2025_11_25),
            (McpStatus::Failed, Some(LOSS_RESTRICTED))
        );
    }

    #[test]
    fn expiry_is_cancelled_with_a_loss() {
        let mut t = task(TaskState::Canceled);
        t.terminal_cause = Some(TerminalCause::Expired);
        assert_eq!(
            status(&t, Revision::V2026_07_28),
            (McpStatus::Cancelled, Some(LOSS_EXPIRED))
        );
        assert_eq!(outcome(&t), Outcome::Cancelled);
    }

    #[test]
    fn parts_become_content() {
        let mut t = task(TaskState::Completed);
        t.artifacts.push(Artifact {
            artifact_id: "a1".into(),
            name: Some("echo".into()),
            description: None,
            parts: vec![
                Part::text("hi"),
                Part::raw(vec![1, 2], "image/png"),
                Part::raw(vec![3], "audio/wav"),
                Part::url("https://example.invalid/x"),
            ],
            metadata: Map::new(),
            complete: true,
        });
        let (r, losses) = call_tool_result(&t);
        let r = j(&r);
        assert_eq!(r["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(
            r["content"][1],
            json!({"type": "image", "data": "AQI=", "mimeType": "image/png"})
        );
        assert_eq!(r["content"][2]["type"], "audio");
        assert_eq!(r["content"][3]["type"], "resource_link");
        assert!(r.get("isError").is_none());
        assert_eq!(losses, vec![LOSS_ARTIFACT_FRAMING]);
    }

    #[test]
    fn other_bytes_become_an_embedded_resource() {
        let (v, loss) = content_of_part(&Part::raw(vec![0], "application/pdf"), "a");
        assert_eq!(loss, vec![LOSS_RAW_AS_RESOURCE]);
        match v {
            PartView::Content(c) => assert_eq!(j(&c)["resource"]["blob"], "AA=="),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn data_parts_become_structured_content() {
        let mut t = task(TaskState::Completed);
        t.artifacts.push(Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![Part::data(json!({"n": 1}))],
            metadata: Map::new(),
            complete: true,
        });
        let (r, losses) = call_tool_result(&t);
        let r = j(&r);
        assert_eq!(r["structuredContent"], json!({"n": 1}));
        assert!(losses.is_empty());
        t.artifacts[0].parts.push(Part::data(json!(2)));
        let (r, losses) = call_tool_result(&t);
        let r = j(&r);
        assert_eq!(r["structuredContent"], json!({"data": [{"n": 1}, 2]}));
        assert_eq!(losses, vec![LOSS_DATA_WRAPPED]);
    }

    #[test]
    fn review_is_a_confirmation_form() {
        let mut t = task(TaskState::InputRequired);
        t.pending_reviews.push(Review {
            id: "review-0".into(),
            reviewer: "alice".into(),
            summary: "approve to continue".into(),
            since: t.created_at,
        });
        let (reqs, losses) = input_requests(&t, Revision::V2026_07_28, "");
        assert_eq!(losses, vec![LOSS_REVIEW_AS_FORM]);
        assert_eq!(
            j(&reqs["taskwire.review/review-0"])["params"]["requestedSchema"],
            review_schema()
        );
        let ok = json!({"action": "accept", "content": {"approved": true}});
        assert_eq!(
            input_answer(&t, "taskwire.review/review-0", &ok).unwrap(),
            InputAnswer::Review {
                review_id: "review-0".into(),
                decision: ReviewDecision::Approve
            }
        );
        // The older spelling is still read.
        let old = json!({"action": "accept", "content": {"approve": false}});
        assert_eq!(
            input_answer(&t, "taskwire.review/review-0", &old).unwrap(),
            InputAnswer::Review {
                review_id: "review-0".into(),
                decision: ReviewDecision::Reject
            }
        );
        assert_eq!(
            input_answer(
                &t,
                "taskwire.review/review-0",
                &json!({"action": "decline"})
            )
            .unwrap(),
            InputAnswer::Review {
                review_id: "review-0".into(),
                decision: ReviewDecision::Reject
            }
        );
    }

    #[test]
    fn sampling_and_roots_requests_are_their_mcp_requests() {
        let mut t = task(TaskState::InputRequired);
        for (key, kind) in [
            ("q", InputKind::Sampling { max_tokens: 50 }),
            ("r", InputKind::Roots),
        ] {
            t.input_requests.insert(
                key.into(),
                InputRequest {
                    key: key.into(),
                    prompt: "Capital of France?".into(),
                    schema: json!({"type": "object"}),
                    since: t.created_at,
                    kind,
                    subject: None,
                },
            );
        }
        let (reqs, _) = input_requests(&t, Revision::V2026_07_28, "");
        assert_eq!(
            j(&reqs["q"]),
            json!({"method": "sampling/createMessage", "params": {"messages": [
                {"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
                "maxTokens": 50}})
        );
        assert_eq!(j(&reqs["r"]), json!({"method": "roots/list", "params": {}}));
        // Their answers are the requests' results, taken whole as the content.
        let result = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"},
            "model": "m", "stopReason": "endTurn"});
        match input_answer(&t, "q", &result).unwrap() {
            InputAnswer::Input { key, response } => {
                assert_eq!(key, "q");
                assert_eq!(response.action, InputAction::Accept);
                assert_eq!(response.content, Some(result));
            }
            other => panic!("{other:?}"),
        }
        let roots = json!({"roots": [{"uri": "file:///w"}]});
        assert!(matches!(
            input_answer(&t, "r", &roots).unwrap(),
            InputAnswer::Input { .. }
        ));
        assert!(input_answer(&t, "q", &json!({"roots": []})).is_err());
        assert!(input_answer(&t, "r", &json!({"content": {}})).is_err());
        // The kind survives the store's JSON.
        let back: InputKind = serde_json::from_value(
            serde_json::to_value(InputKind::Sampling { max_tokens: 7 }).unwrap(),
        )
        .unwrap();
        assert_eq!(back, InputKind::Sampling { max_tokens: 7 });
        assert_eq!(
            serde_json::to_value(InputKind::Form).unwrap(),
            json!("form")
        );
    }

    #[test]
    fn input_answers_ignore_unknown_keys_and_check_shape() {
        let mut t = task(TaskState::InputRequired);
        t.input_requests.insert(
            "ask-0".into(),
            InputRequest {
                key: "ask-0".into(),
                prompt: "name?".into(),
                schema: json!({"type": "object"}),
                since: t.created_at,
                kind: InputKind::Form,
                subject: None,
            },
        );
        let a = json!({"action": "accept", "content": {"answer": "x"}});
        assert_eq!(input_answer(&t, "nope", &a).unwrap(), InputAnswer::Ignored);
        // Not asked for: ignored unread, whatever its shape.
        assert_eq!(
            input_answer(&t, "nope", &json!("garbage")).unwrap(),
            InputAnswer::Ignored
        );
        assert_eq!(
            input_answer(&t, "taskwire.review/none", &json!(7)).unwrap(),
            InputAnswer::Ignored
        );
        assert!(matches!(
            input_answer(&t, "ask-0", &a).unwrap(),
            InputAnswer::Input { .. }
        ));
        assert!(input_answer(&t, "ask-0", &json!({"action": "maybe"})).is_err());
        assert!(input_answer(&t, "ask-0", &json!("x")).is_err());
        assert!(input_answer(&t, "ask-0", &json!({"action": "accept"})).is_err());
        match input_answer(&t, "ask-0", &json!({"action": "decline"})).unwrap() {
            InputAnswer::Input { response, .. } => {
                assert_eq!(response.action, InputAction::Decline)
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn arguments_become_the_first_message() {
        let skill = Skill {
            task_support: taskwire_core::agent::TaskSupport::Optional,
            input_first: false,
            id: "run_script".into(),
            name: "Run".into(),
            description: "d".into(),
            input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        };
        let m = message_of_arguments(&skill, Some(&json!({"text": "hello"}))).unwrap();
        assert_eq!(m.text(), "hello");
        assert_eq!(m.parts.len(), 1);
        assert!(message_of_arguments(&skill, Some(&json!({}))).is_err());
        assert!(message_of_arguments(&skill, Some(&json!({"text": 1}))).is_err());
        assert!(message_of_arguments(&skill, Some(&json!([1]))).is_err());
        let t = j(&tool_of_skill(&skill, Revision::V2025_11_25));
        assert_eq!(t["execution"]["taskSupport"], "optional");
        assert!(j(&tool_of_skill(&skill, Revision::V2026_07_28))
            .get("execution")
            .is_none());
    }

    #[test]
    fn ttl_is_the_core_retention() {
        let mut t = task(TaskState::Working);
        assert_eq!(ttl(&t), (Some(60_000), LOSS_TTL_ORIGIN));
        assert_eq!(j(&current_task(&t, 5))["ttlMs"], 60_000);
        assert_eq!(j(&rev_2025_11_25_task(&t, 5))["ttl"], 60_000);
        t.ttl_ms = None;
        assert_eq!(j(&current_task(&t, 5))["ttlMs"], Value::Null);
        assert_eq!(j(&create_task_result(&t, 5))["resultType"], "task");
    }

    #[test]
    fn status_messages_are_short() {
        let mut t = task(TaskState::Working);
        t.status_message = Some(Message::agent_text("x".repeat(2000)));
        assert_eq!(
            status_message(&t).unwrap().chars().count(),
            MAX_STATUS_MESSAGE
        );
        assert_eq!(timestamp(&t.created_at), "2026-01-02T03:04:05.000Z");
    }
}
