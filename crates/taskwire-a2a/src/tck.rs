//! The `tck` agent profile: the system-under-test contracts of the A2A
//! conformance kits, built on the scripted agent.
//!
//! - a2a-tck (branch 1.0-dev) drives behaviour by messageId prefixes
//!   (`tck-<name>-<8 hex>`, longest prefix first); an unknown `tck-…` id is a
//!   normal completed task.
//! - ACTS (a2a-itk, `docs/conformance/05_sdk-integration.md`, section 11.2 of
//!   the ACTS draft) names the behaviour by the prefix of the **first text
//!   part** of the task's first message (`tck-complete-task hello`); the
//!   behaviour belongs to the task, so continuations carry no prefix. An
//!   unknown `tck-…` text fails the task, so that a gap shows.
//!
//! A known messageId prefix wins over the text; any other message is handled
//! by the scripted reference agent.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use taskwire_core::agent::{AgentError, AgentInfo, Skill, TurnContext, TurnOutcome};
use taskwire_core::{Agent, Caller, CoreError, Message, Part, ScriptedAgent, TaskState};

/// Name of the tck agent.
pub const TCK_AGENT_NAME: &str = "taskwire-tck";

/// How long `tck-long-running` stays WORKING before it completes (ACTS polls
/// every 2 s and must see it non-terminal once; its reference agents wait 1 s).
pub const LONG_RUNNING: Duration = Duration::from_millis(1000);

/// How long `tck-cancel` waits for its CancelTask before it fails, so that a
/// run whose cancel never comes does not hold a worker for ever.
pub const CANCEL_WAIT: Duration = Duration::from_secs(120);

/// The chunks of `tck-stream-chunked`'s one artifact.
const CHUNKS: [&str; 3] = ["chunk one ", "chunk two ", "chunk three"];

/// What a tck messageId or first text part asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TckBehaviour {
    /// `tck-complete-task`: COMPLETED with the status message "Hello from TCK".
    CompleteTask,
    /// `tck-input-required`: INPUT_REQUIRED until a follow-up arrives.
    InputRequired,
    /// `tck-reject-task`: REJECTED.
    RejectTask,
    /// `tck-artifact-text`: an artifact with the text "Generated text content".
    ArtifactText,
    /// `tck-artifact-file`: a raw-bytes artifact part (output.txt, text/plain).
    ArtifactFile,
    /// `tck-artifact-file-url`: a url artifact part (output.txt, text/plain).
    ArtifactFileUrl,
    /// `tck-artifact-data`: a data artifact part `{"key":"value","count":42}`.
    ArtifactData,
    /// `tck-message-response`: a direct Message, no task.
    MessageResponse,
    /// `tck-stream-*` with an artifact: WORKING → artifact → COMPLETED.
    StreamArtifact(&'static str),
    /// `tck-stream-002`: COMPLETED.
    StreamComplete,
    /// ACTS `tck-stream-chunked`: WORKING → one artifact in appended chunks
    /// (the last marked `lastChunk`) → COMPLETED.
    StreamChunked,
    /// ACTS `tck-long-running`: WORKING for [`LONG_RUNNING`], then an
    /// artifact and COMPLETED.
    LongRunning,
    /// ACTS `tck-multi-turn`: INPUT_REQUIRED after every turn until a message
    /// whose text starts with `done`, then COMPLETED.
    MultiTurn,
    /// ACTS `tck-cancel`: WORKING until CancelTask (at most [`CANCEL_WAIT`]).
    Cancel,
    /// ACTS `tck-task-failure`: FAILED with an error message.
    TaskFailure,
    /// ACTS `tck-auth-required`: AUTH_REQUIRED, the status message saying
    /// which authorisation is needed.
    AuthRequired,
    /// Any other `tck-…` messageId: a normal completed task.
    Other,
    /// Any other `tck-…` first text: the task fails, naming it.
    Unknown,
}

/// Prefixes; the longest one that matches wins.
const PREFIXES: [(&str, TckBehaviour); 20] = [
    ("tck-complete-task", TckBehaviour::CompleteTask),
    ("tck-input-required", TckBehaviour::InputRequired),
    ("tck-reject-task", TckBehaviour::RejectTask),
    ("tck-artifact-text", TckBehaviour::ArtifactText),
    ("tck-artifact-file-url", TckBehaviour::ArtifactFileUrl),
    ("tck-artifact-file", TckBehaviour::ArtifactFile),
    ("tck-artifact-data", TckBehaviour::ArtifactData),
    ("tck-message-response", TckBehaviour::MessageResponse),
    (
        "tck-stream-ordering-001",
        TckBehaviour::StreamArtifact("Ordered output"),
    ),
    (
        "tck-stream-001",
        TckBehaviour::StreamArtifact("Stream hello from TCK"),
    ),
    ("tck-stream-002", TckBehaviour::StreamComplete),
    (
        "tck-stream-003",
        TckBehaviour::StreamArtifact("Stream task lifecycle"),
    ),
    (
        "tck-stream-basic",
        TckBehaviour::StreamArtifact("streamed content"),
    ),
    ("tck-stream-chunked", TckBehaviour::StreamChunked),
    ("tck-long-running", TckBehaviour::LongRunning),
    ("tck-multi-turn", TckBehaviour::MultiTurn),
    ("tck-cancel", TckBehaviour::Cancel),
    ("tck-task-failure", TckBehaviour::TaskFailure),
    ("tck-auth-required", TckBehaviour::AuthRequired),
    ("tck-client-parse", TckBehaviour::Unknown),
];

/// The known behaviour whose prefix is the longest that `s` starts with.
fn longest_prefix(s: &str) -> Option<TckBehaviour> {
    let mut best: Option<(&str, TckBehaviour)> = None;
    for (p, b) in PREFIXES {
        if s.starts_with(p) && best.is_none_or(|(bp, _)| p.len() > bp.len()) {
            best = Some((p, b));
        }
    }
    best.map(|(_, b)| b)
}

/// The behaviour a messageId selects (the a2a-tck contract); `None` for
/// non-tck ids, [`TckBehaviour::Other`] for an unknown `tck-…` id.
pub fn behaviour(message_id: &str) -> Option<TckBehaviour> {
    if !message_id.starts_with("tck-") {
        return None;
    }
    Some(longest_prefix(message_id).unwrap_or(TckBehaviour::Other))
}

/// The behaviour a first text part selects (the ACTS contract): its first
/// word's longest known prefix; `None` when it does not start with `tck-`,
/// [`TckBehaviour::Unknown`] for an unknown `tck-…` word.
pub fn text_behaviour(text: &str) -> Option<TckBehaviour> {
    let word = text.split_whitespace().next()?;
    if !word.starts_with("tck-") {
        return None;
    }
    Some(longest_prefix(word).unwrap_or(TckBehaviour::Unknown))
}

/// The behaviour of a message: a known messageId prefix first, then the first
/// text part, then an unknown `tck-…` messageId.
pub fn message_behaviour(message: &Message) -> Option<TckBehaviour> {
    let by_id = behaviour(&message.message_id);
    if let Some(b) = by_id.filter(|b| *b != TckBehaviour::Other) {
        return Some(b);
    }
    message.first_text().and_then(text_behaviour).or(by_id)
}

/// The tck agent.
#[derive(Clone, Debug, Default)]
pub struct TckAgent {
    scripted: ScriptedAgent,
}

impl TckAgent {
    /// The agent.
    pub fn new() -> Self {
        Self::default()
    }
}

fn done(text: &str) -> TurnOutcome {
    TurnOutcome::Completed {
        message: Some(Message::agent_text(text)),
    }
}

#[async_trait]
impl Agent for TckAgent {
    fn info(&self) -> AgentInfo {
        AgentInfo {
            name: TCK_AGENT_NAME.into(),
            description: "The a2a-tck system under test: behaviour chosen by tck-* messageId prefixes; other messages run the scripted reference agent.".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            skills: vec![Skill {
                task_support: taskwire_core::agent::TaskSupport::Optional,
                input_first: false,
                id: "tck".into(),
                name: "TCK behaviours".into(),
                description: "Completes, asks for input, rejects, streams or returns artifacts as the a2a-tck messageId prefix says.".into(),
                input_schema: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            }],
            parameters_schema: None,
        }
    }

    async fn direct_reply(&self, caller: &Caller, message: &Message) -> Option<Message> {
        match message_behaviour(message) {
            Some(TckBehaviour::MessageResponse) => {
                Some(Message::agent_text("Direct message response"))
            }
            Some(_) => None,
            None => self.scripted.direct_reply(caller, message).await,
        }
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let Some(first) = ctx.task().first_message() else {
            return self.scripted.run_turn(ctx).await;
        };
        let first_id = first.message_id.clone();
        let Some(b) = message_behaviour(first) else {
            return self.scripted.run_turn(ctx).await;
        };
        let follow_up = ctx.input().iter().any(|m| m.message_id != first_id);
        let outcome = match b {
            TckBehaviour::InputRequired if !follow_up => {
                ctx.request_input(
                    "tck-input",
                    "Please provide input",
                    json!({"type": "object", "properties": {"answer": {"type": "string"}}}),
                )?;
                TurnOutcome::Waiting {
                    message: Some(Message::agent_text("Please provide input")),
                }
            }
            TckBehaviour::InputRequired | TckBehaviour::CompleteTask | TckBehaviour::Other => {
                done("Hello from TCK")
            }
            TckBehaviour::RejectTask => TurnOutcome::Rejected {
                reason: "Rejected by TCK".into(),
            },
            TckBehaviour::ArtifactText => {
                ctx.emit_artifact(
                    "tck-artifact",
                    Some("text"),
                    vec![Part::text("Generated text content")],
                )
                .await?;
                done("Hello from TCK")
            }
            TckBehaviour::ArtifactFile | TckBehaviour::ArtifactFileUrl => {
                let mut p = if b == TckBehaviour::ArtifactFile {
                    Part::raw(b"Generated file content".to_vec(), "text/plain")
                } else {
                    let mut p = Part::url("https://example.com/output.txt");
                    p.media_type = Some("text/plain".into());
                    p
                };
                p.filename = Some("output.txt".into());
                ctx.emit_artifact("tck-artifact", Some("file"), vec![p])
                    .await?;
                done("Hello from TCK")
            }
            TckBehaviour::ArtifactData => {
                ctx.emit_artifact(
                    "tck-artifact",
                    Some("data"),
                    vec![Part::data(json!({"key": "value", "count": 42}))],
                )
                .await?;
                done("Hello from TCK")
            }
            TckBehaviour::StreamArtifact(text) => {
                ctx.flush().await?;
                ctx.emit_artifact("tck-stream", Some("stream"), vec![Part::text(text)])
                    .await?;
                done("Hello from TCK")
            }
            TckBehaviour::StreamChunked => {
                ctx.flush().await?;
                for (i, chunk) in CHUNKS.iter().enumerate() {
                    ctx.emit_artifact_chunk(
                        "tck-chunked",
                        Some("chunked"),
                        vec![Part::text(*chunk)],
                        i > 0,
                        i + 1 == CHUNKS.len(),
                    )
                    .await?;
                    ctx.flush().await?;
                }
                done("tck-stream-chunked ok")
            }
            TckBehaviour::LongRunning => {
                ctx.flush().await?;
                tokio::select! {
                    _ = tokio::time::sleep(LONG_RUNNING) => {}
                    _ = ctx.cancelled() => return Err(canceled()),
                }
                ctx.emit_artifact(
                    "tck-long-running",
                    Some("long-running"),
                    vec![Part::text("long running result")],
                )
                .await?;
                done("tck-long-running ok")
            }
            TckBehaviour::MultiTurn => {
                let last = ctx.input().iter().rev().find(|m| m.message_id != first_id);
                let finished = last
                    .and_then(Message::first_text)
                    .is_some_and(|t| t.trim_start().starts_with("done"));
                if finished {
                    done("tck-multi-turn ok")
                } else {
                    let turn = ctx.task().history.len();
                    ctx.request_input(
                        &format!("tck-turn-{turn}"),
                        "Send more input, or a message starting with done",
                        json!({"type": "object", "properties": {"answer": {"type": "string"}}}),
                    )?;
                    TurnOutcome::Waiting {
                        message: Some(Message::agent_text(
                            "Send more input, or a message starting with done",
                        )),
                    }
                }
            }
            TckBehaviour::Cancel => {
                ctx.flush().await?;
                tokio::select! {
                    _ = ctx.cancelled() => return Err(canceled()),
                    _ = tokio::time::sleep(CANCEL_WAIT) => TurnOutcome::Failed {
                        message: "tck-cancel: no CancelTask arrived".into(),
                    },
                }
            }
            TckBehaviour::TaskFailure => TurnOutcome::Failed {
                message: "tck-task-failure: the task failed as asked".into(),
            },
            TckBehaviour::AuthRequired => {
                if ctx.is_granted(TCK_AUTH_PROVIDER) {
                    done("tck-auth-required ok")
                } else {
                    ctx.require_auth(TCK_AUTH_PROVIDER, "tck-auth-required", None)?;
                    TurnOutcome::Waiting {
                        message: Some(Message::agent_text(
                            "tck-auth-required: an authorization of provider tck is required",
                        )),
                    }
                }
            }
            TckBehaviour::Unknown => TurnOutcome::Failed {
                message: format!(
                    "this agent implements no tck behaviour {:?}",
                    first
                        .first_text()
                        .and_then(|t| t.split_whitespace().next())
                        .unwrap_or_default()
                ),
            },
            TckBehaviour::StreamComplete | TckBehaviour::MessageResponse => done("Hello from TCK"),
        };
        Ok(outcome)
    }
}

/// The provider `tck-auth-required` waits for.
pub const TCK_AUTH_PROVIDER: &str = "tck";

fn canceled() -> AgentError {
    AgentError::Core(CoreError::Terminal {
        state: TaskState::Canceled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        assert_eq!(
            behaviour("tck-artifact-file-url-1a2b3c4d"),
            Some(TckBehaviour::ArtifactFileUrl)
        );
        assert_eq!(
            behaviour("tck-artifact-file-1a2b3c4d"),
            Some(TckBehaviour::ArtifactFile)
        );
        assert_eq!(
            behaviour("tck-stream-ordering-001-00000000"),
            Some(TckBehaviour::StreamArtifact("Ordered output"))
        );
        assert_eq!(behaviour("tck-whatever-1"), Some(TckBehaviour::Other));
        assert_eq!(behaviour("hello"), None);
    }

    #[test]
    fn the_first_text_part_names_acts_behaviours() {
        assert_eq!(
            text_behaviour("tck-complete-task hello world"),
            Some(TckBehaviour::CompleteTask)
        );
        assert_eq!(
            text_behaviour("tck-artifact-file-url please"),
            Some(TckBehaviour::ArtifactFileUrl)
        );
        assert_eq!(
            text_behaviour("tck-stream-chunked"),
            Some(TckBehaviour::StreamChunked)
        );
        assert_eq!(
            text_behaviour("tck-nothing-like-this x"),
            Some(TckBehaviour::Unknown)
        );
        assert_eq!(text_behaviour("hello tck-cancel"), None);
        // A known messageId prefix wins; an unknown one yields to the text.
        let mut m = Message::user_text("tck-cancel start");
        m.message_id = "tck-complete-task-0001".into();
        assert_eq!(message_behaviour(&m), Some(TckBehaviour::CompleteTask));
        m.message_id = "tck-zzz-0001".into();
        assert_eq!(message_behaviour(&m), Some(TckBehaviour::Cancel));
        m.message_id = "0b5e".into();
        assert_eq!(message_behaviour(&m), Some(TckBehaviour::Cancel));
        m.parts = vec![Part::text("plain")];
        assert_eq!(message_behaviour(&m), None);
    }
}
