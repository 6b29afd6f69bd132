// AG-UI 1.0 wire types (serde only): the events a run streams, the messages they
// carry and the `RunAgentInput` a client posts.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Event type names, as typed constants.
pub mod event_type {
    /// Opens a run.
    pub const RUN_STARTED: &str = "RUN_STARTED";
    /// Closes a run that did not fail.
    pub const RUN_FINISHED: &str = "RUN_FINISHED";
    /// Ends a run that failed.
    pub const RUN_ERROR: &str = "RUN_ERROR";
    /// Opens a step.
    pub const STEP_STARTED: &str = "STEP_STARTED";
    /// Closes a step.
    pub const STEP_FINISHED: &str = "STEP_FINISHED";
    /// Opens a streamed text message.
    pub const TEXT_MESSAGE_START: &str = "TEXT_MESSAGE_START";
    /// Appends to a streamed text message.
    pub const TEXT_MESSAGE_CONTENT: &str = "TEXT_MESSAGE_CONTENT";
    /// Closes a streamed text message.
    pub const TEXT_MESSAGE_END: &str = "TEXT_MESSAGE_END";
    /// Opens a tool call.
    pub const TOOL_CALL_START: &str = "TOOL_CALL_START";
    /// Appends tool call arguments.
    pub const TOOL_CALL_ARGS: &str = "TOOL_CALL_ARGS";
    /// Closes a tool call.
    pub const TOOL_CALL_END: &str = "TOOL_CALL_END";
    /// A tool result.
    pub const TOOL_CALL_RESULT: &str = "TOOL_CALL_RESULT";
    /// Opens a reasoning span.
    pub const REASONING_START: &str = "REASONING_START";
    /// Closes a reasoning span.
    pub const REASONING_END: &str = "REASONING_END";
    /// Opens a reasoning message.
    pub const REASONING_MESSAGE_START: &str = "REASONING_MESSAGE_START";
    /// Appends to a reasoning message.
    pub const REASONING_MESSAGE_CONTENT: &str = "REASONING_MESSAGE_CONTENT";
    /// Closes a reasoning message.
    pub const REASONING_MESSAGE_END: &str = "REASONING_MESSAGE_END";
    /// Replaces the state.
    pub const STATE_SNAPSHOT: &str = "STATE_SNAPSHOT";
    /// Patches the state.
    pub const STATE_DELTA: &str = "STATE_DELTA";
    /// Restates the messages.
    pub const MESSAGES_SNAPSHOT: &str = "MESSAGES_SNAPSHOT";
    /// Sets an activity message.
    pub const ACTIVITY_SNAPSHOT: &str = "ACTIVITY_SNAPSHOT";
    /// Patches an activity message.
    pub const ACTIVITY_DELTA: &str = "ACTIVITY_DELTA";
    /// A provider-native event.
    pub const RAW: &str = "RAW";
    /// An application event.
    pub const CUSTOM: &str = "CUSTOM";
}

/// The `CUSTOM` events this adapter emits for core events that have no AG-UI
/// counterpart (so that nothing in the log is silently dropped): their names,
/// and [`Custom`](custom::Custom), their typed values.
pub mod custom {
    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    /// The task was created (`value`: `{taskId, contextId}`).
    pub const TASK_CREATED: &str = "taskwire:task_created";
    /// A status change that neither ends nor interrupts the run (`value`: `{from, to}`).
    pub const STATUS: &str = "taskwire:status";
    /// User input was received (`value`: `{messageId, queued}`); the client holds it.
    pub const INPUT_RECEIVED: &str = "taskwire:input_received";
    /// Queued input was handed to the agent (`value`: `{messageIds}`).
    pub const INPUT_COMMITTED: &str = "taskwire:input_committed";
    /// A turn started (`value`: `{turn}`).
    pub const TURN_STARTED: &str = "taskwire:turn_started";
    /// The agent asked for input (`value`: `{interruptIds}`).
    pub const INPUT_REQUESTED: &str = "taskwire:input_requested";
    /// Answers were stored (`value`: `{interruptIds}`).
    pub const INPUT_ANSWERED: &str = "taskwire:input_answered";
    /// Open requests were superseded (`value`: `{interruptIds}`).
    pub const INPUT_SUPERSEDED: &str = "taskwire:input_superseded";
    /// An authorisation is required (`value`: `{interruptId, provider, url?}`).
    pub const AUTH_REQUIRED: &str = "taskwire:auth_required";
    /// An authorisation was granted (`value`: `{interruptId, provider}`).
    pub const AUTH_GRANTED: &str = "taskwire:auth_granted";
    /// A review was requested (`value`: `{interruptId, reviewer, summary}`).
    pub const REVIEW_REQUESTED: &str = "taskwire:review_requested";
    /// A review was decided (`value`: `{interruptId, decision, by}`).
    pub const REVIEW_DECIDED: &str = "taskwire:review_decided";
    /// A step event that AG-UI's balance rules cannot carry (a start of an open
    /// step, a finish of a step that is not open) (`value`: `{stepName, phase}`).
    pub const STEP_UNBALANCED: &str = "taskwire:step";

    /// A taskwire `CUSTOM` event: its `name` and typed `value`. States, causes,
    /// decisions and phases are the core's kebab-case or lowercase names
    /// (`input-required`, `agent-failed`, `approve`, `started`).
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
    #[serde(tag = "name", content = "value", rename_all_fields = "camelCase")]
    #[non_exhaustive]
    pub enum Custom {
        /// [`TASK_CREATED`].
        #[serde(rename = "taskwire:task_created")]
        TaskCreated {
            /// The task.
            task_id: String,
            /// Its context.
            context_id: String,
        },
        /// [`STATUS`].
        #[serde(rename = "taskwire:status")]
        Status {
            /// The state before.
            from: String,
            /// The state after.
            to: String,
            /// Why a task ended.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            cause: Option<String>,
            /// The status message's text.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            message: Option<String>,
        },
        /// [`INPUT_RECEIVED`].
        #[serde(rename = "taskwire:input_received")]
        InputReceived {
            /// The message.
            message_id: String,
            /// Whether it waits for the next turn.
            queued: bool,
        },
        /// [`INPUT_COMMITTED`].
        #[serde(rename = "taskwire:input_committed")]
        InputCommitted {
            /// The messages handed to the agent.
            message_ids: Vec<String>,
        },
        /// [`TURN_STARTED`].
        #[serde(rename = "taskwire:turn_started")]
        TurnStarted {
            /// The turn's number.
            turn: u32,
        },
        /// [`INPUT_REQUESTED`].
        #[serde(rename = "taskwire:input_requested")]
        InputRequested {
            /// The interrupts of the requests.
            interrupt_ids: Vec<String>,
        },
        /// [`INPUT_ANSWERED`].
        #[serde(rename = "taskwire:input_answered")]
        InputAnswered {
            /// The interrupts answered.
            interrupt_ids: Vec<String>,
        },
        /// [`INPUT_SUPERSEDED`].
        #[serde(rename = "taskwire:input_superseded")]
        InputSuperseded {
            /// The interrupts superseded.
            interrupt_ids: Vec<String>,
        },
        /// [`AUTH_REQUIRED`].
        #[serde(rename = "taskwire:auth_required")]
        AuthRequired {
            /// The interrupt.
            interrupt_id: String,
            /// The provider.
            provider: String,
            /// Where to authorise.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            url: Option<String>,
        },
        /// [`AUTH_GRANTED`].
        #[serde(rename = "taskwire:auth_granted")]
        AuthGranted {
            /// The interrupt.
            interrupt_id: String,
            /// The provider.
            provider: String,
        },
        /// [`REVIEW_REQUESTED`].
        #[serde(rename = "taskwire:review_requested")]
        ReviewRequested {
            /// The interrupt.
            interrupt_id: String,
            /// Who decides.
            reviewer: String,
            /// What is reviewed.
            summary: String,
        },
        /// [`REVIEW_DECIDED`].
        #[serde(rename = "taskwire:review_decided")]
        ReviewDecided {
            /// The interrupt.
            interrupt_id: String,
            /// `approve` or `reject`.
            decision: String,
            /// Who decided.
            by: String,
        },
        /// [`STEP_UNBALANCED`].
        #[serde(rename = "taskwire:step")]
        Step {
            /// The step.
            step_name: String,
            /// `started` or `finished`.
            phase: String,
        },
    }

    impl Custom {
        /// The event's name.
        pub fn name(&self) -> &'static str {
            match self {
                Custom::TaskCreated { .. } => TASK_CREATED,
                Custom::Status { .. } => STATUS,
                Custom::InputReceived { .. } => INPUT_RECEIVED,
                Custom::InputCommitted { .. } => INPUT_COMMITTED,
                Custom::TurnStarted { .. } => TURN_STARTED,
                Custom::InputRequested { .. } => INPUT_REQUESTED,
                Custom::InputAnswered { .. } => INPUT_ANSWERED,
                Custom::InputSuperseded { .. } => INPUT_SUPERSEDED,
                Custom::AuthRequired { .. } => AUTH_REQUIRED,
                Custom::AuthGranted { .. } => AUTH_GRANTED,
                Custom::ReviewRequested { .. } => REVIEW_REQUESTED,
                Custom::ReviewDecided { .. } => REVIEW_DECIDED,
                Custom::Step { .. } => STEP_UNBALANCED,
            }
        }

        /// Reads a `CUSTOM` event's name and value; `None` for a name that is
        /// not taskwire's or a value that does not fit it.
        pub fn read(name: &str, value: &Value) -> Option<Self> {
            #[derive(Serialize)]
            struct Tagged<'a> {
                name: &'a str,
                value: &'a Value,
            }
            let tagged = serde_json::to_value(Tagged { name, value }).ok()?;
            serde_json::from_value(tagged).ok()
        }
    }

    impl From<Custom> for super::EventBody {
        fn from(c: Custom) -> Self {
            let name = c.name().to_string();
            // The adjacently tagged form is `{name, value}`; a plain struct of
            // strings, numbers and lists always serializes.
            let value = match serde_json::to_value(c) {
                Ok(Value::Object(mut m)) => m.remove("value").unwrap_or(Value::Null),
                _ => Value::Null,
            };
            super::EventBody::Custom { name, value }
        }
    }
}

/// An entry of `MESSAGES_SNAPSHOT.messages` as this adapter writes it: a user or
/// assistant message with its text, or the `activity` message of an artifact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SnapshotMessage {
    /// The message.
    pub id: String,
    /// `user`, `assistant` or `activity`.
    pub role: String,
    /// An activity message's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity_type: Option<String>,
    /// The text of a user or assistant message; an activity message's content
    /// object.
    pub content: Value,
}

impl SnapshotMessage {
    /// A user or assistant message with its text.
    pub fn text(id: impl Into<String>, role: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            role: role.into(),
            activity_type: None,
            content: Value::String(text.into()),
        }
    }

    /// An activity message.
    pub fn activity(
        id: impl Into<String>,
        activity_type: impl Into<String>,
        content: Value,
    ) -> Self {
        Self {
            id: id.into(),
            role: role::ACTIVITY.to_string(),
            activity_type: Some(activity_type.into()),
            content,
        }
    }

    /// As an element of `MESSAGES_SNAPSHOT.messages`.
    pub fn to_value(&self) -> Value {
        to_value(self)
    }
}

/// The content of a `taskwire.artifact` activity message (and an element of a
/// run's result): the artifact with its parts as the core writes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ArtifactActivity {
    /// The artifact.
    pub artifact_id: String,
    /// Its parts (taskwire's part objects).
    pub parts: Vec<Value>,
    /// Whether the last chunk arrived.
    pub complete: bool,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// `RUN_FINISHED.result` of a run that completed its task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    /// The task.
    pub task_id: String,
    /// Its artifacts.
    pub artifacts: Vec<ArtifactActivity>,
}

/// `Interrupt.metadata` of an authorisation interrupt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuthMetadata {
    /// The provider.
    pub provider: String,
    /// Where to authorise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// `Interrupt.metadata` of a review (`confirmation`) interrupt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReviewMetadata {
    /// Who decides.
    pub reviewer: String,
}

/// The error answer of the adapter's plain HTTP endpoints (replay, reconnect,
/// cancel): the fields of a `RUN_ERROR`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HttpError {
    /// Machine-readable.
    pub code: String,
    /// For a person.
    pub message: String,
}

/// The answer of the adapter's cancel endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CancelResult {
    /// The task of the run.
    pub task_id: String,
    /// Its state after the cancel (the core's kebab-case name).
    pub state: String,
}

/// The JSON value of a wire struct, for the members the event types keep open
/// (`content`, `result`, `metadata`). The wire structs hold strings, numbers,
/// lists and JSON values only, so serializing them cannot fail; `null` stands
/// in if it ever did.
pub fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// One operation of an RFC 6902 JSON Patch (`STATE_DELTA.delta`,
/// `ACTIVITY_DELTA.patch`), of the kinds this adapter writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "op", rename_all = "lowercase")]
#[non_exhaustive]
pub enum PatchOp {
    /// Adds `value` at `path`.
    Add {
        /// JSON Pointer (`-` appends to an array).
        path: String,
        /// The value.
        value: Value,
    },
    /// Replaces the value at `path`.
    Replace {
        /// JSON Pointer.
        path: String,
        /// The value.
        value: Value,
    },
}

impl PatchOp {
    /// A patch as the JSON array of its operations.
    pub fn patch(ops: &[PatchOp]) -> Value {
        to_value(&ops)
    }
}

/// One AG-UI event: the common fields plus the typed body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The type and its fields.
    #[serde(flatten)]
    pub body: EventBody,
    /// When it happened, in milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
}

impl Event {
    /// An event without timestamp.
    pub fn new(body: EventBody) -> Self {
        Self {
            body,
            timestamp: None,
        }
    }

    /// An event with a timestamp.
    pub fn at(body: EventBody, timestamp: i64) -> Self {
        Self {
            body,
            timestamp: Some(timestamp),
        }
    }

    /// The event type name.
    pub fn type_name(&self) -> &'static str {
        self.body.type_name()
    }
}

/// The typed part of an event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub enum EventBody {
    /// `RUN_STARTED`.
    RunStarted {
        /// The thread.
        #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
        thread_id: String,
        /// The run.
        #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
        run_id: String,
        /// The producer's protocol version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "schema", schemars(extend("const" = "1.0")))]
        protocol_version: Option<String>,
        /// The run this one continues.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_run_id: Option<String>,
    },
    /// `RUN_FINISHED`.
    RunFinished {
        /// The thread.
        thread_id: String,
        /// The run.
        run_id: String,
        /// The run's return value.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// How the run ended; absent means success.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<Outcome>,
    },
    /// `RUN_ERROR`.
    RunError {
        /// For a person.
        #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
        message: String,
        /// Machine-readable.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    /// `STEP_STARTED`.
    StepStarted {
        /// The step.
        step_name: String,
    },
    /// `STEP_FINISHED`.
    StepFinished {
        /// The step.
        step_name: String,
    },
    /// `TEXT_MESSAGE_START`.
    TextMessageStart {
        /// The message.
        message_id: String,
        /// Its role.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(
            feature = "schema",
            schemars(extend("enum" = ["developer", "system", "assistant", "user"]))
        )]
        role: Option<String>,
    },
    /// `TEXT_MESSAGE_CONTENT`.
    TextMessageContent {
        /// The message.
        message_id: String,
        /// The fragment (never empty).
        #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
        delta: String,
    },
    /// `TEXT_MESSAGE_END`.
    TextMessageEnd {
        /// The message.
        message_id: String,
    },
    /// `TOOL_CALL_START` (accepted by the verifier; not emitted).
    ToolCallStart {
        /// The call.
        tool_call_id: String,
        /// The tool.
        tool_call_name: String,
    },
    /// `TOOL_CALL_ARGS` (accepted by the verifier; not emitted).
    ToolCallArgs {
        /// The call.
        tool_call_id: String,
        /// Argument fragment.
        delta: String,
    },
    /// `TOOL_CALL_END` (accepted by the verifier; not emitted).
    ToolCallEnd {
        /// The call.
        tool_call_id: String,
    },
    /// `REASONING_MESSAGE_START` (accepted by the verifier; not emitted).
    ReasoningMessageStart {
        /// The message.
        message_id: String,
    },
    /// `REASONING_MESSAGE_CONTENT` (accepted by the verifier; not emitted).
    ReasoningMessageContent {
        /// The message.
        message_id: String,
        /// Fragment.
        delta: String,
    },
    /// `REASONING_MESSAGE_END` (accepted by the verifier; not emitted).
    ReasoningMessageEnd {
        /// The message.
        message_id: String,
    },
    /// `STATE_SNAPSHOT`.
    StateSnapshot {
        /// The whole state.
        snapshot: Value,
    },
    /// `STATE_DELTA`.
    StateDelta {
        /// RFC 6902 JSON Patch.
        #[cfg_attr(feature = "schema", schemars(extend("type" = "array", "items" = {"type": "object", "required": ["op", "path"], "properties": {"op": {"enum": ["add", "remove", "replace", "move", "copy", "test"]}, "path": {"type": "string"}, "from": {"type": "string"}}})))]
        delta: Value,
    },
    /// `MESSAGES_SNAPSHOT`.
    MessagesSnapshot {
        /// Every message of the thread the producer owns, in order.
        #[cfg_attr(feature = "schema", schemars(extend("items" = {"type": "object", "required": ["id", "role"], "properties": {"id": {"type": "string"}, "role": {"type": "string"}}, "if": {"properties": {"role": {"const": "activity"}}, "required": ["role"]}, "then": {"required": ["content"], "properties": {"content": {"type": "object"}}}})))]
        messages: Vec<Value>,
    },
    /// `ACTIVITY_SNAPSHOT`.
    ActivitySnapshot {
        /// The activity message.
        message_id: String,
        /// Its type.
        activity_type: String,
        /// Its content (an object).
        #[cfg_attr(feature = "schema", schemars(extend("type" = "object")))]
        content: Value,
        /// Replace an existing activity message of that id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replace: Option<bool>,
    },
    /// `ACTIVITY_DELTA`.
    ActivityDelta {
        /// The activity message.
        message_id: String,
        /// Its type.
        activity_type: String,
        /// RFC 6902 JSON Patch of its content.
        #[cfg_attr(feature = "schema", schemars(extend("type" = "array", "items" = {"type": "object", "required": ["op", "path"], "properties": {"op": {"enum": ["add", "remove", "replace", "move", "copy", "test"]}, "path": {"type": "string"}, "from": {"type": "string"}}})))]
        patch: Value,
    },
    /// `CUSTOM`.
    Custom {
        /// The name (namespaced `taskwire:`).
        #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
        name: String,
        /// The value.
        value: Value,
    },
}

impl EventBody {
    /// The event type name.
    pub fn type_name(&self) -> &'static str {
        use event_type as t;
        match self {
            EventBody::RunStarted { .. } => t::RUN_STARTED,
            EventBody::RunFinished { .. } => t::RUN_FINISHED,
            EventBody::RunError { .. } => t::RUN_ERROR,
            EventBody::StepStarted { .. } => t::STEP_STARTED,
            EventBody::StepFinished { .. } => t::STEP_FINISHED,
            EventBody::TextMessageStart { .. } => t::TEXT_MESSAGE_START,
            EventBody::TextMessageContent { .. } => t::TEXT_MESSAGE_CONTENT,
            EventBody::TextMessageEnd { .. } => t::TEXT_MESSAGE_END,
            EventBody::ToolCallStart { .. } => t::TOOL_CALL_START,
            EventBody::ToolCallArgs { .. } => t::TOOL_CALL_ARGS,
            EventBody::ToolCallEnd { .. } => t::TOOL_CALL_END,
            EventBody::ReasoningMessageStart { .. } => t::REASONING_MESSAGE_START,
            EventBody::ReasoningMessageContent { .. } => t::REASONING_MESSAGE_CONTENT,
            EventBody::ReasoningMessageEnd { .. } => t::REASONING_MESSAGE_END,
            EventBody::StateSnapshot { .. } => t::STATE_SNAPSHOT,
            EventBody::StateDelta { .. } => t::STATE_DELTA,
            EventBody::MessagesSnapshot { .. } => t::MESSAGES_SNAPSHOT,
            EventBody::ActivitySnapshot { .. } => t::ACTIVITY_SNAPSHOT,
            EventBody::ActivityDelta { .. } => t::ACTIVITY_DELTA,
            EventBody::Custom { .. } => t::CUSTOM,
        }
    }
}

/// `RUN_FINISHED.outcome`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Outcome {
    /// Completed (same as absent).
    Success,
    /// Paused, waiting for outside input.
    Interrupt {
        /// What is awaited (at least one).
        #[cfg_attr(feature = "schema", schemars(extend("minItems" = 1)))]
        interrupts: Vec<Interrupt>,
    },
    /// Stopped before it completed.
    Cancelled,
}

/// Something a run needs from outside before it can continue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// The id a resume entry names.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub id: String,
    /// `input_required`, `confirmation` or `taskwire:auth_required`.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub reason: String,
    /// For a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// JSON schema of the resume payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("type" = "object")))]
    pub response_schema: Option<Value>,
    /// When the interrupt expires (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub expires_at: Option<String>,
    /// Extra information (for an authorisation: `{provider, url?}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// What a client posts to run the agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The thread (the core context).
    pub thread_id: String,
    /// The run id the client chose.
    pub run_id: String,
    /// The client's protocol version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The run this one continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_run_id: Option<String>,
    /// Client-side state (not used: the agent owns the state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    /// The whole thread, as the client holds it.
    pub messages: Vec<InputMessage>,
    /// Client tools (not used by the core).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Value>,
    /// Ambient context (not used by the core).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<Value>,
    /// Forwarded properties (not used by the core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded_props: Option<Value>,
    /// Answers to the thread's open interrupts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Vec<ResumeEntry>>,
}

/// The protocol version a client sends in `RunAgentInput.protocolVersion`.
pub const PROTOCOL_VERSION: &str = "1.0";

impl RunAgentInput {
    /// An input for a thread and run, with no messages yet.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            protocol_version: Some(PROTOCOL_VERSION.into()),
            parent_run_id: None,
            state: None,
            messages: Vec::new(),
            tools: Vec::new(),
            context: Vec::new(),
            forwarded_props: None,
            resume: None,
        }
    }

    /// Appends a user message.
    pub fn user_message(mut self, id: impl Into<String>, text: impl Into<String>) -> Self {
        self.messages.push(InputMessage {
            id: id.into(),
            role: "user".into(),
            content: Some(Value::String(text.into())),
            extra: serde_json::Map::new(),
        });
        self
    }

    /// Sets the resume entries.
    pub fn resume(mut self, entries: Vec<ResumeEntry>) -> Self {
        self.resume = Some(entries);
        self
    }
}

/// A message of the thread as the client sends it. A server reads `id`, `role`
/// and `content`; every other member (tool calls, names, …) is kept in `extra`
/// and written back as it came.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InputMessage {
    /// Message id.
    pub id: String,
    /// `user`, `assistant`, `activity`, …
    pub role: String,
    /// A string, an array of input contents, or an object (activity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Value>,
    /// Every other member, as sent.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// The status of a resume entry, typed (the wire carries it as a string, so a
/// server can name an unknown one in its refusal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResumeStatus {
    /// The interrupt is answered.
    Resolved,
    /// The interrupt is declined.
    Cancelled,
}

impl ResumeStatus {
    /// The status of a wire name (`resolved`, `cancelled`); `None` for any other.
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "resolved" => Some(Self::Resolved),
            "cancelled" => Some(Self::Cancelled),
            _ => None,
        }
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ResumeStatus::Resolved => "resolved",
            ResumeStatus::Cancelled => "cancelled",
        }
    }
}

impl From<ResumeStatus> for String {
    fn from(s: ResumeStatus) -> String {
        s.as_str().to_string()
    }
}

/// An answer to one interrupt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt.
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    #[cfg_attr(feature = "schema", schemars(extend("enum" = ["resolved", "cancelled"])))]
    pub status: String,
    /// The answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// Extra information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// Message roles used in `MESSAGES_SNAPSHOT`.
pub mod role {
    /// The person.
    pub const USER: &str = "user";
    /// The agent.
    pub const ASSISTANT: &str = "assistant";
    /// Structured progress (artifacts).
    pub const ACTIVITY: &str = "activity";
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialize_camel_case_with_screaming_types() {
        let e = Event::at(
            EventBody::RunStarted {
                thread_id: "t".into(),
                run_id: "r".into(),
                protocol_version: Some("1.0".into()),
                parent_run_id: None,
            },
            5,
        );
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": "1.0", "timestamp": 5})
        );
        let back: Event = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
        assert_eq!(back, e);
        assert_eq!(e.type_name(), event_type::RUN_STARTED);
    }

    #[test]
    fn custom_events_carry_their_name_and_camel_case_value() {
        use custom::Custom;
        let cases = [
            (
                Custom::Status {
                    from: "submitted".into(),
                    to: "working".into(),
                    cause: None,
                    message: Some("go".into()),
                },
                json!({"from": "submitted", "to": "working", "message": "go"}),
            ),
            (
                Custom::AuthRequired {
                    interrupt_id: "t/auth/gh".into(),
                    provider: "gh".into(),
                    url: None,
                },
                json!({"interruptId": "t/auth/gh", "provider": "gh"}),
            ),
            (
                Custom::InputCommitted {
                    message_ids: vec!["m1".into()],
                },
                json!({"messageIds": ["m1"]}),
            ),
        ];
        for (c, value) in cases {
            let name = c.name();
            let body: EventBody = c.clone().into();
            assert_eq!(
                body,
                EventBody::Custom {
                    name: name.to_string(),
                    value: value.clone()
                }
            );
            assert_eq!(Custom::read(name, &value), Some(c));
        }
        assert_eq!(Custom::read("someone:else", &json!({})), None);
        assert_eq!(
            Custom::read(custom::TURN_STARTED, &json!({"turn": "x"})),
            None
        );
    }

    #[test]
    fn patch_ops_and_snapshot_messages_have_the_adapter_shapes() {
        let ops = [
            PatchOp::Add {
                path: "/parts/-".into(),
                value: json!({"text": "a"}),
            },
            PatchOp::Replace {
                path: "/complete".into(),
                value: json!(true),
            },
        ];
        assert_eq!(
            PatchOp::patch(&ops),
            json!([{"op": "add", "path": "/parts/-", "value": {"text": "a"}},
                   {"op": "replace", "path": "/complete", "value": true}])
        );
        assert_eq!(
            SnapshotMessage::text("m", role::USER, "hi").to_value(),
            json!({"id": "m", "role": "user", "content": "hi"})
        );
        assert_eq!(
            SnapshotMessage::activity("a", "taskwire.artifact", json!({"x": 1})).to_value(),
            json!({"id": "a", "role": "activity", "activityType": "taskwire.artifact", "content": {"x": 1}})
        );
    }

    #[test]
    fn outcomes_serialize_as_tagged_objects() {
        assert_eq!(
            serde_json::to_value(Outcome::Cancelled).unwrap(),
            json!({"type": "cancelled"})
        );
        let o = Outcome::Interrupt {
            interrupts: vec![Interrupt {
                id: "a/input/k".into(),
                reason: "input_required".into(),
                message: None,
                response_schema: None,
                expires_at: None,
                metadata: None,
            }],
        };
        assert_eq!(
            serde_json::to_value(o).unwrap(),
            json!({"type": "interrupt", "interrupts": [{"id": "a/input/k", "reason": "input_required"}]})
        );
    }

    #[test]
    fn run_agent_input_parses_the_client_shape() {
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "hi"}],
            "tools": [], "context": [], "state": {}, "forwardedProps": {},
            "resume": [{"interruptId": "x/input/k", "status": "resolved", "payload": {"answer": "y"}}]
        }))
        .unwrap();
        assert_eq!(input.messages[0].content, Some(json!("hi")));
        assert_eq!(input.resume.unwrap()[0].status, "resolved");
    }
}
