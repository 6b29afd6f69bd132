//! Clients for every protocol taskwire speaks, usable against any server that
//! implements the same specifications:
//!
//! | protocol | client | transport |
//! |---|---|---|
//! | A2A 1.0, JSON-RPC binding | [`a2a::A2aClient`] | reqwest, SSE streams |
//! | A2A 1.0, HTTP+JSON binding | [`a2a_rest::A2aRestClient`] | reqwest, SSE streams |
//! | A2A 1.0, gRPC binding | [`grpc::A2aGrpcClient`] | tonic (h2c) |
//! | MCP 2026-07-28 + tasks extension, `tasks/continue` | [`mcp::McpClient`] | Streamable HTTP |
//! | MCP 2025-11-25 experimental tasks | [`mcp::McpClient2025_11_25`] | Streamable HTTP, session |
//! | AG-UI 1.0 | [`agui::AguiClient`] | SSE or protobuf frames |
//! | CAS task status | [`cas::CasClient`] | HTTP (taskwire's `/cas` paths) |
//!
//! The three A2A clients implement one trait, [`A2aBinding`]: code that should
//! not care which binding it speaks holds an `Arc<dyn A2aBinding>` (the bridge's
//! A2A upstreams and the conformance suite do), and `send_text`, `wait_task` and
//! `subscribe_to_task` are written once there.
//!
//! All clients share one [`ClientConfig`]: base url, bearer token, request and
//! connect timeouts, the [`BackoffPolicy`] of reconnects (initial delay, cap,
//! multiplier, jitter, attempts), the poll interval of the polling fallback,
//! and an optional observer that sees every exchange. Every call returns the
//! typed view together with the JSON it came from ([`Received`]), and every
//! failure is one [`ClientError`]: no server response, however malformed,
//! makes a client panic.
//!
//! Streams ([`a2a::A2aStream`], [`agui::AguiStream`]) survive a broken
//! connection: they wait per the backoff policy and resume (A2A: resubscribe
//! with `Last-Event-ID`; AG-UI: taskwire's run-events route), and an A2A
//! stream that cannot be re-established falls back to polling `GetTask`.
//!
//! ```
//! use futures::StreamExt;
//! use taskwire_client::a2a::{self, A2aClient};
//! use taskwire_client::{A2aBinding, ClientConfig};
//!
//! # use std::sync::Arc;
//! # use taskwire_core::{Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # // A server to talk to: the A2A adapter over the scripted agent, on loopback.
//! # let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let base = format!("http://{}", listener.local_addr()?);
//! # let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
//! # let agent = Arc::new(ScriptedAgent::new());
//! # let _runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
//! # let mut config = taskwire_a2a::A2aConfig::default();
//! # config.public_url = base.clone();
//! # let a2a = taskwire_a2a::A2aAdapter::new(service, agent, config);
//! # let app = a2a.routes().layer(axum::Extension(Caller::local())).merge(a2a.public_routes());
//! # tokio::spawn(async move { axum::serve(listener, app).await });
//! // `base` is the agent's address, e.g. "http://127.0.0.1:7420".
//! let config = ClientConfig::builder(base.as_str()).bearer_token("secret").build();
//! let (client, card) = A2aClient::discover(config).await?;
//! assert_eq!(card.name, "scripted");
//!
//! // Blocking send: the task as it ended (or paused for input).
//! let reply = client.send_text("hello", false).await?;
//! println!("{}", reply.raw);
//!
//! // Streaming send: events until the task ends, reconnecting on breaks.
//! let req = a2a::send_request(a2a::text_message("stream 3"));
//! let mut events = client.send_streaming_message(req).await?;
//! let mut last = None;
//! while let Some(ev) = events.next().await {
//!     let ev = ev?;
//!     println!("{:?} {}", ev.state(), ev.raw());
//!     last = ev.state().or(last);
//! }
//! assert_eq!(last, Some(a2a::pb::TaskState::Completed));
//! # Ok(())
//! # }
//! ```

pub mod a2a;
pub mod a2a_rest;
mod a2a_stream;
pub mod agui;
mod binding;
pub mod cas;
mod config;
mod error;
pub mod grpc;
pub mod http;
pub mod mcp;
pub mod oauth;
pub mod sse;

pub use binding::A2aBinding;
pub use config::{
    BackoffPolicy, ClientConfig, ClientConfigBuilder, ClientIdentityPem, Exchange,
    ExchangeObserver, Received,
};
pub use error::{error_info_reason, ClientError, RpcError};
pub use http::{RawResponse, SseEvent};
