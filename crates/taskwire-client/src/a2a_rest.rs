//! A2A 1.0 over HTTP+JSON (the REST binding, A2A §11): `POST {url}/message:send`,
//! `GET {url}/tasks/{id}` and so on below the card's `HTTP+JSON` interface url
//! (`{base}/a2a/rest` on taskwire), with SSE streams.
//!
//! Bodies and answers are ProtoJSON of the [`pb`] messages, sent as
//! `application/a2a+json` with `A2A-Version: 1.0`; GET parameters go in the
//! query in camelCase. Errors are the binding's `google.rpc.Status` object
//! (`{"error": {"code", "status", "message", "details"}}`), read into
//! [`ClientError::Rpc`] with the JSON-RPC code of its `ErrorInfo` reason and the
//! HTTP status; a failure without a known reason is [`ClientError::Http`].
//! Streams are the same reconnecting [`A2aStream`] as on JSON-RPC
//! (`Last-Event-ID`, then polling `GetTask`).

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::a2a::{
    code, interface_url, parse, pb, to_json, A2aStream, A2A_VERSION, AGENT_CARD_PATH,
    VERSION_HEADER,
};
use crate::a2a_stream::{FrameStream, RawJson, StreamKind, StreamSource};
use crate::config::{ClientConfig, Exchange, Received};
use crate::error::{error_info_reason, ClientError, RpcError};
use crate::http::{self, RawResponse};

/// The default HTTP+JSON path below the base url (taskwire's).
pub const DEFAULT_PATH: &str = "/a2a/rest";
/// The `protocolBinding` of an HTTP+JSON interface on the card.
pub const BINDING_HTTP_JSON: &str = "HTTP+JSON";
/// The binding's media type.
pub const MEDIA_TYPE: &str = "application/a2a+json";
/// The protocol name in [`Exchange`]s of this client.
pub const PROTOCOL: &str = "a2a-rest";

/// The A2A HTTP+JSON client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct A2aRestClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    http: reqwest::Client,
    /// The interface url, without a trailing slash.
    url: String,
    /// The tenant path prefix (`/{tenant}`), empty for none.
    tenant: String,
}

/// A path segment, percent-encoded (all but RFC 3986 unreserved characters).
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The top-level scalar fields of a request's ProtoJSON as query pairs
/// (camelCase names; numbers and booleans as text), without `skip`.
fn query_of<T: Serialize>(req: &T, skip: &[&str]) -> Result<Vec<(String, String)>, ClientError> {
    let Value::Object(m) = to_json(req)? else {
        return Ok(Vec::new());
    };
    Ok(m.into_iter()
        .filter(|(k, _)| !skip.contains(&k.as_str()))
        .filter_map(|(k, v)| match v {
            Value::String(s) => Some((k, s)),
            Value::Number(n) => Some((k, n.to_string())),
            Value::Bool(b) => Some((k, b.to_string())),
            _ => None,
        })
        .collect())
}

/// The error of a failed answer: [`ClientError::Rpc`] when the body is the
/// binding's error object with a known `ErrorInfo` reason, else
/// [`ClientError::Http`].
pub fn rest_error(raw: &RawResponse) -> ClientError {
    let parsed: Option<Value> = serde_json::from_slice(&raw.body).ok();
    let Some(err) = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .filter(|e| e.is_object())
    else {
        return http::http_error(raw);
    };
    rpc_error(err, Some(raw.status)).unwrap_or_else(|| http::http_error(raw))
}

/// The [`RpcError`] of an error object (`{"code", "status", "message", "details"}`)
/// whose `ErrorInfo` reason is known.
fn rpc_error(err: &Value, http_status: Option<u16>) -> Option<ClientError> {
    let details = err.get("details").cloned();
    let reason = details.as_ref().and_then(error_info_reason);
    let code = reason.as_deref().and_then(code::of_reason)?;
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Some(ClientError::Rpc(RpcError {
        code,
        message,
        data: details,
        reason,
        http_status,
        grpc_code: None,
    }))
}

impl A2aRestClient {
    /// A client for `{base}/a2a/rest`.
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        let url = config.url(DEFAULT_PATH);
        Self::with_url(config, url)
    }

    /// A client for the HTTP+JSON interface `url` (absolute, or a path below
    /// the base url).
    pub fn with_url(config: ClientConfig, url: impl AsRef<str>) -> Result<Self, ClientError> {
        let http = config.http_client()?;
        let url = config.url(url.as_ref()).trim_end_matches('/').to_string();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                http,
                url,
                tenant: String::new(),
            }),
        })
    }

    /// The same client with every path under `/{tenant}`.
    pub fn with_tenant(&self, tenant: &str) -> Self {
        Self {
            inner: Arc::new(Inner {
                config: self.inner.config.clone(),
                http: self.inner.http.clone(),
                url: self.inner.url.clone(),
                tenant: if tenant.is_empty() {
                    String::new()
                } else {
                    format!("/{}", segment(tenant))
                },
            }),
        }
    }

    /// Fetches the agent card and returns a client for its HTTP+JSON interface
    /// (`{base}/a2a/rest` if the card lists none), with the card.
    pub async fn discover(
        config: ClientConfig,
    ) -> Result<(Self, Received<pb::AgentCard>), ClientError> {
        let probe = Self::new(config.clone())?;
        let card = probe.agent_card().await?;
        let client = match interface_url(&card, BINDING_HTTP_JSON) {
            Some(u) => Self::with_url(config, u)?,
            None => probe,
        };
        Ok((client, card))
    }

    /// The interface url.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// The config.
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// `GET /.well-known/agent-card.json` (below the base url).
    pub async fn agent_card(&self) -> Result<Received<pb::AgentCard>, ClientError> {
        let url = self.inner.config.url(AGENT_CARD_PATH);
        let (raw, body) = self
            .send(
                reqwest::Method::GET,
                url,
                &format!("GET {AGENT_CARD_PATH}"),
                None,
                &[],
            )
            .await?;
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        typed(body, "AgentCard")
    }

    /// `POST /message:send`: blocking unless `configuration.returnImmediately`.
    pub async fn send_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<Received<pb::SendMessageResponse>, ClientError> {
        self.call(
            reqwest::Method::POST,
            "/message:send",
            "SendMessage",
            Some(to_json(&req)?),
            &[],
        )
        .await
    }

    /// `POST /message:stream`: a reconnecting stream of events.
    pub async fn send_streaming_message(
        &self,
        req: pb::SendMessageRequest,
    ) -> Result<A2aStream, ClientError> {
        self.stream(StreamKind::Send(Box::new(req)), None).await
    }

    /// `POST /tasks/{id}:subscribe`: the task snapshot, then its updates.
    pub async fn subscribe_to_task(&self, id: &str) -> Result<A2aStream, ClientError> {
        self.stream(StreamKind::Subscribe(id.to_string()), None)
            .await
    }

    /// `SubscribeToTask` resuming after `last_event_id` (`Last-Event-ID`).
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

    /// `GET /tasks/{id}`, with `historyLength` when given.
    pub async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Received<pb::Task>, ClientError> {
        let query: Vec<(String, String)> = history_length
            .map(|n| vec![("historyLength".to_string(), n.to_string())])
            .unwrap_or_default();
        self.call(
            reqwest::Method::GET,
            &format!("/tasks/{}", segment(id)),
            "GetTask",
            None,
            &query,
        )
        .await
    }

    /// `GET /tasks` (the request's fields as query parameters).
    pub async fn list_tasks(
        &self,
        req: pb::ListTasksRequest,
    ) -> Result<Received<pb::ListTasksResponse>, ClientError> {
        let query = query_of(&req, &["tenant"])?;
        self.call(reqwest::Method::GET, "/tasks", "ListTasks", None, &query)
            .await
    }

    /// `POST /tasks/{id}:cancel`.
    pub async fn cancel_task(&self, id: &str) -> Result<Received<pb::Task>, ClientError> {
        let req = pb::CancelTaskRequest {
            id: id.to_string(),
            ..Default::default()
        };
        self.call(
            reqwest::Method::POST,
            &format!("/tasks/{}:cancel", segment(id)),
            "CancelTask",
            Some(to_json(&req)?),
            &[],
        )
        .await
    }

    /// `POST /tasks/{taskId}/pushNotificationConfigs`.
    pub async fn create_push_config(
        &self,
        config: pb::TaskPushNotificationConfig,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
        let path = format!(
            "/tasks/{}/pushNotificationConfigs",
            segment(&config.task_id)
        );
        self.call(
            reqwest::Method::POST,
            &path,
            "CreateTaskPushNotificationConfig",
            Some(to_json(&config)?),
            &[],
        )
        .await
    }

    /// `GET /tasks/{taskId}/pushNotificationConfigs/{id}`.
    pub async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Received<pb::TaskPushNotificationConfig>, ClientError> {
        let path = format!(
            "/tasks/{}/pushNotificationConfigs/{}",
            segment(task_id),
            segment(id)
        );
        self.call(
            reqwest::Method::GET,
            &path,
            "GetTaskPushNotificationConfig",
            None,
            &[],
        )
        .await
    }

    /// `GET /tasks/{taskId}/pushNotificationConfigs`.
    pub async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Received<pb::ListTaskPushNotificationConfigsResponse>, ClientError> {
        let path = format!("/tasks/{}/pushNotificationConfigs", segment(task_id));
        self.call(
            reqwest::Method::GET,
            &path,
            "ListTaskPushNotificationConfigs",
            None,
            &[],
        )
        .await
    }

    /// `DELETE /tasks/{taskId}/pushNotificationConfigs/{id}` (idempotent on a
    /// conforming server).
    pub async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), ClientError> {
        let path = format!(
            "/tasks/{}/pushNotificationConfigs/{}",
            segment(task_id),
            segment(id)
        );
        self.call_raw(
            reqwest::Method::DELETE,
            &path,
            "DeleteTaskPushNotificationConfig",
            None,
            &[],
        )
        .await?;
        Ok(())
    }

    /// `GET /extendedAgentCard`.
    pub async fn extended_agent_card(&self) -> Result<Received<pb::AgentCard>, ClientError> {
        self.call(
            reqwest::Method::GET,
            "/extendedAgentCard",
            "GetExtendedAgentCard",
            None,
            &[],
        )
        .await
    }

    /// Calls `method path` (below the interface url and tenant) with an optional
    /// JSON body and query, and returns the JSON answer (errors as
    /// [`rest_error`]); `operation` names the call in [`Exchange`]s.
    pub async fn call_raw(
        &self,
        method: reqwest::Method,
        path: &str,
        operation: &str,
        body: Option<Value>,
        query: &[(String, String)],
    ) -> Result<Value, ClientError> {
        let url = format!("{}{}{path}", self.inner.url, self.inner.tenant);
        let (raw, json) = self.send(method, url, operation, body, query).await?;
        if !(200..300).contains(&raw.status) {
            return Err(rest_error(&raw));
        }
        if raw.media_type().as_deref() == Some(http::SSE_MEDIA_TYPE) {
            return Err(ClientError::ContentType {
                expected: MEDIA_TYPE.into(),
                got: raw.media_type(),
            });
        }
        Ok(json)
    }

    async fn send(
        &self,
        method: reqwest::Method,
        url: String,
        operation: &str,
        body: Option<Value>,
        query: &[(String, String)],
    ) -> Result<(RawResponse, Value), ClientError> {
        let c = &self.inner.config;
        let mut rb = self
            .inner
            .http
            .request(method, &url)
            .timeout(c.request_timeout)
            .header(VERSION_HEADER, A2A_VERSION)
            .header(reqwest::header::ACCEPT, MEDIA_TYPE);
        if !query.is_empty() {
            rb = rb.query(query);
        }
        if let Some(b) = &body {
            rb = rb
                .header(reqwest::header::CONTENT_TYPE, MEDIA_TYPE)
                .body(b.to_string());
        }
        let raw = RawResponse::read(c.send(rb).await?).await?;
        let json = if raw.body.is_empty() {
            Value::Null
        } else {
            match serde_json::from_slice::<Value>(&raw.body) {
                Ok(v) => v,
                Err(_) if !(200..300).contains(&raw.status) => Value::Null,
                Err(e) => {
                    self.observe(operation, body.as_ref(), &raw, Value::Null);
                    return Err(ClientError::decode("JSON body", e, &raw.body));
                }
            }
        };
        self.observe(operation, body.as_ref(), &raw, json.clone());
        Ok((raw, json))
    }

    async fn call<Resp: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        operation: &str,
        body: Option<Value>,
        query: &[(String, String)],
    ) -> Result<Received<Resp>, ClientError> {
        let json = self.call_raw(method, path, operation, body, query).await?;
        typed(json, operation)
    }

    fn observe(
        &self,
        operation: &str,
        request: Option<&Value>,
        raw: &RawResponse,
        response: Value,
    ) {
        self.inner.config.observe(|| Exchange {
            protocol: PROTOCOL,
            operation: operation.to_string(),
            request: request.cloned().unwrap_or(Value::Null),
            status: Some(raw.status),
            response,
        });
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
        let (operation, path, body) = match &kind {
            StreamKind::Send(req) => (
                "SendStreamingMessage",
                "/message:stream".to_string(),
                to_json(req.as_ref())?,
            ),
            StreamKind::Subscribe(id) => (
                "SubscribeToTask",
                format!("/tasks/{}:subscribe", segment(id)),
                Value::Object(Default::default()),
            ),
        };
        let c = &self.inner.config;
        let url = format!("{}{}{path}", self.inner.url, self.inner.tenant);
        let mut rb = self
            .inner
            .http
            .post(&url)
            .header(VERSION_HEADER, A2A_VERSION)
            .header(reqwest::header::ACCEPT, http::SSE_MEDIA_TYPE)
            .header(reqwest::header::CONTENT_TYPE, MEDIA_TYPE);
        if let Some(id) = &last_event_id {
            rb = rb.header("Last-Event-ID", id.as_str());
        }
        // The request timeout bounds the wait for the response head only.
        let resp = tokio::time::timeout(c.request_timeout, c.send(rb.body(body.to_string())))
            .await
            .map_err(|_| ClientError::Timeout(format!("{operation}: no response head")))??;
        let status = resp.status().as_u16();
        let ct = http::content_type(&resp);
        if !(200..300).contains(&status) || ct.as_deref() != Some(http::SSE_MEDIA_TYPE) {
            let raw = RawResponse::read(resp).await?;
            let json = serde_json::from_slice::<Value>(&raw.body).unwrap_or(Value::Null);
            self.observe(operation, Some(&body), &raw, json.clone());
            if !(200..300).contains(&status) {
                return Err(rest_error(&raw));
            }
            // A server that answers a stream with one response.
            let response: pb::StreamResponse = parse(&json, "StreamResponse")?;
            let one: FrameStream =
                futures::stream::iter(vec![Ok((None, response, RawJson::value(json)))]).boxed();
            return Ok(one);
        }
        let observer = c.observer.clone();
        let op = format!("{operation} (event)");
        let events = http::sse_events(resp.bytes_stream(), c.stream_idle_timeout);
        let frames = events.filter_map(move |item| {
            let observer = observer.clone();
            let op = op.clone();
            async move {
                let ev = match item {
                    Ok(ev) => ev,
                    Err(e) => return Some(Err(e)),
                };
                if ev.data.trim().is_empty() {
                    return None;
                }
                let json: Value = match serde_json::from_str(&ev.data) {
                    Ok(v) => v,
                    Err(e) => {
                        return Some(Err(ClientError::decode(
                            "SSE data (StreamResponse)",
                            e,
                            ev.data.as_bytes(),
                        )))
                    }
                };
                if let Some(o) = &observer {
                    o(&Exchange {
                        protocol: PROTOCOL,
                        operation: op,
                        request: Value::Null,
                        status: None,
                        response: json.clone(),
                    });
                }
                if ev.event.as_deref() == Some("error") {
                    let e = json
                        .get("error")
                        .and_then(|e| rpc_error(e, None))
                        .unwrap_or_else(|| {
                            ClientError::Protocol(format!(
                                "stream error event: {}",
                                crate::error::snippet(ev.data.as_bytes())
                            ))
                        });
                    return Some(Err(e));
                }
                Some(
                    parse::<pb::StreamResponse>(&json, "StreamResponse")
                        .map(|r| (ev.id, r, RawJson::value(json))),
                )
            }
        });
        Ok(frames.boxed())
    }
}

impl StreamSource for A2aRestClient {
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
            let t = A2aRestClient::get_task(&me, &id, None).await?;
            Ok((t.value, t.raw))
        }
        .boxed()
    }
}

fn typed<T: DeserializeOwned>(raw: Value, what: &str) -> Result<Received<T>, ClientError> {
    let value = parse(&raw, what)?;
    Ok(Received { value, raw })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(segment("abc-1.2_~"), "abc-1.2_~");
        assert_eq!(segment("a b/c:d"), "a%20b%2Fc%3Ad");
    }

    #[test]
    fn list_requests_become_query_parameters() {
        let req = pb::ListTasksRequest {
            tenant: "t".into(),
            context_id: "c".into(),
            status: pb::TaskState::Working as i32,
            page_size: Some(5),
            include_artifacts: Some(true),
            ..Default::default()
        };
        let mut q = query_of(&req, &["tenant"]).expect("query");
        q.sort();
        assert_eq!(
            q,
            vec![
                ("contextId".to_string(), "c".to_string()),
                ("includeArtifacts".into(), "true".into()),
                ("pageSize".into(), "5".into()),
                ("status".into(), "TASK_STATE_WORKING".into()),
            ]
        );
    }

    #[test]
    fn error_objects_become_rpc_errors() {
        let body = serde_json::json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "task not found",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}});
        let raw = RawResponse {
            status: 404,
            headers: vec![],
            body: body.to_string().into(),
        };
        match rest_error(&raw) {
            ClientError::Rpc(r) => {
                assert_eq!(r.code, code::TASK_NOT_FOUND);
                assert_eq!(r.http_status, Some(404));
                assert_eq!(r.reason.as_deref(), Some("TASK_NOT_FOUND"));
                assert_eq!(r.message, "task not found");
            }
            other => panic!("{other:?}"),
        }
        let raw = RawResponse {
            status: 502,
            headers: vec![],
            body: "bad gateway".into(),
        };
        assert!(matches!(
            rest_error(&raw),
            ClientError::Http { status: 502, .. }
        ));
    }
}
