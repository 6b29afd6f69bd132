//! The AG-UI view of the core vocabulary.
//!
//! AG-UI has no task states: a task is seen as a thread (its context) in which every
//! turn is a run. What a core state means on the wire is how the run ends:
//!
//! | core | AG-UI |
//! |---|---|
//! | submitted, working | run open, events flowing |
//! | input-required (input requests) | `RUN_FINISHED` outcome interrupt, reason `input_required` |
//! | input-required (review) | `RUN_FINISHED` outcome interrupt, reason `confirmation` |
//! | auth-required | `RUN_FINISHED` outcome interrupt, reason `taskwire:auth_required` |
//! | completed | `RUN_FINISHED` with `result` (no outcome: success) |
//! | failed (agent fault) | `RUN_ERROR` code `agent_failed` |
//! | failed (internal) | `RUN_ERROR` code `internal` |
//! | rejected | `RUN_ERROR` code `rejected` |
//! | restricted | `RUN_ERROR` code `restricted` |
//! | canceled | `RUN_FINISHED` outcome `cancelled` |
//! | canceled (inactivity expired) | `RUN_FINISHED` outcome `cancelled` ([`LOSS_EXPIRED_AS_CANCELLED`]) |
//!
//! Interrupt ids name the pending interaction they stand for, so a resume can be
//! routed back to it without any state in the adapter: see [`InterruptRef`].

use serde_json::{json, Value};
use taskwire_core::types::{
    Artifact, AuthWait, InputRequest, InputResponse, PartContent, Review, ReviewDecision,
    TaskError, TerminalCause,
};
use taskwire_core::{CoreError, Part, Role, Task, TaskState};

use crate::{Loss, VocabError};

/// The protocol version this view speaks (sent in `RUN_STARTED.protocolVersion`):
/// the wire layer's.
pub use taskwire_wire::agui::PROTOCOL_VERSION;
use taskwire_wire::agui::{to_value, ArtifactActivity, AuthMetadata, ReviewMetadata};

/// Interrupt reason for keyed input requests.
pub const REASON_INPUT_REQUIRED: &str = "input_required";
/// Interrupt reason for a review by the responsible user.
pub const REASON_CONFIRMATION: &str = "confirmation";
/// Interrupt reason for a provider authorisation (namespaced, as custom reasons must be).
pub const REASON_AUTH_REQUIRED: &str = "taskwire:auth_required";

/// The activity type artifacts are rendered as (`ACTIVITY_SNAPSHOT` / `ACTIVITY_DELTA`).
pub const ARTIFACT_ACTIVITY_TYPE: &str = "taskwire.artifact";

/// `RUN_ERROR.code` values the adapter emits, besides the terminal error codes of
/// the core (`agent_failed`, `internal`, `rejected`, `restricted`).
pub mod codes {
    /// A resume does not cover every open interrupt of the thread.
    pub const RESUME_INCOMPLETE: &str = "resume_incomplete";
    /// A resume names an interrupt the thread never raised.
    pub const INTERRUPT_UNKNOWN: &str = "interrupt_unknown";
    /// A resume names an interrupt that is no longer open (superseded, or its task ended).
    pub const INTERRUPT_EXPIRED: &str = "interrupt_expired";
    /// A resume answers an interrupt that was already answered differently.
    pub const RESUME_CONFLICT: &str = "resume_conflict";
    /// New input arrived while interrupts are open and no resume was given.
    pub const INTERRUPT_PENDING: &str = "interrupt_pending";
    /// The input carries no new user message and no resume: nothing to run.
    pub const NO_NEW_INPUT: &str = "no_new_input";
    /// The input is malformed.
    pub const INVALID_INPUT: &str = "invalid_input";
    /// The thread or task is not the caller's, or does not exist.
    pub const NOT_FOUND: &str = "not_found";
    /// Something is over a configured limit.
    pub const TOO_LARGE: &str = "too_large";
    /// The caller holds as many open runs as its quota allows.
    pub const QUOTA_EXCEEDED: &str = "quota_exceeded";
    /// An input guardrail refused the input.
    pub const DENIED: &str = "denied";
    /// The server is busy or shutting down; retry.
    pub const UNAVAILABLE: &str = "unavailable";
    /// The task is in a state that does not accept the command.
    pub const WRONG_STATE: &str = "wrong_state";
    /// An internal error.
    pub const INTERNAL: &str = "internal";
    /// The caller's token does not carry the scope the request needs.
    pub const FORBIDDEN: &str = "forbidden";
}

/// The inactivity expiry of a waiting task reads as a cancelled run: AG-UI has no
/// outcome for "nobody answered in time".
pub const LOSS_EXPIRED_AS_CANCELLED: Loss = Loss(
    "an inactivity expiry is reported as a cancelled run; the expiry cause is only in the message",
);
/// Non-text parts of agent messages are not part of the streamed text.
pub const LOSS_NON_TEXT_PARTS: Loss = Loss(
    "non-text parts of a message, and the media type, file name and metadata of its text parts, are left out of its text (artifacts keep them)",
);
/// Declining an authorisation has no core counterpart: the task is canceled.
pub const LOSS_AUTH_DECLINE_CANCELS: Loss =
    Loss("a cancelled resume of an authorisation interrupt cancels the whole task");
/// A resume payload that is not an object is wrapped as `{"answer": payload}`.
pub const LOSS_PAYLOAD_WRAPPED: Loss =
    Loss("a non-object resume payload is stored as {\"answer\": payload}");
/// Several text parts of one message become one text message.
pub const LOSS_TEXT_JOINED: Loss = Loss(
    "the text parts of a message are joined with newlines into one text; part boundaries are lost",
);
/// The core's submitted and working are one open run.
pub const LOSS_SUBMITTED: Loss =
    Loss("AG-UI has no queued run: submitted (not yet picked up) and working are both an open run");
/// A review addressed to someone else is offered like one of the caller's.
pub const LOSS_FOREIGN_REVIEW: Loss = Loss(
    "a review addressed to someone other than the responsible user is still a confirmation interrupt; only its reviewer can resolve it",
);
/// An agent refusal and a guardrail lock are errors, not outcomes.
pub const LOSS_REJECTED_AS_ERROR: Loss = Loss(
    "AG-UI has no refused outcome: a rejected task ends its run with RUN_ERROR (code rejected or restricted)",
);
/// Several core refusals share one RUN_ERROR code.
pub const LOSS_ERROR_WRONG_STATE: Loss = Loss(
    "illegal transitions, wrong states and non-cancelable tasks all read wrong_state; only the message tells them apart",
);
/// A retryable condition and a shutdown share one code.
pub const LOSS_ERROR_UNAVAILABLE: Loss = Loss(
    "contention, shutdown and a store that did not answer all read unavailable; lease and store failures both read internal",
);

/// The message of a store that did not answer.
pub const UNAVAILABLE_MESSAGE: &str =
    "the task store did not answer; retry (a run retried with the same runId and message ids is safe)";

/// A core part as the JSON of taskwire's part object (artifact activity content,
/// `ACTIVITY_DELTA` patches).
pub fn part_json(p: &Part) -> Value {
    taskwire_wire::agui::to_value(p)
}

/// An artifact as the content of its `taskwire.artifact` activity message (and
/// of the run result): `artifactId`, `parts` (core parts as JSON), `complete`, and
/// `name`, `description` and `metadata` when present. Lossless: see
/// [`artifact_from_activity`].
pub fn artifact_activity(a: &Artifact) -> ArtifactActivity {
    ArtifactActivity {
        artifact_id: a.artifact_id.clone(),
        parts: a.parts.iter().map(part_json).collect(),
        complete: a.complete,
        name: a.name.clone(),
        description: a.description.clone(),
        metadata: Some(a.metadata.clone()).filter(|m| !m.is_empty()),
    }
}

/// The artifact of an activity message's content (what a client reads back).
pub fn artifact_from_activity(v: &Value) -> Result<Artifact, VocabError> {
    serde_json::from_value(v.clone()).map_err(|e| VocabError::Invalid {
        field: "activity.content".into(),
        reason: e.to_string(),
    })
}

/// The `role` of a core role in AG-UI messages.
pub fn role(r: Role) -> &'static str {
    match r {
        Role::User => ROLE_USER,
        Role::Agent => ROLE_ASSISTANT,
    }
}

/// The AG-UI role of user input.
pub const ROLE_USER: &str = "user";
/// The AG-UI role of agent output.
pub const ROLE_ASSISTANT: &str = "assistant";

/// The core role of an AG-UI message role; `system`, `developer`, `tool`,
/// `activity` and `reasoning` messages have none.
pub fn role_from(s: &str) -> Option<Role> {
    match s {
        ROLE_USER => Some(Role::User),
        ROLE_ASSISTANT => Some(Role::Agent),
        _ => None,
    }
}

/// An interrupt a pending interaction is shown as (without the id's task part and
/// without `expiresAt`, which the run knows).
#[derive(Clone, Debug, PartialEq)]
pub struct InterruptView {
    /// What it stands for (gives the id with [`InterruptRef`]).
    pub kind: InterruptKind,
    /// `reason`.
    pub reason: &'static str,
    /// `message`.
    pub message: String,
    /// `responseSchema`.
    pub response_schema: Option<Value>,
    /// `metadata`.
    pub metadata: Option<Value>,
}

/// The response schema of a review interrupt.
pub fn review_response_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"approved": {"type": "boolean"}},
    })
}

/// A keyed input request as an `input_required` interrupt, with its schema (when
/// it is an object schema) as `responseSchema`.
pub fn input_interrupt(r: &InputRequest) -> InterruptView {
    InterruptView {
        kind: InterruptKind::Input(r.key.clone()),
        reason: REASON_INPUT_REQUIRED,
        message: r.prompt.clone(),
        response_schema: Some(r.schema.clone()).filter(Value::is_object),
        metadata: None,
    }
}

/// A provider authorisation as a `taskwire:auth_required` interrupt; the provider
/// and URL travel in `metadata`.
pub fn auth_interrupt(a: &AuthWait) -> InterruptView {
    let meta = AuthMetadata {
        provider: a.provider.clone(),
        url: a.url.clone(),
    };
    InterruptView {
        kind: InterruptKind::Auth(a.provider.clone()),
        reason: REASON_AUTH_REQUIRED,
        message: format!("authorization required: {}", a.provider),
        response_schema: None,
        metadata: Some(to_value(&meta)),
    }
}

/// A review as a `confirmation` interrupt; the reviewer travels in `metadata`.
pub fn review_interrupt(r: &Review) -> InterruptView {
    InterruptView {
        kind: InterruptKind::Review(r.id.clone()),
        reason: REASON_CONFIRMATION,
        message: r.summary.clone(),
        response_schema: Some(review_response_schema()),
        metadata: Some(to_value(&ReviewMetadata {
            reviewer: r.reviewer.clone(),
        })),
    }
}

/// Key of the placeholder interrupt of a task that waits with nothing pending.
pub const PLACEHOLDER_INPUT_KEY: &str = "*";
/// A task that waits for its next message with nothing pending (the host
/// interrupted its turn) shows a placeholder interrupt.
pub const LOSS_NOTHING_PENDING: Loss = Loss(
    "a task waiting for its next message with nothing pending shows a placeholder input_required interrupt (key *)",
);

/// The interrupt shown when a run ends interrupted with nothing pending, so the
/// client still sees why the run stopped; `message` is the status message text.
pub fn placeholder_interrupt(message: Option<String>) -> InterruptView {
    InterruptView {
        kind: InterruptKind::Input(PLACEHOLDER_INPUT_KEY.to_string()),
        reason: REASON_INPUT_REQUIRED,
        message: message.unwrap_or_default(),
        response_schema: None,
        metadata: None,
    }
}

/// Every interrupt of a task that waits, in the order a run shows them (input
/// requests by key, authorisations, reviews), with what the view loses.
pub fn interrupts(task: &Task) -> (Vec<InterruptView>, Option<Loss>) {
    let mut v: Vec<InterruptView> = task.input_requests.values().map(input_interrupt).collect();
    v.extend(task.pending_auth.iter().map(auth_interrupt));
    v.extend(task.pending_reviews.iter().map(review_interrupt));
    if v.is_empty() && task.state.is_interrupted() {
        let text = task.status_message.as_ref().map(|m| m.text());
        return (
            vec![placeholder_interrupt(text)],
            Some(LOSS_NOTHING_PENDING),
        );
    }
    let foreign = task
        .pending_reviews
        .iter()
        .any(|r| r.reviewer != task.responsible_user);
    (v, foreign.then_some(LOSS_FOREIGN_REVIEW))
}

/// The HTTP status of a core error on the adapter's plain HTTP endpoints (run
/// cancel, replay), where no run stream carries a `RUN_ERROR`.
pub fn http_status(e: &CoreError) -> u16 {
    match e {
        CoreError::NotFound => 404,
        CoreError::InvalidInput { .. } => 400,
        CoreError::TooLarge { .. } => 413,
        CoreError::DeniedByGuardrail { .. } | CoreError::Forbidden { .. } => 403,
        CoreError::Terminal { .. }
        | CoreError::NotCancelable { .. }
        | CoreError::IllegalTransition { .. }
        | CoreError::WrongState { .. } => 409,
        CoreError::Contention | CoreError::ShuttingDown | CoreError::Unavailable(_) => 503,
        CoreError::LeaseLost | CoreError::Store(_) => 500,
    }
}

/// What the `RUN_ERROR` code of a core error loses (see [`core_error`]).
pub fn error_loss(e: &CoreError) -> Option<Loss> {
    match e {
        CoreError::IllegalTransition { .. }
        | CoreError::WrongState { .. }
        | CoreError::NotCancelable { .. } => Some(LOSS_ERROR_WRONG_STATE),
        CoreError::Contention
        | CoreError::ShuttingDown
        | CoreError::Unavailable(_)
        | CoreError::LeaseLost
        | CoreError::Store(_) => Some(LOSS_ERROR_UNAVAILABLE),
        _ => None,
    }
}

/// How a run ends, derived from the task's state.
#[derive(Clone, Debug, PartialEq)]
pub enum RunEnd {
    /// The run is still open (submitted or working).
    Open,
    /// `RUN_FINISHED` without outcome (success), with a result.
    Completed,
    /// `RUN_FINISHED` with an interrupt outcome.
    Interrupted,
    /// `RUN_FINISHED` with outcome `cancelled`.
    Cancelled,
    /// `RUN_ERROR` with code and message.
    Error {
        /// `RUN_ERROR.code`.
        code: String,
        /// `RUN_ERROR.message`.
        message: String,
    },
}

/// How a run ends for a task that moved to `state`, with the terminal cause and
/// error the status event carried. Returns the loss when one applies.
pub fn run_end(
    state: TaskState,
    cause: Option<TerminalCause>,
    error: Option<&TaskError>,
) -> (RunEnd, Option<Loss>) {
    let err = |default_code: &str, default_msg: &str| RunEnd::Error {
        code: error
            .map(|e| e.code.clone())
            .unwrap_or_else(|| default_code.to_string()),
        message: error
            .map(|e| e.message.clone())
            .unwrap_or_else(|| default_msg.to_string()),
    };
    match state {
        TaskState::Submitted => (RunEnd::Open, Some(LOSS_SUBMITTED)),
        TaskState::Working => (RunEnd::Open, None),
        TaskState::InputRequired | TaskState::AuthRequired => (RunEnd::Interrupted, None),
        TaskState::Completed => (RunEnd::Completed, None),
        TaskState::Canceled => match cause {
            Some(TerminalCause::Expired) => (RunEnd::Cancelled, Some(LOSS_EXPIRED_AS_CANCELLED)),
            _ => (RunEnd::Cancelled, None),
        },
        TaskState::Failed => match cause {
            // The error of an internal failure holds details for operators only.
            Some(TerminalCause::Internal) | None => (
                RunEnd::Error {
                    code: codes::INTERNAL.to_string(),
                    message: "internal error".to_string(),
                },
                None,
            ),
            Some(TerminalCause::Restricted) => (
                err("restricted", "the task is restricted"),
                Some(LOSS_REJECTED_AS_ERROR),
            ),
            _ => (err("agent_failed", "the task failed"), None),
        },
        TaskState::Rejected => match cause {
            Some(TerminalCause::Restricted) => (
                err("restricted", "the task is restricted"),
                Some(LOSS_REJECTED_AS_ERROR),
            ),
            _ => (
                err("rejected", "the task was rejected"),
                Some(LOSS_REJECTED_AS_ERROR),
            ),
        },
    }
}

/// The core state a run's end stands for, read back from the end and the
/// interrupt reasons. Exact wherever [`run_end`] and [`interrupts`] report no
/// loss: an open run is working; an interrupt with any `input_required` or
/// `confirmation` reason is input-required, with only auth reasons
/// auth-required; `RUN_ERROR` codes `rejected` and `restricted` are rejected, any
/// other code failed.
pub fn state_from_run_end(end: &RunEnd, reasons: &[&str]) -> TaskState {
    match end {
        RunEnd::Open => TaskState::Working,
        RunEnd::Completed => TaskState::Completed,
        RunEnd::Cancelled => TaskState::Canceled,
        RunEnd::Interrupted => {
            if reasons
                .iter()
                .any(|r| *r == REASON_INPUT_REQUIRED || *r == REASON_CONFIRMATION)
                || reasons.is_empty()
            {
                TaskState::InputRequired
            } else {
                TaskState::AuthRequired
            }
        }
        RunEnd::Error { code, .. } if code == "rejected" || code == "restricted" => {
            TaskState::Rejected
        }
        RunEnd::Error { .. } => TaskState::Failed,
    }
}

/// What kind of pending interaction an interrupt stands for.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum InterruptKind {
    /// A keyed input request (`input_required`).
    Input(String),
    /// A provider authorisation (`taskwire:auth_required`).
    Auth(String),
    /// A review (`confirmation`).
    Review(String),
}

/// An interrupt id, decoded: the task and the pending interaction.
///
/// On the wire it is `<taskId>/<input|auth|review>/<key>`; the key may itself
/// contain slashes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct InterruptRef {
    /// The task id.
    pub task_id: String,
    /// The interaction.
    pub kind: InterruptKind,
}

impl InterruptRef {
    /// The wire id.
    pub fn id(&self) -> String {
        let (k, v) = match &self.kind {
            InterruptKind::Input(v) => ("input", v),
            InterruptKind::Auth(v) => ("auth", v),
            InterruptKind::Review(v) => ("review", v),
        };
        format!("{}/{k}/{v}", self.task_id)
    }

    /// Decodes a wire id.
    pub fn parse(id: &str) -> Result<Self, VocabError> {
        let bad = || VocabError::Unknown {
            what: "interrupt id",
            value: id.to_string(),
        };
        let mut it = id.splitn(3, '/');
        let (Some(task), Some(kind), Some(key)) = (it.next(), it.next(), it.next()) else {
            return Err(bad());
        };
        if task.is_empty() || key.is_empty() {
            return Err(bad());
        }
        let kind = match kind {
            "input" => InterruptKind::Input(key.to_string()),
            "auth" => InterruptKind::Auth(key.to_string()),
            "review" => InterruptKind::Review(key.to_string()),
            _ => return Err(bad()),
        };
        Ok(Self {
            task_id: task.to_string(),
            kind,
        })
    }

    /// The interrupt reason of this kind.
    pub fn reason(&self) -> &'static str {
        match self.kind {
            InterruptKind::Input(_) => REASON_INPUT_REQUIRED,
            InterruptKind::Auth(_) => REASON_AUTH_REQUIRED,
            InterruptKind::Review(_) => REASON_CONFIRMATION,
        }
    }
}

/// A resume entry's status: the wire layer's.
pub use taskwire_wire::agui::ResumeStatus;

/// The status of a resume entry's wire value; any other value is refused.
pub fn resume_status(s: &str) -> Result<ResumeStatus, VocabError> {
    ResumeStatus::from_name(s).ok_or_else(|| VocabError::Unknown {
        what: "resume status",
        value: s.to_string(),
    })
}

/// The core answer to an input request from a resume entry. A non-object payload
/// is wrapped as `{"answer": payload}` (with [`LOSS_PAYLOAD_WRAPPED`]); a resolved
/// entry without payload is an error.
pub fn input_response(
    status: ResumeStatus,
    payload: Option<&Value>,
) -> Result<(InputResponse, Option<Loss>), VocabError> {
    match status {
        ResumeStatus::Cancelled => Ok((
            InputResponse {
                action: taskwire_core::types::InputAction::Cancel,
                content: None,
            },
            None,
        )),
        ResumeStatus::Resolved => match payload {
            Some(v @ Value::Object(_)) => Ok((InputResponse::accept(v.clone()), None)),
            Some(Value::Null) | None => Err(VocabError::Invalid {
                field: "resume.payload".into(),
                reason: "a resolved input interrupt needs a payload".into(),
            }),
            Some(other) => Ok((
                InputResponse::accept(json!({ "answer": other })),
                Some(LOSS_PAYLOAD_WRAPPED),
            )),
        },
    }
}

/// The review decision of a resume entry: `cancelled`, or a payload with
/// `approved: false`, rejects; anything else approves.
pub fn review_decision(status: ResumeStatus, payload: Option<&Value>) -> ReviewDecision {
    match status {
        ResumeStatus::Cancelled => ReviewDecision::Reject,
        ResumeStatus::Resolved => {
            let refused = payload
                .and_then(|p| p.get("approved"))
                .and_then(Value::as_bool)
                == Some(false);
            if refused {
                ReviewDecision::Reject
            } else {
                ReviewDecision::Approve
            }
        }
    }
}

/// What a resume of an authorisation interrupt does in the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthResume {
    /// Grant the provider.
    Grant,
    /// Cancel the task ([`LOSS_AUTH_DECLINE_CANCELS`]).
    CancelTask,
}

/// The core command of an authorisation resume.
pub fn auth_resume(status: ResumeStatus) -> (AuthResume, Option<Loss>) {
    match status {
        ResumeStatus::Resolved => (AuthResume::Grant, None),
        ResumeStatus::Cancelled => (AuthResume::CancelTask, Some(LOSS_AUTH_DECLINE_CANCELS)),
    }
}

/// The text of an agent message's parts (text parts joined with newlines), with
/// [`LOSS_NON_TEXT_PARTS`] when any part was not text.
/// Several text parts are joined ([`LOSS_TEXT_JOINED`]); a text part's media type,
/// file name and metadata are not shown either (also [`LOSS_NON_TEXT_PARTS`]).
pub fn message_text(parts: &[Part]) -> (String, Option<Loss>) {
    let mut out = String::new();
    let mut lossy = false;
    let mut texts = 0usize;
    for p in parts {
        match &p.content {
            PartContent::Text { text } => {
                if texts > 0 {
                    out.push('\n');
                }
                texts += 1;
                out.push_str(text);
                if p.filename.is_some() || !p.metadata.is_empty() || p.media_type.is_some() {
                    lossy = true;
                }
            }
            _ => lossy = true,
        }
    }
    let loss = if lossy {
        Some(LOSS_NON_TEXT_PARTS)
    } else if texts > 1 {
        Some(LOSS_TEXT_JOINED)
    } else {
        None
    };
    (out, loss)
}

/// Core parts from an AG-UI user message `content`: a string is one text part; an
/// array of input contents maps `text` to text parts, URL sources to URL parts and
/// inline data sources to data parts (`{"type":"data","value","mimeType"}` kept as
/// is, with the media type set).
pub fn user_parts(content: &Value) -> Result<Vec<Part>, VocabError> {
    match content {
        Value::String(s) => Ok(vec![Part::text(s.clone())]),
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                let kind = item.get("type").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" => {
                        let text = item.get("text").and_then(Value::as_str).ok_or_else(|| {
                            VocabError::Invalid {
                                field: "content[].text".into(),
                                reason: "a text part needs text".into(),
                            }
                        })?;
                        parts.push(Part::text(text));
                    }
                    "image" | "audio" | "video" | "document" => {
                        let source = item.get("source").ok_or_else(|| VocabError::Invalid {
                            field: "content[].source".into(),
                            reason: "a media part needs a source".into(),
                        })?;
                        let mime = source
                            .get("mimeType")
                            .and_then(Value::as_str)
                            .map(str::to_string);
                        let mut p = match source.get("type").and_then(Value::as_str) {
                            Some("url") => {
                                Part::url(source.get("value").and_then(Value::as_str).unwrap_or(""))
                            }
                            Some("data") => Part::data(source.clone()),
                            _ => {
                                return Err(VocabError::Invalid {
                                    field: "content[].source.type".into(),
                                    reason: "must be url or data".into(),
                                })
                            }
                        };
                        p.media_type = mime;
                        parts.push(p);
                    }
                    other => {
                        return Err(VocabError::Unknown {
                            what: "input content type",
                            value: other.to_string(),
                        })
                    }
                }
            }
            Ok(parts)
        }
        _ => Err(VocabError::Invalid {
            field: "content".into(),
            reason: "must be a string or an array of input contents".into(),
        }),
    }
}

/// The `RUN_ERROR` code and message for a core error met while starting or
/// resuming a run.
pub fn core_error(e: &CoreError) -> (&'static str, String) {
    let code = match e {
        CoreError::NotFound => codes::NOT_FOUND,
        CoreError::InvalidInput { .. } => codes::INVALID_INPUT,
        CoreError::TooLarge { .. } => codes::TOO_LARGE,
        CoreError::DeniedByGuardrail { .. } => codes::DENIED,
        CoreError::Terminal { .. } => codes::INTERRUPT_EXPIRED,
        CoreError::IllegalTransition { .. }
        | CoreError::WrongState { .. }
        | CoreError::NotCancelable { .. } => codes::WRONG_STATE,
        CoreError::Contention | CoreError::ShuttingDown | CoreError::Unavailable(_) => {
            codes::UNAVAILABLE
        }
        CoreError::LeaseLost | CoreError::Store(_) => codes::INTERNAL,
        CoreError::Forbidden { .. } => codes::FORBIDDEN,
    };
    let message = match e {
        CoreError::Store(_) | CoreError::LeaseLost => "internal error".to_string(),
        CoreError::Unavailable(_) => UNAVAILABLE_MESSAGE.to_string(),
        other => other.to_string(),
    };
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_and_interrupted_are_lossless() {
        assert_eq!(
            run_end(TaskState::Completed, Some(TerminalCause::Completed), None),
            (RunEnd::Completed, None)
        );
        assert_eq!(
            run_end(TaskState::InputRequired, None, None),
            (RunEnd::Interrupted, None)
        );
        assert_eq!(
            run_end(TaskState::AuthRequired, None, None),
            (RunEnd::Interrupted, None)
        );
        assert_eq!(run_end(TaskState::Working, None, None).0, RunEnd::Open);
    }

    #[test]
    fn failures_keep_their_code() {
        let e = TaskError {
            code: "agent_failed".into(),
            message: "boom".into(),
        };
        assert_eq!(
            run_end(
                TaskState::Failed,
                Some(TerminalCause::AgentFailed),
                Some(&e)
            )
            .0,
            RunEnd::Error {
                code: "agent_failed".into(),
                message: "boom".into()
            }
        );
        assert_eq!(
            run_end(TaskState::Failed, Some(TerminalCause::Internal), None).0,
            RunEnd::Error {
                code: "internal".into(),
                message: "internal error".into()
            }
        );
        assert!(matches!(
            run_end(TaskState::Rejected, Some(TerminalCause::Restricted), None).0,
            RunEnd::Error { code, .. } if code == "restricted"
        ));
    }

    #[test]
    fn expiry_reads_as_cancelled_with_a_named_loss() {
        assert_eq!(
            run_end(TaskState::Canceled, Some(TerminalCause::Expired), None),
            (RunEnd::Cancelled, Some(LOSS_EXPIRED_AS_CANCELLED))
        );
        assert_eq!(
            run_end(TaskState::Canceled, Some(TerminalCause::Canceled), None),
            (RunEnd::Cancelled, None)
        );
    }

    #[test]
    fn interrupt_ids_round_trip() {
        for kind in [
            InterruptKind::Input("ask-0".into()),
            InterruptKind::Auth("github".into()),
            InterruptKind::Review("review/with/slashes".into()),
        ] {
            let r = InterruptRef {
                task_id: "abc".into(),
                kind,
            };
            assert_eq!(InterruptRef::parse(&r.id()).unwrap(), r);
        }
        assert!(InterruptRef::parse("abc").is_err());
        assert!(InterruptRef::parse("abc/other/x").is_err());
        assert!(InterruptRef::parse("/input/x").is_err());
        assert!(InterruptRef::parse("abc/input/").is_err());
    }

    #[test]
    fn non_object_payload_is_wrapped_with_a_named_loss() {
        let (r, loss) = input_response(ResumeStatus::Resolved, Some(&json!("blue"))).unwrap();
        assert_eq!(r.content, Some(json!({"answer": "blue"})));
        assert_eq!(loss, Some(LOSS_PAYLOAD_WRAPPED));
        let (r, loss) =
            input_response(ResumeStatus::Resolved, Some(&json!({"answer": "x"}))).unwrap();
        assert_eq!(r.content, Some(json!({"answer": "x"})));
        assert_eq!(loss, None);
        assert!(input_response(ResumeStatus::Resolved, None).is_err());
        let (r, _) = input_response(ResumeStatus::Cancelled, None).unwrap();
        assert_eq!(r.action, taskwire_core::types::InputAction::Cancel);
    }

    #[test]
    fn declining_an_authorisation_cancels_with_a_named_loss() {
        assert_eq!(
            auth_resume(ResumeStatus::Cancelled),
            (AuthResume::CancelTask, Some(LOSS_AUTH_DECLINE_CANCELS))
        );
        assert_eq!(
            auth_resume(ResumeStatus::Resolved),
            (AuthResume::Grant, None)
        );
    }

    #[test]
    fn review_decisions() {
        assert_eq!(
            review_decision(ResumeStatus::Resolved, None),
            ReviewDecision::Approve
        );
        assert_eq!(
            review_decision(ResumeStatus::Resolved, Some(&json!({"approved": false}))),
            ReviewDecision::Reject
        );
        assert_eq!(
            review_decision(ResumeStatus::Cancelled, None),
            ReviewDecision::Reject
        );
    }

    #[test]
    fn non_text_parts_are_a_named_loss() {
        let (t, loss) = message_text(&[Part::text("a")]);
        assert_eq!((t.as_str(), loss), ("a", None));
        let (t, loss) = message_text(&[Part::text("a"), Part::text("b")]);
        assert_eq!((t.as_str(), loss), ("a\nb", Some(LOSS_TEXT_JOINED)));
        let mut named = Part::text("a");
        named.filename = Some("a.txt".into());
        assert_eq!(message_text(&[named]).1, Some(LOSS_NON_TEXT_PARTS));
        let (t, loss) = message_text(&[Part::text("a"), Part::data(json!(1))]);
        assert_eq!((t.as_str(), loss), ("a", Some(LOSS_NON_TEXT_PARTS)));
    }

    #[test]
    fn user_content_maps_to_parts() {
        assert_eq!(user_parts(&json!("hi")).unwrap(), vec![Part::text("hi")]);
        let parts = user_parts(&json!([
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "url", "value": "https://x/y.png", "mimeType": "image/png"}}
        ]))
        .unwrap();
        assert_eq!(parts[0], Part::text("look"));
        assert_eq!(parts[1].media_type.as_deref(), Some("image/png"));
        assert!(user_parts(&json!([{"type": "hologram"}])).is_err());
        assert!(user_parts(&json!(3)).is_err());
    }

    #[test]
    fn core_errors_map_to_codes() {
        assert_eq!(core_error(&CoreError::NotFound).0, codes::NOT_FOUND);
        assert_eq!(
            core_error(&CoreError::Store(taskwire_core::StoreError::Backend(
                "x".into()
            ))),
            (codes::INTERNAL, "internal error".to_string())
        );
    }
}
