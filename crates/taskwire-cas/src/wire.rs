//! CAS wire types (serde only): the status object, the messages list, reviews,
//! and the error body. Conversion from core types lives in `view` and in
//! `taskwire_vocab::cas`.

use chrono::SecondsFormat;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use taskwire_core::Timestamp;
use taskwire_vocab::cas::{ContentPart, NotificationKind, Phase, TerminalReason};

/// A UTC ISO 8601 timestamp with millisecond precision, as CAS shows it.
pub fn iso(t: Timestamp) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
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
