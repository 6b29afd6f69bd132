//! The MCP clients against this repo's MCP adapter: revision 2026-07-28 with
//! the tasks extension and `tasks/continue`, and the 2025-11-25 session.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Map, Value};
use taskwire_client::mcp::{
    self, elicit_accept, McpClient, McpClient2025_11_25, McpTaskStatus, ToolCallOutcome,
};

fn task_id(o: &ToolCallOutcome) -> String {
    match o {
        ToolCallOutcome::Task(t) => t.task_id.clone(),
        other => panic!("expected a task, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_revision_lifecycles() {
    let server = common::start().await;
    let client = McpClient::new(common::config(&server.base)).unwrap();
    let disc = client.discover().await.unwrap();
    assert!(McpClient::offers_tasks(&disc), "{}", disc.raw);
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "run_script"));

    // Echo as a task.
    let created = client
        .call_tool("run_script", json!({"text": "hello"}))
        .await
        .unwrap();
    assert_eq!(created.raw["resultType"], "task");
    let id = task_id(&created);
    let done = client
        .wait_task(&id, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(done.status, McpTaskStatus::Completed);
    assert_eq!(done.result.as_ref().unwrap().text(), "hello");

    // Ask, then answer with tasks/update.
    let id = task_id(
        &client
            .call_tool("run_script", json!({"text": "ask What is your name?"}))
            .await
            .unwrap(),
    );
    let asked = client
        .wait_task(&id, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(asked.status, McpTaskStatus::InputRequired);
    let requests = asked.input_requests.clone().unwrap();
    let key = requests.keys().next().unwrap().clone();
    let mut answers = BTreeMap::new();
    answers.insert(key, elicit_accept(obj(json!({"answer": "Ada"}))));
    client.update_task(&id, answers).await.unwrap();
    let done = client
        .wait_task(&id, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(done.status, McpTaskStatus::Completed);
    assert!(done.result.as_ref().unwrap().text().contains("answer: Ada"));

    // Ask, then answer with tasks/continue.
    let id = task_id(
        &client
            .call_tool("run_script", json!({"text": "ask again?"}))
            .await
            .unwrap(),
    );
    let asked = client
        .wait_task(&id, Duration::from_secs(10))
        .await
        .unwrap();
    let key = asked
        .input_requests
        .clone()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let mut answers = BTreeMap::new();
    answers.insert(key, elicit_accept(obj(json!({"answer": "Bo"}))));
    let cont = client.continue_task(&id, Some(answers)).await.unwrap();
    assert_eq!(cont.task_id, id);
    let done = client
        .wait_task(&id, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(done.status, McpTaskStatus::Completed);

    // Cancel.
    let id = task_id(
        &client
            .call_tool("run_script", json!({"text": "sleep 5000"}))
            .await
            .unwrap(),
    );
    client.cancel_task(&id).await.unwrap();
    let done = client
        .wait_task(&id, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(done.status, McpTaskStatus::Cancelled);

    // Typed errors: unknown task is -32602; no extension is -32021.
    let err = client
        .get_task("0123456789abcdef0123456789abcdef")
        .await
        .unwrap_err();
    assert_eq!(err.rpc_code(), Some(-32602), "{err}");
    let plain = McpClient::new(common::config(&server.base))
        .unwrap()
        .declare_tasks_extension(false);
    let err = plain.get_task(&id).await.unwrap_err();
    assert_eq!(err.rpc_code(), Some(-32021), "{err}");
    assert_eq!(err.http_status(), Some(400));
    // Without the extension tools/call blocks and answers the result.
    let direct = plain
        .call_tool("run_script", json!({"text": "hi"}))
        .await
        .unwrap();
    match &direct.value {
        ToolCallOutcome::Complete(r) => assert_eq!(r.text(), "hi"),
        other => panic!("{other:?}"),
    }
    // Unknown method: 404 with -32601.
    let err = client
        .call_raw("tasks/list", json!({}), None)
        .await
        .unwrap_err();
    assert_eq!(err.rpc_code(), Some(-32601));
    assert_eq!(err.http_status(), Some(404));
    // Raw probe: not JSON.
    let raw = client
        .post_raw("{", &[("MCP-Protocol-Version", mcp::VERSION_2026_07_28)])
        .await
        .unwrap();
    assert_eq!(raw.status, 400);
    assert_eq!(raw.json().unwrap()["error"]["code"], -32700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_for_task_notifications() {
    let server = common::start().await;
    let client = McpClient::new(common::config(&server.base)).unwrap();
    let id = task_id(
        &client
            .call_tool("run_script", json!({"text": "sleep 200\nhello"}))
            .await
            .unwrap(),
    );
    let s = client.listen_tasks(&[&id]).await.unwrap();
    let msgs: Vec<Value> = tokio::time::timeout(Duration::from_secs(10), s.collect::<Vec<_>>())
        .await
        .expect("listen ends")
        .into_iter()
        .map(|m| m.unwrap())
        .collect();
    assert!(msgs
        .iter()
        .any(|m| m["method"] == mcp::method::NOTIFY_SUBSCRIPTIONS_ACK));
    let statuses: Vec<&Value> = msgs
        .iter()
        .filter(|m| m["method"] == mcp::method::NOTIFY_TASKS)
        .map(|m| &m["params"]["status"])
        .collect();
    assert_eq!(
        statuses.last().copied(),
        Some(&json!("completed")),
        "{msgs:?}"
    );
    assert!(msgs.last().unwrap().get("result").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rev_2025_11_25_session_and_tasks() {
    let server = common::start().await;
    let (client, init) = McpClient2025_11_25::connect(common::config(&server.base))
        .await
        .unwrap();
    assert_eq!(init.raw["protocolVersion"], mcp::VERSION_2025_11_25);
    assert!(client.session_id().is_some());
    let tools = client.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "run_script"));

    let task = client
        .call_tool_as_task("run_script", json!({"text": "hello"}), Some(60_000))
        .await
        .unwrap();
    assert!(task.raw["task"]["taskId"].is_string());
    let result = client.task_result(&task.task_id).await.unwrap();
    assert_eq!(result.text(), "hello");
    let got = client.get_task(&task.task_id).await.unwrap();
    assert_eq!(got.status, McpTaskStatus::Completed);
    let page = client.list_tasks(None).await.unwrap();
    assert!(page.tasks.iter().any(|t| t.task_id == task.task_id));

    let sleeping = client
        .call_tool_as_task("run_script", json!({"text": "sleep 5000"}), None)
        .await
        .unwrap();
    let cancelled = client.cancel_task(&sleeping.task_id).await.unwrap();
    assert_eq!(cancelled.status, McpTaskStatus::Cancelled);

    let blocking = client
        .call_tool("run_script", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(blocking.text(), "hi");

    // A blocking call that asks: the elicitation arrives on the SSE answer
    // and the handler answers it in the session.
    let mut asked = Vec::new();
    let mut handler = |req: &Value| {
        asked.push(req["method"].clone());
        serde_json::to_value(elicit_accept(obj(json!({"answer": "Ada"})))).ok()
    };
    let reply = client
        .request_interactive(
            mcp::method::TOOLS_CALL,
            json!({"name": "run_script", "arguments": {"text": "ask What is your name?"}}),
            &mut handler,
        )
        .await
        .unwrap();
    assert_eq!(reply.media_type.as_deref(), Some("text/event-stream"));
    assert_eq!(asked, vec![json!("elicitation/create")]);
    let text = reply.response["result"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("answer: Ada"), "{}", reply.response);

    client.close().await.unwrap();
    assert!(client.session_id().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rev_2025_11_25_task_result_events_arrive_one_by_one() {
    let server = common::start().await;
    let (client, _) = McpClient2025_11_25::connect(common::config(&server.base))
        .await
        .unwrap();
    let task = client
        .call_tool_as_task("run_script", json!({"text": "ask Colour?"}), None)
        .await
        .unwrap();
    let mut events = client
        .request_events(mcp::method::TASKS_RESULT, json!({"taskId": task.task_id}))
        .await
        .unwrap();
    let mut seen = Vec::new();
    let deadline = Duration::from_secs(10);
    loop {
        let msg = tokio::time::timeout(deadline, events.next())
            .await
            .expect("an event in time")
            .expect("the stream goes on until the response")
            .unwrap();
        if msg["method"] == "elicitation/create" {
            // Answered while the stream is still open: the task goes on.
            client
                .respond(
                    msg["id"].clone(),
                    &elicit_accept(obj(json!({"answer": "teal"}))),
                )
                .await
                .unwrap();
        }
        seen.push(msg["method"].as_str().unwrap_or("(response)").to_string());
        if msg.get("result").is_some() || msg.get("error").is_some() {
            let text = msg["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("answer: teal"), "{msg}");
            break;
        }
    }
    assert_eq!(
        seen.first().map(String::as_str),
        Some("notifications/tasks/status")
    );
    assert!(seen.iter().any(|m| m == "elicitation/create"), "{seen:?}");
    // A terminal task answers with JSON: one message, the response.
    let mut again = client
        .request_events(mcp::method::TASKS_RESULT, json!({"taskId": task.task_id}))
        .await
        .unwrap();
    let only = again.next().await.unwrap().unwrap();
    assert!(only["result"]["content"].is_array(), "{only}");
    assert!(again.next().await.is_none());
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}
