//! `taskwire serve` mounts every adapter compiled in on its one listener, and the
//! adapters see the same tasks: a task started over A2A is read over CAS.

mod common;

use serde_json::{json, Value};

async fn start() -> (String, tokio::sync::oneshot::Sender<()>) {
    let server = common::build_serve(&[]).await;
    let base = format!("http://{}", server.local_addr());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    (base, tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_adapter_is_mounted_and_they_share_tasks() {
    let (base, _stop) = start().await;
    let http = reqwest::Client::new();

    // A2A: the card is public, SendMessage blocks until the echo task completes.
    let card: Value = http
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("card json");
    assert_eq!(card["name"], "scripted");
    let sent: Value = http
        .post(format!("{base}/a2a"))
        .header("A2A-Version", "1.0")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"messageId": "m-wiring-1", "role": "ROLE_USER", "parts": [{"text": "hello"}]}}
        }))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("send json");
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let id = task["id"].as_str().expect("task id").to_string();

    // A2A over HTTP+JSON (the card's third interface): the same task.
    let rest_url = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .find(|i| i["protocolBinding"] == "HTTP+JSON")
        .and_then(|i| i["url"].as_str())
        .expect("an HTTP+JSON interface")
        .to_string();
    assert_eq!(rest_url, format!("{base}/a2a/rest"));
    let got = http
        .get(format!("{rest_url}/tasks/{id}"))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("rest get");
    assert_eq!(got.status(), 200);
    assert_eq!(
        got.headers()["content-type"],
        taskwire_a2a::rest::MEDIA_TYPE
    );
    let got: Value = got.json().await.expect("rest json");
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED", "{got}");

    // CAS: the same task, seen as a terminal status object.
    let status: Value = http
        .get(format!("{base}/cas/tasks/{id}"))
        .send()
        .await
        .expect("cas get")
        .json()
        .await
        .expect("cas json");
    assert_eq!(status["id"], id.as_str());
    assert_eq!(status["status"]["phase"], "terminal", "{status}");
    assert_eq!(status["status"]["terminal_reason"], "completed");

    // MCP: the 2025-11-25 handshake answers on /mcp.
    let init = http
        .post(format!("{base}/mcp"))
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "wiring-test", "version": "1"}}
        }))
        .send()
        .await
        .expect("mcp");
    assert_eq!(init.status(), 200);
    let body = init.text().await.expect("mcp body");
    assert!(body.contains("2025-11-25"), "{body}");

    // AG-UI: a run of the echo agent streams from RUN_STARTED to RUN_FINISHED.
    let run = http
        .post(format!("{base}/agui"))
        .header("Accept", "text/event-stream")
        .json(&json!({
            "threadId": "thread-wiring", "runId": "run-wiring-1",
            "messages": [{"id": "u1", "role": "user", "content": "hello"}],
            "tools": [], "context": [], "state": {}, "forwardedProps": {}
        }))
        .send()
        .await
        .expect("agui");
    assert_eq!(run.status(), 200);
    let events = run.text().await.expect("agui body");
    assert!(events.contains("RUN_STARTED"), "{events}");
    assert!(events.contains("RUN_FINISHED"), "{events}");
}
