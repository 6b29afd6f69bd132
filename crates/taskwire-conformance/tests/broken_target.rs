//! The suite against a deliberately wrong A2A server (axum on 127.0.0.1): it must
//! fail the broken cells with the invariant and the exchange that showed it, and
//! skip what the target does not offer.

use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use taskwire_conformance::report::Verdict;
use taskwire_conformance::{Config, Protocol};

/// Answers every create with a task, every read with that task FAILED, and never
/// reports an unknown task as not found.
async fn rpc(Json(req): Json<Value>) -> Json<Value> {
    let id = req["id"].clone();
    let task = |state: &str| json!({"id": "t-1", "contextId": "c-1", "status": {"state": state}});
    let result = match req["method"].as_str() {
        Some("SendMessage") => json!({"task": task("TASK_STATE_SUBMITTED")}),
        Some("GetTask") | Some("CancelTask") => task("TASK_STATE_FAILED"),
        _ => {
            return Json(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no"}}),
            )
        }
    };
    Json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

async fn start() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let base = format!("http://{addr}");
    let card = json!({
        "name": "liar",
        "description": "wrong on purpose",
        "version": "1",
        "supportedInterfaces": [{"url": format!("{base}/a2a"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "echo", "description": "claims to echo", "tags": ["echo"]}]
    });
    let app = Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || {
                let c = card.clone();
                async move { Json(c) }
            }),
        )
        .route("/a2a", post(rpc));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_server_fails_with_the_broken_invariant_and_the_exchange() {
    let base = start().await;
    let mut c = Config::new(&base).expect("config");
    c.only = vec!["create".into(), "unknown-id".into(), "auth".into()];
    c.request_timeout = std::time::Duration::from_secs(5);
    let report = taskwire_conformance::run(&c).await.expect("runs");
    let cell = |s: &str, p: Protocol| {
        report
            .cells
            .iter()
            .find(|c| c.scenario == s && c.protocol == p)
            .map(|c| c.verdict.clone())
            .expect("cell")
    };
    // The echo task "completes" as FAILED: the invariant names it, the exchange shows it.
    match cell("create", Protocol::A2a) {
        Verdict::Fail(f) => {
            assert_eq!(f.step, 2, "{f:?}");
            assert!(f.invariant.starts_with("completes:"), "{f:?}");
            assert!(f.detail.contains("TASK_STATE_FAILED"), "{f:?}");
            assert!(
                f.exchange
                    .iter()
                    .any(|e| e.request.contains("GetTask")
                        && e.response.contains("TASK_STATE_FAILED")),
                "{f:?}"
            );
        }
        other => panic!("create × a2a: {other:?}"),
    }
    // An unknown id is answered with a task: not found was expected.
    match cell("unknown-id", Protocol::A2a) {
        Verdict::Fail(f) => assert!(f.detail.contains("not_found"), "{f:?}"),
        other => panic!("unknown-id × a2a: {other:?}"),
    }
    // Not the scripted agent: skipped with the reason.
    match cell("auth", Protocol::A2a) {
        Verdict::Skip(r) => assert!(r.contains("scripted reference agent"), "{r}"),
        other => panic!("auth × a2a: {other:?}"),
    }
    // Protocols the target does not offer are skipped with the reason.
    match cell("create", Protocol::Mcp) {
        Verdict::Skip(r) => assert!(r.contains("/mcp"), "{r}"),
        other => panic!("create × mcp: {other:?}"),
    }
    match cell("create", Protocol::Grpc) {
        Verdict::Skip(r) => assert!(r.contains("no GRPC interface"), "{r}"),
        other => panic!("create × grpc: {other:?}"),
    }
    assert!(report.failed());
}
