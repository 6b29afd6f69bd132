//! What each protocol must show for a task in a given core state, computed with
//! taskwire-vocab's mapping (never a private copy of it).
//!
//! Drivers reduce what they read to a [`View`] in the protocol's own words
//! (`TASK_STATE_INPUT_REQUIRED`, `input_required`, `idle`, `interrupt:input_required`,
//! …); [`expected`] builds a core task in the expected state, runs it through the
//! vocabulary functions each adapter uses, and reduces the result the same way.

use serde::Serialize;
use serde_json::json;
use taskwire_core::types::{Task, TaskState, TerminalCause};
use taskwire_vocab::{a2a, agui, cas, mcp};

use crate::protocol::Protocol;

/// The core facts a view is derived from: the state, why a task ended, and what an
/// interrupted task waits for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CoreExpect {
    /// The core state.
    pub state: TaskState,
    /// For failed tasks: agent fault (default) or internal error.
    pub cause: Option<TerminalCause>,
    /// For auth-required tasks: the provider waited for.
    pub provider: Option<String>,
    /// For input-required tasks: the wait is a review by the responsible user
    /// (the scripted agent's `review`), not a question.
    pub review: bool,
}

impl CoreExpect {
    /// A state with the usual cause (failed: an agent fault) and nothing else.
    pub fn state(state: TaskState) -> CoreExpect {
        CoreExpect {
            state,
            cause: None,
            provider: None,
            review: false,
        }
    }
}

/// A protocol's view of a task, reduced to what the mapping determines.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct View {
    /// The state in the protocol's words (see the module docs).
    pub state: String,
    /// The status message (text), if the protocol shows one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// The text of each artifact or output the protocol shows.
    pub artifacts: Vec<String>,
    /// The context (A2A contextId, AG-UI threadId) when the protocol shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The keys of pending input requests (MCP inputRequests keys, AG-UI interrupt
    /// ids), when the protocol shows them.
    pub pending: Vec<String>,
}

/// The core state behind an A2A state word (`TASK_STATE_…`), if the word is one.
pub fn core_state_from_a2a(word: &str) -> Option<TaskState> {
    a2a::A2aState::ALL
        .into_iter()
        .find(|s| s.name() == word)
        .and_then(|s| a2a::state_from_a2a(s).ok())
}

fn default_cause(e: &CoreExpect) -> Option<TerminalCause> {
    match e.state {
        TaskState::Completed => Some(TerminalCause::Completed),
        TaskState::Failed => Some(e.cause.unwrap_or(TerminalCause::AgentFailed)),
        TaskState::Rejected => Some(e.cause.unwrap_or(TerminalCause::Rejected)),
        TaskState::Canceled => Some(e.cause.unwrap_or(TerminalCause::Canceled)),
        _ => None,
    }
}

/// A core task in the expected state, as the reference agent leaves it: an `ask`
/// has one keyed input request, an `auth` one provider wait.
pub fn synthetic_task(e: &CoreExpect) -> Option<Task> {
    let now = "2026-01-01T00:00:00Z";
    let cause = default_cause(e);
    let error = match (e.state, cause) {
        (TaskState::Failed, Some(TerminalCause::Internal)) => {
            Some(json!({"code": "internal", "message": "internal error"}))
        }
        (TaskState::Failed, _) => Some(json!({"code": "agent_failed", "message": "failed"})),
        (TaskState::Rejected, _) => Some(json!({"code": "rejected", "message": "rejected"})),
        _ => None,
    };
    let mut input_requests = json!({});
    let mut pending_auth = json!([]);
    let mut pending_reviews = json!([]);
    match e.state {
        TaskState::InputRequired if e.review => {
            pending_reviews = json!([{
                "id": "review-0", "reviewer": "local", "summary": "approve to continue", "since": now
            }]);
        }
        TaskState::InputRequired => {
            input_requests = json!({"ask-0": {
                "key": "ask-0", "prompt": "?", "since": now,
                "schema": {"type": "object", "properties": {"answer": {"type": "string"}}}
            }});
        }
        TaskState::AuthRequired => {
            let p = e.provider.clone().unwrap_or_else(|| "provider".into());
            pending_auth = json!([{"provider": p, "since": now, "operations": ["line-0"]}]);
        }
        _ => {}
    }
    let v = json!({
        "id": "0".repeat(32),
        "contextId": "c",
        "tenant": "default",
        "owner": "local",
        "responsibleUser": "local",
        "agent": "scripted",
        "state": e.state.as_str(),
        "stateChangedAt": now,
        "terminalCause": cause,
        "error": error,
        "createdAt": now,
        "updatedAt": now,
        "version": 1,
        "lastSeq": 1,
        "history": [],
        "artifacts": [],
        "inputRequests": input_requests,
        "pendingAuth": pending_auth,
        "pendingReviews": pending_reviews,
        "turns": 1,
    });
    serde_json::from_value(v).ok()
}

/// What `protocol` must show for a task described by `e`, in its own words.
pub fn expected(protocol: Protocol, e: &CoreExpect) -> Option<String> {
    let task = synthetic_task(e)?;
    Some(match protocol {
        Protocol::A2a | Protocol::Grpc | Protocol::A2aRest => {
            a2a::state_to_a2a(task.state).name().to_string()
        }
        Protocol::Mcp => mcp_word(&task),
        Protocol::Mcp2025 => mcp::status(&task, mcp::Revision::V2025_11_25)
            .0
            .as_str()
            .to_string(),
        Protocol::Cas => cas_word(&task),
        Protocol::Agui => agui_word(&task),
    })
}

/// MCP (2026-07-28): the status, plus `+isError` for a completed call whose result
/// is an error (agent failures and rejections).
fn mcp_word(task: &Task) -> String {
    let (status, _) = mcp::status(task, mcp::Revision::V2026_07_28);
    let is_error = match mcp::outcome(task) {
        mcp::Outcome::Result(r) => r.is_error == Some(true),
        _ => false,
    };
    mcp_view_word(status.as_str(), is_error)
}

/// The MCP view word from a status and a result's `isError`.
pub fn mcp_view_word(status: &str, is_error: bool) -> String {
    if status == "completed" && is_error {
        "completed+isError".into()
    } else {
        status.to_string()
    }
}

/// CAS: `phase`, `terminal/<reason>`, plus ` [kind:provider,…]` for notifications.
fn cas_word(task: &Task) -> String {
    let (phase, _) = cas::phase(task);
    let (reason, _) = cas::terminal_reason(task);
    let notes: Vec<String> = cas::notifications(task)
        .into_iter()
        .map(|n| match n.provider {
            Some(p) => format!("{}:{p}", n.kind.as_str()),
            None => n.kind.as_str().to_string(),
        })
        .collect();
    cas_view_word(phase.as_str(), reason.map(|r| r.as_str()), &notes)
}

/// The CAS view word from a status object's fields.
pub fn cas_view_word(phase: &str, reason: Option<&str>, notes: &[String]) -> String {
    let mut w = match reason {
        Some(r) => format!("{phase}/{r}"),
        None => phase.to_string(),
    };
    if !notes.is_empty() {
        w.push_str(&format!(" [{}]", notes.join(",")));
    }
    w
}

/// AG-UI: how the task's run ends: `open`, `success`, `cancelled`,
/// `interrupt:<reason>,…` or `error:<code>`.
fn agui_word(task: &Task) -> String {
    let (end, _) = agui::run_end(task.state, task.terminal_cause, task.error.as_ref());
    match end {
        agui::RunEnd::Open => "open".into(),
        agui::RunEnd::Completed => "success".into(),
        agui::RunEnd::Cancelled => "cancelled".into(),
        agui::RunEnd::Error { code, .. } => format!("error:{code}"),
        agui::RunEnd::Interrupted => {
            let (ints, _) = agui::interrupts(task);
            let reasons: Vec<&str> = ints.iter().map(|i| i.reason).collect();
            agui_interrupt_word(&reasons)
        }
    }
}

/// The AG-UI view word of an interrupt outcome with these reasons.
pub fn agui_interrupt_word(reasons: &[&str]) -> String {
    format!("interrupt:{}", reasons.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(state: TaskState) -> CoreExpect {
        CoreExpect::state(state)
    }

    #[test]
    fn synthetic_tasks_build_for_every_state() {
        for s in TaskState::ALL {
            assert!(synthetic_task(&e(s)).is_some(), "{s}");
        }
    }

    #[test]
    fn the_mapping_gives_the_documented_words() {
        use Protocol::*;
        let w = |p, s| expected(p, &e(s)).unwrap_or_default();
        assert_eq!(
            w(A2a, TaskState::InputRequired),
            "TASK_STATE_INPUT_REQUIRED"
        );
        assert_eq!(w(Mcp, TaskState::InputRequired), "input_required");
        assert_eq!(w(Cas, TaskState::InputRequired), "idle");
        assert_eq!(
            w(Agui, TaskState::InputRequired),
            "interrupt:input_required"
        );
        assert_eq!(w(Mcp, TaskState::Completed), "completed");
        assert_eq!(w(Mcp, TaskState::Failed), "completed+isError");
        assert_eq!(w(Mcp2025, TaskState::InputRequired), "input_required");
        assert_eq!(w(Mcp2025, TaskState::AuthRequired), "input_required");
        assert_eq!(w(Mcp2025, TaskState::Failed), "failed");
        assert_eq!(w(Mcp2025, TaskState::Rejected), "failed");
        assert_eq!(w(Mcp2025, TaskState::Canceled), "cancelled");
        assert_eq!(w(Mcp2025, TaskState::Submitted), "working");
        assert_eq!(w(Cas, TaskState::Canceled), "terminal/completed");
        assert_eq!(w(Agui, TaskState::Canceled), "cancelled");
        assert_eq!(w(Agui, TaskState::Working), "open");
        assert_eq!(w(Agui, TaskState::Failed), "error:agent_failed");
        let auth = CoreExpect {
            state: TaskState::AuthRequired,
            cause: None,
            provider: Some("github".into()),
            review: false,
        };
        assert_eq!(
            expected(Cas, &auth).as_deref(),
            Some("processing [user_auth_required:github]")
        );
        assert_eq!(expected(Mcp, &auth).as_deref(), Some("input_required"));
        let review = CoreExpect {
            review: true,
            ..e(TaskState::InputRequired)
        };
        assert_eq!(
            w(A2a, TaskState::InputRequired),
            expected(A2a, &review).unwrap_or_default()
        );
        assert_eq!(
            expected(Cas, &review).as_deref(),
            Some("processing [review_required]")
        );
        assert_eq!(
            expected(Agui, &review).as_deref(),
            Some("interrupt:confirmation")
        );
        assert_eq!(
            core_state_from_a2a("TASK_STATE_AUTH_REQUIRED"),
            Some(TaskState::AuthRequired)
        );
        assert_eq!(core_state_from_a2a("nope"), None);
    }
}
