//! Bridge interop (#21, item 6): `taskwire serve --upstream mcp+http://…/mcp`
//! in front of an MCP server built on the official Python SDK (`mcp` 2.3.0:
//! `conformance/targets/mcp_sdk_server.py`, the SDK's MCPServer and Streamable
//! HTTP app with three tools of ours), driven through the bridge's A2A, AG-UI
//! and MCP surfaces with taskwire-client, and checked against the SDK server
//! itself (the same requests sent to it directly).
//!
//! The SDK server's tools:
//! - `ask_name` (no arguments) asks for a name through form elicitation (one
//!   string property `name`). Under revision 2026-07-28 the SDK answers the
//!   `tools/call` with an `InputRequiredResult` (SEP-2322: `resultType:
//!   "input_required"`, the question keyed `__main__:ask_for_name`, a sealed
//!   `requestState`); the repeated call with the answer returns `hello, <name>`,
//!   a decline a tool error.
//! - `slow` (`seconds`, default 2) sleeps, then returns `slept <n>s`.
//! - `fail` returns a tool error whose text is `Error executing tool fail: it
//!   broke` (the SDK prefixes a ToolError's message).
//!
//! The bridge's card lists all three; an A2A or AG-UI caller, which cannot name a
//! tool, reaches one through a bridge of that tool alone (`…/mcp#slow`). The
//! SDK answers with `application/json` unless a call runs past its SSE window
//! (15 s), which one test shortens (`--sse-ping-interval`) to cover the
//! SDK's `text/event-stream` answer (pings, then the response) too.
//!
//! Every test is `#[ignore]`d (plain `cargo test` reports it as ignored);
//! `.ci/test` runs them with `--include-ignored`, where a missing interpreter or
//! SDK is a failure. The interpreter is `$TASKWIRE_MCP_PY_PYTHON`, else the
//! virtualenv `.ci/setup-mcp-py.sh` makes (`target/mcp-py-venv`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use taskwire_client::a2a::{pb, A2aClient};
use taskwire_client::agui::{
    event_type, AguiClient, AguiEvent, ResumeEntry, ResumeStatus, RunAgentInput,
};
use taskwire_client::mcp::{
    elicit_accept, elicit_decline, ElicitResult, McpClient, McpTaskStatus, ToolCallOutcome,
};

use crate::common::bridge::{
    a2a_client, a2a_send, agui_id, agui_run, artifact_texts, config, elicitation, state,
    status_text, PythonSdk, Restartable, SdkServer, LIMIT,
};

/// The tools of the SDK server, sorted.
const TOOLS: [&str; 3] = ["ask_name", "fail", "slow"];
/// The key the SDK gives `ask_name`'s question: its resolver's wire key,
/// `<module>:<qualname>` (the script runs as `__main__`).
const ASK_KEY: &str = "__main__:ask_for_name";
/// `ask_name`'s question.
const QUESTION: &str = "What is your name?";
/// The text of `fail`'s tool error: the SDK prefixes the ToolError's message
/// (`it broke`) with `Error executing tool <name>: `.
const FAIL_TEXT: &str = "Error executing tool fail: it broke";

/// The SDK server: `mcp_sdk_server.py` (Streamable HTTP at `/mcp`) in the
/// virtualenv of `.ci/setup-mcp-py.sh`.
const MCP_SDK: PythonSdk = PythonSdk {
    name: "the MCP SDK server",
    script: "mcp_sdk_server.py",
    python_var: "TASKWIRE_MCP_PY_PYTHON",
    venv: "mcp-py-venv",
    setup: ".ci/setup-mcp-py.sh",
    needs: "the MCP SDK (mcp==2.3.0, with mcp.server.mcpserver.Resolve) and uvicorn",
    probe: "import mcp.server.mcpserver, uvicorn; from mcp.server.mcpserver import Resolve, Elicit",
    ports: &["--port"],
    path: "/mcp",
    scheme: "mcp",
};

impl SdkServer {
    /// An MCP client of the SDK server itself, declaring form elicitation (the
    /// SDK refuses to ask a client that did not declare it) and not the tasks
    /// extension (the SDK offers none).
    fn direct(&self) -> McpClient {
        McpClient::new(config(&self.base))
            .expect("mcp client")
            .declare_tasks_extension(false)
            .capability("elicitation", json!({"form": {}}))
    }
}

/// The one answer `{name: <name>}` to the SDK's question, keyed as it asked.
fn name_answer(key: &str, name: &str) -> BTreeMap<String, ElicitResult> {
    let mut content = Map::new();
    content.insert("name".into(), Value::String(name.into()));
    BTreeMap::from([(key.to_string(), elicit_accept(content))])
}

/// Asserts that `schema` is the SDK's form for `ask_name`: one required string
/// property `name`.
fn assert_name_form(schema: &Map<String, Value>) {
    assert_eq!(schema.get("type"), Some(&json!("object")), "{schema:?}");
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("no properties: {schema:?}"));
    let keys: Vec<&String> = props.keys().collect();
    assert_eq!(keys, ["name"], "{schema:?}");
    assert_eq!(props["name"]["type"], "string", "{schema:?}");
    assert_eq!(schema.get("required"), Some(&json!(["name"])), "{schema:?}");
}

/// The SDK server on its own (no bridge): what the bridge has to carry. It
/// answers `server/discover` for 2026-07-28 without the tasks extension;
/// `tools/call ask_name` is an `input_required` result with the question keyed
/// `__main__:ask_for_name` and a `requestState`; the call repeated with the
/// answer and that state returns `hello, Ada`, with a decline a tool error, and
/// without the state the question is asked again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn the_sdk_server_asks_for_input_with_an_input_required_result() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let direct = sdk.direct();

    let discovered = direct.discover().await.expect("server/discover");
    assert!(
        discovered
            .supported_versions
            .iter()
            .any(|v| v == "2026-07-28"),
        "{:?}",
        discovered.raw
    );
    assert!(
        !McpClient::offers_tasks(&discovered),
        "the SDK server offers no tasks extension: {:?}",
        discovered.raw
    );

    let asked = direct
        .call_tool("ask_name", json!({}))
        .await
        .expect("tools/call ask_name");
    let (requests, request_state) = match &asked.value {
        ToolCallOutcome::InputRequired(r) => (r.input_requests.clone(), r.request_state.clone()),
        other => panic!("expected input_required, got {other:?}"),
    };
    assert_eq!(asked.raw["resultType"], "input_required", "{:?}", asked.raw);
    let keys: Vec<&String> = requests.keys().collect();
    assert_eq!(keys, [ASK_KEY], "{:?}", asked.raw);
    let (message, schema) = elicitation(&requests[ASK_KEY]);
    assert_eq!(message, QUESTION);
    assert_name_form(&schema);
    assert_eq!(
        asked.raw["inputRequests"][ASK_KEY]["method"], "elicitation/create",
        "{:?}",
        asked.raw
    );
    assert_eq!(
        asked.raw["inputRequests"][ASK_KEY]["params"]["mode"], "form",
        "{:?}",
        asked.raw
    );
    let request_state = request_state.expect("a requestState");
    assert!(!request_state.is_empty());

    let answered = direct
        .call_tool_answering(
            "ask_name",
            json!({}),
            Some(name_answer(ASK_KEY, "Ada")),
            Some(request_state.clone()),
        )
        .await
        .expect("tools/call ask_name with the answer");
    match &answered.value {
        ToolCallOutcome::Complete(r) => {
            assert_ne!(r.is_error, Some(true), "{:?}", answered.raw);
            assert_eq!(r.text(), "hello, Ada", "{:?}", answered.raw);
        }
        other => panic!("expected the tool's result, got {other:?}"),
    }

    let declined = direct
        .call_tool_answering(
            "ask_name",
            json!({}),
            Some(BTreeMap::from([(ASK_KEY.to_string(), elicit_decline())])),
            Some(request_state),
        )
        .await
        .expect("tools/call ask_name declined");
    match &declined.value {
        ToolCallOutcome::Complete(r) => {
            assert_eq!(r.is_error, Some(true), "{:?}", declined.raw);
            assert!(r.text().contains("no name given"), "{:?}", declined.raw);
        }
        other => panic!("expected a tool error, got {other:?}"),
    }

    // The answer alone, without the state that recorded the question: the SDK
    // does not take it and asks again.
    let stateless = direct
        .call_tool_answering(
            "ask_name",
            json!({}),
            Some(name_answer(ASK_KEY, "Ada")),
            None,
        )
        .await
        .expect("tools/call ask_name without state");
    assert!(
        matches!(stateless.value, ToolCallOutcome::InputRequired(_)),
        "{:?}",
        stateless.raw
    );

    let failed = direct
        .call_tool("fail", json!({}))
        .await
        .expect("tools/call fail");
    match &failed.value {
        ToolCallOutcome::Complete(r) => {
            assert_eq!(r.is_error, Some(true), "{:?}", failed.raw);
            assert_eq!(r.text(), FAIL_TEXT, "{:?}", failed.raw);
        }
        other => panic!("expected a tool error, got {other:?}"),
    }
}

/// The bridge's A2A card lists the SDK server's three tools as skills, with
/// the SDK's descriptions; a plain A2A message to that bridge names no tool,
/// so the task is rejected with the list of tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn a2a_card_lists_the_sdk_tools_as_skills() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let own = sdk.direct().list_tools().await.expect("SDK tools/list");
    let bridge = sdk.bridge(None).await;
    let (client, card) = A2aClient::discover(config(&bridge.base))
        .await
        .expect("the bridge's card");
    let card = card.into_inner();
    let mut skills: Vec<(String, String)> = card
        .skills
        .iter()
        .map(|s| (s.id.clone(), s.description.clone()))
        .collect();
    skills.sort();
    let mut want: Vec<(String, String)> = own
        .iter()
        .map(|t| (t.name.clone(), t.description.clone().unwrap_or_default()))
        .collect();
    want.sort();
    assert_eq!(skills, want, "{card:?}");
    let ids: Vec<&str> = skills.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, TOOLS);

    let rejected = a2a_send(&client, "which one?", None, false).await;
    assert_eq!(state(&rejected), pb::TaskState::Rejected, "{rejected:?}");
    let why = status_text(&rejected);
    for t in TOOLS {
        assert!(why.contains(t), "{t} not named in {why:?}");
    }
    bridge.stop().await;
    drop(sdk);
}

/// `slow` over A2A (a bridge of `…/mcp#slow`): a blocking SendMessage ends
/// COMPLETED after the SDK tool's two seconds, with the artifact `result`
/// whose text is `slept 2s`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn a2a_slow_completes_after_the_sleep() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let bridge = sdk.bridge(Some("slow")).await;
    let client = A2aClient::new(config(&bridge.base)).expect("a2a client");

    let started = Instant::now();
    let done = a2a_send(&client, "take your time", None, false).await;
    let took = started.elapsed();
    assert_eq!(state(&done), pb::TaskState::Completed, "{done:?}");
    assert!(
        took >= Duration::from_secs(2),
        "completed after {took:?}, before the tool's 2 s sleep"
    );
    assert_eq!(
        artifact_texts(&done),
        [("result".to_string(), "slept 2s".to_string())],
        "{done:?}"
    );
    let again = client
        .get_task(&done.id, None)
        .await
        .expect("GetTask")
        .into_inner();
    assert_eq!(state(&again), pb::TaskState::Completed, "{again:?}");
    bridge.stop().await;
    drop(sdk);
}

/// `slow` when the SDK answers over SSE: its window before committing to
/// `text/event-stream` (15 s, a private constant) shortened to 0.5 s with the
/// script's `--sse-ping-interval`, a call of a second or more is answered with
/// a stream (`: ping` comments, then the response as an event). Checked
/// directly first (so the override cannot silently have no effect), then
/// through the bridge: the A2A task completes with `slept 2s`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn a2a_slow_answered_by_the_sdk_over_sse_completes() {
    let sdk = SdkServer::start_with(&MCP_SDK, &["--sse-ping-interval", "0.5"]).await;
    let reply = sdk
        .direct()
        .request(
            "tools/call",
            json!({"name": "slow", "arguments": {"seconds": 1}}),
            Some("slow"),
        )
        .await
        .expect("tools/call slow");
    assert!(
        reply
            .media_type
            .as_deref()
            .is_some_and(|m| m.starts_with("text/event-stream")),
        "the SDK did not answer over SSE: {reply:?}"
    );
    assert_eq!(
        reply.response["result"]["content"][0]["text"], "slept 1s",
        "{reply:?}"
    );

    let bridge = sdk.bridge(Some("slow")).await;
    let client = A2aClient::new(config(&bridge.base)).expect("a2a client");
    let started = Instant::now();
    let done = a2a_send(&client, "take your time", None, false).await;
    let took = started.elapsed();
    assert_eq!(
        state(&done),
        pb::TaskState::Completed,
        "{done:?}\nSDK server log:\n{}",
        sdk.logs()
    );
    assert!(took >= Duration::from_secs(2), "completed after {took:?}");
    assert_eq!(
        artifact_texts(&done),
        [("result".to_string(), "slept 2s".to_string())],
        "{done:?}"
    );
    bridge.stop().await;
    drop(sdk);
}

/// `fail` over A2A: the SDK's tool error fails the task, with its text
/// (`Error executing tool fail: it broke`) as the status message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn a2a_fail_ends_failed_with_the_sdk_message() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let bridge = sdk.bridge(Some("fail")).await;
    let client = A2aClient::new(config(&bridge.base)).expect("a2a client");

    let done = a2a_send(&client, "go", None, false).await;
    assert_eq!(state(&done), pb::TaskState::Failed, "{done:?}");
    // The SDK's tool error text, as is (it prefixes the tool's `it broke`).
    assert_eq!(status_text(&done), FAIL_TEXT, "{done:?}");
    assert!(done.artifacts.is_empty(), "{done:?}");
    bridge.stop().await;
    drop(sdk);
}

/// `ask_name` over A2A: the SDK's `input_required` answer makes the task
/// INPUT_REQUIRED with the SDK's question as the status message; a plain-text
/// answer `Ada` to the same task fills the form's one property and completes
/// the task with `hello, Ada`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn a2a_ask_name_asks_and_a_plain_answer_completes_it() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let bridge = sdk.bridge(Some("ask_name")).await;
    let client = A2aClient::new(config(&bridge.base)).expect("a2a client");

    let asked = a2a_send(&client, "greet me", None, false).await;
    assert_eq!(
        state(&asked),
        pb::TaskState::InputRequired,
        "{asked:?}\nSDK server log:\n{}",
        sdk.logs()
    );
    assert_eq!(status_text(&asked), QUESTION, "{asked:?}");

    let done = a2a_send(&client, "Ada", Some(&asked.id), false).await;
    assert_eq!(done.id, asked.id);
    assert_eq!(
        state(&done),
        pb::TaskState::Completed,
        "{done:?}\nSDK server log:\n{}",
        sdk.logs()
    );
    assert_eq!(
        artifact_texts(&done),
        [("result".to_string(), "hello, Ada".to_string())],
        "{done:?}"
    );
    bridge.stop().await;
    drop(sdk);
}

/// `ask_name` over AG-UI: the run ends with RUN_FINISHED outcome interrupt,
/// one interrupt with the SDK's question and form (`{name: string}`) as its
/// response schema, keyed by the SDK's input request key; a resume answering
/// that schema (`{"name": "Ada"}`) ends in success with `hello, Ada`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn agui_ask_name_interrupts_and_a_resume_completes_it() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let bridge = sdk.bridge(Some("ask_name")).await;
    let agui = AguiClient::new(config(&bridge.base)).expect("agui client");

    let thread = agui_id("thread");
    let first = RunAgentInput::new(&thread, agui_id("run")).user_message(agui_id("m"), "greet me");
    let events = agui_run(&agui, &first).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&event_type::RUN_STARTED), "{kinds:?}");
    let end = events.last().expect("events");
    assert_eq!(
        end.kind,
        event_type::RUN_FINISHED,
        "{:?}\nSDK server log:\n{}",
        end.raw,
        sdk.logs()
    );
    assert_eq!(
        end.outcome_type().as_deref(),
        Some("interrupt"),
        "{:?}",
        end.raw
    );
    let interrupts = end.interrupts();
    assert_eq!(interrupts.len(), 1, "{:?}", end.raw);
    let interrupt = &interrupts[0];
    assert_eq!(interrupt["reason"], "input_required", "{interrupt}");
    assert_eq!(interrupt["message"], QUESTION, "{interrupt}");
    let schema = interrupt["responseSchema"]
        .as_object()
        .cloned()
        .unwrap_or_else(|| panic!("no responseSchema: {interrupt}"));
    assert_name_form(&schema);
    let interrupt_id = interrupt["id"].as_str().expect("interrupt id").to_string();
    let task_id = interrupt_id
        .strip_suffix(&format!("/input/{ASK_KEY}"))
        .unwrap_or_else(|| panic!("interrupt id {interrupt_id}"))
        .to_string();

    // The schema asks for `name`: the resume answers it.
    let mut second = RunAgentInput::new(&thread, agui_id("run")).resume(vec![ResumeEntry {
        interrupt_id,
        status: ResumeStatus::Resolved.into(),
        payload: Some(json!({"name": "Ada"})),
        metadata: None,
    }]);
    second.messages = first.messages.clone();
    let events = agui_run(&agui, &second).await;
    let end = events.last().expect("events");
    assert_eq!(
        end.kind,
        event_type::RUN_FINISHED,
        "{:?}\nSDK server log:\n{}",
        end.raw,
        sdk.logs()
    );
    assert_eq!(
        end.outcome_type().as_deref(),
        Some("success"),
        "{:?}",
        end.raw
    );
    assert_eq!(
        end.raw["result"]["taskId"],
        task_id.as_str(),
        "{:?}",
        end.raw
    );
    let all: Vec<String> = events.iter().map(|e| e.raw.to_string()).collect();
    assert!(
        all.iter().any(|e| e.contains("hello, Ada")),
        "no `hello, Ada` among the events: {all:#?}"
    );
    let shown: Vec<&AguiEvent> = events
        .iter()
        .filter(|e| e.kind == event_type::ACTIVITY_SNAPSHOT)
        .collect();
    assert_eq!(shown.len(), 1, "{all:#?}");
    assert_eq!(
        shown[0].raw["content"]["name"], "result",
        "{:?}",
        shown[0].raw
    );
    assert!(
        shown[0].raw["content"]["parts"]
            .to_string()
            .contains("hello, Ada"),
        "{:?}",
        shown[0].raw
    );
    bridge.stop().await;
    drop(sdk);
}

/// `fail` over AG-UI: the run ends with RUN_ERROR carrying the SDK's text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn agui_fail_ends_with_run_error() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let bridge = sdk.bridge(Some("fail")).await;
    let agui = AguiClient::new(config(&bridge.base)).expect("agui client");

    let input =
        RunAgentInput::new(agui_id("thread"), agui_id("run")).user_message(agui_id("m"), "go");
    let events = agui_run(&agui, &input).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&event_type::RUN_STARTED), "{kinds:?}");
    let end = events.last().expect("events");
    assert_eq!(end.kind, event_type::RUN_ERROR, "{kinds:?}: {:?}", end.raw);
    assert_eq!(end.raw["message"], FAIL_TEXT, "{:?}", end.raw);
    assert!(
        !kinds.contains(&event_type::RUN_FINISHED),
        "a failed run also finished: {kinds:?}"
    );
    bridge.stop().await;
    drop(sdk);
}

/// MCP through the bridge: `tools/list` shows the SDK server's three tools with
/// the SDK's own input schemas and descriptions; `slow` called with
/// `{"seconds": 1}` through the bridge (blocking, and as a task) reaches the SDK
/// with that argument.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn mcp_tools_list_through_the_bridge_shows_the_sdk_schemas() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let own = sdk.direct().list_tools().await.expect("SDK tools/list");
    let bridge = sdk.bridge(None).await;
    let mcp = McpClient::new(config(&bridge.base)).expect("mcp client");
    let tools = mcp.list_tools().await.expect("tools/list");

    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS, "{:?}", tools.raw);
    for t in own.iter() {
        let bridged = tools
            .iter()
            .find(|b| b.name == t.name)
            .unwrap_or_else(|| panic!("{} missing: {:?}", t.name, tools.raw));
        assert_eq!(
            bridged.input_schema, t.input_schema,
            "{}: the bridge's schema differs from the SDK's",
            t.name
        );
        assert_eq!(bridged.description, t.description, "{}", t.name);
    }
    // The SDK's schemas themselves, as the script declares them.
    let slow = tools.iter().find(|t| t.name == "slow").expect("slow");
    assert_eq!(
        slow.input_schema["properties"]["seconds"],
        json!({"default": 2, "title": "Seconds", "type": "integer"}),
        "{:?}",
        slow.input_schema
    );
    let ask = tools
        .iter()
        .find(|t| t.name == "ask_name")
        .expect("ask_name");
    assert_eq!(
        ask.input_schema["properties"],
        json!({}),
        "{:?}",
        ask.input_schema
    );

    let blocking = McpClient::new(config(&bridge.base))
        .expect("mcp client")
        .declare_tasks_extension(false);
    let r = blocking
        .call_tool("slow", json!({"seconds": 1}))
        .await
        .expect("tools/call slow");
    match &r.value {
        ToolCallOutcome::Complete(res) => {
            assert_ne!(res.is_error, Some(true), "{:?}", r.raw);
            assert_eq!(res.text(), "slept 1s", "{:?}", r.raw);
        }
        other => panic!("expected the tool's result, got {other:?}"),
    }

    let created = mcp
        .call_tool("slow", json!({"seconds": 1}))
        .await
        .expect("tools/call slow as a task");
    let id = match &created.value {
        ToolCallOutcome::Task(t) => t.task_id.clone(),
        other => panic!("expected a task, got {other:?}"),
    };
    let done = mcp.wait_task(&id, LIMIT).await.expect("tasks/get");
    assert_eq!(done.status, McpTaskStatus::Completed, "{:?}", done.raw);
    assert_eq!(
        done.result.as_ref().expect("result").text(),
        "slept 1s",
        "{:?}",
        done.raw
    );
    bridge.stop().await;
    drop(sdk);
}

/// `ask_name` over MCP through the bridge: the bridged task is input_required
/// with the SDK's own input request (its key, question and form); the answer
/// (tasks/update) completes it with `hello, Ada`. A second call, declined,
/// reaches the SDK as a decline, whose tool error ends the task as a result
/// with `isError: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
async fn mcp_ask_name_through_the_bridge_round_trips() {
    let sdk = SdkServer::start(&MCP_SDK).await;
    let bridge = sdk.bridge(None).await;
    let mcp = McpClient::new(config(&bridge.base)).expect("mcp client");

    let created = mcp
        .call_tool("ask_name", json!({}))
        .await
        .expect("tools/call ask_name");
    let id = match &created.value {
        ToolCallOutcome::Task(t) => t.task_id.clone(),
        other => panic!("expected a task, got {other:?}"),
    };
    let asked = mcp.wait_task(&id, LIMIT).await.expect("tasks/get");
    assert_eq!(
        asked.status,
        McpTaskStatus::InputRequired,
        "{:?}\nSDK server log:\n{}",
        asked.raw,
        sdk.logs()
    );
    let requests = asked.input_requests.clone().unwrap_or_default();
    let keys: Vec<&String> = requests.keys().collect();
    assert_eq!(keys, [ASK_KEY], "{:?}", asked.raw);
    let (message, schema) = elicitation(&requests[ASK_KEY]);
    assert_eq!(message, QUESTION);
    assert_name_form(&schema);

    mcp.update_task(&id, name_answer(ASK_KEY, "Ada"))
        .await
        .expect("tasks/update");
    let done = mcp.wait_task(&id, LIMIT).await.expect("tasks/get");
    assert_eq!(
        done.status,
        McpTaskStatus::Completed,
        "{:?}\nSDK server log:\n{}",
        done.raw,
        sdk.logs()
    );
    let result = done.result.as_ref().expect("result");
    assert_ne!(result.is_error, Some(true), "{:?}", done.raw);
    assert_eq!(result.text(), "hello, Ada", "{:?}", done.raw);

    // Declined: the bridge sends the decline, the SDK answers with a tool
    // error, which fails the bridged task (docs/bridging.md); MCP shows a
    // failed tool as a completed task whose result is `isError: true` (only a
    // JSON-RPC error is `failed`), with the SDK's text.
    let created = mcp
        .call_tool("ask_name", json!({}))
        .await
        .expect("tools/call ask_name");
    let id = match &created.value {
        ToolCallOutcome::Task(t) => t.task_id.clone(),
        other => panic!("expected a task, got {other:?}"),
    };
    let asked = mcp.wait_task(&id, LIMIT).await.expect("tasks/get");
    assert_eq!(
        asked.status,
        McpTaskStatus::InputRequired,
        "{:?}",
        asked.raw
    );
    mcp.update_task(
        &id,
        BTreeMap::from([(ASK_KEY.to_string(), elicit_decline())]),
    )
    .await
    .expect("tasks/update decline");
    let ended = mcp.wait_task(&id, LIMIT).await.expect("tasks/get");
    assert_eq!(ended.status, McpTaskStatus::Completed, "{:?}", ended.raw);
    let result = ended.result.as_ref().expect("result");
    assert_eq!(result.is_error, Some(true), "{:?}", ended.raw);
    assert!(
        result
            .text()
            .contains("no name given (the elicitation was answered with decline)"),
        "the SDK's reason is not shown: {:?}",
        ended.raw
    );
    bridge.stop().await;
    drop(sdk);
}

/// A `taskwire` bridge killed with SIGKILL while its blocking `tools/call`
/// of the SDK's `slow` runs (revision 2026-07-28, no tasks extension: the
/// call is the only handle on the work). The restarted bridge (on the same
/// SQLite store, or another node of the same PostgreSQL store) does not call
/// `slow` again, since it is not marked `idempotentHint`: the task fails
/// saying the upstream may have run it, and the SDK ran the tool once
/// (`LOSS_MCP_BLOCKING_CALL_LOST`; before, the tool ran a second time).
async fn killed_mid_blocking_call(postgres: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some((store, _schema)) = crate::pg::store_in(postgres, dir.path()).await else {
        return;
    };
    let up = SdkServer::start(&MCP_SDK).await;
    let url = format!("mcp+{}#slow", up.endpoint);
    let bridge = Restartable::new(
        dir.path(),
        &["--store", &store, "--upstream", &url, "--lease", "1s"],
    );
    let (mut first, base) = bridge.start(1).await;
    let t = a2a_send(&a2a_client(&base), "nap", None, true).await;
    let (second, base) = bridge
        .killed_once(&mut first, 1, "the blocking call committed", |log| {
            log.contains("upstream link stored")
        })
        .await;
    let ended = bridge.ended(&base, &t.id, 2).await;
    assert_eq!(
        state(&ended),
        pb::TaskState::Failed,
        "{ended:?}\nsecond:\n{}",
        bridge.logs(2)
    );
    let said = status_text(&ended);
    assert!(
        said.contains("may have run the tool") && said.contains("idempotentHint"),
        "{said}"
    );
    // Long enough for a second call to have run, had it been made.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let runs = up.logs().matches("slow: running").count();
    assert_eq!(runs, 1, "{}", up.logs());
    drop(second);
}

mod a_bridge_killed_mid_blocking_call_does_not_call_again {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
    async fn sqlite_restart() {
        super::killed_mid_blocking_call(false).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "interop: needs the Python MCP SDK (.ci/setup-mcp-py.sh); .ci/test runs it with --include-ignored"]
    async fn postgres_other_node() {
        super::killed_mid_blocking_call(true).await
    }
}
