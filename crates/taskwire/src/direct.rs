//! Direct routes: routes (a method and an exact path or a path prefix) that the
//! listener answers before the router, with the router's authentication, body
//! limit and request metric applied in one place instead of through axum's
//! per-route layer stack.
//!
//! Why: every layer on an axum `Router` wraps every route in a boxed, cloned
//! service, so one request to a protected route went through seven boxed futures
//! (telemetry, auth, two body limits, state, the route, the handler) before the
//! handler ran. For the hot JSON-RPC endpoints that stack cost more CPU than the
//! handler itself (callgrind, GetTask over JSON-RPC). A direct route is one boxed
//! future.
//!
//! A direct route must answer exactly as the router does for the same request: the
//! adapter mounts the same handler in its [`crate::Adapter::routes`] (the router
//! stays complete, for [`crate::Server::router`] and in-process callers), and the
//! server's tests compare both paths response by response.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use taskwire_core::Caller;
use tower::Service;

use crate::auth::{self, AuthConfig};
use crate::telemetry;

/// A boxed future of a response.
type ResponseFuture = Pin<Box<dyn Future<Output = Response> + Send + 'static>>;

/// What a direct route's handler is given: the authenticated caller, the request
/// head (method, uri with its query, headers) and the whole body, read within the
/// route's limit.
#[derive(Debug)]
pub struct DirectRequest {
    /// The caller, as the auth layer would have set `Extension<Caller>`.
    pub caller: Caller,
    /// The request head.
    pub parts: Parts,
    /// The request body.
    pub body: Bytes,
}

type Collected = Arc<dyn Fn(DirectRequest) -> ResponseFuture + Send + Sync>;
type Streaming = Arc<dyn Fn(Request) -> ResponseFuture + Send + Sync>;

/// How a direct route takes its request.
#[derive(Clone)]
enum Handler {
    /// The body read whole within a limit, as axum's `Bytes` extractor under
    /// `DefaultBodyLimit::max(limit)` reads it.
    Collected { body_limit: usize, f: Collected },
    /// The request as it came, with the caller as its `Caller` extension, as the
    /// auth layer hands it to a service mounted with `route_service` (`gRPC`).
    Streaming(Streaming),
}

/// Which paths a direct route answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PathMatch {
    Exact(&'static str),
    Prefix(&'static str),
}

/// One direct route: a method, a path (exact, or a prefix), a metric label and
/// a handler.
#[derive(Clone)]
pub struct DirectRoute {
    method: Method,
    path: PathMatch,
    label: &'static str,
    handler: Handler,
}

impl std::fmt::Debug for DirectRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectRoute")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl DirectRoute {
    /// A route answering `method path` (the path matched exactly, without its
    /// query) with `handler`, given the whole body: bodies over `body_limit`
    /// bytes are refused with 413 as axum's `DefaultBodyLimit` refuses them.
    /// `path` is also the `route` label of the request metric, as the router's
    /// matched path would be.
    pub fn new<F, Fut>(method: Method, path: &'static str, body_limit: usize, handler: F) -> Self
    where
        F: Fn(DirectRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        Self {
            method,
            path: PathMatch::Exact(path),
            label: path,
            handler: Handler::Collected {
                body_limit,
                f: Arc::new(move |req| Box::pin(handler(req))),
            },
        }
    }

    /// A route answering `method` on every path that starts with `prefix`, with
    /// the request as it came (its body unread) and the caller as its
    /// `taskwire_core::Caller` extension: what a service mounted with axum's
    /// `route_service` behind the auth layer is given. `label` is the `route`
    /// label of the request metric: the pattern the router mounts the service at.
    pub fn streaming<F, Fut>(
        method: Method,
        prefix: &'static str,
        label: &'static str,
        handler: F,
    ) -> Self
    where
        F: Fn(Request) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response> + Send + 'static,
    {
        Self {
            method,
            path: PathMatch::Prefix(prefix),
            label,
            handler: Handler::Streaming(Arc::new(move |req| Box::pin(handler(req)))),
        }
    }

    /// The route's method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The route's path, or the prefix of its paths.
    pub fn path(&self) -> &'static str {
        match self.path {
            PathMatch::Exact(p) | PathMatch::Prefix(p) => p,
        }
    }

    /// The body limit of a route that reads the body whole.
    pub(crate) fn body_limit(&self) -> Option<usize> {
        match &self.handler {
            Handler::Collected { body_limit, .. } => Some(*body_limit),
            Handler::Streaming(_) => None,
        }
    }

    fn matches(&self, method: &Method, path: &str) -> bool {
        self.method == method
            && match self.path {
                PathMatch::Exact(p) => p == path,
                PathMatch::Prefix(p) => path.starts_with(p),
            }
    }

    /// Whether the two routes could both match a request.
    pub(crate) fn overlaps(&self, other: &DirectRoute) -> bool {
        self.method == other.method
            && match (self.path, other.path) {
                (PathMatch::Exact(a), PathMatch::Exact(b)) => a == b,
                (PathMatch::Prefix(p), PathMatch::Exact(e))
                | (PathMatch::Exact(e), PathMatch::Prefix(p)) => e.starts_with(p),
                (PathMatch::Prefix(a), PathMatch::Prefix(b)) => {
                    a.starts_with(b) || b.starts_with(a)
                }
            }
    }
}

/// The text of axum's answer to a body over the limit.
pub(crate) const TOO_LARGE: &str = "Failed to buffer the request body: length limit exceeded";

/// The response axum's body extractors give for a body over the limit.
fn too_large() -> Response {
    (StatusCode::PAYLOAD_TOO_LARGE, TOO_LARGE).into_response()
}

/// Reads the body within `limit`, as axum's `Bytes` extractor does under
/// `DefaultBodyLimit::max(limit)`.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, Response> {
    match Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Err(e) => Err((
            StatusCode::BAD_REQUEST,
            format!("Failed to buffer the request body: {e}"),
        )
            .into_response()),
    }
}

/// Runs a direct route: authenticate, then hand the request to the handler (the
/// body read first for a collected route).
async fn serve_direct(route: DirectRoute, auth: Arc<AuthConfig>, req: Request) -> Response {
    let caller = match auth::caller_of(&auth, &req) {
        Ok(c) => c,
        Err(f) => return f.response_to(req.headers()),
    };
    match route.handler {
        Handler::Collected { body_limit, f } => {
            let (parts, body) = req.into_parts();
            let body = match read_body(body, body_limit).await {
                Ok(b) => b,
                Err(r) => return r,
            };
            f(DirectRequest {
                caller,
                parts,
                body,
            })
            .await
        }
        Handler::Streaming(f) => {
            let mut req = req;
            req.extensions_mut().insert(caller);
            f(req).await
        }
    }
}

/// The listener's service: a direct route when one matches, else the router.
#[derive(Clone)]
pub(crate) struct Front {
    routes: Arc<[DirectRoute]>,
    auth: Arc<AuthConfig>,
    router: Router,
}

impl Front {
    pub(crate) fn new(routes: Vec<DirectRoute>, auth: AuthConfig, router: Router) -> Self {
        Self {
            routes: routes.into(),
            auth: Arc::new(auth),
            router,
        }
    }

    fn find(&self, method: &Method, path: &str) -> Option<&DirectRoute> {
        self.routes.iter().find(|r| r.matches(method, path))
    }
}

impl Service<Request> for Front {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send + 'static>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let Some(route) = self.find(req.method(), req.uri().path()).cloned() else {
            return Box::pin(self.router.call(req));
        };
        let auth = self.auth.clone();
        Box::pin(async move {
            let method = req.method().clone();
            let started = Instant::now();
            let label = route.label;
            let res = serve_direct(route, auth, req).await;
            telemetry::record_http(&method, label, res.status(), started.elapsed());
            Ok(res)
        })
    }
}
