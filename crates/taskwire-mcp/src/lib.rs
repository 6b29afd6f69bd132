//! The MCP adapter of taskwire: an MCP server over Streamable HTTP at `/mcp` whose
//! tool calls run as tasks of the task core.
//!
//! ```
//! use std::sync::Arc;
//! use axum::{body::Body, http::Request};
//! use serde_json::{json, Value};
//! use taskwire_core::{Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService};
//! use taskwire_mcp::{McpAdapter, McpConfig};
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
//! let agent = Arc::new(ScriptedAgent::new());
//! let _runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
//! let routes = McpAdapter::new(service, agent, McpConfig::default()).routes();
//!
//! // Revision 2026-07-28: no handshake; `_meta` and the headers on every request.
//! let meta = json!({
//!     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!     "io.modelcontextprotocol/clientInfo": {"name": "doc", "version": "1"},
//!     "io.modelcontextprotocol/clientCapabilities": {}
//! });
//! let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
//!     "_meta": meta, "name": "run_script", "arguments": {"text": "hello"}}});
//! let mut req = Request::post("/mcp")
//!     .header("content-type", "application/json")
//!     .header("accept", "application/json, text/event-stream")
//!     .header("mcp-protocol-version", "2026-07-28")
//!     .header("mcp-method", "tools/call")
//!     .header("mcp-name", "run_script")
//!     .body(Body::from(call.to_string()))?;
//! req.extensions_mut().insert(Caller::local()); // what the server's auth layer does
//! let res = routes.oneshot(req).await?;
//! let body = axum::body::to_bytes(res.into_body(), 1 << 20).await?;
//! let answer: Value = serde_json::from_slice(&body)?;
//! // No task support declared: the call blocks until the task ends.
//! assert_eq!(answer["result"]["content"][0]["text"], "hello");
//! # Ok(())
//! # }
//! ```
//!
//! Three generations are served on the one endpoint, told apart by what the client
//! sends (see `docs/mcp.md`):
//! - revision 2026-07-28 (no handshake, per-request `_meta`, `server/discover`) with
//!   the tasks extension `io.modelcontextprotocol/tasks` (SEP-2663): `tools/call`
//!   answered with a flat `CreateTaskResult`, `tasks/get`, `tasks/update`,
//!   `tasks/cancel`, `notifications/tasks` through `subscriptions/listen`;
//! - `tasks/continue` (SEP-2339, Task Continuity) = `tasks/update` then `tasks/get`;
//! - revision 2025-11-25 after `initialize` (sessions with `Mcp-Session-Id`): the
//!   experimental tasks (`params.task`, nested results, `tasks/get`, `tasks/result`,
//!   `tasks/list`, `tasks/cancel`, `notifications/tasks/status`).
//!
//! Without any task support declared, `tools/call` blocks until the task ends (or a
//! timeout, which is a clear error) and returns the `CallToolResult`.
//!
//! The mapping between core and MCP vocabulary lives in `taskwire_vocab::mcp`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Extension, Router};
use serde_json::Value;

use taskwire_core::{Agent, AgentInfo, Caller, TaskService};

pub mod error;
pub mod fixture;
mod mrtr;
mod notify;
mod ops;
mod rev_2025_11_25;
mod rev_2026_07_28;
mod stream;
pub mod wire;

pub use error::RpcError;
pub use mrtr::StateKey;

/// The path the adapter serves.
pub const MCP_PATH: &str = "/mcp";

/// When `tools/call` from a client that declared the tasks extension becomes a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskMode {
    /// Every call is answered with a task.
    Always,
    /// The call waits this many milliseconds; if the task has ended by then the
    /// result is returned directly, otherwise (or if it needs input) a task.
    After(u64),
}

impl std::str::FromStr for TaskMode {
    type Err = RpcError;

    /// `always`, or a number of milliseconds (`after:<ms>` also works).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("always") {
            return Ok(TaskMode::Always);
        }
        let ms = s.strip_prefix("after:").unwrap_or(s);
        ms.parse::<u64>().map(TaskMode::After).map_err(|_| {
            RpcError::invalid_params(format!(
                "task mode must be `always` or a number of milliseconds, not {s:?}"
            ))
        })
    }
}

/// Settings of the MCP adapter.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct McpConfig {
    /// When a `tools/call` becomes a task (tasks extension only).
    pub task_mode: TaskMode,
    /// How long a blocking `tools/call` (no task support) waits before failing
    /// with a clear error (and cancelling the task).
    pub call_timeout: Duration,
    /// How long a 2025-11-25 `tasks/result` waits for the task to end.
    pub result_timeout: Duration,
    /// The suggested poll interval sent with tasks, in milliseconds.
    pub poll_interval_ms: u64,
    /// Largest request body, in bytes: larger ones are refused before parsing
    /// (HTTP 413, JSON-RPC Invalid Request -32600). The handler reads the body
    /// itself within this limit; the router has no layers of its own.
    pub max_body_bytes: usize,
    /// Most open 2025-11-25 sessions one caller (tenant and principal) may hold;
    /// one more `initialize` is refused (HTTP 429, -32600) until one ends or
    /// expires. Sessions are store records: they outlive a restart and are seen
    /// by every node sharing the store.
    pub max_sessions_per_principal: usize,
    /// How long an unused 2025-11-25 session lives (the sweeper then deletes it).
    pub session_idle: Duration,
    /// Prefix of the URL of a provider authorisation the agent gave no URL for
    /// (the provider name is appended).
    pub auth_url_base: String,
    /// Server name reported in `server/discover` and `initialize`.
    pub server_name: String,
    /// Host names a request's `Host` and `Origin` headers may carry (DNS
    /// rebinding protection: a page on another site that resolves its name to
    /// this server is refused with 403). Empty: any. The `taskwire` server sets
    /// [`McpConfig::LOOPBACK_HOSTS`] (and its public url's host) when it listens
    /// on a loopback address.
    pub allowed_hosts: Vec<String>,
    /// The key SEP-2322 `requestState`s are sealed with; `None`: a random key
    /// per adapter (states then do not outlive the process nor cross nodes, and
    /// a client holding one calls the tool again).
    pub request_state_key: Option<StateKey>,
    /// How long a `tools/call` of an input-first skill
    /// ([`taskwire_core::agent::Skill::input_first`]) from a client that follows
    /// tasks waits for the first turn to ask for its input before it answers
    /// with the task instead of an `input_required` round.
    pub input_first_wait: Duration,
}

impl McpConfig {
    /// The names of a loopback server: `localhost`, `127.0.0.1` and `[::1]`.
    pub const LOOPBACK_HOSTS: [&'static str; 3] = ["localhost", "127.0.0.1", "[::1]"];
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            task_mode: TaskMode::Always,
            call_timeout: Duration::from_secs(60),
            result_timeout: Duration::from_secs(300),
            poll_interval_ms: 500,
            max_body_bytes: 4 * 1024 * 1024,
            max_sessions_per_principal: 100,
            session_idle: Duration::from_secs(30 * 60),
            auth_url_base: "urn:taskwire:authorize:".into(),
            server_name: "taskwire".into(),
            allowed_hosts: Vec::new(),
            request_state_key: None,
            input_first_wait: Duration::from_secs(10),
        }
    }
}

pub(crate) struct Inner {
    pub(crate) service: TaskService,
    pub(crate) info: AgentInfo,
    pub(crate) config: McpConfig,
    pub(crate) sessions: rev_2025_11_25::Sessions,
    pub(crate) state_key: StateKey,
    pub(crate) open_streams: stream::OpenStreams,
}

/// The MCP adapter: build it once and mount [`McpAdapter::routes`].
#[derive(Clone)]
pub struct McpAdapter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpAdapter")
            .field("config", &self.inner.config)
            .finish()
    }
}

impl McpAdapter {
    /// An adapter over the service, offering the agent's skills as tools.
    pub fn new(service: TaskService, agent: Arc<dyn Agent>, config: McpConfig) -> Self {
        let info = agent.info().with_default_skill();
        Self {
            inner: Arc::new(Inner {
                sessions: rev_2025_11_25::Sessions::new(
                    service.clone(),
                    config.max_sessions_per_principal,
                    config.session_idle,
                ),
                service,
                info,
                state_key: config
                    .request_state_key
                    .clone()
                    .unwrap_or_else(StateKey::random),
                open_streams: stream::OpenStreams::default(),
                config,
            }),
        }
    }

    /// The authenticated routes: `POST /mcp`, `GET /mcp` (405: no standalone
    /// stream) and `DELETE /mcp` (ends a 2025-11-25 session). Handlers read the
    /// `Extension<Caller>` the server's auth layer inserts.
    pub fn routes(&self) -> Router {
        Router::new()
            .route(
                MCP_PATH,
                post(handle_post).get(handle_get).delete(handle_delete),
            )
            .with_state(self.inner.clone())
    }
}

/// `POST /mcp`. The request is taken whole and its body read here, within
/// [`McpConfig::max_body_bytes`], so that every refusal is a JSON-RPC error object:
/// a content type that is not JSON is 415, a body over the limit 413 and one that
/// cannot be read 400 (all Invalid Request, -32600), malformed JSON 400 (-32700).
async fn handle_post(
    State(inner): State<Arc<Inner>>,
    Extension(caller): Extension<Caller>,
    req: axum::extract::Request,
) -> Response {
    let (parts, body) = req.into_parts();
    let headers = parts.headers;
    // The connection (its peer address), where the server provides it.
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0);
    if let Err(e) = check_host(&inner.config.allowed_hosts, &headers) {
        return error_response(&Value::Null, &e);
    }
    if !is_json(&headers) {
        return error_response(
            &Value::Null,
            &RpcError::new(
                wire::code::INVALID_REQUEST,
                "POST /mcp takes a JSON-RPC message: Content-Type must be application/json",
            )
            .with_status(StatusCode::UNSUPPORTED_MEDIA_TYPE),
        );
    }
    let bytes = match read_body(&headers, body, inner.config.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => return error_response(&Value::Null, &e),
    };
    let msg = match wire::parse(&bytes) {
        Ok(m) => m,
        Err((id, e)) => return error_response(&id, &e),
    };
    if let Some(sid) = headers.get(wire::header::SESSION_ID) {
        let sid = sid.to_str().unwrap_or_default().to_string();
        return rev_2025_11_25::handle(inner, caller, headers, sid, msg).await;
    }
    // `initialize` opens a 2025-11-25 session, unless the request says it is
    // revision 2026-07-28, where the method no longer exists (404, -32601).
    let says_current = headers
        .get(wire::header::PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == wire::V_2026_07_28);
    if let wire::Incoming::Request { method, .. } = &msg {
        if method == wire::method::INITIALIZE && !says_current {
            return rev_2025_11_25::initialize(inner, caller, msg).await;
        }
    }
    rev_2026_07_28::handle(inner, caller, headers, peer, msg).await
}

/// The host of a `Host` value (an authority) or an `Origin` (a URL), without
/// port, lower case (`[::1]` keeps its brackets); parsed by `http`. A value that
/// does not parse is returned as it is, and so matches no allowed name.
fn host_of(value: &str) -> String {
    use axum::http::uri::{Authority, Uri};
    let v = value.trim();
    let host = if v.contains("://") {
        v.parse::<Uri>()
            .ok()
            .and_then(|u| u.host().map(str::to_string))
    } else {
        v.parse::<Authority>().ok().map(|a| a.host().to_string())
    };
    host.unwrap_or_else(|| v.to_string()).to_ascii_lowercase()
}

/// DNS rebinding protection: with `allowed` set, the `Host` header and any
/// `Origin` must name one of them (403 otherwise).
fn check_host(allowed: &[String], headers: &HeaderMap) -> Result<(), RpcError> {
    if allowed.is_empty() {
        return Ok(());
    }
    let ok = |v: &str| {
        let h = host_of(v);
        allowed.iter().any(|a| a.eq_ignore_ascii_case(&h))
    };
    let forbidden = |what: &str, v: &str| {
        RpcError::new(
            wire::code::INVALID_REQUEST,
            format!("{what} {v:?} is not a name of this server"),
        )
        .with_status(StatusCode::FORBIDDEN)
    };
    for (name, what) in [
        (axum::http::header::HOST, "Host"),
        (axum::http::header::ORIGIN, "Origin"),
    ] {
        for v in headers.get_all(&name) {
            let v = v.to_str().map_err(|_| forbidden(what, "<not ASCII>"))?;
            // `Origin: null` (opaque origins) names no host to check.
            let opaque = name == axum::http::header::ORIGIN && v.trim() == "null";
            if !opaque && !ok(v) {
                return Err(forbidden(what, v));
            }
        }
    }
    Ok(())
}

/// True if the `Content-Type` is JSON: `application/json` or a `+json` type, any
/// parameters, any case.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(ct) = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let base = ct.split(';').next().unwrap_or("").trim();
    base.eq_ignore_ascii_case("application/json")
        || base
            .len()
            .checked_sub(5)
            .and_then(|i| base.get(i..))
            .is_some_and(|end| end.eq_ignore_ascii_case("+json"))
}

/// The whole body within `limit` bytes: over it (declared or found while reading;
/// the rest is read first, see [`taskwire_wire::body`]) is Invalid Request with
/// 413; a body that cannot be read (the connection broke, or a layer in front
/// failed it, e.g. for not making progress) is Invalid Request with 400.
async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<axum::body::Bytes, RpcError> {
    match taskwire_wire::body::read_body(headers, body, limit).await {
        Ok(b) => Ok(b),
        Err(taskwire_wire::WireError::BodyTooLarge { .. }) => Err(RpcError::new(
            wire::code::INVALID_REQUEST,
            format!("request body exceeds the limit of {limit} bytes"),
        )
        .with_status(StatusCode::PAYLOAD_TOO_LARGE)),
        Err(e) => {
            tracing::debug!(error = %e, "mcp: request body could not be read");
            Err(RpcError::bad_request(
                wire::code::INVALID_REQUEST,
                "the request body could not be read",
            ))
        }
    }
}

/// `GET /mcp`: no standalone SSE stream (405, as the transport allows), answered
/// with a JSON-RPC error object.
async fn handle_get() -> Response {
    let mut r = error_response(
        &Value::Null,
        &RpcError::new(
            wire::code::INVALID_REQUEST,
            "this server offers no standalone SSE stream; POST requests to /mcp",
        )
        .with_status(StatusCode::METHOD_NOT_ALLOWED),
    );
    r.headers_mut()
        .insert("allow", HeaderValue::from_static("POST, DELETE"));
    r
}

async fn handle_delete(
    State(inner): State<Arc<Inner>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = check_host(&inner.config.allowed_hosts, &headers) {
        return error_response(&Value::Null, &e);
    }
    match headers
        .get(wire::header::SESSION_ID)
        .and_then(|v| v.to_str().ok())
    {
        Some(sid) if inner.sessions.remove(sid, &caller).await => {
            StatusCode::NO_CONTENT.into_response()
        }
        Some(_) => error_response(
            &Value::Null,
            &RpcError::new(wire::code::SESSION_NOT_FOUND, "session not found")
                .with_status(StatusCode::NOT_FOUND),
        ),
        None => error_response(
            &Value::Null,
            &RpcError::bad_request(
                wire::code::INVALID_REQUEST,
                "DELETE /mcp needs an Mcp-Session-Id header",
            ),
        ),
    }
}

/// A JSON response with a status.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut r = (status, body.to_string()).into_response();
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// An error response with the error's HTTP status.
pub(crate) fn error_response(id: &Value, e: &RpcError) -> Response {
    json_response(e.status, &wire::error(id, e))
}

/// 202 Accepted, for notifications and responses.
pub(crate) fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_checked_without_ports() {
        assert_eq!(host_of("localhost:7420"), "localhost");
        assert_eq!(host_of("http://[::1]:80/x"), "[::1]");
        assert_eq!(host_of("https://Evil.example"), "evil.example");
        let allowed: Vec<String> = McpConfig::LOOPBACK_HOSTS.map(String::from).to_vec();
        let h = |pairs: &[(&'static str, &'static str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.append(*k, HeaderValue::from_static(v));
            }
            m
        };
        assert!(check_host(&allowed, &h(&[("host", "127.0.0.1:7420")])).is_ok());
        assert!(check_host(&allowed, &h(&[("host", "localhost"), ("origin", "null")])).is_ok());
        let e = check_host(&allowed, &h(&[("host", "evil.example")])).unwrap_err();
        assert_eq!(e.status, StatusCode::FORBIDDEN);
        assert!(check_host(
            &allowed,
            &h(&[("host", "localhost"), ("origin", "http://evil.example")])
        )
        .is_err());
        assert!(check_host(&[], &h(&[("host", "evil.example")])).is_ok());
    }

    #[test]
    fn task_mode_parses() {
        assert_eq!("always".parse::<TaskMode>().ok(), Some(TaskMode::Always));
        assert_eq!("250".parse::<TaskMode>().ok(), Some(TaskMode::After(250)));
        assert_eq!("after:0".parse::<TaskMode>().ok(), Some(TaskMode::After(0)));
        assert!("soon".parse::<TaskMode>().is_err());
    }
}
