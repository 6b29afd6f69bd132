//! [`TaskState`]: the lifecycle state of a task (the transition table between
//! them is [`crate::transition`]).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The lifecycle state of a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// Accepted and durably stored, waiting for a worker.
    Submitted,
    /// A turn is running or queued.
    Working,
    /// Waiting for input (keyed input requests, or a review by the responsible user).
    InputRequired,
    /// Waiting for the responsible user to authorise a provider.
    AuthRequired,
    /// Ended successfully.
    Completed,
    /// Ended with an error.
    Failed,
    /// Ended by cancellation.
    Canceled,
    /// Ended because the agent (or a reviewer) refused the work.
    Rejected,
}

impl TaskState {
    /// Every state, in declaration order.
    pub const ALL: [TaskState; 8] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::AuthRequired,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::Rejected,
    ];

    /// True for completed, failed, canceled and rejected.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// True for input-required and auth-required: the task waits for someone outside.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// The kebab-case name used in storage, logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::AuthRequired => "auth-required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
            TaskState::Rejected => "rejected",
        }
    }

    /// Parses the kebab-case name.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
