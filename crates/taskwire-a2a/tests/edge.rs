//! Errors at the HTTP edge of `POST /a2a`: every bad body and content type is a
//! JSON-RPC error object (never a framework's plain-text rejection), with the
//! HTTP status docs/a2a.md names.

mod common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use bytes::Bytes;
use common::{check_fixture, start, test_config};
use serde_json::Value;
use taskwire_core::Caller;
use tower::ServiceExt;

/// The body of an answer, which must be a JSON-RPC error with `code`, id null and
/// an ErrorInfo whose reason is `reason`.
fn assert_rpc_error(ct: &str, body: &str, code: i64, reason: &str) -> Value {
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
    assert_eq!(v["error"]["data"][0]["reason"], reason, "{v}");
    v
}

async fn post(
    s: &common::Server,
    path: &str,
    body: reqwest::Body,
    content_type: Option<&str>,
) -> (u16, String, String) {
    let mut req = s.client.post(format!("{}{path}", s.base)).body(body);
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

/// A body of `n` bytes sent without a declared length (chunked).
fn chunked(n: usize) -> reqwest::Body {
    let chunk = Bytes::from(vec![b' '; 8 * 1024]);
    let count = n.div_ceil(chunk.len());
    reqwest::Body::wrap_stream(futures::stream::iter(
        (0..count).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
    ))
}

#[tokio::test]
async fn oversized_bodies_are_invalid_request_with_413() {
    let s = start(test_config()).await; // max_body_bytes: 64 KiB
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{{"id":"{}"}}}}"#,
        "x".repeat(100 * 1024)
    );
    for path in ["/a2a", "/a2a/"] {
        // Declared length over the limit: refused before reading.
        let (st, ct, body) = post(&s, path, big.clone().into(), Some("application/json")).await;
        assert_eq!(st, 413, "{path}: {body}");
        let v = assert_rpc_error(&ct, &body, -32600, "INVALID_REQUEST");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("65536 bytes"),
            "{v}"
        );
        if path == "/a2a" {
            check_fixture("error_body_too_large", &v);
        }
        // No declared length: found while reading.
        let (st, ct, body) = post(&s, path, chunked(200 * 1024), Some("application/json")).await;
        assert_eq!(st, 413, "{path} chunked: {body}");
        assert_rpc_error(&ct, &body, -32600, "INVALID_REQUEST");
    }
    // A body just under the limit is read and parsed (and then not found).
    let fits = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{{"id":"{}"}}}}"#,
        "x".repeat(60 * 1024)
    );
    let (st, _, body) = post(&s, "/a2a", fits.into(), Some("application/json")).await;
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"]["code"], -32001, "{v}");
    s.stop().await;
}

#[tokio::test]
async fn malformed_json_and_content_types_are_json_rpc_errors() {
    let s = start(test_config()).await;
    for bad in [
        &b"{not json"[..],
        b"",
        b"   ",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\"",
        b"\xff\xfe{}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"\xc3\x28\"}}",
    ] {
        let (st, ct, body) = post(&s, "/a2a", bad.to_vec().into(), Some("application/json")).await;
        assert_eq!(st, 200, "{bad:?}: {body}");
        assert_rpc_error(&ct, &body, -32700, "PARSE_ERROR");
    }
    for ct_in in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/protobuf",
        "multipart/form-data; boundary=x",
    ] {
        let (st, ct, body) = post(&s, "/a2a", "{}".into(), Some(ct_in)).await;
        assert_eq!(st, 415, "{ct_in}: {body}");
        assert_rpc_error(&ct, &body, -32005, "CONTENT_TYPE_NOT_SUPPORTED");
    }
    // A wrong content type is answered before the body is read, even an oversized one.
    let (st, ct, body) = post(
        &s,
        "/a2a",
        "x".repeat(100 * 1024).into(),
        Some("text/plain"),
    )
    .await;
    assert_eq!(st, 415, "{body}");
    assert_rpc_error(&ct, &body, -32005, "CONTENT_TYPE_NOT_SUPPORTED");
    s.stop().await;
}

#[tokio::test]
async fn an_unreadable_body_is_invalid_request_with_400() {
    let s = start(test_config()).await;
    // A body that fails part-way (as one the server's layers fail for not making
    // progress), sent through the router in-process.
    let broken = futures::stream::iter([
        Ok(Bytes::from_static(b"{\"jsonrpc\":\"2.0\",")),
        Err(std::io::Error::other("the body stopped making progress")),
    ]);
    let mut req = Request::post("/a2a")
        .header("content-type", "application/json")
        .body(Body::from_stream(broken))
        .unwrap();
    req.extensions_mut().insert(Caller::new("default", "alice"));
    let res = s.adapter.routes().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let ct = res.headers()["content-type"].to_str().unwrap().to_string();
    let body = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    let v = assert_rpc_error(
        &ct,
        &String::from_utf8_lossy(&body),
        -32600,
        "INVALID_REQUEST",
    );
    assert!(
        !v["error"]["message"].as_str().unwrap().contains("progress"),
        "no internal details: {v}"
    );
    s.stop().await;
}

#[tokio::test]
async fn serve_keeps_its_content_type_check() {
    // `jsonrpc::serve` is what a server that reads the body itself calls.
    let s = start(test_config()).await;
    let caller = Caller::new("default", "alice");
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("content-type", "text/plain".parse().unwrap());
    let res = taskwire_a2a::jsonrpc::serve(
        s.adapter.service(),
        &caller,
        None,
        &headers,
        Bytes::from_static(b"{}"),
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    headers.insert("content-type", "application/json".parse().unwrap());
    let res = taskwire_a2a::jsonrpc::serve(
        s.adapter.service(),
        &caller,
        None,
        &headers,
        Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    let body = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(v.get("result").is_some(), "{v}");
    s.stop().await;
}
