//! Errors at the HTTP edge of `/agui`: every bad `POST /agui` (malformed or
//! oversized body, wrong content type, a body that fails while being read) is a
//! lone `RUN_ERROR` in the framing the client asked for, and the plain HTTP
//! endpoints (replay, reconnect, cancel) answer `{"code", "message"}` JSON — never
//! a framework's plain-text rejection.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use common::{golden, input, user, Env, Stream};
use serde_json::{json, Value};
use taskwire_agui::proto::{self, pb};
use taskwire_agui::{AguiAdapter, AguiConfig};
use taskwire_core::{Caller, MemoryStore, ScriptedAgent, TaskService};
use tower::ServiceExt;

const LIMIT: usize = 16 * 1024;

async fn start() -> Env {
    Env::with_config({
        let mut v = AguiConfig::default();
        v.max_body_bytes = LIMIT;
        v
    })
    .await
}

/// Posts `body` to `/agui` with `content_type`; the answer must be 200 SSE.
async fn post_sse(env: &Env, body: impl Into<reqwest::Body>, content_type: Option<&str>) -> Stream {
    let mut rb = env
        .http
        .post(env.url("/agui"))
        .header("x-test-principal", "alice")
        .header("accept", "text/event-stream")
        .timeout(Duration::from_secs(20))
        .body(body);
    if let Some(ct) = content_type {
        rb = rb.header("content-type", ct);
    }
    let r = rb.send().await.expect("the request is answered");
    let status = r.status();
    let ct = r.headers()["content-type"]
        .to_str()
        .expect("a content type")
        .to_string();
    let text = r.text().await.expect("the answer is read");
    assert_eq!(status, 200, "{text}");
    assert_eq!(ct, "text/event-stream", "{text}");
    Stream::parse(&text).verified()
}

/// The stream is one `RUN_ERROR` with `code`; returns its message.
fn lone_run_error(s: &Stream, code: &str) -> String {
    assert_eq!(s.types(), ["RUN_ERROR"], "{:#?}", s.frames);
    assert_eq!(s.last()["code"], code, "{:#?}", s.frames);
    let m = s.last()["message"].as_str().unwrap_or_default().to_string();
    assert!(!m.is_empty());
    m
}

/// A body of `n` bytes sent without a declared length (chunked).
fn chunked(n: usize) -> reqwest::Body {
    let chunk = Bytes::from(vec![b' '; 4 * 1024]);
    let count = n.div_ceil(chunk.len());
    reqwest::Body::wrap_stream(futures::stream::iter(
        (0..count).map(move |_| Ok::<_, std::io::Error>(chunk.clone())),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_inputs_are_a_lone_run_error() {
    let env = start().await;
    let json = Some("application/json");
    for (bad, names) in [
        (&b"{not json"[..], None),
        (b"", None),
        (b"[]", None),
        (b"\xff\xfe{}", None),
        (b"{}", Some("threadId")),
        (br#"{"threadId":"t","runId":"r"}"#, Some("messages")),
        (
            br#"{"threadId":"t","runId":"r","messages":"hi","tools":[],"context":[]}"#,
            Some("messages"),
        ),
        (
            br#"{"threadId":7,"runId":"r","messages":[]}"#,
            Some("threadId"),
        ),
        (
            br#"{"threadId":"t","runId":"r","messages":[{"role":"user","content":"x"}]}"#,
            Some("messages[0]: missing field `id`"),
        ),
        (
            br#"{"threadId":"t","runId":"r","messages":[],"resume":[{"status":"resolved"}]}"#,
            Some("interruptId"),
        ),
        (
            b"{\"threadId\":\"t\",\"runId\":\"r\",\"messages\":[{\"id\":\"m\",\"role\":\"user\",\"content\":\"\xc3\x28\"}]}",
            None,
        ),
    ] {
        let s = post_sse(&env, bad.to_vec(), json).await;
        let m = lone_run_error(&s, "invalid_input");
        if let Some(field) = names {
            assert!(m.contains(field), "{m}");
        }
        if bad == b"{not json" {
            golden("refused_not_json", &s.frames);
        }
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_types_other_than_json_are_a_lone_run_error() {
    let env = start().await;
    let good = input("th-ct", "run-1", json!([user("m1", "hello")])).to_string();
    for ct in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some(proto::MEDIA_TYPE),
    ] {
        let s = post_sse(&env, good.clone(), ct).await;
        let m = lone_run_error(&s, "invalid_input");
        assert!(m.contains("application/json"), "{m}");
        if ct == Some("text/plain") {
            golden("refused_content_type", &s.frames);
        }
    }
    // Nothing was run for them; the same input as JSON runs.
    let s = post_sse(&env, good, Some("application/json; charset=utf-8")).await;
    assert_eq!(s.last()["type"], "RUN_FINISHED", "{:#?}", s.frames);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_inputs_are_a_lone_run_error_too_large() {
    let env = start().await;
    let big = input(
        "th-big",
        "run-1",
        json!([user("m1", &"x".repeat(2 * LIMIT))]),
    )
    .to_string();
    let s = post_sse(&env, big, Some("application/json")).await;
    let m = lone_run_error(&s, "too_large");
    assert!(m.contains(&format!("{LIMIT} bytes")), "{m}");
    golden("refused_too_large", &s.frames);
    let s = post_sse(&env, chunked(2 * LIMIT), Some("application/json")).await;
    lone_run_error(&s, "too_large");
    // Nothing was created for the thread.
    let (status, body) = env.get("alice", "/agui/threads/th-big", None).await;
    assert_eq!(status, 404, "{body}");
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_use_the_framing_asked_for() {
    let env = start().await;
    for (body, code) in [
        ("{not json".to_string(), "invalid_input"),
        ("x".repeat(2 * LIMIT), "too_large"),
    ] {
        let r = env
            .http
            .post(env.url("/agui"))
            .header("x-test-principal", "alice")
            .header("content-type", "application/json")
            .header(
                "accept",
                format!("{}, text/event-stream;q=0.5", proto::MEDIA_TYPE),
            )
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], proto::MEDIA_TYPE);
        let frames = proto::decode_frames(&r.bytes().await.unwrap()).unwrap();
        assert_eq!(frames.len(), 1);
        match &frames[0].event {
            Some(pb::event::Event::RunError(e)) => {
                assert_eq!(e.code.as_deref(), Some(code));
                assert!(!e.message.is_empty());
            }
            other => panic!("not a RUN_ERROR: {other:?}"),
        }
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_body_is_a_lone_run_error() {
    let agent = Arc::new(ScriptedAgent::new());
    let service = TaskService::new(Arc::new(MemoryStore::new()), "scripted");
    let routes = AguiAdapter::new(service, agent, AguiConfig::default()).routes();
    // A body that fails part-way, as one the server's layers fail for not making
    // progress.
    let broken = futures::stream::iter([
        Ok(Bytes::from_static(b"{\"threadId\":")),
        Err(std::io::Error::other("the body stopped making progress")),
    ]);
    let mut req = axum::http::Request::post("/agui")
        .header("content-type", "application/json")
        .body(Body::from_stream(broken))
        .unwrap();
    req.extensions_mut().insert(Caller::new("t1", "alice"));
    let res = routes.oneshot(req).await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let body = axum::body::to_bytes(res.into_body(), usize::MAX)
        .await
        .unwrap();
    let s = Stream::parse(&String::from_utf8_lossy(&body)).verified();
    let m = lone_run_error(&s, "invalid_input");
    assert!(!m.contains("progress"), "no internal details: {m}");
}

/// `{"code", "message"}` JSON with `status`.
async fn assert_json_error(r: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(r.status(), status);
    let ct = r.headers()["content-type"]
        .to_str()
        .expect("a content type")
        .to_string();
    let text = r.text().await.expect("the answer is read");
    assert!(ct.starts_with("application/json"), "{ct}: {text}");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    assert_eq!(v["code"], code, "{v}");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_endpoints_answer_json_errors() {
    let env = start().await;
    let s = env
        .run(
            "alice",
            &input("th-e", "run-1", json!([user("m1", "hello")])),
        )
        .await;
    assert_eq!(s.last()["type"], "RUN_FINISHED");
    let get = |path: &str| {
        env.http
            .get(env.url(path))
            .header("x-test-principal", "alice")
            .send()
    };
    let post = |path: &str| {
        env.http
            .post(env.url(path))
            .header("x-test-principal", "alice")
            .send()
    };
    for path in [
        "/agui/threads/nope",
        "/agui/threads/%FF",
        "/agui/threads/th-e/runs/nope/events",
        "/agui/threads/%C3%28/runs/run-1/events",
    ] {
        let v = assert_json_error(get(path).await.unwrap(), 404, "not_found").await;
        if path == "/agui/threads/nope" {
            golden("error_not_found", &[(None, v)]);
        }
    }
    for path in [
        "/agui/threads/th-e/runs/nope/cancel",
        "/agui/threads/th-e/runs/%FF/cancel",
    ] {
        assert_json_error(post(path).await.unwrap(), 404, "not_found").await;
    }
    // Someone else's thread is not found.
    let r = env
        .http
        .get(env.url("/agui/threads/th-e"))
        .header("x-test-principal", "bob")
        .send()
        .await
        .unwrap();
    assert_json_error(r, 404, "not_found").await;
    // A Last-Event-ID that is not an id of the stream.
    let r = env
        .http
        .get(env.url("/agui/threads/th-e/runs/run-1/events"))
        .header("x-test-principal", "alice")
        .header("last-event-id", "zzz")
        .send()
        .await
        .unwrap();
    assert_json_error(r, 400, "invalid_input").await;
    // Cancelling a run whose task has ended: 409 with the core's code.
    let r = post("/agui/threads/th-e/runs/run-1/cancel").await.unwrap();
    assert_json_error(r, 409, "wrong_state").await;
    env.stop().await;
}

/// A refused body is read before the refusal is answered: a client that sends
/// its whole body (too large) before it reads the answer gets the `RUN_ERROR`,
/// not a connection reset with the answer unread (a server that closes with
/// the client's bytes unread resets the connection). Over raw connections,
/// with a declared length and chunked, the body's second part sent after a
/// pause, three times each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_body_is_read_before_the_refusal() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let env = start().await;
    let size = 512 * 1024;
    let declared = (format!("content-length: {size}"), vec![b' '; size]);
    let chunked = {
        let chunk = [
            format!("{:x}\r\n", 4096).into_bytes(),
            vec![b' '; 4096],
            b"\r\n".to_vec(),
        ]
        .concat();
        let mut body: Vec<u8> = chunk.repeat(size / 4096);
        body.extend_from_slice(b"0\r\n\r\n");
        ("transfer-encoding: chunked".to_string(), body)
    };
    for (framing, body) in [declared, chunked] {
        for round in 0..3 {
            let mut sock = tokio::net::TcpStream::connect(env.addr)
                .await
                .expect("connect");
            let head = format!(
                "POST /agui HTTP/1.1\r\nhost: {}\r\nx-test-principal: alice\r\ncontent-type: application/json\r\naccept: text/event-stream\r\nconnection: close\r\n{framing}\r\n\r\n",
                env.addr
            );
            let mut answer = Vec::new();
            // The body in two parts, the second sent after a pause (a client
            // still sending when the server has decided).
            let (first, rest) = body.split_at(64 * 1024);
            let exchange = async {
                sock.write_all(head.as_bytes()).await?;
                sock.write_all(first).await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
                sock.write_all(rest).await?;
                sock.read_to_end(&mut answer).await
            };
            let done = tokio::time::timeout(Duration::from_secs(20), exchange)
                .await
                .expect("answered in time");
            let text = String::from_utf8_lossy(&answer);
            assert!(
                done.is_ok(),
                "{framing}, round {round}: {done:?} after {text:?}"
            );
            assert!(
                text.starts_with("HTTP/1.1 200"),
                "{framing}, round {round}: {text}"
            );
            assert!(
                text.contains("too_large"),
                "{framing}, round {round}: {text}"
            );
        }
    }
    env.stop().await;
}

/// A request that asked `Expect: 100-continue` with a declared length over
/// the limit is refused at once, without `100 Continue`: the client, which
/// waits before it sends the body, is told to stop rather than to send what
/// would only be read and dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_expecting_continue_is_refused_unsent() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let env = start().await;
    let mut sock = tokio::net::TcpStream::connect(env.addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /agui HTTP/1.1\r\nhost: {}\r\nx-test-principal: alice\r\ncontent-type: application/json\r\naccept: text/event-stream\r\nconnection: close\r\nexpect: 100-continue\r\ncontent-length: {}\r\n\r\n",
        env.addr,
        4 * LIMIT
    );
    sock.write_all(head.as_bytes()).await.expect("head");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), sock.read_to_end(&mut answer))
        .await
        .expect("answered in time")
        .expect("read");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("too_large"), "{text}");
    env.stop().await;
}
