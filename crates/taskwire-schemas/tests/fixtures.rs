//! Every golden wire fixture of the adapters (`crates/*/tests/fixtures/**`)
//! validates against the committed schema of its message kind, and the schemas
//! reject wire objects that are wrong. A fixture nobody mapped to a kind fails the
//! test, so new fixtures get checked too.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use taskwire_schemas::Validators;

/// (JSON pointer inside the fixture or inside each element of a top-level
/// array, protocol, kind).
type Check = (&'static str, &'static str, &'static str);

/// Placeholders the fixture writers put where values vary, in fields whose
/// format the schemas assert.
fn unredact(v: &mut Value) {
    match v {
        Value::String(s) if s == "<timestamp>" || s == "<time>" => {
            *s = "2026-07-28T12:00:00.000Z".to_string();
        }
        Value::Array(a) => a.iter_mut().for_each(unredact),
        Value::Object(m) => m.values_mut().for_each(unredact),
        _ => {}
    }
}

fn a2a(stem: &str) -> Option<Vec<Check>> {
    let p = "a2a";
    Some(match stem {
        s if s.starts_with("error_") => vec![],
        // The HTTP+JSON binding: bare messages and its error object.
        s if s.starts_with("rest_error_") => vec![("", p, "RestError")],
        "rest_send_message" => vec![("", p, "SendMessageResponse")],
        "rest_get_task" | "rest_cancel_task" => vec![("", p, "Task")],
        "rest_push_config" => vec![("", p, "TaskPushNotificationConfig")],
        "rest_stream_message" => vec![("", p, "StreamResponse")],
        "batch" => vec![],
        "agent_card" => vec![("", p, "AgentCard")],
        "extended_agent_card" => vec![("/result", p, "AgentCard")],
        "get_task" | "cancel_task" => vec![("/result", p, "Task")],
        s if s.starts_with("send_message_") => vec![("/result", p, "SendMessageResponse")],
        s if s.starts_with("stream_") => vec![("/result", p, "StreamResponse")],
        "push_notifications" => vec![("", p, "StreamResponse")],
        "list_tasks" => vec![("/result", p, "ListTasksResponse")],
        "push_config" => vec![("/result", p, "TaskPushNotificationConfig")],
        "push_config_list" => vec![("/result", p, "ListTaskPushNotificationConfigsResponse")],
        s if s.starts_with("tck_artifact_") => vec![("", p, "Artifact")],
        _ => return None,
    })
}

fn mcp(stem: &str) -> Option<Vec<Check>> {
    let p = "mcp";
    Some(match stem {
        s if s.starts_with("error_") => vec![("/body", p, "JsonRpcErrorResponse")],
        "rev_2026_07_28_call_needs_tasks"
        | "rev_2026_07_28_call_timeout"
        | "rev_2025_11_25_cancel_terminal"
        | "rev_2025_11_25_session_not_found"
        | "rev_2025_11_25_task_result_error" => vec![],
        "rev_2026_07_28_call_tool_result" => vec![
            ("/result", p, "CallToolResult"),
            ("/result", p, "ToolsCallResult"),
        ],
        "rev_2026_07_28_call_input_required" => vec![
            ("/result", p, "InputRequiredResult"),
            ("/result", p, "ToolsCallResult"),
        ],
        "rev_2026_07_28_create_task_result" => vec![
            ("/result", p, "CreateTaskResult"),
            ("/result", p, "ToolsCallResult"),
        ],
        "rev_2026_07_28_cancel_result" | "rev_2026_07_28_update_result" => {
            vec![("/result", p, "EmptyResult")]
        }
        "rev_2026_07_28_continue_completed" => vec![("/result", p, "DetailedTask")],
        s if s.starts_with("rev_2026_07_28_get_") => vec![("/result", p, "DetailedTask")],
        "rev_2026_07_28_discover" => vec![("/result", p, "DiscoverResult")],
        "rev_2026_07_28_tools_list" => vec![("/result", p, "ListToolsResult")],
        "rev_2026_07_28_notification_tasks" => vec![("/params", p, "TaskNotificationParams")],
        "task_stream_terminal_event" => vec![("", p, "TaskEvent")],
        "rev_2026_07_28_subscriptions_acknowledged" => {
            vec![("/params", p, "SubscriptionsAcknowledgedParams")]
        }
        "rev_2026_07_28_subscriptions_listen_result" => vec![("/result", p, "ListenResult")],
        "rev_2025_11_25_blocking_elicitation_request" | "rev_2025_11_25_elicitation_request" => {
            vec![("/params", p, "ElicitRequestParams")]
        }
        "rev_2025_11_25_call_tool_result" | "rev_2025_11_25_task_result" => vec![
            ("/result", p, "CallToolResult2025_11_25"),
            ("/result", p, "ToolsCallResult2025_11_25"),
        ],
        "rev_2025_11_25_create_task_result" => vec![
            ("/result", p, "CreateTaskResult2025_11_25"),
            ("/result", p, "ToolsCallResult2025_11_25"),
        ],
        "rev_2025_11_25_cancel_result"
        | "rev_2025_11_25_get_agent_failed"
        | "rev_2025_11_25_get_completed" => {
            vec![("/result", p, "Task2025_11_25")]
        }
        "rev_2025_11_25_initialize" => vec![("/result", p, "InitializeResult")],
        "rev_2025_11_25_notification_tasks_status" => {
            vec![("/params", p, "TaskStatusNotificationParams2025_11_25")]
        }
        "rev_2025_11_25_tasks_list" => vec![("/result", p, "ListTasksResult2025_11_25")],
        "rev_2025_11_25_tools_list" => vec![("/result", p, "ListToolsResult2025_11_25")],
        _ => return None,
    })
}

fn cas(stem: &str) -> Option<Vec<Check>> {
    let p = "cas";
    Some(match stem {
        s if s.starts_with("status_") => vec![("", p, "StatusObject")],
        "sse_last_status" => vec![("", p, "StatusObject")],
        s if s.starts_with("messages_") => vec![("", p, "MessageList")],
        "reviews_list" => vec![("", p, "ReviewList")],
        s if s.starts_with("error_") => vec![("", p, "ErrorBody")],
        _ => return None,
    })
}

/// The JSON-RPC envelope kind of a message, by its shape.
fn envelope(v: &Value) -> Option<&'static str> {
    let o = v.as_object()?;
    o.get("jsonrpc")?;
    Some(match (o.contains_key("method"), o.contains_key("id")) {
        (true, true) => "JsonRpcRequest",
        (true, false) => "JsonRpcNotification",
        _ if o.contains_key("error") => "JsonRpcErrorResponse",
        _ => "JsonRpcSuccessResponse",
    })
}

fn fixture_files() -> Vec<PathBuf> {
    let crates = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(&crates) {
        for e in rd.flatten() {
            walk(&e.path().join("tests/fixtures"), &mut out);
        }
    }
    out.sort();
    out
}

struct Run {
    validators: Validators,
    agui_events: serde_json::Map<String, Value>,
    failures: Vec<String>,
    checked: usize,
}

impl Run {
    fn check(&mut self, file: &str, at: &str, v: &Value, protocol: &str, kind: &str) {
        self.checked += 1;
        if let Err(errors) = self.validators.validate(protocol, kind, v) {
            self.failures.push(format!(
                "{file}{at}: not a valid {protocol}/{kind}:\n    {}",
                errors.join("\n    ")
            ));
        }
    }

    fn element(&mut self, file: &str, at: &str, v: &Value, protocol: &str, checks: &[Check]) {
        if protocol != "agui" && protocol != "cas" {
            if let Some(kind) = envelope(v) {
                self.check(file, at, v, protocol, kind);
            }
            if let Some(body) = v.get("body") {
                if let Some(kind) = envelope(body) {
                    self.check(file, &format!("{at}/body"), body, protocol, kind);
                }
            }
        }
        for (ptr, p, kind) in checks {
            match v.pointer(ptr) {
                Some(inner) => self.check(file, &format!("{at}{ptr}"), inner, p, kind),
                None => self
                    .failures
                    .push(format!("{file}{at}: no {ptr} to check as {p}/{kind}")),
            }
        }
    }
}

#[test]
fn every_golden_fixture_matches_the_schema_of_its_kind() {
    let index: Value =
        serde_json::from_str(taskwire_schemas::index().expect("index embedded")).expect("index");
    let mut run = Run {
        validators: Validators::new(),
        agui_events: index["protocols"]["agui"]["events"]
            .as_object()
            .cloned()
            .expect("agui events"),
        failures: Vec::new(),
        checked: 0,
    };
    let files = fixture_files();
    assert!(files.len() > 50, "found only {} fixtures", files.len());
    for path in files {
        let parts: Vec<String> = path
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        let krate = parts
            .iter()
            .rposition(|c| c == "tests")
            .and_then(|i| i.checked_sub(1))
            .map(|i| parts[i].clone())
            .unwrap_or_default();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let file = format!("{krate}/tests/fixtures/{name}");
        let text = std::fs::read_to_string(&path).expect("read");
        let mut v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        unredact(&mut v);
        if krate == "taskwire-agui" {
            if name.ends_with(".proto.json") {
                // Sizes and types of protobuf frames, not JSON wire objects.
                continue;
            }
            if name.starts_with("error_") {
                // The adapter's JSON error body of a refused replay, reconnect or
                // cancel (`{"code","message"}`), not an event: AG-UI defines no
                // schema for it (its shape is pinned by taskwire-agui's edge test).
                continue;
            }
            let frames = v.as_array().cloned().unwrap_or_default();
            assert!(!frames.is_empty(), "{file}: no frames");
            for (i, f) in frames.iter().enumerate() {
                let at = format!("/{i}/event");
                let ev = &f["event"];
                run.check(&file, &at, ev, "agui", "Event");
                let ty = ev["type"].as_str().unwrap_or_default();
                match run
                    .agui_events
                    .get(ty)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                {
                    Some(kind) => run.check(&file, &at, ev, "agui", &kind),
                    None => run
                        .failures
                        .push(format!("{file}{at}: event type {ty} has no schema")),
                }
            }
            continue;
        }
        let stem = name.trim_end_matches(".json");
        let (protocol, checks) = match krate.as_str() {
            "taskwire-a2a" => ("a2a", a2a(stem)),
            "taskwire-mcp" => ("mcp", mcp(stem)),
            "taskwire-cas" => ("cas", cas(stem)),
            // Fixtures of crates that are not protocol adapters (clients, the
            // conformance suite) are not wire objects taskwire sends or accepts.
            _ => continue,
        };
        let Some(checks) = checks else {
            run.failures.push(format!(
                "{file}: no schema kind is mapped to this fixture (add it to tests/fixtures.rs)"
            ));
            continue;
        };
        match &v {
            Value::Array(items) if protocol != "cas" || !stem.starts_with("messages_") => {
                for (i, item) in items.iter().enumerate() {
                    run.element(&file, &format!("/{i}"), item, protocol, &checks);
                }
            }
            _ => run.element(&file, "", &v, protocol, &checks),
        }
    }
    eprintln!("{} checks of golden fixtures", run.checked);
    assert!(run.checked > 150, "only {} checks ran", run.checked);
    assert!(
        run.failures.is_empty(),
        "{} failures:\n{}",
        run.failures.len(),
        run.failures.join("\n")
    );
}

fn invalid(protocol: &str, kind: &str, v: Value) {
    let mut validators = Validators::new();
    assert!(
        validators.validate(protocol, kind, &v).is_err(),
        "{protocol}/{kind} accepted {v}"
    );
}

fn valid(protocol: &str, kind: &str, v: Value) {
    let mut validators = Validators::new();
    if let Err(e) = validators.validate(protocol, kind, &v) {
        panic!("{protocol}/{kind} refused {v}: {e:?}");
    }
}

#[test]
fn a2a_schemas_reject_what_protojson_does_not_allow() {
    let task = json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-01T00:00:00Z"}});
    valid("a2a", "Task", task.clone());
    let mut bad = task.clone();
    bad["status"]["state"] = json!("WORKING");
    invalid("a2a", "Task", bad);
    let mut bad = task;
    bad["status"]["timestamp"] = json!("yesterday");
    invalid("a2a", "Task", bad.clone());
    bad["status"]["timestamp"] = json!("2026-01-01T00:00:00+00:00");
    invalid("a2a", "Task", bad);
    // Fields the upstream proto marks REQUIRED must be present.
    invalid("a2a", "Task", json!({"id": "t"}));
    invalid(
        "a2a",
        "Message",
        json!({"messageId": "m", "parts": [{"text": "x"}]}),
    );
    invalid("a2a", "Artifact", json!({"artifactId": "a", "parts": []}));
    // A Part holds exactly one of text, raw, url, data.
    valid(
        "a2a",
        "Part",
        json!({"raw": "aGk=", "mediaType": "text/plain"}),
    );
    invalid(
        "a2a",
        "Part",
        json!({"text": "a", "url": "https://x.invalid"}),
    );
    invalid("a2a", "Part", json!({"mediaType": "text/plain"}));
    invalid("a2a", "Part", json!({"raw": "not base64!"}));
    // A stream frame carries exactly one payload.
    invalid("a2a", "StreamResponse", json!({}));
    // Params are checked against the method's request message.
    valid(
        "a2a",
        "JsonRpcRequest",
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t", "historyLength": 2}}),
    );
    invalid(
        "a2a",
        "JsonRpcRequest",
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 7}}),
    );
    invalid(
        "a2a",
        "JsonRpcRequest",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {}}),
    );
    invalid(
        "a2a",
        "JsonRpcErrorResponse",
        json!({"jsonrpc": "2.0", "id": 1, "error": {"message": "no code"}}),
    );
}

#[test]
fn mcp_cas_and_agui_schemas_reject_wrong_shapes() {
    invalid(
        "mcp",
        "CreateTaskResult",
        json!({"resultType": "task", "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": null}),
    );
    invalid(
        "mcp",
        "DetailedTask",
        json!({"resultType": "complete", "taskId": "t", "status": "completed", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 1}),
    );
    invalid(
        "mcp",
        "DetailedTask",
        json!({"resultType": "complete", "taskId": "t", "status": "submitted", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 1}),
    );
    invalid("mcp", "TaskRequestParams", json!({"taskId": "t"}));
    invalid(
        "mcp",
        "CreateTaskResult2025_11_25",
        json!({"taskId": "t", "status": "working"}),
    );
    invalid(
        "cas",
        "StatusObject",
        json!({"id": "x", "agent": "a", "responsible_user": "u", "created_at": "2026-01-01T00:00:00Z", "status": {"phase": "busy", "terminal_reason": null, "revision": "1", "notifications": [], "idle_expires_at": null}}),
    );
    valid(
        "cas",
        "StatusObject",
        json!({"id": "x", "agent": "a", "responsible_user": "u", "created_at": "2026-01-01T00:00:00Z", "status": {"phase": "idle", "terminal_reason": null, "revision": "1", "notifications": [], "idle_expires_at": null}}),
    );
    invalid(
        "cas",
        "InputBody",
        json!({"message": [{"text": "hi", "colour": "red"}]}),
    );
    // A part holds exactly one of text and file.
    invalid(
        "cas",
        "InputBody",
        json!({"message": [{"text": "hi", "file": "https://f.invalid/a"}]}),
    );
    invalid("cas", "ContentPart", json!({"mimeType": "text/plain"}));
    valid(
        "cas",
        "InputBody",
        json!({"message": [{"mimeType": "text/plain", "text": "hi"}], "ticket_id": 7}),
    );
    invalid(
        "agui",
        "RunStartedEvent",
        json!({"type": "RUN_STARTED", "threadId": "t"}),
    );
    invalid(
        "agui",
        "RunStartedEvent",
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
    );
    invalid(
        "agui",
        "RunFinishedEvent",
        json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "interrupt"}}),
    );
    invalid(
        "agui",
        "RunAgentInput",
        json!({"threadId": "t", "runId": "r", "messages": [], "resume": [{"interruptId": "i", "status": "done"}]}),
    );
    valid(
        "agui",
        "RunAgentInput",
        json!({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": "hi"}]}),
    );
}
