//! JSON-RPC binding: every method, envelope errors, versions, SSE and golden fixtures.

mod common;

use std::time::Duration;

use common::{check_fixture, send_params, start, test_config};
use serde_json::{json, Value};

fn task_id(v: &Value) -> String {
    v["result"]["task"]["id"]
        .as_str()
        .or_else(|| v["result"]["id"].as_str())
        .expect("a task id")
        .to_string()
}

fn state(v: &Value) -> &str {
    v["result"]["task"]["status"]["state"]
        .as_str()
        .or_else(|| v["result"]["status"]["state"].as_str())
        .unwrap_or("")
}

async fn wait_state(s: &common::Server, id: &str, want: &str) -> Value {
    for _ in 0..200 {
        let r = s.rpc("GetTask", json!({"id": id})).await;
        if state(&r) == want {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {id} never reached {want}");
}

#[tokio::test]
async fn send_message_blocks_until_completed() {
    let s = start(test_config()).await;
    let r = s.rpc("SendMessage", send_params("hello", "fixed-m1")).await;
    assert_eq!(state(&r), "TASK_STATE_COMPLETED", "{r}");
    let art = &r["result"]["task"]["artifacts"][0];
    assert_eq!(art["name"], "echo");
    assert_eq!(art["parts"][0]["text"], "hello");
    check_fixture("send_message_task", &r);
    s.stop().await;
}

#[tokio::test]
async fn return_immediately_and_history_length() {
    let s = start(test_config()).await;
    let mut p = send_params("sleep 300\nhi", "m-imm");
    p["configuration"] = json!({"returnImmediately": true, "historyLength": 0});
    let r = s.rpc("SendMessage", p).await;
    let st = state(&r).to_string();
    assert!(
        st == "TASK_STATE_SUBMITTED" || st == "TASK_STATE_WORKING",
        "{r}"
    );
    assert!(r["result"]["task"].get("history").is_none(), "{r}");
    let id = task_id(&r);
    let done = wait_state(&s, &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(done["result"]["history"].as_array().unwrap().len(), 1);
    let trimmed = s
        .rpc("GetTask", json!({"id": id, "historyLength": 0}))
        .await;
    assert!(trimmed["result"].get("history").is_none());
    check_fixture("get_task", &done);
    s.stop().await;
}

#[tokio::test]
async fn retried_send_returns_the_same_task() {
    let s = start(test_config()).await;
    let a = s.rpc("SendMessage", send_params("once", "m-retry")).await;
    let b = s.rpc("SendMessage", send_params("once", "m-retry")).await;
    assert_eq!(task_id(&a), task_id(&b));
    let l = s.rpc("ListTasks", json!({})).await;
    assert_eq!(l["result"]["totalSize"], 1, "{l}");
    s.stop().await;
}

#[tokio::test]
async fn input_required_round_trip_and_terminal_refusal() {
    let s = start(test_config()).await;
    let r = s
        .rpc("SendMessage", send_params("ask your name?", "m-ask"))
        .await;
    assert_eq!(state(&r), "TASK_STATE_INPUT_REQUIRED", "{r}");
    assert_eq!(
        r["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "your name?"
    );
    check_fixture("send_message_input_required", &r);
    let id = task_id(&r);
    let ctx = r["result"]["task"]["contextId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut p = send_params("bob", "m-answer");
    p["message"]["taskId"] = json!(id);
    p["message"]["contextId"] = json!(ctx);
    let r2 = s.rpc("SendMessage", p.clone()).await;
    assert_eq!(state(&r2), "TASK_STATE_COMPLETED", "{r2}");
    assert_eq!(task_id(&r2), id);
    let arts = r2["result"]["task"]["artifacts"].as_array().unwrap();
    assert!(arts.iter().any(|a| a["parts"][0]["text"] == "answer: bob"));
    // The same continuation again is a retry: same task, no error.
    let again = s.rpc("SendMessage", p).await;
    assert_eq!(task_id(&again), id, "{again}");
    // A new message to the completed task is refused.
    let mut p3 = send_params("more", "m-late");
    p3["message"]["taskId"] = json!(id);
    let e = s.rpc("SendMessage", p3).await;
    assert_eq!(e["error"]["code"], -32004, "{e}");
    check_fixture("error_unsupported_operation", &e);
    // A wrong contextId is an error.
    let r4 = s
        .rpc("SendMessage", send_params("ask again?", "m-ask2"))
        .await;
    let mut p5 = send_params("x", "m-mismatch");
    p5["message"]["taskId"] = json!(task_id(&r4));
    p5["message"]["contextId"] = json!("not-the-context");
    let e = s.rpc("SendMessage", p5).await;
    assert_eq!(e["error"]["code"], -32602, "{e}");
    s.stop().await;
}

#[tokio::test]
async fn known_context_starts_a_new_task_in_it() {
    let s = start(test_config()).await;
    let a = s.rpc("SendMessage", send_params("one", "m-c1")).await;
    let ctx = a["result"]["task"]["contextId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut p = send_params("two", "m-c2");
    p["message"]["contextId"] = json!(ctx);
    let b = s.rpc("SendMessage", p).await;
    assert_ne!(task_id(&a), task_id(&b));
    assert_eq!(b["result"]["task"]["contextId"], json!(ctx));
    let l = s.rpc("ListTasks", json!({"contextId": ctx})).await;
    assert_eq!(l["result"]["tasks"].as_array().unwrap().len(), 2);
    s.stop().await;
}

#[tokio::test]
async fn other_callers_tasks_are_not_found() {
    let s = start(test_config()).await;
    let r = s.rpc("SendMessage", send_params("mine", "m-own")).await;
    let id = task_id(&r);
    let e = s.rpc_as("mallory", "GetTask", json!({"id": id})).await;
    assert_eq!(e["error"]["code"], -32001, "{e}");
    assert_eq!(e["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    assert_eq!(e["error"]["data"][0]["domain"], "a2a-protocol.org");
    check_fixture("error_task_not_found", &e);
    for (m, p) in [
        ("CancelTask", json!({"id": id})),
        ("SubscribeToTask", json!({"id": id})),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
    ] {
        let e = s.rpc_as("mallory", m, p).await;
        assert_eq!(e["error"]["code"], -32001, "{m}: {e}");
    }
    let mut p = send_params("sneak", "m-sneak");
    p["message"]["taskId"] = json!(id);
    let e = s.rpc_as("mallory", "SendMessage", p).await;
    assert_eq!(e["error"]["code"], -32001);
    let l = s.rpc_as("mallory", "ListTasks", json!({})).await;
    assert_eq!(l["result"]["totalSize"].as_i64().unwrap_or(0), 0, "{l}");
    s.stop().await;
}

#[tokio::test]
async fn list_tasks_filters_and_pages() {
    let s = start(test_config()).await;
    let asked = s.rpc("SendMessage", send_params("ask q?", "m-lq")).await;
    for i in 0..3 {
        s.rpc("SendMessage", send_params("done", &format!("m-l{i}")))
            .await;
    }
    let p1 = s.rpc("ListTasks", json!({"pageSize": 2})).await;
    assert_eq!(p1["result"]["tasks"].as_array().unwrap().len(), 2, "{p1}");
    assert_eq!(p1["result"]["totalSize"], 4);
    assert_eq!(p1["result"]["pageSize"], 2);
    let tok = p1["result"]["nextPageToken"].as_str().unwrap().to_string();
    assert!(!tok.is_empty());
    let p2 = s
        .rpc("ListTasks", json!({"pageSize": 2, "pageToken": tok}))
        .await;
    assert_eq!(p2["result"]["tasks"].as_array().unwrap().len(), 2);
    assert!(p2["result"].get("nextPageToken").is_none() || p2["result"]["nextPageToken"] == "");
    let ir = s
        .rpc("ListTasks", json!({"status": "TASK_STATE_INPUT_REQUIRED"}))
        .await;
    let tasks = ir["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["id"], asked["result"]["task"]["id"]);
    assert!(tasks[0].get("artifacts").is_none());
    check_fixture("list_tasks", &ir);
    let future = s
        .rpc(
            "ListTasks",
            json!({"statusTimestampAfter": "2999-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(future["result"]["tasks"].as_array().map_or(0, Vec::len), 0);
    let past = s
        .rpc(
            "ListTasks",
            json!({"statusTimestampAfter": "2000-01-01T00:00:00Z", "includeArtifacts": true}),
        )
        .await;
    assert_eq!(past["result"]["tasks"].as_array().unwrap().len(), 4);
    // Newest status first: the oldest task, answered last, leads the list, and a
    // status-time filter counts only what it returns.
    let before = s.rpc("ListTasks", json!({})).await;
    assert_ne!(
        before["result"]["tasks"][0]["id"],
        asked["result"]["task"]["id"]
    );
    let mut answer = send_params("blue", "m-lq-answer");
    answer["message"]["taskId"] = asked["result"]["task"]["id"].clone();
    let answered = s.rpc("SendMessage", answer).await;
    assert_eq!(
        answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answered}"
    );
    let after = s.rpc("ListTasks", json!({})).await;
    let order: Vec<&Value> = after["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["id"])
        .collect();
    assert_eq!(order[0], &asked["result"]["task"]["id"], "{after}");
    let stamps: Vec<chrono::DateTime<chrono::FixedOffset>> = after["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            chrono::DateTime::parse_from_rfc3339(t["status"]["timestamp"].as_str().unwrap())
                .unwrap()
        })
        .collect();
    assert!(stamps.windows(2).all(|w| w[0] >= w[1]), "{stamps:?}");
    let since = s
        .rpc(
            "ListTasks",
            json!({"statusTimestampAfter": answered["result"]["task"]["status"]["timestamp"]}),
        )
        .await;
    assert_eq!(since["result"]["totalSize"], 1, "{since}");
    assert_eq!(
        since["result"]["tasks"][0]["id"],
        asked["result"]["task"]["id"]
    );
    let bad = s.rpc("ListTasks", json!({"pageSize": 500})).await;
    assert_eq!(bad["error"]["code"], -32602);
    let bad = s.rpc("ListTasks", json!({"pageToken": "garbage"})).await;
    assert_eq!(bad["error"]["code"], -32602);
    s.stop().await;
}

#[tokio::test]
async fn cancel_is_idempotent_and_terminal_tasks_are_not_cancelable() {
    let s = start(test_config()).await;
    let mut p = send_params("sleep 10000", "m-sleep");
    p["configuration"] = json!({"returnImmediately": true});
    let r = s.rpc("SendMessage", p).await;
    let id = task_id(&r);
    let c = s.rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(c["result"]["status"]["state"], "TASK_STATE_CANCELED", "{c}");
    check_fixture("cancel_task", &c);
    let c2 = s.rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(c2["result"]["status"]["state"], "TASK_STATE_CANCELED");
    let done = s.rpc("SendMessage", send_params("x", "m-done")).await;
    let e = s.rpc("CancelTask", json!({"id": task_id(&done)})).await;
    assert_eq!(e["error"]["code"], -32002, "{e}");
    assert_eq!(e["error"]["data"][0]["reason"], "TASK_NOT_CANCELABLE");
    check_fixture("error_task_not_cancelable", &e);
    let e = s.rpc("CancelTask", json!({"id": "nope"})).await;
    assert_eq!(e["error"]["code"], -32001);
    s.stop().await;
}

/// GetTask reuses the encoding of an unchanged task; a change (here a cancel) is
/// seen by the next poll, and another caller still gets TaskNotFound.
#[tokio::test]
async fn polled_task_shows_every_change() {
    let s = start(test_config()).await;
    let mut p = send_params("sleep 10000", "m-poll");
    p["configuration"] = json!({"returnImmediately": true});
    let id = task_id(&s.rpc("SendMessage", p).await);
    let working = wait_state(&s, &id, "TASK_STATE_WORKING").await;
    let again = s.rpc("GetTask", json!({"id": id})).await;
    assert_eq!(working["result"], again["result"]);
    let c = s.rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(c["result"]["status"]["state"], "TASK_STATE_CANCELED", "{c}");
    let after = s.rpc("GetTask", json!({"id": id})).await;
    assert_eq!(state(&after), "TASK_STATE_CANCELED", "{after}");
    assert_eq!(after["result"], c["result"]);
    s.stop().await;
}

#[tokio::test]
async fn envelope_errors() {
    let s = start(test_config()).await;
    let (_, b) = s.raw("{not json", &[]).await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["error"]["code"], -32700);
    assert_eq!(v["id"], Value::Null);
    check_fixture("error_parse", &v);
    let (_, b) = s
        .raw(r#"{"jsonrpc":"1.0","id":3,"method":"GetTask"}"#, &[])
        .await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["error"]["code"], -32600);
    assert_eq!(v["id"], 3);
    let (_, b) = s
        .raw(r#"{"jsonrpc":"2.0","id":4,"method":"Nope"}"#, &[])
        .await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["error"]["code"], -32601);
    check_fixture("error_method_not_found", &v);
    let (_, b) = s
        .raw(
            r#"{"jsonrpc":"2.0","id":5,"method":"GetTask","params":{"id":"x","historyLength":"lots"}}"#,
            &[],
        )
        .await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["error"]["code"], -32602);
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("historyLength"),
        "{v}"
    );
    check_fixture("error_invalid_params", &v);
    let (_, b) = s
        .raw(
            r#"{"jsonrpc":"2.0","id":8,"method":"GetTask","params":[1]}"#,
            &[],
        )
        .await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["error"]["code"], -32602);
    let e = s.rpc("SendMessage", json!({})).await;
    assert_eq!(e["error"]["code"], -32602);
    assert!(e["error"]["message"].as_str().unwrap().contains("message"));
    // Version negotiation.
    let (_, b) = s
        .raw(
            r#"{"jsonrpc":"2.0","id":6,"method":"GetTask","params":{"id":"x"}}"#,
            &[("A2A-Version", "99.0")],
        )
        .await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["error"]["code"], -32009, "{v}");
    check_fixture("error_version_not_supported", &v);
    let q = s
        .client
        .post(format!("{}?A2A-Version=0.3", s.url()))
        .json(&json!({"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(q["error"]["code"], -32009);
    // Extensions header never causes a 5xx.
    let (st, _) = s
        .raw(
            r#"{"jsonrpc":"2.0","id":6,"method":"GetTask","params":{"id":"x"}}"#,
            &[("A2A-Extensions", "urn:x, urn:y")],
        )
        .await;
    assert_eq!(st, 200);
    // Content type.
    let (st, b) = s.raw("{}", &[("content-type", "text/plain")]).await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(st, 415);
    assert_eq!(v["error"]["code"], -32005);
    // Over-limit body refused before parsing.
    let big = "x".repeat(100 * 1024);
    let (st, _) = s.raw(&big, &[]).await;
    assert_eq!(st, 413);
    // Trailing slash.
    let r = s
        .client
        .post(format!("{}/", s.url()))
        .json(&json!({"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}))
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    assert!(r.get("result").is_some(), "{r}");
    s.stop().await;
}

#[tokio::test]
async fn batches_are_answered_per_element() {
    let s = start(test_config()).await;
    let body = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "Nope"},
        {"jsonrpc": "2.0", "method": "ListTasks", "params": {}},
        42,
        {"jsonrpc": "2.0", "id": 3, "method": "SendStreamingMessage", "params": {}}
    ]);
    let (_, b) = s.raw(&body.to_string(), &[]).await;
    let v: Value = serde_json::from_str(&b).unwrap();
    let a = v.as_array().unwrap();
    assert_eq!(a.len(), 4, "{v}");
    assert!(a[0].get("result").is_some());
    assert_eq!(a[1]["error"]["code"], -32601);
    assert_eq!(a[2]["error"]["code"], -32600);
    assert_eq!(a[3]["error"]["code"], -32600);
    check_fixture("batch", &v);
    let (_, b) = s.raw("[]", &[]).await;
    let v: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(v["error"]["code"], -32600);
    s.stop().await;
}

#[tokio::test]
async fn direct_message_and_content_types() {
    let s = start(test_config()).await;
    let r = s
        .rpc("SendMessage", send_params("message\nhi there", "m-direct"))
        .await;
    assert_eq!(r["result"]["message"]["role"], "ROLE_AGENT", "{r}");
    check_fixture("send_message_direct", &r);
    let mut p = send_params("x", "m-ct");
    p["message"]["parts"][0]["mediaType"] = json!("application/x-unsupported-tck-type");
    let e = s.rpc("SendMessage", p).await;
    assert_eq!(e["error"]["code"], -32005, "{e}");
    check_fixture("error_content_type_not_supported", &e);
    let mut p = send_params("x", "m-parts");
    p["message"]["parts"] = json!([
        {"text": "hello", "mediaType": "text/plain"},
        {"raw": "AAEC", "filename": "a.bin", "mediaType": "application/octet-stream"},
        {"url": "https://example.com/a.png", "mediaType": "image/png"},
        {"data": {"k": [1, 2]}}
    ]);
    let r = s.rpc("SendMessage", p).await;
    let parts = &r["result"]["task"]["history"][0]["parts"];
    assert_eq!(parts[1]["raw"], "AAEC", "{r}");
    assert_eq!(parts[2]["url"], "https://example.com/a.png");
    assert_eq!(parts[3]["data"], json!({"k": [1, 2]}));
    let e = s.rpc("GetExtendedAgentCard", json!({})).await;
    assert_eq!(e["error"]["code"], -32004);
    s.stop().await;
}

#[tokio::test]
async fn streaming_frames_carry_sequence_ids() {
    let s = start(test_config()).await;
    let (ct, frames) = s
        .sse(
            "alice",
            "SendStreamingMessage",
            send_params("stream 3", "m-st"),
            None,
        )
        .await;
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let results: Vec<&Value> = frames.iter().map(|(_, v)| &v["result"]).collect();
    assert!(results[0].get("task").is_some(), "{frames:?}");
    let last = results.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    let chunks: Vec<&Value> = results
        .iter()
        .filter_map(|r| r.get("artifactUpdate"))
        .collect();
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[2]["lastChunk"], true);
    assert_eq!(chunks[1]["append"], true);
    let ids: Vec<u64> = frames.iter().map(|(id, _)| id.unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    for (_, v) in &frames {
        assert_eq!(v["id"], 7);
        assert_eq!(v["jsonrpc"], "2.0");
    }
    let all: Vec<Value> = frames.iter().map(|(_, v)| v.clone()).collect();
    check_fixture("stream_send_streaming_message", &Value::Array(all));
    // Reconnect with the same messageId and Last-Event-ID: the rest, no gap.
    let cut = ids[1];
    let (_, rest) = s
        .sse(
            "alice",
            "SendStreamingMessage",
            send_params("stream 3", "m-st"),
            Some(cut),
        )
        .await;
    let rest_ids: Vec<u64> = rest.iter().map(|(id, _)| id.unwrap()).collect();
    assert_eq!(rest_ids, ids[2..].to_vec());
    s.stop().await;
}

#[tokio::test]
async fn streaming_closes_at_input_required_and_subscribe_stays_open() {
    let s = start(test_config()).await;
    let (_, frames) = s
        .sse(
            "alice",
            "SendStreamingMessage",
            send_params("ask color?", "m-sa"),
            None,
        )
        .await;
    let last = &frames.last().unwrap().1["result"];
    let st = last["statusUpdate"]["status"]["state"]
        .as_str()
        .or(last["task"]["status"]["state"].as_str())
        .unwrap();
    assert_eq!(st, "TASK_STATE_INPUT_REQUIRED", "{frames:?}");
    let id = frames[0].1["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Two subscribers stay open through INPUT_REQUIRED and see the same sequence.
    let sub = |s: &common::Server| {
        let s2 = (s.url(), s.client.clone(), id.clone());
        async move {
            let body =
                json!({"jsonrpc":"2.0","id":9,"method":"SubscribeToTask","params":{"id": s2.2}});
            let r = s2.1.post(s2.0).json(&body).send().await.unwrap();
            common::parse_sse(&r.text().await.unwrap())
        }
    };
    let h1 = tokio::spawn(sub(&s));
    let h2 = tokio::spawn(sub(&s));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!h1.is_finished());
    let mut p = send_params("blue", "m-sb");
    p["message"]["taskId"] = json!(id);
    let r = s.rpc("SendMessage", p).await;
    assert_eq!(state(&r), "TASK_STATE_COMPLETED");
    let f1 = tokio::time::timeout(Duration::from_secs(10), h1)
        .await
        .unwrap()
        .unwrap();
    let f2 = tokio::time::timeout(Duration::from_secs(10), h2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(f1, f2);
    let all: Vec<Value> = f1.iter().map(|(_, v)| v.clone()).collect();
    check_fixture("stream_subscribe_to_task", &Value::Array(all));
    assert!(f1[0].1["result"].get("task").is_some());
    assert_eq!(
        f1.last().unwrap().1["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // Subscribing to a terminal task is UnsupportedOperation ...
    let e = s.rpc("SubscribeToTask", json!({"id": id})).await;
    assert_eq!(e["error"]["code"], -32004, "{e}");
    // ... unless resuming a stream that missed the end.
    let first_id = f1[0].0.unwrap();
    let (_, rest) = s
        .sse(
            "alice",
            "SubscribeToTask",
            json!({"id": id}),
            Some(first_id),
        )
        .await;
    let strip = |f: &[(Option<u64>, Value)]| -> Vec<(Option<u64>, Value)> {
        f.iter().map(|(i, v)| (*i, v["result"].clone())).collect()
    };
    assert_eq!(strip(&rest), strip(&f1[1..]));
    s.stop().await;
}

#[tokio::test]
async fn agent_card_is_served_with_public_urls() {
    let s = start(test_config()).await;
    let card: Value = s
        .client
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("{}/a2a", s.base)
    );
    assert_eq!(card["supportedInterfaces"][1]["url"], s.addr.to_string());
    assert_eq!(card["supportedInterfaces"][1]["protocolVersion"], "1.0");
    assert_eq!(
        card["supportedInterfaces"][2]["protocolBinding"],
        "HTTP+JSON"
    );
    assert_eq!(
        card["supportedInterfaces"][2]["url"],
        format!("{}/a2a/rest", s.base)
    );
    assert_eq!(card["capabilities"]["streaming"], true);
    assert!(card.get("url").is_none() && card.get("preferredTransport").is_none());
    check_fixture("agent_card", &card);
    s.stop().await;
    let mut cfg = test_config();
    cfg.bearer_auth = true;
    cfg.extended_card = true;
    let s = start(cfg).await;
    let card: Value = s
        .client
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let ext = s.rpc("GetExtendedAgentCard", json!({})).await;
    assert_eq!(
        ext["result"]["capabilities"]["extendedAgentCard"], true,
        "{ext}"
    );
    check_fixture("extended_agent_card", &ext);
    s.stop().await;
}

#[tokio::test]
async fn auth_required_is_granted_by_a_message() {
    let s = start(test_config()).await;
    let r = s
        .rpc("SendMessage", send_params("auth github", "m-auth"))
        .await;
    assert_eq!(state(&r), "TASK_STATE_AUTH_REQUIRED", "{r}");
    let mut p = send_params("granted", "m-auth-2");
    p["message"]["taskId"] = json!(task_id(&r));
    p["message"]["metadata"] = json!({"authorization": {"provider": "github"}});
    let r = s.rpc("SendMessage", p).await;
    assert_eq!(state(&r), "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(
        r["result"]["task"]["history"][1]["metadata"],
        json!({"authorization": {"provider": "github"}})
    );
    s.stop().await;
}

#[tokio::test]
async fn a_null_data_part_is_the_null_value() {
    let s = start(test_config()).await;
    let mut p = send_params("hi", "m-null-data");
    p["message"]["parts"] = json!([{"text": "hi"}, {"data": null}]);
    let r = s.rpc("SendMessage", p).await;
    assert!(r.get("error").is_none(), "{r}");
    let history = r["result"]["task"]["history"].as_array().unwrap();
    let parts = history[0]["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 2, "{r}");
    assert!(parts[1].get("data").is_some_and(Value::is_null), "{r}");
    s.stop().await;
}
