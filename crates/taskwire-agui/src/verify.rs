//! A producer-side verifier: the run-lifecycle MUSTs of the AG-UI 1.0 run
//! specification and the balance rules of the TypeScript client's `verifyEvents`,
//! plus the field constraints of the 1.0 schemas that a typed producer can still
//! get wrong (empty text deltas, non-object activity content, malformed patches,
//! empty interrupt lists).
//!
//! Every stream the adapter emits in tests is fed through it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::wire::{Event, EventBody, Outcome};

/// Where a stream stands between runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing received yet.
    Start,
    /// A run is open.
    Active,
    /// The last run ended with `RUN_FINISHED`.
    Finished,
    /// The last run ended with `RUN_ERROR`.
    Errored,
}

/// A violation: which event (0-based) and what rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("event {index} ({event_type}): {rule}")]
pub struct Violation {
    /// Position of the offending event in the stream.
    pub index: usize,
    /// Its type.
    pub event_type: String,
    /// The rule it breaks.
    pub rule: String,
}

/// A streaming verifier: feed events in order with [`Verifier::push`], then call
/// [`Verifier::finish`] at the end of the stream.
#[derive(Clone, Debug)]
pub struct Verifier {
    phase: Phase,
    index: usize,
    messages: BTreeSet<String>,
    tool_calls: BTreeSet<String>,
    reasoning: BTreeSet<String>,
    steps: BTreeSet<String>,
    runs: usize,
    run_ids: BTreeMap<String, usize>,
}

impl Default for Verifier {
    fn default() -> Self {
        Self::new()
    }
}

impl Verifier {
    /// A verifier at the start of a stream.
    pub fn new() -> Self {
        Self {
            phase: Phase::Start,
            index: 0,
            messages: BTreeSet::new(),
            tool_calls: BTreeSet::new(),
            reasoning: BTreeSet::new(),
            steps: BTreeSet::new(),
            runs: 0,
            run_ids: BTreeMap::new(),
        }
    }

    /// Number of runs opened so far.
    pub fn runs(&self) -> usize {
        self.runs
    }

    fn reset_run(&mut self) {
        self.messages.clear();
        self.tool_calls.clear();
        self.reasoning.clear();
        self.steps.clear();
    }

    /// Checks the next event.
    pub fn push(&mut self, e: &Event) -> Result<(), Violation> {
        let r = self.check(&e.body);
        let index = self.index;
        self.index += 1;
        r.map_err(|rule| Violation {
            index,
            event_type: e.type_name().to_string(),
            rule,
        })
    }

    /// Checks a raw JSON frame (it must decode as an event this verifier knows).
    pub fn push_json(&mut self, v: &Value) -> Result<(), Violation> {
        match serde_json::from_value::<Event>(v.clone()) {
            Ok(e) => self.push(&e),
            Err(err) => {
                let index = self.index;
                self.index += 1;
                Err(Violation {
                    index,
                    event_type: v
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                    rule: format!("not a valid event: {err}"),
                })
            }
        }
    }

    /// Checks the end of the stream: no run may be left open.
    pub fn finish(&self) -> Result<(), Violation> {
        match self.phase {
            Phase::Active => Err(Violation {
                index: self.index,
                event_type: "end of stream".into(),
                rule: "the stream ended with a run still open".into(),
            }),
            Phase::Start => Err(Violation {
                index: 0,
                event_type: "end of stream".into(),
                rule: "the stream is empty".into(),
            }),
            _ => Ok(()),
        }
    }

    fn check(&mut self, b: &EventBody) -> Result<(), String> {
        // Run lifecycle.
        match (self.phase, b) {
            (Phase::Start, EventBody::RunStarted { .. } | EventBody::RunError { .. }) => {}
            (Phase::Start, _) => {
                return Err("the first event must be RUN_STARTED or RUN_ERROR".into())
            }
            (Phase::Active, EventBody::RunStarted { .. }) => {
                return Err("RUN_STARTED while a run is still active".into())
            }
            (Phase::Finished, EventBody::RunStarted { .. } | EventBody::RunError { .. }) => {}
            (Phase::Finished, _) => {
                return Err("after RUN_FINISHED only RUN_STARTED or RUN_ERROR may follow".into())
            }
            (Phase::Errored, EventBody::RunStarted { .. }) => {}
            (Phase::Errored, _) => return Err("after RUN_ERROR only RUN_STARTED may follow".into()),
            (Phase::Active, _) => {}
        }
        match b {
            EventBody::RunStarted {
                thread_id,
                run_id,
                protocol_version,
                ..
            } => {
                if thread_id.is_empty() || run_id.is_empty() {
                    return Err("threadId and runId must not be empty".into());
                }
                if protocol_version.as_deref() != Some(taskwire_vocab::agui::PROTOCOL_VERSION) {
                    return Err("RUN_STARTED must declare protocolVersion 1.0".into());
                }
                self.reset_run();
                self.runs += 1;
                *self.run_ids.entry(run_id.clone()).or_default() += 1;
                self.phase = Phase::Active;
            }
            EventBody::RunFinished { outcome, .. } => {
                if let Some(s) = self.steps.first() {
                    return Err(format!("RUN_FINISHED while step {s:?} is still active"));
                }
                if let Some(m) = self.messages.first() {
                    return Err(format!(
                        "RUN_FINISHED while text message {m:?} is still active"
                    ));
                }
                if let Some(t) = self.tool_calls.first() {
                    return Err(format!(
                        "RUN_FINISHED while tool call {t:?} is still active"
                    ));
                }
                if let Some(m) = self.reasoning.first() {
                    return Err(format!(
                        "RUN_FINISHED while reasoning message {m:?} is still active"
                    ));
                }
                if let Some(Outcome::Interrupt { interrupts }) = outcome {
                    if interrupts.is_empty() {
                        return Err("an interrupt outcome needs at least one interrupt".into());
                    }
                    let mut ids = BTreeSet::new();
                    for i in interrupts {
                        if i.id.is_empty() || i.reason.is_empty() {
                            return Err("an interrupt needs an id and a reason".into());
                        }
                        if !ids.insert(i.id.as_str()) {
                            return Err(format!("duplicate interrupt id {:?}", i.id));
                        }
                        if i.response_schema.as_ref().is_some_and(|s| !s.is_object()) {
                            return Err("responseSchema must be an object".into());
                        }
                        if i.expires_at
                            .as_deref()
                            .is_some_and(|t| chrono::DateTime::parse_from_rfc3339(t).is_err())
                        {
                            return Err("expiresAt must be an RFC 3339 time".into());
                        }
                    }
                }
                self.phase = Phase::Finished;
            }
            EventBody::RunError { message, .. } => {
                if message.is_empty() {
                    return Err("RUN_ERROR needs a message".into());
                }
                self.reset_run();
                self.phase = Phase::Errored;
            }
            EventBody::StepStarted { step_name } => {
                if !self.steps.insert(step_name.clone()) {
                    return Err(format!("step {step_name:?} is already active"));
                }
            }
            EventBody::StepFinished { step_name } => {
                if !self.steps.remove(step_name) {
                    return Err(format!("step {step_name:?} was not started"));
                }
            }
            EventBody::TextMessageStart { message_id, role } => {
                if let Some(r) = role {
                    if !["developer", "system", "assistant", "user"].contains(&r.as_str()) {
                        return Err(format!("text message role {r:?} is not allowed"));
                    }
                }
                if !self.messages.insert(message_id.clone()) {
                    return Err(format!(
                        "text message {message_id:?} is already in progress"
                    ));
                }
            }
            EventBody::TextMessageContent { message_id, delta } => {
                if !self.messages.contains(message_id) {
                    return Err(format!("no active text message {message_id:?}"));
                }
                if delta.is_empty() {
                    return Err("a text delta must not be empty".into());
                }
            }
            EventBody::TextMessageEnd { message_id } => {
                if !self.messages.remove(message_id) {
                    return Err(format!("no active text message {message_id:?}"));
                }
            }
            EventBody::ToolCallStart { tool_call_id, .. } => {
                if !self.tool_calls.insert(tool_call_id.clone()) {
                    return Err(format!("tool call {tool_call_id:?} is already in progress"));
                }
            }
            EventBody::ToolCallArgs { tool_call_id, .. } => {
                if !self.tool_calls.contains(tool_call_id) {
                    return Err(format!("no active tool call {tool_call_id:?}"));
                }
            }
            EventBody::ToolCallEnd { tool_call_id } => {
                if !self.tool_calls.remove(tool_call_id) {
                    return Err(format!("no active tool call {tool_call_id:?}"));
                }
            }
            EventBody::ReasoningMessageStart { message_id } => {
                if !self.reasoning.insert(message_id.clone()) {
                    return Err(format!(
                        "reasoning message {message_id:?} is already in progress"
                    ));
                }
            }
            EventBody::ReasoningMessageContent { message_id, .. } => {
                if !self.reasoning.contains(message_id) {
                    return Err(format!("no active reasoning message {message_id:?}"));
                }
            }
            EventBody::ReasoningMessageEnd { message_id } => {
                if !self.reasoning.remove(message_id) {
                    return Err(format!("no active reasoning message {message_id:?}"));
                }
            }
            EventBody::StateSnapshot { .. } => {}
            EventBody::StateDelta { delta } => check_patch(delta)?,
            EventBody::MessagesSnapshot { messages } => {
                for m in messages {
                    let id = m.get("id").and_then(Value::as_str);
                    let role = m.get("role").and_then(Value::as_str);
                    if id.is_none() || role.is_none() {
                        return Err("every snapshot message needs an id and a role".into());
                    }
                    if role == Some(crate::wire::role::ACTIVITY)
                        && !m.get("content").is_some_and(Value::is_object)
                    {
                        return Err("an activity message's content must be an object".into());
                    }
                }
            }
            EventBody::ActivitySnapshot { content, .. } => {
                if !content.is_object() {
                    return Err("ACTIVITY_SNAPSHOT content must be an object".into());
                }
            }
            EventBody::ActivityDelta { patch, .. } => check_patch(patch)?,
            EventBody::Custom { name, .. } => {
                if name.is_empty() {
                    return Err("CUSTOM needs a name".into());
                }
            }
        }
        Ok(())
    }
}

fn check_patch(p: &Value) -> Result<(), String> {
    serde_json::from_value::<json_patch::Patch>(p.clone())
        .map(|_| ())
        .map_err(|e| format!("not an RFC 6902 JSON Patch: {e}"))
}

/// Verifies a whole stream.
pub fn verify_all<'a>(events: impl IntoIterator<Item = &'a Event>) -> Result<usize, Violation> {
    let mut v = Verifier::new();
    for e in events {
        v.push(e)?;
    }
    v.finish()?;
    Ok(v.runs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Interrupt;

    fn ev(b: EventBody) -> Event {
        Event::new(b)
    }
    fn started(run: &str) -> Event {
        ev(EventBody::RunStarted {
            thread_id: "t".into(),
            run_id: run.into(),
            protocol_version: Some("1.0".into()),
            parent_run_id: None,
        })
    }
    fn finished() -> Event {
        ev(EventBody::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: None,
        })
    }
    fn error() -> Event {
        ev(EventBody::RunError {
            message: "x".into(),
            code: None,
        })
    }
    fn step(start: bool) -> Event {
        let step_name = "s".to_string();
        ev(if start {
            EventBody::StepStarted { step_name }
        } else {
            EventBody::StepFinished { step_name }
        })
    }
    fn text_start() -> Event {
        ev(EventBody::TextMessageStart {
            message_id: "m".into(),
            role: Some("assistant".into()),
        })
    }

    #[test]
    fn valid_streams_pass() {
        assert_eq!(verify_all(&[started("a"), finished()]).unwrap(), 1);
        assert_eq!(verify_all(&[error()]).unwrap(), 0);
        assert_eq!(
            verify_all(&[
                started("a"),
                finished(),
                started("b"),
                error(),
                started("c"),
                finished()
            ])
            .unwrap(),
            3
        );
        assert!(verify_all(&[started("a"), finished(), error()]).is_ok());
        assert!(verify_all(&[started("a"), step(true), step(false), finished()]).is_ok());
        assert!(verify_all(&[started("a"), text_start(), error()]).is_ok());
    }

    #[test]
    fn lifecycle_violations_are_caught() {
        assert!(verify_all(&[finished()]).is_err());
        assert!(verify_all(&[step(true)]).is_err());
        assert!(verify_all(&[started("a"), started("b")]).is_err());
        assert!(verify_all(&[started("a"), finished(), step(true)]).is_err());
        assert!(verify_all(&[started("a"), error(), error()]).is_err());
        assert!(verify_all(&[started("a"), error(), finished()]).is_err());
        assert!(verify_all(&[started("a")]).is_err());
        assert!(verify_all(&[]).is_err());
    }

    #[test]
    fn balance_violations_are_caught() {
        assert!(verify_all(&[started("a"), step(true), finished()]).is_err());
        assert!(verify_all(&[started("a"), step(false), finished()]).is_err());
        assert!(verify_all(&[started("a"), step(true), step(true)]).is_err());
        assert!(verify_all(&[started("a"), text_start(), finished()]).is_err());
        assert!(verify_all(&[started("a"), text_start(), text_start()]).is_err());
        let empty_delta = ev(EventBody::TextMessageContent {
            message_id: "m".into(),
            delta: String::new(),
        });
        assert!(verify_all(&[started("a"), text_start(), empty_delta]).is_err());
        // A new run starts with nothing open.
        assert!(verify_all(&[
            started("a"),
            step(true),
            error(),
            started("b"),
            step(true),
            step(false),
            finished()
        ])
        .is_ok());
    }

    #[test]
    fn field_rules_are_caught() {
        let empty = ev(EventBody::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: Some(Outcome::Interrupt { interrupts: vec![] }),
        });
        assert!(verify_all(&[started("a"), empty]).is_err());
        let i = Interrupt {
            id: "x".into(),
            reason: "input_required".into(),
            message: None,
            response_schema: None,
            expires_at: Some("tomorrow".into()),
            metadata: None,
        };
        let bad_time = ev(EventBody::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: Some(Outcome::Interrupt {
                interrupts: vec![i],
            }),
        });
        assert!(verify_all(&[started("a"), bad_time]).is_err());
        let bad_patch = ev(EventBody::StateDelta {
            delta: serde_json::json!({"op": "add"}),
        });
        assert!(verify_all(&[started("a"), bad_patch]).is_err());
        let no_version = ev(EventBody::RunStarted {
            thread_id: "t".into(),
            run_id: "r".into(),
            protocol_version: None,
            parent_run_id: None,
        });
        assert!(verify_all(&[no_version]).is_err());
    }
}
