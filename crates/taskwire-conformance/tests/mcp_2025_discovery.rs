//! Discovery of MCP 2025-11-25 (`mcp-2025`) against small fake servers
//! (axum on 127.0.0.1): a server that negotiates another revision, or that
//! negotiates 2025-11-25 without task-augmented `tools/call`, is skipped with the
//! reason; one that offers nothing at `/mcp` is skipped naming the path.

use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use taskwire_conformance::{Config, Protocol};

fn answer(req: &Value, version: &str, tasks: bool) -> Json<Value> {
    let id = req["id"].clone();
    if req["method"] != "initialize" {
        return Json(
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
        );
    }
    let mut caps = json!({"tools": {}});
    if tasks {
        caps["tasks"] = json!({"requests": {"tools": {"call": {}}}});
    }
    Json(json!({"jsonrpc": "2.0", "id": id, "result": {
        "protocolVersion": version, "capabilities": caps,
        "serverInfo": {"name": "fake", "version": "1"}}}))
}

async fn start() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = Router::new()
        .route(
            "/older/mcp",
            post(|Json(r): Json<Value>| async move { answer(&r, "2025-06-18", false) }),
        )
        .route(
            "/notasks/mcp",
            post(|Json(r): Json<Value>| async move { answer(&r, "2025-11-25", false) }),
        );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}")
}

/// Why `mcp-2025` is not run against `base`: the only protocol selected, so the
/// run refuses with every skipped protocol's reason.
async fn mcp_2025_skip(base: &str) -> String {
    let mut c = Config::new(base).expect("config");
    c.only = vec!["create".into()];
    c.protocols = vec![Protocol::Mcp2025];
    c.request_timeout = std::time::Duration::from_secs(5);
    match taskwire_conformance::run(&c).await {
        Ok(report) => panic!("mcp-2025 was offered: {:?}", report.offers),
        Err(e) => {
            let r = e.to_string();
            assert!(r.contains("mcp-2025:"), "{r}");
            r
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_2025_is_skipped_with_the_reason_when_not_negotiated() {
    let base = start().await;
    let r = mcp_2025_skip(&format!("{base}/older")).await;
    assert!(r.contains("negotiated \"2025-06-18\""), "{r}");
    let r = mcp_2025_skip(&format!("{base}/notasks")).await;
    assert!(r.contains("capabilities.tasks.requests.tools.call"), "{r}");
    let r = mcp_2025_skip(&format!("{base}/nothing")).await;
    assert!(r.contains("/mcp"), "{r}");
}
