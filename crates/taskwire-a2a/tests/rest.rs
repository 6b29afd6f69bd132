//! HTTP+JSON binding (A2A 1.0 §11) under `/a2a/rest`: every route (also under a
//! `/{tenant}` prefix), the media type, the error object and its v1.0.1 HTTP
//! statuses, SSE streams, idempotent push config delete, and golden fixtures.

#![allow(clippy::unwrap_used, reason = "test helpers")]

mod common;

use std::time::Duration;

use common::{check_fixture, parse_sse, send_params, start, test_config, PRINCIPAL_HEADER};
use reqwest::Method;
use serde_json::{json, Value};

const MEDIA: &str = "application/a2a+json";

/// One answer: HTTP status, content type, body (JSON, or `Null` when empty).
struct Answer {
    status: u16,
    content_type: String,
    body: Value,
}

async fn call(
    s: &common::Server,
    method: Method,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Answer {
    let mut req = s
        .client
        .request(method, format!("{}/a2a/rest{path}", s.base));
    let (mut principal, mut version) = (false, false);
    for (k, v) in headers {
        principal |= k.eq_ignore_ascii_case(PRINCIPAL_HEADER);
        version |= k.eq_ignore_ascii_case("A2A-Version");
        req = req.header(*k, *v);
    }
    if !principal {
        req = req.header(PRINCIPAL_HEADER, "alice");
    }
    if !version {
        req = req.header("A2A-Version", "1.0");
    }
    if let Some(b) = body {
        req = req.header("content-type", MEDIA).body(b.to_string());
    }
    let r = tokio::time::timeout(Duration::from_secs(30), req.send())
        .await
        .unwrap()
        .unwrap();
    let status = r.status().as_u16();
    let content_type = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = r.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    Answer {
        status,
        content_type,
        body,
    }
}

async fn get(s: &common::Server, path: &str) -> Answer {
    call(s, Method::GET, path, None, &[]).await
}

async fn post(s: &common::Server, path: &str, body: Value) -> Answer {
    call(s, Method::POST, path, Some(body), &[]).await
}

/// A streaming call read to its end: content type and (SSE id, event name, data).
async fn stream(
    s: &common::Server,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, String, Vec<(Option<u64>, Option<String>, Value)>) {
    let mut req = s
        .client
        .request(method, format!("{}/a2a/rest{path}", s.base))
        .header(PRINCIPAL_HEADER, "alice")
        .header("accept", "text/event-stream");
    if let Some(b) = body {
        req = req.header("content-type", MEDIA).body(b.to_string());
    }
    let r = tokio::time::timeout(Duration::from_secs(20), req.send())
        .await
        .unwrap()
        .unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = tokio::time::timeout(Duration::from_secs(20), r.text())
        .await
        .expect("stream did not end")
        .unwrap();
    let mut events = Vec::new();
    if ct.starts_with("text/event-stream") {
        for block in text.split("\n\n") {
            let event = block
                .lines()
                .find_map(|l| l.strip_prefix("event:"))
                .map(|e| e.trim().to_string());
            for (id, data) in parse_sse(block) {
                events.push((id, event.clone(), data));
            }
        }
    } else {
        events.push((None, None, serde_json::from_str(&text).unwrap()));
    }
    (status, ct, events)
}

/// Asserts an error answer: its status, its ErrorInfo reason and the object's shape.
fn assert_error(a: &Answer, status: u16, reason: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    assert!(a.content_type.starts_with(MEDIA), "{}", a.content_type);
    let e = &a.body["error"];
    assert_eq!(e["code"], status, "{}", a.body);
    assert!(e["status"].is_string(), "{}", a.body);
    assert!(e["message"].is_string(), "{}", a.body);
    assert_eq!(
        e["details"][0]["@type"],
        "type.googleapis.com/google.rpc.ErrorInfo"
    );
    assert_eq!(e["details"][0]["domain"], "a2a-protocol.org");
    assert_eq!(e["details"][0]["reason"], reason, "{}", a.body);
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

async fn wait_state(s: &common::Server, id: &str, want: &str) -> Value {
    for _ in 0..400 {
        let a = get(s, &format!("/tasks/{id}")).await;
        if state(&a.body) == want {
            return a.body;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("task {id} never reached {want}");
}

#[tokio::test]
async fn send_get_and_list() {
    let s = start(test_config()).await;
    let a = post(&s, "/message:send", send_params("hello", "fixed-rest-1")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.content_type.starts_with(MEDIA), "{}", a.content_type);
    let task = &a.body["task"];
    assert_eq!(state(task), "TASK_STATE_COMPLETED", "{}", a.body);
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello");
    check_fixture("rest_send_message", &a.body);
    let id = task["id"].as_str().unwrap().to_string();

    // GetTask, with historyLength in the query.
    let g = get(&s, &format!("/tasks/{id}?historyLength=1")).await;
    assert_eq!(g.status, 200);
    assert!(g.content_type.starts_with(MEDIA));
    assert_eq!(g.body["id"], id.as_str());
    assert!(g.body["history"].as_array().unwrap().len() <= 1);
    check_fixture("rest_get_task", &g.body);

    // A direct reply is {"message": …}.
    let m = post(&s, "/message:send", send_params("message", "m-rest-direct")).await;
    assert_eq!(m.status, 200);
    assert!(m.body.get("message").is_some(), "{}", m.body);

    // ListTasks with query parameters (camelCase, short state names).
    let ask = post(
        &s,
        "/message:send",
        send_params("ask colour?", "m-rest-ask"),
    )
    .await;
    assert_eq!(state(&ask.body["task"]), "TASK_STATE_INPUT_REQUIRED");
    let l = get(&s, "/tasks?pageSize=10&status=input-required").await;
    assert_eq!(l.status, 200, "{}", l.body);
    let tasks = l.body["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{}", l.body);
    assert_eq!(tasks[0]["id"], ask.body["task"]["id"]);
    assert!(tasks[0].get("artifacts").is_none());
    let l = get(
        &s,
        "/tasks?status=TASK_STATE_COMPLETED&includeArtifacts=true&pageSize=1",
    )
    .await;
    let tasks = l.body["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{}", l.body);
    assert!(tasks[0].get("artifacts").is_some(), "{}", l.body);
    assert_eq!(l.body["pageSize"], 1);
    let all = get(&s, "/tasks").await;
    assert_eq!(
        all.body["tasks"].as_array().unwrap().len(),
        2,
        "{}",
        all.body
    );

    // Another principal sees none of it.
    let other = call(
        &s,
        Method::GET,
        &format!("/tasks/{id}"),
        None,
        &[(PRINCIPAL_HEADER, "mallory")],
    )
    .await;
    assert_error(&other, 404, "TASK_NOT_FOUND");
    s.stop().await;
}

#[tokio::test]
async fn input_required_round_trip_and_subscribe_both_verbs() {
    let s = start(test_config()).await;
    for (i, method) in [Method::GET, Method::POST].into_iter().enumerate() {
        let ask = post(
            &s,
            "/message:send",
            send_params("ask colour?", &format!("m-sub-{i}")),
        )
        .await;
        let task = ask.body["task"].clone();
        let id = task["id"].as_str().unwrap().to_string();
        let path = format!("/tasks/{id}:subscribe");
        let body = (method == Method::POST).then(|| json!({}));
        let sub = {
            let s = &s;
            async move { stream(s, method, &path, body).await }
        };
        let answer = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let mut p = send_params("teal", &format!("m-sub-answer-{i}"));
            p["message"]["taskId"] = task["id"].clone();
            p["message"]["contextId"] = task["contextId"].clone();
            post(&s, "/message:send", p).await
        };
        let ((status, ct, events), done) = tokio::join!(sub, answer);
        assert_eq!(done.status, 200);
        assert_eq!(state(&done.body["task"]), "TASK_STATE_COMPLETED");
        assert_eq!(status, 200);
        assert!(ct.starts_with("text/event-stream"), "{ct}");
        assert!(events[0].2.get("task").is_some(), "{events:?}");
        let last = &events.last().unwrap().2;
        assert_eq!(
            last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{events:?}"
        );
        assert!(events.iter().all(|(_, e, _)| e.is_none()));
        // A terminal task cannot be subscribed to: UnsupportedOperation, 400.
        let t = call(
            &s,
            Method::POST,
            &format!("/tasks/{id}:subscribe"),
            None,
            &[],
        )
        .await;
        assert_error(&t, 400, "UNSUPPORTED_OPERATION");
        // Nor sent to.
        let mut p = send_params("again", &format!("m-sub-late-{i}"));
        p["message"]["taskId"] = json!(id);
        let late = post(&s, "/message:send", p).await;
        assert_error(&late, 400, "UNSUPPORTED_OPERATION");
    }
    s.stop().await;
}

#[tokio::test]
async fn message_stream_is_sse_of_stream_responses() {
    let s = start(test_config()).await;
    let (status, ct, events) = stream(
        &s,
        Method::POST,
        "/message:stream",
        Some(send_params("stream 3", "m-rest-stream")),
    )
    .await;
    assert_eq!(status, 200);
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    assert!(events[0].2.get("task").is_some(), "{events:?}");
    let chunks: Vec<&Value> = events
        .iter()
        .filter_map(|(_, _, v)| v.get("artifactUpdate"))
        .collect();
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[2]["lastChunk"], true);
    assert_eq!(
        events.last().unwrap().2["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // No JSON-RPC envelope: each data line is a StreamResponse.
    assert!(events.iter().all(|(_, _, v)| v.get("jsonrpc").is_none()));
    let ids: Vec<u64> = events.iter().map(|(id, _, _)| id.unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    let all: Vec<Value> = events.iter().map(|(_, _, v)| v.clone()).collect();
    check_fixture("rest_stream_message", &Value::Array(all));

    // An error before the stream opens is an error object with its status.
    let mut p = send_params("x", "m-rest-stream-bad");
    p["message"]["taskId"] = json!("0".repeat(32));
    let (status, ct, events) = stream(&s, Method::POST, "/message:stream", Some(p)).await;
    assert_eq!(status, 404);
    assert!(ct.starts_with(MEDIA), "{ct}");
    assert_eq!(
        events[0].2["error"]["details"][0]["reason"],
        "TASK_NOT_FOUND"
    );
    // A direct reply streams one Message.
    let (_, _, events) = stream(
        &s,
        Method::POST,
        "/message:stream",
        Some(send_params("message", "m-rest-stream-direct")),
    )
    .await;
    assert_eq!(events.len(), 1);
    assert!(events[0].2.get("message").is_some(), "{events:?}");
    s.stop().await;
}

#[tokio::test]
async fn cancel_and_its_errors() {
    let s = start(test_config()).await;
    let mut p = send_params("sleep 10000", "m-rest-cancel");
    p["configuration"] = json!({"returnImmediately": true});
    let a = post(&s, "/message:send", p).await;
    let id = a.body["task"]["id"].as_str().unwrap().to_string();
    // The body is optional; the path's id is the one canceled.
    let c = call(&s, Method::POST, &format!("/tasks/{id}:cancel"), None, &[]).await;
    assert_eq!(c.status, 200, "{}", c.body);
    assert_eq!(state(&c.body), "TASK_STATE_CANCELED");
    check_fixture("rest_cancel_task", &c.body);
    // Canceling again is idempotent.
    let again = post(&s, &format!("/tasks/{id}:cancel"), json!({"id": "ignored"})).await;
    assert_eq!(again.status, 200, "{}", again.body);
    // A completed task is not cancelable: 400 (409 before v1.0.1).
    let done = post(&s, "/message:send", send_params("hi", "m-rest-done")).await;
    let done_id = done.body["task"]["id"].as_str().unwrap();
    let e = post(&s, &format!("/tasks/{done_id}:cancel"), json!({})).await;
    assert_error(&e, 400, "TASK_NOT_CANCELABLE");
    assert_eq!(e.body["error"]["status"], "FAILED_PRECONDITION");
    check_fixture("rest_error_task_not_cancelable", &e.body);
    // Unknown task: 404.
    let e = post(&s, &format!("/tasks/{}:cancel", "0".repeat(32)), json!({})).await;
    assert_error(&e, 404, "TASK_NOT_FOUND");
    assert_eq!(e.body["error"]["status"], "NOT_FOUND");
    check_fixture("rest_error_task_not_found", &e.body);
    // An unknown verb is no call at all.
    let e = post(&s, &format!("/tasks/{id}:pause"), json!({})).await;
    assert_error(&e, 404, "METHOD_NOT_FOUND");
    let e = get(&s, &format!("/tasks/{id}:cancel")).await;
    assert_error(&e, 404, "METHOD_NOT_FOUND");
    let w = wait_state(&s, &id, "TASK_STATE_CANCELED").await;
    assert_eq!(w["id"], id.as_str());
    s.stop().await;
}

#[tokio::test]
async fn push_configs_and_idempotent_delete() {
    let s = start(test_config()).await;
    let a = post(
        &s,
        "/message:send",
        send_params("ask ready?", "m-rest-push"),
    )
    .await;
    let id = a.body["task"]["id"].as_str().unwrap().to_string();
    let base = format!("/tasks/{id}/pushNotificationConfigs");
    let c = post(
        &s,
        &base,
        json!({"id": "fixed-cfg", "url": "http://127.0.0.1:9/hook", "token": "tok"}),
    )
    .await;
    assert_eq!(c.status, 200, "{}", c.body);
    assert_eq!(c.body["taskId"], id.as_str());
    assert_eq!(c.body["id"], "fixed-cfg");
    check_fixture("rest_push_config", &c.body);
    let g = get(&s, &format!("{base}/fixed-cfg")).await;
    assert_eq!(g.status, 200, "{}", g.body);
    assert_eq!(g.body["url"], "http://127.0.0.1:9/hook");
    let l = get(&s, &base).await;
    assert_eq!(l.body["configs"].as_array().unwrap().len(), 1, "{}", l.body);
    let d = call(&s, Method::DELETE, &format!("{base}/fixed-cfg"), None, &[]).await;
    assert_eq!((d.status, &d.body), (200, &json!({})));
    assert!(d.content_type.starts_with(MEDIA));
    // Idempotent: deleting it again (or a config that never was) succeeds.
    let d = call(&s, Method::DELETE, &format!("{base}/fixed-cfg"), None, &[]).await;
    assert_eq!((d.status, &d.body), (200, &json!({})));
    let d = call(&s, Method::DELETE, &format!("{base}/never"), None, &[]).await;
    assert_eq!((d.status, &d.body), (200, &json!({})));
    let l = get(&s, &base).await;
    assert!(l
        .body
        .get("configs")
        .is_none_or(|c| c.as_array().unwrap().is_empty()));
    // An unknown task is still not found.
    let d = call(
        &s,
        Method::DELETE,
        &format!(
            "/tasks/{}/pushNotificationConfigs/fixed-cfg",
            "0".repeat(32)
        ),
        None,
        &[],
    )
    .await;
    assert_error(&d, 404, "TASK_NOT_FOUND");
    s.stop().await;

    // Push off: every config call is PushNotificationNotSupported, 400.
    let mut cfg = test_config();
    cfg.push_notifications = false;
    let s = start(cfg).await;
    let a = post(&s, "/message:send", send_params("ask?", "m-rest-nopush")).await;
    let id = a.body["task"]["id"].as_str().unwrap().to_string();
    let base = format!("/tasks/{id}/pushNotificationConfigs");
    for a in [
        post(&s, &base, json!({"url": "https://example.com/h"})).await,
        get(&s, &base).await,
        get(&s, &format!("{base}/x")).await,
        call(&s, Method::DELETE, &format!("{base}/x"), None, &[]).await,
    ] {
        assert_error(&a, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED");
    }
    s.stop().await;
}

#[tokio::test]
async fn extended_agent_card() {
    let s = start(test_config()).await;
    let e = get(&s, "/extendedAgentCard").await;
    assert_error(&e, 400, "UNSUPPORTED_OPERATION");
    s.stop().await;
    let mut cfg = test_config();
    cfg.extended_card = true;
    let s = start(cfg).await;
    let c = get(&s, "/extendedAgentCard").await;
    assert_eq!(c.status, 200, "{}", c.body);
    assert_eq!(c.body["capabilities"]["extendedAgentCard"], true);
    let rest = c.body["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "HTTP+JSON")
        .unwrap();
    assert_eq!(rest["url"], format!("{}/a2a/rest", s.base));
    s.stop().await;
}

#[tokio::test]
async fn tenant_prefix_serves_every_route() {
    let s = start(test_config()).await;
    let a = post(&s, "/acme/message:send", send_params("hi", "m-rest-tenant")).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let id = a.body["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(get(&s, &format!("/acme/tasks/{id}")).await.status, 200);
    let l = get(&s, "/acme/tasks").await;
    assert_eq!(l.body["tasks"].as_array().unwrap().len(), 1);
    let (status, _, events) = stream(
        &s,
        Method::POST,
        "/acme/message:stream",
        Some(send_params("hi", "m-rest-tenant-2")),
    )
    .await;
    assert_eq!(status, 200);
    assert!(events[0].2.get("task").is_some());
    let e = post(&s, &format!("/acme/tasks/{id}:cancel"), json!({})).await;
    assert_error(&e, 400, "TASK_NOT_CANCELABLE");
    let base = format!("/acme/tasks/{id}/pushNotificationConfigs");
    let c = post(&s, &base, json!({"url": "http://127.0.0.1:9/h"})).await;
    assert_eq!(c.status, 200, "{}", c.body);
    let cid = c.body["id"].as_str().unwrap();
    assert_eq!(get(&s, &base).await.status, 200);
    assert_eq!(get(&s, &format!("{base}/{cid}")).await.status, 200);
    let d = call(&s, Method::DELETE, &format!("{base}/{cid}"), None, &[]).await;
    assert_eq!(d.status, 200);
    let e = get(&s, "/acme/extendedAgentCard").await;
    assert_error(&e, 400, "UNSUPPORTED_OPERATION");
    s.stop().await;
}

#[tokio::test]
async fn request_errors_have_their_statuses() {
    let mut cfg = test_config();
    cfg.max_body_bytes = 2048;
    let s = start(cfg).await;
    // A content type that is not JSON: ContentTypeNotSupported, 400 (415 before v1.0.1).
    let e = call(
        &s,
        Method::POST,
        "/message:send",
        None,
        &[("content-type", "text/plain")],
    )
    .await;
    assert_error(&e, 400, "CONTENT_TYPE_NOT_SUPPORTED");
    assert_eq!(e.body["error"]["status"], "INVALID_ARGUMENT");
    check_fixture("rest_error_content_type_not_supported", &e.body);
    // application/json is accepted as well as application/a2a+json.
    let r = s
        .client
        .post(format!("{}/a2a/rest/message:send", s.base))
        .header("content-type", "application/json")
        .body(send_params("hi", "m-rest-json").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // A part media type the agent does not take: ContentTypeNotSupported, 400.
    let mut p = send_params("x", "m-rest-mt");
    p["message"]["parts"][0]["mediaType"] = json!("application/x-unknown");
    let e = post(&s, "/message:send", p).await;
    assert_error(&e, 400, "CONTENT_TYPE_NOT_SUPPORTED");
    // Over the body limit: 413, before parsing.
    let big = send_params(&"x".repeat(4096), "m-rest-big");
    let e = post(&s, "/message:send", big).await;
    assert_error(&e, 413, "INVALID_REQUEST");
    // Not JSON: 400 parse error; not an object: 400 invalid request.
    let r = s
        .client
        .post(format!("{}/a2a/rest/message:send", s.base))
        .header("content-type", MEDIA)
        .body("{nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["details"][0]["reason"], "PARSE_ERROR");
    check_fixture("rest_error_parse", &v);
    let e = post(&s, "/message:send", json!([1])).await;
    assert_error(&e, 400, "INVALID_REQUEST");
    // No message: InvalidParams, 400.
    let e = post(&s, "/message:send", json!({})).await;
    assert_error(&e, 400, "INVALID_PARAMS");
    check_fixture("rest_error_invalid_params", &e.body);
    // A wrong field type names the field.
    let e = post(&s, "/message:send", json!({"message": {"parts": 3}})).await;
    assert_error(&e, 400, "INVALID_PARAMS");
    assert!(
        e.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("parts"),
        "{}",
        e.body
    );
    // Bad query parameters: 400.
    let e = get(&s, "/tasks?pageSize=ten").await;
    assert_error(&e, 400, "INVALID_PARAMS");
    let e = get(&s, "/tasks?pageSize=1000").await;
    assert_error(&e, 400, "INVALID_PARAMS");
    // An unsupported version: 400 VersionNotSupported, header or query.
    let e = call(&s, Method::GET, "/tasks", None, &[("A2A-Version", "99.0")]).await;
    assert_error(&e, 400, "VERSION_NOT_SUPPORTED");
    assert_eq!(e.body["error"]["status"], "FAILED_PRECONDITION");
    check_fixture("rest_error_version_not_supported", &e.body);
    let r = s
        .client
        .get(format!("{}/a2a/rest/tasks?A2A-Version=99.0", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // Extensions never cause a 5xx.
    let ok = call(
        &s,
        Method::GET,
        "/tasks",
        None,
        &[("A2A-Extensions", "https://example.com/ext/v1, ,x")],
    )
    .await;
    assert_eq!(ok.status, 200);
    // Unknown task on GET: 404.
    let e = get(&s, &format!("/tasks/{}", "f".repeat(32))).await;
    assert_error(&e, 404, "TASK_NOT_FOUND");
    let e = get(&s, "/tasks/not-a-task-id").await;
    assert_error(&e, 404, "TASK_NOT_FOUND");
    // A method the route does not take: 405.
    let r = s
        .client
        .delete(format!("{}/a2a/rest/message:send", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    s.stop().await;
}

#[tokio::test]
async fn the_bindings_share_one_service() {
    let s = start(test_config()).await;
    // A task made over HTTP+JSON is read over JSON-RPC and the other way round.
    let a = post(&s, "/message:send", send_params("hi", "m-rest-shared")).await;
    let id = a.body["task"]["id"].as_str().unwrap();
    let r = s.rpc("GetTask", json!({"id": id})).await;
    assert_eq!(
        r["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    let r = s
        .rpc("SendMessage", send_params("ho", "m-rpc-shared"))
        .await;
    let id = r["result"]["task"]["id"].as_str().unwrap();
    let g = get(&s, &format!("/tasks/{id}")).await;
    assert_eq!(g.body["artifacts"][0]["parts"][0]["text"], "ho");
    // A REST retry with a JSON-RPC messageId returns the same task.
    let again = post(&s, "/message:send", send_params("ho", "m-rpc-shared")).await;
    assert_eq!(again.body["task"]["id"], id);
    s.stop().await;
}

mod never_a_server_error {
    //! Arbitrary requests to the binding's routes (methods, path tails with and
    //! without verbs and tenants, query strings, bodies and content types) never
    //! get a 5xx, and every error answer with a body is the binding's error object
    //! whose `code` is the HTTP status.

    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::Request;
    use proptest::prelude::*;
    use serde_json::Value;
    use taskwire_a2a::{A2aAdapter, A2aConfig};
    use taskwire_core::{Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService};
    use tower::ServiceExt;

    fn path() -> impl Strategy<Value = String> {
        let id = prop_oneof![
            Just("0123456789abcdef0123456789abcdef".to_string()),
            "[a-z0-9:%._~-]{0,12}",
        ];
        let tail = prop_oneof![
            Just("/message:send".to_string()),
            Just("/message:stream".to_string()),
            Just("/tasks".to_string()),
            id.clone().prop_map(|i| format!("/tasks/{i}")),
            (
                id.clone(),
                prop_oneof![
                    Just("cancel".to_string()),
                    Just("subscribe".to_string()),
                    "[a-z]{0,6}"
                ]
            )
                .prop_map(|(i, v)| format!("/tasks/{i}:{v}")),
            id.clone()
                .prop_map(|i| format!("/tasks/{i}/pushNotificationConfigs")),
            (id, "[a-z0-9%-]{0,8}")
                .prop_map(|(i, c)| format!("/tasks/{i}/pushNotificationConfigs/{c}")),
            Just("/extendedAgentCard".to_string()),
        ];
        (prop::option::of("[a-z]{1,6}"), tail).prop_map(|(tenant, tail)| match tenant {
            Some(t) => format!("/a2a/rest/{t}{tail}"),
            None => format!("/a2a/rest{tail}"),
        })
    }

    fn query() -> impl Strategy<Value = String> {
        prop::collection::vec(
            (
                prop_oneof![
                    Just("pageSize"),
                    Just("historyLength"),
                    Just("status"),
                    Just("includeArtifacts"),
                    Just("statusTimestampAfter"),
                    Just("pageToken"),
                    Just("contextId"),
                    Just("A2A-Version"),
                    Just("x"),
                ],
                "[a-zA-Z0-9_:%+-]{0,10}",
            ),
            0..4,
        )
        .prop_map(|kv| {
            kv.into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("&")
        })
    }

    fn body() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("{}".to_string()),
            Just("null".to_string()),
            Just("[1]".to_string()),
            "\\PC{0,24}",
            Just(
                r#"{"message":{"messageId":"p","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#
                    .to_string()
            ),
            Just(r#"{"message":{"parts":3}}"#.to_string()),
            Just(r#"{"url":"http://127.0.0.1:9/h","id":5}"#.to_string()),
            Just(r#"{"url":"ftp://x"}"#.to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn arbitrary_requests_get_4xx_objects_or_success(
            method in prop_oneof![3 => Just("GET"), 3 => Just("POST"), 1 => Just("DELETE"), 1 => Just("PUT")],
            path in path(),
            query in query(),
            body in body(),
            ct in prop_oneof![Just(None), Just(Some("application/a2a+json")), Just(Some("application/json")), Just(Some("text/plain"))],
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
                let agent = Arc::new(ScriptedAgent::new());
                let runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
                let config = {
                    let mut v = A2aConfig::default();
                    v.blocking_timeout = std::time::Duration::from_secs(5);
                    v
                };
                let routes = A2aAdapter::new(service, agent, config).routes();
                let uri = if query.is_empty() { path.clone() } else { format!("{path}?{query}") };
                let mut b = Request::builder().method(method).uri(&uri);
                if let Some(ct) = ct {
                    b = b.header("content-type", ct);
                }
                let Ok(mut req) = b.body(Body::from(body.clone())) else {
                    runtime.shutdown(std::time::Duration::from_millis(10)).await;
                    return;
                };
                req.extensions_mut().insert(Caller::local());
                let res = routes.oneshot(req).await.unwrap();
                let status = res.status().as_u16();
                let is_sse = res
                    .headers()
                    .get("content-type")
                    .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
                if !is_sse {
                    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20).await.unwrap();
                    assert!(status < 500, "{method} {uri} {body:?}: {status} {}", String::from_utf8_lossy(&bytes));
                    if status >= 400 && !bytes.is_empty() {
                        let v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                            panic!("{method} {uri}: {status} body is not JSON ({e})")
                        });
                        assert_eq!(v["error"]["code"], status, "{method} {uri}: {v}");
                        assert!(v["error"]["details"][0]["reason"].is_string(), "{v}");
                    }
                } else {
                    assert_eq!(status, 200);
                }
                runtime.shutdown(std::time::Duration::from_millis(10)).await;
            });
        }
    }
}
