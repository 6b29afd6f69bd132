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
#[non_exhaustive]
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
    /// The request body is over `CasConfig::max_body_bytes` (413 `too_large`).
    #[error("the request body exceeds the limit of {limit} bytes")]
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The request body could not be read: the connection broke, or a layer in
    /// front of the adapter failed it (e.g. for not making progress). 400
    /// `invalid_input`; the cause is only logged.
    #[error("the request body could not be read")]
    BodyUnreadable,
    /// A body whose `Content-Type` is not JSON (415 `unsupported_media_type`).
    #[error("the request body must be JSON (Content-Type: application/json), not {found}")]
    UnsupportedMediaType {
        /// The content type sent (`none` when there was none).
        found: String,
    },
}

/// Error code: a request body that is not JSON by its `Content-Type` (HTTP 415).
pub const ERR_UNSUPPORTED_MEDIA_TYPE: &str = "unsupported_media_type";

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
            CasError::Invalid { .. } | CasError::BodyUnreadable => vocab::WireError {
                status: 400,
                code: vocab::ERR_INVALID_INPUT,
            },
            CasError::BodyTooLarge { .. } => vocab::WireError {
                status: 413,
                code: vocab::ERR_TOO_LARGE,
            },
            CasError::UnsupportedMediaType { .. } => vocab::WireError {
                status: 415,
                code: ERR_UNSUPPORTED_MEDIA_TYPE,
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
        let mut res = (status, Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // Retryable: say when.
            res.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        res
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store that did not answer is 503 `unavailable` with `Retry-After`, its
    /// details kept for the logs; an internal store failure stays 500.
    #[test]
    fn an_unavailable_store_is_503_with_retry_after() {
        let res = CasError::from(CoreError::Unavailable("dsn".into())).into_response();
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(res.headers()[axum::http::header::RETRY_AFTER], "1");
        let msg = CasError::from(CoreError::Unavailable("dsn".into())).safe_message();
        assert!(
            msg.contains("did not answer") && !msg.contains("dsn"),
            "{msg}"
        );
        let res = CasError::from(CoreError::Store(taskwire_core::StoreError::Backend(
            "dsn".into(),
        )))
        .into_response();
        assert_eq!(res.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(res.headers().get(axum::http::header::RETRY_AFTER).is_none());
    }
}
