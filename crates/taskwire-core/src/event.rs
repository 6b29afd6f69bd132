//! The per-task event log: every change of a task is an event with a sequence number.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::TaskId;
use crate::types::{
    Artifact, AuthWait, InputRequest, Message, Review, ReviewDecision, TaskError, TaskState,
    TerminalCause, Timestamp,
};

/// One entry of a task's event log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The task.
    pub task_id: TaskId,
    /// Position in the task's log, starting at 1, without gaps.
    pub seq: u64,
    /// The task's version after the commit that wrote this event.
    pub version: u64,
    /// When it was committed.
    pub at: Timestamp,
    /// What happened.
    pub kind: EventKind,
}

/// Whether a step started or finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepPhase {
    /// The step began.
    Started,
    /// The step ended.
    Finished,
}

impl StepPhase {
    /// The lowercase name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            StepPhase::Started => "started",
            StepPhase::Finished => "finished",
        }
    }
}

/// What a single event records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum EventKind {
    /// The task was created (always sequence 1).
    Created {
        /// The context.
        context_id: String,
        /// The agent.
        agent: String,
    },
    /// The state changed.
    Status {
        /// Previous state.
        from: TaskState,
        /// New state.
        to: TaskState,
        /// The status message that came with it (boxed, as are the other large
        /// payloads, so that every event stays small).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Box<Message>>,
        /// Why it ended, when `to` is terminal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cause: Option<TerminalCause>,
        /// The error, for failed or rejected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<Box<TaskError>>,
    },
    /// A message was added to the history (user input or agent reply).
    Message {
        /// The message.
        message: Box<Message>,
        /// True if it is input queued for a later turn.
        #[serde(default)]
        queued: bool,
    },
    /// Queued input was handed to the agent at the start of a turn.
    InputCommitted {
        /// The message ids, in order.
        message_ids: Vec<String>,
    },
    /// A turn started.
    TurnStarted {
        /// The turn number, from 1.
        turn: u32,
    },
    /// A chunk of an artifact.
    Artifact {
        /// The artifact id, name and this chunk's parts.
        artifact: Box<Artifact>,
        /// True if the parts extend an existing artifact of the same id.
        append: bool,
        /// True for the final chunk.
        last_chunk: bool,
    },
    /// The agent asked for input.
    InputRequested {
        /// The new requests.
        requests: Vec<InputRequest>,
    },
    /// Answers were stored.
    InputAnswered {
        /// Keys that were answered.
        keys: Vec<String>,
    },
    /// Open requests were replaced without being answered.
    InputSuperseded {
        /// The keys.
        keys: Vec<String>,
    },
    /// The task waits for a provider authorisation.
    AuthRequired {
        /// The authorisation (provider, operations, url).
        auth: Box<AuthWait>,
    },
    /// A provider was authorised; every operation waiting on it resumes.
    AuthGranted {
        /// The provider.
        provider: String,
    },
    /// A review was requested.
    ReviewRequested {
        /// The review.
        review: Box<Review>,
    },
    /// A review was decided.
    ReviewDecided {
        /// The review id.
        review_id: String,
        /// The decision.
        decision: ReviewDecision,
        /// Who decided.
        by: String,
    },
    /// A named step started or finished.
    Step {
        /// Step name.
        name: String,
        /// Started or finished.
        phase: StepPhase,
    },
    /// The agent replaced its state.
    StateSnapshot {
        /// The full state.
        snapshot: Value,
    },
    /// The agent changed its state by a JSON Patch (RFC 6902).
    StateDelta {
        /// The patch operations.
        delta: Value,
    },
}

impl EventKind {
    /// The new terminal state, if this event ends the task.
    pub fn terminal_state(&self) -> Option<TaskState> {
        match self {
            EventKind::Status { to, .. } if to.is_terminal() => Some(*to),
            _ => None,
        }
    }
}
