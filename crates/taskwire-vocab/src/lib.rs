//! The translation layer: pure functions and tables between the core's vocabulary
//! (task states, terminal causes, pending interactions, parts, errors) and each
//! protocol's. Every adapter maps through here; none keeps a mapping of its own.
//!
//! Each module owns one protocol's view. Where a mapping loses information the
//! function says so with a [`Loss`], and a test pins it.
//!
//! ```
//! use taskwire_core::TaskState;
//! use taskwire_vocab::a2a::{state_from_a2a, state_to_a2a, A2aState};
//!
//! assert_eq!(state_to_a2a(TaskState::InputRequired), A2aState::InputRequired);
//! assert_eq!(state_from_a2a(A2aState::Canceled).unwrap(), TaskState::Canceled);
//! assert!(state_from_a2a(A2aState::Unspecified).is_err()); // no core state
//! ```

pub mod a2a;
pub mod agui;
pub mod cas;
pub mod mcp;
/// Wire names shared by the servers and the clients (the wire layer's).
pub use taskwire_wire::names;
pub mod table;
pub mod upstream;

/// What a lossy mapping drops, in words a person can act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loss(pub &'static str);

/// Lost, on every protocol: a worker that lost its lease on a task (another worker
/// took it over) reads as an internal error, like a store failure.
pub const LOSS_LEASE_LOST: Loss =
    Loss("a lost lease (another worker took the task over) reads as an internal error, like a store failure");

/// Errors of the translation layer (a protocol value the core has no meaning for).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VocabError {
    /// A value of the protocol that has no core counterpart.
    #[error("unknown {what}: {value}")]
    Unknown {
        /// What kind of value (state, part kind, …).
        what: &'static str,
        /// The value received.
        value: String,
    },
    /// A value that is well-formed but not acceptable as input.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
}
