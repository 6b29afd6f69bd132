//! What the A2A project's conformance kit ACTS (a2a-itk) found, on JSON-RPC
//! and HTTP+JSON: GetExtendedAgentCard on a card that declares none,
//! ListTasks' `nextPageToken`, a request without `A2A-Version`, a push config
//! that does not exist, the card's caching headers; and its reduced-capability
//! mode (streaming and push notifications off).

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use common::{send_params, start, test_config, PRINCIPAL_HEADER};
use serde_json::{json, Value};

/// A JSON-RPC call with the given extra headers (no `A2A-Version` unless
/// among them): HTTP status and body.
async fn rpc_with(
    s: &common::Server,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    let mut req = s
        .client
        .post(s.url())
        .header(PRINCIPAL_HEADER, "alice")
        .json(&body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

/// An HTTP+JSON call below `/a2a/rest`: HTTP status and body.
async fn rest(
    s: &common::Server,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut req = s
        .client
        .request(method, format!("{}/a2a/rest{path}", s.base))
        .header(PRINCIPAL_HEADER, "alice");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(b) = body {
        req = req
            .header("content-type", "application/a2a+json")
            .body(b.to_string());
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

const V1: [(&str, &str); 1] = [("A2A-Version", "1.0")];

fn rest_reason(v: &Value) -> &str {
    v["error"]["details"][0]["reason"].as_str().unwrap_or("")
}

/// §3.3.4: `capabilities.extendedAgentCard` false (or absent) makes
/// GetExtendedAgentCard UnsupportedOperationError, not
/// ExtendedAgentCardNotConfiguredError.
#[tokio::test]
async fn an_undeclared_extended_card_is_unsupported_operation() {
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
    assert_eq!(card["capabilities"]["extendedAgentCard"], false);
    let (_, e) = rpc_with(&s, "GetExtendedAgentCard", json!({}), &V1).await;
    assert_eq!(e["error"]["code"], -32004, "{e}");
    assert_eq!(e["error"]["data"][0]["reason"], "UNSUPPORTED_OPERATION");
    let (status, e) = rest(&s, reqwest::Method::GET, "/extendedAgentCard", None, &V1).await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(rest_reason(&e), "UNSUPPORTED_OPERATION");
    s.stop().await;
}

/// §3.1.4: `nextPageToken` is always present, `""` on the last page, on both
/// HTTP bindings; so are the list's other REQUIRED fields, even when empty.
#[tokio::test]
async fn list_tasks_always_carries_next_page_token() {
    let s = start(test_config()).await;
    for i in 0..2 {
        let r = s
            .rpc(
                "SendMessage",
                send_params("hi", &format!("m-acts-list-{i}")),
            )
            .await;
        assert_eq!(
            r["result"]["task"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
    }
    // JSON-RPC: a page with more after it, then the last page.
    let first = s.rpc("ListTasks", json!({"pageSize": 1})).await;
    let token = first["result"]["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty(), "{first}");
    let last = s
        .rpc("ListTasks", json!({"pageSize": 1, "pageToken": token}))
        .await;
    assert_eq!(last["result"]["nextPageToken"], "", "{last}");
    assert_eq!(last["result"]["tasks"].as_array().unwrap().len(), 1);
    // Nothing to list: every field still there.
    let empty = s.rpc_as("bob", "ListTasks", json!({})).await;
    assert_eq!(
        empty["result"],
        json!({"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}),
        "{empty}"
    );
    // HTTP+JSON.
    let (status, page) = rest(&s, reqwest::Method::GET, "/tasks?pageSize=1", None, &V1).await;
    assert_eq!(status, 200);
    let token = page["nextPageToken"].as_str().unwrap().to_string();
    assert!(!token.is_empty(), "{page}");
    let (_, last) = rest(
        &s,
        reqwest::Method::GET,
        &format!("/tasks?pageSize=1&pageToken={token}"),
        None,
        &V1,
    )
    .await;
    assert_eq!(last["nextPageToken"], "", "{last}");
    let (_, all) = rest(&s, reqwest::Method::GET, "/tasks", None, &V1).await;
    assert_eq!(all["nextPageToken"], "", "{all}");
    assert_eq!(all["totalSize"], 2);
    s.stop().await;
}

/// §3.6.2: a request without `A2A-Version` (or with an empty one) is read as
/// 0.3. A 0.3 request is VersionNotSupported until 0.3 is served; a request
/// that exists only in 1.0 has no 0.3 reading and is served as 1.0.
#[tokio::test]
async fn a_request_without_a_version_is_read_as_0_3() {
    let s = start(test_config()).await;
    let p0_3 = json!({"message": {"messageId": "m-03", "role": "user", "kind": "message",
        "parts": [{"kind": "text", "text": "hi"}]}});
    for headers in [
        &[][..],
        &[("A2A-Version", "")][..],
        &[("A2A-Version", " ")][..],
    ] {
        let (status, e) = rpc_with(&s, "message/send", p0_3.clone(), headers).await;
        assert_eq!(status, 200);
        assert_eq!(e["error"]["code"], -32009, "{headers:?}: {e}");
        assert_eq!(e["error"]["data"][0]["reason"], "VERSION_NOT_SUPPORTED");
        assert!(e["error"]["message"].as_str().unwrap().contains("0.3"));
        assert_eq!(e["id"], 3);
    }
    for m in taskwire_vocab::names::a2a::methods_0_3::ALL {
        let (_, e) = rpc_with(&s, m, json!({}), &[]).await;
        assert_eq!(e["error"]["code"], -32009, "{m}: {e}");
    }
    // With 1.0 stated, a 0.3 name is simply not a method.
    let (_, e) = rpc_with(&s, "message/send", p0_3, &V1).await;
    assert_eq!(e["error"]["code"], -32601, "{e}");
    // A 1.0 method without a version (ACTS VER-NEG-002) is served.
    let (_, r) = rpc_with(&s, "SendMessage", send_params("hi", "m-nover"), &[]).await;
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    // A batch answers each element by its own method.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}},
        {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "x"}}
    ]);
    let r: Value = s
        .client
        .post(s.url())
        .json(&batch)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r[0]["error"]["code"], -32009, "{r}");
    assert_eq!(r[1]["error"]["code"], -32001, "{r}");
    // HTTP+JSON: 0.3's paths begin with /v1.
    let body = json!({"message": {"messageId": "m-rest-03", "role": "ROLE_USER",
        "parts": [{"text": "hi"}]}});
    let (status, e) = rest(
        &s,
        reqwest::Method::POST,
        "/v1/message:send",
        Some(body.clone()),
        &[],
    )
    .await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(rest_reason(&e), "VERSION_NOT_SUPPORTED");
    // With 1.0 stated, v1 is a tenant like any other.
    let (status, r) = rest(
        &s,
        reqwest::Method::POST,
        "/v1/message:send",
        Some(body),
        &V1,
    )
    .await;
    assert_eq!(status, 200, "{r}");
    // Without a version, a 1.0 path is served.
    let (status, _) = rest(&s, reqwest::Method::GET, "/tasks", None, &[]).await;
    assert_eq!(status, 200);
    s.stop().await;
}

/// §3.1.8: GetTaskPushNotificationConfig of a config that does not exist is
/// TaskNotFoundError (HTTP+JSON; JSON-RPC in tests/push.rs).
#[tokio::test]
async fn a_missing_push_config_is_task_not_found() {
    let s = start(test_config()).await;
    let r = s.rpc("SendMessage", send_params("hi", "m-acts-push")).await;
    let id = r["result"]["task"]["id"].as_str().unwrap().to_string();
    let (status, e) = rest(
        &s,
        reqwest::Method::GET,
        &format!("/tasks/{id}/pushNotificationConfigs/no-such-config"),
        None,
        &V1,
    )
    .await;
    assert_eq!(status, 404, "{e}");
    assert_eq!(rest_reason(&e), "TASK_NOT_FOUND");
    s.stop().await;
}

/// §8.6.1: the card carries `Cache-Control` with `max-age` and an `ETag`; a
/// conditional GET with that tag is 304 without a body.
#[tokio::test]
async fn the_agent_card_can_be_cached() {
    let s = start(test_config()).await;
    let url = format!("{}/.well-known/agent-card.json", s.base);
    let r = s.client.get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let cc = r.headers()["cache-control"].to_str().unwrap().to_string();
    assert!(cc.contains("max-age=300"), "{cc}");
    let etag = r.headers()["etag"].to_str().unwrap().to_string();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    let card: Value = r.json().await.unwrap();
    assert!(card["name"].is_string());
    let r = s
        .client
        .get(&url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 304);
    assert_eq!(r.headers()["etag"].to_str().unwrap(), etag);
    assert!(r.headers().contains_key("cache-control"));
    assert!(r.bytes().await.unwrap().is_empty());
    let r = s
        .client
        .get(&url)
        .header("if-none-match", "\"something-else\"")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    s.stop().await;
    // Another card (push off) has another tag.
    let mut cfg = test_config();
    cfg.push_notifications = false;
    let s = start(cfg).await;
    let r = s
        .client
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_ne!(r.headers()["etag"].to_str().unwrap(), etag);
    s.stop().await;
}

/// ACTS' reduced-capability mode: streaming and push off. The card says so,
/// and the methods answer the errors of §3.3.4.
#[tokio::test]
async fn streaming_and_push_can_be_switched_off() {
    let mut cfg = test_config();
    cfg.streaming = false;
    cfg.push_notifications = false;
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
    assert_eq!(card["capabilities"]["streaming"], false, "{card}");
    assert_eq!(card["capabilities"]["pushNotifications"], false, "{card}");
    assert_eq!(card["capabilities"]["extendedAgentCard"], false, "{card}");
    let r = s
        .rpc("SendMessage", send_params("ask q?", "m-acts-nostream"))
        .await;
    let id = r["result"]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        r["result"]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let (status, e) = rpc_with(
        &s,
        "SendStreamingMessage",
        send_params("hi", "m-acts-nostream-2"),
        &V1,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(e["error"]["code"], -32004, "{e}");
    let (_, e) = rpc_with(&s, "SubscribeToTask", json!({"id": id}), &V1).await;
    assert_eq!(e["error"]["code"], -32004, "{e}");
    let (_, e) = rpc_with(
        &s,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "url": "https://example.com/h"}),
        &V1,
    )
    .await;
    assert_eq!(e["error"]["code"], -32003, "{e}");
    let (status, e) = rest(
        &s,
        reqwest::Method::POST,
        "/message:stream",
        Some(send_params("hi", "m-acts-nostream-3")),
        &V1,
    )
    .await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(rest_reason(&e), "UNSUPPORTED_OPERATION");
    let (status, e) = rest(
        &s,
        reqwest::Method::POST,
        &format!("/tasks/{id}:subscribe"),
        None,
        &V1,
    )
    .await;
    assert_eq!(status, 400, "{e}");
    assert_eq!(rest_reason(&e), "UNSUPPORTED_OPERATION");
    // Nothing was started by the refused stream.
    let l = s.rpc("ListTasks", json!({})).await;
    assert_eq!(l["result"]["totalSize"], 1, "{l}");
    s.stop().await;
}
