//! MCP over Streamable HTTP (`POST {base}/mcp`): tools as tasks.
//!
//! Two clients, one per wire generation:
//! - [`McpClient`] speaks revision 2026-07-28 (no handshake, no session: every
//!   request carries `params._meta` and the `MCP-Protocol-Version`,
//!   `Mcp-Method` and `Mcp-Name` headers) with the tasks extension
//!   (SEP-2663: `tools/call` answered with a task, `tasks/get`,
//!   `tasks/update`, `tasks/cancel`, `subscriptions/listen`) and
//!   `tasks/continue` (SEP-2339).
//! - [`McpClient2025_11_25`] speaks revision 2025-11-25: `initialize` (+
//!   `notifications/initialized`), the `Mcp-Session-Id` session, and the
//!   experimental tasks (`params.task`, `tasks/get`, `tasks/result`,
//!   `tasks/list`, `tasks/cancel`).
//!
//! Both accept an `application/json` or a `text/event-stream` answer to any
//! POST: on a stream, server messages before the response (notifications,
//! server requests) are kept in [`McpReply::messages`].

use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::config::{ClientConfig, Exchange, Received};
use crate::error::ClientError;
use crate::http::{self, RawResponse};

/// The default endpoint path.
pub const MCP_PATH: &str = "/mcp";
/// Protocol revision 2026-07-28, the one this client speaks.
pub const VERSION_2026_07_28: &str = "2026-07-28";
/// The revision of the experimental tasks.
pub const VERSION_2025_11_25: &str = "2025-11-25";
/// The tasks extension id.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

use taskwire_wire::jsonrpc;
/// Method, header and `_meta` names, shared with taskwire-mcp.
pub use taskwire_wire::names::mcp::{header, meta, method};

use taskwire_wire::mcp as wire;
/// The MCP task messages this client reads, defined once in the wire layer
/// (`taskwire_wire::mcp`) for the server, this client and the schemas; the
/// names are the ones this module exported before.
pub use taskwire_wire::mcp::{
    CallToolResult2025_11_25 as CallToolResult, ClientCapabilities, ContentBlock, CreateTaskResult,
    DetailedTask, DiscoverResult, ElicitAction, ElicitResult, EmptyResult, Implementation,
    InitializeResult, InputRequest, InputRequiredResult,
    ListTasksResult2025_11_25 as TaskPage2025_11_25, RequestMeta, Task2025_11_25, TaskFields,
    TaskStatus as McpTaskStatus, Tool,
};

/// What a `tools/call` answered (revision 2026-07-28).
#[derive(Clone, Debug, PartialEq)]
pub enum ToolCallOutcome {
    /// `resultType: "complete"`: the tool's result.
    Complete(CallToolResult),
    /// `resultType: "task"`: the call became a task.
    Task(CreateTaskResult),
    /// `resultType: "input_required"` (MRTR): the input requests and the state to send back.
    InputRequired(InputRequiredResult),
}

/// An `ElicitResult` accepting with `content` (an input response).
pub fn elicit_accept(content: Map<String, Value>) -> ElicitResult {
    ElicitResult::accept(content)
}

/// An `ElicitResult` declining.
pub fn elicit_decline() -> ElicitResult {
    ElicitResult::decline()
}

/// An `ElicitResult` cancelling.
pub fn elicit_cancel() -> ElicitResult {
    ElicitResult::cancel()
}

/// This client's `clientInfo`.
fn own_info() -> Implementation {
    Implementation {
        name: "taskwire-client".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        other: Map::new(),
    }
}

/// A typed request's params as the JSON they are sent as.
fn params<T: Serialize>(p: &T) -> Result<Value, ClientError> {
    crate::a2a::to_json(p)
}

/// Tool arguments: an object, or nothing (`null`).
fn arguments(v: Value) -> Result<Option<Map<String, Value>>, ClientError> {
    match v {
        Value::Object(m) => Ok(Some(m)),
        Value::Null => Ok(None),
        other => Err(ClientError::Config(format!(
            "tool arguments must be an object, got {other}"
        ))),
    }
}

/// A JSON-RPC response with everything that came before it on the same POST.
#[derive(Clone, Debug, PartialEq)]
pub struct McpReply {
    /// The HTTP status.
    pub http_status: u16,
    /// The media type of the answer (`application/json` or `text/event-stream`).
    pub media_type: Option<String>,
    /// The `Mcp-Session-Id` response header.
    pub session_id: Option<String>,
    /// The whole JSON-RPC response message.
    pub response: Value,
    /// Other messages on the stream before the response (notifications and
    /// server requests), in order.
    pub messages: Vec<Value>,
}

/// Answers server requests (e.g. `elicitation/create`) that arrive on the
/// SSE answer of a request: given the request message, `Some(result)` is sent
/// back as its response, `None` leaves it unanswered.
pub type ServerRequestHandler<'a> = dyn FnMut(&Value) -> Option<Value> + Send + 'a;

/// A header value as MCP wants it: as is when it is visible ASCII, else in
/// `=?base64?…?=` form.
pub fn header_safe(v: &str) -> String {
    let safe = !v.is_empty()
        && v.bytes().all(|b| (0x20..0x7f).contains(&b))
        && !v.starts_with(' ')
        && !v.ends_with(' ')
        && !v.starts_with("=?");
    if safe {
        v.to_string()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(v.as_bytes())
        )
    }
}

#[derive(Debug)]
struct Transport {
    config: ClientConfig,
    http: reqwest::Client,
    endpoint: String,
}

impl Transport {
    fn new(config: ClientConfig, endpoint: &str) -> Result<Self, ClientError> {
        let http = config.http_client()?;
        let endpoint = config.url(endpoint);
        Ok(Self {
            config,
            http,
            endpoint,
        })
    }

    async fn post_raw(
        &self,
        body: Bytes,
        headers: &[(String, String)],
    ) -> Result<reqwest::Response, ClientError> {
        let mut rb = self.http.post(&self.endpoint).header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        );
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        {
            rb = rb.header(reqwest::header::CONTENT_TYPE, http::JSON_MEDIA_TYPE);
        }
        for (k, v) in headers {
            rb = rb.header(k.as_str(), v.as_str());
        }
        let c = &self.config;
        let resp = tokio::time::timeout(c.request_timeout, c.send(rb.body(body)))
            .await
            .map_err(|_| ClientError::Timeout("MCP request: no response head".into()))??;
        Ok(resp)
    }

    /// Sends one request and reads its response (JSON or SSE).
    async fn request(
        &self,
        id: u64,
        body: &Value,
        headers: &[(String, String)],
    ) -> Result<McpReply, ClientError> {
        self.request_with(id, body, headers, None).await
    }

    /// As [`Transport::request`]; server requests arriving on an SSE answer
    /// are passed to `handler`, and a `Some(result)` is POSTed back as the
    /// response to that server request.
    async fn request_with(
        &self,
        id: u64,
        body: &Value,
        headers: &[(String, String)],
        mut handler: Option<&mut ServerRequestHandler<'_>>,
    ) -> Result<McpReply, ClientError> {
        let method = body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let resp = self
            .post_raw(Bytes::from(body.to_string()), headers)
            .await?;
        let status = resp.status().as_u16();
        let media = http::content_type(&resp);
        let session_id = resp
            .headers()
            .get(header::SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let reply = if media.as_deref() == Some(http::SSE_MEDIA_TYPE) {
            let limit = self.config.request_timeout;
            let mut events = http::sse_events_limited(
                resp.bytes_stream(),
                self.config.stream_idle_timeout,
                self.config.max_message_bytes,
            );
            let mut messages = Vec::new();
            let found = tokio::time::timeout(limit, async {
                while let Some(ev) = events.next().await {
                    let ev = ev?;
                    if ev.data.trim().is_empty() {
                        continue;
                    }
                    let msg: Value = serde_json::from_str(&ev.data).map_err(|e| {
                        ClientError::decode("SSE data (JSON-RPC)", e, ev.data.as_bytes())
                    })?;
                    let is_response = msg.get("method").is_none()
                        && msg.get("id").and_then(Value::as_u64) == Some(id);
                    if is_response {
                        return Ok(Some(msg));
                    }
                    let server_request =
                        msg.get("method").is_some() && msg.get("id").is_some_and(|i| !i.is_null());
                    if server_request {
                        if let Some(h) = handler.as_mut() {
                            if let Some(result) = h(&msg) {
                                let answer = jsonrpc::result(&msg["id"], result);
                                self.notify(&answer, headers).await?;
                            }
                        }
                    }
                    messages.push(msg);
                }
                Ok::<_, ClientError>(None)
            })
            .await
            .map_err(|_| ClientError::Timeout(format!("{method}: no response on the stream")))??;
            match found {
                Some(response) => McpReply {
                    http_status: status,
                    media_type: media,
                    session_id,
                    response,
                    messages,
                },
                None => {
                    return Err(ClientError::Protocol(format!(
                        "{method}: the event stream ended without the response"
                    )))
                }
            }
        } else {
            let raw = RawResponse::read_limited(resp, self.config.max_message_bytes).await?;
            if media.as_deref() != Some(http::JSON_MEDIA_TYPE) && !(200..300).contains(&status) {
                // Not JSON-RPC at all (a proxy error page, …).
                if serde_json::from_slice::<Value>(&raw.body).is_err() {
                    return Err(http::http_error(&raw));
                }
            }
            let response = http::json_body(&raw)?;
            if media.as_deref() != Some(http::JSON_MEDIA_TYPE) {
                self.observe(&method, body, status, &response);
                return Err(ClientError::ContentType {
                    expected: "application/json or text/event-stream".into(),
                    got: media,
                });
            }
            if !(200..300).contains(&status) && http::check_id(&response, id).is_err() {
                // A refusal that answers no request of ours (the Python SDK
                // 1.x answers `"id": "server-error"` to a request without a
                // session, or with one it does not hold): an HTTP error.
                self.observe(&method, body, status, &response);
                return Err(http::http_error(&raw));
            }
            http::check_id(&response, id)?;
            McpReply {
                http_status: status,
                media_type: media,
                session_id,
                response,
                messages: Vec::new(),
            }
        };
        self.observe(&method, body, status, &reply.response);
        Ok(reply)
    }

    fn observe(&self, method: &str, request: &Value, status: u16, response: &Value) {
        self.config.observe(|| Exchange {
            protocol: "mcp",
            operation: method.to_string(),
            request: request.clone(),
            status: Some(status),
            response: response.clone(),
        });
    }

    /// Sends a notification (no response expected beyond 2xx).
    async fn notify(&self, body: &Value, headers: &[(String, String)]) -> Result<u16, ClientError> {
        let resp = self
            .post_raw(Bytes::from(body.to_string()), headers)
            .await?;
        let raw = RawResponse::read_limited(resp, self.config.max_message_bytes).await?;
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        Ok(raw.status)
    }
}

fn typed<T: serde::de::DeserializeOwned>(
    raw: Value,
    what: &str,
) -> Result<Received<T>, ClientError> {
    let value = T::deserialize(&raw)
        .map_err(|e| ClientError::decode(what, e, raw.to_string().as_bytes()))?;
    Ok(Received { value, raw })
}

/// The default of [`ClientConfig::max_list_pages`]: most `tools/list` pages a
/// client reads; a server that pages on is an error (as is one that repeats a
/// cursor).
pub const MAX_TOOL_PAGES: usize = 100;

/// Every page of `tools/list` (at most `max_pages`), `page` sending one
/// request with the given params (`{}` first, then `{"cursor": …}`).
async fn all_tools<F, Fut>(
    max_pages: usize,
    mut page: F,
) -> Result<Received<Vec<Tool>>, ClientError>
where
    F: FnMut(Value) -> Fut,
    Fut: std::future::Future<Output = Result<Value, ClientError>>,
{
    let mut value = Vec::new();
    let mut raw = Vec::new();
    let mut cursors = std::collections::HashSet::new();
    let mut params = Map::new();
    for _ in 0..max_pages {
        let mut r = page(Value::Object(params.clone())).await?;
        let tools = r
            .get_mut("tools")
            .map(Value::take)
            .unwrap_or(Value::Array(vec![]));
        let page_tools = typed::<Vec<Tool>>(tools, "tools")?;
        value.extend(page_tools.value);
        if let Value::Array(t) = page_tools.raw {
            raw.extend(t);
        }
        let next = r
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty());
        let Some(next) = next else {
            return Ok(Received {
                value,
                raw: serde_json::json!({ "tools": raw }),
            });
        };
        if !cursors.insert(next.to_string()) {
            return Err(ClientError::Protocol(format!(
                "tools/list gave the cursor {next:?} twice"
            )));
        }
        params.insert("cursor".into(), Value::String(next.to_string()));
    }
    Err(ClientError::Protocol(format!(
        "tools/list has more than {max_pages} pages"
    )))
}

/// JSON-RPC code of SEP-2575's `UnsupportedProtocolVersionError`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Whether `response` is an `UnsupportedProtocolVersionError` whose
/// `data.supported` lists revision 2026-07-28 (the one this client speaks).
fn unsupported_but_listed(response: &Value) -> bool {
    let Some(err) = response.get("error") else {
        return false;
    };
    err.get("code").and_then(Value::as_i64) == Some(UNSUPPORTED_PROTOCOL_VERSION)
        && err
            .pointer("/data/supported")
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|x| x.as_str() == Some(VERSION_2026_07_28)))
}

/// The MCP client of revision 2026-07-28 with the tasks extension. Cheap to
/// clone.
#[derive(Clone, Debug)]
pub struct McpClient {
    inner: Arc<Transport>,
    client_info: Implementation,
    declare_tasks: bool,
    capabilities: Map<String, Value>,
}

impl McpClient {
    /// A client for `{base}/mcp` declaring the tasks extension.
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        Self::with_endpoint(config, MCP_PATH)
    }

    /// A client for the endpoint `url` (absolute, or a path below the base).
    pub fn with_endpoint(config: ClientConfig, url: &str) -> Result<Self, ClientError> {
        Ok(Self {
            inner: Arc::new(Transport::new(config, url)?),
            client_info: own_info(),
            declare_tasks: true,
            capabilities: Map::new(),
        })
    }

    /// Whether requests declare the tasks extension (default true). Without
    /// it, `tools/call` blocks and answers with the result.
    pub fn declare_tasks_extension(mut self, yes: bool) -> Self {
        self.declare_tasks = yes;
        self
    }

    /// Declares a client capability in every request's `_meta` (for example
    /// `elicitation`: `{"form": {}, "url": {}}`, without which a server may
    /// not ask for input in a SEP-2322 `input_required` answer).
    pub fn capability(mut self, name: &str, value: Value) -> Self {
        self.capabilities.insert(name.to_string(), value);
        self
    }

    /// The `clientInfo` sent in `_meta`.
    pub fn client_info(mut self, info: Implementation) -> Self {
        self.client_info = info;
        self
    }

    /// The endpoint url.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// The `_meta` object every request carries.
    pub fn request_meta(&self) -> RequestMeta {
        let extensions = self.declare_tasks.then(|| {
            let mut m = Map::new();
            m.insert(TASKS_EXTENSION.into(), Value::Object(Map::new()));
            m
        });
        RequestMeta {
            protocol_version: VERSION_2026_07_28.into(),
            client_info: Some(self.client_info.clone()),
            client_capabilities: ClientCapabilities {
                extensions,
                other: self.capabilities.clone(),
            },
            other: Map::new(),
        }
    }

    /// Sends any request (adding `_meta` and the headers) and returns the
    /// whole reply; JSON-RPC errors are returned inside the reply, not as
    /// `Err`. `name` is the `Mcp-Name` header value.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        name: Option<&str>,
    ) -> Result<McpReply, ClientError> {
        let mut params = match params {
            Value::Object(m) => m,
            Value::Null => Map::new(),
            other => {
                return Err(ClientError::Config(format!(
                    "MCP params must be an object, got {other}"
                )))
            }
        };
        let mut m = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if let Value::Object(base) = self::params(&self.request_meta())? {
            for (k, v) in base {
                m.entry(k).or_insert(v);
            }
        }
        params.insert("_meta".into(), Value::Object(m));
        let id = http::next_id();
        let body = jsonrpc::request(&Value::from(id), method, Value::Object(params));
        let mut headers = vec![
            (
                header::PROTOCOL_VERSION.to_string(),
                VERSION_2026_07_28.to_string(),
            ),
            (header::METHOD.to_string(), method.to_string()),
        ];
        if let Some(n) = name {
            headers.push((header::NAME.to_string(), header_safe(n)));
        }
        let reply = self.inner.request(id, &body, &headers).await?;
        // SEP-2575 negotiation: a server that refuses the version
        // (UnsupportedProtocolVersionError) yet lists it as supported is
        // asked once more, with a new id; one that does not list it stands.
        if unsupported_but_listed(&reply.response) {
            let id = http::next_id();
            let mut body = body;
            body["id"] = Value::from(id);
            return self.inner.request(id, &body, &headers).await;
        }
        Ok(reply)
    }

    /// Sends a request and returns its `result` (errors as [`ClientError::Rpc`]).
    pub async fn call_raw(
        &self,
        method: &str,
        params: Value,
        name: Option<&str>,
    ) -> Result<Value, ClientError> {
        let reply = self.request(method, params, name).await?;
        http::rpc_result(&reply.response, Some(reply.http_status))
    }

    /// POSTs `body` as is (with auth and `content-type: application/json`
    /// unless `headers` sets one): for malformed-request probes.
    pub async fn post_raw(
        &self,
        body: impl Into<Bytes>,
        headers: &[(&str, &str)],
    ) -> Result<RawResponse, ClientError> {
        let h: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let resp = self.inner.post_raw(body.into(), &h).await?;
        RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await
    }

    /// `server/discover`: supported versions and capabilities.
    pub async fn discover(&self) -> Result<Received<DiscoverResult>, ClientError> {
        let r = self
            .call_raw(method::DISCOVER, Value::Object(Map::new()), None)
            .await?;
        typed(r, "DiscoverResult")
    }

    /// Whether a discover result advertises the tasks extension.
    pub fn offers_tasks(discover: &DiscoverResult) -> bool {
        discover
            .capabilities
            .extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
    }

    /// `tools/list`, every page (following `nextCursor`, at most
    /// [`ClientConfig::max_list_pages`]); `raw` is `{"tools": [...]}` of all
    /// of them.
    pub async fn list_tools(&self) -> Result<Received<Vec<Tool>>, ClientError> {
        all_tools(self.inner.config.max_list_pages, |params| {
            self.call_raw(method::TOOLS_LIST, params, None)
        })
        .await
    }

    /// `tools/call`: the tool's result, a task, or an MRTR input request.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Received<ToolCallOutcome>, ClientError> {
        self.call_tool_answering(name, arguments, None, None).await
    }

    /// `tools/call` repeated after an [`ToolCallOutcome::InputRequired`]
    /// (SEP-2322): the same tool and arguments with the answers by input
    /// request key and the `requestState` the server gave.
    pub async fn call_tool_answering(
        &self,
        name: &str,
        arguments: Value,
        input_responses: Option<BTreeMap<String, ElicitResult>>,
        request_state: Option<String>,
    ) -> Result<Received<ToolCallOutcome>, ClientError> {
        let input_responses = match input_responses {
            Some(r) => Some(
                r.into_iter()
                    .map(|(k, v)| params(&v).map(|v| (k, v)))
                    .collect::<Result<Map<String, Value>, _>>()?,
            ),
            None => None,
        };
        let r = self
            .call_raw(
                method::TOOLS_CALL,
                params(&wire::CallToolRequestParams {
                    name: name.to_string(),
                    arguments: self::arguments(arguments)?,
                    input_responses,
                    request_state,
                    meta: self.request_meta(),
                })?,
                Some(name),
            )
            .await?;
        let outcome = match r.get("resultType").and_then(Value::as_str) {
            Some("task") => ToolCallOutcome::Task(typed(r.clone(), "CreateTaskResult")?.value),
            Some("input_required") => {
                ToolCallOutcome::InputRequired(typed(r.clone(), "InputRequiredResult")?.value)
            }
            _ => ToolCallOutcome::Complete(typed(r.clone(), "CallToolResult")?.value),
        };
        Ok(Received {
            value: outcome,
            raw: r,
        })
    }

    /// `tasks/get`.
    pub async fn get_task(&self, task_id: &str) -> Result<Received<DetailedTask>, ClientError> {
        let r = self
            .call_raw(method::TASKS_GET, self.task_params(task_id)?, Some(task_id))
            .await?;
        typed(r, "DetailedTask")
    }

    /// `tasks/update`: answers input requests by key (values are
    /// `ElicitResult`s, see [`elicit_accept`]).
    pub async fn update_task(
        &self,
        task_id: &str,
        input_responses: BTreeMap<String, ElicitResult>,
    ) -> Result<Received<EmptyResult>, ClientError> {
        let p = params(&wire::UpdateTaskRequestParams {
            task_id: task_id.to_string(),
            input_responses,
            meta: self.request_meta(),
        })?;
        let r = self
            .call_raw(method::TASKS_UPDATE, p, Some(task_id))
            .await?;
        typed(r, "EmptyResult")
    }

    fn task_params(&self, task_id: &str) -> Result<Value, ClientError> {
        params(&wire::TaskRequestParams {
            task_id: task_id.to_string(),
            meta: self.request_meta(),
        })
    }

    /// `tasks/cancel`.
    pub async fn cancel_task(&self, task_id: &str) -> Result<Received<EmptyResult>, ClientError> {
        let r = self
            .call_raw(
                method::TASKS_CANCEL,
                self.task_params(task_id)?,
                Some(task_id),
            )
            .await?;
        typed(r, "EmptyResult")
    }

    /// `tasks/continue` (SEP-2339): applies the input responses, if any, and
    /// returns the task.
    pub async fn continue_task(
        &self,
        task_id: &str,
        input_responses: Option<BTreeMap<String, ElicitResult>>,
    ) -> Result<Received<DetailedTask>, ClientError> {
        let p = params(&wire::ContinueTaskRequestParams {
            task_id: task_id.to_string(),
            input_responses,
            meta: self.request_meta(),
        })?;
        let r = self
            .call_raw(method::TASKS_CONTINUE, p, Some(task_id))
            .await?;
        typed(r, "DetailedTask")
    }

    /// Polls `tasks/get` (at the task's `pollIntervalMs`, else the config's
    /// poll interval) until the task is terminal or `input_required`, at most
    /// until `limit`.
    pub async fn wait_task(
        &self,
        task_id: &str,
        limit: std::time::Duration,
    ) -> Result<Received<DetailedTask>, ClientError> {
        let deadline = crate::config::after(limit);
        loop {
            let t = self.get_task(task_id).await?;
            if t.status.is_terminal() || t.status == McpTaskStatus::InputRequired {
                return Ok(t);
            }
            let wait = t
                .poll_interval_ms
                .map(std::time::Duration::from_millis)
                .unwrap_or(self.inner.config.poll_interval)
                .min(
                    self.inner
                        .config
                        .poll_interval
                        .max(std::time::Duration::from_millis(10)),
                );
            if crate::config::after(wait) > deadline {
                return Err(ClientError::Timeout(format!(
                    "task {task_id} still {:?} after {} ms",
                    t.status,
                    limit.as_millis()
                )));
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// `tasks/stream` (SEP-2694): the task's events as
    /// `notifications/tasks/event` messages, from the earliest retained one
    /// (`after: None`) or after the sequence number `after`, then the request's
    /// final message (the empty result, or an error such as `events_gone`,
    /// -32010). A task that ended with nothing after the cursor answers with the
    /// result alone. Errors before the stream opens are returned as errors.
    pub async fn stream_task(
        &self,
        task_id: &str,
        after: Option<u64>,
    ) -> Result<BoxStream<'static, Result<Value, ClientError>>, ClientError> {
        let id = http::next_id();
        let p = params(&wire::StreamTaskRequestParams {
            task_id: task_id.to_string(),
            after,
            meta: self.request_meta(),
        })?;
        let body = jsonrpc::request(&Value::from(id), method::TASKS_STREAM, p);
        let headers = vec![
            (
                header::PROTOCOL_VERSION.to_string(),
                VERSION_2026_07_28.to_string(),
            ),
            (header::METHOD.to_string(), method::TASKS_STREAM.to_string()),
            (header::NAME.to_string(), header_safe(task_id)),
        ];
        let resp = self
            .inner
            .post_raw(Bytes::from(body.to_string()), &headers)
            .await?;
        let media = http::content_type(&resp);
        if media.as_deref() != Some(http::SSE_MEDIA_TYPE) {
            let status = resp.status().as_u16();
            let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
            let json = http::json_body(&raw)?;
            http::rpc_result(&json, Some(status))?;
            return Ok(futures::stream::once(async move { Ok(json) }).boxed());
        }
        Ok(http::sse_json_limited(
            resp.bytes_stream(),
            self.inner.config.stream_idle_timeout,
            self.inner.config.max_message_bytes,
        ))
    }

    /// `subscriptions/listen` for task notifications: a stream of every
    /// message the server sends (the acknowledgement, `notifications/tasks`
    /// with a [`DetailedTask`] each, and finally the listen result).
    pub async fn listen_tasks(
        &self,
        task_ids: &[&str],
    ) -> Result<BoxStream<'static, Result<Value, ClientError>>, ClientError> {
        let id = http::next_id();
        let p = params(&wire::ListenRequestParams {
            notifications: wire::NotificationFilter {
                task_ids: task_ids.iter().map(|t| t.to_string()).collect(),
            },
            meta: self.request_meta(),
        })?;
        let body = jsonrpc::request(&Value::from(id), method::SUBSCRIPTIONS_LISTEN, p);
        let headers = vec![
            (
                header::PROTOCOL_VERSION.to_string(),
                VERSION_2026_07_28.to_string(),
            ),
            (
                header::METHOD.to_string(),
                method::SUBSCRIPTIONS_LISTEN.to_string(),
            ),
        ];
        let resp = self
            .inner
            .post_raw(Bytes::from(body.to_string()), &headers)
            .await?;
        let media = http::content_type(&resp);
        if media.as_deref() != Some(http::SSE_MEDIA_TYPE) {
            let status = resp.status().as_u16();
            let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
            let json = http::json_body(&raw)?;
            http::rpc_result(&json, Some(status))?;
            return Err(ClientError::ContentType {
                expected: http::SSE_MEDIA_TYPE.into(),
                got: media,
            });
        }
        Ok(http::sse_json_limited(
            resp.bytes_stream(),
            self.inner.config.stream_idle_timeout,
            self.inner.config.max_message_bytes,
        ))
    }
}

/// The `{taskId}` params of a 2025-11-25 task request.
fn rev_2025_11_25_task_params(task_id: &str) -> Result<Value, ClientError> {
    params(&wire::TaskRequestParams2025_11_25 {
        task_id: task_id.to_string(),
    })
}

/// The MCP client of revision 2025-11-25 (session, experimental tasks).
#[derive(Clone, Debug)]
pub struct McpClient2025_11_25 {
    inner: Arc<Transport>,
    session: Arc<Mutex<Option<String>>>,
    version: Arc<Mutex<String>>,
}

impl McpClient2025_11_25 {
    /// A client for `{base}/mcp`; call [`McpClient2025_11_25::initialize`] first
    /// (or use [`McpClient2025_11_25::connect`]).
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        Self::with_endpoint(config, MCP_PATH)
    }

    /// A client for the endpoint `url`.
    pub fn with_endpoint(config: ClientConfig, url: &str) -> Result<Self, ClientError> {
        Ok(Self {
            inner: Arc::new(Transport::new(config, url)?),
            session: Arc::new(Mutex::new(None)),
            version: Arc::new(Mutex::new(VERSION_2025_11_25.to_string())),
        })
    }

    /// A client with an initialized session (`initialize` with the
    /// `elicitation` capability, then `notifications/initialized`).
    pub async fn connect(
        config: ClientConfig,
    ) -> Result<(Self, Received<InitializeResult>), ClientError> {
        let c = Self::new(config)?;
        let mut caps = Map::new();
        caps.insert("elicitation".into(), Value::Object(Map::new()));
        let init = c.initialize(caps).await?;
        Ok((c, init))
    }

    /// The session id, once `initialize` gave one.
    pub fn session_id(&self) -> Option<String> {
        self.session.lock().ok().and_then(|s| s.clone())
    }

    /// A client of the same endpoint (sharing its connections) in the session
    /// `session_id` (one that an earlier [`McpClient2025_11_25::initialize`] opened,
    /// perhaps in another process), or in none.
    pub fn with_session(&self, session_id: Option<String>) -> Self {
        Self {
            inner: self.inner.clone(),
            session: Arc::new(Mutex::new(session_id)),
            version: Arc::new(Mutex::new(self.protocol_version())),
        }
    }

    /// The endpoint url.
    pub fn endpoint(&self) -> &str {
        &self.inner.endpoint
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> String {
        self.version
            .lock()
            .map(|v| v.clone())
            .unwrap_or_else(|_| VERSION_2025_11_25.to_string())
    }

    /// `initialize` with these client capabilities, then
    /// `notifications/initialized`; keeps the session id and version.
    pub async fn initialize(
        &self,
        capabilities: Map<String, Value>,
    ) -> Result<Received<InitializeResult>, ClientError> {
        let id = http::next_id();
        let p = params(&wire::InitializeRequestParams {
            protocol_version: VERSION_2025_11_25.into(),
            capabilities,
            client_info: own_info(),
        })?;
        let body = jsonrpc::request(&Value::from(id), method::INITIALIZE, p);
        let reply = self.inner.request(id, &body, &[]).await?;
        let result = http::rpc_result(&reply.response, Some(reply.http_status))?;
        let init: Received<InitializeResult> = typed(result, "InitializeResult")?;
        if let Ok(mut s) = self.session.lock() {
            *s = reply.session_id.clone();
        }
        if let Ok(mut g) = self.version.lock() {
            *g = init.protocol_version.clone();
        }
        self.notify(method::INITIALIZED, Value::Object(Map::new()))
            .await?;
        Ok(init)
    }

    fn headers(&self) -> Vec<(String, String)> {
        let mut h = vec![(
            header::PROTOCOL_VERSION.to_string(),
            self.protocol_version(),
        )];
        if let Some(s) = self.session_id() {
            h.push((header::SESSION_ID.to_string(), s));
        }
        h
    }

    /// Sends a notification in the session.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        let body = jsonrpc::notification(method, params);
        self.inner.notify(&body, &self.headers()).await.map(|_| ())
    }

    /// Sends any request in the session and returns the whole reply.
    pub async fn request(&self, method: &str, params: Value) -> Result<McpReply, ClientError> {
        let id = http::next_id();
        let body = jsonrpc::request(&Value::from(id), method, params);
        self.inner.request(id, &body, &self.headers()).await
    }

    /// Sends a request in the session, answering server requests that arrive
    /// on its SSE answer (e.g. the `elicitation/create` of a blocking
    /// `tools/call` or of `tasks/result`) with `handler`.
    pub async fn request_interactive(
        &self,
        method: &str,
        params: Value,
        handler: &mut ServerRequestHandler<'_>,
    ) -> Result<McpReply, ClientError> {
        let id = http::next_id();
        let body = jsonrpc::request(&Value::from(id), method, params);
        self.inner
            .request_with(id, &body, &self.headers(), Some(handler))
            .await
    }

    /// Sends a request in the session and returns every message of its answer
    /// as it arrives: on an SSE answer, the server's notifications and requests
    /// (e.g. `notifications/tasks/status` and `elicitation/create` of
    /// `tasks/result`) and finally the response; on a JSON answer, the response
    /// alone. Server requests are not answered: use [`McpClient2025_11_25::respond`].
    /// Dropping the stream closes the connection.
    pub async fn request_events(
        &self,
        method: &str,
        params: Value,
    ) -> Result<BoxStream<'static, Result<Value, ClientError>>, ClientError> {
        self.request_events_with_id(method, params)
            .await
            .map(|(_, s)| s)
    }

    /// As [`McpClient2025_11_25::request_events`], with the request's JSON-RPC id
    /// (to tell its response from the other messages, and to cancel it with
    /// [`McpClient2025_11_25::cancel_request`]). A non-success HTTP status is an
    /// error (the JSON-RPC error it carries, else [`ClientError::Http`]), not
    /// a message of the stream.
    pub async fn request_events_with_id(
        &self,
        method: &str,
        params: Value,
    ) -> Result<(Value, BoxStream<'static, Result<Value, ClientError>>), ClientError> {
        let id = http::next_id();
        let body = jsonrpc::request(&Value::from(id), method, params);
        let resp = self
            .inner
            .post_raw(Bytes::from(body.to_string()), &self.headers())
            .await?;
        let status = resp.status().as_u16();
        let media = http::content_type(&resp);
        if media.as_deref() != Some(http::SSE_MEDIA_TYPE) {
            let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
            let json = match serde_json::from_slice::<Value>(&raw.body) {
                Ok(v) => v,
                Err(_) => return Err(http::http_error(&raw)),
            };
            self.inner.observe(method, &body, status, &json);
            if !(200..300).contains(&status) {
                if http::check_id(&json, id).is_ok() {
                    http::rpc_result(&json, Some(status))?;
                }
                return Err(http::http_error(&raw));
            }
            return Ok((Value::from(id), futures::stream::iter([Ok(json)]).boxed()));
        }
        if !(200..300).contains(&status) {
            let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
            return Err(http::http_error(&raw));
        }
        Ok((
            Value::from(id),
            http::sse_json_limited(
                resp.bytes_stream(),
                self.inner.config.stream_idle_timeout,
                self.inner.config.max_message_bytes,
            ),
        ))
    }

    /// `notifications/cancelled` of the request `request_id` (a blocking
    /// `tools/call` whose answer is no longer wanted), with a reason.
    pub async fn cancel_request(
        &self,
        request_id: &Value,
        reason: Option<&str>,
    ) -> Result<(), ClientError> {
        let mut p = Map::new();
        p.insert("requestId".into(), request_id.clone());
        if let Some(r) = reason {
            p.insert("reason".into(), Value::String(r.to_string()));
        }
        self.notify(method::NOTIFY_CANCELLED, Value::Object(p))
            .await
    }

    /// Sends a request and returns its `result`.
    pub async fn call_raw(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let reply = self.request(method, params).await?;
        http::rpc_result(&reply.response, Some(reply.http_status))
    }

    /// Answers a server request (e.g. `elicitation/create`) in the session.
    pub async fn respond<T: Serialize>(
        &self,
        request_id: Value,
        result: &T,
    ) -> Result<(), ClientError> {
        let body = jsonrpc::result(&request_id, params(result)?);
        self.inner.notify(&body, &self.headers()).await.map(|_| ())
    }

    /// `tools/list`, every page (as [`McpClient::list_tools`]).
    pub async fn list_tools(&self) -> Result<Received<Vec<Tool>>, ClientError> {
        all_tools(self.inner.config.max_list_pages, |params| {
            self.call_raw(method::TOOLS_LIST, params)
        })
        .await
    }

    /// `tools/call` without a task: blocks until the result.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Received<CallToolResult>, ClientError> {
        let r = self
            .call_raw(
                method::TOOLS_CALL,
                params(&wire::CallToolRequestParams2025_11_25 {
                    name: name.to_string(),
                    arguments: self::arguments(arguments)?,
                    task: None,
                    meta: None,
                })?,
            )
            .await?;
        typed(r, "CallToolResult")
    }

    /// `tools/call` with `params.task {ttl}`: the created task.
    pub async fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        ttl_ms: Option<u64>,
    ) -> Result<Received<Task2025_11_25>, ClientError> {
        let r = self
            .call_raw(
                method::TOOLS_CALL,
                params(&wire::CallToolRequestParams2025_11_25 {
                    name: name.to_string(),
                    arguments: self::arguments(arguments)?,
                    task: Some(wire::TaskParam { ttl: ttl_ms }),
                    meta: None,
                })?,
            )
            .await?;
        let inner = r.get("task").cloned().unwrap_or(Value::Null);
        let value = typed::<Task2025_11_25>(inner, "CreateTaskResult.task")?.value;
        Ok(Received { value, raw: r })
    }

    /// `tasks/get`.
    pub async fn get_task(&self, task_id: &str) -> Result<Received<Task2025_11_25>, ClientError> {
        let r = self
            .call_raw(method::TASKS_GET, rev_2025_11_25_task_params(task_id)?)
            .await?;
        typed(r, "Task")
    }

    /// `tasks/result`: the original result once terminal (the server may
    /// block; the config's request timeout applies).
    pub async fn task_result(
        &self,
        task_id: &str,
    ) -> Result<Received<CallToolResult>, ClientError> {
        let r = self
            .call_raw(method::TASKS_RESULT, rev_2025_11_25_task_params(task_id)?)
            .await?;
        typed(r, "CallToolResult")
    }

    /// `tasks/list`.
    pub async fn list_tasks(
        &self,
        cursor: Option<&str>,
    ) -> Result<Received<TaskPage2025_11_25>, ClientError> {
        let p = params(&wire::ListTasksRequestParams2025_11_25 {
            cursor: cursor.map(str::to_string),
        })?;
        let r = self.call_raw(method::TASKS_LIST, p).await?;
        typed(r, "ListTasksResult")
    }

    /// `tasks/cancel`: the cancelled task.
    pub async fn cancel_task(
        &self,
        task_id: &str,
    ) -> Result<Received<Task2025_11_25>, ClientError> {
        let r = self
            .call_raw(method::TASKS_CANCEL, rev_2025_11_25_task_params(task_id)?)
            .await?;
        typed(r, "Task")
    }

    /// Ends the session (`DELETE` with the session id).
    pub async fn close(&self) -> Result<(), ClientError> {
        let Some(s) = self.session_id() else {
            return Ok(());
        };
        let resp = self
            .inner
            .http
            .delete(&self.inner.endpoint)
            .header(header::SESSION_ID, s)
            .timeout(self.inner.config.request_timeout);
        let resp = self.inner.config.send(resp).await?;
        let raw = RawResponse::read_limited(resp, self.inner.config.max_message_bytes).await?;
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        if let Ok(mut g) = self.session.lock() {
            *g = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_values_are_encoded_when_unsafe() {
        assert_eq!(header_safe("run_script"), "run_script");
        assert_eq!(header_safe("é"), "=?base64?w6k=?=");
        assert_eq!(header_safe(" x"), "=?base64?IHg=?=");
    }

    #[test]
    fn shapes_parse() {
        let d: DetailedTask = serde_json::from_value(json!({
            "taskId": "t", "status": "input_required", "resultType": "complete",
            "createdAt": "2026-07-28T12:00:00.000Z", "lastUpdatedAt": "2026-07-28T12:00:00.000Z",
            "inputRequests": {"k": {"method": "elicitation/create",
                "params": {"message": "name?", "requestedSchema": {"type": "object"}}}},
            "ttlMs": null
        }))
        .expect("detailed");
        assert_eq!(d.status, McpTaskStatus::InputRequired);
        assert!(d
            .input_requests
            .as_ref()
            .is_some_and(|m| m.contains_key("k")));
        let s: McpTaskStatus = serde_json::from_value(json!("paused")).expect("status");
        assert_eq!(s, McpTaskStatus::Unknown);
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [{"type": "text", "text": "a"},
                {"type": "image", "data": "AA==", "mimeType": "image/png"},
                {"type": "text", "text": "b"}]
        }))
        .expect("result");
        assert_eq!(r.text(), "a\nb");
    }
}
