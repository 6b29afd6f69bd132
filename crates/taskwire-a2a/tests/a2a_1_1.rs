//! A2A 1.1 (the `dev-1.1` draft at 28491879), negotiated by `A2A-Version:
//! 1.1`, on JSON-RPC and HTTP+JSON: `generation` on tasks and events, long
//! polling with `currentGeneration`, `ifGenerationMatch`, and a subscription
//! resumed from a generation. A 1.0 request sees none of it.

#![allow(clippy::unwrap_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

use common::{parse_sse, send_params, start, test_config, PRINCIPAL_HEADER};
use serde_json::{json, Value};

async fn rpc_v(s: &common::Server, v: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    s.client
        .post(s.url())
        .header(PRINCIPAL_HEADER, "alice")
        .header("A2A-Version", v)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn sse_v(
    s: &common::Server,
    v: &str,
    method: &str,
    params: Value,
    last_event_id: Option<u64>,
) -> Vec<(Option<u64>, Value)> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = s
        .client
        .post(s.url())
        .header(PRINCIPAL_HEADER, "alice")
        .header("A2A-Version", v)
        .json(&body);
    if let Some(n) = last_event_id {
        req = req.header("Last-Event-ID", n.to_string());
    }
    let text = tokio::time::timeout(Duration::from_secs(20), async {
        req.send().await.unwrap().text().await.unwrap()
    })
    .await
    .unwrap();
    parse_sse(&text)
}

fn generation(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap(),
        Value::Number(n) => n.as_i64().unwrap(),
        other => panic!("no generation: {other}"),
    }
}

/// Generations appear only in 1.1 answers; they are the task's event-log
/// sequence, so each stream frame's generation is its SSE id, and the task's
/// generation is its last frame's.
#[tokio::test]
async fn generations_are_1_1_only_and_follow_the_log() {
    let s = start(test_config()).await;
    let r = rpc_v(&s, "1.0", "SendMessage", send_params("hi", "m-g-1")).await;
    let t = &r["result"]["task"];
    assert!(t.get("generation").is_none(), "{r}");
    let id = t["id"].clone();
    let r10 = rpc_v(&s, "1.0", "GetTask", json!({"id": id})).await;
    assert!(r10["result"].get("generation").is_none(), "{r10}");
    let r11 = rpc_v(&s, "1.1", "GetTask", json!({"id": id})).await;
    let g = generation(&r11["result"]["generation"]);
    assert!(g >= 1, "{r11}");
    // The 1.0 answer is exactly the 1.1 one without the generation.
    let mut stripped = r11["result"].clone();
    stripped.as_object_mut().unwrap().remove("generation");
    assert_eq!(stripped, r10["result"]);
    let l = rpc_v(&s, "1.1", "ListTasks", json!({})).await;
    assert_eq!(generation(&l["result"]["tasks"][0]["generation"]), g);

    let frames = sse_v(
        &s,
        "1.1",
        "SendStreamingMessage",
        send_params("stream 3", "m-g-2"),
        None,
    )
    .await;
    let mut last = 0;
    let mut task_id = Value::Null;
    for (sse_id, f) in &frames {
        let r = &f["result"];
        if let Some(t) = r.get("task") {
            task_id = t["id"].clone();
            last = generation(&t["generation"]);
            continue;
        }
        let u = r
            .get("statusUpdate")
            .or_else(|| r.get("artifactUpdate"))
            .unwrap();
        let g = generation(&u["generation"]);
        assert_eq!(Some(g as u64), *sse_id, "{f}");
        assert!(g > last, "generations grow: {frames:?}");
        last = g;
    }
    let t = rpc_v(&s, "1.1", "GetTask", json!({"id": task_id})).await;
    assert_eq!(generation(&t["result"]["generation"]), last);
    // A 1.0 stream carries none.
    let frames = sse_v(
        &s,
        "1.0",
        "SendStreamingMessage",
        send_params("stream 2", "m-g-3"),
        None,
    )
    .await;
    assert!(!frames
        .iter()
        .any(|(_, f)| f.to_string().contains("generation")));
    s.stop().await;
}

/// GetTask with `currentGeneration`: held until the task moves past it (woken
/// by the task's events), answered at once when it already has, and after
/// `long_poll_max` when it does not move.
#[tokio::test]
async fn get_task_long_polls_on_current_generation() {
    let mut cfg = test_config();
    cfg.long_poll_max = Duration::from_millis(400);
    let s = start(cfg).await;
    let r = rpc_v(&s, "1.1", "SendMessage", send_params("ask q?", "m-lp-1")).await;
    let t = &r["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{r}");
    let id = t["id"].clone();
    let g = generation(&t["generation"]);

    // Already past: at once.
    let started = Instant::now();
    let r = rpc_v(
        &s,
        "1.1",
        "GetTask",
        json!({"id": id, "currentGeneration": g - 1}),
    )
    .await;
    assert_eq!(generation(&r["result"]["generation"]), g);
    assert!(started.elapsed() < Duration::from_millis(300));

    // Not moving: answered after the bound, as it is.
    let started = Instant::now();
    let r = rpc_v(
        &s,
        "1.1",
        "GetTask",
        json!({"id": id, "currentGeneration": g}),
    )
    .await;
    assert_eq!(generation(&r["result"]["generation"]), g);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(350), "{waited:?}");

    // A 1.0 request ignores the field.
    let started = Instant::now();
    let r = rpc_v(
        &s,
        "1.0",
        "GetTask",
        json!({"id": id, "currentGeneration": g}),
    )
    .await;
    assert!(r["result"].get("generation").is_none());
    assert!(started.elapsed() < Duration::from_millis(300));
    s.stop().await;

    // Held, then woken by the answer that completes the task.
    let mut cfg = test_config();
    cfg.long_poll_max = Duration::from_secs(10);
    let s = start(cfg).await;
    let r = rpc_v(&s, "1.1", "SendMessage", send_params("ask q?", "m-lp-2")).await;
    let id = r["result"]["task"]["id"].clone();
    let g = generation(&r["result"]["task"]["generation"]);
    let poll = {
        let client = s.client.clone();
        let url = s.url();
        let id = id.clone();
        tokio::spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                "params": {"id": id, "currentGeneration": g}});
            let started = Instant::now();
            let v: Value = client
                .post(url)
                .header(PRINCIPAL_HEADER, "alice")
                .header("A2A-Version", "1.1")
                .json(&body)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            (v, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !poll.is_finished(),
        "the long poll answered before the task moved"
    );
    let mut answer = send_params("yes", "m-lp-3");
    answer["message"]["taskId"] = id.clone();
    rpc_v(&s, "1.1", "SendMessage", answer).await;
    let (v, waited) = tokio::time::timeout(Duration::from_secs(5), poll)
        .await
        .unwrap()
        .unwrap();
    assert!(generation(&v["result"]["generation"]) > g, "{v}");
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5));
    s.stop().await;
}

/// `ifGenerationMatch` on a continuation: a stale generation is
/// TaskGenerationMismatchError (-32010 on JSON-RPC, 409 on HTTP+JSON), the
/// current one is accepted; a 1.0 request ignores the field.
#[tokio::test]
async fn if_generation_match_guards_a_continuation() {
    let s = start(test_config()).await;
    let r = rpc_v(&s, "1.1", "SendMessage", send_params("ask q?", "m-im-1")).await;
    let id = r["result"]["task"]["id"].clone();
    let g = generation(&r["result"]["task"]["generation"]);
    let mut stale = send_params("yes", "m-im-2");
    stale["message"]["taskId"] = id.clone();
    stale["configuration"] = json!({"ifGenerationMatch": g - 1});
    let e = rpc_v(&s, "1.1", "SendMessage", stale.clone()).await;
    assert_eq!(e["error"]["code"], -32010, "{e}");
    assert_eq!(e["error"]["data"][0]["reason"], "TASK_GENERATION_MISMATCH");
    let r = s
        .client
        .post(format!("{}/a2a/rest/message:send", s.base))
        .header(PRINCIPAL_HEADER, "alice")
        .header("A2A-Version", "1.1")
        .header("content-type", "application/a2a+json")
        .body(stale.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 409);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["status"], "ABORTED", "{body}");
    // Still waiting: nothing was taken.
    let t = rpc_v(&s, "1.1", "GetTask", json!({"id": id})).await;
    assert_eq!(t["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(generation(&t["result"]["generation"]), g);
    let mut fresh = send_params("yes", "m-im-3");
    fresh["message"]["taskId"] = id.clone();
    fresh["configuration"] = json!({"ifGenerationMatch": g});
    let r = rpc_v(&s, "1.1", "SendMessage", fresh).await;
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    // A new task ignores it (§3.2.2), and so does 1.0.
    let mut new = send_params("hi", "m-im-4");
    new["configuration"] = json!({"ifGenerationMatch": 99});
    let r = rpc_v(&s, "1.1", "SendMessage", new).await;
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    let r = rpc_v(&s, "1.0", "SendMessage", send_params("ask q?", "m-im-5")).await;
    let id = r["result"]["task"]["id"].clone();
    let mut old = send_params("yes", "m-im-6");
    old["message"]["taskId"] = id;
    old["configuration"] = json!({"ifGenerationMatch": 0});
    let r = rpc_v(&s, "1.0", "SendMessage", old).await;
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    s.stop().await;
}

/// SubscribeToTask from a last-seen generation (the `Last-Event-ID`, on gRPC
/// the `last-event-id` metadata): every frame after it, each with its
/// generation, no snapshot.
#[tokio::test]
async fn subscribe_resumes_from_a_generation() {
    let s = start(test_config()).await;
    let frames = sse_v(
        &s,
        "1.1",
        "SendStreamingMessage",
        send_params("stream 4", "m-rs-1"),
        None,
    )
    .await;
    let id = frames[0].1["result"]["task"]["id"].clone();
    let gens: Vec<i64> = frames[1..]
        .iter()
        .map(|(_, f)| {
            let r = &f["result"];
            generation(
                &r.get("statusUpdate")
                    .or_else(|| r.get("artifactUpdate"))
                    .unwrap()["generation"],
            )
        })
        .collect();
    let seen = gens[1];
    let again = sse_v(
        &s,
        "1.1",
        "SubscribeToTask",
        json!({"id": id}),
        Some(seen as u64),
    )
    .await;
    let replayed: Vec<i64> = again
        .iter()
        .map(|(_, f)| {
            let r = &f["result"];
            assert!(r.get("task").is_none(), "no snapshot on a resume");
            generation(
                &r.get("statusUpdate")
                    .or_else(|| r.get("artifactUpdate"))
                    .unwrap()["generation"],
            )
        })
        .collect();
    assert_eq!(replayed, gens[2..].to_vec());
    s.stop().await;
}

/// `A2A-Version: 1.1` is served on every binding's version check; 1.2 is not.
#[tokio::test]
async fn versions_1_1_and_not_1_2() {
    let s = start(test_config()).await;
    let r = rpc_v(&s, "1.1", "ListTasks", json!({})).await;
    assert!(r.get("result").is_some(), "{r}");
    let e = rpc_v(&s, "1.2", "ListTasks", json!({})).await;
    assert_eq!(e["error"]["code"], -32009, "{e}");
    let card: Value = s
        .client
        .get(format!("{}/.well-known/agent-card.json", s.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let versions: Vec<(String, String)> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap().to_string(),
                i["protocolVersion"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for b in ["JSONRPC", "GRPC", "HTTP+JSON"] {
        let of: Vec<&str> = versions
            .iter()
            .filter(|(x, _)| x == b)
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(of, ["1.0", "1.1"], "{b}: {card}");
    }
    // 1.0 interfaces come first, as clients that take the first match need.
    assert!(versions[..3].iter().all(|(_, v)| v == "1.0"));
    s.stop().await;
}
