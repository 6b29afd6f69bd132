//! The crate's error type and its HTTP form.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use taskwire_core::CoreError;
use taskwire_vocab::cas as vocab;
use taskwire_vocab::VocabError;

use crate::wire::{ErrorBody, ErrorDetail};

/// Every error the CAS surface reports. Wire codes are built only here, from the
/// typed core and vocabulary errors (see `taskwire_vocab::cas::wire_error`).
#[derive(Debug, thiserror::Error)]
pub enum CasError {
    /// A core command failed.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// A ContentPart could not be converted.
    #[error(transparent)]
    Vocab(#[from] VocabError),
    /// A malformed request.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field.
        field: String,
        /// What is wrong.
        reason: String,
    },
}

impl CasError {
    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        CasError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The HTTP status and body code.
    pub fn wire(&self) -> vocab::WireError {
        match self {
            CasError::Core(e) => vocab::wire_error(e),
            CasError::Vocab(e) => vocab::vocab_wire_error(e),
            CasError::Invalid { .. } => vocab::WireError {
                status: 400,
                code: vocab::ERR_INVALID_INPUT,
            },
        }
    }

    /// A message safe to show (no store or backend details).
    fn safe_message(&self) -> String {
        match self {
            CasError::Core(e) => vocab::error_message(e),
            other => other.to_string(),
        }
    }
}

impl IntoResponse for CasError {
    fn into_response(self) -> Response {
        let w = self.wire();
        let status = StatusCode::from_u16(w.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::warn!(error = %self, "cas request failed");
        }
        let body = ErrorBody {
            error: ErrorDetail {
                code: w.code.to_string(),
                message: self.safe_message(),
            },
        };
        (status, Json(body)).into_response()
    }
}
