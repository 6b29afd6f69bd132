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

/// A message whose first text part names the behaviour, with a messageId
/// that is not a tck one (as ACTS sends it).
fn acts(text: &str, id: &str) -> Value {
    send_params(text, &format!("acts-{id}"))
}

async fn wait_state(s: &common::Server, id: &Value, want: &str) -> Value {
    for _ in 0..200 {
        let r = s.rpc("GetTask", json!({"id": id})).await;
        if r["result"]["status"]["state"] == want {
            return r["result"].clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("task {id} never reached {want}");
}

/// The ACTS behaviours, chosen by the first text part (ACTS §11.2, a2a-itk
/// `docs/conformance/05_sdk-integration.md`).
#[tokio::test]
async fn acts_text_prefixes() {
    let s = tck().await;
    let r = s
        .rpc("SendMessage", acts("tck-complete-task hello world", "1"))
        .await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    assert!(task(&r)["status"]["message"]["parts"][0]["text"].is_string());
    let r = s
        .rpc("SendMessage", acts("tck-message-response hi", "2"))
        .await;
    assert!(
        r["result"]["message"]["parts"][0]["text"].is_string(),
        "{r}"
    );
    let r = s
        .rpc("SendMessage", acts("tck-task-failure now", "3"))
        .await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_FAILED", "{r}");
    assert!(task(&r)["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("tck-task-failure"));
    let r = s.rpc("SendMessage", acts("tck-auth-required x", "4")).await;
    assert_eq!(
        task(&r)["status"]["state"],
        "TASK_STATE_AUTH_REQUIRED",
        "{r}"
    );
    assert!(task(&r)["status"]["message"]["parts"][0]["text"].is_string());
    let r = s.rpc("SendMessage", acts("tck-reject-task x", "5")).await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_REJECTED", "{r}");
    let r = s
        .rpc("SendMessage", acts("tck-input-required x", "6"))
        .await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    for (text, field) in [
        ("tck-artifact-text x", "text"),
        ("tck-artifact-file x", "raw"),
        ("tck-artifact-file-url x", "url"),
        ("tck-artifact-data x", "data"),
    ] {
        let r = s.rpc("SendMessage", acts(text, text)).await;
        assert_eq!(task(&r)["status"]["state"], "TASK_STATE_COMPLETED");
        assert!(
            task(&r)["artifacts"][0]["parts"][0].get(field).is_some(),
            "{text}: {r}"
        );
    }
    // An unknown tck- text fails the task, naming it.
    let r = s.rpc("SendMessage", acts("tck-no-such-thing x", "7")).await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_FAILED", "{r}");
    assert!(task(&r)["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .contains("tck-no-such-thing"));
    s.stop().await;
}

/// `tck-long-running` is seen WORKING, then COMPLETED; `tck-cancel` stays
/// WORKING until CancelTask; `tck-multi-turn` asks until a message starting
/// with `done` (continuations carry no prefix).
#[tokio::test]
async fn acts_long_running_cancel_and_multi_turn() {
    let s = tck().await;
    let mut p = acts("tck-long-running go", "lr");
    p["configuration"] = json!({"returnImmediately": true});
    let r = s.rpc("SendMessage", p).await;
    let id = task(&r)["id"].clone();
    wait_state(&s, &id, "TASK_STATE_WORKING").await;
    let t = wait_state(&s, &id, "TASK_STATE_COMPLETED").await;
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "long running result");

    let mut p = acts("tck-cancel start", "cancel");
    p["configuration"] = json!({"returnImmediately": true});
    let r = s.rpc("SendMessage", p).await;
    let id = task(&r)["id"].clone();
    wait_state(&s, &id, "TASK_STATE_WORKING").await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let still = s.rpc("GetTask", json!({"id": id})).await;
    assert_eq!(still["result"]["status"]["state"], "TASK_STATE_WORKING");
    let c = s.rpc("CancelTask", json!({"id": id})).await;
    assert_eq!(c["result"]["status"]["state"], "TASK_STATE_CANCELED", "{c}");

    let r = s
        .rpc("SendMessage", acts("tck-multi-turn begin", "mt"))
        .await;
    assert_eq!(
        task(&r)["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED",
        "{r}"
    );
    let id = task(&r)["id"].clone();
    let mut more = send_params("here is more input", "acts-mt-2");
    more["message"]["taskId"] = id.clone();
    let r = s.rpc("SendMessage", more).await;
    assert_eq!(
        task(&r)["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED",
        "{r}"
    );
    let mut fin = send_params("done", "acts-mt-3");
    fin["message"]["taskId"] = id;
    let r = s.rpc("SendMessage", fin).await;
    assert_eq!(task(&r)["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
    s.stop().await;
}

/// `tck-stream-basic`: WORKING → one artifact → COMPLETED; `tck-stream-chunked`:
/// one artifact in appended chunks, the last marked, then COMPLETED.
#[tokio::test]
async fn acts_streams() {
    let s = tck().await;
    let (_, frames) = s
        .sse(
            "alice",
            "SendStreamingMessage",
            acts("tck-stream-basic go", "sb"),
            None,
        )
        .await;
    let kinds: Vec<String> = frames.iter().map(|(_, f)| kind(&f["result"])).collect();
    assert_eq!(
        kinds,
        vec![
            "task",
            "TASK_STATE_WORKING",
            "artifact:streamed content",
            "TASK_STATE_COMPLETED"
        ]
    );
    let (_, frames) = s
        .sse(
            "alice",
            "SendStreamingMessage",
            acts("tck-stream-chunked go", "sc"),
            None,
        )
        .await;
    let chunks: Vec<(bool, bool, String)> = frames
        .iter()
        .filter_map(|(_, f)| f["result"].get("artifactUpdate"))
        .map(|u| {
            (
                u["append"].as_bool().unwrap_or(false),
                u["lastChunk"].as_bool().unwrap_or(false),
                u["artifact"]["parts"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(chunks.len(), 3, "{frames:?}");
    assert_eq!(
        chunks.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(),
        vec![(false, false), (true, false), (true, true)]
    );
    let last = kind(&frames.last().unwrap().1["result"]);
    assert_eq!(last, "TASK_STATE_COMPLETED");
    s.stop().await;
}

fn kind(r: &Value) -> String {
    if r.get("task").is_some() {
        "task".into()
    } else if let Some(u) = r.get("statusUpdate") {
        u["status"]["state"].as_str().unwrap().to_string()
    } else {
        format!(
            "artifact:{}",
            r["artifactUpdate"]["artifact"]["parts"][0]["text"]
                .as_str()
                .unwrap_or("")
        )
    }
}
