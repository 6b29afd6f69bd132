//! A2A 1.0 over gRPC (`lf.a2a.v1.A2AService`, h2c), with tonic.
//!
//! The same operations as [`crate::a2a::A2aClient`], on the same [`pb`] types.
//! Every call carries `a2a-version: 1.0` and, when configured, `authorization:
//! Bearer …` metadata. Statuses become [`ClientError::Rpc`] with the A2A code
//! of the `google.rpc.ErrorInfo` reason in `grpc-status-details-bin` (or of
//! the status code when there is none), and the gRPC code in `grpc_code`.
//! Streams reconnect like the JSON-RPC ones (gRPC frames carry no event ids:
//! a resubscription starts from a fresh snapshot).

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use prost::Message as _;
use serde_json::Value;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};

use crate::a2a::{code, pb, to_json, BINDING_GRPC};
use crate::a2a_stream::{A2aStream, FrameStream, RawJson, StreamKind, StreamSource};
use crate::config::{ClientConfig, Exchange, Received};
use crate::error::{ClientError, RpcError};

/// The metadata key of the protocol version.
pub const VERSION_METADATA: &str = "a2a-version";
/// The metadata key of the resume cursor (taskwire extension).
pub const LAST_EVENT_ID_METADATA: &str = "last-event-id";

use taskwire_wire::a2a::grpc::{ErrorInfo, RpcStatus};

/// Maps a gRPC status into the crate's error: A2A errors (by `ErrorInfo`
/// reason, else by status code) are [`ClientError::Rpc`].
pub fn status_error(status: &tonic::Status) -> ClientError {
    let mut reason = None;
    let mut data = Vec::new();
    if !status.details().is_empty() {
        if let Ok(s) = RpcStatus::decode(status.details()) {
            for d in &s.details {
                if d.type_url.ends_with("google.rpc.ErrorInfo") {
                    if let Ok(info) = ErrorInfo::decode(d.value.as_ref()) {
                        data.push(serde_json::json!({
                            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": info.reason,
                            "domain": info.domain,
                            "metadata": info.metadata,
                        }));
                        reason.get_or_insert(info.reason);
                    }
                }
            }
        }
    }
    let grpc = status.code();
    let by_code = match grpc {
        tonic::Code::NotFound => Some(code::TASK_NOT_FOUND),
        tonic::Code::InvalidArgument => Some(code::INVALID_PARAMS),
        tonic::Code::Unimplemented => Some(code::METHOD_NOT_FOUND),
        tonic::Code::Internal => Some(code::INTERNAL),
        _ => None,
    };
    let a2a = reason.as_deref().and_then(code::of_reason).or(by_code);
    match a2a {
        Some(c) => ClientError::Rpc(RpcError {
            code: c,
            message: status.message().to_string(),
            data: (!data.is_empty()).then_some(Value::Array(data)),
            reason,
            http_status: None,
            grpc_code: Some(grpc as i32),
        }),
        None => match grpc {
            tonic::Code::DeadlineExceeded => ClientError::Timeout(status.message().to_string()),
            tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
                if status.message().contains("transport")
                    || status.message().contains("connection") =>
            {
                ClientError::Transport(status.message().to_string())
            }
            _ => ClientError::Grpc {
                code: grpc as i32,
                message: status.message().to_string(),
            },
        },
    }
}

type Stub = pb::a2a_service_client::A2aServiceClient<Channel>;

/// A received message as ProtoJSON (the wire layer's well-known types write
/// timestamps in the canonical `Z` form themselves).
fn proto_json<T: serde::Serialize>(v: &T) -> Result<Value, ClientError> {
    to_json(v)
}

/// The A2A gRPC client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct A2aGrpcClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    channel: Channel,
    target: String,
}

impl A2aGrpcClient {
    /// A client for the gRPC service at the config's base url (`http://`:
    /// h2c; `https://`: TLS, trusting the built-in and system roots and the
    /// config's root certificates). The connection is made lazily, on the
    /// first call.
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        let target = config.base_url.clone();
        Self::with_target(config, &target)
    }

    /// A client for `target`: `http://host:port`, or `host:port` as a card's
    /// GRPC interface lists it.
    pub fn with_target(config: ClientConfig, target: &str) -> Result<Self, ClientError> {
        let target = if target.contains("://") {
            target.to_string()
        } else {
            format!("http://{target}")
        };
        let mut endpoint = Endpoint::from_shared(target.clone())
            .map_err(|e| ClientError::Config(format!("gRPC target {target}: {e}")))?
            .connect_timeout(config.connect_timeout);
        if target.starts_with("https://") {
            let mut tls = tonic::transport::ClientTlsConfig::new()
                .with_webpki_roots()
                .with_native_roots();
            for pem in &config.root_certificates_pem {
                tls = tls.ca_certificate(tonic::transport::Certificate::from_pem(pem));
            }
            if let Some(id) = &config.client_identity {
                tls = tls.identity(tonic::transport::Identity::from_pem(
                    &id.certificate_chain,
                    &id.private_key,
                ));
            }
            endpoint = endpoint
                .tls_config(tls)
                .map_err(|e| ClientError::Config(format!("gRPC target {target}: TLS: {e}")))?;
        }
        let channel = endpoint.connect_lazy();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                channel,
                target,
            }),
        })
    }

    /// A client for the GRPC interface of an agent card (`None` if the card
    /// lists none).
    pub fn from_card(
        config: ClientConfig,
        card: &pb::AgentCard,
    ) -> Result<Option<Self>, ClientError> {
        match crate::a2a::interface_url(card, BINDING_GRPC) {
            Some(u) => Self::with_target(config, &u).map(Some),
            None => Ok(None),
        }
    }

    /// The config.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The target url.
    pub fn target(&self) -> &str {
        &self.inner.target
    }

    fn stub(&self) -> Stub {
        Stub::new(self.inner.channel.clone())
    }

    fn request<T>(
        &self,
        msg: T,
        last_event_id: Option<&str>,
    ) -> Result<tonic::Request<T>, ClientError> {
        let mut req = tonic::Request::new(msg);
        req.set_timeout(self.inner.config.request_timeout);
        let md = req.metadata_mut();
        md.insert(
            VERSION_METADATA,
            MetadataValue::from_static(crate::a2a::A2A_VERSION),
        );
        if let Some(t) = &self.inner.config.bearer_token {
            let v: MetadataValue<_> = format!("Bearer {t}")
                .parse()
                .map_err(|e| ClientError::Config(format!("bearer token as metadata: {e}")))?;
            md.insert("authorization", v);
        }
        if let Some(id) = last_event_id {
            let v: MetadataValue<_> = id
                .parse()
                .map_err(|e| ClientError::Config(format!("last event id as metadata: {e}")))?;
            md.insert(LAST_EVENT_ID_METADATA, v);
        }
        Ok(req)
    }

    fn done<Req: serde::Serialize, T: serde::Serialize>(
        &self,
        op: &str,
        req: &Req,
        res: Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<Received<T>, ClientError> {
        let reqj = to_json(req).unwrap_or(Value::Null);
        match res {
            Ok(r) => {
                let value = r.into_inner();
                let raw = proto_json(&value)?;
                self.inner.config.observe(|| Exchange {
                    protocol: "grpc",
                    operation: op.to_string(),
                    request: reqj,
                    status: None,
                    response: raw.clone(),
                });
                Ok(Received { value, raw })
            }
            Err(s) => {
                let e = status_error(&s);
                self.inner.config.observe(|| Exchange {
                    protocol: "grpc",
                    operation: op.to_string(),
                    request: reqj,
                    status: None,
                    response: serde_json::json!({"grpcStatus": s.code() as i32, "message": s.message()}),
                });
                Err(e)
            }
        }
    }

    /// `SendMessage`.
    pub async fn send_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<Received<pb::SendMessageResponse>, ClientError> {
        let res = self
            .stub()
            .send_message(self.request(req.clone(), None)?)
            .await;
        self.done("SendMessage", &req, res)
    }

    /// `SendStreamingMessage`: a reconnecting stream of events.
    pub async fn send_streaming_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<A2aStream, ClientError> {
        self.stream(StreamKind::Send(Box::new(req)), None).await
    }

    /// `SubscribeToTask`.
    pub async fn subscribe_to_task(&self, id: &str) -> Result<A2aStream, ClientError> {
        self.stream(StreamKind::Subscribe(id.to_string()), None)
            .await
    }

    /// `SubscribeToTask` with `last-event-id` metadata (a taskwire extension:
    /// gRPC frames carry no ids, so the cursor comes from elsewhere, e.g. a
    /// JSON-RPC stream of the same task).
    pub async fn resubscribe(
        &self,
        id: &str,
        last_event_id: Option<&str>,
    ) -> Result<A2aStream, ClientError> {
        self.stream(
            StreamKind::Subscribe(id.to_string()),
            last_event_id.map(str::to_string),
        )
        .await
    }

    /// `GetTask`.
    pub async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Received<pb::Task>, ClientError> {
        let req = pb::GetTaskRequest {
            id: id.to_string(),
            history_length,
            ..Default::default()
        };
        let res = self.stub().get_task(self.request(req.clone(), None)?).await;
        self.done("GetTask", &req, res)
    }

    /// `ListTasks`.
    pub async fn list_tasks(
        &self,
        req: pb::ListTasksRequest,
    ) -> Result<Received<pb::ListTasksResponse>, ClientError> {
        let res = self
            .stub()
            .list_tasks(self.request(req.clone(), None)?)
            .await;
        self.done("ListTasks", &req, res)
    }

    /// `CancelTask`.
    pub async fn cancel_task(&self, id: &str) -> Result<Received<pb::Task>, ClientError> {
        let req = pb::CancelTaskRequest {
            id: id.to_string(),
            ..Default::default()
        };
        let res = self
            .stub()
            .cancel_task(self.request(req.clone(), None)?)
            .await;
        self.done("CancelTask", &req, res)
    }

    /// `CreateTaskPushNotificationConfig`.
    pub async fn create_push_config(
        &self,
        config: pb::TaskPushNotificationConfig,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
        let res = self
            .stub()
            .create_task_push_notification_config(self.request(config.clone(), None)?)
            .await;
        self.done("CreateTaskPushNotificationConfig", &config, res)
    }

    /// `GetTaskPushNotificationConfig`.
    pub async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
        let req = pb::GetTaskPushNotificationConfigRequest {
            task_id: task_id.to_string(),
            id: id.to_string(),
            ..Default::default()
        };
        let res = self
            .stub()
            .get_task_push_notification_config(self.request(req.clone(), None)?)
            .await;
        self.done("GetTaskPushNotificationConfig", &req, res)
    }

    /// `ListTaskPushNotificationConfigs`.
    pub async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Received<pb::ListTaskPushNotificationConfigsResponse>, ClientError> {
        let req = pb::ListTaskPushNotificationConfigsRequest {
            task_id: task_id.to_string(),
            ..Default::default()
        };
        let res = self
            .stub()
            .list_task_push_notification_configs(self.request(req.clone(), None)?)
            .await;
        self.done("ListTaskPushNotificationConfigs", &req, res)
    }

    /// `DeleteTaskPushNotificationConfig`.
    pub async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), ClientError> {
        let req = pb::DeleteTaskPushNotificationConfigRequest {
            task_id: task_id.to_string(),
            id: id.to_string(),
            ..Default::default()
        };
        let res = self
            .stub()
            .delete_task_push_notification_config(self.request(req.clone(), None)?)
            .await;
        self.done("DeleteTaskPushNotificationConfig", &req, res)
            .map(|_| ())
    }

    /// `GetExtendedAgentCard`.
    pub async fn extended_agent_card(&self) -> Result<Received<pb::AgentCard>, ClientError> {
        let req = pb::GetExtendedAgentCardRequest::default();
        let res = self
            .stub()
            .get_extended_agent_card(self.request(req.clone(), None)?)
            .await;
        self.done("GetExtendedAgentCard", &req, res)
    }

    async fn stream(
        &self,
        kind: StreamKind,
        last_event_id: Option<String>,
    ) -> Result<A2aStream, ClientError> {
        let c = &self.inner.config;
        A2aStream::start(
            Arc::new(self.clone()),
            kind,
            last_event_id,
            c.backoff.clone(),
            c.poll_interval,
        )
        .await
    }

    async fn open_stream(
        self,
        kind: StreamKind,
        last_event_id: Option<String>,
    ) -> Result<FrameStream, ClientError> {
        let mut stub = self.stub();
        let (op, res) = match kind {
            StreamKind::Send(req) => {
                let mut r = self.request(*req, last_event_id.as_deref())?;
                // The whole stream may take longer than one request.
                r.metadata_mut().remove("grpc-timeout");
                ("SendStreamingMessage", stub.send_streaming_message(r).await)
            }
            StreamKind::Subscribe(id) => {
                let mut r = self.request(
                    pb::SubscribeToTaskRequest {
                        id,
                        ..Default::default()
                    },
                    last_event_id.as_deref(),
                )?;
                r.metadata_mut().remove("grpc-timeout");
                ("SubscribeToTask", stub.subscribe_to_task(r).await)
            }
        };
        let stream = res.map_err(|s| status_error(&s))?.into_inner();
        let observer = self.inner.config.observer.clone();
        let frames = stream.map_err(|s| status_error(&s)).and_then(move |resp| {
            let seen = match &observer {
                Some(o) => proto_json(&resp).map(|raw| {
                    o(&Exchange {
                        protocol: "grpc",
                        operation: format!("{op} (event)"),
                        request: Value::Null,
                        status: None,
                        response: raw,
                    })
                }),
                None => Ok(()),
            };
            futures::future::ready(seen.map(|()| (None, resp, RawJson::of_response())))
        });
        let frames = frames.boxed();
        Ok(match self.inner.config.stream_idle_timeout {
            Some(limit) => crate::http::with_idle_timeout(frames, limit),
            None => frames,
        })
    }
}

impl StreamSource for A2aGrpcClient {
    fn open(
        &self,
        kind: StreamKind,
        last_event_id: Option<String>,
    ) -> BoxFuture<'static, Result<FrameStream, ClientError>> {
        self.clone().open_stream(kind, last_event_id).boxed()
    }

    fn get_task(&self, id: String) -> BoxFuture<'static, Result<(pb::Task, Value), ClientError>> {
        let me = self.clone();
        async move {
            let t = A2aGrpcClient::get_task(&me, &id, None).await?;
            Ok((t.value, t.raw))
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_with_error_info_maps_to_a2a_code() {
        let info = ErrorInfo {
            reason: "TASK_NOT_CANCELABLE".into(),
            domain: "a2a-protocol.org".into(),
            metadata: Default::default(),
        };
        let st = RpcStatus {
            code: tonic::Code::FailedPrecondition as i32,
            message: "no".into(),
            details: vec![taskwire_wire::wkt::Any {
                type_url: "type.googleapis.com/google.rpc.ErrorInfo".into(),
                value: info.encode_to_vec().into(),
            }],
        };
        let s = tonic::Status::with_details(
            tonic::Code::FailedPrecondition,
            "no",
            st.encode_to_vec().into(),
        );
        let e = status_error(&s);
        let rpc = e.rpc().expect("rpc error");
        assert_eq!(rpc.code, code::TASK_NOT_CANCELABLE);
        assert_eq!(rpc.reason.as_deref(), Some("TASK_NOT_CANCELABLE"));
        assert_eq!(rpc.grpc_code, Some(tonic::Code::FailedPrecondition as i32));
    }

    #[test]
    fn grpc_json_timestamps_end_in_z() {
        let t = pb::TaskStatus {
            state: pb::TaskState::Working as i32,
            timestamp: Some(taskwire_wire::wkt::Timestamp {
                seconds: 1_700_000_000,
                nanos: 5_000_000,
            }),
            ..Default::default()
        };
        let j = proto_json(&t).expect("json");
        let ts = j["timestamp"].as_str().expect("timestamp");
        assert!(
            ts.ends_with('Z') && ts.starts_with("2023-11-14T22:13:20"),
            "{ts}"
        );
    }

    #[test]
    fn bare_statuses_map_by_code() {
        let e = status_error(&tonic::Status::not_found("x"));
        assert_eq!(e.rpc_code(), Some(code::TASK_NOT_FOUND));
        let e = status_error(&tonic::Status::permission_denied("x"));
        assert!(matches!(e, ClientError::Grpc { .. }), "{e:?}");
        // Garbage details do not panic.
        let s = tonic::Status::with_details(
            tonic::Code::Aborted,
            "x",
            bytes::Bytes::from_static(b"\xff\xff"),
        );
        assert!(matches!(status_error(&s), ClientError::Grpc { .. }));
    }
}
