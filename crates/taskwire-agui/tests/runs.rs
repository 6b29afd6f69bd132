//! Runs live in the store: another node (or a restarted process) over the same
//! store reconnects to, cancels and names a run it never saw started; open runs
//! are bounded per caller without one caller's runs touching another's.

mod common;

use common::{input, user, Env};
use serde_json::json;
use taskwire_agui::AguiConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_node_finds_the_run() {
    let env = Env::start().await;
    let s = env
        .run(
            "alice",
            &input("th-n", "run-1", json!([user("m1", "ask go?")])),
        )
        .await
        .verified();
    assert_eq!(s.last()["type"], "RUN_FINISHED");
    assert_eq!(s.last()["outcome"]["type"], "interrupt", "{:?}", s.last());
    let other = env.another_node(AguiConfig::default()).await;
    // Reconnect by run id on the other node: the same run's events.
    let (status, body) = other
        .get("alice", "/agui/threads/th-n/runs/run-1/events", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"runId\":\"run-1\""), "{body}");
    // Not to another caller.
    let (status, _) = other
        .get("bob", "/agui/threads/th-n/runs/run-1/events", None)
        .await;
    assert_eq!(status, 404);
    // Cancel by run id on the other node.
    let r = other
        .http
        .post(other.url("/agui/threads/th-n/runs/run-1/cancel"))
        .header("x-test-principal", "alice")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["state"], "canceled");
    other.stop().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_runs_are_bounded_per_caller() {
    let env = Env::with_config({
        let mut v = AguiConfig::default();
        v.max_runs_per_principal = 1;
        v
    })
    .await;
    let s = env
        .run(
            "alice",
            &input("th-a", "run-1", json!([user("m1", "ask go?")])),
        )
        .await
        .verified();
    assert_eq!(s.last()["outcome"]["type"], "interrupt");
    // A second open run of alice's is refused in AG-UI's own shape.
    let s = env
        .run(
            "alice",
            &input("th-b", "run-1", json!([user("m2", "ask again?")])),
        )
        .await;
    assert_eq!(s.events().len(), 1, "{:?}", s.events());
    assert_eq!(s.last()["type"], "RUN_ERROR");
    assert_eq!(s.last()["code"], "quota_exceeded");
    // The same run posted again is not a new one.
    let s = env
        .run(
            "alice",
            &input("th-a", "run-1", json!([user("m1", "ask go?")])),
        )
        .await;
    assert_ne!(s.last()["type"], "RUN_ERROR", "{:?}", s.last());
    // Bob is not affected.
    let s = env
        .run("bob", &input("th-c", "run-1", json!([user("m3", "hello")])))
        .await
        .verified();
    assert_eq!(s.last()["type"], "RUN_FINISHED");
    // Once alice's run ends, she may open another.
    let r = env
        .http
        .post(env.url("/agui/threads/th-a/runs/run-1/cancel"))
        .header("x-test-principal", "alice")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let s = env
        .run(
            "alice",
            &input("th-d", "run-1", json!([user("m4", "hello")])),
        )
        .await
        .verified();
    assert_eq!(s.last()["type"], "RUN_FINISHED");
    env.stop().await;
}
