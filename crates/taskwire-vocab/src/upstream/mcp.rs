//! The inbound direction for MCP upstreams: what an upstream MCP server's tool
//! results, task statuses and input requests (the 2026-07-28 tasks extension,
//! `taskwire_wire::mcp`) mean in core terms, and the core's input (messages,
//! answers) as tool arguments and input responses sent upstream.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value};
use taskwire_core::types::{InputAction, InputResponse, Message, Part, PartContent};
use taskwire_wire::mcp as wire;

use super::UpstreamState;
use crate::mcp::{AUTH_KEY_PREFIX, TOOL_METADATA_KEY};
use crate::{Loss, VocabError};

/// Lost: an MCP tool result has no artifact framing (ids, names, chunks):
/// downstream it is one artifact named `result`.
pub const LOSS_MCP_RESULT_FRAMING: Loss = Loss(
    "an MCP tool result has no artifact ids, names or chunks: downstream it is one artifact `result` per turn",
);
/// Lost: sampling and roots requests of an MCP upstream are not carried.
pub const LOSS_MCP_SAMPLING_ROOTS: Loss = Loss(
    "an MCP upstream's sampling/createMessage and roots/list input requests are not carried: the bridged task fails naming them",
);
/// Lost: `tools/call` has no idempotency key.
pub const LOSS_MCP_CALL_IDEMPOTENCY: Loss = Loss(
    "tools/call has no idempotency key: a bridge that dies between the call and storing the upstream task id calls again",
);
/// Lost: an A2A, CAS or AG-UI caller does not choose among several upstream
/// tools.
pub const LOSS_MCP_TOOL_CHOICE: Loss = Loss(
    "only an MCP caller names the tool: callers of other protocols get the upstream's only tool, the #tool of the URL, or a rejection listing the tools",
);
/// Lost: a downstream cancel of a blocking call can only drop its connection.
pub const LOSS_MCP_BLOCKING_CANCEL: Loss = Loss(
    "a blocking tools/call (an upstream without the tasks extension) is canceled by dropping its connection: 2026-07-28 has no cancel message for it",
);
/// Lost: a working upstream task's intermediate status messages.
pub const LOSS_MCP_PROGRESS: Loss = Loss(
    "a working MCP upstream task's statusMessage changes are sent downstream as agent messages; progress numbers are not",
);

/// Lost: a question inside a blocking 2025-11-25 call lives on that call's
/// open connection.
pub const LOSS_MCP_2025_11_25_BLOCKING_INPUT: Loss = Loss(
    "an elicitation inside a blocking 2025-11-25 tools/call is answered on the call's open connection, which only the bridge process that made it holds: a bridge restarted while the call waits for the answer fails the task, and the tool is not called again, unless the tool is marked idempotent (annotations.idempotentHint), which is called again with its questions answered as before",
);
/// Lost: a blocking `tools/call` cut by a bridge crash.
pub const LOSS_MCP_BLOCKING_CALL_LOST: Loss = Loss(
    "a blocking tools/call (an upstream without tasks) has no idempotency key and no task to re-attach to: when the bridge stops while it runs (a crash, SIGKILL), the re-run turn cannot know whether the upstream ran the tool; it calls the tool again only if the tool is marked idempotent (annotations.idempotentHint), in both revisions, and otherwise fails the task saying the upstream may have run it",
);
/// Lost: 2025-11-25 sessions do not outlive the server that holds them.
pub const LOSS_MCP_2025_11_25_SESSION: Loss = Loss(
    "a 2025-11-25 upstream task is followed in the session that created it (kept in the link); when the upstream no longer holds that session the bridge initializes a new one, and an upstream that keeps tasks per session no longer finds the task: the bridged task fails",
);

/// The 2025-11-25 protocol revision.
pub const VERSION_2025_11_25: &str = "2025-11-25";

/// Whether a 2025-11-25 server's `tools/call` of `tool` runs as a task: the
/// server advertises `capabilities.tasks.requests.tools.call` and the tool's
/// `execution.taskSupport` is `optional` or `required`.
pub fn rev_2025_11_25_calls_as_task(
    caps: &wire::ServerCapabilities2025_11_25,
    tool: &wire::Tool,
) -> bool {
    let offered = caps
        .tasks
        .as_ref()
        .and_then(|t| t.requests.as_ref())
        .and_then(|r| r.tools.as_ref())
        .is_some_and(|t| t.call.is_some());
    let allowed = matches!(
        tool.execution
            .as_ref()
            .and_then(|e| e.task_support.as_ref()),
        Some(wire::TaskSupport::Optional | wire::TaskSupport::Required)
    );
    offered && allowed
}

/// The downstream input request key of the `n`th question a 2025-11-25
/// upstream asked in downstream turn `turn` (its server-to-client requests
/// have ids, not keys).
pub fn rev_2025_11_25_input_key(turn: u32, n: usize) -> String {
    format!("upstream-elicitation-{turn}-{n}")
}

/// Whether `tool` says calling it again with the same arguments has no
/// further effect (`annotations.idempotentHint: true`; absent means false).
pub fn tool_is_idempotent(tool: &wire::Tool) -> bool {
    tool.other
        .get("annotations")
        .and_then(|a| a.get("idempotentHint"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The question (`params.message`) of a server's `elicitation/create`
/// request.
pub fn elicitation_message(request: &Value) -> Option<&str> {
    request.get("params")?.get("message")?.as_str()
}

/// The task a server-to-client message of a 2025-11-25 server belongs to
/// (`params._meta["io.modelcontextprotocol/related-task"].taskId`).
pub fn related_task(message: &Value) -> Option<&str> {
    message
        .get("params")?
        .get("_meta")?
        .get(taskwire_wire::names::mcp::meta::RELATED_TASK)?
        .get("taskId")?
        .as_str()
}

/// A 2025-11-25 server-to-client request (`{"method", "params", "id"}`), as
/// the bridged task raises it under `key`: a form elicitation as a form, a
/// URL elicitation as an authorisation (provider from its `elicitationId`: a
/// taskwire upstream's `taskwire.auth/P` is `P`), sampling and roots as
/// unsupported ([`LOSS_MCP_SAMPLING_ROOTS`]). `None` for a request that asks
/// nothing (`ping`) or that cannot be read.
pub fn ask_of_server_request(key: &str, request: &Value) -> Option<UpstreamAsk> {
    let method = request.get("method")?.as_str()?;
    match method {
        taskwire_wire::names::mcp::method::ELICITATION_CREATE => {
            let params: wire::ElicitRequestParams =
                serde_json::from_value(request.get("params")?.clone()).ok()?;
            Some(match params {
                wire::ElicitRequestParams::Form {
                    message,
                    requested_schema,
                    ..
                } => UpstreamAsk::Form {
                    key: key.to_string(),
                    prompt: message,
                    schema: Value::Object(requested_schema),
                },
                wire::ElicitRequestParams::Url {
                    message,
                    url,
                    elicitation_id,
                    ..
                } => {
                    let id = elicitation_id.unwrap_or_else(|| key.to_string());
                    UpstreamAsk::Auth {
                        key: key.to_string(),
                        provider: id.strip_prefix(AUTH_KEY_PREFIX).unwrap_or(&id).to_string(),
                        prompt: message,
                        url,
                    }
                }
            })
        }
        taskwire_wire::names::mcp::method::SAMPLING_CREATE_MESSAGE => {
            Some(UpstreamAsk::Unsupported {
                key: key.to_string(),
                method: "sampling/createMessage",
            })
        }
        taskwire_wire::names::mcp::method::ROOTS_LIST => Some(UpstreamAsk::Unsupported {
            key: key.to_string(),
            method: "roots/list",
        }),
        _ => None,
    }
}

/// The artifact id of the result of downstream turn `turn`.
pub fn result_artifact_id(turn: u32) -> String {
    format!("mcp-result-{turn}")
}

/// The artifact name of an MCP tool result ([`LOSS_MCP_RESULT_FRAMING`]).
pub const RESULT_ARTIFACT_NAME: &str = "result";

/// What an MCP task status means for the bridged downstream task.
pub fn upstream_state_of_mcp(s: wire::TaskStatus) -> UpstreamState {
    match s {
        wire::TaskStatus::Working => UpstreamState::Running,
        wire::TaskStatus::InputRequired => UpstreamState::InputRequired,
        wire::TaskStatus::Completed => UpstreamState::Completed,
        wire::TaskStatus::Failed => UpstreamState::Failed,
        wire::TaskStatus::Cancelled => UpstreamState::Canceled,
        _ => UpstreamState::Unknown,
    }
}

/// The tool a downstream task calls: the MCP caller's tool (task metadata
/// `mcpTool`) if it is one of `tools`, else the only tool. `None` when the
/// caller did not choose among several ([`LOSS_MCP_TOOL_CHOICE`]).
pub fn tool_of_task<'a>(metadata: &Map<String, Value>, tools: &'a [String]) -> Option<&'a str> {
    if let Some(t) = metadata.get(TOOL_METADATA_KEY).and_then(Value::as_str) {
        if let Some(found) = tools.iter().find(|x| x.as_str() == t) {
            return Some(found);
        }
    }
    match tools {
        [only] => Some(only),
        _ => None,
    }
}

/// The string properties of an object schema, in the schema's order.
fn string_properties(schema: &Value) -> Vec<&str> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(_, v)| v.get("type").and_then(Value::as_str) == Some("string"))
                .map(|(k, _)| k.as_str())
                .collect()
        })
        .unwrap_or_default()
}

fn has_property(schema: &Value, name: &str) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key(name))
}

/// The `tools/call` arguments of a downstream task's first message, for a tool
/// whose input schema is `schema`: a data part that is an object gives the
/// arguments (the form an MCP caller's arguments take in the core); the text
/// goes to the `text` property when the schema has one, else to the schema's
/// only string property not already set, else to `text`; a tool whose schema
/// names no properties takes no arguments, and gets none.
pub fn tool_arguments(schema: &Value, message: Option<&Message>) -> Map<String, Value> {
    let mut args = Map::new();
    let Some(m) = message else {
        return args;
    };
    let mut text: Option<String> = None;
    for p in &m.parts {
        match &p.content {
            PartContent::Data {
                data: Value::Object(o),
            } => {
                for (k, v) in o {
                    args.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            PartContent::Text { text: t } => match &mut text {
                Some(all) => {
                    all.push('\n');
                    all.push_str(t);
                }
                None => text = Some(t.clone()),
            },
            _ => {}
        }
    }
    if let Some(t) = text {
        let no_properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(|p| p.is_empty());
        if no_properties {
            // The tool takes no arguments: the text is not sent.
            return args;
        }
        let key = if has_property(schema, "text") {
            Some("text")
        } else {
            let free: Vec<&str> = string_properties(schema)
                .into_iter()
                .filter(|k| !args.contains_key(*k))
                .collect();
            match free.as_slice() {
                [only] => Some(*only),
                _ => None,
            }
        };
        if let Some(k) = key {
            args.entry(k.to_string()).or_insert(Value::String(t));
        } else if !args.contains_key("text") {
            args.insert("text".into(), Value::String(t));
        }
    }
    args
}

/// A content block of an upstream tool result as a core part.
pub fn part_of_content(c: &wire::ContentBlock) -> Result<Part, VocabError> {
    let decode = |data: &str, what: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| VocabError::Invalid {
                field: format!("content[{what}].data"),
                reason: format!("not base64: {e}"),
            })
    };
    Ok(match c {
        wire::ContentBlock::Text { text } => Part::text(text.clone()),
        wire::ContentBlock::Image { data, mime_type } => {
            Part::raw(decode(data, "image")?, mime_type.clone())
        }
        wire::ContentBlock::Audio { data, mime_type } => {
            Part::raw(decode(data, "audio")?, mime_type.clone())
        }
        wire::ContentBlock::ResourceLink { uri, mime_type, .. } => {
            let mut p = Part::url(uri.clone());
            p.media_type = mime_type.clone();
            p
        }
        wire::ContentBlock::Resource { resource } => match (&resource.text, &resource.blob) {
            (Some(t), _) => {
                let mut p = Part::text(t.clone());
                p.media_type = resource.mime_type.clone();
                p
            }
            (None, Some(b)) => Part::raw(
                decode(b, "resource")?,
                resource
                    .mime_type
                    .clone()
                    .unwrap_or_else(|| "application/octet-stream".into()),
            ),
            (None, None) => Part::url(resource.uri.clone()),
        },
        _ => {
            return Err(VocabError::Invalid {
                field: "content".into(),
                reason: "a content block of a type this version does not know".into(),
            })
        }
    })
}

/// The parts of an upstream tool result: its content blocks, then its
/// structured content as one data part. A text block that only repeats the
/// structured content (as servers add for clients that do not read it) is
/// left out.
pub fn parts_of_result(r: &wire::CallToolResult2025_11_25) -> Result<Vec<Part>, VocabError> {
    let structured = r
        .structured_content
        .as_ref()
        .map(|s| Value::Object(s.clone()));
    let mut parts = Vec::new();
    for c in &r.content {
        if let (wire::ContentBlock::Text { text }, Some(s)) = (c, &structured) {
            if serde_json::from_str::<Value>(text).ok().as_ref() == Some(s) {
                continue;
            }
        }
        parts.push(part_of_content(c)?);
    }
    if let Some(s) = structured {
        parts.push(Part::data(s));
    }
    Ok(parts)
}

/// The text of a tool result's text blocks (the failure message of an
/// `isError` result).
pub fn result_text(r: &wire::CallToolResult2025_11_25) -> String {
    r.content
        .iter()
        .filter_map(|c| match c {
            wire::ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One input request of an MCP upstream, as the bridged task raises it.
#[derive(Clone, Debug, PartialEq)]
pub enum UpstreamAsk {
    /// A form elicitation: a downstream input request of the same key, prompt
    /// and schema.
    Form {
        /// The upstream key (also the downstream key).
        key: String,
        /// For a person.
        prompt: String,
        /// The requested schema.
        schema: Value,
    },
    /// A URL elicitation: a downstream provider authorisation.
    Auth {
        /// The upstream key.
        key: String,
        /// The downstream provider (a taskwire upstream's `taskwire.auth/P`
        /// is `P`; any other key is its own provider).
        provider: String,
        /// For a person.
        prompt: String,
        /// Where to authorise.
        url: String,
    },
    /// A request the bridge does not carry ([`LOSS_MCP_SAMPLING_ROOTS`]).
    Unsupported {
        /// The upstream key.
        key: String,
        /// The request's method.
        method: &'static str,
    },
}

/// The input requests of an `input_required` upstream task, in key order.
pub fn asks_of(requests: &BTreeMap<String, wire::InputRequest>) -> Vec<UpstreamAsk> {
    requests
        .iter()
        .map(|(key, r)| match r {
            wire::InputRequest::Elicit(wire::ElicitRequestParams::Form {
                message,
                requested_schema,
                ..
            }) => UpstreamAsk::Form {
                key: key.clone(),
                prompt: message.clone(),
                schema: Value::Object(requested_schema.clone()),
            },
            wire::InputRequest::Elicit(wire::ElicitRequestParams::Url { message, url, .. }) => {
                UpstreamAsk::Auth {
                    key: key.clone(),
                    provider: key.strip_prefix(AUTH_KEY_PREFIX).unwrap_or(key).to_string(),
                    prompt: message.clone(),
                    url: url.clone(),
                }
            }
            wire::InputRequest::CreateMessage(_) => UpstreamAsk::Unsupported {
                key: key.clone(),
                method: "sampling/createMessage",
            },
            _ => UpstreamAsk::Unsupported {
                key: key.clone(),
                method: "roots/list",
            },
        })
        .collect()
}

/// A downstream answer as the `ElicitResult` sent upstream.
pub fn elicit_result(r: &InputResponse) -> wire::ElicitResult {
    match r.action {
        InputAction::Accept => wire::ElicitResult {
            action: wire::ElicitAction::Accept,
            content: Some(match &r.content {
                Some(Value::Object(o)) => o.clone(),
                Some(other) => {
                    let mut m = Map::new();
                    m.insert("value".into(), other.clone());
                    m
                }
                None => Map::new(),
            }),
            meta: None,
        },
        InputAction::Decline => wire::ElicitResult {
            action: wire::ElicitAction::Decline,
            content: None,
            meta: None,
        },
        InputAction::Cancel => wire::ElicitResult {
            action: wire::ElicitAction::Cancel,
            content: None,
            meta: None,
        },
    }
}

/// The accepted content a plain-text answer (an A2A, CAS or AG-UI caller's
/// message) gives a form whose schema is `schema`: the schema's only property
/// (a string takes the text; a boolean takes yes/no words; a number a number),
/// else a JSON object text as is. `None` when the text fits no such reading.
pub fn content_of_text(schema: &Value, text: &str) -> Option<Map<String, Value>> {
    let text = text.trim();
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(p) = props {
        if p.len() == 1 {
            if let Some((k, def)) = p.iter().next() {
                let value = match def.get("type").and_then(Value::as_str) {
                    Some("boolean") => match text.to_ascii_lowercase().as_str() {
                        "yes" | "y" | "true" | "approve" | "approved" | "ok" => {
                            Some(Value::Bool(true))
                        }
                        "no" | "n" | "false" | "reject" | "rejected" => Some(Value::Bool(false)),
                        _ => None,
                    },
                    Some("number") | Some("integer") => {
                        serde_json::from_str::<serde_json::Number>(text)
                            .ok()
                            .map(Value::Number)
                    }
                    _ => Some(Value::String(text.to_string())),
                };
                if let Some(v) = value {
                    let mut m = Map::new();
                    m.insert(k.clone(), v);
                    return Some(m);
                }
            }
        }
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use taskwire_core::types::Role;

    #[test]
    fn idempotency_and_questions_are_read_from_the_wire() {
        let tool = |v: Value| serde_json::from_value::<wire::Tool>(v).expect("tool");
        let schema = json!({"type": "object"});
        assert!(tool_is_idempotent(&tool(json!({
            "name": "t", "inputSchema": schema, "annotations": {"idempotentHint": true}
        }))));
        for not in [
            json!({"name": "t", "inputSchema": schema}),
            json!({"name": "t", "inputSchema": schema, "annotations": {"idempotentHint": false}}),
            json!({"name": "t", "inputSchema": schema, "annotations": {"idempotentHint": "yes"}}),
            json!({"name": "t", "inputSchema": schema, "annotations": {"readOnlyHint": true}}),
        ] {
            assert!(!tool_is_idempotent(&tool(not.clone())), "{not}");
        }
        let req = json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create",
            "params": {"message": "Your name?", "requestedSchema": schema}});
        assert_eq!(elicitation_message(&req), Some("Your name?"));
        assert_eq!(
            elicitation_message(&json!({"method": "ping", "id": 1})),
            None
        );
    }

    #[test]
    fn statuses_read_into_upstream_states() {
        use wire::TaskStatus as S;
        assert_eq!(upstream_state_of_mcp(S::Working), UpstreamState::Running);
        assert_eq!(
            upstream_state_of_mcp(S::InputRequired),
            UpstreamState::InputRequired
        );
        assert_eq!(
            upstream_state_of_mcp(S::Completed),
            UpstreamState::Completed
        );
        assert_eq!(upstream_state_of_mcp(S::Failed), UpstreamState::Failed);
        assert_eq!(upstream_state_of_mcp(S::Cancelled), UpstreamState::Canceled);
        assert_eq!(upstream_state_of_mcp(S::Unknown), UpstreamState::Unknown);
    }

    #[test]
    fn the_tool_is_the_callers_or_the_only_one() {
        let tools = vec!["a".to_string(), "b".to_string()];
        let mut md = Map::new();
        assert_eq!(tool_of_task(&md, &tools), None);
        md.insert(TOOL_METADATA_KEY.into(), json!("b"));
        assert_eq!(tool_of_task(&md, &tools), Some("b"));
        md.insert(TOOL_METADATA_KEY.into(), json!("zzz"));
        assert_eq!(tool_of_task(&md, &tools), None);
        assert_eq!(tool_of_task(&md, &tools[..1]), Some("a"));
    }

    #[test]
    fn arguments_come_from_data_and_text() {
        let text_schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let m = Message::new(Role::User, vec![Part::text("hello")]);
        assert_eq!(
            Value::Object(tool_arguments(&text_schema, Some(&m))),
            json!({"text": "hello"})
        );
        // An MCP caller's arguments: text plus one data part.
        let m = Message::new(
            Role::User,
            vec![Part::text("hi"), Part::data(json!({"n": 3}))],
        );
        assert_eq!(
            Value::Object(tool_arguments(&text_schema, Some(&m))),
            json!({"text": "hi", "n": 3})
        );
        // The text goes to the only free string property.
        let prompt = json!({"type": "object", "properties": {"prompt": {"type": "string"}, "n": {"type": "integer"}}});
        let m = Message::new(Role::User, vec![Part::text("draw")]);
        assert_eq!(
            Value::Object(tool_arguments(&prompt, Some(&m))),
            json!({"prompt": "draw"})
        );
        // No properties: no arguments at all.
        assert!(tool_arguments(&json!({"type": "object"}), Some(&m)).is_empty());
        assert!(tool_arguments(&json!({"type": "object", "properties": {}}), Some(&m)).is_empty());
        assert!(tool_arguments(&prompt, None).is_empty());
    }

    #[test]
    fn results_become_parts_without_the_repeated_structured_text() {
        let r = wire::CallToolResult2025_11_25 {
            content: vec![
                wire::ContentBlock::Text { text: "hi".into() },
                wire::ContentBlock::Text {
                    text: r#"{"a":1}"#.into(),
                },
                wire::ContentBlock::Image {
                    data: "AAE=".into(),
                    mime_type: "image/png".into(),
                },
            ],
            structured_content: json!({"a": 1}).as_object().cloned(),
            is_error: None,
            meta: None,
        };
        let parts = parts_of_result(&r).expect("parts");
        assert_eq!(parts.len(), 3, "{parts:?}");
        assert_eq!(parts[0].as_text(), Some("hi"));
        assert_eq!(parts[1].content, PartContent::Raw { bytes: vec![0, 1] });
        assert_eq!(parts[1].media_type.as_deref(), Some("image/png"));
        assert_eq!(
            parts[2].content,
            PartContent::Data {
                data: json!({"a": 1})
            }
        );
        assert_eq!(result_text(&r), "hi\n{\"a\":1}");
        let bad = wire::ContentBlock::Audio {
            data: "***".into(),
            mime_type: "audio/wav".into(),
        };
        assert!(part_of_content(&bad).is_err());
    }

    #[test]
    fn input_requests_become_forms_authorisations_or_refusals() {
        let reqs: BTreeMap<String, wire::InputRequest> = serde_json::from_value(json!({
            "ask-0": {"method": "elicitation/create", "params": {"mode": "form", "message": "name?",
                "requestedSchema": {"type": "object", "properties": {"answer": {"type": "string"}}}}},
            "taskwire.auth/github": {"method": "elicitation/create", "params": {"mode": "url",
                "message": "Authorize github", "url": "https://example.com/auth/github"}},
            "s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
        }))
        .expect("requests");
        let asks = asks_of(&reqs);
        assert_eq!(asks.len(), 3);
        assert!(
            matches!(&asks[0], UpstreamAsk::Form { key, prompt, .. } if key == "ask-0" && prompt == "name?")
        );
        assert!(
            matches!(&asks[1], UpstreamAsk::Unsupported { key, method } if key == "s" && *method == "sampling/createMessage")
        );
        assert!(
            matches!(&asks[2], UpstreamAsk::Auth { provider, url, .. } if provider == "github" && url.ends_with("/github"))
        );
    }

    #[test]
    fn answers_become_elicit_results() {
        let a = elicit_result(&InputResponse::accept(json!({"answer": "x"})));
        assert_eq!(a.action, wire::ElicitAction::Accept);
        assert_eq!(a.content, json!({"answer": "x"}).as_object().cloned());
        let d = elicit_result(&InputResponse {
            action: InputAction::Decline,
            content: None,
        });
        assert_eq!(d.action, wire::ElicitAction::Decline);
        assert_eq!(d.content, None);
    }

    #[test]
    fn rev_2025_11_25_tools_run_as_tasks_when_both_sides_allow_it() {
        let caps: wire::ServerCapabilities2025_11_25 = serde_json::from_value(json!({
            "tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        }))
        .expect("caps");
        let tool = |support: Value| -> wire::Tool {
            serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"},
                "execution": {"taskSupport": support}}))
            .expect("tool")
        };
        assert!(rev_2025_11_25_calls_as_task(
            &caps,
            &tool(json!("optional"))
        ));
        assert!(rev_2025_11_25_calls_as_task(
            &caps,
            &tool(json!("required"))
        ));
        assert!(!rev_2025_11_25_calls_as_task(
            &caps,
            &tool(json!("forbidden"))
        ));
        let plain: wire::Tool =
            serde_json::from_value(json!({"name": "t", "inputSchema": {"type": "object"}}))
                .expect("tool");
        assert!(!rev_2025_11_25_calls_as_task(&caps, &plain));
        let no_tasks: wire::ServerCapabilities2025_11_25 =
            serde_json::from_value(json!({"tools": {}})).expect("caps");
        assert!(!rev_2025_11_25_calls_as_task(
            &no_tasks,
            &tool(json!("optional"))
        ));
    }

    #[test]
    fn rev_2025_11_25_server_requests_become_asks() {
        let form = json!({"jsonrpc": "2.0", "id": "task-x-1", "method": "elicitation/create",
            "params": {"mode": "form", "message": "name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "x"}}}});
        assert_eq!(related_task(&form), Some("x"));
        assert!(matches!(ask_of_server_request("k", &form),
            Some(UpstreamAsk::Form { key, prompt, .. }) if key == "k" && prompt == "name?"));
        let url = json!({"id": 1, "method": "elicitation/create", "params": {"mode": "url",
            "message": "Authorize github", "url": "https://example.com/a",
            "elicitationId": "taskwire.auth/github"}});
        assert_eq!(related_task(&url), None);
        assert!(matches!(ask_of_server_request("k", &url),
            Some(UpstreamAsk::Auth { provider, .. }) if provider == "github"));
        let sampling = json!({"id": 2, "method": "sampling/createMessage", "params": {}});
        assert!(matches!(
            ask_of_server_request("k", &sampling),
            Some(UpstreamAsk::Unsupported { .. })
        ));
        assert_eq!(
            ask_of_server_request("k", &json!({"id": 3, "method": "ping"})),
            None
        );
        assert_eq!(rev_2025_11_25_input_key(2, 0), "upstream-elicitation-2-0");
    }

    #[test]
    fn plain_text_answers_fill_one_property_forms() {
        let s = json!({"type": "object", "properties": {"answer": {"type": "string"}}});
        assert_eq!(
            content_of_text(&s, " blue "),
            json!({"answer": "blue"}).as_object().cloned()
        );
        let b = json!({"type": "object", "properties": {"approved": {"type": "boolean"}}});
        assert_eq!(
            content_of_text(&b, "yes"),
            json!({"approved": true}).as_object().cloned()
        );
        assert_eq!(
            content_of_text(&b, "reject"),
            json!({"approved": false}).as_object().cloned()
        );
        assert_eq!(content_of_text(&b, "maybe"), None);
        let two = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}});
        assert_eq!(content_of_text(&two, "x"), None);
        assert_eq!(
            content_of_text(&two, r#"{"a": "1", "b": "2"}"#),
            json!({"a": "1", "b": "2"}).as_object().cloned()
        );
    }
}
