//! The `tck` agent profile: the a2a-tck 1.0 system-under-test contract, built on
//! the scripted agent. The TCK drives behaviour by messageId prefixes
//! (`tck-<name>-<8 hex>`, longest prefix first); any other message is handled by
//! the scripted reference agent.

use async_trait::async_trait;
use serde_json::json;
use taskwire_core::agent::{AgentError, AgentInfo, Skill, TurnContext, TurnOutcome};
use taskwire_core::{Agent, Caller, Message, Part, ScriptedAgent};

/// Name of the tck agent.
pub const TCK_AGENT_NAME: &str = "taskwire-tck";

/// What a tck messageId asks for.
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
    /// Any other `tck-…`: a normal completed task.
    Other,
}

/// Prefixes, longest first where one is a prefix of another.
const PREFIXES: [(&str, TckBehaviour); 12] = [
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
];

/// The behaviour a messageId selects; `None` for non-tck ids.
pub fn behaviour(message_id: &str) -> Option<TckBehaviour> {
    if !message_id.starts_with("tck-") {
        return None;
    }
    let mut best: Option<(&str, TckBehaviour)> = None;
    for (p, b) in PREFIXES {
        if message_id.starts_with(p) && best.is_none_or(|(bp, _)| p.len() > bp.len()) {
            best = Some((p, b));
        }
    }
    Some(best.map_or(TckBehaviour::Other, |(_, b)| b))
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
        match behaviour(&message.message_id) {
            Some(TckBehaviour::MessageResponse) => {
                Some(Message::agent_text("Direct message response"))
            }
            Some(_) => None,
            None => self.scripted.direct_reply(caller, message).await,
        }
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let first_id = ctx
            .task()
            .first_message()
            .map(|m| m.message_id.clone())
            .unwrap_or_default();
        let Some(b) = behaviour(&first_id) else {
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
            TckBehaviour::StreamComplete | TckBehaviour::MessageResponse => done("Hello from TCK"),
        };
        Ok(outcome)
    }
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
}
