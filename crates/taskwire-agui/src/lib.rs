//! The AG-UI adapter of taskwire: `POST /agui` takes a `RunAgentInput` and answers
//! the run's events as SSE, rendered from the task's event log.
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
pub mod wire;

pub use render::{Frame, Pos, Renderer, RunSpec};
pub use verify::{verify_all, Verifier, Violation};

/// Errors of the AG-UI adapter.
#[derive(Debug, thiserror::Error)]
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
}

/// Adapter settings.
#[derive(Clone, Debug)]
pub struct AguiConfig {
    /// How many runs are remembered for reconnects, run naming in replays and
    /// cancellation by run id (oldest forgotten first).
    pub max_remembered_runs: usize,
}

impl Default for AguiConfig {
    fn default() -> Self {
        Self {
            max_remembered_runs: 10_000,
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
