//! Interop with the official Rust SDK `rmcp` 3.x as the client of revision
//! 2026-07-28 with the tasks extension (SEP-2663): `server/discover` lifecycle,
//! `tools/list`, `call_tool_once` getting a task, `get_task` polling, `update_task`
//! answering an `ask` elicitation, `cancel_task` on a `sleep` task, and an unknown
//! task id.

mod common;

use std::time::Duration;

use common::Server;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    ExtensionCapabilities, GetTaskParams, Implementation, InputResponses, ProtocolVersion,
    TaskPayload, TaskStatus, UpdateTaskParams, TASKS_EXTENSION_ID,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::RoleClient;
use serde_json::json;

type Client = RunningService<RoleClient, ClientConfig>;

async fn connect(s: &Server) -> Client {
    let mut caps = ClientCapabilities::default();
    let mut ext = ExtensionCapabilities::new();
    ext.insert(TASKS_EXTENSION_ID.to_string(), Default::default());
    caps.extensions = Some(ext);
    let config = ClientConfig::new(caps, Implementation::new("taskwire-interop", "1"));
    let transport = StreamableHttpClientTransport::from_uri(s.url.clone());
    config
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("rmcp connects with server/discover")
}

async fn call(c: &Client, text: &str) -> String {
    let args = json!({"text": text}).as_object().cloned().expect("object");
    let r = c
        .call_tool_once(CallToolRequestParams::new("run_script").with_arguments(args))
        .await
        .expect("tools/call");
    match r {
        CallToolResponse::Task(t) => t.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

async fn poll(c: &Client, id: &str, want: TaskStatus) -> TaskPayload {
    for _ in 0..500 {
        let r = c.get_task(GetTaskParams::new(id)).await.expect("tasks/get");
        if r.task.status() == want {
            return r.task.payload;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} never reached {want:?}");
}

fn first_text(result: &serde_json::Map<String, serde_json::Value>) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn rmcp_call_tool_once_poll_to_completion() {
    let s = Server::start().await;
    let c = connect(&s).await;
    let tools = c.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "run_script"));
    let id = call(&c, "hello from rmcp").await;
    match poll(&c, &id, TaskStatus::Completed).await {
        TaskPayload::Completed { result } => assert_eq!(first_text(&result), "hello from rmcp"),
        other => panic!("unexpected {other:?}"),
    }
    c.cancel().await.ok();
    s.shutdown().await;
}

#[tokio::test]
async fn rmcp_update_task_answers_an_ask() {
    let s = Server::start().await;
    let c = connect(&s).await;
    let id = call(&c, "ask What is your name?").await;
    match poll(&c, &id, TaskStatus::InputRequired).await {
        TaskPayload::InputRequired { input_requests } => {
            assert!(input_requests.contains_key("ask-0"), "{input_requests:?}")
        }
        other => panic!("unexpected {other:?}"),
    }
    let mut responses = InputResponses::new();
    responses.insert(
        "ask-0".into(),
        json!({"action": "accept", "content": {"answer": "Bob"}}),
    );
    c.update_task(UpdateTaskParams::new(id.clone(), responses))
        .await
        .expect("tasks/update");
    match poll(&c, &id, TaskStatus::Completed).await {
        TaskPayload::Completed { result } => assert_eq!(first_text(&result), "answer: Bob"),
        other => panic!("unexpected {other:?}"),
    }
    c.cancel().await.ok();
    s.shutdown().await;
}

#[tokio::test]
async fn rmcp_cancel_task_and_unknown_task() {
    let s = Server::start().await;
    let c = connect(&s).await;
    let id = call(&c, "sleep 20000").await;
    c.cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("tasks/cancel");
    poll(&c, &id, TaskStatus::Cancelled).await;
    let err = c
        .get_task(GetTaskParams::new("0123456789abcdef0123456789abcdef"))
        .await
        .expect_err("unknown task");
    let text = format!("{err:?}");
    assert!(
        text.contains("-32602") || text.contains("InvalidParams") || text.contains("unknown task"),
        "{text}"
    );
    c.cancel().await.ok();
    s.shutdown().await;
}
