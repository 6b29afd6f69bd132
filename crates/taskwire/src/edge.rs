//! The server's one layer stack, applied once per request around the whole
//! router (never a `Router::layer` per route, which would wrap every route in one
//! more boxed, cloned service):
//!
//! 1. [`Edge`]: the request metric (`taskwire_http_request_duration_seconds`,
//!    labelled by route pattern from [`RouteLabels`]) and a `request` tracing span
//!    (debug level). The pattern also says where the request goes:
//! 2. a public route (`/healthz`, `/readyz`, `/metrics`, the adapters' declared
//!    public routes) straight to the public router;
//! 3. a protected route through [`Authenticate`], which puts the
//!    [`taskwire_core::Caller`] in the request extensions (or answers 401, or the
//!    gRPC status UNAUTHENTICATED to a gRPC request), to the protected router;
//! 4. a path no pattern names to the public router, whose fallback is
//!    [`Authenticate`] and the protected router (so routes an adapter did not
//!    declare are served as mounted, at the cost of one more routing step),
//!    with the server's default body limit for axum's body extractors (a router
//!    mounted with [`crate::ServerBuilder::mount`]). Adapters read their request
//!    bodies within their own limits.
//!
//! Ahead of all of these, a path under a [`DirectRoute`]'s prefix (gRPC's
//! `/lf.a2a.v1.A2AService/`) goes through [`Authenticate`] straight to the
//! route's handler, without a router.
//!
//! HTTP/2 answers get their `Date` header here, not from hyper (whose HTTP/2
//! date is switched off in the listener): every answer but a direct route's.
//! gRPC answers carry none, as grpc-go's and grpc-java's servers send none; on
//! HTTP/1.1 hyper still adds it to every answer.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{header, HeaderValue, Method, StatusCode, Version};
use axum::response::Response;
use axum::routing::future::RouteFuture;
use axum::Router;
use tower::{Layer, Service};

use taskwire_auth::{Authenticators, BoxFuture, Grant, Refusal, Verdict};
use taskwire_core::{Caller, Permissions};

use crate::auth::{self, AuthConfig, ResourceInfo};
use crate::server::{DirectFuture, DirectRoute};
use crate::telemetry;

/// Route patterns, for the `route` label of the request metric: the pattern a
/// path matches (`/cas/tasks/{id}`), never the raw path, so that the label's
/// values are bounded.
#[derive(Debug, Default)]
pub(crate) struct RouteLabels {
    patterns: matchit::Router<(&'static str, Access)>,
}

/// Whether a route is served without authentication.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Public,
    Protected,
}

impl RouteLabels {
    /// Adds a pattern (axum's syntax: `{param}`, `{*rest}`). A pattern already
    /// known, or one matchit cannot take, is skipped with a debug log (its
    /// requests are then labelled `other` and routed the general way).
    pub(crate) fn add(&mut self, pattern: &'static str, access: Access) {
        if let Err(e) = self.patterns.insert(pattern, (pattern, access)) {
            tracing::debug!(pattern, error = %e, "route pattern not added to the metric labels");
        }
    }

    /// The pattern `path` matches, if any, and its access.
    pub(crate) fn of(&self, path: &str) -> Option<(&'static str, Access)> {
        self.patterns.at(path).ok().map(|m| *m.value)
    }
}

/// The route label of a request whose path matches no known pattern: `unmatched`
/// for a 404 (so scanners do not make labels), `other` otherwise (a route of a
/// router mounted with [`crate::ServerBuilder::mount`]).
fn fallback_label(status: StatusCode) -> &'static str {
    if status == StatusCode::NOT_FOUND {
        "unmatched"
    } else {
        "other"
    }
}

/// The outermost service of the server (see the module doc). Cloned per
/// connection and per request: one reference count.
#[derive(Clone)]
pub(crate) struct Edge(Arc<EdgeInner>);

struct EdgeInner {
    /// The public routes alone.
    public: Router,
    /// Authentication and the protected routes.
    protected: Authenticate,
    /// The public routes with `protected` as their fallback, under the default
    /// body limit.
    both: <DefaultBodyLimit as Layer<Router>>::Service,
    labels: RouteLabels,
    /// Routes called without the router, behind authentication.
    direct: Vec<DirectRoute>,
}

impl Edge {
    /// The stack over `public` routes, `protected` ones (answered after
    /// authentication with `auth`) and `direct` ones (called after
    /// authentication, ahead of any routing); `body_limit` is the default limit
    /// of axum's body extractors on routes no pattern names.
    pub(crate) fn new(
        public: Router,
        protected: Router,
        auth: (&AuthConfig, Option<ResourceInfo>),
        labels: RouteLabels,
        direct: Vec<DirectRoute>,
        body_limit: usize,
    ) -> Self {
        let protected = Authenticate {
            inner: protected,
            auth: auth.0.authenticators(),
            resource: auth.1.map(Arc::new),
        };
        Self(Arc::new(EdgeInner {
            both: DefaultBodyLimit::max(body_limit)
                .layer(public.clone().fallback_service(protected.clone())),
            public,
            protected,
            labels,
            direct,
        }))
    }

    /// [`Service::call`] without the `&mut`: what the listener calls for each
    /// request.
    pub(crate) fn serve(&self, req: Request) -> EdgeFuture {
        let this = &*self.0;
        let method = req.method().clone();
        let path = req.uri().path();
        let direct = this.direct.iter().find(|d| path.starts_with(d.prefix));
        let found = match direct {
            Some(d) => Some((d.label, Access::Protected)),
            None => this.labels.of(path),
        };
        let label = found.map(|(l, _)| l);
        let date = direct.is_none() && req.version() == Version::HTTP_2;
        let span = tracing::debug_span!("request", %method, route = label.unwrap_or("-"));
        let inner = {
            let _entered = span.enter();
            match (direct, found) {
                (Some(d), _) => this.protected.direct(d, req),
                (None, Some((_, Access::Protected))) => this.protected.clone().call(req),
                (None, Some((_, Access::Public))) => {
                    AuthFuture::new(AuthState::Routed(this.public.clone().call(req)))
                }
                (None, None) => AuthFuture::new(AuthState::Routed(this.both.clone().call(req))),
            }
        };
        EdgeFuture {
            inner,
            method,
            label,
            date,
            started: Instant::now(),
            span,
        }
    }
}

impl Service<Request> for Edge {
    type Response = Response;
    type Error = Infallible;
    type Future = EdgeFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> EdgeFuture {
        self.serve(req)
    }
}

/// The future of [`Edge::call`]: the router's, timed.
pub(crate) struct EdgeFuture {
    inner: AuthFuture,
    method: Method,
    label: Option<&'static str>,
    /// Whether the answer gets a `Date` header here (see the module doc).
    date: bool,
    started: Instant,
    span: tracing::Span,
}

impl Future for EdgeFuture {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut res = {
            let _entered = this.span.enter();
            match ready!(Pin::new(&mut this.inner).poll(cx)) {
                Ok(res) => res,
                Err(never) => match never {},
            }
        };
        if this.date {
            res.headers_mut()
                .entry(header::DATE)
                .or_insert_with(http_date);
        }
        let label = this.label.unwrap_or_else(|| fallback_label(res.status()));
        telemetry::record_http(&this.method, label, res.status(), this.started.elapsed());
        Poll::Ready(Ok(res))
    }
}

/// The current time as an HTTP date (`Thu, 03 Dec 2026 07:39:13 GMT`), formatted
/// once per second per thread.
fn http_date() -> HeaderValue {
    thread_local! {
        static CACHED: std::cell::RefCell<(u64, HeaderValue)> =
            const { std::cell::RefCell::new((u64::MAX, HeaderValue::from_static(""))) };
    }
    let now = std::time::SystemTime::now();
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    CACHED.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != secs {
            let text = httpdate::fmt_http_date(now);
            // An HTTP date is visible ASCII.
            c.1 = HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static(""));
            c.0 = secs;
        }
        c.1.clone()
    })
}

/// Authentication in front of the protected routes.
#[derive(Clone)]
struct Authenticate {
    inner: Router,
    /// None: no authentication, every caller is [`Caller::local`].
    auth: Option<Authenticators>,
    /// What a 401 and a 403 tell clients of an OAuth-protected server.
    resource: Option<Arc<ResourceInfo>>,
}

/// Where an authenticated request goes.
enum Next {
    Router(Router),
    Direct(Arc<dyn Fn(Request) -> DirectFuture + Send + Sync>),
}

impl Authenticate {
    /// Authenticates a request for a direct route and calls its handler.
    fn direct(&self, route: &DirectRoute, req: Request) -> AuthFuture {
        self.start(req, Next::Direct(Arc::clone(&route.handler)))
    }

    fn start(&self, mut req: Request, next: Next) -> AuthFuture {
        let Some(chain) = &self.auth else {
            req.extensions_mut().insert(Caller::local());
            return AuthFuture::new(next.call(req));
        };
        match auth::verdict_of(chain, &req) {
            Verdict::Accept(grant) => self.proceed(grant, req, next),
            Verdict::Refuse(r) => self.refuse(r, &req),
            Verdict::Pass => self.refuse(Refusal::InvalidToken(taskwire_auth::UNKNOWN_TOKEN), &req),
            Verdict::Pending(verdict) => AuthFuture::new(AuthState::Pending {
                verdict,
                req: Some(req),
                next: Some(next),
                auth: self.clone(),
            }),
        }
    }

    fn proceed(&self, grant: Grant, mut req: Request, next: Next) -> AuthFuture {
        let permissions = grant.caller.permissions;
        // Only a caller short of a permission can be refused for a scope: only
        // then is the step-up challenge prepared.
        let on_forbidden = match &self.resource {
            Some(r) if permissions != Permissions::ALL => {
                r.insufficient_scope(permissions, req.uri().path())
            }
            _ => None,
        };
        req.extensions_mut().insert(grant.caller);
        AuthFuture {
            state: next.call(req),
            on_forbidden,
        }
    }

    fn refuse(&self, r: Refusal, req: &Request) -> AuthFuture {
        let res =
            auth::refusal_response(r, req.headers(), req.uri().path(), self.resource.as_deref());
        AuthFuture::new(AuthState::Refused(Some(res)))
    }
}

impl Next {
    fn call(self, req: Request) -> AuthState {
        match self {
            Next::Router(mut r) => AuthState::Routed(r.call(req)),
            Next::Direct(h) => AuthState::Direct(h(req)),
        }
    }
}

impl Service<Request> for Authenticate {
    type Response = Response;
    type Error = Infallible;
    type Future = AuthFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> AuthFuture {
        self.start(req, Next::Router(self.inner.clone()))
    }
}

/// The future of [`Authenticate::call`].
struct AuthFuture {
    state: AuthState,
    /// The `WWW-Authenticate` challenge a 403 answer gets (the caller lacks a
    /// scope: RFC 6750 `insufficient_scope`, MCP's step-up).
    on_forbidden: Option<HeaderValue>,
}

enum AuthState {
    Routed(RouteFuture<Infallible>),
    Direct(DirectFuture),
    Refused(Option<Response>),
    /// An authenticator needs I/O first (a key set refetch).
    Pending {
        verdict: BoxFuture<Verdict>,
        req: Option<Request>,
        next: Option<Next>,
        auth: Authenticate,
    },
}

impl AuthFuture {
    fn new(state: AuthState) -> Self {
        Self {
            state,
            on_forbidden: None,
        }
    }
}

impl Future for AuthFuture {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            let mut res = match &mut this.state {
                AuthState::Routed(f) => match ready!(Pin::new(f).poll(cx)) {
                    Ok(res) => res,
                    Err(never) => match never {},
                },
                AuthState::Direct(f) => ready!(f.as_mut().poll(cx)),
                AuthState::Refused(res) => res.take().unwrap_or_else(|| {
                    // Polled again after it answered: an empty 500 rather than a panic.
                    let mut r = Response::default();
                    *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
                    r
                }),
                AuthState::Pending {
                    verdict,
                    req,
                    next,
                    auth,
                } => {
                    let v = ready!(verdict.as_mut().poll(cx));
                    let (Some(req), Some(next)) = (req.take(), next.take()) else {
                        this.state = AuthState::Refused(None);
                        continue;
                    };
                    let auth = auth.clone();
                    *this = match v {
                        Verdict::Accept(grant) => auth.proceed(grant, req, next),
                        Verdict::Refuse(r) => auth.refuse(r, &req),
                        Verdict::Pass => {
                            auth.refuse(Refusal::InvalidToken(taskwire_auth::UNKNOWN_TOKEN), &req)
                        }
                        Verdict::Pending(verdict) => AuthFuture::new(AuthState::Pending {
                            verdict,
                            req: Some(req),
                            next: Some(next),
                            auth,
                        }),
                    };
                    continue;
                }
            };
            if res.status() == StatusCode::FORBIDDEN {
                if let Some(c) = this.on_forbidden.take() {
                    res.headers_mut().insert(header::WWW_AUTHENTICATE, c);
                }
            }
            return Poll::Ready(Ok(res));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_is_an_http_date() {
        let parse = |v: HeaderValue| {
            let text = v.to_str().unwrap_or_default().to_string();
            httpdate::parse_http_date(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
        };
        let (a, b) = (parse(http_date()), parse(http_date()));
        let apart = b.duration_since(a).unwrap_or_default();
        assert!(apart <= std::time::Duration::from_secs(1), "{apart:?}");
    }

    #[test]
    fn labels_are_patterns_never_paths() {
        let mut l = RouteLabels::default();
        l.add("/healthz", Access::Public);
        l.add("/cas/tasks/{id}", Access::Protected);
        l.add("/lf.a2a.v1.A2AService/{*rest}", Access::Protected);
        l.add("/healthz", Access::Protected);
        assert_eq!(l.of("/healthz"), Some(("/healthz", Access::Public)));
        assert_eq!(
            l.of("/cas/tasks/abc123"),
            Some(("/cas/tasks/{id}", Access::Protected))
        );
        assert_eq!(
            l.of("/lf.a2a.v1.A2AService/GetTask"),
            Some(("/lf.a2a.v1.A2AService/{*rest}", Access::Protected))
        );
        assert_eq!(l.of("/nope"), None);
        assert_eq!(fallback_label(StatusCode::NOT_FOUND), "unmatched");
        assert_eq!(fallback_label(StatusCode::OK), "other");
    }

    /// Every route of A2A's HTTP+JSON binding gets its own label (matchit takes
    /// all fourteen patterns side by side: static `tasks` and `{tenant}` siblings,
    /// `{task}` segments that carry a `:verb`).
    #[cfg(feature = "a2a")]
    #[test]
    fn http_json_routes_have_labels() {
        let mut l = RouteLabels::default();
        for p in taskwire_a2a::rest::ROUTE_PATTERNS {
            l.add(p, Access::Protected);
        }
        let id = "0123456789abcdef0123456789abcdef";
        for (path, pattern) in [
            (
                "/a2a/rest/message:send".to_string(),
                "/a2a/rest/message:send",
            ),
            ("/a2a/rest/tasks".to_string(), "/a2a/rest/tasks"),
            (format!("/a2a/rest/tasks/{id}"), "/a2a/rest/tasks/{task}"),
            (
                format!("/a2a/rest/tasks/{id}:cancel"),
                "/a2a/rest/tasks/{task}",
            ),
            (
                format!("/a2a/rest/tasks/{id}/pushNotificationConfigs/c1"),
                "/a2a/rest/tasks/{task}/pushNotificationConfigs/{config}",
            ),
            (
                "/a2a/rest/acme/message:stream".to_string(),
                "/a2a/rest/{tenant}/message:stream",
            ),
            (
                format!("/a2a/rest/acme/tasks/{id}:subscribe"),
                "/a2a/rest/{tenant}/tasks/{task}",
            ),
            (
                "/a2a/rest/acme/extendedAgentCard".to_string(),
                "/a2a/rest/{tenant}/extendedAgentCard",
            ),
        ] {
            assert_eq!(l.of(&path), Some((pattern, Access::Protected)), "{path}");
        }
    }
}
