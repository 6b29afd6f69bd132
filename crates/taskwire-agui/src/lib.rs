//! The AG-UI adapter of taskwire: `POST /agui` takes a `RunAgentInput` and answers
//! the run's events as SSE, rendered from the task's event log.
//!
//! ```
//! use std::sync::Arc;
//! use axum::{body::Body, http::Request};
//! use serde_json::json;
//! use taskwire_agui::{AguiAdapter, AguiConfig};
//! use taskwire_core::{Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService};
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
//! let agent = Arc::new(ScriptedAgent::new());
//! let _runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
//! let routes = AguiAdapter::new(service, agent, AguiConfig::default()).routes();
//!
//! let input = json!({"threadId": "t1", "runId": "r1", "state": {}, "tools": [],
//!     "context": [], "forwardedProps": {},
//!     "messages": [{"id": "u1", "role": "user", "content": "hello"}]});
//! let mut req = Request::post("/agui")
//!     .header("content-type", "application/json")
//!     .body(Body::from(input.to_string()))?;
//! req.extensions_mut().insert(Caller::local()); // what the server's auth layer does
//! let res = routes.oneshot(req).await?;
//! let body = axum::body::to_bytes(res.into_body(), 1 << 20).await?;
//! let sse = String::from_utf8(body.to_vec())?;
//! // The run's events, from RUN_STARTED to RUN_FINISHED, with the echo in between.
//! assert!(sse.contains("\"RUN_STARTED\"") && sse.contains("\"RUN_FINISHED\""));
//! assert!(sse.contains("hello"));
//! # Ok(())
//! # }
//! ```
//!
//! - [`wire`]: AG-UI 1.0 serde types and typed event names.
//! - [`render`]: the core event log rendered as runs (and replayed as snapshots).
//! - [`verify`]: a producer-side verifier of the run lifecycle and balance rules.
//! - [`sse`]: SSE framing; [`proto`]: protobuf framing (`application/vnd.ag-ui.event+proto`).
//!
//! A thread is a core context (`CreateTask.context_id`); a run is one turn of a
//! task. See `docs/agui.md` for the full mapping.

use std::sync::Arc;

use taskwire_core::{Agent, TaskService};

pub mod proto;
pub mod render;
mod runs;
mod server;
pub mod sse;
pub mod verify;
/// The AG-UI JSON wire types (events, messages, `RunAgentInput`): the wire
/// layer's, shared with the client and the schema generator.
pub use taskwire_wire::agui as wire;

pub use render::{Frame, Pos, Renderer, RunSpec};
pub use verify::{verify_all, Verifier, Violation};

/// Errors of the AG-UI adapter.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AguiError {
    /// An event could not be encoded.
    #[error("encoding an event: {0}")]
    Encode(#[from] serde_json::Error),
    /// A protobuf frame is cut short.
    #[error("protobuf frame: {0}")]
    Frame(&'static str),
    /// A protobuf frame does not decode.
    #[error("protobuf decode: {0}")]
    Decode(#[from] prost::DecodeError),
    /// A request body is over `AguiConfig::max_body_bytes` (a `RUN_ERROR` with code
    /// `too_large`).
    #[error("the request body exceeds the limit of {limit} bytes")]
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A request body could not be read: the connection broke, or a layer in front
    /// of the adapter failed it (e.g. for not making progress). The cause is only
    /// logged.
    #[error("the request body could not be read")]
    BodyUnreadable,
    /// A request body whose `Content-Type` is not JSON.
    #[error("a RunAgentInput is posted as JSON (Content-Type: application/json), not {found}")]
    UnsupportedMediaType {
        /// The content type sent (`none` when there was none).
        found: String,
    },
    /// A request body that is not a `RunAgentInput`.
    #[error("the body is not a RunAgentInput: {0}")]
    InvalidInput(String),
}

/// Adapter settings.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AguiConfig {
    /// Most open runs (runs of tasks that are not terminal) one caller may hold;
    /// one more is a lone `RUN_ERROR` (code `quota_exceeded`). Runs are kept in
    /// the store with their task, for reconnects, run naming in replays and
    /// cancellation by run id, on this node or another.
    pub max_runs_per_principal: usize,
    /// Largest `RunAgentInput` body, in bytes: a larger one is refused with a lone
    /// `RUN_ERROR` (code `too_large`) before parsing (a declared length before
    /// reading). The handler reads the body itself within it; the router has no
    /// layers of its own.
    pub max_body_bytes: usize,
}

impl Default for AguiConfig {
    fn default() -> Self {
        Self {
            max_runs_per_principal: 1000,
            max_body_bytes: 4 * 1024 * 1024,
        }
    }
}

/// The AG-UI adapter. Mount [`AguiAdapter::routes`] behind the authentication layer.
#[derive(Clone)]
pub struct AguiAdapter {
    inner: Arc<server::Inner>,
}

impl std::fmt::Debug for AguiAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AguiAdapter").finish_non_exhaustive()
    }
}

impl AguiAdapter {
    /// An adapter over the service; `agent` is the agent the runtime runs.
    pub fn new(service: TaskService, agent: Arc<dyn Agent>, config: AguiConfig) -> Self {
        Self {
            inner: Arc::new(server::Inner::new(service, agent, config)),
        }
    }

    /// The routes (all need an authenticated caller, an `Extension<Caller>`):
    ///
    /// - `POST /agui`: run the agent (`RunAgentInput` in, events out);
    /// - `GET /agui/threads/{threadId}`: replay the thread's runs as snapshots;
    /// - `GET /agui/threads/{threadId}/runs/{runId}/events`: the run's stream again,
    ///   after `Last-Event-ID` if given;
    /// - `POST /agui/threads/{threadId}/runs/{runId}/cancel`: cancel the run's task.
    pub fn routes(&self) -> axum::Router {
        server::routes(self.inner.clone())
    }
}
