//! The A2A 1.0 gRPC binding: `lf.a2a.v1.A2AService` over the shared A2A service
//! layer of `taskwire-a2a` (no logic of its own: decode, call, encode). Errors are
//! gRPC statuses per the A2A 1.0.1 mapping, with a `google.rpc.Status` carrying a
//! `google.rpc.ErrorInfo` in the `grpc-status-details-bin` trailer.
//!
//! ```
//! use std::sync::Arc;
//! use taskwire_a2a::{pb, A2aAdapter, A2aConfig};
//! use taskwire_core::{Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService};
//! use taskwire_grpc::{A2aServiceClient, GrpcAdapter};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
//! let agent = Arc::new(ScriptedAgent::new());
//! let _runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
//! let a2a = A2aAdapter::new(service, agent, A2aConfig::default());
//! // The caller is put in by the server's auth layer; here, one local caller.
//! let routes = GrpcAdapter::new(a2a.service().clone()).routes().layer(
//!     axum::middleware::from_fn(|mut req: axum::extract::Request, next: axum::middleware::Next| {
//!         req.extensions_mut().insert(Caller::local());
//!         next.run(req)
//!     }),
//! );
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("http://{}", listener.local_addr()?);
//! tokio::spawn(async move { axum::serve(listener, routes).await });
//!
//! let channel = tonic::transport::Channel::from_shared(url)?.connect().await?;
//! let mut client = A2aServiceClient::new(channel);
//! let text = pb::Part { content: Some(pb::part::Content::Text("hello".into())), ..Default::default() };
//! let message = pb::Message { message_id: "m1".into(), role: pb::Role::User as i32,
//!     parts: vec![text], ..Default::default() };
//! let mut request = tonic::Request::new(pb::SendMessageRequest { message: Some(message),
//!     ..Default::default() });
//! request.metadata_mut().insert("a2a-version", "1.0".parse()?);
//! let reply = client.send_message(request).await?.into_inner();
//! let Some(pb::send_message_response::Payload::Task(task)) = reply.payload else {
//!     panic!("not a task")
//! };
//! assert_eq!(task.status.unwrap().state(), pb::TaskState::Completed);
//! # Ok(())
//! # }
//! ```
//!
//! [`GrpcAdapter::routes`] is an `axum::Router` serving
//! `/lf.a2a.v1.A2AService/*` through tonic's generated server, so the server
//! mounts it beside the JSON-RPC routes on the same listener (h2c). Statuses that
//! tonic produces itself for malformed requests are given the binding's shape
//! (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, no decoder details): see [`GrpcRoute`].

use std::collections::HashMap;
use std::pin::Pin;

use axum::Router;
use futures::{Stream, StreamExt};
use prost::Message as _;
use taskwire_a2a::service::{negotiate, A2aService, Requested};
use taskwire_a2a::{pb, A2aError};
use taskwire_core::Caller;
use taskwire_vocab::a2a::ERROR_INFO_TYPE;
use taskwire_wire::a2a::errors::{error_metadata, RETRY_AFTER_SECS, RETRY_INFO_TYPE};
use taskwire_wire::a2a::grpc::{ProtoDuration, RetryInfo};
use tonic::{Request, Response, Status};

mod edge;
pub use edge::{Answer, GrpcRoute};
/// The generated stubs and status messages of the wire layer.
pub use taskwire_wire::a2a::grpc::{
    A2aServiceClient, A2aServiceRpc, A2aServiceServer, EncodedTask, EncodedTaskCodec, ErrorInfo,
    RpcStatus,
};

/// The gRPC path prefix of the service.
pub const SERVICE_PATH: &str = taskwire_wire::a2a::grpc::SERVICE_PATH;
/// The path pattern [`GrpcAdapter::routes`] mounts the service at (also the route
/// label of its requests in the server's metrics).
pub const ROUTE_PATTERN: &str = "/lf.a2a.v1.A2AService/{*rest}";
/// The prefix of every RPC's path (`/lf.a2a.v1.A2AService/GetTask`, …).
pub const RPC_PREFIX: &str = "/lf.a2a.v1.A2AService/";
/// The service's methods (`proto/a2a.proto`). [`GrpcAdapter::routes`] mounts each
/// at its exact path, which the router matches without capturing a path
/// parameter (a request extension fewer per call); other paths under
/// [`RPC_PREFIX`] reach tonic through [`ROUTE_PATTERN`] and are UNIMPLEMENTED.
pub const RPC_METHODS: [&str; 11] = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "GetExtendedAgentCard",
    "DeleteTaskPushNotificationConfig",
];
/// The metadata key of the requested protocol version.
pub const VERSION_METADATA: &str = "a2a-version";

/// The gRPC status of an A2A error, with its ErrorInfo in the status details.
pub fn status_of(e: &A2aError) -> Status {
    let kind = e.kind();
    let code = tonic::Code::from_i32(kind.grpc_code() as i32);
    let info = ErrorInfo {
        reason: kind.reason().to_string(),
        domain: kind.domain().to_string(),
        metadata: error_metadata(kind).into_iter().collect::<HashMap<_, _>>(),
    };
    let mut any = vec![taskwire_wire::wkt::Any {
        type_url: ERROR_INFO_TYPE.to_string(),
        value: info.encode_to_vec().into(),
    }];
    if kind.retryable() {
        // UNAVAILABLE is what gRPC clients retry on; RetryInfo says when.
        let retry = RetryInfo {
            retry_delay: Some(ProtoDuration {
                seconds: i64::try_from(RETRY_AFTER_SECS).unwrap_or(1),
                nanos: 0,
            }),
        };
        any.push(taskwire_wire::wkt::Any {
            type_url: RETRY_INFO_TYPE.to_string(),
            value: retry.encode_to_vec().into(),
        });
    }
    let details = RpcStatus {
        code: code as i32,
        message: e.message().to_string(),
        details: any,
    };
    Status::with_details(code, e.message(), details.encode_to_vec().into())
}

/// The gRPC implementation over the shared A2A service.
#[derive(Clone, Debug)]
pub struct GrpcService {
    a2a: A2aService,
}

fn prelude<T>(req: &Request<T>) -> Result<Caller, Status> {
    prelude_v(req).map(|(c, _)| c)
}

/// The caller and the requested version (`a2a-version` metadata; absent is
/// served as 1.0: the `lf.a2a.v1` service has no 0.3 reading).
fn prelude_v<T>(req: &Request<T>) -> Result<(Caller, Requested), Status> {
    let version = req
        .metadata()
        .get(VERSION_METADATA)
        .and_then(|v| v.to_str().ok());
    let v = negotiate(version).map_err(|e| status_of(&e))?;
    let caller = req
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| Status::unauthenticated("no authenticated caller"))?;
    Ok((caller, v))
}

type FrameStream = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

fn frames(s: taskwire_a2a::service::FrameStream) -> FrameStream {
    Box::pin(s.map(|r| r.map(|(_, f)| f).map_err(|e| status_of(&e))))
}

fn last_event_id<T>(req: &Request<T>) -> Option<u64> {
    req.metadata()
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
}

#[tonic::async_trait]
impl A2aServiceRpc for GrpcService {
    async fn send_message(
        &self,
        req: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        let (caller, v) = prelude_v(&req)?;
        self.a2a
            .send_message(&caller, v, req.into_inner())
            .await
            .map(Response::new)
            .map_err(|e| status_of(&e))
    }

    type SendStreamingMessageStream = FrameStream;

    async fn send_streaming_message(
        &self,
        req: Request<pb::SendMessageRequest>,
    ) -> Result<Response<Self::SendStreamingMessageStream>, Status> {
        let (caller, v) = prelude_v(&req)?;
        let after = last_event_id(&req);
        self.a2a
            .send_streaming_message(&caller, v, req.into_inner(), after)
            .await
            .map(|s| Response::new(frames(s)))
            .map_err(|e| status_of(&e))
    }

    async fn get_task(
        &self,
        req: Request<pb::GetTaskRequest>,
    ) -> Result<Response<EncodedTask>, Status> {
        let (caller, v) = prelude_v(&req)?;
        self.a2a
            .get_task_proto(&caller, v, req.into_inner())
            .await
            .map(|bytes| Response::new(EncodedTask(bytes)))
            .map_err(|e| status_of(&e))
    }

    async fn list_tasks(
        &self,
        req: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        let (caller, v) = prelude_v(&req)?;
        self.a2a
            .list_tasks(&caller, v, req.into_inner())
            .await
            .map(Response::new)
            .map_err(|e| status_of(&e))
    }

    async fn cancel_task(
        &self,
        req: Request<pb::CancelTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        let (caller, v) = prelude_v(&req)?;
        self.a2a
            .cancel_task(&caller, v, req.into_inner())
            .await
            .map(Response::new)
            .map_err(|e| status_of(&e))
    }

    type SubscribeToTaskStream = FrameStream;

    async fn subscribe_to_task(
        &self,
        req: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<Self::SubscribeToTaskStream>, Status> {
        let (caller, v) = prelude_v(&req)?;
        let after = last_event_id(&req);
        self.a2a
            .subscribe_to_task(&caller, v, req.into_inner(), after)
            .await
            .map(|s| Response::new(frames(s)))
            .map_err(|e| status_of(&e))
    }

    async fn create_task_push_notification_config(
        &self,
        req: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let caller = prelude(&req)?;
        self.a2a
            .create_push_config(&caller, req.into_inner())
            .await
            .map(Response::new)
            .map_err(|e| status_of(&e))
    }

    async fn get_task_push_notification_config(
        &self,
        req: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let caller = prelude(&req)?;
        self.a2a
            .get_push_config(&caller, req.into_inner())
            .await
            .map(Response::new)
            .map_err(|e| status_of(&e))
    }

    async fn list_task_push_notification_configs(
        &self,
        req: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        let caller = prelude(&req)?;
        self.a2a
            .list_push_configs(&caller, req.into_inner())
            .await
            .map(Response::new)
            .map_err(|e| status_of(&e))
    }

    async fn get_extended_agent_card(
        &self,
        req: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        let caller = prelude(&req)?;
        self.a2a
            .extended_agent_card(&caller)
            .map(Response::new)
            .map_err(|e| status_of(&e))
    }

    async fn delete_task_push_notification_config(
        &self,
        req: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<taskwire_wire::wkt::Empty>, Status> {
        let caller = prelude(&req)?;
        self.a2a
            .delete_push_config(&caller, req.into_inner())
            .await
            .map(|()| Response::new(taskwire_wire::wkt::Empty {}))
            .map_err(|e| status_of(&e))
    }
}

/// The gRPC adapter: mount [`GrpcAdapter::routes`] behind the auth layer, beside
/// the JSON-RPC routes of `taskwire_a2a::A2aAdapter`.
#[derive(Clone, Debug)]
pub struct GrpcAdapter {
    service: GrpcService,
}

impl GrpcAdapter {
    /// The adapter over the shared A2A service (`A2aAdapter::service()`).
    pub fn new(a2a: A2aService) -> Self {
        Self {
            service: GrpcService { a2a },
        }
    }

    /// `/lf.a2a.v1.A2AService/{method}` as an axum router (no fallback of its own):
    /// each of [`RPC_METHODS`] at its exact path, any other method name through
    /// [`ROUTE_PATTERN`] (tonic answers it UNIMPLEMENTED).
    pub fn routes(&self) -> Router {
        let route = self.route();
        RPC_METHODS
            .iter()
            .fold(Router::new(), |r, m| {
                r.route_service(&format!("{RPC_PREFIX}{m}"), route.clone())
            })
            .route_service(ROUTE_PATTERN, route)
    }

    /// The service that [`GrpcAdapter::routes`] mounts, for a server that routes
    /// `/lf.a2a.v1.A2AService/*` itself (it reads the caller from the request's
    /// `taskwire_core::Caller` extension): [`GrpcAdapter::server`] with its own
    /// error statuses in the binding's shape.
    pub fn route(&self) -> GrpcRoute {
        GrpcRoute::new(self.server())
    }

    /// tonic's generated server over the same service, accepting request
    /// messages up to the A2A service's body limit (`max_body_bytes`).
    pub fn server(&self) -> A2aServiceServer<GrpcService> {
        let limit = self.service.a2a.config().max_body_bytes;
        A2aServiceServer::new(self.service.clone())
            .max_decoding_message_size(limit)
            .max_encoding_message_size(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that did not answer is UNAVAILABLE (what gRPC clients retry),
    /// with the ErrorInfo and a RetryInfo in the status details.
    #[test]
    fn an_unavailable_store_is_unavailable_with_retry_info() {
        let e = A2aError::from(taskwire_core::CoreError::Unavailable("dsn".into()));
        let status = status_of(&e);
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert!(!status.message().contains("dsn"));
        let details = RpcStatus::decode(status.details()).unwrap();
        assert_eq!(details.code, tonic::Code::Unavailable as i32);
        assert_eq!(details.details.len(), 2);
        let info = ErrorInfo::decode(details.details[0].value.as_ref()).unwrap();
        assert_eq!(
            (info.reason.as_str(), info.domain.as_str()),
            ("UNAVAILABLE", "taskwire")
        );
        assert_eq!(info.metadata["retrySafeWith"], "messageId");
        assert_eq!(details.details[1].type_url, RETRY_INFO_TYPE);
        let retry = RetryInfo::decode(details.details[1].value.as_ref()).unwrap();
        assert_eq!(retry.retry_delay.map(|d| d.seconds), Some(1));
        // An internal error stays INTERNAL, with no RetryInfo.
        let status = status_of(&A2aError::internal("x"));
        assert_eq!(status.code(), tonic::Code::Internal);
        assert_eq!(
            RpcStatus::decode(status.details()).unwrap().details.len(),
            1
        );
    }
}
