//! `taskwire serve`'s HTTP/2 (h2c) through a third-party client, the `h2` crate:
//! many concurrent streams on one connection, request and response bodies far
//! larger than the default flow-control windows, JSON-RPC, the router's routes
//! and SSE over HTTP/2.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::Duration;

use axum::http::{Method, Request};
use bytes::Bytes;
use serde_json::{json, Value};

async fn body_of(mut body: h2::RecvStream) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        out.extend_from_slice(&chunk);
    }
    out
}

#[tokio::test]
async fn the_h2_crate_client_over_one_connection() {
    let server = common::build_serve(&[]).await;
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(server.run(stopped));

    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    let conn = tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();

    // 16 concurrent blocking SendMessage calls, each with a 200 KB text part: the
    // requests exceed the 64 KiB default windows, and so do the answers (the
    // task's history carries the message back).
    let text = "x".repeat(200 * 1024);
    let mut calls = Vec::new();
    for i in 0..16 {
        let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage",
            "params": {"message": {"messageId": format!("h2-{i}"), "role": "ROLE_USER",
                                   "parts": [{"text": text}]}}}))
        .unwrap();
        let req = Request::builder()
            .method(Method::POST)
            .uri(format!("http://{addr}/a2a"))
            .header("content-type", "application/json")
            .body(())
            .unwrap();
        let (answer, mut send) = client.send_request(req, false).unwrap();
        calls.push(tokio::spawn(async move {
            let mut rest = Bytes::from(body);
            while !rest.is_empty() {
                send.reserve_capacity(rest.len());
                let n = std::future::poll_fn(|cx| send.poll_capacity(cx))
                    .await
                    .unwrap()
                    .unwrap();
                let chunk = rest.split_to(n.min(rest.len()));
                send.send_data(chunk, rest.is_empty()).unwrap();
            }
            let res = answer.await.unwrap();
            assert_eq!(res.status(), 200);
            let bytes = body_of(res.into_body()).await;
            let v: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(v["id"], i, "{v}");
            assert!(v["result"]["task"]["id"].is_string(), "{v}");
            bytes.len()
        }));
    }
    for c in calls {
        let n = tokio::time::timeout(Duration::from_secs(30), c)
            .await
            .unwrap()
            .unwrap();
        assert!(n > 200 * 1024, "answer of {n} bytes");
    }

    // A route of the router (not a direct route) over HTTP/2.
    let req = Request::get(format!("http://{addr}/healthz"))
        .body(())
        .unwrap();
    let (answer, _) = client.send_request(req, true).unwrap();
    let res = answer.await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers().contains_key("date"));

    // An SSE stream over HTTP/2: the frames arrive as DATA until the task ends.
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 99,
        "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "h2-stream", "role": "ROLE_USER",
                               "parts": [{"text": "hello"}]}}}))
    .unwrap();
    let req = Request::post(format!("http://{addr}/a2a"))
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    let (answer, mut send) = client.send_request(req, false).unwrap();
    send.send_data(Bytes::from(body), true).unwrap();
    let res = answer.await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let sse = String::from_utf8(
        tokio::time::timeout(Duration::from_secs(10), body_of(res.into_body()))
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(sse.contains("TASK_STATE_COMPLETED"), "{sse}");
    assert!(
        sse.matches("\nid: ").count() + usize::from(sse.starts_with("id: ")) >= 2,
        "{sse}"
    );

    drop(client);
    stop.send(()).unwrap();
    run.await.unwrap().unwrap();
    let _ = conn.await;
}
