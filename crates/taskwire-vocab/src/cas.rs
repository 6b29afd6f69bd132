//! The Common Agent Specification (CAS) view of the core vocabulary: phase, terminal
//! reason and notifications of the task status object, the `ContentPart` content
//! model, and the error codes the CAS surface answers with.
//!
//! Every function here is pure. Where a mapping drops information it returns (or
//! documents) a [`Loss`], and a unit test pins each lossy edge.
//!
//! | core | CAS phase | terminal_reason | notifications |
//! |---|---|---|---|
//! | submitted, working | processing | null | pending authorisations / own reviews, if any |
//! | input-required with open input requests, or nothing pending (interrupted) | idle | null | as above |
//! | input-required waiting only on reviews | processing | null | `review_required` for the responsible user's reviews only |
//! | auth-required | processing | null | one `user_auth_required` per provider |
//! | completed | terminal | completed | none |
//! | failed (agent fault or internal) | terminal | errored | none |
//! | rejected | terminal | restricted | none |
//! | canceled (cause canceled or expired) | terminal | completed | none |

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use taskwire_core::types::{Metadata, TerminalCause};
use taskwire_core::{CoreError, Part, PartContent, Task, TaskState, Timestamp};

use crate::{Loss, VocabError};

/// Largest inline `text` of a ContentPart, in bytes (100 KB).
pub const MAX_INLINE_TEXT_BYTES: usize = 100_000;
/// Largest serialised `metadata` of a ContentPart, in bytes (8 KB).
pub const MAX_PART_METADATA_BYTES: usize = 8 * 1024;

/// The prefix of the part metadata keys taskwire writes itself ([`META_FILENAME`],
/// [`META_SIZE_BYTES`], [`META_ARTIFACT`]); an input part using one is refused, so
/// that a caller's metadata is never read back as taskwire's own.
pub const RESERVED_META_PREFIX: &str = "taskwire.";
/// Part metadata key under which a core part's file name travels.
pub const META_FILENAME: &str = "taskwire.filename";
/// Part metadata key under which `sizeBytes` of a CAS file part is kept in the core.
pub const META_SIZE_BYTES: &str = "taskwire.sizeBytes";
/// Part metadata key naming the artifact an output part belongs to (`{id, name}`).
pub const META_ARTIFACT: &str = "taskwire.artifact";
/// Message metadata key under which the parameter keys of an input are kept.
pub const META_PARAMETERS: &str = "parameters";

/// Keys of a TaskIO that an agent's parameters may never supply.
pub const WELL_KNOWN_KEYS: [&str; 5] = ["message", "received_at", "committed_at", "error", "type"];

/// The CAS wire types: the wire layer's (`taskwire_wire::cas`), shared with the
/// client and described by the schema generator.
pub use taskwire_wire::cas::{ContentPart, NotificationKind, Phase, TerminalReason};

/// An outstanding call to action for the responsible user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notification {
    /// What is asked.
    pub kind: NotificationKind,
    /// When it was raised (UTC ISO 8601).
    pub since: Timestamp,
    /// The provider to connect (`user_auth_required` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// Lost: `submitted` and `working` are both `processing`.
pub const LOSS_SUBMITTED_AS_PROCESSING: Loss =
    Loss("submitted (not yet picked up) and working are both reported as processing");
/// Lost: a review addressed to someone else is only `processing`.
pub const LOSS_FOREIGN_REVIEW: Loss =
    Loss("a review addressed to someone other than the responsible user shows only as processing");
/// Lost: a canceled task reports `completed`.
pub const LOSS_CANCELED: Loss =
    Loss("a canceled task reports terminal_reason completed; that it was canceled is not visible");
/// Lost: a task ended by its inactivity lifespan reports `completed`.
pub const LOSS_EXPIRED: Loss = Loss(
    "a task ended by its inactivity lifespan reports terminal_reason completed (CAS: the runtime completes it)",
);
/// Lost: agent faults and internal errors are both `errored`.
pub const LOSS_FAILED_KIND: Loss = Loss(
    "an agent-reported failure and an internal error are both errored; the code is on the last output's error",
);
/// Lost: a refusal by the agent or a reviewer is `restricted`.
pub const LOSS_REJECTED: Loss = Loss(
    "a refusal by the agent or a reviewer reports restricted; the reason is only in the last output",
);
/// Lost: raw bytes have no inline CAS form.
pub const LOSS_RAW_BYTES: Loss = Loss(
    "raw bytes have no inline CAS form: they become a data: URI in `file`, not a mount reference",
);
/// Lost: a URL becomes a `file` reference.
pub const LOSS_URL_AS_FILE: Loss =
    Loss("a URL part becomes a `file` reference; CAS expects a mount reference there");
/// Lost: structured data becomes JSON text.
pub const LOSS_DATA_AS_TEXT: Loss =
    Loss("a structured data part becomes its JSON text with mimeType application/json");
/// Lost: a file name moves into part metadata.
pub const LOSS_FILENAME: Loss = Loss("a part's file name travels in metadata (taskwire.filename)");
/// Lost: an artifact's identity moves into part metadata.
pub const LOSS_ARTIFACT: Loss = Loss(
    "an artifact becomes an output message; its id and name travel in the first part's metadata (taskwire.artifact)",
);

/// The phase of a task, and what the mapping loses for it.
pub fn phase(task: &Task) -> (Phase, Option<Loss>) {
    match task.state {
        s if s.is_terminal() => (Phase::Terminal, None),
        // Open input requests, or nothing pending at all (a turn the host
        // interrupted): the task awaits the responsible user's next input.
        TaskState::InputRequired
            if !task.input_requests.is_empty() || task.waiting_state().is_none() =>
        {
            (Phase::Idle, None)
        }
        TaskState::InputRequired => {
            let foreign = task
                .pending_reviews
                .iter()
                .any(|r| r.reviewer != task.responsible_user);
            (Phase::Processing, foreign.then_some(LOSS_FOREIGN_REVIEW))
        }
        TaskState::Submitted => (Phase::Processing, Some(LOSS_SUBMITTED_AS_PROCESSING)),
        _ => (Phase::Processing, None),
    }
}

/// The terminal reason of a task (None unless terminal), and what the mapping loses.
pub fn terminal_reason(task: &Task) -> (Option<TerminalReason>, Option<Loss>) {
    match task.state {
        TaskState::Completed => (Some(TerminalReason::Completed), None),
        // A guardrail lock is `restricted` whichever terminal state the core
        // recorded it under.
        TaskState::Failed | TaskState::Rejected
            if task.terminal_cause == Some(TerminalCause::Restricted) =>
        {
            (Some(TerminalReason::Restricted), None)
        }
        TaskState::Failed => (Some(TerminalReason::Errored), Some(LOSS_FAILED_KIND)),
        TaskState::Rejected => (Some(TerminalReason::Restricted), Some(LOSS_REJECTED)),
        TaskState::Canceled => match task.terminal_cause {
            Some(TerminalCause::Expired) => (Some(TerminalReason::Completed), Some(LOSS_EXPIRED)),
            _ => (Some(TerminalReason::Completed), Some(LOSS_CANCELED)),
        },
        _ => (None, None),
    }
}

/// The core state a CAS status stands for, read back from phase, terminal
/// reason and notification kinds. Exact wherever [`phase`] and
/// [`terminal_reason`] report no loss: idle is input-required; processing with a
/// `review_required` is input-required, with only `user_auth_required` is
/// auth-required, with none is working; terminal completed, errored and
/// restricted are completed, failed and rejected.
pub fn state_from_status(
    phase: Phase,
    reason: Option<TerminalReason>,
    notifications: &[NotificationKind],
) -> TaskState {
    match (phase, reason) {
        (Phase::Idle, _) => TaskState::InputRequired,
        (Phase::Processing, _) => {
            if notifications.contains(&NotificationKind::ReviewRequired) {
                TaskState::InputRequired
            } else if notifications.contains(&NotificationKind::UserAuthRequired) {
                TaskState::AuthRequired
            } else {
                TaskState::Working
            }
        }
        (Phase::Terminal, Some(TerminalReason::Errored)) => TaskState::Failed,
        (Phase::Terminal, Some(TerminalReason::Restricted)) => TaskState::Rejected,
        // A later revision's `abandoned`: the idle lifespan ran out.
        (Phase::Terminal, Some(TerminalReason::Abandoned)) => TaskState::Canceled,
        (Phase::Terminal, _) => TaskState::Completed,
        // A phase this revision does not name: busy, as far as anyone can tell.
        (Phase::Unknown, _) => TaskState::Working,
    }
}

/// The outstanding notifications of a task, ordered by `since` (ties: kind, then
/// provider). Empty for a terminal task. One `user_auth_required` per provider
/// however many operations wait on it; one `review_required` per pending review
/// whose reviewer is the responsible user; nothing else.
pub fn notifications(task: &Task) -> Vec<Notification> {
    if task.state.is_terminal() {
        return Vec::new();
    }
    let mut out: Vec<Notification> = Vec::new();
    for a in &task.pending_auth {
        if let Some(n) = out
            .iter_mut()
            .find(|n| n.provider.as_deref() == Some(a.provider.as_str()))
        {
            n.since = n.since.min(a.since);
            continue;
        }
        out.push(Notification {
            kind: NotificationKind::UserAuthRequired,
            since: a.since,
            provider: Some(a.provider.clone()),
        });
    }
    for r in task.reviews_for_responsible_user() {
        out.push(Notification {
            kind: NotificationKind::ReviewRequired,
            since: r.since,
            provider: None,
        });
    }
    out.sort_by(|a, b| (a.since, a.kind, &a.provider).cmp(&(b.since, b.kind, &b.provider)));
    out
}

/// `idle_expires_at`: the inactivity deadline the runtime enforces, null when
/// terminal or when no lifespan applies.
pub fn idle_expires_at(task: &Task) -> Option<Timestamp> {
    if task.state.is_terminal() {
        None
    } else {
        task.idle_expires_at
    }
}

fn invalid(field: String, reason: impl Into<String>) -> VocabError {
    VocabError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// Converts an input ContentPart to a core part. Text over 100 KB and metadata over
/// 8 KB are refused (never truncated), and so are metadata keys under
/// [`RESERVED_META_PREFIX`]; a part needs exactly one of `text` and `file`.
/// `index` names the part in errors (`message[i]`).
pub fn part_from_cas(index: usize, p: &ContentPart) -> Result<Part, VocabError> {
    let field = |f: &str| format!("message[{index}].{f}");
    let mut metadata: Metadata = p.metadata.clone().unwrap_or_default();
    let meta_size = if metadata.is_empty() {
        0
    } else {
        serde_json::to_vec(&metadata).map_or(usize::MAX, |b| b.len())
    };
    if meta_size > MAX_PART_METADATA_BYTES {
        return Err(invalid(
            field("metadata"),
            format!(
                "metadata is {meta_size} bytes serialised; at most {MAX_PART_METADATA_BYTES} are allowed (metadata carries small annotations, never payloads)"
            ),
        ));
    }
    if let Some(key) = metadata
        .keys()
        .find(|k| k.starts_with(RESERVED_META_PREFIX))
    {
        return Err(invalid(
            field("metadata"),
            format!(
                "the key {key:?} is reserved: keys under {RESERVED_META_PREFIX:?} carry what taskwire itself records about a part"
            ),
        ));
    }
    if let Some(m) = &p.mime_type {
        if m.is_empty() || m.len() > 255 {
            return Err(invalid(field("mimeType"), "must be a media type"));
        }
    }
    match (&p.text, &p.file) {
        (Some(text), None) => {
            if text.len() > MAX_INLINE_TEXT_BYTES {
                return Err(invalid(
                    field("text"),
                    format!(
                        "inline text is {} bytes; at most {MAX_INLINE_TEXT_BYTES} are allowed: send larger text as a file reference",
                        text.len()
                    ),
                ));
            }
            if p.size_bytes.is_some() {
                return Err(invalid(field("sizeBytes"), "applies to file parts only"));
            }
            let mut part = Part::text(text.clone());
            part.media_type = Some(p.mime_type.clone().unwrap_or_else(|| "text/plain".into()));
            part.metadata = metadata;
            Ok(part)
        }
        (None, Some(file)) => {
            if file.is_empty() {
                return Err(invalid(field("file"), "must not be empty"));
            }
            let Some(mime) = &p.mime_type else {
                return Err(invalid(field("mimeType"), "a file part needs a mimeType"));
            };
            if let Some(n) = p.size_bytes {
                metadata.insert(META_SIZE_BYTES.into(), Value::from(n));
            }
            let mut part = Part::url(file.clone());
            part.media_type = Some(mime.clone());
            part.metadata = metadata;
            Ok(part)
        }
        (Some(_), Some(_)) => Err(invalid(
            field("text"),
            "a part carries either text or file, not both",
        )),
        (None, None) => Err(invalid(field("text"), "a part needs text or file")),
    }
}

/// Converts an input `message` (a list of ContentParts) to core parts.
pub fn parts_from_cas(parts: &[ContentPart]) -> Result<Vec<Part>, VocabError> {
    if parts.is_empty() {
        return Err(invalid(
            "message".into(),
            "a message needs at least one part",
        ));
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| part_from_cas(i, p))
        .collect()
}

/// Converts a core part to a ContentPart, with what the conversion loses.
pub fn part_to_cas(p: &Part) -> (ContentPart, Option<Loss>) {
    let mut metadata = p.metadata.clone();
    let mut loss = None;
    if let Some(f) = &p.filename {
        metadata.insert(META_FILENAME.into(), Value::from(f.clone()));
        loss = Some(LOSS_FILENAME);
    }
    let size_bytes = metadata.remove(META_SIZE_BYTES).and_then(|v| v.as_u64());
    let mut out = ContentPart {
        mime_type: p.media_type.clone(),
        text: None,
        file: None,
        size_bytes: None,
        metadata: None,
    };
    match &p.content {
        PartContent::Text { text } => {
            out.mime_type.get_or_insert_with(|| "text/plain".into());
            out.text = Some(text.clone());
        }
        PartContent::Url { url } => {
            out.mime_type
                .get_or_insert_with(|| "application/octet-stream".into());
            out.file = Some(url.clone());
            out.size_bytes = size_bytes;
            // A file reference that came in through CAS goes back out unchanged.
            if !url.contains("://") || size_bytes.is_none() {
                loss = loss.or(Some(LOSS_URL_AS_FILE));
            }
        }
        PartContent::Raw { bytes } => {
            use base64::Engine;
            let mime = out
                .mime_type
                .get_or_insert_with(|| "application/octet-stream".into())
                .clone();
            out.file = Some(format!(
                "data:{mime};base64,{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            ));
            out.size_bytes = Some(bytes.len() as u64);
            loss = Some(LOSS_RAW_BYTES);
        }
        PartContent::Data { data } => {
            out.mime_type = Some("application/json".into());
            out.text = Some(data.to_string());
            loss = Some(LOSS_DATA_AS_TEXT);
        }
    }
    if !metadata.is_empty() {
        out.metadata = Some(metadata);
    }
    (out, loss)
}

/// Converts core parts to ContentParts (losses as in [`part_to_cas`]).
pub fn parts_to_cas(parts: &[Part]) -> Vec<ContentPart> {
    parts.iter().map(|p| part_to_cas(p).0).collect()
}

/// The part metadata entry naming the artifact an output message was built from.
/// CAS has no artifacts: each becomes an output message ([`LOSS_ARTIFACT`]).
pub fn artifact_marker(id: &str, name: Option<&str>) -> (Value, Loss) {
    let mut m = Map::new();
    m.insert("id".into(), Value::from(id));
    if let Some(n) = name {
        m.insert("name".into(), Value::from(n));
    }
    (Value::Object(m), LOSS_ARTIFACT)
}

/// An error of the CAS surface: HTTP status and the stable code in the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireError {
    /// The HTTP status.
    pub status: u16,
    /// The machine-readable code.
    pub code: &'static str,
}

/// Error code: the task does not exist or is not the caller's.
pub const ERR_NOT_FOUND: &str = "not_found";
/// Error code: a malformed request.
pub const ERR_INVALID_INPUT: &str = "invalid_input";
/// Error code: over a size limit.
pub const ERR_TOO_LARGE: &str = "too_large";
/// Error code: an input guardrail refused the input (the TaskIO error value).
pub const ERR_DENIED_BY_INPUT_GUARDRAIL: &str = "denied_by_input_guardrail";
/// Error code: the task is terminal and accepts nothing more.
pub const ERR_TASK_TERMINAL: &str = "task_terminal";
/// Error code: the command does not apply in the task's current state.
pub const ERR_CONFLICT: &str = "conflict";
/// Error code: a transient failure; retry.
pub const ERR_UNAVAILABLE: &str = "unavailable";
/// Error code: an internal failure (no details).
pub const ERR_INTERNAL: &str = "internal";
/// Error code: the caller's token does not carry the scope the operation needs.
pub const ERR_FORBIDDEN: &str = "forbidden";

/// Maps a core error to the CAS wire error.
pub fn wire_error(e: &CoreError) -> WireError {
    let (status, code) = match e {
        CoreError::NotFound => (404, ERR_NOT_FOUND),
        CoreError::InvalidInput { .. } => (400, ERR_INVALID_INPUT),
        CoreError::TooLarge { .. } => (413, ERR_TOO_LARGE),
        CoreError::DeniedByGuardrail { .. } => (403, ERR_DENIED_BY_INPUT_GUARDRAIL),
        CoreError::Terminal { .. } | CoreError::NotCancelable { .. } => (409, ERR_TASK_TERMINAL),
        CoreError::IllegalTransition { .. } | CoreError::WrongState { .. } => (409, ERR_CONFLICT),
        CoreError::Contention
        | CoreError::LeaseLost
        | CoreError::ShuttingDown
        | CoreError::Unavailable(_) => (503, ERR_UNAVAILABLE),
        CoreError::Store(_) => (500, ERR_INTERNAL),
        CoreError::Forbidden { .. } => (403, ERR_FORBIDDEN),
    };
    WireError { status, code }
}

/// Every error code of the CAS surface with its HTTP status.
pub const ERROR_CODES: [WireError; 9] = [
    WireError {
        status: 404,
        code: ERR_NOT_FOUND,
    },
    WireError {
        status: 400,
        code: ERR_INVALID_INPUT,
    },
    WireError {
        status: 413,
        code: ERR_TOO_LARGE,
    },
    WireError {
        status: 403,
        code: ERR_DENIED_BY_INPUT_GUARDRAIL,
    },
    WireError {
        status: 409,
        code: ERR_TASK_TERMINAL,
    },
    WireError {
        status: 409,
        code: ERR_CONFLICT,
    },
    WireError {
        status: 503,
        code: ERR_UNAVAILABLE,
    },
    WireError {
        status: 500,
        code: ERR_INTERNAL,
    },
    WireError {
        status: 403,
        code: ERR_FORBIDDEN,
    },
];

impl WireError {
    /// The wire error of a body code (what a client reads back).
    pub fn from_code(code: &str) -> Option<Self> {
        ERROR_CODES.into_iter().find(|w| w.code == code)
    }
}

/// Lost: retryable conditions share one code.
pub const LOSS_ERROR_UNAVAILABLE: Loss = Loss(
    "contention, a lost lease, shutdown and a store that did not answer all read unavailable (503)",
);
/// Lost: canceling a task that ended otherwise reads like writing to a terminal task.
pub const LOSS_ERROR_NOT_CANCELABLE: Loss = Loss(
    "canceling a task that ended otherwise reads task_terminal, like input to a terminal task",
);

/// Lost: an illegal transition reads like a command in the wrong state.
pub const LOSS_ERROR_CONFLICT: Loss =
    Loss("an illegal transition reads conflict (409), like a command in the wrong state");

/// What the CAS wire error of a core error loses (see [`wire_error`]).
pub fn error_loss(e: &CoreError) -> Option<Loss> {
    match e {
        CoreError::Contention
        | CoreError::LeaseLost
        | CoreError::ShuttingDown
        | CoreError::Unavailable(_) => Some(LOSS_ERROR_UNAVAILABLE),
        CoreError::NotCancelable { .. } => Some(LOSS_ERROR_NOT_CANCELABLE),
        CoreError::IllegalTransition { .. } => Some(LOSS_ERROR_CONFLICT),
        _ => None,
    }
}

/// The message of a core error that is safe to show: store failures have no
/// details; a guardrail refusal says so in words.
pub fn error_message(e: &CoreError) -> String {
    match e {
        CoreError::Store(_) => "internal error".into(),
        CoreError::Unavailable(_) => {
            "the task store did not answer; retry (a retried request is safe)".into()
        }
        CoreError::DeniedByGuardrail { reason } => {
            format!("the input was refused by an input guardrail: {reason}")
        }
        other => other.to_string(),
    }
}

/// The `error` of the output message a status change carries: the core error's
/// code once the task is terminal, nothing before.
pub fn output_error(
    to: TaskState,
    error: Option<&taskwire_core::types::TaskError>,
) -> Option<String> {
    if to.is_terminal() {
        error.map(|x| x.code.clone())
    } else {
        None
    }
}

/// Maps a translation error (a malformed ContentPart) to the CAS wire error.
pub fn vocab_wire_error(_e: &VocabError) -> WireError {
    WireError {
        status: 400,
        code: ERR_INVALID_INPUT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, Utc};
    use serde_json::json;
    use taskwire_core::types::{AuthWait, InputKind, InputRequest, Review};
    use taskwire_core::{Caller, CreateTask, MemoryStore, Message, TaskService};

    async fn task() -> Task {
        let svc = TaskService::new(std::sync::Arc::new(MemoryStore::new()), "agent");
        svc.create(
            &Caller::new("t", "alice"),
            CreateTask::new(Message::user_text("hi")),
        )
        .await
        .unwrap()
        .task
        .as_ref()
        .clone()
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    fn base() -> Task {
        rt().block_on(task())
    }

    #[test]
    fn submitted_is_processing_with_a_named_loss() {
        let t = base();
        assert_eq!(
            phase(&t),
            (Phase::Processing, Some(LOSS_SUBMITTED_AS_PROCESSING))
        );
        assert_eq!(terminal_reason(&t), (None, None));
        assert!(notifications(&t).is_empty());
        let mut w = t.clone();
        w.state = TaskState::Working;
        assert_eq!(phase(&w), (Phase::Processing, None));
    }

    #[test]
    fn input_requests_make_idle() {
        let mut t = base();
        t.state = TaskState::InputRequired;
        t.input_requests.insert(
            "k".into(),
            InputRequest {
                key: "k".into(),
                prompt: "?".into(),
                schema: json!({}),
                since: Utc::now(),
                kind: InputKind::Form,
                subject: None,
            },
        );
        assert_eq!(phase(&t).0, Phase::Idle);
        assert!(notifications(&t).is_empty());
    }

    #[test]
    fn an_interrupted_task_with_nothing_pending_is_idle() {
        let mut t = base();
        t.state = TaskState::InputRequired;
        assert_eq!(phase(&t), (Phase::Idle, None));
        assert!(notifications(&t).is_empty());
    }

    fn review(reviewer: &str) -> Review {
        Review {
            id: format!("r-{reviewer}"),
            reviewer: reviewer.into(),
            summary: "s".into(),
            since: Utc::now(),
        }
    }

    #[test]
    fn a_review_for_someone_else_is_only_processing() {
        let mut t = base();
        t.state = TaskState::InputRequired;
        t.pending_reviews.push(review("bob"));
        assert_eq!(phase(&t), (Phase::Processing, Some(LOSS_FOREIGN_REVIEW)));
        assert!(notifications(&t).is_empty());
    }

    #[test]
    fn a_review_for_the_responsible_user_is_a_notification() {
        let mut t = base();
        t.state = TaskState::InputRequired;
        t.pending_reviews.push(review("alice"));
        assert_eq!(phase(&t), (Phase::Processing, None));
        let n = notifications(&t);
        assert_eq!(n.len(), 1);
        assert_eq!(n[0].kind, NotificationKind::ReviewRequired);
        assert_eq!(n[0].provider, None);
    }

    #[test]
    fn one_auth_notification_per_provider_ordered_by_since() {
        let mut t = base();
        t.state = TaskState::AuthRequired;
        let now = Utc::now();
        t.pending_auth.push(AuthWait {
            provider: "github".into(),
            since: now,
            operations: vec!["a".into(), "b".into()],
            url: None,
        });
        t.pending_auth.push(AuthWait {
            provider: "drive".into(),
            since: now - Duration::seconds(5),
            operations: vec!["c".into()],
            url: None,
        });
        let n = notifications(&t);
        assert_eq!(n.len(), 2);
        assert_eq!(n[0].provider.as_deref(), Some("drive"));
        assert_eq!(n[1].provider.as_deref(), Some("github"));
        assert_eq!(phase(&t).0, Phase::Processing);
        let mut done = t.clone();
        done.state = TaskState::Completed;
        assert!(notifications(&done).is_empty());
    }

    #[test]
    fn terminal_reasons_and_their_losses() {
        let mut t = base();
        t.state = TaskState::Completed;
        assert_eq!(terminal_reason(&t), (Some(TerminalReason::Completed), None));
        t.state = TaskState::Failed;
        assert_eq!(
            terminal_reason(&t),
            (Some(TerminalReason::Errored), Some(LOSS_FAILED_KIND))
        );
        t.state = TaskState::Rejected;
        t.terminal_cause = Some(TerminalCause::Rejected);
        assert_eq!(
            terminal_reason(&t),
            (Some(TerminalReason::Restricted), Some(LOSS_REJECTED))
        );
        t.terminal_cause = Some(TerminalCause::Restricted);
        assert_eq!(
            terminal_reason(&t),
            (Some(TerminalReason::Restricted), None)
        );
        t.state = TaskState::Canceled;
        t.terminal_cause = Some(TerminalCause::Canceled);
        assert_eq!(
            terminal_reason(&t),
            (Some(TerminalReason::Completed), Some(LOSS_CANCELED))
        );
        t.terminal_cause = Some(TerminalCause::Expired);
        assert_eq!(
            terminal_reason(&t),
            (Some(TerminalReason::Completed), Some(LOSS_EXPIRED))
        );
        t.idle_expires_at = Some(Utc::now());
        assert_eq!(idle_expires_at(&t), None);
        assert_eq!(phase(&t).0, Phase::Terminal);
    }

    fn text_part(text: String) -> ContentPart {
        ContentPart {
            mime_type: Some("text/plain".into()),
            text: Some(text),
            file: None,
            size_bytes: None,
            metadata: None,
        }
    }

    #[test]
    fn text_round_trips_without_loss() {
        let p = part_from_cas(0, &text_part("hello".into())).unwrap();
        assert_eq!(p.as_text(), Some("hello"));
        let (back, loss) = part_to_cas(&p);
        assert_eq!(back, text_part("hello".into()));
        assert_eq!(loss, None);
    }

    #[test]
    fn file_round_trips_with_size() {
        let cp = ContentPart {
            mime_type: Some("video/mp4".into()),
            text: None,
            file: Some("task://a.mp4".into()),
            size_bytes: Some(42),
            metadata: Some(json!({"k": 1}).as_object().unwrap().clone()),
        };
        let p = part_from_cas(0, &cp).unwrap();
        let (back, loss) = part_to_cas(&p);
        assert_eq!(back, cp);
        assert_eq!(loss, None);
    }

    #[test]
    fn oversized_text_and_metadata_are_refused_not_truncated() {
        let ok = part_from_cas(0, &text_part("x".repeat(MAX_INLINE_TEXT_BYTES))).unwrap();
        assert_eq!(ok.as_text().map(str::len), Some(MAX_INLINE_TEXT_BYTES));
        let e = part_from_cas(2, &text_part("x".repeat(MAX_INLINE_TEXT_BYTES + 1))).unwrap_err();
        assert!(e.to_string().contains("message[2].text"), "{e}");
        let mut cp = text_part("x".into());
        cp.metadata = Some(
            json!({"blob": "y".repeat(MAX_PART_METADATA_BYTES)})
                .as_object()
                .unwrap()
                .clone(),
        );
        let e = part_from_cas(0, &cp).unwrap_err();
        assert!(e.to_string().contains("message[0].metadata"), "{e}");
    }

    #[test]
    fn malformed_parts_are_refused() {
        let both = ContentPart {
            file: Some("task://x".into()),
            ..text_part("x".into())
        };
        assert!(part_from_cas(0, &both).is_err());
        let neither = ContentPart {
            text: None,
            ..text_part("x".into())
        };
        assert!(part_from_cas(0, &neither).is_err());
        let file_without_mime = ContentPart {
            mime_type: None,
            text: None,
            file: Some("task://x".into()),
            size_bytes: None,
            metadata: None,
        };
        assert!(part_from_cas(0, &file_without_mime).is_err());
        assert!(parts_from_cas(&[]).is_err());
    }

    #[test]
    fn lossy_part_edges_are_named() {
        let (raw, loss) = part_to_cas(&Part::raw(vec![1, 2, 3], "image/png"));
        assert_eq!(loss, Some(LOSS_RAW_BYTES));
        assert_eq!(raw.file.as_deref(), Some("data:image/png;base64,AQID"));
        assert_eq!(raw.size_bytes, Some(3));

        let (url, loss) = part_to_cas(&Part::url("https://example.invalid/x"));
        assert_eq!(loss, Some(LOSS_URL_AS_FILE));
        assert_eq!(url.file.as_deref(), Some("https://example.invalid/x"));

        let (data, loss) = part_to_cas(&Part::data(json!({"a": 1})));
        assert_eq!(loss, Some(LOSS_DATA_AS_TEXT));
        assert_eq!(data.text.as_deref(), Some("{\"a\":1}"));
        assert_eq!(data.mime_type.as_deref(), Some("application/json"));

        let mut named = Part::text("t");
        named.filename = Some("a.txt".into());
        let (p, loss) = part_to_cas(&named);
        assert_eq!(loss, Some(LOSS_FILENAME));
        assert_eq!(p.metadata.unwrap()[META_FILENAME], json!("a.txt"));
    }

    #[test]
    fn artifacts_become_outputs_with_a_marker() {
        let (v, loss) = artifact_marker("echo", Some("echo"));
        assert_eq!(v, json!({"id": "echo", "name": "echo"}));
        assert_eq!(loss, LOSS_ARTIFACT);
        assert_eq!(artifact_marker("x", None).0, json!({"id": "x"}));
    }

    #[test]
    fn errors_map_to_stable_codes() {
        let g = wire_error(&CoreError::DeniedByGuardrail { reason: "x".into() });
        assert_eq!((g.status, g.code), (403, "denied_by_input_guardrail"));
        assert_eq!(wire_error(&CoreError::NotFound).status, 404);
        let t = wire_error(&CoreError::Terminal {
            state: TaskState::Completed,
        });
        assert_eq!((t.status, t.code), (409, ERR_TASK_TERMINAL));
        let l = wire_error(&CoreError::TooLarge {
            what: "m".into(),
            size: 2,
            limit: 1,
        });
        assert_eq!(l.status, 413);
    }
}
