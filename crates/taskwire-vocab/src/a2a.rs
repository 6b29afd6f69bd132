//! The A2A 1.0 view of the core vocabulary: task states, roles, parts and errors.
//!
//! Everything here is a pure function or a table over core types and the A2A
//! wire names and numbers (`lf.a2a.v1`); the A2A adapter (`taskwire-a2a`) turns
//! the results into its generated protobuf types. Lossy edges carry a [`Loss`].

use taskwire_core::event::EventKind;
use taskwire_core::types::{Part, PartContent, Task, TaskState, TerminalCause};
use taskwire_core::{CoreError, Role};

use crate::{Loss, VocabError};

/// `lf.a2a.v1.TaskState`, with the wire numbers of the 1.0 proto: the wire
/// layer's generated enum (its `number`, `from_number`, `name`, `is_terminal`
/// and `is_interrupted` are defined there).
pub use taskwire_wire::a2a::pb::TaskState as A2aState;

/// A pending review is shown as INPUT_REQUIRED: A2A has no review state, so a
/// client cannot tell "the agent asks you something" from "someone must approve".
pub const LOSS_REVIEW_AS_INPUT_REQUIRED: Loss =
    Loss("a pending review is shown as INPUT_REQUIRED; A2A cannot tell a review from a question");
/// Agent faults and internal errors are both FAILED; the status message says which.
pub const LOSS_INTERNAL_AS_FAILED: Loss =
    Loss("an internal or protocol failure is shown as FAILED, like an agent fault");
/// A guardrail lock is shown as the terminal state the core recorded (REJECTED or FAILED).
pub const LOSS_RESTRICTED: Loss =
    Loss("a task locked by a guardrail shows as REJECTED/FAILED without the restriction reason");
/// An inactivity expiry is shown as CANCELED; nobody canceled it.
pub const LOSS_EXPIRED_AS_CANCELED: Loss =
    Loss("an inactivity expiry is shown as CANCELED; A2A has no expired state");
/// A2A message `extensions` and `referenceTaskIds` have no core field and are dropped
/// from input (they are not echoed back in history).
pub const LOSS_MESSAGE_EXTENSIONS: Loss =
    Loss("message extensions and referenceTaskIds are not stored and do not appear in history");
/// Core message timestamps (received/committed) have no A2A field.
pub const LOSS_MESSAGE_TIMESTAMPS: Loss =
    Loss("message receive/commit timestamps are not part of an A2A Message");

/// What an A2A `Message` built from a core message loses (its receive/commit
/// timestamps, [`LOSS_MESSAGE_TIMESTAMPS`]).
pub fn message_loss(m: &taskwire_core::Message) -> Option<Loss> {
    (m.received_at.is_some() || m.committed_at.is_some()).then_some(LOSS_MESSAGE_TIMESTAMPS)
}

/// What storing an A2A input message loses: its `extensions` and
/// `referenceTaskIds`, when it has any ([`LOSS_MESSAGE_EXTENSIONS`]).
pub fn input_message_loss(extensions: usize, reference_task_ids: usize) -> Option<Loss> {
    (extensions + reference_task_ids > 0).then_some(LOSS_MESSAGE_EXTENSIONS)
}

/// What an A2A stream (and a push notification) shows for a core log event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum A2aFrame {
    /// A `TaskStatusUpdateEvent` with the new state and its status message.
    StatusUpdate,
    /// A `TaskStatusUpdateEvent` in the unchanged state, carrying an agent message.
    StatusMessage,
    /// A `TaskArtifactUpdateEvent` (with `append` and `lastChunk`).
    ArtifactUpdate,
}

/// Lost from A2A streams: user messages (they are in the task's history).
pub const LOSS_USER_MESSAGES_NOT_STREAMED: Loss =
    Loss("user messages are not streamed; they are only in the task's history");
/// Lost from A2A: the structure of what a task waits for.
pub const LOSS_INTERACTION_DETAILS: Loss = Loss(
    "input request keys and schemas, providers, reviews and their decisions are not shown; only the state and its status message",
);
/// Lost from A2A: steps.
pub const LOSS_STEPS: Loss = Loss("named steps are not shown");
/// Lost from A2A: the agent's shared state.
pub const LOSS_AGENT_STATE: Loss =
    Loss("the agent's shared state (snapshots and deltas) is not shown");

/// The A2A frame of a core log event, if A2A shows it, and what is lost when it
/// does not. Bookkeeping events (created, turn started, input handed to a turn,
/// answers stored) have no frame and lose nothing a client could act on.
pub fn frame_of(kind: &EventKind) -> (Option<A2aFrame>, Option<Loss>) {
    match kind {
        EventKind::Status { .. } => (Some(A2aFrame::StatusUpdate), None),
        EventKind::Message { message, .. } if message.role == Role::Agent => {
            (Some(A2aFrame::StatusMessage), None)
        }
        EventKind::Message { .. } => (None, Some(LOSS_USER_MESSAGES_NOT_STREAMED)),
        EventKind::Artifact { .. } => (Some(A2aFrame::ArtifactUpdate), None),
        EventKind::InputRequested { .. }
        | EventKind::InputSuperseded { .. }
        | EventKind::AuthRequired { .. }
        | EventKind::AuthGranted { .. }
        | EventKind::ReviewRequested { .. }
        | EventKind::ReviewDecided { .. } => (None, Some(LOSS_INTERACTION_DETAILS)),
        EventKind::Step { .. } => (None, Some(LOSS_STEPS)),
        EventKind::StateSnapshot { .. } | EventKind::StateDelta { .. } => {
            (None, Some(LOSS_AGENT_STATE))
        }
        EventKind::Created { .. }
        | EventKind::TurnStarted { .. }
        | EventKind::InputCommitted { .. }
        | EventKind::InputAnswered { .. } => (None, None),
    }
}

/// The A2A state of a core state. This table is total and lossless at the level of
/// states; what a state *means* may lose detail, see [`task_state`].
pub fn state_to_a2a(s: TaskState) -> A2aState {
    match s {
        TaskState::Submitted => A2aState::Submitted,
        TaskState::Working => A2aState::Working,
        TaskState::InputRequired => A2aState::InputRequired,
        TaskState::AuthRequired => A2aState::AuthRequired,
        TaskState::Completed => A2aState::Completed,
        TaskState::Failed => A2aState::Failed,
        TaskState::Canceled => A2aState::Canceled,
        TaskState::Rejected => A2aState::Rejected,
    }
}

/// The core state of an A2A state (for filters). UNSPECIFIED has none.
pub fn state_from_a2a(s: A2aState) -> Result<TaskState, VocabError> {
    Ok(match s {
        A2aState::Submitted => TaskState::Submitted,
        A2aState::Working => TaskState::Working,
        A2aState::InputRequired => TaskState::InputRequired,
        A2aState::AuthRequired => TaskState::AuthRequired,
        A2aState::Completed => TaskState::Completed,
        A2aState::Failed => TaskState::Failed,
        A2aState::Canceled => TaskState::Canceled,
        A2aState::Rejected => TaskState::Rejected,
        A2aState::Unspecified => {
            return Err(VocabError::Unknown {
                what: "task state",
                value: s.name().into(),
            })
        }
    })
}

/// The A2A state of a task, with what the view loses about it.
pub fn task_state(task: &Task) -> (A2aState, Option<Loss>) {
    let s = state_to_a2a(task.state);
    let loss = match (task.state, task.terminal_cause) {
        (TaskState::InputRequired, _) if !task.pending_reviews.is_empty() => {
            Some(LOSS_REVIEW_AS_INPUT_REQUIRED)
        }
        (_, Some(c)) => terminal_cause_loss(c),
        _ => None,
    };
    (s, loss)
}

/// What the A2A terminal state loses about why a task ended.
pub fn terminal_cause_loss(c: TerminalCause) -> Option<Loss> {
    match c {
        TerminalCause::Completed
        | TerminalCause::AgentFailed
        | TerminalCause::Rejected
        | TerminalCause::Canceled => None,
        TerminalCause::Internal => Some(LOSS_INTERNAL_AS_FAILED),
        TerminalCause::Restricted => Some(LOSS_RESTRICTED),
        TerminalCause::Expired => Some(LOSS_EXPIRED_AS_CANCELED),
    }
}

/// `lf.a2a.v1.Role` wire number of a core role.
pub fn role_to_a2a(r: Role) -> i32 {
    match r {
        Role::User => 1,
        Role::Agent => 2,
    }
}

/// The core role of an A2A role number; UNSPECIFIED and unknown numbers are refused.
pub fn role_from_a2a(n: i32) -> Result<Role, VocabError> {
    match n {
        1 => Ok(Role::User),
        2 => Ok(Role::Agent),
        other => Err(VocabError::Invalid {
            field: "message.role".into(),
            reason: format!("must be ROLE_USER or ROLE_AGENT (got {other})"),
        }),
    }
}

/// The content of an A2A `Part` (its `content` oneof), in core terms.
#[derive(Clone, Debug, PartialEq)]
pub enum A2aPartContent {
    /// `text`
    Text(String),
    /// `raw` (base64 in JSON)
    Raw(Vec<u8>),
    /// `url`
    Url(String),
    /// `data` (any JSON value)
    Data(serde_json::Value),
}

/// The A2A part content of a core part. Lossless: the fields map one to one
/// (mediaType, filename and metadata travel beside the content).
pub fn part_content_to_a2a(p: &Part) -> A2aPartContent {
    match &p.content {
        PartContent::Text { text } => A2aPartContent::Text(text.clone()),
        PartContent::Raw { bytes } => A2aPartContent::Raw(bytes.clone()),
        PartContent::Url { url } => A2aPartContent::Url(url.clone()),
        PartContent::Data { data } => A2aPartContent::Data(data.clone()),
    }
}

/// Lost: proto3 strings have no presence, so an empty `mediaType` or `filename`
/// reads back as absent.
pub const LOSS_EMPTY_STRING_FIELDS: Loss =
    Loss("an empty mediaType or filename is sent as the proto3 default and reads back as absent");
/// Lost: `data` and `metadata` travel as `google.protobuf.Value`, whose numbers are
/// doubles.
pub const LOSS_DATA_NUMBERS: Loss = Loss(
    "data and metadata numbers travel as protobuf doubles: whole floats come back as integers and integers of 9e15 or more as floats",
);
/// Whole doubles below this magnitude are read back as JSON integers (the A2A
/// adapter's `google.protobuf.Value` decoding); see [`LOSS_DATA_NUMBERS`].
pub const PROTOBUF_WHOLE_NUMBER_LIMIT: f64 = taskwire_wire::wkt::EXACT_INTEGER;

/// An A2A `Part`: its content and the fields beside it, with proto3 semantics
/// (an empty string is an absent field).
#[derive(Clone, Debug, PartialEq)]
pub struct A2aPart {
    /// The `content` oneof (none is refused on input).
    pub content: Option<A2aPartContent>,
    /// `mediaType` (empty: absent).
    pub media_type: String,
    /// `filename` (empty: absent).
    pub filename: String,
    /// `metadata` (empty: absent).
    pub metadata: taskwire_core::types::Metadata,
}

/// True if a JSON value survives a trip through `google.protobuf.Value` unchanged.
pub fn survives_protobuf_value(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                (i as f64).abs() < PROTOBUF_WHOLE_NUMBER_LIMIT
            } else if let Some(u) = n.as_u64() {
                (u as f64) < PROTOBUF_WHOLE_NUMBER_LIMIT
            } else {
                let f = n.as_f64().unwrap_or(0.0);
                !(f.fract() == 0.0 && f.abs() < PROTOBUF_WHOLE_NUMBER_LIMIT)
            }
        }
        Value::Array(a) => a.iter().all(survives_protobuf_value),
        Value::Object(o) => o.values().all(survives_protobuf_value),
        Value::Null | Value::Bool(_) | Value::String(_) => true,
    }
}

/// The A2A part of a core part, with what the trip loses: empty strings become
/// absent ([`LOSS_EMPTY_STRING_FIELDS`]) and some numbers change form
/// ([`LOSS_DATA_NUMBERS`]). Everything else maps one to one.
pub fn part_to_a2a(p: &Part) -> (A2aPart, Vec<Loss>) {
    let mut losses = Vec::new();
    if p.media_type.as_deref() == Some("") || p.filename.as_deref() == Some("") {
        losses.push(LOSS_EMPTY_STRING_FIELDS);
    }
    let data_ok = match &p.content {
        PartContent::Data { data } => survives_protobuf_value(data),
        _ => true,
    };
    if !data_ok || !p.metadata.values().all(survives_protobuf_value) {
        losses.push(LOSS_DATA_NUMBERS);
    }
    (
        A2aPart {
            content: Some(part_content_to_a2a(p)),
            media_type: p.media_type.clone().unwrap_or_default(),
            filename: p.filename.clone().unwrap_or_default(),
            metadata: p.metadata.clone(),
        },
        losses,
    )
}

/// The core part of an A2A part; `index` names it in errors.
pub fn part_from_a2a(p: A2aPart, index: usize) -> Result<Part, VocabError> {
    Ok(Part {
        content: part_content_from_a2a(p.content, index)?,
        media_type: (!p.media_type.is_empty()).then_some(p.media_type),
        filename: (!p.filename.is_empty()).then_some(p.filename),
        metadata: p.metadata,
    })
}

/// The core part content of an A2A part's content; a part with no content is refused.
pub fn part_content_from_a2a(
    c: Option<A2aPartContent>,
    index: usize,
) -> Result<PartContent, VocabError> {
    Ok(match c {
        Some(A2aPartContent::Text(text)) => PartContent::Text { text },
        Some(A2aPartContent::Raw(bytes)) => PartContent::Raw { bytes },
        Some(A2aPartContent::Url(url)) => PartContent::Url { url },
        Some(A2aPartContent::Data(data)) => PartContent::Data { data },
        None => {
            return Err(VocabError::Invalid {
                field: format!("message.parts[{index}]"),
                reason: "a part needs one of text, raw, url or data".into(),
            })
        }
    })
}

/// The A2A error kinds, gRPC codes and ErrorInfo names are wire facts: they live
/// in the wire layer, shared with the client.
pub use taskwire_wire::a2a::errors::{A2aErrorKind, GrpcCode, ERROR_DOMAIN, ERROR_INFO_TYPE};

/// The A2A error for a core error, with a message safe to show the caller.
/// Store, lease and shutdown failures become a generic internal error (their
/// details are for logs only).
pub fn error_from_core(e: &CoreError) -> (A2aErrorKind, String) {
    match e {
        CoreError::NotFound => (A2aErrorKind::TaskNotFound, "task not found".into()),
        CoreError::Terminal { state } => (
            A2aErrorKind::UnsupportedOperation,
            format!(
                "task is {}, which is terminal; it accepts no more messages",
                state_to_a2a(*state).name()
            ),
        ),
        CoreError::NotCancelable { state } => (
            A2aErrorKind::TaskNotCancelable,
            format!(
                "task is {} and cannot be canceled",
                state_to_a2a(*state).name()
            ),
        ),
        CoreError::IllegalTransition { .. } | CoreError::WrongState { .. } => {
            (A2aErrorKind::UnsupportedOperation, e.to_string())
        }
        CoreError::InvalidInput { .. }
        | CoreError::TooLarge { .. }
        | CoreError::DeniedByGuardrail { .. } => (A2aErrorKind::InvalidParams, e.to_string()),
        CoreError::Contention => (
            A2aErrorKind::Internal,
            "too much contention on the task, retry".into(),
        ),
        CoreError::LeaseLost | CoreError::Store(_) | CoreError::ShuttingDown => {
            (A2aErrorKind::Internal, "internal error".into())
        }
        CoreError::Unavailable(_) => (A2aErrorKind::Unavailable, UNAVAILABLE_MESSAGE.into()),
        CoreError::Forbidden { .. } => (A2aErrorKind::PermissionDenied, e.to_string()),
    }
}

/// The message of [`A2aErrorKind::Unavailable`].
pub const UNAVAILABLE_MESSAGE: &str =
    "the task store did not answer; retry (a SendMessage retried with the same messageId makes at most one task)";

/// Lost: JSON-RPC has no code for "unavailable".
pub const LOSS_ERROR_UNAVAILABLE: Loss = Loss(
    "a store that did not answer is -32603 on JSON-RPC like an internal error; only the ErrorInfo (reason UNAVAILABLE, domain taskwire) tells it apart (gRPC UNAVAILABLE and HTTP 503 keep it)",
);

/// Lost: JSON-RPC has no code for "permission denied".
pub const LOSS_ERROR_FORBIDDEN: Loss = Loss(
    "a token without the scope is -32600 on JSON-RPC like an invalid request; HTTP 403 and the ErrorInfo (reason PERMISSION_DENIED, domain taskwire) tell it apart (gRPC PERMISSION_DENIED and HTTP+JSON 403 keep it)",
);

/// Lost: several core refusals share InvalidParams.
pub const LOSS_ERROR_REFUSALS: Loss = Loss(
    "an over-limit input and a guardrail refusal are InvalidParams (-32602) like a malformed field; only the message tells them apart",
);
/// Lost: a retryable condition is reported as an internal error.
pub const LOSS_ERROR_RETRYABLE: Loss = Loss(
    "contention and shutdown are InternalError (-32603) like a failure; A2A has no retryable error code",
);

/// What the A2A error of a core error loses (see [`error_from_core`]).
pub fn error_loss(e: &CoreError) -> Option<Loss> {
    match e {
        CoreError::TooLarge { .. } | CoreError::DeniedByGuardrail { .. } => {
            Some(LOSS_ERROR_REFUSALS)
        }
        CoreError::Contention | CoreError::ShuttingDown => Some(LOSS_ERROR_RETRYABLE),
        CoreError::IllegalTransition { .. } | CoreError::WrongState { .. } => {
            Some(LOSS_ERROR_UNSUPPORTED)
        }
        CoreError::LeaseLost => Some(crate::LOSS_LEASE_LOST),
        CoreError::Unavailable(_) => Some(LOSS_ERROR_UNAVAILABLE),
        CoreError::Forbidden { .. } => Some(LOSS_ERROR_FORBIDDEN),
        _ => None,
    }
}

/// Lost: several state refusals share UnsupportedOperation.
pub const LOSS_ERROR_UNSUPPORTED: Loss = Loss(
    "an illegal transition or a command in the wrong state is UnsupportedOperation (-32004) like a message to a terminal task",
);

/// Accepted media-type check: `mt` matches one of `accepted` exactly or through a
/// `type/*` or `*/*` wildcard (parameters after `;` are ignored, case-insensitive).
pub fn media_type_accepted(mt: &str, accepted: &[String]) -> bool {
    let base = mt
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let major = base.split('/').next().unwrap_or("");
    accepted.iter().any(|a| {
        let a = a.trim().to_ascii_lowercase();
        a == base || a == "*/*" || a.strip_suffix("/*").is_some_and(|m| m == major)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn task(state: TaskState, cause: Option<TerminalCause>) -> Task {
        let now = Utc::now();
        serde_json::from_value::<Task>(serde_json::json!({
            "id": taskwire_core::TaskId::new(),
            "contextId": "c", "tenant": "t", "owner": "o", "responsibleUser": "o",
            "agent": "a", "state": state, "stateChangedAt": now, "createdAt": now,
            "updatedAt": now, "version": 1, "lastSeq": 1, "history": [], "artifacts": [],
            "turns": 0, "terminalCause": cause,
        }))
        .unwrap()
    }

    #[test]
    fn states_round_trip_and_numbers_match_the_proto() {
        for s in TaskState::ALL {
            assert_eq!(state_from_a2a(state_to_a2a(s)).unwrap(), s);
            assert_eq!(
                state_to_a2a(s).is_terminal(),
                s.is_terminal(),
                "terminal {s}"
            );
            assert_eq!(state_to_a2a(s).is_interrupted(), s.is_interrupted());
        }
        assert_eq!(A2aState::Canceled.number(), 5);
        assert_eq!(A2aState::InputRequired.number(), 6);
        assert_eq!(A2aState::AuthRequired.number(), 8);
        assert!(state_from_a2a(A2aState::Unspecified).is_err());
        for s in A2aState::ALL {
            assert_eq!(A2aState::from_number(s.number()), Some(s));
        }
    }

    #[test]
    fn loss_review_pending_shows_as_input_required() {
        let mut t = task(TaskState::InputRequired, None);
        assert_eq!(task_state(&t), (A2aState::InputRequired, None));
        t.pending_reviews.push(taskwire_core::types::Review {
            id: "r".into(),
            reviewer: "o".into(),
            summary: "s".into(),
            since: Utc::now(),
        });
        assert_eq!(
            task_state(&t),
            (A2aState::InputRequired, Some(LOSS_REVIEW_AS_INPUT_REQUIRED))
        );
    }

    #[test]
    fn loss_internal_failure_shows_as_failed() {
        let t = task(TaskState::Failed, Some(TerminalCause::Internal));
        assert_eq!(
            task_state(&t),
            (A2aState::Failed, Some(LOSS_INTERNAL_AS_FAILED))
        );
        let t = task(TaskState::Failed, Some(TerminalCause::AgentFailed));
        assert_eq!(task_state(&t), (A2aState::Failed, None));
    }

    #[test]
    fn loss_expired_shows_as_canceled() {
        let t = task(TaskState::Canceled, Some(TerminalCause::Expired));
        assert_eq!(
            task_state(&t),
            (A2aState::Canceled, Some(LOSS_EXPIRED_AS_CANCELED))
        );
    }

    #[test]
    fn loss_restricted_is_named() {
        let t = task(TaskState::Rejected, Some(TerminalCause::Restricted));
        assert_eq!(task_state(&t), (A2aState::Rejected, Some(LOSS_RESTRICTED)));
    }

    #[test]
    fn parts_round_trip() {
        for p in [
            Part::text("hi"),
            Part::raw(vec![1, 2, 3], "application/octet-stream"),
            Part::url("https://example.com/x"),
            Part::data(serde_json::json!({"k": [1, null]})),
        ] {
            let back = part_content_from_a2a(Some(part_content_to_a2a(&p)), 0).unwrap();
            assert_eq!(back, p.content);
        }
        assert!(part_content_from_a2a(None, 2).is_err());
    }

    #[test]
    fn roles() {
        assert_eq!(role_from_a2a(role_to_a2a(Role::User)).unwrap(), Role::User);
        assert_eq!(
            role_from_a2a(role_to_a2a(Role::Agent)).unwrap(),
            Role::Agent
        );
        assert!(role_from_a2a(0).is_err());
    }

    #[test]
    fn errors_map_to_codes_and_reasons() {
        let (k, _) = error_from_core(&CoreError::NotFound);
        assert_eq!((k.code(), k.reason()), (-32001, "TASK_NOT_FOUND"));
        assert_eq!(k.grpc_code(), GrpcCode::NotFound);
        let (k, m) = error_from_core(&CoreError::Terminal {
            state: TaskState::Completed,
        });
        assert_eq!(k, A2aErrorKind::UnsupportedOperation);
        assert!(m.contains("TASK_STATE_COMPLETED"));
        let (k, _) = error_from_core(&CoreError::NotCancelable {
            state: TaskState::Completed,
        });
        assert_eq!(k.code(), -32002);
        assert_eq!(k.grpc_code(), GrpcCode::FailedPrecondition);
        let (k, m) = error_from_core(&CoreError::Store(taskwire_core::StoreError::Backend(
            "secret dsn".into(),
        )));
        assert_eq!(k, A2aErrorKind::Internal);
        assert!(!m.contains("secret"));
        let (k, m) = error_from_core(&CoreError::Unavailable("secret dsn".into()));
        assert_eq!(k, A2aErrorKind::Unavailable);
        assert_eq!((k.code(), k.reason()), (-32603, "UNAVAILABLE"));
        assert_eq!(k.grpc_code(), GrpcCode::Unavailable);
        assert_eq!(
            (k.http_status(), k.http_status_name()),
            (503, "UNAVAILABLE")
        );
        assert!(!m.contains("secret") && m.contains("messageId"), "{m}");
        assert_eq!(A2aErrorKind::VersionNotSupported.code(), -32009);
        assert_eq!(
            A2aErrorKind::ContentTypeNotSupported.grpc_code(),
            GrpcCode::InvalidArgument
        );
    }

    /// The HTTP+JSON statuses of A2A 1.0.1 §5.4 (v1.0.0 had TaskNotCancelable
    /// 409, ContentTypeNotSupported 415, InvalidAgentResponse 502).
    #[test]
    fn http_statuses_follow_v1_0_1() {
        use A2aErrorKind as K;
        for (k, status, name) in [
            (K::TaskNotFound, 404, "NOT_FOUND"),
            (K::TaskNotCancelable, 400, "FAILED_PRECONDITION"),
            (K::PushNotificationNotSupported, 400, "FAILED_PRECONDITION"),
            (K::UnsupportedOperation, 400, "FAILED_PRECONDITION"),
            (K::ContentTypeNotSupported, 400, "INVALID_ARGUMENT"),
            (K::InvalidAgentResponse, 500, "INTERNAL"),
            (
                K::ExtendedAgentCardNotConfigured,
                400,
                "FAILED_PRECONDITION",
            ),
            (K::ExtensionSupportRequired, 400, "FAILED_PRECONDITION"),
            (K::VersionNotSupported, 400, "FAILED_PRECONDITION"),
            (K::ParseError, 400, "INVALID_ARGUMENT"),
            (K::InvalidRequest, 400, "INVALID_ARGUMENT"),
            (K::MethodNotFound, 404, "NOT_FOUND"),
            (K::InvalidParams, 400, "INVALID_ARGUMENT"),
            (K::Internal, 500, "INTERNAL"),
            (K::Unavailable, 503, "UNAVAILABLE"),
        ] {
            assert_eq!(
                (k.http_status(), k.http_status_name()),
                (status, name),
                "{k:?}"
            );
        }
    }

    #[test]
    fn media_types() {
        let acc = vec!["text/plain".to_string(), "image/*".to_string()];
        assert!(media_type_accepted("text/plain; charset=utf-8", &acc));
        assert!(media_type_accepted("image/png", &acc));
        assert!(!media_type_accepted(
            "application/x-unsupported-tck-type",
            &acc
        ));
        assert!(media_type_accepted("x/y", &["*/*".to_string()]));
    }
}
