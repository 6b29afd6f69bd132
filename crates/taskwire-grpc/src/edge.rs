//! The statuses tonic's server produces on its own, before a request reaches the
//! service (a body that is not one well-formed message, a message over the size
//! limit, a body that could not be read), in the A2A binding's shape: a status
//! code that names the client's mistake and a message without decoder details.
//!
//! tonic answers such requests with a trailers-only response (`grpc-status` in
//! the headers) and no `grpc-status-details-bin`; every status of the A2A service
//! itself carries one (see [`crate::status_of`]), so the two are told apart
//! without guessing from message texts.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request, Response};
use futures::FutureExt;
use tonic::Code;
use tower::Service;

use crate::{A2aServiceServer, GrpcService};

/// `grpc-status`, parsed once.
const GRPC_STATUS: axum::http::HeaderName = axum::http::HeaderName::from_static("grpc-status");
/// `grpc-message`, parsed once.
const GRPC_MESSAGE: axum::http::HeaderName = axum::http::HeaderName::from_static("grpc-message");
/// `grpc-status-details-bin`, parsed once.
const GRPC_DETAILS: axum::http::HeaderName =
    axum::http::HeaderName::from_static("grpc-status-details-bin");

/// The prefix of tonic's message for a compressed-flag without `grpc-encoding`,
/// which the gRPC specification requires to be INTERNAL.
const COMPRESSED_FLAG: &str = "protocol error: received message with compressed-flag";

/// tonic's generated server for the A2A service, its own error statuses
/// rewritten (see the module doc). What [`crate::GrpcAdapter::routes`] mounts.
#[derive(Clone, Debug)]
pub struct GrpcRoute {
    server: A2aServiceServer<GrpcService>,
}

impl GrpcRoute {
    pub(crate) fn new(server: A2aServiceServer<GrpcService>) -> Self {
        Self { server }
    }
}

/// tonic's future for one call (already boxed by the generated server).
type ServerFuture = <A2aServiceServer<GrpcService> as Service<Request<Body>>>::Future;

/// The future of [`GrpcRoute::answer`] (and [`GrpcRoute::call`]): tonic's, its
/// answer rewritten (no second box around the one tonic made).
pub struct Answer {
    inner: ServerFuture,
}

impl Future for Answer {
    type Output = Response<Body>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let res = match ready!(self.inner.as_mut().poll(cx)) {
            Ok(res) => res,
            Err(never) => match never {},
        };
        let (mut parts, body) = res.into_parts();
        rewrite(&mut parts.headers);
        Poll::Ready(Response::from_parts(parts, Body::new(body)))
    }
}

impl GrpcRoute {
    /// One call, without the `&mut` of [`Service::call`] (for a server that
    /// shares one route between connections).
    pub fn answer(&self, req: Request<Body>) -> Answer {
        Answer {
            inner: self.server.clone().call(req),
        }
    }
}

impl Service<Request<Body>> for GrpcRoute {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future =
        futures::future::Map<Answer, fn(Response<Body>) -> Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let ok: fn(Response<Body>) -> Result<Response<Body>, Infallible> = Ok;
        Answer {
            inner: self.server.call(req),
        }
        .map(ok)
    }
}

/// Rewrites a trailers-only status that tonic produced itself.
fn rewrite(headers: &mut HeaderMap) {
    let Some(code) = headers
        .get(&GRPC_STATUS)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse::<i32>().ok())
        .map(Code::from_i32)
    else {
        return;
    };
    if headers.contains_key(&GRPC_DETAILS) {
        return;
    }
    let message = headers
        .get(&GRPC_MESSAGE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (code, text) = match code {
        Code::Internal if message.starts_with(COMPRESSED_FLAG) => (
            Code::Internal,
            "message with the compressed flag but no grpc-encoding",
        ),
        Code::Internal => (
            Code::InvalidArgument,
            "the request is not one well-formed message of the method's type",
        ),
        Code::OutOfRange | Code::ResourceExhausted => (
            Code::ResourceExhausted,
            "the request message is larger than this server accepts",
        ),
        Code::Unknown => (Code::InvalidArgument, "the request body could not be read"),
        // UNIMPLEMENTED (an unknown method or encoding) and the rest are right as
        // tonic sends them.
        _ => return,
    };
    headers.insert(GRPC_STATUS, HeaderValue::from(code as i32));
    headers.insert(GRPC_MESSAGE, HeaderValue::from_static(text));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn headers(code: i32, message: &str, details: bool) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(GRPC_STATUS, HeaderValue::from(code));
        h.insert(GRPC_MESSAGE, HeaderValue::from_str(message).unwrap());
        if details {
            h.insert(GRPC_DETAILS, HeaderValue::from_static("AAAA"));
        }
        h
    }

    #[test]
    fn decoder_errors_become_invalid_argument_without_details() {
        let mut h = headers(
            13,
            "failed to decode Protobuf message: buffer underflow",
            false,
        );
        rewrite(&mut h);
        assert_eq!(h[&GRPC_STATUS], "3");
        assert!(!h[&GRPC_MESSAGE].to_str().unwrap().contains("Protobuf"));
    }

    #[test]
    fn size_limit_is_resource_exhausted() {
        let mut h = headers(
            11,
            "Error, decoded message length too large: found 9",
            false,
        );
        rewrite(&mut h);
        assert_eq!(h[&GRPC_STATUS], "8");
    }

    #[test]
    fn compressed_flag_stays_internal() {
        let mut h = headers(13, "protocol error: received message with compressed-flag but no grpc-encoding was specified", false);
        rewrite(&mut h);
        assert_eq!(h[&GRPC_STATUS], "13");
    }

    #[test]
    fn service_statuses_are_left_alone() {
        let mut h = headers(13, "internal error", true);
        rewrite(&mut h);
        assert_eq!(h[&GRPC_STATUS], "13");
        assert_eq!(h[&GRPC_MESSAGE], "internal error");
        let mut ok = HeaderMap::new();
        rewrite(&mut ok);
        assert!(ok.is_empty());
    }
}
