//! The protocol adapters compiled into this build, as [`Adapter`]s the server
//! mounts on its one listener. Each is a cargo feature (on by default).

#[cfg(feature = "a2a")]
use std::sync::OnceLock;

#[cfg(any(feature = "a2a", feature = "mcp", feature = "agui", feature = "cas"))]
use axum::Router;

use crate::server::Adapter;
#[cfg(any(feature = "a2a", feature = "mcp", feature = "agui", feature = "cas"))]
use crate::server::AdapterContext;

/// Settings the adapters share, from `taskwire serve` flags.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct AdapterOptions {
    /// Public base url (`--public-url`); `http://<bound address>` when unset.
    pub public_url: Option<String>,
    /// Allow A2A push urls on loopback, private or link-local addresses.
    pub push_allow_private: bool,
    /// A2A: how the card writes the gRPC interface's url
    /// (`--a2a-card-grpc-url`).
    #[cfg(feature = "a2a")]
    pub a2a_card_grpc_url: taskwire_a2a::GrpcCardUrl,
    /// A2A 1.1: longest long poll of GetTask (`--a2a-long-poll-max`); `None`
    /// keeps the adapter's default.
    pub a2a_long_poll_max: Option<std::time::Duration>,
    /// A2A: declare and serve no streaming (`--no-a2a-streaming`).
    pub no_a2a_streaming: bool,
    /// A2A: declare and serve no push notifications (`--no-a2a-push`).
    pub no_a2a_push: bool,
    /// Certificates (PEM) trusted for `https` A2A push urls besides the
    /// built-in and system roots (`--push-ca-file`).
    pub push_root_certificates_pem: Vec<Vec<u8>>,
    /// The client certificate presented to A2A push receivers that ask for
    /// one: its private key and chain (leaf first), PEM, in one buffer
    /// (`--push-client-cert`, `--push-client-key`).
    pub push_client_identity_pem: Option<Vec<u8>>,
    /// Per-principal bounds of what a caller can hold.
    pub quotas: Quotas,
    /// MCP: when `tools/call` becomes a task (`always` or milliseconds).
    pub mcp_task_mode: Option<String>,
    /// Lease of a push delivery (A2A and CAS), like a turn's (`--lease`): a
    /// delivery whose node died is taken over by another node after this. `None`
    /// keeps each adapter's default.
    pub push_lease: Option<std::time::Duration>,
}

/// What one caller (tenant and principal) may hold at once; each bound is its
/// own, so one caller can neither evict nor starve another. Over a bound, the
/// caller gets its protocol's error.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Quotas {
    /// A2A push configs on tasks that are not terminal.
    pub push_configs: usize,
    /// MCP 2025-11-25 sessions that have not expired.
    pub mcp_sessions: usize,
    /// AG-UI runs of tasks that are not terminal.
    pub agui_runs: usize,
}

impl Default for Quotas {
    fn default() -> Self {
        Self {
            push_configs: 1000,
            mcp_sessions: 100,
            agui_runs: 1000,
        }
    }
}

impl AdapterOptions {
    #[cfg(feature = "a2a")]
    fn public_url(&self, ctx: &AdapterContext) -> String {
        match &self.public_url {
            Some(u) => u.trim_end_matches('/').to_string(),
            None => format!("http://{}", ctx.local_addr()),
        }
    }
}

/// Names of the adapters compiled into this build.
pub fn compiled() -> Vec<&'static str> {
    let mut v = Vec::new();
    if cfg!(feature = "a2a") {
        v.push("a2a");
    }
    if cfg!(feature = "grpc") {
        v.push("grpc");
    }
    if cfg!(feature = "mcp") {
        v.push("mcp");
    }
    if cfg!(feature = "agui") {
        v.push("agui");
    }
    if cfg!(feature = "cas") {
        v.push("cas");
    }
    v
}

/// Every adapter compiled into this build, configured from `opts`.
#[expect(
    clippy::vec_init_then_push,
    reason = "each push is behind its own cargo feature"
)]
pub fn all(opts: &AdapterOptions) -> Vec<Box<dyn Adapter>> {
    #[cfg_attr(
        not(any(feature = "a2a", feature = "mcp", feature = "agui", feature = "cas")),
        allow(unused_mut, reason = "no adapter compiled in")
    )]
    let mut v: Vec<Box<dyn Adapter>> = Vec::new();
    #[cfg(feature = "a2a")]
    v.push(Box::new(A2a {
        opts: opts.clone(),
        built: OnceLock::new(),
    }));
    #[cfg(feature = "mcp")]
    v.push(Box::new(Mcp { opts: opts.clone() }));
    #[cfg(feature = "agui")]
    v.push(Box::new(Agui {
        max_runs_per_principal: opts.quotas.agui_runs,
    }));
    #[cfg(feature = "cas")]
    v.push(Box::new(Cas {
        push_lease: opts.push_lease,
    }));
    let _ = opts;
    v
}

/// A2A: JSON-RPC at `/a2a`, HTTP+JSON under `/a2a/rest`, the agent card, and
/// (with `grpc`) `lf.a2a.v1.A2AService`.
#[cfg(feature = "a2a")]
struct A2a {
    opts: AdapterOptions,
    built: OnceLock<taskwire_a2a::A2aAdapter>,
}

#[cfg(feature = "a2a")]
impl A2a {
    fn adapter(&self, ctx: &AdapterContext) -> &taskwire_a2a::A2aAdapter {
        self.built.get_or_init(|| {
            let config = {
                let mut v = taskwire_a2a::A2aConfig::default();
                v.public_url = self.opts.public_url(ctx);
                v.grpc = cfg!(feature = "grpc");
                v.push_allow_private = self.opts.push_allow_private;
                v.streaming = !self.opts.no_a2a_streaming;
                v.grpc_card_url = self.opts.a2a_card_grpc_url;
                if let Some(d) = self.opts.a2a_long_poll_max {
                    v.long_poll_max = d;
                }
                v.push_notifications = !self.opts.no_a2a_push;
                v.push_tls.root_certificates_pem = self.opts.push_root_certificates_pem.clone();
                v.push_tls.identity_pem = self.opts.push_client_identity_pem.clone();
                v.push_max_configs_per_principal = self.opts.quotas.push_configs;
                for s in ctx.auth_schemes() {
                    match s {
                        crate::auth::Scheme::OAuth(o) => {
                            let mut c = taskwire_a2a::card::CardOAuth::new(
                                &o.metadata_url,
                                o.openid_url.clone(),
                            )
                            .with_scope(&o.scopes[0], "read tasks")
                            .with_scope(&o.scopes[1], "send, answer and cancel tasks");
                            if let (true, Some(t)) = (o.client_credentials, &o.token_endpoint) {
                                c = c.with_client_credentials(t);
                            }
                            v.oauth.push(c);
                        }
                        _ => v.bearer_auth = true,
                    }
                }
                // The extended card is for authenticated callers only: it is
                // served where authentication is on.
                v.extended_card = ctx.authenticated();
                v.max_body_bytes = ctx.body_limit();
                v
            };
            let config = match self.opts.push_lease {
                Some(push_lease) => {
                    let mut v = config;
                    v.push_lease = push_lease;
                    v
                }
                None => config,
            };
            taskwire_a2a::A2aAdapter::new(ctx.service().clone(), ctx.agent().clone(), config)
        })
    }
}

#[cfg(feature = "a2a")]
impl Adapter for A2a {
    fn name(&self) -> &str {
        "a2a"
    }

    fn routes(&self, ctx: &AdapterContext) -> Router {
        self.adapter(ctx).routes()
    }

    /// gRPC: tonic's generated server, called straight from the server's layer
    /// stack (it routes by method itself; through the router each call cost a
    /// routing step, a boxed route service and its clone).
    #[cfg(feature = "grpc")]
    fn direct_routes(&self, ctx: &AdapterContext) -> Vec<crate::server::DirectRoute> {
        let route = taskwire_grpc::GrpcAdapter::new(self.adapter(ctx).service().clone()).route();
        vec![crate::server::DirectRoute::new(
            taskwire_grpc::RPC_PREFIX,
            taskwire_grpc::ROUTE_PATTERN,
            move |req| Box::pin(route.answer(req)),
        )]
    }

    fn public_routes(&self, ctx: &AdapterContext) -> Router {
        self.adapter(ctx).public_routes()
    }

    fn route_patterns(&self) -> Vec<&'static str> {
        let mut v = vec![taskwire_a2a::card::JSONRPC_PATH, "/a2a/"];
        v.extend(taskwire_a2a::rest::ROUTE_PATTERNS);
        v
    }

    fn public_route_patterns(&self) -> Vec<&'static str> {
        vec![taskwire_a2a::card::AGENT_CARD_PATH]
    }
}

/// MCP tasks at `/mcp`.
#[cfg(feature = "mcp")]
struct Mcp {
    opts: AdapterOptions,
}

#[cfg(feature = "mcp")]
impl Adapter for Mcp {
    fn name(&self) -> &str {
        "mcp"
    }

    fn routes(&self, ctx: &AdapterContext) -> Router {
        let mut config = {
            let mut v = taskwire_mcp::McpConfig::default();
            v.max_body_bytes = ctx.body_limit();
            v.max_sessions_per_principal = self.opts.quotas.mcp_sessions;
            v
        };
        // On loopback, DNS rebinding protection: only the loopback names (and
        // the public url's host) in Host and Origin.
        if ctx.local_addr().ip().is_loopback() {
            config.allowed_hosts = taskwire_mcp::McpConfig::LOOPBACK_HOSTS
                .map(String::from)
                .to_vec();
            if let Some(host) = self
                .opts
                .public_url
                .as_deref()
                .and_then(|u| u.split_once("://").map(|(_, r)| r))
                .and_then(|r| r.split(['/', ':']).next())
                .filter(|h| !h.is_empty())
            {
                config.allowed_hosts.push(host.to_ascii_lowercase());
            }
        }
        if let Some(mode) = &self.opts.mcp_task_mode {
            // Validated when the flag was parsed.
            if let Ok(m) = mode.parse() {
                config.task_mode = m;
            }
        }
        taskwire_mcp::McpAdapter::new(ctx.service().clone(), ctx.agent().clone(), config).routes()
    }

    fn route_patterns(&self) -> Vec<&'static str> {
        vec![taskwire_mcp::MCP_PATH]
    }
}

/// AG-UI at `/agui`.
#[cfg(feature = "agui")]
struct Agui {
    max_runs_per_principal: usize,
}

#[cfg(feature = "agui")]
impl Adapter for Agui {
    fn name(&self) -> &str {
        "agui"
    }

    fn routes(&self, ctx: &AdapterContext) -> Router {
        taskwire_agui::AguiAdapter::new(ctx.service().clone(), ctx.agent().clone(), {
            let mut c = taskwire_agui::AguiConfig::default();
            c.max_body_bytes = ctx.body_limit();
            c.max_runs_per_principal = self.max_runs_per_principal;
            c
        })
        .routes()
    }

    fn route_patterns(&self) -> Vec<&'static str> {
        vec![
            "/agui",
            "/agui/threads/{thread_id}",
            "/agui/threads/{thread_id}/runs/{run_id}/events",
            "/agui/threads/{thread_id}/runs/{run_id}/cancel",
        ]
    }
}

/// CAS task status at `/cas`.
#[cfg(feature = "cas")]
struct Cas {
    push_lease: Option<std::time::Duration>,
}

#[cfg(feature = "cas")]
impl Adapter for Cas {
    fn name(&self) -> &str {
        "cas"
    }

    fn routes(&self, ctx: &AdapterContext) -> Router {
        taskwire_cas::CasAdapter::new(ctx.service().clone(), ctx.agent().clone(), {
            let mut config = {
                let mut v = taskwire_cas::CasConfig::default();
                v.max_body_bytes = ctx.body_limit();
                v
            };
            if let Some(lease) = self.push_lease {
                config.push.lease = lease;
            }
            config
        })
        .routes()
    }

    fn route_patterns(&self) -> Vec<&'static str> {
        use taskwire_cas::paths;
        vec![
            paths::TASKS,
            paths::TASK,
            paths::MESSAGES,
            paths::INPUT,
            paths::EVENTS,
            paths::AUTHORIZATION,
            paths::REVIEWS,
            paths::REVIEW,
            paths::HOST_COMPLETE,
            paths::HOST_INTERRUPT,
        ]
    }
}
