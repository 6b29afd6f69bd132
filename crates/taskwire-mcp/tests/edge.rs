//! Errors at the HTTP edge of `/mcp`: bad bodies, content types and methods are
//! each a JSON-RPC error object with the HTTP status docs/mcp.md names, never a
//! framework's plain-text rejection.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use bytes::Bytes;
use common::{golden, Server, V};
use serde_json::{json, Value};
use taskwire_core::{Caller, MemoryStore, ScriptedAgent, TaskService};
use taskwire_mcp::{McpAdapter, McpConfig};
use tower::ServiceExt;

/// A JSON-RPC error answer with `code` and id null.
fn assert_rpc_error(ct: &str, body: &str, code: i64) -> Value {
    assert!(
        ct.starts_with("application/json"),
        "content type {ct:?}: {body}"
    );
    let v: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["id"], Value::Null, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    v
}

async fn send(req: reqwest::RequestBuilder, content_type: Option<&str>) -> (u16, String, String) {
    let mut req = req
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", V);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let r = req.send().await.expect("the request is answered");
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (status, ct, r.text().await.expect("the answer is read"))
}

fn list_body(pad: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"x":"{}"}}}}"#,
        "a".repeat(pad)
    )
}

#[tokio::test]
async fn oversized_bodies_are_invalid_request_with_413() {
    let s = Server::with_config({
        let mut v = McpConfig::default();
        v.max_body_bytes = 1024;
        v
    })
    .await;
    // Declared length over the limit.
    let (st, ct, body) = send(
        s.http.post(&s.url).body(list_body(4096)),
        Some("application/json"),
    )
    .await;
    assert_eq!(st, 413, "{body}");
    let v = assert_rpc_error(&ct, &body, -32600);
    golden("error_body_too_large", &json!({"status": st, "body": v}));
    // No declared length (chunked): found while reading.
    let chunks = futures::stream::iter(
        (0..8).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b' '; 512]))),
    );
    let (st, ct, body) = send(
        s.http.post(&s.url).body(reqwest::Body::wrap_stream(chunks)),
        Some("application/json"),
    )
    .await;
    assert_eq!(st, 413, "{body}");
    assert_rpc_error(&ct, &body, -32600);
    // In a 2025-11-25 session too (the session header is read after the body).
    let (st, ct, body) = send(
        s.http
            .post(&s.url)
            .header("mcp-session-id", "no-such-session")
            .body(list_body(4096)),
        Some("application/json"),
    )
    .await;
    assert_eq!(st, 413, "{body}");
    assert_rpc_error(&ct, &body, -32600);
    s.shutdown().await;
}

#[tokio::test]
async fn content_types_other_than_json_are_415() {
    let s = Server::start().await;
    let ok = list_body(0);
    for bad in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("text/event-stream"),
        Some("application/jsonx"),
    ] {
        let (st, ct, body) = send(s.http.post(&s.url).body(ok.clone()), bad).await;
        assert_eq!(st, 415, "{bad:?}: {body}");
        let v = assert_rpc_error(&ct, &body, -32600);
        if bad == Some("text/plain") {
            golden(
                "error_unsupported_media_type",
                &json!({"status": st, "body": v}),
            );
        }
    }
    // JSON with parameters, in any case, passes the check (and then misses _meta).
    for good in ["application/json; charset=utf-8", "Application/JSON"] {
        let (st, ct, body) = send(s.http.post(&s.url).body(ok.clone()), Some(good)).await;
        assert_eq!(st, 400, "{good}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert!(ct.starts_with("application/json"), "{ct}");
        assert_eq!(v["error"]["code"], -32602, "{v}");
    }
    s.shutdown().await;
}

#[tokio::test]
async fn malformed_json_is_a_parse_error() {
    let s = Server::start().await;
    for bad in [
        &b"{not json"[..],
        b"",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,",
        b"\xff\xfe{}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"x\":\"\xc3\x28\"}}",
    ] {
        let (st, ct, body) = send(
            s.http.post(&s.url).body(bad.to_vec()),
            Some("application/json"),
        )
        .await;
        assert_eq!(st, 400, "{bad:?}: {body}");
        assert_rpc_error(&ct, &body, -32700);
    }
    s.shutdown().await;
}

#[tokio::test]
async fn get_and_other_methods_are_json_rpc_errors() {
    let s = Server::start().await;
    let (st, ct, body) = send(s.http.get(&s.url), None).await;
    assert_eq!(st, 405, "{body}");
    assert_rpc_error(&ct, &body, -32600);
    s.shutdown().await;
}

#[tokio::test]
async fn an_unreadable_body_is_invalid_request_with_400() {
    let agent = Arc::new(ScriptedAgent::new());
    let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
    let routes = McpAdapter::new(service, agent, McpConfig::default()).routes();
    // A body that fails part-way, as one the server's layers fail for not making
    // progress.
    let broken = futures::stream::iter([
        Ok(Bytes::from_static(b"{\"jsonrpc\":\"2.0\",")),
        Err(std::io::Error::other("the body stopped making progress")),
    ]);
    let mut req = Request::post("/mcp")
        .header("content-type", "application/json")
        .body(Body::from_stream(broken))
        .unwrap();
    req.extensions_mut().insert(Caller::new("t1", "alice"));
    let res = routes.oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let ct = res.headers()["content-type"].to_str().unwrap().to_string();
    let body = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    let v = assert_rpc_error(&ct, &String::from_utf8_lossy(&body), -32600);
    assert!(
        !v["error"]["message"].as_str().unwrap().contains("progress"),
        "no internal details: {v}"
    );
}
