//! The `mcp-conformance` agent profile: the tools the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`) calls in its server scenarios,
//! each behaving as the scenario describes, run as tasks of the core like any
//! other agent's skills. A task not started by `tools/call` (A2A, AG-UI, CAS) is
//! handled by the scripted reference agent.

use std::time::Duration;

use serde_json::{json, Value};
use taskwire_core::agent::{AgentError, AgentInfo, Skill, TaskSupport, TurnContext, TurnOutcome};
use taskwire_core::async_trait;
use taskwire_core::types::{InputAction, PartContent};
use taskwire_core::{Agent, Caller, CoreError, Message, Part, ScriptedAgent, TaskState};

/// Name of the profile's agent.
pub const MCP_CONFORMANCE_AGENT_NAME: &str = "taskwire-mcp-conformance";

/// The task metadata key under which the MCP adapter records the tool called
/// (set by `tools/call`, read by this agent).
pub use taskwire_vocab::mcp::TOOL_METADATA_KEY;

/// A 1×1 red PNG.
const PNG: [u8; 69] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file holding one silent 8-bit sample at 8 kHz.
fn wav() -> Vec<u8> {
    let mut w = Vec::with_capacity(45);
    w.extend_from_slice(b"RIFF");
    w.extend_from_slice(&37u32.to_le_bytes());
    w.extend_from_slice(b"WAVEfmt ");
    w.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
    w.extend_from_slice(&1u16.to_le_bytes()); // PCM
    w.extend_from_slice(&1u16.to_le_bytes()); // mono
    w.extend_from_slice(&8000u32.to_le_bytes()); // sample rate
    w.extend_from_slice(&8000u32.to_le_bytes()); // byte rate
    w.extend_from_slice(&1u16.to_le_bytes()); // block align
    w.extend_from_slice(&8u16.to_le_bytes()); // bits per sample
    w.extend_from_slice(b"data");
    w.extend_from_slice(&1u32.to_le_bytes());
    w.push(0x80);
    w
}

/// The profile's tools: (id, description, input schema, task support).
fn tools() -> Vec<Skill> {
    let none = || json!({"type": "object", "properties": {}});
    let t = |id: &str, what: &str, schema: Value| Skill::new(id, id, what, schema);
    vec![
        t("test_simple_text", "Returns one text block.", none()),
        t("test_image_content", "Returns a 1x1 PNG image.", none()),
        t("test_audio_content", "Returns a short WAV clip.", none()),
        t(
            "test_embedded_resource",
            "Returns an embedded text resource.",
            none(),
        ),
        t(
            "test_multiple_content_types",
            "Returns text, an image and an embedded JSON resource.",
            none(),
        ),
        t(
            "test_error_handling",
            "Always fails with a tool error (isError).",
            none(),
        ),
        t(
            "test_tool_with_progress",
            "Works in three steps of about 50 ms.",
            none(),
        ),
        t(
            "test_tool_with_logging",
            "Returns text; sends no logs.",
            none(),
        ),
        t("test_logging_tool", "Returns text; sends no logs.", none()),
        t(
            "test_missing_capability",
            "Asks the client's model for a completion (needs the sampling capability).",
            none(),
        ),
        t(
            "test_sampling",
            "Asks the client's model to answer `prompt`.",
            json!({"type": "object", "properties": {"prompt": {"type": "string"}},
                "required": ["prompt"]}),
        ),
        t(
            "test_input_required_result_sampling",
            "Asks the client's model for the capital of France.",
            none(),
        ),
        t(
            "test_input_required_result_list_roots",
            "Asks for the client's roots.",
            none(),
        ),
        t(
            "test_input_required_result_multiple_inputs",
            "Asks for a name, a completion and the roots at once.",
            none(),
        ),
        t(
            "test_input_required_result_capabilities",
            "Asks through elicitation and sampling; a client sees what it declared.",
            none(),
        ),
        t(
            "test_streaming_elicitation",
            "Asks the client for input.",
            none(),
        ),
        t(
            "greet",
            "Returns Hello, {name}! at once (never a task).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        )
        .with_task_support(TaskSupport::Forbidden),
        t(
            "slow_compute",
            "Sleeps `seconds` seconds, then returns a result.",
            json!({"type": "object", "properties": {
                "seconds": {"type": "number"}, "label": {"type": "string"}}}),
        ),
        t(
            "failing_job",
            "Fails with a tool error after about a second (task required).",
            none(),
        )
        .with_task_support(TaskSupport::Required),
        t(
            "protocol_error_job",
            "Fails with an internal error (the task fails).",
            none(),
        ),
        t(
            "confirm_delete",
            "Asks for a confirmation, then completes.",
            none(),
        ),
        t(
            "multi_input",
            "Asks two questions at once, then completes.",
            none(),
        ),
        t(
            "test_tool_with_task",
            "Asks for user_name, then greets (task required; the input comes before the task).",
            none(),
        )
        .with_task_support(TaskSupport::Required)
        .with_input_first(),
        t(
            "test_input_required_result_elicitation",
            "Asks for a name, then greets.",
            none(),
        ),
        t(
            "test_input_required_result_request_state",
            "Asks for a confirmation, then answers state-ok.",
            none(),
        ),
        t(
            "test_input_required_result_multi_round",
            "Asks for a name, then a colour, then completes.",
            none(),
        ),
        t(
            "test_input_required_result_tampered_state",
            "Asks for a confirmation, then completes.",
            none(),
        ),
        t(
            "test_elicitation",
            "Asks the client for a username and an email, showing `message`.",
            json!({"type": "object", "properties": {"message": {"type": "string"}},
                "required": ["message"]}),
        ),
        t(
            "test_elicitation_sep1034_defaults",
            "Asks for a form whose fields all have defaults (SEP-1034).",
            none(),
        ),
        t(
            "test_elicitation_sep1330_enums",
            "Asks for a form with the five enum forms (SEP-1330).",
            none(),
        ),
        t(
            "test_header_param",
            "Echoes `region`, which clients mirror into the Mcp-Param-Region header.",
            json!({"type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
                "required": ["region"]}),
        ),
        t(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json_schema_2020_12(),
        ),
    ]
}

/// The input schema the suite's `json-schema-2020-12` scenario expects
/// preserved in the listing.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "addressDef", "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

fn string_schema(field: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]})
}

fn bool_schema(field: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "boolean"}}, "required": [field]})
}

/// The `mcp-conformance` agent.
#[derive(Debug, Default)]
pub struct McpConformanceAgent {
    scripted: ScriptedAgent,
}

impl McpConformanceAgent {
    /// The agent.
    pub fn new() -> Self {
        Self::default()
    }
}

/// What a turn asks for, in order: each `(key, prompt, schema)` not yet
/// answered is requested; once all are, the answers are returned.
enum Asks<'a> {
    Done(Vec<Option<&'a Value>>),
    Waiting,
}

fn ask_all<'a>(ctx: &'a TurnContext, asks: &[(&str, &str, Value)]) -> Result<Asks<'a>, AgentError> {
    let mut missing = false;
    let mut got = Vec::new();
    for (key, prompt, schema) in asks {
        match ctx.answers().get(*key) {
            Some(r) if r.action == InputAction::Accept => got.push(r.content.as_ref()),
            Some(_) => got.push(None),
            None => {
                ctx.request_input(key, prompt, schema.clone())?;
                missing = true;
            }
        }
    }
    Ok(if missing {
        Asks::Waiting
    } else {
        Asks::Done(got)
    })
}

fn field(v: Option<&Value>, name: &str) -> String {
    match v.and_then(|c| c.get(name)) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "(declined)".into(),
    }
}

fn waiting() -> TurnOutcome {
    TurnOutcome::Waiting { message: None }
}

async fn reply(ctx: &TurnContext, parts: Vec<Part>) -> Result<TurnOutcome, AgentError> {
    ctx.emit_artifact("result", None, parts).await?;
    Ok(TurnOutcome::Completed { message: None })
}

async fn sleep_or_cancel(ctx: &TurnContext, d: Duration) -> Result<(), AgentError> {
    ctx.flush().await?;
    tokio::select! {
        _ = tokio::time::sleep(d) => Ok(()),
        _ = ctx.cancelled() => Err(AgentError::Core(CoreError::Terminal { state: TaskState::Canceled })),
    }
}

/// The text of a sampling answer (a CreateMessageResult).
fn sampled_text(content: Option<&Value>) -> String {
    content
        .and_then(|c| c.get("content"))
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("(no text)")
        .to_string()
}

/// Asks one form (key `form`), then reports the answer as
/// `<label>: action=<action>, content=<content>`.
async fn form_then_report(
    ctx: &TurnContext,
    prompt: &str,
    schema: Value,
    label: &str,
) -> Result<TurnOutcome, AgentError> {
    let Some(r) = ctx.answers().get("form") else {
        ctx.request_input("form", prompt, schema)?;
        return Ok(waiting());
    };
    let action = match r.action {
        InputAction::Accept => "accept",
        InputAction::Decline => "decline",
        InputAction::Cancel => "cancel",
    };
    let content = r.content.clone().unwrap_or(Value::Null);
    reply(
        ctx,
        vec![Part::text(format!(
            "{label}: action={action}, content={content}"
        ))],
    )
    .await
}

/// The `tools/call` arguments the first message carries (its data part).
fn arguments(ctx: &TurnContext) -> Value {
    ctx.task()
        .history
        .first()
        .and_then(|m| {
            m.parts.iter().find_map(|p| match &p.content {
                PartContent::Data { data } => Some(data.clone()),
                _ => None,
            })
        })
        .unwrap_or(Value::Null)
}

#[async_trait]
impl Agent for McpConformanceAgent {
    fn info(&self) -> AgentInfo {
        let mut info = AgentInfo::new(
            MCP_CONFORMANCE_AGENT_NAME,
            "The fixture tools of the official MCP conformance suite's server scenarios.",
        );
        info.skills = tools();
        info
    }

    async fn run_turn(&self, ctx: &TurnContext) -> Result<TurnOutcome, AgentError> {
        let tool = ctx
            .task()
            .metadata
            .get(TOOL_METADATA_KEY)
            .and_then(Value::as_str)
            .map(str::to_string);
        let Some(tool) = tool else {
            return self.scripted.run_turn(ctx).await;
        };
        let args = arguments(ctx);
        match tool.as_str() {
            "test_simple_text" => {
                reply(
                    ctx,
                    vec![Part::text("This is a simple text response for testing.")],
                )
                .await
            }
            "test_image_content" => reply(ctx, vec![Part::raw(PNG.to_vec(), "image/png")]).await,
            "test_audio_content" => reply(ctx, vec![Part::raw(wav(), "audio/wav")]).await,
            "test_embedded_resource" => {
                reply(
                    ctx,
                    vec![Part::raw(
                        b"This is an embedded resource content.".to_vec(),
                        "text/plain",
                    )],
                )
                .await
            }
            "test_multiple_content_types" => {
                reply(
                    ctx,
                    vec![
                        Part::text("Multiple content types test:"),
                        Part::raw(PNG.to_vec(), "image/png"),
                        Part::raw(
                            br#"{"test":"data","value":123}"#.to_vec(),
                            "application/json",
                        ),
                    ],
                )
                .await
            }
            "test_error_handling" => Ok(TurnOutcome::Failed {
                message: "This tool intentionally returns an error for testing".into(),
            }),
            "test_tool_with_progress" => {
                for step in ["0/100", "50/100", "100/100"] {
                    ctx.step_started(step).await?;
                    sleep_or_cancel(ctx, Duration::from_millis(50)).await?;
                    ctx.step_finished(step).await?;
                }
                reply(ctx, vec![Part::text("Progress complete")]).await
            }
            "test_tool_with_logging" | "test_logging_tool" => {
                reply(ctx, vec![Part::text("Tool execution completed")]).await
            }
            "test_elicitation" => {
                let message = args.get("message").and_then(Value::as_str).unwrap_or("");
                let schema = json!({"type": "object", "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}},
                    "required": ["username", "email"]});
                form_then_report(ctx, message, schema, "User response").await
            }
            "test_elicitation_sep1034_defaults" => {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"],
                        "default": "active"},
                    "verified": {"type": "boolean", "default": true}}});
                form_then_report(
                    ctx,
                    "Defaults for every type",
                    schema,
                    "Elicitation completed",
                )
                .await
            }
            "test_elicitation_sep1330_enums" => {
                let schema = json!({"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"}]},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array",
                        "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}]}}}});
                form_then_report(ctx, "Every enum form", schema, "Elicitation completed").await
            }
            "test_missing_capability" | "test_input_required_result_sampling" | "test_sampling" => {
                let prompt = match tool.as_str() {
                    "test_sampling" => args
                        .get("prompt")
                        .and_then(Value::as_str)
                        .unwrap_or("Say hello")
                        .to_string(),
                    _ => "What is the capital of France?".to_string(),
                };
                let Some(r) = ctx.answers().get("capital_question") else {
                    ctx.request_sampling("capital_question", &prompt, 100)?;
                    return Ok(waiting());
                };
                let text = sampled_text(r.content.as_ref());
                reply(ctx, vec![Part::text(format!("LLM response: {text}"))]).await
            }
            "test_input_required_result_list_roots" => {
                let Some(r) = ctx.answers().get("client_roots") else {
                    ctx.request_roots("client_roots", "Which roots may the tool use?")?;
                    return Ok(waiting());
                };
                let roots = r
                    .content
                    .as_ref()
                    .and_then(|c| c.get("roots"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|x| x.get("uri").and_then(Value::as_str))
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                reply(ctx, vec![Part::text(format!("roots: {roots}"))]).await
            }
            "test_input_required_result_multiple_inputs"
            | "test_input_required_result_capabilities" => {
                let all = tool == "test_input_required_result_multiple_inputs";
                let answers = ctx.answers();
                let mut waiting_for = false;
                if !answers.contains_key("user_name") {
                    ctx.request_input("user_name", "What is your name?", string_schema("name"))?;
                    waiting_for = true;
                }
                let sampling_key = if all { "greeting" } else { "capital_question" };
                if !answers.contains_key(sampling_key) {
                    let prompt = if all {
                        "Generate a greeting"
                    } else {
                        "What is the capital of France?"
                    };
                    ctx.request_sampling(sampling_key, prompt, if all { 50 } else { 100 })?;
                    waiting_for = true;
                }
                if all && !answers.contains_key("client_roots") {
                    ctx.request_roots("client_roots", "Which roots may the tool use?")?;
                    waiting_for = true;
                }
                if waiting_for {
                    return Ok(waiting());
                }
                let name = field(
                    answers.get("user_name").and_then(|r| r.content.as_ref()),
                    "name",
                );
                let text = sampled_text(answers.get(sampling_key).and_then(|r| r.content.as_ref()));
                reply(ctx, vec![Part::text(format!("{name}: {text}"))]).await
            }
            "test_header_param" => {
                let region = args.get("region").and_then(Value::as_str).unwrap_or("");
                reply(ctx, vec![Part::text(format!("region: {region}"))]).await
            }
            "json_schema_2020_12_tool" => reply(ctx, vec![Part::text(args.to_string())]).await,
            "greet" => {
                let name = args.get("name").and_then(Value::as_str).unwrap_or("World");
                reply(ctx, vec![Part::text(format!("Hello, {name}!"))]).await
            }
            "slow_compute" => {
                let secs = args
                    .get("seconds")
                    .and_then(Value::as_f64)
                    .unwrap_or(1.0)
                    .clamp(0.0, 300.0);
                if secs > 0.0 {
                    sleep_or_cancel(ctx, Duration::from_secs_f64(secs)).await?;
                }
                let label = args.get("label").and_then(Value::as_str).unwrap_or("done");
                reply(
                    ctx,
                    vec![Part::text(format!("computed {label} after {secs} s"))],
                )
                .await
            }
            "failing_job" => {
                sleep_or_cancel(ctx, Duration::from_secs(1)).await?;
                Ok(TurnOutcome::Failed {
                    message: "the job failed".into(),
                })
            }
            "protocol_error_job" => Err(AgentError::Internal(
                "protocol_error_job always fails internally".into(),
            )),
            "confirm_delete" => match ask_all(
                ctx,
                &[("confirm", "Delete the file?", bool_schema("confirm"))],
            )? {
                Asks::Waiting => Ok(waiting()),
                Asks::Done(a) => {
                    let yes = a[0].and_then(|c| c.get("confirm")) == Some(&Value::Bool(true));
                    let what = if yes { "deleted" } else { "kept" };
                    reply(ctx, vec![Part::text(format!("file {what}"))]).await
                }
            },
            "multi_input" => match ask_all(
                ctx,
                &[
                    ("first", "First question?", string_schema("answer")),
                    ("second", "Second question?", string_schema("answer")),
                ],
            )? {
                Asks::Waiting => Ok(waiting()),
                Asks::Done(a) => {
                    let text = format!(
                        "answers: {}, {}",
                        field(a[0], "answer"),
                        field(a[1], "answer")
                    );
                    reply(ctx, vec![Part::text(text)]).await
                }
            },
            "test_tool_with_task"
            | "test_input_required_result_elicitation"
            | "test_streaming_elicitation" => match ask_all(
                ctx,
                &[("user_name", "What is your name?", string_schema("name"))],
            )? {
                Asks::Waiting => Ok(waiting()),
                Asks::Done(a) => {
                    let name = field(a[0], "name");
                    reply(ctx, vec![Part::text(format!("Hello, {name}!"))]).await
                }
            },
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                match ask_all(ctx, &[("confirm", "Please confirm", bool_schema("ok"))])? {
                    Asks::Waiting => Ok(waiting()),
                    Asks::Done(_) => reply(ctx, vec![Part::text("confirmed: state-ok")]).await,
                }
            }
            "test_input_required_result_multi_round" => {
                let step1 = ("step1", "Step 1: What is your name?", string_schema("name"));
                let Asks::Done(a) = ask_all(ctx, &[step1])? else {
                    return Ok(waiting());
                };
                let name = field(a[0], "name");
                let step2 = (
                    "step2",
                    "Step 2: What is your favorite color?",
                    string_schema("color"),
                );
                let Asks::Done(b) = ask_all(ctx, &[step2])? else {
                    return Ok(waiting());
                };
                let color = field(b[0], "color");
                reply(ctx, vec![Part::text(format!("{name} likes {color}"))]).await
            }
            other => Ok(TurnOutcome::Rejected {
                reason: format!("unknown fixture tool {other}"),
            }),
        }
    }

    async fn direct_reply(&self, caller: &Caller, message: &Message) -> Option<Message> {
        self.scripted.direct_reply(caller, message).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_media_are_well_formed() {
        assert_eq!(&PNG[1..4], b"PNG");
        assert_eq!(&PNG[PNG.len() - 8..PNG.len() - 4], b"IEND");
        let w = wav();
        assert_eq!(&w[..4], b"RIFF");
        assert_eq!(
            u32::from_le_bytes([w[4], w[5], w[6], w[7]]) as usize,
            w.len() - 8
        );
    }

    #[test]
    fn the_suite_s_tools_are_offered_with_their_task_support() {
        let info = McpConformanceAgent::new().info();
        let find = |id: &str| {
            info.skills
                .iter()
                .find(|s| s.id == id)
                .map(|s| s.task_support)
        };
        assert_eq!(find("greet"), Some(TaskSupport::Forbidden));
        assert_eq!(find("failing_job"), Some(TaskSupport::Required));
        assert_eq!(find("slow_compute"), Some(TaskSupport::Optional));
        for id in [
            "test_simple_text",
            "confirm_delete",
            "multi_input",
            "protocol_error_job",
        ] {
            assert!(find(id).is_some(), "{id}");
        }
    }
}
