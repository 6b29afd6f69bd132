//! The crate's error type.

/// What can go wrong generating, loading or compiling a schema.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The A2A descriptor could not be decoded or lacks a message.
    #[error("A2A descriptor: {0}")]
    Descriptor(String),
    /// A schema derived from the Rust types does not have the expected shape.
    #[error("unexpected schema shape: {0}")]
    Shape(String),
    /// JSON (de)serialisation failed.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
    /// No schema of that protocol and kind is committed (or embedded).
    #[error("no schema for {protocol}/{kind}")]
    Unknown {
        /// The protocol.
        protocol: String,
        /// The kind.
        kind: String,
    },
    /// A schema does not compile.
    #[error("schema {protocol}/{kind} does not compile: {message}")]
    Invalid {
        /// The protocol.
        protocol: String,
        /// The kind.
        kind: String,
        /// The compiler's message.
        message: String,
    },
}
