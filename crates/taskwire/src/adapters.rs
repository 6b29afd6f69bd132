//! The protocol adapters compiled into this build, as [`Adapter`]s the server
//! mounts on its one listener. Each is a cargo feature (on by default).

use std::path::PathBuf;
#[cfg(feature = "a2a")]
use std::sync::OnceLock;

use axum::Router;

#[cfg(feature = "a2a")]
use axum::http::Method;

use crate::server::{Adapter, AdapterContext};
#[cfg(feature = "a2a")]
use crate::server::{DirectRequest, DirectRoute};

/// Settings the adapters share, from `taskwire serve` flags.
#[derive(Clone, Debug, Default)]
pub struct AdapterOptions {
    /// Public base url (`--public-url`); `http://<bound address>` when unset.
    pub public_url: Option<String>,
    /// Allow A2A push urls on loopback, private or link-local addresses.
    pub push_allow_private: bool,
    /// Where A2A push configs are kept (next to the SQLite database); memory when unset.
    pub push_store_path: Option<PathBuf>,
    /// MCP: when `tools/call` becomes a task (`always` or milliseconds).
    pub mcp_task_mode: Option<String>,
}

impl AdapterOptions {
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
    let mut v: Vec<Box<dyn Adapter>> = Vec::new();
    #[cfg(feature = "a2a")]
    v.push(Box::new(A2a {
        opts: opts.clone(),
        built: OnceLock::new(),
    }));
    #[cfg(feature = "mcp")]
    v.push(Box::new(Mcp { opts: opts.clone() }));
    #[cfg(feature = "agui")]
    v.push(Box::new(Agui));
    #[cfg(feature = "cas")]
    v.push(Box::new(Cas));
    let _ = opts;
    v
}

/// A2A: JSON-RPC at `/a2a`, the agent card, and (with `grpc`) `lf.a2a.v1.A2AService`.
#[cfg(feature = "a2a")]
struct A2a {
    opts: AdapterOptions,
    built: OnceLock<taskwire_a2a::A2aAdapter>,
}

#[cfg(feature = "a2a")]
impl A2a {
    fn adapter(&self, ctx: &AdapterContext) -> &taskwire_a2a::A2aAdapter {
        self.built.get_or_init(|| {
            let config = taskwire_a2a::A2aConfig {
                public_url: self.opts.public_url(ctx),
                grpc: cfg!(feature = "grpc"),
                push_allow_private: self.opts.push_allow_private,
                push_store_path: self.opts.push_store_path.clone(),
                bearer_auth: ctx.authenticated(),
                ..taskwire_a2a::A2aConfig::default()
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
        let a2a = self.adapter(ctx);
        let routes = a2a.routes();
        #[cfg(feature = "grpc")]
        let routes = routes.merge(taskwire_grpc::GrpcAdapter::new(a2a.service().clone()).routes());
        routes
    }

    fn public_routes(&self, ctx: &AdapterContext) -> Router {
        self.adapter(ctx).public_routes()
    }

    /// `POST /a2a` and `POST /a2a/` ahead of the router: the same handler as the
    /// routes above, without axum's layer stack.
    fn direct_routes(&self, ctx: &AdapterContext) -> Vec<DirectRoute> {
        let svc = self.adapter(ctx).service().clone();
        let limit = svc.config().max_body_bytes;
        [taskwire_a2a::card::JSONRPC_PATH, "/a2a/"]
            .into_iter()
            .map(|path| {
                let svc = svc.clone();
                DirectRoute::new(Method::POST, path, limit, move |req: DirectRequest| {
                    let svc = svc.clone();
                    async move {
                        taskwire_a2a::jsonrpc::serve(
                            &svc,
                            &req.caller,
                            req.parts.uri.query(),
                            &req.parts.headers,
                            req.body,
                        )
                        .await
                    }
                })
            })
            .chain(grpc_direct_route(&svc))
            .collect()
    }
}

/// `POST /lf.a2a.v1.A2AService/*` ahead of the router: the gRPC service that the
/// A2A routes mount, without axum's layer stack.
#[cfg(feature = "grpc")]
fn grpc_direct_route(svc: &taskwire_a2a::A2aService) -> Option<DirectRoute> {
    use tower::ServiceExt;
    let server = taskwire_grpc::GrpcAdapter::new(svc.clone()).route();
    Some(DirectRoute::streaming(
        Method::POST,
        taskwire_grpc::RPC_PREFIX,
        taskwire_grpc::ROUTE_PATTERN,
        move |req: axum::extract::Request| {
            let server = server.clone();
            async move {
                match server.oneshot(req).await {
                    Ok(res) => res,
                    Err(never) => match never {},
                }
            }
        },
    ))
}

#[cfg(all(feature = "a2a", not(feature = "grpc")))]
fn grpc_direct_route(_svc: &taskwire_a2a::A2aService) -> Option<DirectRoute> {
    None
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
        let mut config = taskwire_mcp::McpConfig::default();
        if let Some(mode) = &self.opts.mcp_task_mode {
            // Validated when the flag was parsed.
            if let Ok(m) = mode.parse() {
                config.task_mode = m;
            }
        }
        taskwire_mcp::McpAdapter::new(ctx.service().clone(), ctx.agent().clone(), config).routes()
    }
}

/// AG-UI at `/agui`.
#[cfg(feature = "agui")]
struct Agui;

#[cfg(feature = "agui")]
impl Adapter for Agui {
    fn name(&self) -> &str {
        "agui"
    }

    fn routes(&self, ctx: &AdapterContext) -> Router {
        taskwire_agui::AguiAdapter::new(
            ctx.service().clone(),
            ctx.agent().clone(),
            taskwire_agui::AguiConfig::default(),
        )
        .routes()
    }
}

/// CAS task status at `/cas`.
#[cfg(feature = "cas")]
struct Cas;

#[cfg(feature = "cas")]
impl Adapter for Cas {
    fn name(&self) -> &str {
        "cas"
    }

    fn routes(&self, ctx: &AdapterContext) -> Router {
        taskwire_cas::CasAdapter::new(
            ctx.service().clone(),
            ctx.agent().clone(),
            taskwire_cas::CasConfig::default(),
        )
        .routes()
    }
}
