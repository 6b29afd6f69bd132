//! No server response makes a client panic: a fake server answers with
//! wrong content types, malformed JSON, wrong ids, truncated streams and
//! error pages, and every client reports a typed error.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::Duration;

use axum::http::header::CONTENT_TYPE;
use axum::routing::{get, post};
use axum::Router;
use futures::StreamExt;
use taskwire_client::a2a::{self, A2aClient};
use taskwire_client::agui::{AguiClient, AguiEncoding, RunAgentInput};
use taskwire_client::cas::CasClient;
use taskwire_client::grpc::A2aGrpcClient;
use taskwire_client::mcp::McpClient;
use taskwire_client::{ClientConfig, ClientError};

fn reply(
    ct: &'static str,
    body: &'static str,
) -> impl Fn() -> std::future::Ready<([(axum::http::HeaderName, &'static str); 1], &'static str)> + Clone
{
    move || std::future::ready(([(CONTENT_TYPE, ct)], body))
}

async fn fake() -> (String, tokio::task::JoinHandle<()>) {
    let app = Router::new()
        .route("/html", post(reply("text/html", "<html>oops</html>")))
        .route("/noresult", post(reply("application/json", r#"{"jsonrpc":"2.0","id":null}"#)))
        .route("/wrongid", post(reply("application/json", r#"{"jsonrpc":"2.0","id":999999999,"result":{}}"#)))
        .route("/notjson", post(reply("application/json", "{\"jsonrpc\": ")))
        .route("/sse-garbage", post(reply("text/event-stream", "data: not json\n\n")))
        .route(
            "/sse-truncated",
            post(reply(
                "text/event-stream",
                "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"id\":\"t1\",\"status\":{\"state\":\"TASK_STATE_WORKING\"}}}}\n\n",
            )),
        )
        .route("/boom", post(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }))
        .route("/mcp-text", post(reply("text/plain", "{}")))
        .route("/agui-trunc", post(reply("application/vnd.ag-ui.event+proto", "\u{0}\u{0}\u{0}\u{9}abc")))
        .route("/agui-bad", post(reply("text/event-stream", "data: {\"no\":\"type\"}\n\n")))
        .route("/agui-xml", post(reply("application/xml", "<x/>")))
        .route("/cas/tasks/{id}", get(reply("application/json", r#"{"id": 5}"#)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let h = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_reports_malformed_answers_as_typed_errors() {
    let (base, _h) = fake().await;
    let cfg = || common::config(&base);
    let a2a_at = |p: &str| A2aClient::with_endpoint(cfg(), p).unwrap();

    let e = a2a_at("/html").get_task("x", None).await.unwrap_err();
    assert!(matches!(e, ClientError::Decode { .. }), "{e:?}");
    let e = a2a_at("/noresult").get_task("x", None).await.unwrap_err();
    assert!(matches!(e, ClientError::Protocol(_)), "{e:?}");
    let e = a2a_at("/wrongid").get_task("x", None).await.unwrap_err();
    assert!(matches!(e, ClientError::Protocol(_)), "{e:?}");
    let e = a2a_at("/notjson").get_task("x", None).await.unwrap_err();
    assert!(matches!(e, ClientError::Decode { .. }), "{e:?}");
    let e = a2a_at("/boom").get_task("x", None).await.unwrap_err();
    assert!(matches!(e, ClientError::Http { status: 500, .. }), "{e:?}");

    // A frame that is not JSON ends the stream with a decode error.
    let mut s = a2a_at("/sse-garbage")
        .send_streaming_message(a2a::send_request(a2a::text_message("x")))
        .await
        .unwrap();
    let first = s.next().await.expect("an item");
    assert!(
        matches!(first, Err(ClientError::Decode { .. })),
        "{first:?}"
    );
    assert!(s.next().await.is_none());

    // A stream that keeps ending mid-task: reconnects, then the polling
    // fallback reads an SSE body where JSON is due; a typed error ends it.
    let s = a2a_at("/sse-truncated")
        .send_streaming_message(a2a::send_request(a2a::text_message("x")))
        .await
        .unwrap();
    let items: Vec<_> = tokio::time::timeout(Duration::from_secs(10), s.collect::<Vec<_>>())
        .await
        .expect("ends");
    assert!(items.iter().take(items.len() - 1).all(|i| i.is_ok()));
    assert!(items.last().unwrap().is_err(), "{items:?}");

    // MCP: a content type that is neither JSON nor SSE.
    let mcp = McpClient::with_endpoint(cfg(), "/mcp-text").unwrap();
    let e = mcp.get_task("x").await.unwrap_err();
    assert!(matches!(e, ClientError::ContentType { .. }), "{e:?}");

    // AG-UI: truncated protobuf frame, event without type, wrong media type.
    let input = RunAgentInput::new("t", "r").user_message("m", "x");
    let agui = AguiClient::with_endpoint(cfg(), "/agui-trunc").unwrap();
    let items: Vec<_> = agui
        .run(&input, AguiEncoding::Protobuf)
        .await
        .unwrap()
        .collect::<Vec<_>>()
        .await;
    assert!(items.last().is_some_and(|i| i.is_err()), "{items:?}");
    let agui = AguiClient::with_endpoint(cfg(), "/agui-bad").unwrap();
    let items: Vec<_> = agui
        .run(&input, AguiEncoding::Sse)
        .await
        .unwrap()
        .collect::<Vec<_>>()
        .await;
    assert!(
        matches!(items.first(), Some(Err(ClientError::Decode { .. }))),
        "{items:?}"
    );
    let agui = AguiClient::with_endpoint(cfg(), "/agui-xml").unwrap();
    let e = agui.run(&input, AguiEncoding::Sse).await.unwrap_err();
    assert!(matches!(e, ClientError::ContentType { .. }), "{e:?}");

    // CAS: a status object of the wrong shape.
    let cas = CasClient::new(cfg()).unwrap();
    let e = cas.status("x").await.unwrap_err();
    assert!(matches!(e, ClientError::Decode { .. }), "{e:?}");

    // gRPC against something that is not a gRPC server.
    let grpc = A2aGrpcClient::new(cfg()).unwrap();
    assert!(grpc.get_task("x", None).await.is_err());
}

/// A `tools/list` server that pages: three pages of one tool each at
/// `/mcp`, and a cursor that never changes at `/loop/mcp`.
async fn paging() -> (String, tokio::task::JoinHandle<()>) {
    async fn page(looping: bool, body: axum::body::Bytes) -> axum::response::Response {
        use axum::response::IntoResponse;
        let req: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let id = req["id"].clone();
        let cursor = req["params"]["cursor"].as_str().map(str::to_string);
        let (name, next) = match (looping, cursor.as_deref()) {
            (true, _) => ("again", Some("same")),
            (false, None) => ("first", Some("p2")),
            (false, Some("p2")) => ("second", Some("p3")),
            (false, _) => ("third", None),
        };
        let mut result =
            serde_json::json!({"tools": [{"name": name, "inputSchema": {"type": "object"}}]});
        if let Some(n) = next {
            result["nextCursor"] = serde_json::Value::from(n);
        }
        let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
        ([(CONTENT_TYPE, "application/json")], body.to_string()).into_response()
    }
    let app = Router::new()
        .route("/mcp", post(|b: axum::body::Bytes| page(false, b)))
        .route("/loop/mcp", post(|b: axum::body::Bytes| page(true, b)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let h = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), h)
}

/// `tools/list` follows `nextCursor` to the last page, and a server that
/// repeats a cursor is an error, not a loop.
#[tokio::test]
async fn tools_list_reads_every_page() {
    let (base, _h) = paging().await;
    let tools = McpClient::new(common::config(&base))
        .unwrap()
        .list_tools()
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.value.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["first", "second", "third"]);
    assert_eq!(tools.raw["tools"].as_array().map(Vec::len), Some(3));
    let e = McpClient::new(common::config(&format!("{base}/loop")))
        .unwrap()
        .list_tools()
        .await
        .expect_err("a repeated cursor");
    assert!(
        matches!(&e, ClientError::Protocol(m) if m.contains("twice")),
        "{e:?}"
    );
    // Past max_list_pages, the list is refused, naming the bound.
    let two = ClientConfig::builder(&base).max_list_pages(2).build();
    let e = McpClient::new(two)
        .unwrap()
        .list_tools()
        .await
        .expect_err("three pages past a bound of two");
    assert!(
        matches!(&e, ClientError::Protocol(m) if m.contains("more than 2 pages")),
        "{e:?}"
    );
}

/// A call that could not connect sent nothing and says so (`is_unsent`, so
/// a bridge may send even a `tools/call` again); one whose connection broke
/// after the request was written is a transport error that may have reached
/// the server.
#[tokio::test]
async fn a_refused_connection_is_told_from_a_broken_one() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_base = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let e = McpClient::new(common::config(&format!("{closed_base}/mcp")))
        .unwrap()
        .list_tools()
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Connect(_)), "{e:?}");
    assert!(e.is_unsent() && e.is_transient(), "{e:?}");

    // Reads the request's head, then closes without answering.
    let breaking = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", breaking.local_addr().unwrap());
    let server = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        while let Ok((mut sock, _)) = breaking.accept().await {
            let mut buf = vec![0u8; 64 * 1024];
            let _ = sock.read(&mut buf).await;
            drop(sock);
        }
    });
    let e = McpClient::new(common::config(&format!("{base}/mcp")))
        .unwrap()
        .list_tools()
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Transport(_)), "{e:?}");
    assert!(!e.is_unsent() && e.is_transient(), "{e:?}");
    server.abort();
}
