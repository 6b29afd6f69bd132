//! The taskwire server: one listener, one task service, one runtime, and every
//! protocol adapter mounted on top. The `taskwire` binary is built on this crate,
//! and so can any program that serves its own agent; this crate re-exports what
//! that takes (`Agent`, `TurnContext`, the types, `async_trait`):
//!
//! ```
//! use std::sync::Arc;
//! use taskwire::{async_trait, Agent, AgentError, AgentInfo, Caller, MemoryStore, Message};
//! use taskwire::{Part, Server, TurnContext, TurnOutcome};
//!
//! struct Upper;
//!
//! #[async_trait]
//! impl Agent for Upper {
//!     fn info(&self) -> AgentInfo {
//!         AgentInfo::new("upper", "Replies in upper case.")
//!     }
//!     async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
//!         let text: String = ctx.input().iter().map(|m| m.text().to_uppercase()).collect();
//!         ctx.emit_artifact("upper", None, vec![Part::text(text)]).await?;
//!         Ok(TurnOutcome::Completed { message: None })
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder()
//!     .agent(Arc::new(Upper))
//!     .store(Arc::new(MemoryStore::new()))
//!     .listen("127.0.0.1:0".parse::<std::net::SocketAddr>()?) // any free port
//!     .all_adapters() // A2A (JSON-RPC, gRPC), MCP, AG-UI, CAS
//!     .build()
//!     .await?;
//! println!("listening on {}", server.local_addr());
//! // In process, through the same task service the adapters use:
//! let (service, me) = (server.service().clone(), Caller::local());
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let serving = tokio::spawn(server.run(stopped));
//! let first = taskwire::core::CreateTask::new(Message::user_text("hello"));
//! let id = service.create(&me, first).await?.task.id.clone();
//! let done = |t: &taskwire::Task| t.state.is_terminal();
//! let task = service.wait_until(&me, &id, std::time::Duration::from_secs(5), done).await?;
//! assert_eq!(task.artifacts[0].text(), "HELLO");
//! let _ = stop.send(());
//! serving.await??;
//! # Ok(())
//! # }
//! ```
//!
//! # What the listener serves
//!
//! - `GET /healthz`: 200 `ok` while the process runs.
//! - `GET /readyz`: 200 when the store and the agent answer ([`Agent::ready`]:
//!   a bridged agent's upstream), 503 when one does not or once shutdown has
//!   begun.
//! - `GET /metrics`: Prometheus text; every name starts with `taskwire_` (see
//!   [`telemetry::names`]).
//! - Everything mounted with [`ServerBuilder::adapter`] or [`ServerBuilder::mount`],
//!   behind the auth layer ([`auth`]), which puts the [`taskwire_core::Caller`] in
//!   the request extensions or answers 401 with a JSON error body (a gRPC
//!   request gets the gRPC status `UNAUTHENTICATED`).
//!
//! The listener is hyper-util's auto connection builder (HTTP/1.1 and h2c on one
//! port) with every resource a client can hold bounded by [`ListenerConfig`];
//! authentication, the default body limit, the request metric and tracing are one
//! layer stack around the whole router, applied once per request.
//!
//! # Adapters
//!
//! A protocol adapter implements [`Adapter`]: given an [`AdapterContext`] (the shared
//! [`taskwire_core::TaskService`], the agent, the address), it returns an
//! `axum::Router` of authenticated routes and optionally one of public routes,
//! and the patterns of its routes for the request metric's labels.
//! Adapter crates are compiled into the binary through cargo features of this
//! crate; [`cli::build_server`] is where each feature adds its adapter. Health and
//! metrics stay unauthenticated; nothing else is.
//!
//! # Shutdown
//!
//! [`Server::run`] serves until its shutdown future resolves, then stops accepting
//! connections, answers `/readyz` with 503, lets turns in flight finish for up to
//! the drain timeout, aborts the rest and releases their leases (so the next start,
//! or another node, re-runs them).

pub mod adapters;
pub mod auth;
pub mod cli;
mod edge;
mod error;
mod listen;
mod server;
pub mod telemetry;

pub use auth::{AuthConfig, TokenTable};
pub use error::Error;
pub use listen::{BodyTimeout, ListenerConfig};
pub use server::{
    body_limit, check_listen_policy, Adapter, AdapterContext, DirectFuture, DirectRoute, Listen,
    Server, ServerBuilder, DEFAULT_LISTEN,
};

// The front door: what serving an agent of one's own takes, so that `taskwire`
// (with tokio) is the only dependency. The rest of the core is `taskwire::core`.
/// The task core: service, store trait, runtime, types.
pub use taskwire_core as core;
pub use taskwire_core::{
    async_trait, Agent, AgentError, AgentInfo, Caller, MemoryStore, Message, Part, ScriptedAgent,
    Skill, Task, TaskState, TurnContext, TurnOutcome, DEFAULT_SKILL_ID,
};
