//! MCP: the task-related requests and results of both generations that
//! taskwire-mcp sends and accepts. The adapter builds its JSON with
//! `serde_json::json!` (its shapes come from `taskwire_vocab::mcp`), so the wire
//! shapes are written down here as serde types with schemars derives; the
//! fixture test (`tests/fixtures.rs`) proves them against the adapter's golden
//! fixtures, and the index names the methods with the adapter's own constants.
//!
//! Objects allow members not named here (`_meta` extensions, newer fields), as
//! MCP peers must ignore what they do not know.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use taskwire_mcp::wire::{method, V_CURRENT, V_LEGACY};

use crate::cas::finish;
use crate::error::SchemaError;
use crate::{rpc, schemas_entry, Kind};

/// `resultType` `"complete"`.
#[derive(Serialize, Deserialize, JsonSchema)]
pub enum Complete {
    /// The request is done.
    #[serde(rename = "complete")]
    Complete,
}

/// `resultType` `"input_required"` (SEP-2322).
#[derive(Serialize, Deserialize, JsonSchema)]
pub enum InputRequiredResultType {
    /// The request needs input first.
    #[serde(rename = "input_required")]
    InputRequired,
}

/// `resultType` `"task"`.
#[derive(Serialize, Deserialize, JsonSchema)]
pub enum TaskResultType {
    /// The request became a task.
    #[serde(rename = "task")]
    Task,
}

/// Name and version of an implementation.
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ClientCapabilities {
    /// Extensions by id; the tasks extension is `io.modelcontextprotocol/tasks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Map<String, Value>>,
    /// Other capabilities.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `params._meta` of every 2026-07-28 request.
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct RequestParams {
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// Server capabilities (`server/discover`).
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListChanged {
    /// Whether list change notifications are sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// `_meta` of a result naming the server.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ServerMeta {
    /// The server.
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub server_info: Implementation,
    /// Other keys.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Result of `server/discover`.
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Never as a task.
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task.
    Required,
}

/// `execution` of a tool (2025-11-25).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// Task support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// A tool.
#[derive(Serialize, Deserialize, JsonSchema)]
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
    #[schemars(extend("required" = ["type"], "properties" = {"type": {"const": "object"}}))]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Any cache.
    Public,
    /// Only the caller's own.
    Private,
}

/// Result of `tools/list` (2025-11-25).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyListToolsResult {
    /// The tools.
    pub tools: Vec<Tool>,
    /// The next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// An embedded resource's contents.
#[derive(Serialize, Deserialize, JsonSchema)]
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
    #[schemars(extend("contentEncoding" = "base64"))]
    pub blob: Option<String>,
}

/// A content block of a tool result.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (base64).
    Image {
        /// Base64 data.
        #[schemars(extend("contentEncoding" = "base64"))]
        data: String,
        /// Media type.
        mime_type: String,
    },
    /// Audio (base64).
    Audio {
        /// Base64 data.
        #[schemars(extend("contentEncoding" = "base64"))]
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
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyCallToolResult {
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct TaskParam {
    /// Requested time to live in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// Params of `tools/call` (2025-11-25).
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct LegacyCallToolRequestParams {
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
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
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
}

/// `CreateTaskResult` (2026-07-28): flat.
#[derive(Serialize, Deserialize, JsonSchema)]
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
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// Last change (ISO 8601).
    #[schemars(extend("format" = "date-time"))]
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
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `input_required`.
    pub result_type: InputRequiredResultType,
    /// What is asked, by key.
    pub input_requests: std::collections::BTreeMap<String, InputRequest>,
    /// Opaque, integrity-protected state to send back with the answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

/// Result of `tools/call` (2026-07-28): a tool result, a task, or a request
/// for input first.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ToolsCallResult {
    /// Answered directly.
    Complete(CallToolResult),
    /// Became a task.
    Task(CreateTaskResult),
    /// Needs input first (SEP-2322).
    InputRequired(InputRequiredResult),
}

/// The form of an elicitation.
#[derive(Serialize, Deserialize, JsonSchema)]
pub enum FormMode {
    /// A form.
    #[serde(rename = "form")]
    Form,
}

/// The URL mode of an elicitation.
#[derive(Serialize, Deserialize, JsonSchema)]
pub enum UrlMode {
    /// Open a URL.
    #[serde(rename = "url")]
    Url,
}

/// Params of `elicitation/create`.
#[derive(Serialize, Deserialize, JsonSchema)]
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
        #[schemars(extend("required" = ["type"], "properties" = {"type": {"const": "object"}}))]
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
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params")]
pub enum InputRequest {
    /// An elicitation (a form).
    #[serde(rename = "elicitation/create")]
    Elicit(ElicitRequestParams),
    /// A sampling request.
    #[serde(rename = "sampling/createMessage")]
    CreateMessage(Map<String, Value>),
    /// A roots request.
    #[serde(rename = "roots/list")]
    ListRoots(Option<Map<String, Value>>),
}

/// What the person did with an elicitation.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
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
#[derive(Serialize, Deserialize, JsonSchema)]
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

/// A JSON-RPC error object (a failed task's `error`).
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ErrorObject {
    /// Code.
    pub code: i64,
    /// Message.
    pub message: String,
    /// Data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The members of a detailed task (2026-07-28).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("allOf" = [
    {"if": {"properties": {"status": {"const": "input_required"}}, "required": ["status"]}, "then": {"required": ["inputRequests"]}},
    {"if": {"properties": {"status": {"const": "completed"}}, "required": ["status"]}, "then": {"required": ["result"]}},
    {"if": {"properties": {"status": {"const": "failed"}}, "required": ["status"]}, "then": {"required": ["error"]}}
]))]
pub struct TaskFields {
    /// The task.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// For a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time (ISO 8601).
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// Last change (ISO 8601).
    #[schemars(extend("format" = "date-time"))]
    pub last_updated_at: String,
    /// Time to live from creation, or null for unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested polling interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// While `input_required`: the open requests by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<std::collections::BTreeMap<String, InputRequest>>,
    /// When `completed`: the tool's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<LegacyCallToolResult>,
    /// When `failed`: the JSON-RPC error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
}

/// `tasks/get` and `tasks/continue` result (2026-07-28).
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct SubscriptionMeta {
    /// The subscription (the `subscriptions/listen` request id).
    #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
    pub subscription_id: Value,
}

/// Params of `notifications/tasks`: a detailed task of a subscribed task.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct TaskNotificationParams {
    /// The task.
    #[serde(flatten)]
    pub task: TaskFields,
    /// The subscription.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta,
}

/// Params of `tasks/get` and `tasks/cancel` (2026-07-28).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// Params of `tasks/update`.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers by input request key.
    pub input_responses: std::collections::BTreeMap<String, ElicitResult>,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// Params of `tasks/continue` (SEP-2339).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContinueTaskRequestParams {
    /// The task.
    pub task_id: String,
    /// Answers by input request key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_responses: Option<std::collections::BTreeMap<String, ElicitResult>>,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// The result of `tasks/update` and `tasks/cancel` (2026-07-28).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// Always `complete`.
    pub result_type: Complete,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Which notifications a subscription asks for.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationFilter {
    /// Tasks to follow.
    pub task_ids: Vec<String>,
}

/// Params of `subscriptions/listen`.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct ListenRequestParams {
    /// What to follow.
    pub notifications: NotificationFilter,
    /// Protocol version, client info and capabilities.
    #[serde(rename = "_meta")]
    pub meta: RequestMeta,
}

/// Result of `subscriptions/listen` (sent when the subscription ends).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListenResult {
    /// Always `complete`.
    pub result_type: Complete,
    /// The subscription.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta,
}

/// Params of `notifications/subscriptions/acknowledged`.
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct SubscriptionsAcknowledgedParams {
    /// What is followed.
    pub notifications: NotificationFilter,
    /// The subscription.
    #[serde(rename = "_meta")]
    pub meta: SubscriptionMeta,
}

/// Params of `initialize` (2025-11-25 and older).
#[derive(Serialize, Deserialize, JsonSchema)]
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
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// Agreed revision.
    pub protocol_version: String,
    /// Server capabilities (`tasks.{list, cancel, requests.tools.call}` when tasks are served).
    pub capabilities: Map<String, Value>,
    /// The server.
    pub server_info: Implementation,
    /// For the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// A task (2025-11-25): `tasks/get` and `tasks/cancel` result.
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTask {
    /// The task.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// For a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time (ISO 8601).
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// Last change (ISO 8601).
    #[schemars(extend("format" = "date-time"))]
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
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct LegacyCreateTaskResult {
    /// The task.
    pub task: LegacyTask,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Result of `tools/call` (2025-11-25).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum LegacyToolsCallResult {
    /// A task was created.
    Task(LegacyCreateTaskResult),
    /// Answered directly.
    Complete(LegacyCallToolResult),
}

/// Params of `tasks/get`, `tasks/cancel` and `tasks/result` (2025-11-25).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyTaskRequestParams {
    /// The task.
    pub task_id: String,
}

/// Params of `tasks/list` (2025-11-25).
#[derive(Serialize, Deserialize, JsonSchema)]
pub struct LegacyListTasksRequestParams {
    /// The page to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Result of `tasks/list` (2025-11-25).
#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LegacyListTasksResult {
    /// The caller's tasks.
    pub tasks: Vec<LegacyTask>,
    /// The next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

fn kind<T: JsonSchema>(name: &str, description: Option<&str>) -> Kind {
    let mut s = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    crate::tidy::no_null_when_optional(&mut s);
    finish(&mut s, name, description);
    Kind::new(name, s)
}

pub(crate) fn generate() -> Result<(Vec<Kind>, Value), SchemaError> {
    let kinds = vec![
        Kind::new("JsonRpcRequest", rpc::request("MCP JSON-RPC request.", false, &[], Map::new())),
        Kind::new("JsonRpcNotification", rpc::notification("MCP JSON-RPC notification.")),
        Kind::new("JsonRpcSuccessResponse", rpc::success("MCP JSON-RPC success response.", false)),
        Kind::new("JsonRpcError", rpc::error_object(json!({}))),
        Kind::new("JsonRpcErrorResponse", rpc::error_response("MCP JSON-RPC error response (also the body of HTTP 400/404 answers).", json!({}))),
        kind::<RequestParams>("RequestParams", Some("Params of server/discover and tools/list (2026-07-28).")),
        kind::<DiscoverResult>("DiscoverResult", None),
        kind::<ListToolsResult>("ListToolsResult", None),
        kind::<CallToolRequestParams>("CallToolRequestParams", None),
        kind::<CallToolResult>("CallToolResult", None),
        kind::<CreateTaskResult>("CreateTaskResult", None),
        kind::<InputRequiredResult>("InputRequiredResult", None),
        kind::<ToolsCallResult>("ToolsCallResult", None),
        kind::<TaskRequestParams>("TaskRequestParams", None),
        kind::<UpdateTaskRequestParams>("UpdateTaskRequestParams", None),
        kind::<ContinueTaskRequestParams>("ContinueTaskRequestParams", None),
        kind::<DetailedTask>("DetailedTask", None),
        kind::<EmptyResult>("EmptyResult", None),
        kind::<TaskNotificationParams>("TaskNotificationParams", None),
        kind::<ListenRequestParams>("ListenRequestParams", None),
        kind::<ListenResult>("ListenResult", None),
        kind::<SubscriptionsAcknowledgedParams>("SubscriptionsAcknowledgedParams", None),
        kind::<InputRequest>("ElicitRequest", Some("An input request of a task: {method, params}: elicitation/create, sampling/createMessage or roots/list.")),
        kind::<ElicitRequestParams>("ElicitRequestParams", None),
        kind::<ElicitResult>("ElicitResult", None),
        kind::<InitializeRequestParams>("InitializeRequestParams", None),
        kind::<InitializeResult>("InitializeResult", None),
        kind::<LegacyListToolsResult>("LegacyListToolsResult", None),
        kind::<LegacyCallToolRequestParams>("LegacyCallToolRequestParams", None),
        kind::<LegacyCallToolResult>("LegacyCallToolResult", None),
        kind::<LegacyCreateTaskResult>("LegacyCreateTaskResult", None),
        kind::<LegacyToolsCallResult>("LegacyToolsCallResult", None),
        kind::<LegacyTask>("LegacyTask", None),
        kind::<LegacyTaskRequestParams>("LegacyTaskRequestParams", None),
        kind::<LegacyListTasksRequestParams>("LegacyListTasksRequestParams", None),
        kind::<LegacyListTasksResult>("LegacyListTasksResult", None),
        kind::<LegacyTask>("LegacyTaskStatusNotificationParams", Some("Params of notifications/tasks/status (2025-11-25): the task, with io.modelcontextprotocol/related-task in _meta.")),
    ];
    let m = |params: Option<&str>, result: Option<&str>| {
        let mut e = Map::new();
        if let Some(p) = params {
            e.insert("params".into(), json!(p));
        }
        if let Some(r) = result {
            e.insert("result".into(), json!(r));
        }
        Value::Object(e)
    };
    let mut current = Map::new();
    current.insert(
        method::DISCOVER.into(),
        m(Some("RequestParams"), Some("DiscoverResult")),
    );
    current.insert(
        method::TOOLS_LIST.into(),
        m(Some("RequestParams"), Some("ListToolsResult")),
    );
    current.insert(
        method::TOOLS_CALL.into(),
        m(Some("CallToolRequestParams"), Some("ToolsCallResult")),
    );
    current.insert(
        method::TASKS_GET.into(),
        m(Some("TaskRequestParams"), Some("DetailedTask")),
    );
    current.insert(
        method::TASKS_UPDATE.into(),
        m(Some("UpdateTaskRequestParams"), Some("EmptyResult")),
    );
    current.insert(
        method::TASKS_CANCEL.into(),
        m(Some("TaskRequestParams"), Some("EmptyResult")),
    );
    current.insert(
        method::TASKS_CONTINUE.into(),
        m(Some("ContinueTaskRequestParams"), Some("DetailedTask")),
    );
    current.insert(
        method::SUBSCRIPTIONS_LISTEN.into(),
        m(Some("ListenRequestParams"), Some("ListenResult")),
    );
    current.insert(
        method::NOTIFY_TASKS.into(),
        m(Some("TaskNotificationParams"), None),
    );
    current.insert(
        method::NOTIFY_SUBSCRIPTIONS_ACK.into(),
        m(Some("SubscriptionsAcknowledgedParams"), None),
    );
    let mut legacy = Map::new();
    legacy.insert(
        method::INITIALIZE.into(),
        m(Some("InitializeRequestParams"), Some("InitializeResult")),
    );
    legacy.insert(
        method::TOOLS_LIST.into(),
        m(None, Some("LegacyListToolsResult")),
    );
    legacy.insert(
        method::TOOLS_CALL.into(),
        m(
            Some("LegacyCallToolRequestParams"),
            Some("LegacyToolsCallResult"),
        ),
    );
    legacy.insert(
        method::TASKS_GET.into(),
        m(Some("LegacyTaskRequestParams"), Some("LegacyTask")),
    );
    legacy.insert(
        method::TASKS_CANCEL.into(),
        m(Some("LegacyTaskRequestParams"), Some("LegacyTask")),
    );
    legacy.insert(
        method::TASKS_RESULT.into(),
        m(
            Some("LegacyTaskRequestParams"),
            Some("LegacyCallToolResult"),
        ),
    );
    legacy.insert(
        method::TASKS_LIST.into(),
        m(
            Some("LegacyListTasksRequestParams"),
            Some("LegacyListTasksResult"),
        ),
    );
    legacy.insert(
        method::NOTIFY_TASKS_STATUS.into(),
        m(Some("LegacyTaskStatusNotificationParams"), None),
    );
    legacy.insert(
        method::ELICITATION_CREATE.into(),
        m(Some("ElicitRequestParams"), Some("ElicitResult")),
    );
    let mut methods = Map::new();
    methods.insert(V_CURRENT.into(), Value::Object(current));
    methods.insert(V_LEGACY.into(), Value::Object(legacy));
    let entry = json!({
        "schemas": schemas_entry(crate::protocol::MCP, &kinds),
        "methods": methods,
        "envelope": {"request": "JsonRpcRequest", "notification": "JsonRpcNotification", "success": "JsonRpcSuccessResponse", "error": "JsonRpcErrorResponse"},
    });
    Ok((kinds, entry))
}

#[cfg(test)]
mod tests {
    use taskwire_mcp::wire::meta;

    use super::*;

    fn props(kind: &str) -> Value {
        let (kinds, _) = generate().expect("generate");
        kinds
            .into_iter()
            .find(|k| k.name == kind)
            .map(|k| k.schema)
            .unwrap_or_else(|| panic!("no {kind}"))
    }

    /// The `_meta` keys written as literals in the serde renames are the adapter's.
    #[test]
    fn meta_keys_are_the_adapters_constants() {
        let s = props("RequestParams");
        let m = &s["$defs"]["RequestMeta"]["properties"];
        for key in [
            meta::PROTOCOL_VERSION,
            meta::CLIENT_INFO,
            meta::CLIENT_CAPABILITIES,
        ] {
            assert!(m.get(key).is_some(), "{key} missing from {m}");
        }
        let s = props("DiscoverResult");
        assert!(s["$defs"]["ServerMeta"]["properties"]
            .get(meta::SERVER_INFO)
            .is_some());
        let s = props("ListenResult");
        assert!(s["$defs"]["SubscriptionMeta"]["properties"]
            .get(meta::SUBSCRIPTION_ID)
            .is_some());
    }
}
