//! The MCP adapter of taskwire: an MCP server over Streamable HTTP at `/mcp` whose
//! tool calls run as tasks of the task core.
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

mod current;
pub mod error;
mod legacy;
mod notify;
mod ops;
pub mod wire;

pub use error::RpcError;

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
    /// Largest request body, in bytes.
    pub max_body_bytes: usize,
    /// Most open 2025-11-25 sessions; when full, idle ones are dropped first,
    /// then the least recently used.
    pub max_sessions: usize,
    /// How long an unused 2025-11-25 session counts as live when room is needed.
    pub session_idle: Duration,
    /// Prefix of the URL of a provider authorisation the agent gave no URL for
    /// (the provider name is appended).
    pub auth_url_base: String,
    /// Server name reported in `server/discover` and `initialize`.
    pub server_name: String,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            task_mode: TaskMode::Always,
            call_timeout: Duration::from_secs(60),
            result_timeout: Duration::from_secs(300),
            poll_interval_ms: 500,
            max_body_bytes: 4 * 1024 * 1024,
            max_sessions: 10_000,
            session_idle: Duration::from_secs(30 * 60),
            auth_url_base: "urn:taskwire:authorize:".into(),
            server_name: "taskwire".into(),
        }
    }
}

pub(crate) struct Inner {
    pub(crate) service: TaskService,
    pub(crate) info: AgentInfo,
    pub(crate) config: McpConfig,
    pub(crate) sessions: legacy::Sessions,
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
        let info = agent.info();
        Self {
            inner: Arc::new(Inner {
                service,
                info,
                sessions: legacy::Sessions::new(config.max_sessions, config.session_idle),
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

async fn handle_post(
    State(inner): State<Arc<Inner>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let limit = inner.config.max_body_bytes;
    let bytes = match axum::body::to_bytes(body, limit).await {
        Ok(b) => b,
        Err(_) => {
            return error_response(
                &Value::Null,
                &RpcError::new(
                    wire::code::INVALID_REQUEST,
                    format!("request body exceeds the limit of {limit} bytes"),
                )
                .with_status(StatusCode::PAYLOAD_TOO_LARGE),
            )
        }
    };
    let msg = match wire::parse(&bytes) {
        Ok(m) => m,
        Err((id, e)) => return error_response(&id, &e),
    };
    if let Some(sid) = headers.get(wire::header::SESSION_ID) {
        let sid = sid.to_str().unwrap_or_default().to_string();
        return legacy::handle(inner, caller, headers, sid, msg).await;
    }
    if let wire::Incoming::Request { method, .. } = &msg {
        if method == wire::method::INITIALIZE {
            return legacy::initialize(inner, caller, msg).await;
        }
    }
    current::handle(inner, caller, headers, msg).await
}

async fn handle_get() -> Response {
    let mut r = (
        StatusCode::METHOD_NOT_ALLOWED,
        "this server offers no standalone SSE stream; POST requests to /mcp",
    )
        .into_response();
    r.headers_mut()
        .insert("allow", HeaderValue::from_static("POST, DELETE"));
    r
}

async fn handle_delete(
    State(inner): State<Arc<Inner>>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Response {
    match headers
        .get(wire::header::SESSION_ID)
        .and_then(|v| v.to_str().ok())
    {
        Some(sid) if inner.sessions.remove(sid, &caller) => StatusCode::NO_CONTENT.into_response(),
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
    fn task_mode_parses() {
        assert_eq!("always".parse::<TaskMode>().ok(), Some(TaskMode::Always));
        assert_eq!("250".parse::<TaskMode>().ok(), Some(TaskMode::After(250)));
        assert_eq!("after:0".parse::<TaskMode>().ok(), Some(TaskMode::After(0)));
        assert!("soon".parse::<TaskMode>().is_err());
    }
}
