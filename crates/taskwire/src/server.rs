//! The server: one listener serving health, readiness, metrics and every mounted
//! adapter, over one task service and one runtime.

use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use metrics_exporter_prometheus::PrometheusHandle;
use taskwire_core::{
    Agent, InputGuardrail, Limits, MemoryStore, Runtime, RuntimeConfig, TaskDefaults, TaskService,
    TaskStore,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::auth::AuthConfig;
use crate::edge::{Access, Edge, RouteLabels};
use crate::error::Error;
use crate::listen::ListenerConfig;
use crate::telemetry;

/// The address `taskwire serve` listens on by default.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 7420);

/// How long `/readyz` waits for the store before answering 503.
const READY_TIMEOUT: Duration = Duration::from_secs(2);

/// Where the server listens: an address to bind, or a listener bound already
/// (for example on port 0 in tests, or one inherited from a supervisor).
#[derive(Debug)]
pub enum Listen {
    /// Bind this address when the server is built.
    Addr(SocketAddr),
    /// Use this listener.
    Listener(TcpListener),
}

impl From<SocketAddr> for Listen {
    fn from(a: SocketAddr) -> Self {
        Self::Addr(a)
    }
}

impl From<TcpListener> for Listen {
    fn from(l: TcpListener) -> Self {
        Self::Listener(l)
    }
}

/// What an [`Adapter`] is given to build its routes.
#[derive(Clone)]
pub struct AdapterContext {
    service: TaskService,
    agent: Arc<dyn Agent>,
    local_addr: SocketAddr,
    authenticated: bool,
    auth_schemes: Arc<[crate::auth::Scheme]>,
    body_limit: usize,
}

impl std::fmt::Debug for AdapterContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterContext")
            .field("service", &self.service)
            .field("agent", &self.agent.info().name)
            .field("local_addr", &self.local_addr)
            .field("authenticated", &self.authenticated)
            .finish()
    }
}

impl AdapterContext {
    /// The task service every adapter shares.
    pub fn service(&self) -> &TaskService {
        &self.service
    }

    /// The agent (for its card and for direct replies).
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// True if requests carry bearer tokens (so an adapter can advertise it).
    pub fn authenticated(&self) -> bool {
        self.authenticated
    }

    /// How clients obtain a token, one entry per configured authenticator (so
    /// an adapter can advertise each: the A2A card's security schemes).
    pub fn auth_schemes(&self) -> &[crate::auth::Scheme] {
        &self.auth_schemes
    }

    /// The request body limit the server's input limits imply ([`body_limit`]),
    /// for adapters that read their bodies within it.
    pub fn body_limit(&self) -> usize {
        self.body_limit
    }
}

/// The future of a [`DirectRoute`]'s handler.
pub type DirectFuture = Pin<Box<dyn Future<Output = Response> + Send>>;

/// A route the server's layer stack calls itself, for every request whose path
/// starts with its prefix, after authentication, without routing it through the
/// adapters' routers: what a service that routes by itself (tonic's generated
/// gRPC server, say) is mounted as, so that its requests do not pay for the
/// router, a boxed route service and its clone on the way. The handler reads the
/// caller as the `taskwire_core::Caller` request extension, as routed handlers
/// do. A direct route's prefix takes precedence over every routed path under it.
#[derive(Clone)]
pub struct DirectRoute {
    pub(crate) prefix: &'static str,
    pub(crate) label: &'static str,
    pub(crate) handler: Arc<dyn Fn(Request) -> DirectFuture + Send + Sync>,
}

impl DirectRoute {
    /// Requests whose path starts with `prefix` go to `handler`; `label` is their
    /// `route` label in the request metric (a pattern such as
    /// `/lf.a2a.v1.A2AService/{*rest}`, never a raw path).
    pub fn new(
        prefix: &'static str,
        label: &'static str,
        handler: impl Fn(Request) -> DirectFuture + Send + Sync + 'static,
    ) -> Self {
        Self {
            prefix,
            label,
            handler: Arc::new(handler),
        }
    }
}

impl std::fmt::Debug for DirectRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectRoute")
            .field("prefix", &self.prefix)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// A protocol adapter mounted on the server's listener.
///
/// The server calls [`Adapter::routes`] once, when it is built, with the shared
/// task service. Those routes sit behind the auth layer: handlers read the caller
/// as `axum::Extension<taskwire_core::Caller>`. Routes that must be reachable
/// without credentials (an agent card, say) go in [`Adapter::public_routes`].
/// Two adapters (or an adapter and `/healthz`, `/readyz`, `/metrics`) claiming the
/// same route make [`ServerBuilder::build`] fail with [`Error::Mount`].
///
/// The server wraps all routes in one layer stack (authentication, the default
/// body limit, the request metric, tracing), applied once per request; an
/// adapter should not add `Router::layer` middleware of its own (each one wraps
/// every route in another boxed service), and reads its request bodies within
/// its own limit, answering a body over it in its protocol's shape.
pub trait Adapter: Send + 'static {
    /// A short name, for logs and errors (`a2a`, `mcp`, …).
    fn name(&self) -> &str;

    /// Routes that require an authenticated caller.
    fn routes(&self, ctx: &AdapterContext) -> Router;

    /// Routes served without authentication. None by default.
    fn public_routes(&self, _ctx: &AdapterContext) -> Router {
        Router::new()
    }

    /// The patterns of the routes of [`Adapter::routes`] (axum's syntax, as
    /// given to `Router::route`): the `route` label of the request metric, and
    /// the server routes a request matching one straight to authentication and
    /// the protected routes. A request to a route not listed is labelled `other`
    /// and still served, through one more routing step. None by default.
    fn route_patterns(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// The same for the routes of [`Adapter::public_routes`]: a request matching
    /// one is served without authentication. A pattern listed here must be a
    /// public route and one in [`Adapter::route_patterns`] a protected one. None
    /// by default.
    fn public_route_patterns(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// Routes the server calls directly, behind authentication (see
    /// [`DirectRoute`]). None by default.
    fn direct_routes(&self, _ctx: &AdapterContext) -> Vec<DirectRoute> {
        Vec::new()
    }
}

/// Builds a [`Server`]. Only the agent is required; the store defaults to a fresh
/// [`MemoryStore`], the listener to `127.0.0.1:7420`, auth to [`AuthConfig::Local`].
pub struct ServerBuilder {
    agent: Option<Arc<dyn Agent>>,
    store: Option<Arc<dyn TaskStore>>,
    listen: Listen,
    auth: AuthConfig,
    public_url: Option<String>,
    allow_unauthenticated_remote: bool,
    runtime_config: RuntimeConfig,
    limits: Limits,
    task_defaults: TaskDefaults,
    guardrails: Vec<Arc<dyn InputGuardrail>>,
    drain_timeout: Duration,
    listener_config: ListenerConfig,
    adapters: Vec<Box<dyn Adapter>>,
    routers: Vec<Router>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("listen", &self.listen)
            .field("auth", &self.auth)
            .field("runtime_config", &self.runtime_config)
            .field("drain_timeout", &self.drain_timeout)
            .field("listener_config", &self.listener_config)
            .field("adapters", &self.adapters.len())
            .field("routers", &self.routers.len())
            .finish_non_exhaustive()
    }
}

impl Default for ServerBuilder {
    fn default() -> Self {
        Self {
            agent: None,
            store: None,
            listen: Listen::Addr(DEFAULT_LISTEN),
            auth: AuthConfig::Local,
            public_url: None,
            allow_unauthenticated_remote: false,
            runtime_config: RuntimeConfig::default(),
            limits: Limits::default(),
            task_defaults: TaskDefaults::default(),
            guardrails: Vec::new(),
            drain_timeout: Duration::from_secs(10),
            listener_config: ListenerConfig::default(),
            adapters: Vec::new(),
            routers: Vec::new(),
        }
    }
}

impl ServerBuilder {
    /// A builder with defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// The agent that runs every task (required).
    pub fn agent(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agent = Some(agent);
        self
    }

    /// The store (default: a new in-memory store).
    pub fn store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Where to listen: a `SocketAddr` to bind, or a bound `tokio::net::TcpListener`.
    pub fn listen(mut self, listen: impl Into<Listen>) -> Self {
        self.listen = listen.into();
        self
    }

    /// How requests to mounted routes are authenticated (default: none, every caller
    /// is the local principal).
    pub fn auth(mut self, auth: AuthConfig) -> Self {
        self.auth = auth;
        self
    }

    /// The canonical URL clients reach the server at (`--public-url`; default
    /// `http://` and the bound address): the resource identifier of the RFC 9728
    /// metadata an OAuth-protected server publishes, and the audience its tokens
    /// name by default.
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into());
        self
    }

    /// Allows listening on a non-loopback address without authentication. Off by
    /// default: [`ServerBuilder::build`] refuses with [`Error::InsecureListen`].
    pub fn allow_unauthenticated_remote(mut self, allow: bool) -> Self {
        self.allow_unauthenticated_remote = allow;
        self
    }

    /// Runtime settings (concurrency, lease, intervals).
    pub fn runtime_config(mut self, config: RuntimeConfig) -> Self {
        self.runtime_config = config;
        self
    }

    /// Input limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Defaults for new tasks (retention TTL, inactivity lifespan).
    pub fn task_defaults(mut self, defaults: TaskDefaults) -> Self {
        self.task_defaults = defaults;
        self
    }

    /// Adds an input guardrail (run in the order added, before anything is stored).
    pub fn guardrail(mut self, guardrail: Arc<dyn InputGuardrail>) -> Self {
        self.guardrails.push(guardrail);
        self
    }

    /// How long [`Server::run`] lets turns in flight finish after shutdown begins
    /// before it aborts them and releases their leases (default 10 s).
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// The listener's limits: connections, timeouts, HTTP/2 streams, header and
    /// buffer sizes (default: [`ListenerConfig::default`]).
    pub fn listener_config(mut self, config: ListenerConfig) -> Self {
        self.listener_config = config;
        self
    }

    /// Mounts a protocol adapter (see [`Adapter`]).
    pub fn adapter(mut self, adapter: impl Adapter) -> Self {
        self.adapters.push(Box::new(adapter));
        self
    }

    /// Mounts an adapter that is already boxed (see [`crate::adapters::all`]).
    pub fn boxed_adapter(mut self, adapter: Box<dyn Adapter>) -> Self {
        self.adapters.push(adapter);
        self
    }

    /// Mounts every protocol adapter this crate was built with (its `a2a`,
    /// `grpc`, `mcp`, `agui` and `cas` features, all on by default), with default
    /// options: what `taskwire serve` serves. For options (a public URL, private
    /// push addresses), [`crate::adapters::all`] and [`ServerBuilder::boxed_adapter`].
    pub fn all_adapters(self) -> Self {
        crate::adapters::all(&crate::adapters::AdapterOptions::default())
            .into_iter()
            .fold(self, Self::boxed_adapter)
    }

    /// Mounts a plain router behind the auth layer; handlers read
    /// `axum::Extension<taskwire_core::Caller>`.
    pub fn mount(mut self, router: Router) -> Self {
        self.routers.push(router);
        self
    }

    /// Binds the listener (checking the listen policy first), builds the service and
    /// the routes. Nothing runs until [`Server::run`].
    pub async fn build(self) -> Result<Server, Error> {
        let agent = self.agent.ok_or(Error::MissingAgent)?;
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(MemoryStore::new()) as Arc<dyn TaskStore>);
        let allow = self.allow_unauthenticated_remote;
        let listener = match self.listen {
            Listen::Addr(addr) => {
                check_listen_policy(addr, &self.auth, allow)?;
                TcpListener::bind(addr)
                    .await
                    .map_err(|source| Error::Bind { addr, source })?
            }
            Listen::Listener(l) => l,
        };
        let local_addr = listener.local_addr()?;
        check_listen_policy(local_addr, &self.auth, allow)?;
        if allow && !self.auth.is_authenticated() && !is_loopback(local_addr) {
            warn!(%local_addr, "listening on a non-loopback address WITHOUT authentication: every caller is the local principal");
        }

        let body_limit = body_limit(&self.limits);
        let metrics = telemetry::install();
        let mut service = TaskService::new(store.clone(), agent.info().name)
            .with_limits(self.limits)
            .with_defaults(self.task_defaults);
        for g in self.guardrails {
            service = service.with_guardrail(g);
        }
        let shared = Arc::new(Shared {
            store,
            agent: agent.clone(),
            shutting_down: AtomicBool::new(false),
            metrics,
        });
        let ctx = AdapterContext {
            service: service.clone(),
            agent: agent.clone(),
            local_addr,
            authenticated: self.auth.is_authenticated(),
            auth_schemes: self.auth.schemes().into(),
            body_limit,
        };

        let mut public = Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .route("/metrics", get(metrics_text))
            .with_state(shared.clone());
        let mut labels = RouteLabels::default();
        for p in ["/healthz", "/readyz", "/metrics"] {
            labels.add(p, Access::Public);
        }
        let public_url = self
            .public_url
            .as_deref()
            .map(|u| u.trim_end_matches('/').to_string())
            .unwrap_or_else(|| format!("http://{local_addr}"));
        let resource =
            match crate::auth::protected_resource(&self.auth, &public_url, &agent.info().name) {
                Some((info, router)) => {
                    public = merge(public, router, "protected resource metadata")?;
                    for p in crate::auth::METADATA_PATTERNS {
                        labels.add(p, Access::Public);
                    }
                    Some(info)
                }
                None => None,
            };
        let mut protected = Router::new();
        let mut direct = Vec::new();
        for a in &self.adapters {
            direct.extend(a.direct_routes(&ctx));
            protected = merge(protected, a.routes(&ctx), a.name())?;
            public = merge(public, a.public_routes(&ctx), a.name())?;
            for p in a.route_patterns() {
                labels.add(p, Access::Protected);
            }
            for p in a.public_route_patterns() {
                labels.add(p, Access::Public);
            }
            info!(adapter = a.name(), "adapter mounted");
        }
        for r in self.routers {
            protected = merge(protected, r, "mounted router")?;
        }
        // Public routes are matched first and the protected ones behind them: a
        // protected route that a public one would hide is a mount error.
        let _ = merge(public.clone(), protected.clone(), "protected routes")?;
        let app = Edge::new(
            public,
            protected,
            (&self.auth, resource),
            labels,
            direct,
            body_limit,
        );
        Ok(Server {
            listener,
            local_addr,
            service,
            agent,
            runtime_config: self.runtime_config,
            app,
            listener_config: self.listener_config,
            shared,
            drain_timeout: self.drain_timeout,
        })
    }
}

/// The largest request body the adapter routes accept by default: room for one
/// message of `max_message_bytes` encoded in JSON (base64 grows bytes by a third)
/// plus the protocol envelope. A route may set its own `DefaultBodyLimit`.
pub fn body_limit(limits: &Limits) -> usize {
    limits
        .max_message_bytes
        .saturating_mul(2)
        .saturating_add(64 * 1024)
}

/// Merges two routers, turning axum's panic on overlapping routes into an error.
fn merge(a: Router, b: Router, what: &str) -> Result<Router, Error> {
    std::panic::catch_unwind(AssertUnwindSafe(move || a.merge(b))).map_err(|p| {
        let reason = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "conflicting routes".into());
        Error::Mount {
            what: what.to_string(),
            reason,
        }
    })
}

/// True for 127.0.0.0/8, ::1 and their IPv4-mapped forms.
fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// The listen policy: without authentication, only loopback addresses, unless
/// `allow_unauthenticated_remote` says otherwise.
pub fn check_listen_policy(
    addr: SocketAddr,
    auth: &AuthConfig,
    allow_unauthenticated_remote: bool,
) -> Result<(), Error> {
    if auth.is_authenticated() || allow_unauthenticated_remote || is_loopback(addr) {
        Ok(())
    } else {
        Err(Error::InsecureListen { addr })
    }
}

struct Shared {
    store: Arc<dyn TaskStore>,
    agent: Arc<dyn Agent>,
    shutting_down: AtomicBool,
    metrics: PrometheusHandle,
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(s): State<Arc<Shared>>) -> (StatusCode, std::borrow::Cow<'static, str>) {
    if s.shutting_down.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down".into());
    }
    let (code, text) = store_ready(&s).await;
    if code != StatusCode::OK {
        return (code, text.into());
    }
    // The agent: a bridged agent answers whether its upstream does.
    match tokio::time::timeout(READY_TIMEOUT, s.agent.ready()).await {
        Ok(Ok(())) => (StatusCode::OK, "ready".into()),
        Ok(Err(why)) => {
            warn!(reason = %why, "readiness: the agent is not ready");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("agent not ready: {why}").into(),
            )
        }
        Err(_) => {
            warn!("readiness: the agent did not answer in time");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "agent did not answer in time".into(),
            )
        }
    }
}

/// The store's part of `/readyz`.
async fn store_ready(s: &Shared) -> (StatusCode, &'static str) {
    match tokio::time::timeout(READY_TIMEOUT, s.store.queue_depth()).await {
        Ok(Ok(_)) => (StatusCode::OK, "ready"),
        Ok(Err(e)) => {
            warn!(error = %e, "readiness: the store failed");
            (StatusCode::SERVICE_UNAVAILABLE, "store unavailable")
        }
        Err(_) => {
            warn!("readiness: the store did not answer in time");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "store did not answer in time",
            )
        }
    }
}

async fn metrics_text(State(s): State<Arc<Shared>>) -> impl IntoResponse {
    let body = telemetry::scrape(&s.metrics, s.store.as_ref()).await;
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
}

/// A built server: bound, not yet running. Call [`Server::run`].
pub struct Server {
    listener: TcpListener,
    local_addr: SocketAddr,
    service: TaskService,
    agent: Arc<dyn Agent>,
    runtime_config: RuntimeConfig,
    app: Edge,
    listener_config: ListenerConfig,
    shared: Arc<Shared>,
    drain_timeout: Duration,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("service", &self.service)
            .field("drain_timeout", &self.drain_timeout)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A builder.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::new()
    }

    /// The address the server listens on (useful after binding port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The task service (for in-process callers and tests).
    pub fn service(&self) -> &TaskService {
        &self.service
    }

    /// The complete router (health, readiness, metrics and every mounted adapter
    /// behind the auth layer, with the server's whole layer stack), for example to
    /// drive it in-process with `tower::ServiceExt::oneshot`.
    pub fn router(&self) -> Router {
        Router::new().fallback_service(self.app.clone())
    }

    /// Starts the runtime and serves HTTP until `shutdown` resolves. Then it stops
    /// accepting connections and answers `/readyz` with 503, lets turns in flight
    /// (and open HTTP requests) finish for up to the drain timeout, aborts the turns
    /// still running and releases their leases, and returns.
    ///
    /// `shutdown` is any future (its output is ignored), for example
    /// `tokio::signal::ctrl_c()` or a oneshot receiver.
    pub async fn run<F>(self, shutdown: F) -> Result<(), Error>
    where
        F: Future + Send + 'static,
    {
        let Server {
            listener,
            local_addr,
            service,
            agent,
            runtime_config,
            app,
            listener_config,
            shared,
            drain_timeout,
        } = self;
        let runtime = Runtime::start(service.clone(), agent, runtime_config);
        info!(
            %local_addr,
            store = service.store().kind(),
            agent = service.agent_name(),
            "taskwire serving"
        );
        let stop_http = CancellationToken::new();
        let serve = crate::listen::serve(listener, app, listener_config, stop_http.clone());
        let mut http = tokio::spawn(serve);

        let ended_early = tokio::select! {
            _ = shutdown => None,
            r = &mut http => Some(r),
        };
        shared.shutting_down.store(true, Ordering::SeqCst);
        stop_http.cancel();
        if let Some(r) = ended_early {
            runtime.shutdown(drain_timeout).await;
            return match r {
                Ok(res) => res.map_err(Error::Io),
                Err(join) => Err(Error::Io(std::io::Error::other(join.to_string()))),
            };
        }

        info!(timeout = ?drain_timeout, "shutting down: no new connections, draining turns in flight");
        let deadline = tokio::time::Instant::now() + drain_timeout;
        let http_drain = async {
            match tokio::time::timeout_at(deadline, &mut http).await {
                Ok(Ok(res)) => res.map_err(Error::Io),
                Ok(Err(join)) => Err(Error::Io(std::io::Error::other(join.to_string()))),
                Err(_) => {
                    warn!("HTTP connections still open after the drain timeout: closing them");
                    http.abort();
                    Ok(())
                }
            }
        };
        let ((), http_res) = tokio::join!(runtime.shutdown(drain_timeout), http_drain);
        info!("taskwire stopped");
        http_res
    }
}
