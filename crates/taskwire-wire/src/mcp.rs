//! MCP: the task-related requests and results of both generations
//! (2026-07-28 with the tasks extension, SEP-2663, and 2025-11-25 experimental
//! tasks), typed once. The server (`taskwire-mcp`, through the mapping in
//! `taskwire_vocab::mcp`) serializes them, `taskwire-client` deserializes them,
//! and `taskwire-schemas` derives the JSON Schemas under `schemas/mcp/` from
//! them (the `schema` feature adds the schemars derives).
//!
//! Objects allow members not named here (`_meta` extensions, newer fields), as
//! MCP peers must ignore what they do not know: they are kept in flattened maps
//! where MCP names them open, and ignored on reading elsewhere. Free-form
//! payloads (tool arguments, `structuredContent`, JSON Schemas, `_meta`) stay
//! `serde_json` values.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `resultType` `"complete"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Complete {
    /// The request is done.
    #[serde(rename = "complete")]
    Complete,
}

/// `resultType` `"input_required"` (SEP-2322).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum InputRequiredResultType {
    /// The request needs input first.
    #[serde(rename = "input_required")]
    InputRequired,
}

/// `resultType` `"task"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum TaskResultType {
    /// The request became a task.
    #[serde(rename = "task")]
    Task,
}

/// Name and version of an implementation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Implementation {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// Other members (title, icons, …).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Capabilities a client declares on each 2026-07-28 request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClientCapabilities {
    /// Extensions by id; the tasks extension is `io.modelcontextprotocol/tasks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Other capabilities.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `params._meta` of every 2026-07-28 request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RequestMeta {
    /// The request's protocol version.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub protocol_version: String,
    /// The client (a SHOULD: requests without it are served).
    #[serde(
        rename = "io.modelcontextprotocol/clientInfo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub client_info: Option<Implementation>,
    /// The client's capabilities.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: ClientCapabilities,
    /// Other keys.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Params of a request with nothing but `_meta` (`server/discover`, `tools/list`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RequestParams {
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// Server capabilities (`server/discover`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ServerCapabilities {
    /// Extensions by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChanged>,
    /// Other capabilities.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `{listChanged}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListChanged {
    /// Whether list change notifications are sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `_meta` of a result naming the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ServerMeta {
    /// The server.
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub server_info: Implementation,
    /// Other keys.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Result of `server/discover`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Always `complete`.
    pub result_type: Complete,
    /// Revisions the server speaks.
    pub supported_versions: Vec<String>,
    /// What it offers.
    pub capabilities: ServerCapabilities,
    /// For the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Cache scope of this result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    /// How long the result may be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// The server's info.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ServerMeta>,
}

/// Whether a tool may run as a task (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never as a task.
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task.
    Required,
}

/// `execution` of a tool (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Task support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// A tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Name.
    pub name: String,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema).
    #[cfg_attr(feature = "schema", schemars(extend("required" = ["type"], "properties" = {"type": {"const": "object"}})))]
    pub input_schema: Map<String, Value>,
    /// JSON Schema of `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// Task support (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Other members (annotations, icons, `_meta`).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Result of `tools/list` (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// Always `complete`.
    pub result_type: Complete,
    /// The tools.
    pub tools: Vec<Tool>,
    /// The next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the list may be cached, in milliseconds (SEP-2549).
    pub ttl_ms: u64,
    /// Who may cache it (SEP-2549).
    pub cache_scope: CacheScope,
}

/// SEP-2549 `cacheScope`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CacheScope {
    /// Any cache.
    Public,
    /// Only the caller's own.
    Private,
}

/// Result of `tools/list` (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult2025_11_25 {
    /// The tools.
    pub tools: Vec<Tool>,
    /// The next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// An embedded resource's contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// URI.
    pub uri: String,
    /// Media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary contents (base64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("contentEncoding" = "base64")))]
    pub blob: Option<String>,
}

/// A content block of a tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (base64).
    Image {
        /// Base64 data.
        #[cfg_attr(feature = "schema", schemars(extend("contentEncoding" = "base64")))]
        data: String,
        /// Media type.
        mime_type: String,
    },
    /// Audio (base64).
    Audio {
        /// Base64 data.
        #[cfg_attr(feature = "schema", schemars(extend("contentEncoding" = "base64")))]
        data: String,
        /// Media type.
        mime_type: String,
    },
    /// A link to a resource.
    ResourceLink {
        /// URI.
        uri: String,
        /// Name.
        name: String,
        /// Media type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Size in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    /// An embedded resource.
    Resource {
        /// The contents.
        resource: ResourceContents,
    },
}

/// A tool's result as it sits in a task (`DetailedTask.result`) and in
/// 2025-11-25 answers: no `resultType`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult2025_11_25 {
    /// The content.
    pub content: Vec<ContentBlock>,
    /// Structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Map<String, Value>>,
    /// The tool failed (the task is still `completed`, or `failed` in 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `io.modelcontextprotocol/related-task` on `tasks/result` answers.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A tool's result answering `tools/call` directly (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Always `complete`.
    pub result_type: Complete,
    /// The content.
    pub content: Vec<ContentBlock>,
    /// Structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Map<String, Value>>,
    /// The tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Params of `tools/call` (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CallToolRequestParams {
    /// The tool.
    pub name: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Answers to the input requests of an earlier `input_required` answer,
    /// by key (SEP-2322).
    #[serde(
        rename = "inputResponses",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub input_responses: Option<Map<String, Value>>,
    /// The `requestState` of that answer, as given.
    #[serde(
        rename = "requestState",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub request_state: Option<String>,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// `params.task` of a 2025-11-25 `tools/call` that asks for a task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskParam {
    /// Requested time to live in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// Params of `tools/call` (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CallToolRequestParams2025_11_25 {
    /// The tool.
    pub name: String,
    /// Its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
    /// Run as a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskParam>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Task status values (both generations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for input (`inputRequests`).
    InputRequired,
    /// Done (terminal), also when the tool reported `isError`.
    Completed,
    /// A JSON-RPC error ended it (terminal).
    Failed,
    /// Cancelled (terminal).
    Cancelled,
    /// A status this version does not know, as a peer may send one (read
    /// only: never sent, and not in the schemas).
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Unknown,
}

impl TaskStatus {
    /// Every status that is sent.
    pub const ALL: [TaskStatus; 5] = [
        TaskStatus::Working,
        TaskStatus::InputRequired,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Cancelled,
    ];

    /// The status of a wire word (`None` for a word this version does not know).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// The wire word (`unknown` for a status this version does not know).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Unknown => "unknown",
        }
    }

    /// completed, failed or cancelled.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// `CreateTaskResult` (2026-07-28): flat.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// Always `task`.
    pub result_type: TaskResultType,
    /// The task.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// For a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time (ISO 8601).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub created_at: String,
    /// Last change (ISO 8601).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_updated_at: String,
    /// Time to live from creation, or null for unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// An `InputRequiredResult` (SEP-2322): the request needs these inputs; repeat
/// it with `inputResponses` and the `requestState`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `input_required`.
    pub result_type: InputRequiredResultType,
    /// What is asked, by key.
    pub input_requests: BTreeMap<String, InputRequest>,
    /// Opaque, integrity-protected state to send back with the answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// Result of `tools/call` (2026-07-28): a tool result, a task, or a request
/// for input first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
#[non_exhaustive]
pub enum ToolsCallResult {
    /// Answered directly.
    Complete(CallToolResult),
    /// Became a task.
    Task(CreateTaskResult),
    /// Needs input first (SEP-2322).
    InputRequired(InputRequiredResult),
}

/// The form of an elicitation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum FormMode {
    /// A form.
    #[serde(rename = "form")]
    Form,
}

/// The URL mode of an elicitation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum UrlMode {
    /// Open a URL.
    #[serde(rename = "url")]
    Url,
}

/// Params of `elicitation/create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// Ask for data that matches a schema.
    Form {
        /// `form` (may be absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<FormMode>,
        /// For a person.
        message: String,
        /// A flat object schema.
        #[serde(rename = "requestedSchema")]
        #[cfg_attr(feature = "schema", schemars(extend("required" = ["type"], "properties" = {"type": {"const": "object"}})))]
        requested_schema: Map<String, Value>,
        /// Metadata (2025-11-25: `io.modelcontextprotocol/related-task`).
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
    /// Send the person to a URL (an authorisation).
    Url {
        /// `url`.
        mode: UrlMode,
        /// For a person.
        message: String,
        /// Where to go.
        url: String,
        /// The elicitation's id.
        #[serde(
            rename = "elicitationId",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        elicitation_id: Option<String>,
        /// Metadata.
        #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
        meta: Option<Map<String, Value>>,
    },
}

/// An input request of a task (the value of an `inputRequests` entry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "method", content = "params")]
#[non_exhaustive]
pub enum InputRequest {
    /// An elicitation (a form).
    #[serde(rename = "elicitation/create")]
    Elicit(ElicitRequestParams),
    /// A sampling request.
    #[serde(rename = "sampling/createMessage")]
    CreateMessage(CreateMessageRequestParams),
    /// A roots request.
    #[serde(rename = "roots/list")]
    ListRoots(Option<Map<String, Value>>),
}

/// What the person did with an elicitation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ElicitAction {
    /// Answered (`content` holds the answer).
    Accept,
    /// Said no.
    Decline,
    /// Dismissed it.
    Cancel,
}

/// The answer to an elicitation (`tasks/update` input responses, and the
/// client's response to a 2025-11-25 `elicitation/create`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ElicitResult {
    /// The action.
    pub action: ElicitAction,
    /// The answer, matching the requested schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A failed task's `error`: the JSON-RPC error object.
pub use crate::jsonrpc::ErrorObject;

/// The members of a detailed task (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(extend("allOf" = [
    {"if": {"properties": {"status": {"const": "input_required"}}, "required": ["status"]}, "then": {"required": ["inputRequests"]}},
    {"if": {"properties": {"status": {"const": "completed"}}, "required": ["status"]}, "then": {"required": ["result"]}},
    {"if": {"properties": {"status": {"const": "failed"}}, "required": ["status"]}, "then": {"required": ["error"]}}
])))]
pub struct TaskFields {
    /// The task.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// For a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time (ISO 8601).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub created_at: String,
    /// Last change (ISO 8601).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_updated_at: String,
    /// Time to live from creation, or null for unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// While `input_required`: the open requests by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<BTreeMap<String, InputRequest>>,
    /// When `completed`: the tool's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CallToolResult2025_11_25>,
    /// When `failed`: the JSON-RPC error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// `tasks/get` and `tasks/continue` result (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DetailedTask {
    /// Always `complete`.
    pub result_type: Complete,
    /// The task.
    #[serde(flatten)]
    pub task: TaskFields,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// `_meta` naming the subscription a message belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SubscriptionMeta {
    /// The subscription (the `subscriptions/listen` request id).
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: Value,
}

/// Params of `notifications/tasks`: a detailed task of a subscribed task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskNotificationParams {
    /// The task.
    #[serde(flatten)]
    pub task: TaskFields,
    /// The subscription.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta,
}

/// Params of `tasks/get` and `tasks/cancel` (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// Params of `tasks/update`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers by input request key.
    pub input_responses: BTreeMap<String, ElicitResult>,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// Params of `tasks/continue` (SEP-2339).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ContinueTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers by input request key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<BTreeMap<String, ElicitResult>>,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// The result of `tasks/update` and `tasks/cancel` (2026-07-28).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// Always `complete`.
    pub result_type: Complete,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Which notifications a subscription asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NotificationFilter {
    /// Tasks to follow.
    pub task_ids: Vec<String>,
}

/// Params of `subscriptions/listen`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListenRequestParams {
    /// What to follow.
    pub notifications: NotificationFilter,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// Result of `subscriptions/listen` (sent when the subscription ends).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListenResult {
    /// Always `complete`.
    pub result_type: Complete,
    /// The subscription.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta,
}

/// Params of `notifications/subscriptions/acknowledged`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SubscriptionsAcknowledgedParams {
    /// What is followed.
    pub notifications: NotificationFilter,
    /// The subscription.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta,
}

/// Params of `initialize` (2025-11-25 and older).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequestParams {
    /// Requested revision.
    pub protocol_version: String,
    /// Client capabilities.
    pub capabilities: Map<String, Value>,
    /// The client.
    pub client_info: Implementation,
}

/// Result of `initialize`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// Agreed revision.
    pub protocol_version: String,
    /// Server capabilities (`tasks.{list, cancel, requests.tools.call}` when tasks are served).
    pub capabilities: ServerCapabilities2025_11_25,
    /// The server.
    pub server_info: Implementation,
    /// For the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// A task (2025-11-25): `tasks/get` and `tasks/cancel` result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Task2025_11_25 {
    /// The task.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// For a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time (ISO 8601).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub created_at: String,
    /// Last change (ISO 8601).
    #[cfg_attr(feature = "schema", schemars(extend("format" = "date-time")))]
    pub last_updated_at: String,
    /// Time to live in milliseconds, or null.
    pub ttl: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// `tools/call` result when a task was asked for (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CreateTaskResult2025_11_25 {
    /// The task.
    pub task: Task2025_11_25,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Result of `tools/call` (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
#[non_exhaustive]
pub enum ToolsCallResult2025_11_25 {
    /// A task was created.
    Task(CreateTaskResult2025_11_25),
    /// Answered directly.
    Complete(CallToolResult2025_11_25),
}

/// Params of `tasks/get`, `tasks/cancel` and `tasks/result` (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TaskRequestParams2025_11_25 {
    /// The task.
    pub task_id: String,
}

/// Params of `tasks/list` (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListTasksRequestParams2025_11_25 {
    /// The page to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Result of `tasks/list` (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult2025_11_25 {
    /// The caller's tasks.
    pub tasks: Vec<Task2025_11_25>,
    /// The next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

impl Implementation {
    /// A name and a version, nothing else.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            other: Map::new(),
        }
    }
}

impl ContentBlock {
    /// The text of a `text` block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// The text of all `text` content blocks, joined with newlines.
fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

impl CallToolResult2025_11_25 {
    /// The same result answering a 2026-07-28 `tools/call` (`resultType`
    /// `complete`).
    pub fn into_complete(self) -> CallToolResult {
        CallToolResult {
            result_type: Complete::Complete,
            content: self.content,
            structured_content: self.structured_content,
            is_error: self.is_error,
            meta: self.meta,
        }
    }

    /// The text of all `text` content blocks, joined with newlines.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

impl CallToolResult {
    /// The text of all `text` content blocks, joined with newlines.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

impl InputRequest {
    /// The request's method.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Elicit(_) => crate::names::mcp::method::ELICITATION_CREATE,
            Self::CreateMessage(_) => crate::names::mcp::method::SAMPLING_CREATE_MESSAGE,
            Self::ListRoots(_) => crate::names::mcp::method::ROOTS_LIST,
        }
    }
}

/// A detailed task reads as its members (`d.status`, `d.input_requests`, …).
impl std::ops::Deref for DetailedTask {
    type Target = TaskFields;

    fn deref(&self) -> &TaskFields {
        &self.task
    }
}

/// An empty options object (`{}`), the value of a capability without options.
pub type Options = Map<String, Value>;

/// Server capabilities of `initialize` (2025-11-25 and older).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ServerCapabilities2025_11_25 {
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChanged>,
    /// Tasks (2025-11-25), when they are served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<TasksCapability2025_11_25>,
    /// Other capabilities.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `capabilities.tasks` of a 2025-11-25 server: `{list, cancel, requests}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TasksCapability2025_11_25 {
    /// `tasks/list` is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Options>,
    /// `tasks/cancel` is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Options>,
    /// The requests that may become tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<TaskRequests>,
}

/// `capabilities.tasks.requests`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskRequests {
    /// `tools/*` requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ToolTaskRequests>,
}

/// `capabilities.tasks.requests.tools`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ToolTaskRequests {
    /// `tools/call` may become a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<Options>,
}

/// Params of a `sampling/createMessage` request (what taskwire asks a client's
/// model).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation to continue.
    pub messages: Vec<SamplingMessage>,
    /// Most tokens to sample.
    pub max_tokens: u32,
    /// The other members (system prompt, preferences, …).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A message of a sampling conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SamplingMessage {
    /// `user` or `assistant`.
    pub role: SamplingRole,
    /// Its content.
    pub content: ContentBlock,
}

/// The role of a sampling message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SamplingRole {
    /// The person.
    User,
    /// The model.
    Assistant,
}

/// Params of `notifications/progress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ProgressNotificationParams {
    /// The request's `progressToken` (a string or a number).
    pub progress_token: Value,
    /// Progress so far (increases with each notification).
    pub progress: u64,
    /// For a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Params of `tasks/stream` (SEP-2694, Resumable Task Event Streams).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StreamTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Exclusive resume cursor: the events after this sequence number; absent,
    /// the earliest retained event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// The `_meta` of a task event: the task it belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TaskEventMeta {
    /// The task (the same as the event's `taskId`).
    #[serde(rename = "io.modelcontextprotocol/related-task")]
    pub related_task: RelatedTask,
}

/// Params of `notifications/tasks/event`: one entry of a task's event stream
/// (SEP-2694).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TaskEvent {
    /// Position in the task's stream: 0 for the first event, then one more
    /// for each.
    pub seq: u64,
    /// The task.
    pub task_id: String,
    /// What happened: a vendor-prefixed event type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The event's fields (a JSON object, as the type defines).
    pub payload: Map<String, Value>,
    /// The related task.
    #[serde(rename = "_meta")]
    pub meta: TaskEventMeta,
}

/// `error.data` of `events_gone` (-32010): the events after the cursor are no
/// longer all retained (SEP-2694).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct EventsGoneData {
    /// Always `events_gone`.
    pub reason: String,
    /// The task.
    pub task_id: String,
    /// The oldest event still retained.
    pub earliest_seq: u64,
}

/// `_meta["io.modelcontextprotocol/related-task"]`: the task a message belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RelatedTask {
    /// The task.
    pub task_id: String,
}

/// `error.data` of an unsupported protocol version (-32022).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct UnsupportedVersionData {
    /// The revisions the server speaks.
    pub supported: Vec<String>,
    /// The revision asked for.
    pub requested: String,
}

/// `error.data` of a missing client capability (-32021).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct MissingCapabilityData {
    /// A `ClientCapabilities` object of what is missing.
    pub required_capabilities: ClientCapabilities,
}

/// `error.data` of a blocking `tools/call` that ran out of time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TimeoutData {
    /// The limit, in milliseconds.
    pub timeout_ms: u64,
}

impl ElicitResult {
    /// Accepting, with the answer.
    pub fn accept(content: Map<String, Value>) -> Self {
        Self {
            action: ElicitAction::Accept,
            content: Some(content),
            meta: None,
        }
    }

    /// Declining.
    pub fn decline() -> Self {
        Self {
            action: ElicitAction::Decline,
            content: None,
            meta: None,
        }
    }

    /// Dismissing.
    pub fn cancel() -> Self {
        Self {
            action: ElicitAction::Cancel,
            content: None,
            meta: None,
        }
    }
}

/// The JSON value of a wire struct, for members the types keep open (`data`,
/// `_meta` entries, request params). The wire structs hold strings, numbers,
/// lists, maps and JSON values only, so serializing them cannot fail; `null`
/// stands in if it ever did.
pub fn to_value<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_words_are_the_serialized_words() {
        for s in TaskStatus::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
            assert_eq!(TaskStatus::parse(s.as_str()), Some(s));
        }
        let later: TaskStatus = serde_json::from_value(json!("paused")).unwrap();
        assert_eq!(later, TaskStatus::Unknown);
        assert_eq!(TaskStatus::parse("paused"), None);
    }

    #[test]
    fn typed_params_have_the_wire_shapes() {
        let p = CreateMessageRequestParams {
            messages: vec![SamplingMessage {
                role: SamplingRole::User,
                content: ContentBlock::Text { text: "hi".into() },
            }],
            max_tokens: 5,
            other: Map::new(),
        };
        assert_eq!(
            to_value(&p),
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5})
        );
        let caps = ServerCapabilities2025_11_25 {
            tools: Some(ListChanged {
                list_changed: Some(false),
            }),
            tasks: Some(TasksCapability2025_11_25 {
                list: Some(Map::new()),
                cancel: Some(Map::new()),
                requests: Some(TaskRequests {
                    tools: Some(ToolTaskRequests {
                        call: Some(Map::new()),
                    }),
                }),
            }),
            other: Map::new(),
        };
        assert_eq!(
            to_value(&caps),
            json!({"tools": {"listChanged": false}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}})
        );
        assert_eq!(
            to_value(&ElicitResult::cancel()),
            json!({"action": "cancel"})
        );
        assert_eq!(
            to_value(&ProgressNotificationParams {
                progress_token: json!(7),
                progress: 3,
                message: None
            }),
            json!({"progressToken": 7, "progress": 3})
        );
    }
}
