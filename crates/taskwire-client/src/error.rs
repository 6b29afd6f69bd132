//! The one error type of the crate.

use serde_json::Value;

/// A JSON-RPC error object as the server sent it (A2A JSON-RPC and MCP), or the
/// A2A error a gRPC status was mapped to.
#[derive(Clone, Debug, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC error code (for gRPC: the A2A code the status maps to).
    pub code: i64,
    /// The error message.
    pub message: String,
    /// `error.data` as sent (A2A: an array of typed objects, MCP: any value).
    pub data: Option<Value>,
    /// The `reason` of the `google.rpc.ErrorInfo` in `error.data` (or in the
    /// gRPC status details), e.g. `TASK_NOT_FOUND`.
    pub reason: Option<String>,
    /// The HTTP status the error came with (JSON-RPC over HTTP).
    pub http_status: Option<u16>,
    /// The gRPC status code the error came with (A2A gRPC).
    pub grpc_code: Option<i32>,
}

impl RpcError {
    /// Builds an error from a JSON-RPC `error` object; `None` if it is not one
    /// (missing or non-integer `code`).
    pub fn from_json(error: &Value, http_status: Option<u16>) -> Option<Self> {
        let e = taskwire_wire::jsonrpc::ErrorObject::from_value(error)?;
        let reason = e.data.as_ref().and_then(error_info_reason);
        Some(Self {
            code: e.code,
            message: e.message,
            data: e.data,
            reason,
            http_status,
            grpc_code: None,
        })
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)?;
        if let Some(r) = &self.reason {
            write!(f, " [{r}]")?;
        }
        Ok(())
    }
}

/// The `reason` of the first `google.rpc.ErrorInfo` in an A2A `error.data`
/// (an array of typed objects; a single object is accepted too).
pub fn error_info_reason(data: &Value) -> Option<String> {
    let is_info = |v: &Value| {
        v.get("@type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("google.rpc.ErrorInfo"))
    };
    let pick = |v: &Value| v.get("reason").and_then(Value::as_str).map(str::to_string);
    match data {
        Value::Array(items) => items.iter().find(|v| is_info(v)).and_then(pick),
        Value::Object(_) if is_info(data) => pick(data),
        _ => None,
    }
}

/// Everything that can go wrong in a client call. No server response makes a
/// client panic: malformed bodies, wrong content types and truncated streams
/// all end up here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The configuration is unusable (bad url, bad header value, …).
    #[error("invalid client configuration: {0}")]
    Config(String),
    /// No connection could be made (refused, DNS, TLS handshake, connect
    /// timeout): nothing of the request reached the server, so sending it
    /// again cannot make its effect twice.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The request could not be sent whole or the response not read (a
    /// connection reset or closed mid-request, …): the server may have acted
    /// on it.
    #[error("transport error: {0}")]
    Transport(String),
    /// The request, the connect or a stream read exceeded its time limit.
    #[error("timed out: {0}")]
    Timeout(String),
    /// A non-success HTTP status without a JSON-RPC error body (CAS errors:
    /// `code`/`message` from `{"error":{"code","message"}}`).
    #[error("HTTP {status}{}: {body}", code.as_deref().map(|c| format!(" {c}")).unwrap_or_default())]
    Http {
        /// The HTTP status.
        status: u16,
        /// The error code of the body, when it has one.
        code: Option<String>,
        /// The error message of the body, when it has one.
        message: Option<String>,
        /// The body as received (cut to 4 KiB).
        body: String,
    },
    /// A JSON-RPC error (A2A JSON-RPC, MCP) or a gRPC status mapped to the
    /// A2A error codes (A2A gRPC).
    #[error("JSON-RPC error {0}")]
    Rpc(RpcError),
    /// A gRPC status that is not one of the A2A errors.
    #[error("gRPC status {code}: {message}")]
    Grpc {
        /// The gRPC status code (`tonic::Code` as an integer).
        code: i32,
        /// The status message.
        message: String,
    },
    /// The response had a content type the call cannot read.
    #[error("unexpected content type {got:?} (expected {expected})")]
    ContentType {
        /// What the call accepts.
        expected: String,
        /// What the server sent (`None`: no header).
        got: Option<String>,
    },
    /// The body is not the JSON (or protobuf) the call expects.
    #[error("cannot decode {what}: {detail}")]
    Decode {
        /// What was being decoded.
        what: String,
        /// Why it failed, with a snippet of the input.
        detail: String,
    },
    /// The server broke the protocol in another way (a response without
    /// `result` or `error`, a stream that ended before its last event, …).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// A stream broke and could not be resumed or replaced by polling within
    /// the backoff policy's attempts.
    #[error("stream broken after {attempts} attempts: {last}")]
    StreamBroken {
        /// Reconnect and poll attempts made.
        attempts: u32,
        /// The last error seen.
        last: String,
    },
    /// Authorization failed: the OAuth client could not obtain a token (a
    /// metadata document that does not check out, a token endpoint that said
    /// no). Never carries a token or secret.
    #[error("authorization: {0}")]
    Auth(String),
    /// The operation is not offered by this client (yet) or by the server.
    #[error("not implemented: {0}")]
    NotImplemented(&'static str),
}

impl ClientError {
    /// The JSON-RPC error, if this is one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            Self::Rpc(e) => Some(e),
            _ => None,
        }
    }

    /// The JSON-RPC (or mapped A2A) error code, if any.
    pub fn rpc_code(&self) -> Option<i64> {
        self.rpc().map(|e| e.code)
    }

    /// The HTTP status the error came with, if any.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(*status),
            Self::Rpc(e) => e.http_status,
            _ => None,
        }
    }

    /// Whether retrying the same request later may succeed (transport errors,
    /// timeouts, HTTP 408/429/5xx except 501, truncated streams, and a
    /// protocol error that says the server is unavailable).
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Connect(_) | Self::Transport(_) | Self::Timeout(_) => true,
            Self::Http { status, .. } => {
                matches!(*status, 408 | 429) || (*status >= 500 && *status != 501)
            }
            Self::Grpc { code, .. } => *code == tonic::Code::Unavailable as i32,
            // A server that says it is unavailable (taskwire's store did not
            // answer: ErrorInfo reason UNAVAILABLE, or HTTP 503 on HTTP+JSON)
            // may answer a retry; the request was not acted on, or a retry
            // with the same message id finds what was.
            Self::Rpc(e) => {
                e.reason.as_deref() == Some("UNAVAILABLE")
                    || e.http_status == Some(503)
                    || e.grpc_code == Some(tonic::Code::Unavailable as i32)
            }
            _ => false,
        }
    }

    /// Whether the request certainly did not reach the server (no
    /// connection could be made): then even a call that is not idempotent
    /// (an MCP `tools/call`, an AG-UI run) can be sent again.
    pub fn is_unsent(&self) -> bool {
        matches!(self, Self::Connect(_))
    }

    pub(crate) fn decode(what: &str, detail: impl std::fmt::Display, input: &[u8]) -> Self {
        Self::Decode {
            what: what.to_string(),
            detail: format!("{detail}; input: {}", snippet(input)),
        }
    }
}

impl From<reqwest::Error> for ClientError {
    fn from(e: reqwest::Error) -> Self {
        // A connect that timed out sent nothing either: checked first.
        if e.is_connect() {
            Self::Connect(crate::http::error_chain(&e))
        } else if e.is_timeout() {
            Self::Timeout(e.to_string())
        } else if e.is_builder() {
            Self::Config(e.to_string())
        } else {
            Self::Transport(crate::http::error_chain(&e))
        }
    }
}

/// At most 4 KiB of a body, as text.
pub(crate) fn snippet(body: &[u8]) -> String {
    const MAX: usize = 4096;
    let cut = &body[..body.len().min(MAX)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if body.len() > MAX {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rpc_error_reads_error_info_reason() {
        let e = RpcError::from_json(
            &json!({"code": -32001, "message": "task not found", "data": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}
            ]}),
            Some(200),
        )
        .expect("an error object");
        assert_eq!(e.code, -32001);
        assert_eq!(e.reason.as_deref(), Some("TASK_NOT_FOUND"));
        assert!(RpcError::from_json(&json!({"message": "no code"}), None).is_none());
        assert!(RpcError::from_json(&json!("x"), None).is_none());
    }

    #[test]
    fn transient_classification() {
        assert!(ClientError::Timeout("t".into()).is_transient());
        let http = |status| ClientError::Http {
            status,
            code: None,
            message: None,
            body: String::new(),
        };
        assert!(http(503).is_transient());
        assert!(http(429).is_transient());
        assert!(!http(404).is_transient());
        assert!(!http(501).is_transient());
        // A protocol error is final, unless the server says it is unavailable.
        let rpc = |error: serde_json::Value, status| {
            ClientError::Rpc(RpcError::from_json(&error, status).expect("an error object"))
        };
        let unavailable = json!({"code": -32603, "message": "the store did not answer",
            "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "UNAVAILABLE", "domain": "taskwire"}]});
        assert!(rpc(unavailable, Some(200)).is_transient());
        assert!(rpc(json!({"code": -32603, "message": "x"}), Some(503)).is_transient());
        assert!(!rpc(json!({"code": -32603, "message": "internal"}), Some(200)).is_transient());
        assert!(!rpc(json!({"code": -32001, "message": "not found"}), Some(404)).is_transient());
    }
}
