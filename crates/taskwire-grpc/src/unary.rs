//! The unary RPCs without tonic's server machinery: the request body read whole,
//! one uncompressed message decoded, the same [`A2aServiceRpc`] method called,
//! the answer framed with its `grpc-status` trailer. Anything else (streaming
//! RPCs, compression, a body that is not exactly one well-formed message) goes to
//! tonic's generated server, which also produces the errors for such requests,
//! so the two paths answer alike (the tests compare them).
//!
//! Why: tonic's per-call work (its request and response streams, codec
//! buffers, boxed bodies) cost more than the A2A handler itself for GetTask
//! (callgrind, ~7k instructions per call).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use axum::http::{Request, Response};
use bytes::{BufMut, Bytes, BytesMut};
use http_body::Frame;
use http_body_util::BodyExt;
use prost::Message;
use tonic::metadata::MetadataMap;
use tonic::Status;
use tower::{Service, ServiceExt};

use crate::{A2aServiceRpc, A2aServiceServer, GrpcService, RPC_PREFIX};

/// The largest request message decoded here (tonic's default limit; larger ones
/// go to tonic, which refuses them with its own status).
const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// Parsed once, not per request (a `&str` key is parsed on every lookup).
const GRPC_ENCODING: axum::http::HeaderName = axum::http::HeaderName::from_static("grpc-encoding");

type Answer = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

/// The gRPC service as mounted: unary RPCs here, the rest through tonic.
#[derive(Clone, Debug)]
pub struct GrpcRoute {
    service: GrpcService,
    server: A2aServiceServer<GrpcService>,
}

impl GrpcRoute {
    pub(crate) fn new(service: GrpcService) -> Self {
        Self {
            server: A2aServiceServer::new(service.clone()),
            service,
        }
    }
}

impl Service<Request<Body>> for GrpcRoute {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Answer {
        let method = req
            .uri()
            .path()
            .strip_prefix(RPC_PREFIX)
            .and_then(Unary::of);
        let compressed = req
            .headers()
            .get(&GRPC_ENCODING)
            .is_some_and(|v| v.as_bytes() != b"identity");
        let server = self.server.clone();
        let (Some(method), false) = (method, compressed) else {
            return Box::pin(tonic_answer(server, req));
        };
        let service = self.service.clone();
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let bytes = match body.collect().await {
                Ok(c) => c.to_bytes(),
                Err(e) => return Ok(Status::from_error(e.into()).into_http()),
            };
            let Some(message) = single_message(&bytes) else {
                let req = Request::from_parts(parts, Body::from(bytes));
                return tonic_answer(server, req).await;
            };
            match method.call(&service, parts, message) {
                Ok(fut) => Ok(fut.await),
                Err(parts) => {
                    let req = Request::from_parts(*parts, Body::from(bytes));
                    tonic_answer(server, req).await
                }
            }
        })
    }
}

async fn tonic_answer(
    server: A2aServiceServer<GrpcService>,
    req: Request<Body>,
) -> Result<Response<Body>, Infallible> {
    match server.oneshot(req).await {
        Ok(res) => Ok(res.map(Body::new)),
        Err(never) => match never {},
    }
}

/// The message of a body that is exactly one uncompressed gRPC message within
/// the size limit.
fn single_message(body: &Bytes) -> Option<Bytes> {
    let (&flag, rest) = body.split_first()?;
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    (flag == 0 && len <= MAX_MESSAGE && body.len() == 5 + len).then(|| body.slice(5..))
}

type Called = Pin<Box<dyn Future<Output = Response<Body>> + Send>>;

/// Decodes `message` as `Req` and calls `f` with it, or gives the head back
/// when it does not decode (tonic then answers, with its decode error).
fn call<Req, Resp, F, Fut>(
    service: &GrpcService,
    parts: axum::http::request::Parts,
    message: Bytes,
    f: F,
) -> Result<Called, Box<axum::http::request::Parts>>
where
    Req: Message + Default + Send + 'static,
    Resp: Message + 'static,
    F: FnOnce(GrpcService, tonic::Request<Req>) -> Fut,
    Fut: Future<Output = Result<tonic::Response<Resp>, Status>> + Send + 'static,
{
    let Ok(message) = Req::decode(message) else {
        return Err(Box::new(parts));
    };
    let req = tonic::Request::from_parts(
        MetadataMap::from_headers(parts.headers),
        parts.extensions,
        message,
    );
    let fut = f(service.clone(), req);
    Ok(Box::pin(async move {
        match fut.await {
            Ok(res) => respond(res),
            Err(status) => status.into_http(),
        }
    }))
}

/// A successful call: the message, then `grpc-status: 0`, as tonic frames it.
fn respond<M: Message>(res: tonic::Response<M>) -> Response<Body> {
    let (metadata, message, _) = res.into_parts();
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(5 + len);
    buf.put_u8(0);
    buf.put_u32(len as u32);
    // Cannot fail: the buffer has the room.
    let _ = message.encode(&mut buf);
    let mut trailers = HeaderMap::with_capacity(1);
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let mut out = Response::new(Body::new(UnaryBody {
        data: Some(buf.freeze()),
        trailers: Some(trailers),
    }));
    *out.headers_mut() = metadata.into_headers();
    out.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    out
}

/// One data frame, then the trailers.
struct UnaryBody {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl http_body::Body for UnaryBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(d) = self.data.take() {
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }
}

/// The unary RPCs of `lf.a2a.v1.A2AService`.
#[derive(Clone, Copy, Debug)]
enum Unary {
    SendMessage,
    GetTask,
    ListTasks,
    CancelTask,
    CreatePushConfig,
    GetPushConfig,
    ListPushConfigs,
    DeletePushConfig,
    GetExtendedAgentCard,
}

impl Unary {
    fn of(method: &str) -> Option<Self> {
        Some(match method {
            "SendMessage" => Self::SendMessage,
            "GetTask" => Self::GetTask,
            "ListTasks" => Self::ListTasks,
            "CancelTask" => Self::CancelTask,
            "CreateTaskPushNotificationConfig" => Self::CreatePushConfig,
            "GetTaskPushNotificationConfig" => Self::GetPushConfig,
            "ListTaskPushNotificationConfigs" => Self::ListPushConfigs,
            "DeleteTaskPushNotificationConfig" => Self::DeletePushConfig,
            "GetExtendedAgentCard" => Self::GetExtendedAgentCard,
            _ => return None,
        })
    }

    fn call(
        self,
        s: &GrpcService,
        parts: axum::http::request::Parts,
        m: Bytes,
    ) -> Result<Called, Box<axum::http::request::Parts>> {
        match self {
            Self::SendMessage => call(s, parts, m, |s, r| async move { s.send_message(r).await }),
            Self::GetTask => call(s, parts, m, |s, r| async move { s.get_task(r).await }),
            Self::ListTasks => call(s, parts, m, |s, r| async move { s.list_tasks(r).await }),
            Self::CancelTask => call(s, parts, m, |s, r| async move { s.cancel_task(r).await }),
            Self::CreatePushConfig => call(s, parts, m, |s, r| async move {
                s.create_task_push_notification_config(r).await
            }),
            Self::GetPushConfig => call(s, parts, m, |s, r| async move {
                s.get_task_push_notification_config(r).await
            }),
            Self::ListPushConfigs => call(s, parts, m, |s, r| async move {
                s.list_task_push_notification_configs(r).await
            }),
            Self::DeletePushConfig => call(s, parts, m, |s, r| async move {
                s.delete_task_push_notification_config(r).await
            }),
            Self::GetExtendedAgentCard => call(s, parts, m, |s, r| async move {
                s.get_extended_agent_card(r).await
            }),
        }
    }
}
