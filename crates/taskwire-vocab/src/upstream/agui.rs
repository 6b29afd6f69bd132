//! The inbound direction for AG-UI upstreams: what an upstream AG-UI agent's
//! run events (interrupts, artifact activities, run results) mean in core
//! terms, and the core's answers as resume entries.

use serde_json::{json, Map, Value};
use taskwire_core::types::{InputAction, InputResponse, Part};
use taskwire_wire::agui::{ArtifactActivity, ResumeEntry, ResumeStatus, RunResult};

use super::mcp::UpstreamAsk;
use super::upstream_input_schema;
use crate::agui::{ARTIFACT_ACTIVITY_TYPE, REASON_AUTH_REQUIRED};
use crate::Loss;

/// Lost: an AG-UI agent's state (`STATE_SNAPSHOT`, `STATE_DELTA`) is not
/// copied: the bridged task's agent state holds the upstream link.
pub const LOSS_AGUI_STATE: Loss = Loss(
    "an AG-UI upstream's shared state is not copied: the bridged task's state holds its upstream link",
);
/// Lost: tool calls an AG-UI agent asks its frontend to run are not carried.
pub const LOSS_AGUI_TOOL_CALLS: Loss = Loss(
    "frontend tool calls of an AG-UI upstream (tool_call interrupts, TOOL_CALL_* events) are not carried: such an interrupt fails the bridged task",
);
/// Lost: AG-UI has no cancel message and no resume cursor.
pub const LOSS_AGUI_CANCEL_AND_RESUME: Loss = Loss(
    "AG-UI has no cancel message and no resume cursor: a downstream cancel drops the run's stream (and calls taskwire's cancel endpoint, which other servers answer 404); a run cut by a bridge restart is re-read from its start from taskwire's run-events endpoint (what was applied before is not emitted again when the events carry SSE ids), or fails",
);
/// Lost: an AG-UI `confirmation` interrupt is a question, not a review.
pub const LOSS_AGUI_CONFIRMATION_AS_INPUT: Loss = Loss(
    "an AG-UI upstream's confirmation interrupt (a review) reaches the bridge as a form: the bridged task asks for input, not for a review",
);
/// Lost: an AG-UI agent's text messages are messages, not artifacts.
pub const LOSS_AGUI_TEXT_AS_MESSAGES: Loss = Loss(
    "an AG-UI upstream's text messages become agent messages (the last one of a completed run its final message), not artifacts; only taskwire.artifact activities and the run result become artifacts",
);

/// The artifact id of a run result that is not taskwire's [`RunResult`].
pub fn result_artifact_id(turn: u32) -> String {
    format!("agui-result-{turn}")
}

/// The artifact a `taskwire.artifact` activity carries (`None` for other
/// activity types or content that does not read as one).
pub fn artifact_of_activity(
    activity_type: &str,
    content: &Value,
) -> Option<(String, Option<String>, Vec<Part>)> {
    if activity_type != ARTIFACT_ACTIVITY_TYPE {
        return None;
    }
    let a: ArtifactActivity = serde_json::from_value(content.clone()).ok()?;
    artifact_parts(&a).map(|parts| (a.artifact_id.clone(), a.name.clone(), parts))
}

/// The core parts of an artifact activity (taskwire's own part objects).
fn artifact_parts(a: &ArtifactActivity) -> Option<Vec<Part>> {
    a.parts
        .iter()
        .map(|p| serde_json::from_value::<Part>(p.clone()).ok())
        .collect()
}

/// The artifacts of a successful `RUN_FINISHED.result`: taskwire's
/// [`RunResult`] gives its artifacts whole; any other value is one artifact
/// holding it as a data part (or its text).
pub fn artifacts_of_result(result: &Value, turn: u32) -> Vec<(String, Option<String>, Vec<Part>)> {
    if let Ok(r) = serde_json::from_value::<RunResult>(result.clone()) {
        return r
            .artifacts
            .iter()
            .filter_map(|a| {
                artifact_parts(a).map(|parts| (a.artifact_id.clone(), a.name.clone(), parts))
            })
            .collect();
    }
    let part = match result {
        Value::Null => return Vec::new(),
        Value::String(s) => Part::text(s.clone()),
        other => Part::data(other.clone()),
    };
    vec![(result_artifact_id(turn), Some("result".into()), vec![part])]
}

/// The asks of an interrupting `RUN_FINISHED`'s interrupts: a
/// `taskwire:auth_required` interrupt is a provider authorisation (its
/// metadata names the provider and URL); `tool_call` interrupts are not
/// carried ([`LOSS_AGUI_TOOL_CALLS`]); every other reason is a form with the
/// interrupt's response schema (one string `answer` without one).
pub fn asks_of_interrupts(interrupts: &[Value]) -> Vec<UpstreamAsk> {
    interrupts
        .iter()
        .filter_map(|i| {
            let id = i.get("id").and_then(Value::as_str)?.to_string();
            let reason = i.get("reason").and_then(Value::as_str).unwrap_or_default();
            let prompt = i
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("the upstream agent asks ({reason})"));
            Some(match reason {
                REASON_AUTH_REQUIRED => {
                    let md = i.get("metadata");
                    let provider = md
                        .and_then(|m| m.get("provider"))
                        .and_then(Value::as_str)
                        .unwrap_or(super::UPSTREAM_AUTH_PROVIDER)
                        .to_string();
                    let url = md
                        .and_then(|m| m.get("url"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    UpstreamAsk::Auth {
                        key: id,
                        provider,
                        prompt,
                        url,
                    }
                }
                "tool_call" => UpstreamAsk::Unsupported {
                    key: id,
                    method: "a frontend tool call",
                },
                _ => UpstreamAsk::Form {
                    key: id,
                    prompt,
                    schema: i
                        .get("responseSchema")
                        .filter(|s| s.is_object())
                        .cloned()
                        .unwrap_or_else(upstream_input_schema),
                },
            })
        })
        .collect()
}

/// The resume entry answering interrupt `id`: resolved with the accepted
/// content (an authorisation granted: an empty object), cancelled for a
/// declined or dismissed answer.
pub fn resume_entry(id: &str, answer: Option<&InputResponse>, granted: bool) -> ResumeEntry {
    let resolved = |payload: Value| ResumeEntry {
        interrupt_id: id.to_string(),
        status: ResumeStatus::Resolved.into(),
        payload: Some(payload),
        metadata: None,
    };
    match answer {
        Some(r) if r.action == InputAction::Accept => resolved(
            r.content
                .clone()
                .unwrap_or_else(|| Value::Object(Map::new())),
        ),
        Some(_) => ResumeEntry {
            interrupt_id: id.to_string(),
            status: ResumeStatus::Cancelled.into(),
            payload: None,
            metadata: None,
        },
        None if granted => resolved(json!({})),
        None => ResumeEntry {
            interrupt_id: id.to_string(),
            status: ResumeStatus::Cancelled.into(),
            payload: None,
            metadata: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_activities_and_results_become_artifacts() {
        let content = json!({"artifactId": "a1", "name": "echo", "complete": true,
            "parts": [{"kind": "text", "text": "hi"}]});
        let (id, name, parts) =
            artifact_of_activity(ARTIFACT_ACTIVITY_TYPE, &content).expect("an artifact");
        assert_eq!((id.as_str(), name.as_deref()), ("a1", Some("echo")));
        assert_eq!(parts, vec![Part::text("hi")]);
        assert_eq!(artifact_of_activity("other", &content), None);
        let plain = artifacts_of_result(&json!({"answer": 42}), 3);
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].0, "agui-result-3");
        assert!(artifacts_of_result(&Value::Null, 1).is_empty());
        let text = artifacts_of_result(&json!("done"), 1);
        assert_eq!(text[0].2[0].as_text(), Some("done"));
    }

    #[test]
    fn interrupts_become_forms_authorisations_or_refusals() {
        let asks = asks_of_interrupts(&[
            json!({"id": "t/input/ask-0", "reason": "input_required", "message": "name?",
                "responseSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}),
            json!({"id": "t/auth/github", "reason": "taskwire:auth_required", "message": "auth",
                "metadata": {"provider": "github", "url": "https://x/auth"}}),
            json!({"id": "call-1", "reason": "tool_call"}),
            json!({"id": "c", "reason": "confirmation"}),
            json!({"reason": "no id"}),
        ]);
        assert_eq!(asks.len(), 4);
        assert!(
            matches!(&asks[0], UpstreamAsk::Form { key, prompt, .. } if key == "t/input/ask-0" && prompt == "name?")
        );
        assert!(
            matches!(&asks[1], UpstreamAsk::Auth { provider, url, .. } if provider == "github" && url == "https://x/auth")
        );
        assert!(matches!(&asks[2], UpstreamAsk::Unsupported { .. }));
        assert!(
            matches!(&asks[3], UpstreamAsk::Form { schema, .. } if schema["properties"]["answer"]["type"] == "string")
        );
    }

    #[test]
    fn answers_become_resume_entries() {
        let r = resume_entry(
            "i",
            Some(&InputResponse::accept(json!({"answer": "x"}))),
            false,
        );
        assert_eq!(
            (r.status.as_str(), r.payload),
            ("resolved", Some(json!({"answer": "x"})))
        );
        let d = resume_entry(
            "i",
            Some(&InputResponse {
                action: InputAction::Decline,
                content: None,
            }),
            false,
        );
        assert_eq!(d.status, "cancelled");
        assert_eq!(resume_entry("a", None, true).payload, Some(json!({})));
        assert_eq!(resume_entry("a", None, false).status, "cancelled");
    }
}
