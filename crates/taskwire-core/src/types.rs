//! Domain types shared by every adapter: tasks, messages, parts, artifacts and the
//! pending interactions (input requests, provider authorisations, reviews).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::TaskId;
pub use crate::permission::{Permission, Permissions};
pub use crate::state::TaskState;

/// A point in time, UTC.
pub type Timestamp = DateTime<Utc>;

/// Free-form JSON metadata.
pub type Metadata = Map<String, Value>;

/// Who is calling: an authenticated principal within a tenant, and what the
/// credential it presented lets it do.
///
/// Two callers are equal when their tenant and principal are: the permissions
/// are what one request may do, not who makes it (a task stays its owner's
/// whichever scopes the owner's next token carries).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Caller {
    /// The tenant the principal belongs to; tasks never cross tenants.
    pub tenant: String,
    /// The principal (user or service) that makes the request.
    pub principal: String,
    /// What this request may do ([`Permissions::ALL`] unless an authenticator
    /// granted less). Not stored: a caller read back from the store has all.
    #[serde(skip, default)]
    pub permissions: Permissions,
}

impl PartialEq for Caller {
    fn eq(&self, other: &Self) -> bool {
        self.tenant == other.tenant && self.principal == other.principal
    }
}

impl Eq for Caller {}

impl std::hash::Hash for Caller {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.tenant.hash(state);
        self.principal.hash(state);
    }
}

impl Caller {
    /// A caller from a tenant and a principal, with every permission.
    pub fn new(tenant: impl Into<String>, principal: impl Into<String>) -> Self {
        Self {
            tenant: tenant.into(),
            principal: principal.into(),
            permissions: Permissions::ALL,
        }
    }

    /// The single local caller used when no authentication is configured.
    pub fn local() -> Self {
        Self::new("default", "local")
    }

    /// This caller with these permissions.
    pub fn with_permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = permissions;
        self
    }

    /// `Ok` if this caller may do what needs `needed`, else
    /// [`CoreError::Forbidden`](crate::CoreError::Forbidden).
    pub fn require(&self, needed: Permission) -> crate::error::Result<()> {
        if self.permissions.allows(needed) {
            Ok(())
        } else {
            Err(crate::error::CoreError::Forbidden { needed })
        }
    }
}

/// Who sent a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The caller (the user or a client agent).
    User,
    /// The agent.
    Agent,
}

/// The content of a part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum PartContent {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Raw bytes (base64 in JSON).
    Raw {
        /// The bytes.
        #[serde(with = "b64")]
        bytes: Vec<u8>,
    },
    /// A reference to content by URL.
    Url {
        /// The URL.
        url: String,
    },
    /// Structured JSON data.
    Data {
        /// The value.
        data: Value,
    },
}

/// One piece of a message or artifact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// What the part holds.
    #[serde(flatten)]
    pub content: PartContent,
    /// The media type (for example `text/plain`, `image/png`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// A file name, for file-like parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Part metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Metadata,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::from_content(PartContent::Text { text: text.into() })
    }

    /// A structured data part.
    pub fn data(data: Value) -> Self {
        Self::from_content(PartContent::Data { data })
    }

    /// A raw bytes part.
    pub fn raw(bytes: Vec<u8>, media_type: impl Into<String>) -> Self {
        let mut p = Self::from_content(PartContent::Raw { bytes });
        p.media_type = Some(media_type.into());
        p
    }

    /// A URL part.
    pub fn url(url: impl Into<String>) -> Self {
        Self::from_content(PartContent::Url { url: url.into() })
    }

    /// A part with no media type, filename or metadata.
    pub fn from_content(content: PartContent) -> Self {
        Self {
            content,
            media_type: None,
            filename: None,
            metadata: Map::new(),
        }
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text { text } => Some(text),
            _ => None,
        }
    }

    /// Approximate size in bytes, used for limits.
    pub fn approx_size(&self) -> usize {
        let body = match &self.content {
            PartContent::Text { text } => text.len(),
            PartContent::Raw { bytes } => bytes.len(),
            PartContent::Url { url } => url.len(),
            PartContent::Data { data } => json_size(data),
        };
        body + self.media_type.as_ref().map_or(0, String::len)
            + self.filename.as_ref().map_or(0, String::len)
            + metadata_size(&self.metadata)
    }
}

/// Serialized size of a JSON value in bytes.
pub fn json_size(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)
}

/// Serialized size of a metadata map in bytes (0 when empty).
pub fn metadata_size(m: &Metadata) -> usize {
    if m.is_empty() {
        0
    } else {
        serde_json::to_vec(m).map(|b| b.len()).unwrap_or(usize::MAX)
    }
}

mod b64 {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

/// A message: one turn of conversation from the user or the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Sender-chosen id; the create idempotency key for the first message of a task.
    pub message_id: String,
    /// Who sent it.
    pub role: Role,
    /// The content.
    pub parts: Vec<Part>,
    /// Message metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Metadata,
    /// When the task received it (inputs) or the agent produced it (outputs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received_at: Option<Timestamp>,
    /// When the agent saw it (inputs) or it was committed (outputs); `None` for input
    /// queued for a later turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed_at: Option<Timestamp>,
}

impl Message {
    /// A message with a random id.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self {
            message_id: crate::ids::random_id(),
            role,
            parts,
            metadata: Map::new(),
            received_at: None,
            committed_at: None,
        }
    }

    /// A user message with one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![Part::text(text)])
    }

    /// An agent message with one text part.
    pub fn agent_text(text: impl Into<String>) -> Self {
        Self::new(Role::Agent, vec![Part::text(text)])
    }

    /// The concatenated text of all text parts, separated by newlines.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for t in self.parts.iter().filter_map(Part::as_text) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(t);
        }
        out
    }

    /// The first text part, if any.
    pub fn first_text(&self) -> Option<&str> {
        self.parts.iter().find_map(Part::as_text)
    }
}

/// An output of the task, possibly built from several chunks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Agent-chosen id, unique within the task.
    pub artifact_id: String,
    /// A name (for example `echo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The content.
    pub parts: Vec<Part>,
    /// Artifact metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Metadata,
    /// False while more chunks are expected.
    #[serde(default = "yes")]
    pub complete: bool,
}

fn yes() -> bool {
    true
}

impl Artifact {
    /// The concatenated text of the artifact's text parts.
    pub fn text(&self) -> String {
        self.parts.iter().filter_map(Part::as_text).collect()
    }
}

/// A keyed request for input, with the JSON schema the answer must satisfy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequest {
    /// The key answers are given under; unique within the task.
    pub key: String,
    /// What is asked, for a person.
    pub prompt: String,
    /// JSON schema of the expected answer (an object schema).
    pub schema: Value,
    /// When it was raised.
    pub since: Timestamp,
    /// What kind of interaction this is.
    #[serde(default)]
    pub kind: InputKind,
    /// For a review or an authorisation: the id of the review or the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// The kinds of interaction an input request stands for. Protocols that know
/// only forms show every kind as a form: its prompt, and the request's schema
/// for the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", rename_all_fields = "camelCase")]
pub enum InputKind {
    /// A form to fill in.
    #[default]
    Form,
    /// A completion from the caller's own model (MCP `sampling/createMessage`):
    /// the prompt is the user message; the answer's content is the model's
    /// reply (`{role, content: {type, text}, model, stopReason}`).
    Sampling {
        /// Most tokens the reply may take.
        max_tokens: u32,
    },
    /// The caller's roots (MCP `roots/list`); the answer's content is
    /// `{roots: [{uri, name?}]}`.
    Roots,
}

impl InputKind {
    /// JSON schema of the answer to a sampling request.
    pub fn sampling_answer_schema() -> Value {
        serde_json::json!({"type": "object", "properties": {
            "role": {"type": "string"},
            "content": {"type": "object", "properties": {
                "type": {"type": "string"}, "text": {"type": "string"}}},
            "model": {"type": "string"},
            "stopReason": {"type": "string"}},
            "required": ["content"]})
    }

    /// JSON schema of the answer to a roots request.
    pub fn roots_answer_schema() -> Value {
        serde_json::json!({"type": "object", "properties": {
            "roots": {"type": "array", "items": {"type": "object", "properties": {
                "uri": {"type": "string"}, "name": {"type": "string"}},
                "required": ["uri"]}}},
            "required": ["roots"]})
    }
}

/// How someone answered an input request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputAction {
    /// Answered with content.
    Accept,
    /// Refused to answer.
    Decline,
    /// Dismissed without deciding.
    Cancel,
}

/// An answer to one input request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputResponse {
    /// What the responder did.
    pub action: InputAction,
    /// The content, for `accept`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
}

impl InputResponse {
    /// An accepted answer carrying `content`.
    pub fn accept(content: Value) -> Self {
        Self {
            action: InputAction::Accept,
            content: Some(content),
        }
    }
}

/// A provider authorisation the task waits for. One per provider, however many
/// operations wait on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthWait {
    /// The provider to connect (for example `github`).
    pub provider: String,
    /// When the first operation started waiting.
    pub since: Timestamp,
    /// The operations waiting on it.
    pub operations: Vec<String>,
    /// Where the user completes the authorisation, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A review step waiting for a reviewer's decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// Id of the review, unique within the task.
    pub id: String,
    /// The principal who must decide.
    pub reviewer: String,
    /// What is to be reviewed.
    pub summary: String,
    /// When it was raised.
    pub since: Timestamp,
}

/// A reviewer's decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewDecision {
    /// Go ahead.
    Approve,
    /// Stop: the task ends rejected.
    Reject,
}

impl ReviewDecision {
    /// The lowercase name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewDecision::Approve => "approve",
            ReviewDecision::Reject => "reject",
        }
    }
}

/// Why a task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TerminalCause {
    /// The agent completed the work.
    Completed,
    /// The agent reported a failure of the work (an agent fault, with its message).
    AgentFailed,
    /// An internal or protocol error (the agent crashed, retries ran out).
    Internal,
    /// The agent or a reviewer refused the work.
    Rejected,
    /// A guardrail locked the task.
    Restricted,
    /// Someone canceled it.
    Canceled,
    /// The inactivity lifespan ran out.
    Expired,
}

impl TerminalCause {
    /// The kebab-case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalCause::Completed => "completed",
            TerminalCause::AgentFailed => "agent-failed",
            TerminalCause::Internal => "internal",
            TerminalCause::Rejected => "rejected",
            TerminalCause::Restricted => "restricted",
            TerminalCause::Canceled => "canceled",
            TerminalCause::Expired => "expired",
        }
    }
}

/// An error attached to a failed or rejected task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskError {
    /// A stable, machine-readable code (`agent_failed`, `internal`, `rejected`, …).
    pub code: String,
    /// A message safe to show to the caller.
    pub message: String,
}

/// A task: the stateful unit of work every protocol exposes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// 128-bit random id.
    pub id: TaskId,
    /// The conversation the task belongs to.
    pub context_id: String,
    /// Tenant; tasks are invisible across tenants.
    pub tenant: String,
    /// The principal that created the task; only they may read or drive it.
    pub owner: String,
    /// The human responsible for the task (the owner, or the parent task's responsible user).
    pub responsible_user: String,
    /// The task on whose behalf this one was created, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_task: Option<TaskId>,
    /// Name of the agent processing it.
    pub agent: String,
    /// Lifecycle state.
    pub state: TaskState,
    /// The agent's latest status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<Message>,
    /// When the state last changed.
    pub state_changed_at: Timestamp,
    /// Why the task ended (terminal tasks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_cause: Option<TerminalCause>,
    /// The error of a failed or rejected task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<TaskError>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Time of the last change of any kind.
    pub updated_at: Timestamp,
    /// Incremented by every committed change; the compare-and-set token.
    pub version: u64,
    /// Sequence number of the last event in the task's event log.
    pub last_seq: u64,
    /// Inputs and agent messages in commit order (queued inputs last, uncommitted).
    pub history: Vec<Message>,
    /// Outputs.
    pub artifacts: Vec<Artifact>,
    /// Task metadata given at creation.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Metadata,
    /// The agent's shared state (AG-UI state), if it keeps one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_state: Option<Value>,
    /// Open input requests by key.
    #[serde(default)]
    pub input_requests: BTreeMap<String, InputRequest>,
    /// Stored answers by key.
    #[serde(default)]
    pub input_answers: BTreeMap<String, InputResponse>,
    /// Keys that have been answered (later answers to them are ignored).
    #[serde(default)]
    pub answered_keys: BTreeSet<String>,
    /// Keys that were superseded before being answered (answers to them are ignored).
    #[serde(default)]
    pub superseded_keys: BTreeSet<String>,
    /// Provider authorisations the task waits for.
    #[serde(default)]
    pub pending_auth: Vec<AuthWait>,
    /// Providers granted so far.
    #[serde(default)]
    pub granted_providers: BTreeSet<String>,
    /// Reviews waiting for a decision.
    #[serde(default)]
    pub pending_reviews: Vec<Review>,
    /// Decisions taken, by review id.
    #[serde(default)]
    pub review_decisions: BTreeMap<String, ReviewDecision>,
    /// Number of turns started so far.
    pub turns: u32,
    /// True while a turn has started and not ended (a re-run after a lost lease
    /// replays the same input).
    #[serde(default)]
    pub turn_open: bool,
    /// Ids of the input messages handed to the current (or last) turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_input: Vec<String>,
    /// How long the task and its event log are kept once terminal, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// When a terminal task is deleted (terminal time plus TTL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    /// Inactivity lifespan in milliseconds, if one applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_lifespan_ms: Option<u64>,
    /// When the task ends for inactivity if nothing happens (null when terminal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_expires_at: Option<Timestamp>,
}

impl Task {
    /// True if the task belongs to the caller.
    pub fn is_visible_to(&self, caller: &Caller) -> bool {
        self.tenant == caller.tenant && self.owner == caller.principal
    }

    /// Input messages the agent has not seen yet, in arrival order.
    pub fn queued_input(&self) -> impl Iterator<Item = &Message> {
        self.history
            .iter()
            .filter(|m| m.role == Role::User && m.committed_at.is_none())
    }

    /// True if any input waits for a later turn.
    pub fn has_queued_input(&self) -> bool {
        self.queued_input().next().is_some()
    }

    /// The first message of the task.
    pub fn first_message(&self) -> Option<&Message> {
        self.history.first()
    }

    /// An artifact by id.
    pub fn artifact(&self, id: &str) -> Option<&Artifact> {
        self.artifacts.iter().find(|a| a.artifact_id == id)
    }

    /// Reviews whose reviewer is the task's responsible user.
    pub fn reviews_for_responsible_user(&self) -> impl Iterator<Item = &Review> {
        self.pending_reviews
            .iter()
            .filter(|r| r.reviewer == self.responsible_user)
    }

    /// The state an interrupted task should be in, given what it waits for.
    ///
    /// Open input requests or any pending review make it input-required (a review by
    /// someone other than the responsible user is still a wait, and only a protocol
    /// view can tell the two apart); otherwise pending authorisations make it
    /// auth-required; with nothing pending it returns `None`.
    pub fn waiting_state(&self) -> Option<TaskState> {
        if !self.input_requests.is_empty() || !self.pending_reviews.is_empty() {
            Some(TaskState::InputRequired)
        } else if !self.pending_auth.is_empty() {
            Some(TaskState::AuthRequired)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::StepPhase;

    fn serde_name<T: Serialize>(v: T) -> String {
        match serde_json::to_value(v) {
            Ok(serde_json::Value::String(s)) => s,
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn the_names_are_the_serialized_names() {
        for s in TaskState::ALL {
            assert_eq!(s.as_str(), serde_name(s));
        }
        use TerminalCause as C;
        for c in [
            C::Completed,
            C::AgentFailed,
            C::Internal,
            C::Rejected,
            C::Restricted,
            C::Canceled,
            C::Expired,
        ] {
            assert_eq!(c.as_str(), serde_name(c));
        }
        for d in [ReviewDecision::Approve, ReviewDecision::Reject] {
            assert_eq!(d.as_str(), serde_name(d));
        }
        for p in [StepPhase::Started, StepPhase::Finished] {
            assert_eq!(p.as_str(), serde_name(p));
        }
    }
}
