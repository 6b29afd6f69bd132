//! The wire layer's errors.

/// What went wrong encoding or decoding a wire message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    /// A message could not be decoded. `path` names the field (`configuration.historyLength`),
    /// empty for the message as a whole.
    #[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
    Decode {
        /// The dotted path of the field at fault, as the sender wrote it; empty
        /// for the whole message.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// A message could not be encoded (a timestamp out of range, a NaN number).
    #[error("encoding: {0}")]
    Encode(String),
    /// The compiled descriptor lacks a message (a build fault, not input).
    #[error("descriptor: {0}")]
    Descriptor(String),
    /// A request body is over the limit ([`crate::body::read_body`]).
    #[error("the request body exceeds the limit of {limit} bytes")]
    BodyTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A request body failed while being read (the connection broke, or a
    /// layer in front failed it); the error and its sources.
    #[error("the request body could not be read: {0}")]
    BodyUnreadable(String),
}

impl WireError {
    /// A decode error at `path`.
    pub fn decode(path: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Self::Decode {
            path: path.into(),
            message: message.to_string(),
        }
    }
}

/// An error's text followed by its sources', joined with `: ` (hyper's
/// "client error (Connect)" says little without "tcp connect error:
/// Connection refused").
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}
