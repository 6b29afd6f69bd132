//! The reference agent. Its behaviour is chosen by directives, one per line of the
//! first text part, run in order (see docs/architecture.md, "The reference
//! agent's directives"):
//! `ask <question>`, `auth <provider>`, `review`, `fail <message>`,
//! `reject <reason>`, `crash`, `sleep <ms>`, `stream <n>`, `steps <n>`, `message`;
//! anything else is echoed back as an artifact named `echo`.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use crate::agent::{Agent, AgentError, AgentInfo, Skill, TurnContext, TurnOutcome};
use crate::error::CoreError;
use crate::types::{Caller, InputAction, Message, Part, TaskState};

/// Name of the scripted agent.
pub const SCRIPTED_AGENT_NAME: &str = "scripted";
/// The tool / skill id the scripted agent offers.
pub const SCRIPTED_SKILL: &str = "run_script";
/// Upper bound of `sleep`, `stream` and `steps` arguments, to keep scripts bounded.
const MAX_SLEEP_MS: u64 = 600_000;
const MAX_COUNT: u64 = 10_000;

/// One directive line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Directive {
    /// `ask <question>`
    Ask(String),
    /// `auth <provider>`
    Auth(String),
    /// `review`
    Review,
    /// `fail <message>`
    Fail(String),
    /// `reject <reason>`
    Reject(String),
    /// `crash`
    Crash,
    /// `sleep <ms>`
    Sleep(u64),
    /// `stream <n>`
    Stream(u64),
    /// `steps <n>`
    Steps(u64),
    /// `message`
    Message,
    /// Anything else: echoed.
    Echo(String),
}

impl Directive {
    /// Parses one line.
    pub fn parse(line: &str) -> Self {
        let line = line.trim();
        let (word, rest) = match line.split_once(char::is_whitespace) {
            Some((w, r)) => (w, r.trim()),
            None => (line, ""),
        };
        let count = |s: &str, max: u64| s.parse::<u64>().ok().filter(|n| *n <= max);
        match (word, rest) {
            ("ask", q) if !q.is_empty() => Directive::Ask(q.to_string()),
            ("auth", p) if !p.is_empty() && !p.contains(char::is_whitespace) => {
                Directive::Auth(p.to_string())
            }
            ("review", "") => Directive::Review,
            ("fail", m) if !m.is_empty() => Directive::Fail(m.to_string()),
            ("reject", r) if !r.is_empty() => Directive::Reject(r.to_string()),
            ("crash", "") => Directive::Crash,
            ("message", "") => Directive::Message,
            ("sleep", n) => match count(n, MAX_SLEEP_MS) {
                Some(ms) => Directive::Sleep(ms),
                None => Directive::Echo(line.to_string()),
            },
            ("stream", n) => match count(n, MAX_COUNT).filter(|n| *n > 0) {
                Some(n) => Directive::Stream(n),
                None => Directive::Echo(line.to_string()),
            },
            ("steps", n) => match count(n, MAX_COUNT) {
                Some(n) => Directive::Steps(n),
                None => Directive::Echo(line.to_string()),
            },
            _ => Directive::Echo(line.to_string()),
        }
    }
}

/// Parses a script: the non-empty lines of the text. A text with no directive at all
/// is one echo of the whole text.
pub fn parse_script(text: &str) -> Vec<Directive> {
    let ds: Vec<Directive> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(Directive::parse)
        .collect();
    if ds.iter().all(|d| matches!(d, Directive::Echo(_))) {
        vec![Directive::Echo(text.to_string())]
    } else {
        ds
    }
}

/// The scripted reference agent.
#[derive(Clone, Debug, Default)]
pub struct ScriptedAgent;

impl ScriptedAgent {
    /// The agent.
    pub fn new() -> Self {
        Self
    }
}

/// The key of the input request raised by the `ask` on line `i`.
pub fn ask_key(i: usize) -> String {
    format!("ask-{i}")
}

/// The schema of an `ask` answer: one string property `answer`.
pub fn ask_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "Your answer"}},
        "required": ["answer"]
    })
}

fn save_pc(pc: usize) -> Value {
    json!({ "scripted": { "pc": pc } })
}

fn canceled() -> AgentError {
    AgentError::Core(CoreError::Terminal {
        state: TaskState::Canceled,
    })
}

#[async_trait]
impl Agent for ScriptedAgent {
    fn info(&self) -> AgentInfo {
        AgentInfo {
            name: SCRIPTED_AGENT_NAME.into(),
            description: "Reference agent driven by directives, one per line: ask, auth, review, fail, reject, crash, sleep, stream, steps, message; anything else is echoed.".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            skills: vec![Skill {
                task_support: crate::agent::TaskSupport::Optional,
                input_first: false,
                id: SCRIPTED_SKILL.into(),
                name: "Run a script".into(),
                description: "Runs the directives in `text`, one per line; plain text is echoed back as an artifact named echo.".into(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Directives, one per line, or any text to echo"}},
                    "required": ["text"]
                }),
            }],
            parameters_schema: None,
        }
    }

    async fn direct_reply(&self, _caller: &Caller, message: &Message) -> Option<Message> {
        let text = message.first_text()?;
        let first = text.lines().find(|l| !l.trim().is_empty())?;
        (Directive::parse(first) == Directive::Message)
            .then(|| Message::agent_text(text.to_string()))
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let task = ctx.task();
        let first = task.first_message().cloned();
        let script_text = first
            .as_ref()
            .and_then(|m| m.first_text().map(str::to_string))
            .unwrap_or_default();
        let pc_saved = ctx
            .state()
            .and_then(|s| s.pointer("/scripted/pc"))
            .and_then(Value::as_u64)
            .map(|n| n as usize);
        let first_id = first.as_ref().map(|m| m.message_id.clone());
        let sees_first = ctx
            .input()
            .iter()
            .any(|m| Some(&m.message_id) == first_id.as_ref());
        let later_input: Vec<&Message> = ctx
            .input()
            .iter()
            .filter(|m| Some(&m.message_id) != first_id.as_ref())
            .collect();

        if pc_saved.is_none() && !sees_first {
            // The script finished in an earlier turn; this turn handles input that
            // was queued meanwhile: each message is echoed, in arrival order.
            for (n, m) in later_input.iter().enumerate() {
                let id = format!("echo-{}-{}", task.turns, n + 1);
                ctx.emit_artifact(&id, Some("echo"), vec![Part::text(m.text())])
                    .await?;
            }
            return Ok(TurnOutcome::Completed { message: None });
        }

        let script = parse_script(&script_text);
        let mut reply_text = None;
        let start = pc_saved.unwrap_or(0);
        let mut later = later_input.into_iter();
        for (i, d) in script.iter().enumerate().skip(start) {
            match d {
                Directive::Ask(q) => {
                    let key = ask_key(i);
                    let answer = match ctx.answers().get(&key) {
                        Some(r) if r.action == InputAction::Accept => {
                            r.content.as_ref().and_then(|c| c.get("answer")).map(|a| {
                                a.as_str()
                                    .map(str::to_string)
                                    .unwrap_or_else(|| a.to_string())
                            })
                        }
                        Some(_) => {
                            return Ok(TurnOutcome::Rejected {
                                reason: "input declined".into(),
                            })
                        }
                        None => later.next().map(|m| m.text()),
                    };
                    match answer {
                        Some(a) => {
                            ctx.emit_artifact(
                                &format!("answer-{i}"),
                                Some("answer"),
                                vec![Part::text(format!("answer: {a}"))],
                            )
                            .await?;
                        }
                        None => {
                            ctx.request_input(&key, q, ask_schema())?;
                            ctx.set_state(save_pc(i)).await?;
                            return Ok(TurnOutcome::Waiting {
                                message: Some(Message::agent_text(q.clone())),
                            });
                        }
                    }
                }
                Directive::Auth(p) => {
                    if !ctx.is_granted(p) {
                        ctx.require_auth(p, &format!("line-{i}"), None)?;
                        ctx.set_state(save_pc(i)).await?;
                        return Ok(TurnOutcome::Waiting {
                            message: Some(Message::agent_text(format!(
                                "authorization required: {p}"
                            ))),
                        });
                    }
                }
                Directive::Review => {
                    let id = format!("review-{i}");
                    match ctx.review_decision(&id) {
                        Some(crate::types::ReviewDecision::Approve) => {}
                        Some(crate::types::ReviewDecision::Reject) => {
                            return Ok(TurnOutcome::Rejected {
                                reason: "rejected by reviewer".into(),
                            })
                        }
                        None => {
                            ctx.request_review(&id, None, "approve to continue")?;
                            ctx.set_state(save_pc(i)).await?;
                            return Ok(TurnOutcome::Waiting {
                                message: Some(Message::agent_text("review required")),
                            });
                        }
                    }
                }
                Directive::Fail(m) => return Ok(TurnOutcome::Failed { message: m.clone() }),
                Directive::Reject(r) => return Ok(TurnOutcome::Rejected { reason: r.clone() }),
                Directive::Crash => return Err(AgentError::Internal("scripted crash".into())),
                Directive::Sleep(ms) => {
                    ctx.flush().await?;
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(*ms)) => {}
                        _ = ctx.cancelled() => return Err(canceled()),
                    }
                }
                Directive::Stream(n) => {
                    for k in 0..*n {
                        if ctx.is_cancelled() {
                            return Err(canceled());
                        }
                        ctx.emit_artifact_chunk(
                            &format!("stream-{i}"),
                            Some("stream"),
                            vec![Part::text(format!("chunk {} of {n}\n", k + 1))],
                            k > 0,
                            k + 1 == *n,
                        )
                        .await?;
                        tokio::task::yield_now().await;
                    }
                }
                Directive::Steps(n) => {
                    for k in 1..=*n {
                        let name = format!("step-{k}");
                        ctx.step_started(&name).await?;
                        ctx.step_finished(&name).await?;
                    }
                }
                Directive::Message => reply_text = first.as_ref().map(Message::text),
                Directive::Echo(t) => {
                    let id = if script.len() == 1 {
                        "echo".to_string()
                    } else {
                        format!("echo-{i}")
                    };
                    ctx.emit_artifact(&id, Some("echo"), vec![Part::text(t.clone())])
                        .await?;
                }
            }
        }
        if pc_saved.is_some() {
            ctx.set_state(save_pc(script.len())).await?;
        }
        Ok(TurnOutcome::Completed {
            message: reply_text.map(Message::agent_text),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_parse() {
        assert_eq!(
            Directive::parse("ask what?"),
            Directive::Ask("what?".into())
        );
        assert_eq!(
            Directive::parse("auth github"),
            Directive::Auth("github".into())
        );
        assert_eq!(Directive::parse("review"), Directive::Review);
        assert_eq!(
            Directive::parse("fail boom"),
            Directive::Fail("boom".into())
        );
        assert_eq!(
            Directive::parse("reject no"),
            Directive::Reject("no".into())
        );
        assert_eq!(Directive::parse("crash"), Directive::Crash);
        assert_eq!(Directive::parse("sleep 20"), Directive::Sleep(20));
        assert_eq!(Directive::parse("stream 3"), Directive::Stream(3));
        assert_eq!(Directive::parse("steps 2"), Directive::Steps(2));
        assert_eq!(Directive::parse("message"), Directive::Message);
        assert_eq!(
            Directive::parse("sleep forever"),
            Directive::Echo("sleep forever".into())
        );
        assert_eq!(Directive::parse("hello"), Directive::Echo("hello".into()));
    }

    #[test]
    fn plain_text_is_one_echo() {
        assert_eq!(
            parse_script("hello\nworld"),
            vec![Directive::Echo("hello\nworld".into())]
        );
        assert_eq!(
            parse_script("steps 1\nhello"),
            vec![Directive::Steps(1), Directive::Echo("hello".into())]
        );
    }
}
