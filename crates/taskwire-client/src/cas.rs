//! The CAS (Common Agent Specification) task status surface, at the paths
//! taskwire defines under `/cas` (docs/cas.md): create, status (with ETag,
//! long poll by revision and an SSE stream), messages, input, provider
//! authorisations, reviews and host lifecycle control.
//!
//! Errors are [`ClientError::Http`] with the body's `error.code` (e.g.
//! `not_found`, `task_terminal`) and `error.message`.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::config::{ClientConfig, Exchange, Received};
use crate::error::ClientError;
use crate::http::{self, RawResponse};

/// The default path prefix.
pub const CAS_PATH: &str = "/cas";
/// The idempotency header (create and input).
pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";
/// Create a task on behalf of another task.
pub const PARENT_TASK: &str = "CAS-Parent-Task";

/// The CAS wire types, as the wire layer defines them (the server sends the
/// same types): the status object ([`CasStatus`]), its status ([`CasStatusBody`]),
/// phase ([`CasPhase`]) and notifications ([`CasNotification`]), and the
/// entries of the messages list ([`CasMessage`]). What a newer server may send
/// that this revision does not name reads as `Unknown`.
pub use taskwire_wire::cas::{
    ContentPart, IoType, MessageEntry as CasMessage, NotificationKind,
    NotificationWire as CasNotification, Phase as CasPhase, Status as CasStatusBody,
    StatusObject as CasStatus, TerminalReason,
};

/// An input: `{message: [ContentPart], …parameters}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CasInput {
    /// The content parts.
    pub message: Vec<ContentPart>,
    /// Parameters (other top-level keys).
    #[serde(flatten)]
    pub parameters: Map<String, Value>,
}

impl CasInput {
    /// An input with one `text/plain` part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            message: vec![ContentPart {
                mime_type: Some("text/plain".into()),
                text: Some(text.into()),
                file: None,
                size_bytes: None,
                metadata: None,
            }],
            parameters: Map::new(),
        }
    }
}

/// The result of a conditional status read.
#[derive(Clone, Debug, PartialEq)]
pub enum Conditional<T> {
    /// The resource changed (or no validator was given).
    Modified(T),
    /// `304 Not Modified`.
    NotModified,
}

/// The CAS client. Cheap to clone.
#[derive(Clone, Debug)]
pub struct CasClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: ClientConfig,
    http: reqwest::Client,
    prefix: String,
}

impl CasClient {
    /// A client for `{base}/cas`.
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        Self::with_prefix(config, CAS_PATH)
    }

    /// A client for the CAS routes under `prefix` (absolute url or path).
    pub fn with_prefix(config: ClientConfig, prefix: &str) -> Result<Self, ClientError> {
        let http = config.http_client()?;
        let prefix = config.url(prefix).trim_end_matches('/').to_string();
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                http,
                prefix,
            }),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.inner.prefix)
    }

    /// Sends any request below the prefix and returns the raw response.
    pub async fn send_raw(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Result<RawResponse, ClientError> {
        let c = &self.inner.config;
        let mut rb = self
            .inner
            .http
            .request(method.clone(), self.url(path))
            .timeout(c.request_timeout);
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if let Some(b) = &body {
            rb = rb
                .header(reqwest::header::CONTENT_TYPE, http::JSON_MEDIA_TYPE)
                .body(b.to_string());
        }
        let raw = RawResponse::read(c.send(rb).await?).await?;
        c.observe(|| Exchange {
            protocol: "cas",
            operation: format!("{method} {path}"),
            request: body.clone().unwrap_or(Value::Null),
            status: Some(raw.status),
            response: serde_json::from_slice(&raw.body).unwrap_or(Value::Null),
        });
        Ok(raw)
    }

    async fn json(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Result<(RawResponse, Value), ClientError> {
        let raw = self.send_raw(method, path, body, headers).await?;
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        let v = http::json_body(&raw)?;
        Ok((raw, v))
    }

    async fn no_content(&self, path: &str, body: Option<Value>) -> Result<(), ClientError> {
        let raw = self
            .send_raw(reqwest::Method::POST, path, body, &[])
            .await?;
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        Ok(())
    }

    /// `POST /cas/tasks`: creates a task (`Idempotency-Key` when given).
    pub async fn create_task(
        &self,
        input: &CasInput,
        idempotency_key: Option<&str>,
    ) -> Result<Received<CasStatus>, ClientError> {
        let body = serde_json::to_value(input).map_err(|e| ClientError::Config(e.to_string()))?;
        let mut h = Vec::new();
        if let Some(k) = idempotency_key {
            h.push((IDEMPOTENCY_KEY, k));
        }
        let (_, v) = self
            .json(reqwest::Method::POST, "/tasks", Some(body), &h)
            .await?;
        typed(v)
    }

    /// `GET /cas/tasks/{id}`.
    pub async fn status(&self, id: &str) -> Result<Received<CasStatus>, ClientError> {
        let (_, v) = self
            .json(reqwest::Method::GET, &format!("/tasks/{id}"), None, &[])
            .await?;
        typed(v)
    }

    /// `GET /cas/tasks/{id}` with `If-None-Match: "<revision>"`.
    pub async fn status_if_changed(
        &self,
        id: &str,
        revision: &str,
    ) -> Result<Conditional<Received<CasStatus>>, ClientError> {
        let etag = format!("\"{revision}\"");
        let raw = self
            .send_raw(
                reqwest::Method::GET,
                &format!("/tasks/{id}"),
                None,
                &[("If-None-Match", etag.as_str())],
            )
            .await?;
        if raw.status == 304 {
            return Ok(Conditional::NotModified);
        }
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        Ok(Conditional::Modified(typed(http::json_body(&raw)?)?))
    }

    /// Long poll: `GET /cas/tasks/{id}?wait=S&revision=R` answers when the
    /// revision differs from `revision`, the task is terminal, or `wait` ends.
    pub async fn wait_status(
        &self,
        id: &str,
        revision: &str,
        wait: Duration,
    ) -> Result<Received<CasStatus>, ClientError> {
        let secs = wait.as_secs().max(1);
        let path = format!("/tasks/{id}?wait={secs}&revision={revision}");
        let c = &self.inner.config;
        let mut rb = self
            .inner
            .http
            .get(self.url(&path))
            .timeout(c.request_timeout.saturating_add(wait));
        rb = rb.header(reqwest::header::ACCEPT, http::JSON_MEDIA_TYPE);
        let raw = RawResponse::read(c.send(rb).await?).await?;
        c.observe(|| Exchange {
            protocol: "cas",
            operation: format!("GET {path}"),
            request: Value::Null,
            status: Some(raw.status),
            response: serde_json::from_slice(&raw.body).unwrap_or(Value::Null),
        });
        if !(200..300).contains(&raw.status) {
            return Err(http::http_error(&raw));
        }
        typed(http::json_body(&raw)?)
    }

    /// Polls with long polls until `done` holds for the status or `limit`
    /// passes (then [`ClientError::Timeout`]).
    pub async fn wait_until(
        &self,
        id: &str,
        limit: Duration,
        done: impl Fn(&CasStatus) -> bool,
    ) -> Result<Received<CasStatus>, ClientError> {
        let deadline = crate::config::after(limit);
        let mut s = self.status(id).await?;
        loop {
            if done(&s) {
                return Ok(s);
            }
            let now = tokio::time::Instant::now();
            if now >= deadline || s.is_terminal() {
                return Err(ClientError::Timeout(format!(
                    "task {id} still {:?} after {} ms",
                    s.status.phase,
                    limit.as_millis()
                )));
            }
            let left = (deadline - now).min(Duration::from_secs(30));
            let rev = s.status.revision.clone();
            s = self.wait_status(id, &rev, left).await?;
        }
    }

    /// `GET /cas/tasks/{id}/messages`.
    pub async fn messages(&self, id: &str) -> Result<Received<Vec<CasMessage>>, ClientError> {
        let (_, v) = self
            .json(
                reqwest::Method::GET,
                &format!("/tasks/{id}/messages"),
                None,
                &[],
            )
            .await?;
        typed(v)
    }

    /// `POST /cas/tasks/{id}/input` (202 with the status object).
    pub async fn send_input(
        &self,
        id: &str,
        input: &CasInput,
        idempotency_key: Option<&str>,
    ) -> Result<Received<CasStatus>, ClientError> {
        let body = serde_json::to_value(input).map_err(|e| ClientError::Config(e.to_string()))?;
        let mut h = Vec::new();
        if let Some(k) = idempotency_key {
            h.push((IDEMPOTENCY_KEY, k));
        }
        let (_, v) = self
            .json(
                reqwest::Method::POST,
                &format!("/tasks/{id}/input"),
                Some(body),
                &h,
            )
            .await?;
        typed(v)
    }

    /// `GET /cas/tasks/{id}/events`: the status object at every revision
    /// until terminal (`Last-Event-ID` skips the revision you have).
    pub async fn events(
        &self,
        id: &str,
        last_revision: Option<&str>,
    ) -> Result<BoxStream<'static, Result<Received<CasStatus>, ClientError>>, ClientError> {
        let c = &self.inner.config;
        let mut rb = self
            .inner
            .http
            .get(self.url(&format!("/tasks/{id}/events")))
            .header(reqwest::header::ACCEPT, http::SSE_MEDIA_TYPE);
        if let Some(r) = last_revision {
            rb = rb.header("Last-Event-ID", r);
        }
        let resp = tokio::time::timeout(c.request_timeout, c.send(rb))
            .await
            .map_err(|_| ClientError::Timeout("CAS events: no response head".into()))??;
        let media = http::content_type(&resp);
        if !resp.status().is_success() {
            let raw = RawResponse::read(resp).await?;
            return Err(http::http_error(&raw));
        }
        if media.as_deref() != Some(http::SSE_MEDIA_TYPE) {
            return Err(ClientError::ContentType {
                expected: http::SSE_MEDIA_TYPE.into(),
                got: media,
            });
        }
        let s =
            http::sse_json(resp.bytes_stream(), c.stream_idle_timeout).map(|v| v.and_then(typed));
        Ok(s.boxed())
    }

    /// `POST /cas/tasks/{id}/authorizations/{provider}`: grants a provider.
    pub async fn grant_authorization(&self, id: &str, provider: &str) -> Result<(), ClientError> {
        self.no_content(&format!("/tasks/{id}/authorizations/{provider}"), None)
            .await
    }

    /// `GET /cas/reviews`: the reviews addressed to the caller (raw JSON).
    pub async fn reviews(&self) -> Result<Received<Value>, ClientError> {
        let (_, v) = self
            .json(reqwest::Method::GET, "/reviews", None, &[])
            .await?;
        Ok(Received {
            value: v.clone(),
            raw: v,
        })
    }

    /// `POST /cas/reviews/{task_id}/{review_id}`: approve or reject.
    pub async fn decide_review(
        &self,
        task_id: &str,
        review_id: &str,
        approve: bool,
    ) -> Result<(), ClientError> {
        let body = taskwire_wire::cas::DecisionBody {
            decision: if approve {
                taskwire_wire::cas::Decision::Approve
            } else {
                taskwire_wire::cas::Decision::Reject
            },
        };
        self.no_content(
            &format!("/reviews/{task_id}/{review_id}"),
            Some(crate::a2a::to_json(&body)?),
        )
        .await
    }

    /// `POST /cas/host/tasks/{id}/complete`: ends the task (host control).
    pub async fn complete(&self, id: &str, reason: Option<&str>) -> Result<(), ClientError> {
        let body = host_body(reason)?;
        self.no_content(&format!("/host/tasks/{id}/complete"), body)
            .await
    }

    /// `POST /cas/host/tasks/{id}/interrupt`: stops the turn in flight.
    pub async fn interrupt(&self, id: &str, reason: Option<&str>) -> Result<(), ClientError> {
        let body = host_body(reason)?;
        self.no_content(&format!("/host/tasks/{id}/interrupt"), body)
            .await
    }
}

fn typed<T: serde::de::DeserializeOwned>(raw: Value) -> Result<Received<T>, ClientError> {
    let value = T::deserialize(&raw)
        .map_err(|e| ClientError::decode("CAS body", e, raw.to_string().as_bytes()))?;
    Ok(Received { value, raw })
}

/// The optional body of a host lifecycle command.
fn host_body(reason: Option<&str>) -> Result<Option<Value>, ClientError> {
    reason
        .map(|r| {
            crate::a2a::to_json(&taskwire_wire::cas::HostBody {
                reason: Some(r.to_string()),
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_object_parses() {
        let s: CasStatus = serde_json::from_value(json!({
            "id": "x", "agent": "a", "responsible_user": "u", "created_at": "t",
            "status": {"phase": "processing", "terminal_reason": null, "revision": "r",
                "notifications": [{"kind": "user_auth_required", "since": "t", "provider": "gh"}],
                "idle_expires_at": null}
        }))
        .expect("status");
        assert_eq!(s.status.phase, CasPhase::Processing);
        assert_eq!(s.status.notifications[0].provider.as_deref(), Some("gh"));
        let input = serde_json::to_value(CasInput::text("hi")).expect("json");
        assert_eq!(
            input,
            json!({"message": [{"mimeType": "text/plain", "text": "hi"}]})
        );
    }
}
