//! The core's error type: typed, protocol-neutral. Adapters map it to wire codes.

use crate::state::TaskState;

/// Errors from the store layer.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The task's version moved on since it was read (compare-and-set lost).
    #[error("version conflict")]
    Conflict,
    /// The task does not exist in the store.
    #[error("task not found")]
    NotFound,
    /// The caller's lease on the task's queue entry is gone (expired, reaped or removed).
    #[error("lease lost")]
    LeaseLost,
    /// A backend failure (I/O, SQL, connection).
    #[error("store backend: {0}")]
    Backend(String),
    /// Stored data could not be decoded.
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// The store did not answer (unreachable, the connection failed, or no
    /// answer within the store's timeout). Whether a write sent before the
    /// failure was applied is not known: retrying it with the same idempotency
    /// key (for a create, the same message id) is safe.
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

/// Every error the task core reports.
#[derive(Debug, thiserror::Error)]
// Not #[non_exhaustive]: taskwire-vocab maps every variant to each protocol's
// error exhaustively, so that a new variant cannot go unmapped.
pub enum CoreError {
    /// The task does not exist, or it is not the caller's (the two are indistinguishable on purpose).
    #[error("task not found")]
    NotFound,
    /// The transition table forbids this state change.
    #[error("illegal transition from {from} to {to}")]
    IllegalTransition {
        /// The current state.
        from: TaskState,
        /// The requested state.
        to: TaskState,
    },
    /// The task is terminal and accepts nothing more.
    #[error("task is {state}, which is terminal")]
    Terminal {
        /// The terminal state the task is in.
        state: TaskState,
    },
    /// The task is terminal in a state other than canceled, so it cannot be canceled.
    #[error("task is {state} and cannot be canceled")]
    NotCancelable {
        /// The terminal state the task is in.
        state: TaskState,
    },
    /// The command does not apply to the task in its current state.
    #[error("{what} is not possible while the task is {state}")]
    WrongState {
        /// What was attempted.
        what: String,
        /// The task's state.
        state: TaskState,
    },
    /// A field of the request is malformed.
    #[error("invalid {field}: {reason}")]
    InvalidInput {
        /// The field, in the protocol-neutral name the core uses.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Something is over a configured limit.
    #[error("{what} is too large: {size} > limit {limit}")]
    TooLarge {
        /// What exceeded the limit.
        what: String,
        /// Its size (bytes or count).
        size: usize,
        /// The configured limit.
        limit: usize,
    },
    /// An input guardrail refused the input; it never reached the agent.
    #[error("denied by input guardrail: {reason}")]
    DeniedByGuardrail {
        /// The guardrail's reason.
        reason: String,
    },
    /// Too many concurrent writers on one task; the command may be retried.
    #[error("too much contention on the task, retry")]
    Contention,
    /// The worker lost its lease on the task (another worker owns it now).
    #[error("lease lost")]
    LeaseLost,
    /// The store failed.
    #[error("store: {0}")]
    Store(StoreError),
    /// The store did not answer in time or could not be reached (the detail is
    /// for logs only). The request may be retried: a create retried with the
    /// same message id makes at most one task.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The runtime is shutting down.
    #[error("shutting down")]
    ShuttingDown,
    /// The caller is authenticated but its credential does not grant what the
    /// operation needs (a token without the write scope sending a message). It
    /// does not depend on the task, so it tells nothing about whether one exists.
    #[error("the credential does not grant {needed} access")]
    Forbidden {
        /// What the operation needs.
        needed: crate::permission::Permission,
    },
}

impl From<StoreError> for CoreError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => CoreError::NotFound,
            StoreError::LeaseLost => CoreError::LeaseLost,
            StoreError::Unavailable(why) => CoreError::Unavailable(why),
            other => CoreError::Store(other),
        }
    }
}

/// Result alias for the core.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
