//! The `tck` agent profile over JSON-RPC: the a2a-tck messageId prefixes.

#![allow(clippy::unwrap_used, reason = "test helpers")]

mod common;

use std::sync::Arc;

use axum::Router;
use common::{check_fixture, send_params, start_with, test_config};
use serde_json::{json, Value};
use taskwire_a2a::tck::TckAgent;

async fn tck() -> common::Server {
    start_with(Arc::new(TckAgent::new()), test_config(), |_| Router::new()).await
}

fn task(v: &Value) -> &Value {
    &v["result"]["task"]
}

#[tokio::test]
async fn tck_prefixes() {
    let s = tck().await;
    let r = s
        .rpc("SendMessage", send_params("hi", "tck-complete-task-0001"))
        .await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    assert_eq!(
        task(&r)["status"]["message"]["parts"][0]["text"],
        "Hello from TCK"
    );
    let r = s
        .rpc("SendMessage", send_params("hi", "tck-input-required-0001"))
        .await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = task(&r)["id"].clone();
    let mut p = send_params("more", "tck-complete-task-0002");
    p["message"]["taskId"] = id;
    let r = s.rpc("SendMessage", p).await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    let r = s
        .rpc("SendMessage", send_params("hi", "tck-reject-task-0001"))
        .await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_REJECTED");
    for (prefix, name) in [
        ("tck-artifact-text", "tck_artifact_text"),
        ("tck-artifact-file-url", "tck_artifact_file_url"),
        ("tck-artifact-file", "tck_artifact_file"),
        ("tck-artifact-data", "tck_artifact_data"),
    ] {
        let r = s
            .rpc("SendMessage", send_params("hi", &format!("{prefix}-0001")))
            .await;
        assert_eq!(task(&r)["status"]["state"], "TASK_STATE_COMPLETED");
        check_fixture(name, &task(&r)["artifacts"]);
    }
    let r = s
        .rpc(
            "SendMessage",
            send_params("hi", "tck-message-response-0001"),
        )
        .await;
    assert_eq!(
        r["result"]["message"]["parts"][0]["text"],
        "Direct message response"
    );
    let (_, frames) = s
        .sse(
            "alice",
            "SendStreamingMessage",
            send_params("hi", "tck-stream-001-0001"),
            None,
        )
        .await;
    let kinds: Vec<String> = frames
        .iter()
        .map(|(_, f)| {
            let r = &f["result"];
            if r.get("task").is_some() {
                "task".into()
            } else if let Some(u) = r.get("statusUpdate") {
                u["status"]["state"].as_str().unwrap().to_string()
            } else {
                format!(
                    "artifact:{}",
                    r["artifactUpdate"]["artifact"]["parts"][0]["text"]
                        .as_str()
                        .unwrap()
                )
            }
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            "task",
            "TASK_STATE_WORKING",
            "artifact:Stream hello from TCK",
            "TASK_STATE_COMPLETED"
        ]
    );
    let mut p = send_params("hi", "tck-multi-004-0001");
    p["message"]["taskId"] = json!("0123456789abcdef0123456789abcdef");
    let e = s.rpc("SendMessage", p).await;
    assert_eq!(e["error"]["code"], -32001);
    // Non-tck messages run the scripted agent.
    let r = s.rpc("SendMessage", send_params("echo me", "m-1")).await;
    assert_eq!(task(&r)["artifacts"][0]["parts"][0]["text"], "echo me");
    s.stop().await;
}
