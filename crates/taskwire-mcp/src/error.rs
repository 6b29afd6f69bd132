//! The crate's error type: a JSON-RPC error with the HTTP status it travels with.
//! Core errors are mapped here, at the adapter edge.

use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value};
use taskwire_core::CoreError;
use taskwire_vocab::VocabError;
use taskwire_wire::jsonrpc::ErrorObject;
use taskwire_wire::mcp::{ClientCapabilities, MissingCapabilityData};

use crate::wire::code;

/// A JSON-RPC error to send back, with its HTTP status.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RpcError {
    /// JSON-RPC error code.
    pub code: i64,
    /// A message naming the problem (safe to show).
    pub message: String,
    /// Optional error data.
    pub data: Option<Value>,
    /// The HTTP status of the response carrying it.
    pub status: StatusCode,
}

impl RpcError {
    /// An error sent with HTTP 200 (an answer to a well-formed request).
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
            status: StatusCode::OK,
        }
    }

    /// An error sent with HTTP 400.
    pub fn bad_request(code: i64, message: impl Into<String>) -> Self {
        Self::new(code, message).with_status(StatusCode::BAD_REQUEST)
    }

    /// Invalid params (HTTP 200).
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    /// An internal error with a safe message (HTTP 200).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }

    /// Method not found (HTTP 404).
    pub fn method_not_found(message: impl Into<String>) -> Self {
        Self::new(code::METHOD_NOT_FOUND, message).with_status(StatusCode::NOT_FOUND)
    }

    /// A header that does not match the body (HTTP 400, -32020).
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::bad_request(code::HEADER_MISMATCH, message)
    }

    /// The client did not declare the tasks extension (HTTP 400, -32021).
    pub fn missing_tasks_extension(message: impl Into<String>) -> Self {
        let mut extensions = Map::new();
        extensions.insert(
            taskwire_vocab::mcp::TASKS_EXTENSION.into(),
            Value::Object(Map::new()),
        );
        Self::missing_capability(
            ClientCapabilities {
                extensions: Some(extensions),
                other: Map::new(),
            },
            message,
        )
    }

    /// The client did not declare a capability the request needs (HTTP 400,
    /// -32021); `required` is a `ClientCapabilities` object of what is missing.
    pub fn missing_capability(required: ClientCapabilities, message: impl Into<String>) -> Self {
        Self::bad_request(code::MISSING_CAPABILITY, message).with_data(&MissingCapabilityData {
            required_capabilities: required,
        })
    }

    /// The unknown-task error (-32602).
    pub fn unknown_task(id: &str) -> Self {
        Self::invalid_params(format!("unknown task: {id}"))
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// Sets the data (a wire type of `taskwire_wire::mcp`).
    pub fn with_data<T: Serialize>(mut self, data: &T) -> Self {
        self.data = Some(taskwire_wire::mcp::to_value(data));
        self
    }

    /// The JSON-RPC error object.
    pub fn object(&self) -> Value {
        let mut e = ErrorObject::new(self.code, self.message.clone());
        e.data = self.data.clone();
        taskwire_wire::mcp::to_value(&e)
    }

    /// Maps a core error (through `taskwire_vocab::mcp::error_from_core`);
    /// `task_id` names the task for not-found errors.
    pub fn from_core(e: CoreError, task_id: Option<&str>) -> Self {
        if matches!(e, CoreError::LeaseLost | CoreError::Store(_)) {
            tracing::warn!(error = %e, "mcp: internal error");
        }
        if matches!(e, CoreError::Unavailable(_)) {
            tracing::warn!(error = %e, "mcp: the store did not answer");
        }
        let (code, message) = taskwire_vocab::mcp::error_from_core(&e, task_id);
        let mut err = Self::new(code, message);
        if matches!(e, CoreError::Forbidden { .. }) {
            // The MCP authorization spec's insufficient scope: 403 (the server's
            // edge adds the `WWW-Authenticate` step-up challenge).
            err.status = StatusCode::FORBIDDEN;
        }
        err.data = taskwire_vocab::mcp::error_data(&e);
        err
    }
}

impl From<VocabError> for RpcError {
    fn from(e: VocabError) -> Self {
        Self::invalid_params(e.to_string())
    }
}
