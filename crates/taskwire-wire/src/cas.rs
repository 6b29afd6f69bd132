//! The Common Agent Specification task status on the wire (serde types): the
//! status object, its phase, terminal reason and notifications, the messages
//! list and its content parts, reviews, and the error body. The CAS adapter
//! sends them (built from core types by `taskwire_vocab::cas` and the adapter's
//! view), the client reads them, the schema generator describes them.
//!
//! A client reads what a newer server may send: a phase, terminal reason,
//! notification kind or entry type this revision does not name is `Unknown`
//! (and a terminal reason `abandoned`, from a later revision, is `Abandoned`);
//! no server of this workspace sends those, and the schemas leave them out.

use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A UTC ISO 8601 timestamp with millisecond precision, as CAS shows it.
pub fn iso(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The coarse status of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Waiting for the responsible user's next input.
    Idle,
    /// Busy, or waiting on anything that is not the responsible user's input.
    Processing,
    /// Finished; never mutated again.
    Terminal,
    /// A phase this revision does not name (read from a newer server).
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Unknown,
}

impl Phase {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Processing => "processing",
            Phase::Terminal => "terminal",
            Phase::Unknown => "unknown",
        }
    }
}

/// Why a terminal task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum TerminalReason {
    /// Finished by an explicit action.
    Completed,
    /// Halted on an unrecoverable error.
    Errored,
    /// Locked by a guardrail, middleware or reviewer.
    Restricted,
    /// The idle lifespan ran out while waiting on a person (a later CAS
    /// revision; read, never sent by this workspace).
    #[cfg_attr(feature = "schema", schemars(skip))]
    Abandoned,
    /// A reason this revision does not name (read from a newer server).
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Unknown,
}

impl TerminalReason {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalReason::Completed => "completed",
            TerminalReason::Errored => "errored",
            TerminalReason::Restricted => "restricted",
            TerminalReason::Abandoned => "abandoned",
            TerminalReason::Unknown => "unknown",
        }
    }
}

/// The two kinds of notification; nothing else is ever a notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// The responsible user must authorise a provider.
    UserAuthRequired,
    /// The responsible user must decide a review.
    ReviewRequired,
    /// A kind this revision does not name (read from a newer server).
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Unknown,
}

impl NotificationKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::UserAuthRequired => "user_auth_required",
            NotificationKind::ReviewRequired => "review_required",
            NotificationKind::Unknown => "unknown",
        }
    }
}

/// A CAS ContentPart: inline `text` or a `file` reference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(extend("oneOf" = [{"required": ["text"]}, {"required": ["file"]}]))
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContentPart {
    /// The media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Inline text (at most 100 KB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A file reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Size of the referenced file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// Small annotations (at most 8 KB serialised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// The task status object: identity plus a coarse status.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatusObject {
    /// Cryptographically random task id (128 bits, 32 hex digits).
    pub id: String,
    /// The agent processing the task.
    pub agent: String,
    /// The human responsible for the task.
    pub responsible_user: String,
    /// Creation time (UTC ISO 8601).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub created_at: String,
    /// The status.
    pub status: Status,
}

impl StatusObject {
    /// Whether the task is terminal.
    pub fn is_terminal(&self) -> bool {
        self.status.phase == Phase::Terminal
    }
}

/// The `status` member of the status object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Status {
    /// `idle`, `processing` or `terminal`.
    pub phase: Phase,
    /// Why the task ended; null unless terminal.
    pub terminal_reason: Option<TerminalReason>,
    /// Opaque change cursor; compare for inequality only.
    pub revision: String,
    /// Outstanding calls to action for the responsible user, ordered by `since`.
    pub notifications: Vec<NotificationWire>,
    /// When the runtime ends the task for inactivity; null when no lifespan applies or terminal.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub idle_expires_at: Option<String>,
}

/// One notification on the wire.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NotificationWire {
    /// `user_auth_required` or `review_required`.
    pub kind: NotificationKind,
    /// When it was raised (UTC ISO 8601).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub since: String,
    /// The provider to connect (`user_auth_required` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// Whether a message entry is an input or an output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum IoType {
    /// Sent by the responsible user.
    Input,
    /// Produced by the agent.
    Output,
    /// A type this revision does not name (read from a newer server).
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Unknown,
}

/// One entry of `GET /cas/tasks/{id}/messages`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MessageEntry {
    /// Input or output.
    #[serde(rename = "type")]
    pub io: IoType,
    /// The content.
    pub message: Vec<ContentPart>,
    /// Inputs only: when the runtime took delivery of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub received_at: Option<String>,
    /// When the agent was shown it (inputs) or it was produced (outputs); absent on
    /// an input the agent has not seen yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub committed_at: Option<String>,
    /// Why this turn was not taken as usual (the core's error code on a failed or
    /// refused task's last output).
    pub error: Option<String>,
    /// Inputs: the parameter keys sent with the message.
    #[serde(flatten)]
    pub parameters: Map<String, Value>,
}

impl MessageEntry {
    /// The text of all parts with text, joined with newlines.
    pub fn text(&self) -> String {
        self.message
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A review addressed to the caller (`GET /cas/reviews`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReviewEntry {
    /// The task.
    pub task_id: String,
    /// The review id, unique within the task.
    pub review_id: String,
    /// What is to be decided.
    pub summary: String,
    /// When it was requested.
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub since: String,
    /// The agent.
    pub agent: String,
    /// The task's responsible user.
    pub responsible_user: String,
}

/// The answer of `GET /cas/reviews`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReviewList {
    /// Reviews addressed to the caller.
    pub reviews: Vec<ReviewEntry>,
    /// Pass as `?cursor=` to read the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A review decision (`POST /cas/reviews/{task_id}/{review_id}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Continue.
    Approve,
    /// Refuse: the task ends `restricted`.
    Reject,
}

/// Body of a review decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// The decision.
    pub decision: Decision,
}

/// Body of a host lifecycle command (optional).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostBody {
    /// Why, for the record.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The error body every CAS endpoint answers with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// Code and message of an error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorDetail {
    /// Stable, machine-readable code (`denied_by_input_guardrail`, `not_found`, …).
    pub code: String,
    /// A message safe to show.
    pub message: String,
}
