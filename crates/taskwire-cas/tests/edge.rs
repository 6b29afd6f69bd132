//! Errors at the HTTP edge of `/cas`: oversized, unreadable and malformed bodies,
//! wrong content types and undecodable paths are each answered with the CAS error
//! body `{"error": {"code", "message"}}` and the status docs/cas.md names, never a
//! framework's plain-text rejection.

#[expect(dead_code, reason = "the harness is shared with tests/cas.rs")]
mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::body::Bytes;
use common::{golden, id_of, input, Harness};
use reqwest::StatusCode;
use serde_json::Value;
use taskwire_cas::{CasAdapter, CasConfig};
use taskwire_core::{Agent, Caller, MemoryStore, RuntimeConfig, ScriptedAgent, TaskService};
use tower::ServiceExt;

const LIMIT: usize = 16 * 1024;

fn scripted() -> Arc<dyn Agent> {
    Arc::new(ScriptedAgent::new())
}

async fn start() -> Harness {
    Harness::start_full(scripted(), |s| s, RuntimeConfig::default(), {
        let mut v = CasConfig::default();
        v.recheck = Duration::from_millis(500);
        v.max_body_bytes = LIMIT;
        v
    })
    .await
}

/// Sends `body` with `content_type`; returns the status, the content type and the
/// body of the answer.
async fn post(
    h: &Harness,
    path: &str,
    body: impl Into<reqwest::Body>,
    content_type: Option<&str>,
) -> (StatusCode, String, String) {
    let mut rb = h
        .client
        .post(format!("{}{path}", h.base))
        .header("x-test-principal", "alice")
        .body(body);
    if let Some(ct) = content_type {
        rb = rb.header("content-type", ct);
    }
    let r = rb.send().await.expect("the request is answered");
    let status = r.status();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (status, ct, r.text().await.expect("the answer is read"))
}

/// The CAS error body with `code`.
fn assert_cas_error(ct: &str, body: &str, code: &str) -> Value {
    assert!(
        ct.starts_with("application/json"),
        "content type {ct:?}: {body}"
    );
    let v: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{v}"
    );
    assert_eq!(v.as_object().map(|o| o.len()), Some(1), "{v}");
    v
}

/// An input of about `n` bytes.
fn big_input(n: usize) -> String {
    input(&"x".repeat(n)).to_string()
}

/// A body of `n` bytes sent without a declared length (chunked).
fn chunked(n: usize) -> reqwest::Body {
    let chunk = Bytes::from(vec![b' '; 4 * 1024]);
    let count = n.div_ceil(chunk.len());
    reqwest::Body::wrap_stream(futures::stream::iter(
        (0..count).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
    ))
}

#[tokio::test]
async fn oversized_bodies_are_413_too_large() {
    let h = start().await;
    let id = id_of(&h.create_text("ask name?").await);
    let json = Some("application/json");
    for path in [
        "/cas/tasks".to_string(),
        format!("/cas/tasks/{id}/input"),
        format!("/cas/reviews/{id}/r1"),
        format!("/cas/host/tasks/{id}/complete"),
        format!("/cas/host/tasks/{id}/interrupt"),
    ] {
        let (st, ct, body) = post(&h, &path, big_input(2 * LIMIT), json).await;
        assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE, "{path}: {body}");
        let v = assert_cas_error(&ct, &body, "too_large");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains(&format!("{LIMIT} bytes")),
            "{v}"
        );
        if path == "/cas/tasks" {
            golden("error_body_too_large", &v);
        }
        let (st, ct, body) = post(&h, &path, chunked(2 * LIMIT), json).await;
        assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE, "{path} chunked: {body}");
        assert_cas_error(&ct, &body, "too_large");
    }
    // A body just under the limit is read and served.
    let (st, ct, body) = post(&h, "/cas/tasks", big_input(LIMIT - 100), json).await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    assert!(ct.starts_with("application/json"));
    h.stop().await;
}

#[tokio::test]
async fn content_types_other_than_json_are_415() {
    let h = start().await;
    let id = id_of(&h.create_text("ask name?").await);
    let good = input("hello").to_string();
    for path in ["/cas/tasks".to_string(), format!("/cas/tasks/{id}/input")] {
        for ct_in in [
            None,
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
        ] {
            let (st, ct, body) = post(&h, &path, good.clone(), ct_in).await;
            assert_eq!(
                st,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{path} {ct_in:?}: {body}"
            );
            let v = assert_cas_error(&ct, &body, "unsupported_media_type");
            if path == "/cas/tasks" && ct_in == Some("text/plain") {
                golden("error_unsupported_media_type", &v);
            }
        }
    }
    let (st, ct, body) = post(
        &h,
        &format!("/cas/reviews/{id}/r1"),
        r#"{"decision":"approve"}"#,
        Some("text/plain"),
    )
    .await;
    assert_eq!(st, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    assert_cas_error(&ct, &body, "unsupported_media_type");
    // A host command's body is optional; when there is one it must be JSON.
    let (st, ct, body) = post(
        &h,
        &format!("/cas/host/tasks/{id}/interrupt"),
        r#"{"reason":"x"}"#,
        Some("text/plain"),
    )
    .await;
    assert_eq!(st, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    assert_cas_error(&ct, &body, "unsupported_media_type");
    // JSON with parameters, in any case, is accepted.
    let (st, _, body) = post(
        &h,
        "/cas/tasks",
        good,
        Some("Application/JSON; charset=utf-8"),
    )
    .await;
    assert_eq!(st, StatusCode::CREATED, "{body}");
    h.stop().await;
}

#[tokio::test]
async fn malformed_json_is_400_invalid_input() {
    let h = start().await;
    let id = id_of(&h.create_text("ask name?").await);
    let json = Some("application/json");
    for (path, bad) in [
        ("/cas/tasks".to_string(), &b"{not json"[..]),
        ("/cas/tasks".to_string(), b""),
        ("/cas/tasks".to_string(), b"\xff\xfe{}"),
        (
            "/cas/tasks".to_string(),
            b"{\"message\":[{\"text\":\"\xc3\x28\"}]}",
        ),
        (format!("/cas/tasks/{id}/input"), b"[1,"),
        (format!("/cas/reviews/{id}/r1"), b"{\"decision\":"),
        (format!("/cas/reviews/{id}/r1"), b"{\"decision\":\"maybe\"}"),
        (
            format!("/cas/reviews/{id}/r1"),
            b"{\"decision\":\"approve\",\"x\":1}",
        ),
        (format!("/cas/host/tasks/{id}/complete"), b"{\"reason\":"),
        (format!("/cas/host/tasks/{id}/complete"), b"{\"reason\":7}"),
    ] {
        let (st, ct, body) = post(&h, &path, bad.to_vec(), json).await;
        assert_eq!(st, StatusCode::BAD_REQUEST, "{path} {bad:?}: {body}");
        assert_cas_error(&ct, &body, "invalid_input");
    }
    // A wrong member names its path.
    let (_, ct, body) = post(
        &h,
        &format!("/cas/reviews/{id}/r1"),
        r#"{"decision":"maybe"}"#,
        json,
    )
    .await;
    let v = assert_cas_error(&ct, &body, "invalid_input");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("body.decision"),
        "{v}"
    );
    // A blank host body means the defaults, whatever its content type.
    let (st, _, body) = post(
        &h,
        &format!("/cas/host/tasks/{id}/complete"),
        "  \n",
        Some("text/plain"),
    )
    .await;
    assert_eq!(st, StatusCode::NO_CONTENT, "{body}");
    h.stop().await;
}

#[tokio::test]
async fn paths_that_do_not_decode_are_404_not_found() {
    let h = start().await;
    let id = id_of(&h.create_text("hello").await);
    for path in [
        "/cas/tasks/%FF".to_string(),
        "/cas/tasks/%C3%28/messages".to_string(),
        "/cas/tasks/%FF/events".to_string(),
        format!("/cas/tasks/{id}/authorizations/%FF"),
    ] {
        let method = if path.contains("authorizations") {
            reqwest::Method::POST
        } else {
            reqwest::Method::GET
        };
        let r = h
            .client
            .request(method, format!("{}{path}", h.base))
            .header("x-test-principal", "alice")
            .send()
            .await
            .unwrap();
        let st = r.status();
        let ct = r.headers()["content-type"].to_str().unwrap().to_string();
        let body = r.text().await.unwrap();
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_cas_error(&ct, &body, "not_found");
    }
    for path in [
        "/cas/tasks/%FF/input".to_string(),
        format!("/cas/reviews/{id}/%FF"),
        "/cas/host/tasks/%FF/complete".to_string(),
        "/cas/host/tasks/%FF/interrupt".to_string(),
    ] {
        let (st, ct, body) =
            post(&h, &path, input("x").to_string(), Some("application/json")).await;
        assert_eq!(st, StatusCode::NOT_FOUND, "{path}: {body}");
        assert_cas_error(&ct, &body, "not_found");
    }
    h.stop().await;
}

#[tokio::test]
async fn an_unreadable_body_is_400_invalid_input() {
    let agent = scripted();
    let service = TaskService::new(Arc::new(MemoryStore::new()), agent.info().name);
    let routes = CasAdapter::new(service, agent, CasConfig::default()).routes();
    // A body that fails part-way, as one the server's layers fail for not making
    // progress.
    let broken = futures::stream::iter([
        Ok(Bytes::from_static(b"{\"message\":")),
        Err(std::io::Error::other("the body stopped making progress")),
    ]);
    let mut req = axum::http::Request::post("/cas/tasks")
        .header("content-type", "application/json")
        .body(Body::from_stream(broken))
        .unwrap();
    req.extensions_mut()
        .insert(Caller::new(common::TENANT, "alice"));
    let res = routes.oneshot(req).await.unwrap();
    assert_eq!(res.status().as_u16(), 400);
    let ct = res.headers()["content-type"].to_str().unwrap().to_string();
    let body = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    let v = assert_cas_error(&ct, &String::from_utf8_lossy(&body), "invalid_input");
    assert!(
        !v["error"]["message"].as_str().unwrap().contains("progress"),
        "no internal details: {v}"
    );
}
