//! Per-caller bounds across protocols: the open event streams of one caller are
//! counted together whichever protocol opened them, and a stream over the bound
//! is refused in the protocol's own shape while other callers go on.

use std::sync::Arc;
use std::time::Duration;

use taskwire::Server;
use taskwire_core::{Limits, MemoryStore, ScriptedAgent};
use tokio::net::TcpListener;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_streams_are_bounded_per_caller_across_protocols() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let server = Server::builder()
        .agent(Arc::new(ScriptedAgent::new()))
        .store(Arc::new(MemoryStore::new()))
        .limits({
            let mut v = Limits::default();
            v.max_streams_per_principal = 1;
            v
        })
        .all_adapters()
        .listen(listener)
        .build()
        .await
        .expect("build");
    let base = format!("http://{}", server.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    let http = reqwest::Client::new();
    let stream = |text: &str, id: &str| {
        http.post(format!("{base}/a2a"))
            .header("A2A-Version", "1.0")
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(
                serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage",
                "params": {"message": {"messageId": id, "role": "ROLE_USER",
                "parts": [{"text": text}]}}})
                .to_string(),
            )
            .timeout(Duration::from_secs(20))
            .send()
    };
    // The first stream stays open (the task sleeps).
    let mut first = stream("sleep 3000", "q1").await.expect("first stream");
    assert_eq!(first.status(), 200);
    let chunk = first.chunk().await.expect("read").expect("a first event");
    assert!(String::from_utf8_lossy(&chunk).contains("data:"));
    // A second one of the same caller, over A2A: a JSON-RPC error.
    let second = stream("hello", "q2")
        .await
        .expect("second")
        .text()
        .await
        .expect("body");
    assert!(
        second.contains("\"error\"") && second.contains("open streams"),
        "{second}"
    );
    // Over AG-UI too: a lone RUN_ERROR.
    let run = http
        .post(format!("{base}/agui"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(
            serde_json::json!({"threadId": "t1", "runId": "r1",
            "messages": [{"id": "u1", "role": "user", "content": "hello"}],
            "tools": [], "context": [], "state": {}, "forwardedProps": {}})
            .to_string(),
        )
        .send()
        .await
        .expect("agui")
        .text()
        .await
        .expect("agui body");
    assert!(
        run.contains("RUN_ERROR") && run.contains("open streams"),
        "{run}"
    );
    // Closing the first stream frees its place.
    drop(first);
    let mut ok = false;
    for i in 0..50 {
        let body = stream("hello", &format!("q3-{i}"))
            .await
            .expect("third")
            .text()
            .await
            .expect("body");
        if !body.contains("open streams") {
            assert!(body.contains("TASK_STATE_COMPLETED"), "{body}");
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "the closed stream was never released");
    let _ = tx.send(());
    let _ = handle.await;
}
