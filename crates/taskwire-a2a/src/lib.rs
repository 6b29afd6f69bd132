//! A2A 1.0 for taskwire: the shared A2A service layer ([`service::A2aService`]),
//! the JSON-RPC binding with SSE at `POST /a2a` ([`jsonrpc`]), the HTTP+JSON
//! binding under `/a2a/rest` ([`rest`]), the agent card at
//! `GET /.well-known/agent-card.json` ([`card`]), push notifications ([`push`])
//! and the a2a-tck agent profile ([`tck::TckAgent`]). The gRPC binding lives in
//! `taskwire-grpc` and calls the same service layer.
//!
//! ```
//! use std::sync::Arc;
//! use axum::{body::Body, http::Request};
//! use serde_json::{json, Value};
//! use taskwire_a2a::{A2aAdapter, A2aConfig};
//! use taskwire_core::{Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService};
//! use tower::ServiceExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
//! let agent = Arc::new(ScriptedAgent::new());
//! let _runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
//! let routes = A2aAdapter::new(service, agent, A2aConfig::default()).routes();
//!
//! let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
//!     "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}});
//! let mut req = Request::post("/a2a")
//!     .header("content-type", "application/json")
//!     .header("a2a-version", "1.0")
//!     .body(Body::from(send.to_string()))?;
//! req.extensions_mut().insert(Caller::local()); // what the server's auth layer does
//! let res = routes.oneshot(req).await?;
//! let body = axum::body::to_bytes(res.into_body(), 1 << 20).await?;
//! let answer: Value = serde_json::from_slice(&body)?;
//! // SendMessage blocks until the task ends; the scripted agent echoes.
//! let task = &answer["result"]["task"];
//! assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
//! assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello");
//! # Ok(())
//! # }
//! ```
//!
//! All three bindings use the messages generated from `proto/a2a.proto` ([`pb`]);
//! the JSON-RPC and HTTP+JSON bindings encode them as ProtoJSON ([`protojson`]),
//! so they cannot drift. State, part and error mappings come from `taskwire_vocab::a2a`.

use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use taskwire_core::{Agent, TaskService};

mod body;
pub mod card;
pub mod convert;
mod encoded;
pub mod error;
pub mod http;
pub mod jsonrpc;
pub mod protojson;
pub mod push;
pub mod rest;
pub mod service;
pub mod tck;

pub use error::A2aError;
pub use service::A2aService;

/// The `lf.a2a.v1` messages of the wire layer (`taskwire_wire::a2a::pb`).
pub use taskwire_wire::a2a::pb;

/// Configuration of the A2A adapter.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct A2aConfig {
    /// Public base url the card's interface urls are built from (`--public-url`),
    /// for example `https://agents.example.com`; not the bind address.
    pub public_url: String,
    /// List the gRPC interface on the card (the binding is mounted).
    pub grpc: bool,
    /// How the card writes the gRPC interface's url ([`GrpcCardUrl`]).
    pub grpc_card_url: GrpcCardUrl,
    /// Declare and serve streaming (SendStreamingMessage, SubscribeToTask);
    /// off, the card says `streaming: false` and both are UnsupportedOperation.
    pub streaming: bool,
    /// Declare and serve push notifications; off, the card says
    /// `pushNotifications: false` and the push config methods (and a push
    /// config inside SendMessage) are PushNotificationNotSupported.
    pub push_notifications: bool,
    /// Allow push urls that resolve to loopback, private or link-local addresses
    /// (`--push-allow-private`).
    pub push_allow_private: bool,
    /// Most push configs one caller (tenant and principal) may hold on tasks that
    /// are not terminal (`--max-push-configs-per-principal`); one more is refused.
    pub push_max_configs_per_principal: usize,
    /// Lease of a worker on a config it delivers: renewed every third of it, and
    /// taken over by another worker (of this or another node) once it lapses.
    pub push_lease: Duration,
    /// Delivery attempts per notification before giving up.
    pub push_max_attempts: u32,
    /// First retry delay; doubled on each attempt (capped at 30 s), plus jitter.
    pub push_base_backoff: Duration,
    /// TLS of push deliveries to `https` receivers: certificates trusted
    /// besides the built-in Mozilla roots and the system's (a private CA,
    /// `--push-ca-file`) and a client certificate for receivers that ask for
    /// one (`--push-client-cert`, `--push-client-key`). One that does not
    /// parse disables delivery, logged.
    pub push_tls: taskwire_webhook::Tls,
    /// Bearer authentication is on (`--auth-tokens`): the card declares it.
    pub bearer_auth: bool,
    /// OAuth 2.0 / OpenID Connect issuers whose access tokens are accepted
    /// (`--oauth-issuer`): the card declares each.
    pub oauth: Vec<card::CardOAuth>,
    /// Declare and serve GetExtendedAgentCard (else the card says
    /// `extendedAgentCard: false` and the call is UnsupportedOperation).
    pub extended_card: bool,
    /// Accepted input media types (`type/*` and `*/*` wildcards allowed); a part
    /// with another media type is ContentTypeNotSupported.
    pub input_modes: Vec<String>,
    /// A2A 1.1: the longest a GetTask with `currentGeneration` is held
    /// waiting for the task to move (`--a2a-long-poll-max`); then the task is
    /// answered as it is. The listener's own limits (request timeouts,
    /// connections) bound it too.
    pub long_poll_max: Duration,
    /// How long a blocking SendMessage waits for a terminal or interrupted state
    /// before answering with the task as it is.
    pub blocking_timeout: Duration,
    /// `max-age` of the agent card's `Cache-Control` (A2A 1.0 §8.6.1); the
    /// card also carries an `ETag` and answers a matching `If-None-Match`
    /// with 304.
    pub card_max_age: Duration,
    /// Largest accepted JSON-RPC body in bytes; larger ones are refused before
    /// parsing (HTTP 413, JSON-RPC Invalid Request -32600). The handler reads the
    /// body itself within this limit: no `DefaultBodyLimit` layer is needed.
    pub max_body_bytes: usize,
}

impl Default for A2aConfig {
    fn default() -> Self {
        Self {
            public_url: "http://127.0.0.1:7420".into(),
            grpc: true,
            grpc_card_url: GrpcCardUrl::HostPort,
            streaming: true,
            push_notifications: true,
            push_allow_private: false,
            push_max_configs_per_principal: 1000,
            push_lease: Duration::from_secs(30),
            push_max_attempts: 8,
            push_base_backoff: Duration::from_millis(200),
            push_tls: taskwire_webhook::Tls::default(),
            bearer_auth: false,
            oauth: Vec::new(),
            extended_card: false,
            input_modes: vec![
                "text/plain".into(),
                "text/*".into(),
                "application/json".into(),
                "application/octet-stream".into(),
                "image/*".into(),
            ],
            blocking_timeout: Duration::from_secs(60),
            long_poll_max: Duration::from_secs(30),
            card_max_age: Duration::from_secs(300),
            max_body_bytes: 4 * 1024 * 1024,
        }
    }
}

/// How the agent card writes the gRPC interface's url. No one shape suits
/// every client (docs/a2a.md, "Agent card"): the official SDKs' gRPC clients
/// hand the url to gRPC as a channel target, which takes `host:port` and
/// fails on `http://host:port`; Google ADK's `RemoteA2aAgent` fetching a card
/// by url refuses any interface url that is not `http(s)` on the card's own
/// origin, so it refuses `host:port`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrpcCardUrl {
    /// `host:port` of the public url: what the SDKs' gRPC clients dial.
    #[default]
    HostPort,
    /// The public url's origin, `http(s)://host:port`: the proto's "absolute
    /// URL" shape, which ADK's `RemoteA2aAgent` accepts.
    Origin,
    /// No gRPC interface on the card (the binding is still served).
    Omit,
}

/// The A2A adapter: mount [`A2aAdapter::routes`] behind the auth layer and
/// [`A2aAdapter::public_routes`] without it.
#[derive(Clone, Debug)]
pub struct A2aAdapter {
    service: A2aService,
}

impl A2aAdapter {
    /// The adapter over the shared task service.
    pub fn new(service: TaskService, agent: Arc<dyn Agent>, config: A2aConfig) -> Self {
        Self {
            service: A2aService::new(service, agent, config),
        }
    }

    /// The shared A2A service layer (hand it to `taskwire_grpc::GrpcAdapter`).
    pub fn service(&self) -> &A2aService {
        &self.service
    }

    /// `POST /a2a` and `POST /a2a/` (JSON-RPC, SSE) and the HTTP+JSON binding
    /// under `/a2a/rest` ([`rest`]; its patterns are [`rest::ROUTE_PATTERNS`]).
    /// Handlers read `Extension<taskwire_core::Caller>` and their body within
    /// [`A2aConfig::max_body_bytes`]; the router has no layers of its own.
    pub fn routes(&self) -> Router {
        Router::new()
            .route(card::JSONRPC_PATH, post(jsonrpc::handle))
            .route("/a2a/", post(jsonrpc::handle))
            .merge(rest::routes())
            .with_state(self.service.clone())
    }

    /// `GET /.well-known/agent-card.json`.
    pub fn public_routes(&self) -> Router {
        Router::new()
            .route(card::AGENT_CARD_PATH, get(jsonrpc::agent_card))
            .with_state(self.service.clone())
    }
}
