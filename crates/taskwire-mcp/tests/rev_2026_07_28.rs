//! Revision 2026-07-28 with the tasks extension (SEP-2663) and tasks/continue,
//! over raw HTTP, with golden fixtures for every message shape.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{golden, Server, EXT, V};
use serde_json::{json, Value};
use taskwire_mcp::{McpConfig, TaskMode};

fn call_params(text: &str) -> Value {
    json!({"name": "run_script", "arguments": {"text": text}})
}

async fn start_task(s: &Server, text: &str) -> String {
    let (st, r) = s.call("tools/call", call_params(text), true).await;
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    r["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_string()
}

#[tokio::test]
async fn discover_and_tools_list() {
    let s = Server::start().await;
    let (st, r) = s.call("server/discover", json!({}), false).await;
    assert_eq!(st, 200);
    assert_eq!(r["result"]["supportedVersions"], json!([V]));
    assert_eq!(
        r["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({"eventStreams": {}}),
        "tasks/stream (SEP-2694) is offered as the tasks extension's eventStreams"
    );
    golden("rev_2026_07_28_discover", &r);
    let (st, r) = s.call("tools/list", json!({}), false).await;
    assert_eq!(st, 200);
    assert_eq!(r["result"]["tools"][0]["name"], "run_script");
    golden("rev_2026_07_28_tools_list", &r);
    s.shutdown().await;
}

#[tokio::test]
async fn tools_call_answers_with_a_task_then_polls_to_completion() {
    let s = Server::start().await;
    let (st, r) = s.call("tools/call", call_params("hello"), true).await;
    assert_eq!(st, 200);
    golden("rev_2026_07_28_create_task_result", &r);
    let id = r["result"]["taskId"].as_str().unwrap().to_string();
    let done = s.poll(&id, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "hello");
    assert_eq!(done["resultType"], "complete");
    golden("rev_2026_07_28_get_completed", &json!({"result": done}));
    s.shutdown().await;
}

#[tokio::test]
async fn ask_is_an_elicitation_answered_with_tasks_update() {
    let s = Server::start().await;
    let id = start_task(&s, "ask What is your name?").await;
    let t = s.poll(&id, |t| t["status"] == "input_required").await;
    golden("rev_2026_07_28_get_input_required", &json!({"result": t}));
    let req = &t["inputRequests"]["ask-0"];
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["mode"], "form");
    // Unknown keys are ignored; the known one is applied.
    let (st, r) = s
        .call(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {
                "nope": {"action": "accept", "content": {"answer": "x"}},
                "ask-0": {"action": "accept", "content": {"answer": "Bob"}}
            }}),
            true,
        )
        .await;
    assert_eq!(st, 200);
    golden("rev_2026_07_28_update_result", &r);
    let done = s.poll(&id, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "answer: Bob");
    // A second answer to the same key is ignored.
    let (st, r) = s
        .call(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"ask-0": {"action": "accept", "content": {"answer": "again"}}}}),
            true,
        )
        .await;
    assert_eq!(
        (st, r["result"]["resultType"].clone()),
        (200, json!("complete"))
    );
    s.shutdown().await;
}

#[tokio::test]
async fn declining_an_ask_ends_the_task_with_is_error() {
    let s = Server::start().await;
    let id = start_task(&s, "ask Continue?").await;
    s.poll(&id, |t| t["status"] == "input_required").await;
    s.call(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"ask-0": {"action": "decline"}}}),
        true,
    )
    .await;
    let done = s.poll(&id, |t| t["status"] == "completed").await;
    assert_eq!(done["result"]["isError"], true);
    s.shutdown().await;
}

#[tokio::test]
async fn tasks_continue_applies_responses_and_returns_the_detailed_task() {
    let s = Server::start().await;
    let id = start_task(&s, "ask Colour?").await;
    s.poll(&id, |t| t["status"] == "input_required").await;
    // No responses: a pure read like tasks/get.
    let (st, r) = s.call("tasks/continue", json!({"taskId": id}), true).await;
    assert_eq!(st, 200);
    assert_eq!(r["result"]["status"], "input_required");
    let (st, r) = s
        .call(
            "tasks/continue",
            json!({"taskId": id, "inputResponses": {"ask-0": {"action": "accept", "content": {"answer": "red"}}}}),
            true,
        )
        .await;
    assert_eq!(st, 200);
    assert_ne!(r["result"]["status"], "input_required", "{r}");
    let mut last = r;
    for _ in 0..500 {
        if last["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        last = s
            .call("tasks/continue", json!({"taskId": id}), true)
            .await
            .1;
    }
    assert_eq!(
        last["result"]["result"]["content"][0]["text"],
        "answer: red"
    );
    golden("rev_2026_07_28_continue_completed", &last);
    s.shutdown().await;
}

#[tokio::test]
async fn cancel_a_sleeping_task() {
    let s = Server::start().await;
    let id = start_task(&s, "sleep 20000").await;
    let (st, r) = s.call("tasks/cancel", json!({"taskId": id}), true).await;
    assert_eq!(st, 200);
    golden("rev_2026_07_28_cancel_result", &r);
    let t = s.poll(&id, |t| t["status"] == "cancelled").await;
    golden("rev_2026_07_28_get_cancelled", &json!({"result": t}));
    // Cancelling again is acknowledged.
    let (st, _) = s.call("tasks/cancel", json!({"taskId": id}), true).await;
    assert_eq!(st, 200);
    s.shutdown().await;
}

#[tokio::test]
async fn agent_failure_is_is_error_and_crash_is_failed() {
    let s = Server::start().await;
    let id = start_task(&s, "fail out of paper").await;
    let t = s.poll(&id, |t| t["status"] == "completed").await;
    assert_eq!(t["result"]["isError"], true);
    golden("rev_2026_07_28_get_agent_failed", &json!({"result": t}));
    let id = start_task(&s, "crash").await;
    let t = s.poll(&id, |t| t["status"] == "failed").await;
    assert_eq!(t["error"]["code"], -32603);
    assert!(!t["error"]["message"]
        .as_str()
        .unwrap()
        .contains("scripted crash"));
    golden("rev_2026_07_28_get_failed", &json!({"result": t}));
    s.shutdown().await;
}

#[tokio::test]
async fn auth_is_a_url_elicitation_and_review_a_confirmation() {
    let s = Server::start().await;
    let id = start_task(&s, "auth github\nhello").await;
    let t = s.poll(&id, |t| t["status"] == "input_required").await;
    golden("rev_2026_07_28_get_auth_required", &json!({"result": t}));
    s.call(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"taskwire.auth/github": {"action": "accept"}}}),
        true,
    )
    .await;
    s.poll(&id, |t| t["status"] == "completed").await;

    let id = start_task(&s, "review\nhello").await;
    let t = s.poll(&id, |t| t["status"] == "input_required").await;
    golden("rev_2026_07_28_get_review_required", &json!({"result": t}));
    s.call(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"taskwire.review/review-0": {"action": "accept", "content": {"approved": true}}}}),
        true,
    )
    .await;
    let t = s.poll(&id, |t| t["status"] == "completed").await;
    assert!(t["result"].get("isError").is_none(), "{t}");
    s.shutdown().await;
}

#[tokio::test]
async fn without_the_extension_tools_call_blocks() {
    let s = Server::start().await;
    let (st, r) = s.call("tools/call", call_params("hello"), false).await;
    assert_eq!(st, 200);
    assert_eq!(r["result"]["content"][0]["text"], "hello");
    golden("rev_2026_07_28_call_tool_result", &r);
    // A tool that needs input, for a client that declared neither tasks nor
    // elicitation: -32021 naming the capability.
    let (st, r) = s.call("tools/call", call_params("ask why?"), false).await;
    assert_eq!(st, 400);
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    golden("rev_2026_07_28_call_needs_tasks", &r);
    s.shutdown().await;
}

/// SEP-2322: a client that waits for the result and can elicit gets an
/// InputRequiredResult; repeating the call with the answers and the
/// requestState continues the same task.
#[tokio::test]
async fn input_required_results_continue_the_same_task() {
    let s = Server::start().await;
    let elicit = json!({"elicitation": {}});
    let (st, r) = s
        .call_with_caps(
            "alice",
            "tools/call",
            call_params("ask What is your name?"),
            elicit.clone(),
        )
        .await;
    assert_eq!(st, 200, "{r}");
    let res = &r["result"];
    assert_eq!(res["resultType"], "input_required", "{r}");
    assert!(res.get("taskId").is_none(), "{r}");
    let (key, req) = res["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    assert_eq!(req["method"], "elicitation/create");
    assert_eq!(req["params"]["message"], "What is your name?");
    let state = res["requestState"].as_str().unwrap().to_string();
    golden("rev_2026_07_28_call_input_required", &r);

    let repeat = |responses: Value, state: &str| {
        let mut p = call_params("ask What is your name?");
        p["inputResponses"] = responses;
        p["requestState"] = json!(state);
        p
    };
    let answer = json!({ key.clone(): {"action": "accept", "content": {"answer": "Ada"}} });
    // Altered, or presented by another principal: refused, nothing answered.
    let mut altered = state.clone().into_bytes();
    let last = altered.len() - 1;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let (_, r) = s
        .call_with_caps(
            "alice",
            "tools/call",
            repeat(answer.clone(), &altered),
            elicit.clone(),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let (_, r) = s
        .call_with_caps(
            "bob",
            "tools/call",
            repeat(answer.clone(), &state),
            elicit.clone(),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // Wrong keys: asked again, with a new state for the same task.
    let (_, r) = s
        .call_with_caps(
            "alice",
            "tools/call",
            repeat(json!({"nope": {"action": "accept", "content": {}}}), &state),
            elicit.clone(),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    assert!(r["result"]["inputRequests"].get(key).is_some(), "{r}");
    // The answer: the same task completes with it.
    let (st, r) = s
        .call_with_caps("alice", "tools/call", repeat(answer, &state), elicit)
        .await;
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    let text = r["result"]["content"].to_string();
    assert!(text.contains("answer: Ada"), "{r}");
    s.shutdown().await;
}

#[tokio::test]
async fn blocking_call_times_out_with_a_clear_error() {
    let s = Server::with_config({
        let mut v = McpConfig::default();
        v.call_timeout = Duration::from_millis(200);
        v
    })
    .await;
    let (st, r) = s.call("tools/call", call_params("sleep 5000"), false).await;
    assert_eq!(st, 200);
    assert_eq!(r["error"]["code"], -32603);
    assert!(r["error"]["message"].as_str().unwrap().contains("200 ms"));
    golden("rev_2026_07_28_call_timeout", &r);
    s.shutdown().await;
}

#[tokio::test]
async fn task_mode_after_returns_quick_results_directly() {
    let s = Server::with_config({
        let mut v = McpConfig::default();
        v.task_mode = TaskMode::After(3000);
        v
    })
    .await;
    let (_, r) = s.call("tools/call", call_params("hello"), true).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "hello");
    let (_, r) = s.call("tools/call", call_params("ask who?"), true).await;
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    assert_eq!(r["result"]["status"], "input_required");
    s.shutdown().await;
}

#[tokio::test]
async fn subscriptions_listen_streams_task_notifications() {
    let s = Server::start().await;
    let id = start_task(&s, "ask Name?").await;
    s.poll(&id, |t| t["status"] == "input_required").await;
    let body = json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {common::EXT: {}}}
        },
        "notifications": {"taskIds": [id, "ffffffffffffffffffffffffffffffff"]}
    }});
    let resp = s
        .http
        .post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", V)
        .header("mcp-method", "subscriptions/listen")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut sse = common::SseReader::new(resp);
    let ack = sse.next().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));
    golden("rev_2026_07_28_subscriptions_acknowledged", &ack);
    let first = sse.next().await.unwrap();
    assert_eq!(first["method"], "notifications/tasks");
    assert_eq!(first["params"]["status"], "input_required");
    golden("rev_2026_07_28_notification_tasks", &first);
    s.call(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"ask-0": {"action": "accept", "content": {"answer": "Ann"}}}}),
        true,
    )
    .await;
    let mut statuses = vec![];
    let mut last = Value::Null;
    while let Some(m) = sse.next().await {
        if m["method"] == "notifications/tasks" {
            statuses.push(m["params"]["status"].clone());
        }
        last = m;
    }
    assert_eq!(statuses.last(), Some(&json!("completed")), "{statuses:?}");
    assert_eq!(last["id"], "sub-1");
    golden("rev_2026_07_28_subscriptions_listen_result", &last);
    s.shutdown().await;
}

#[tokio::test]
async fn rejects_streams_and_replies_map_to_call_tool_results() {
    let s = Server::start().await;
    let id = start_task(&s, "reject not today").await;
    let t = s.poll(&id, |t| t["status"] == "completed").await;
    assert_eq!(t["result"]["isError"], true);
    assert_eq!(t["result"]["content"][0]["text"], "not today");
    golden("rev_2026_07_28_get_rejected", &json!({"result": t}));
    let id = start_task(&s, "stream 3").await;
    let t = s.poll(&id, |t| t["status"] == "completed").await;
    let texts: Vec<&str> = t["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    assert_eq!(texts.concat(), "chunk 1 of 3\nchunk 2 of 3\nchunk 3 of 3\n");
    let id = start_task(&s, "message\nhello there").await;
    let t = s.poll(&id, |t| t["status"] == "completed").await;
    let all = t["result"]["content"].to_string();
    assert!(all.contains("hello there"), "{all}");
    s.shutdown().await;
}

/// A skill's task support decides, whatever the client offers: a sync-only tool
/// answers with its result even to a client that follows tasks, and a tool
/// that runs only as a task refuses a client that cannot follow one (-32021)
/// before anything runs.
#[tokio::test]
async fn task_support_of_the_skill_decides() {
    use taskwire_mcp::fixture::McpConformanceAgent;
    let s = Server::with_agent(Arc::new(McpConformanceAgent::new()), McpConfig::default()).await;
    let (st, r) = s
        .call(
            "tools/call",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
            true,
        )
        .await;
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "Hello, Ada!", "{r}");
    let (st, r) = s
        .call(
            "tools/call",
            json!({"name": "failing_job", "arguments": {}}),
            false,
        )
        .await;
    assert_eq!(
        (st, r["error"]["code"].clone()),
        (400, json!(-32021)),
        "{r}"
    );
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"]["extensions"],
        json!({"io.modelcontextprotocol/tasks": {}})
    );
    let (st, r) = s
        .call(
            "tools/call",
            json!({"name": "failing_job", "arguments": {}}),
            true,
        )
        .await;
    assert_eq!(st, 200, "{r}");
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    s.shutdown().await;
}

/// A waiting tools/call with a progressToken is answered as a stream: one
/// notifications/progress per step (increasing), then the result.
#[tokio::test]
async fn progress_notifications_precede_the_result() {
    let s = Server::start().await;
    let mut p = call_params("steps 2");
    p["_meta"] = json!({"progressToken": "tok-1"});
    let (st, r) = s.call("tools/call", p, false).await;
    assert_eq!(st, 200, "{r}");
    let msgs = r.as_array().expect("an SSE answer");
    let (last, progress) = msgs.split_last().unwrap();
    assert!(last["result"]["content"].is_array(), "{r}");
    assert!(progress.len() >= 4, "two steps started and finished: {r}");
    let mut prev = 0;
    for m in progress {
        assert_eq!(m["method"], "notifications/progress", "{r}");
        assert_eq!(m["params"]["progressToken"], "tok-1");
        let n = m["params"]["progress"].as_u64().unwrap();
        assert!(n > prev, "progress must increase: {r}");
        prev = n;
    }
    assert_eq!(progress[0]["params"]["message"], "step-1 started");
    s.shutdown().await;
}

/// SEP-2322 rounds before the task (SEP-2663's composition, the official
/// suite's `tasks-mrtr-composition`): an input-first tool answers a client that
/// follows tasks with `input_required` and no task id; the round that answers
/// gets the task (no requestState, no inputRequests), whose result carries the
/// answer. A tool that is not input-first still answers with the task at once,
/// and a client that cannot answer the input in rounds gets the task too.
#[tokio::test]
async fn input_first_tools_ask_before_the_task() {
    use taskwire_mcp::fixture::McpConformanceAgent;
    let s = Server::with_agent(Arc::new(McpConformanceAgent::new()), McpConfig::default()).await;
    let caps = json!({"elicitation": {}, "extensions": {EXT: {}}});
    let call = json!({"name": "test_tool_with_task", "arguments": {}});
    let (st, r1) = s
        .call_with_caps("alice", "tools/call", call.clone(), caps.clone())
        .await;
    assert_eq!(st, 200, "{r1}");
    let r1 = &r1["result"];
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    assert!(r1.get("taskId").is_none(), "no task on the wire yet: {r1}");
    let key = r1["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("an input request");
    let state = r1["requestState"].as_str().expect("a requestState");

    // Another principal cannot use the state.
    let mut round2 = call.clone();
    round2["inputResponses"] =
        json!({key.clone(): {"action": "accept", "content": {"name": "Alice"}}});
    round2["requestState"] = json!(state);
    let (_, r) = s
        .call_with_caps("mallory", "tools/call", round2.clone(), caps.clone())
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    let (st, r2) = s
        .call_with_caps("alice", "tools/call", round2, caps.clone())
        .await;
    assert_eq!(st, 200, "{r2}");
    let r2 = &r2["result"];
    assert_eq!(r2["resultType"], "task", "{r2}");
    assert!(r2.get("requestState").is_none(), "{r2}");
    assert!(r2.get("inputRequests").is_none(), "{r2}");
    let id = r2["taskId"].as_str().expect("a task id").to_string();
    let done = s.poll(&id, |t| t["status"] == "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hello, Alice!",
        "{done}"
    );

    // Not input-first: the task comes at once and asks through tasks/get.
    let (_, r) = s
        .call_with_caps(
            "alice",
            "tools/call",
            json!({"name": "confirm_delete", "arguments": {}}),
            caps.clone(),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "task", "{r}");

    // No elicitation capability: no rounds, the task (input through tasks/update).
    let (_, r) = s
        .call_with_caps(
            "alice",
            "tools/call",
            call,
            json!({"extensions": {EXT: {}}}),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    let id = r["result"]["taskId"].as_str().unwrap().to_string();
    let t = s.poll(&id, |t| t["status"] == "input_required").await;
    assert!(
        t["inputRequests"]
            .as_object()
            .is_some_and(|m| !m.is_empty()),
        "{t}"
    );
    s.shutdown().await;
}
