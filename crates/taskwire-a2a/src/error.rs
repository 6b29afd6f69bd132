//! The crate's error: an A2A error kind (code, reason, gRPC status) with a message
//! safe to show the caller. Built from typed core errors at this edge only.

use taskwire_core::CoreError;
use taskwire_vocab::a2a::{error_from_core, A2aErrorKind};

/// Errors of the A2A adapter, as every binding reports them.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum A2aError {
    /// An A2A or JSON-RPC error of the given kind.
    #[error("{message}")]
    Protocol {
        /// What kind of error (gives the JSON-RPC code, ErrorInfo reason, gRPC status).
        kind: A2aErrorKind,
        /// A message safe to show the caller.
        message: String,
    },
}

impl A2aError {
    /// An error of `kind` with `message`.
    pub fn new(kind: A2aErrorKind, message: impl Into<String>) -> Self {
        A2aError::Protocol {
            kind,
            message: message.into(),
        }
    }

    /// InvalidParams (-32602) naming the field.
    pub fn invalid_params(field: &str, reason: impl std::fmt::Display) -> Self {
        Self::new(
            A2aErrorKind::InvalidParams,
            format!("invalid {field}: {reason}"),
        )
    }

    /// TaskNotFound (-32001).
    pub fn task_not_found() -> Self {
        Self::new(A2aErrorKind::TaskNotFound, "task not found")
    }

    /// An internal error whose details are only logged.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %detail, "a2a internal error");
        Self::new(A2aErrorKind::Internal, "internal error")
    }

    /// The kind.
    pub fn kind(&self) -> A2aErrorKind {
        match self {
            A2aError::Protocol { kind, .. } => *kind,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        match self {
            A2aError::Protocol { message, .. } => message,
        }
    }
}

impl From<CoreError> for A2aError {
    fn from(e: CoreError) -> Self {
        if matches!(
            e,
            CoreError::Store(_) | CoreError::LeaseLost | CoreError::Unavailable(_)
        ) {
            tracing::warn!(error = %e, "a2a: core error");
        }
        let (kind, message) = error_from_core(&e);
        Self::new(kind, message)
    }
}

impl From<taskwire_core::StoreError> for A2aError {
    fn from(e: taskwire_core::StoreError) -> Self {
        CoreError::from(e).into()
    }
}

impl From<taskwire_vocab::VocabError> for A2aError {
    fn from(e: taskwire_vocab::VocabError) -> Self {
        Self::new(A2aErrorKind::InvalidParams, e.to_string())
    }
}

/// Result alias of the crate.
pub type Result<T, E = A2aError> = std::result::Result<T, E>;
