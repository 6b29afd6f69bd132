//! Cross-node event delivery latency: tasks are created on one node at a fixed
//! rate and followed on another, and each event's latency is the time from its
//! commit timestamp (written by the node that ran the turn) to its arrival on the
//! other node's A2A SSE stream.
//!
//! ```text
//! fanout <create-url> <follow-url> <tasks-per-second> <seconds>
//! ```
//!
//! Each task is `sleep 200` then an echo: it is created with SendMessage
//! (`returnImmediately`) on the first node, followed with SubscribeToTask on the
//! second, and its completed status update is timed (the status `timestamp` is
//! the commit's). Both nodes share one machine, so their clocks are one clock.
//! Prints the number of tasks timed, the achieved rate and p50/p99/max latency.

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark tool: failures abort the run"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};

fn usage() -> ! {
    eprintln!("usage: fanout <create-url> <follow-url> <tasks-per-second> <seconds>");
    std::process::exit(2)
}

/// The completed status update's commit time, from a stream of SSE bytes.
async fn completed_at(resp: reqwest::Response) -> Option<chrono::DateTime<chrono::Utc>> {
    let mut buf = String::new();
    let mut body = resp.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(i) = buf.find("\n\n") {
            let frame: String = buf.drain(..i + 2).collect();
            for line in frame.lines() {
                let Some(data) = line.strip_prefix("data:") else {
                    continue;
                };
                let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
                    continue;
                };
                let Some(status) = v
                    .pointer("/result/statusUpdate/status")
                    .or_else(|| v.pointer("/result/task/status"))
                else {
                    continue;
                };
                if status["state"] == "TASK_STATE_COMPLETED" {
                    let ts = status["timestamp"].as_str()?;
                    return chrono::DateTime::parse_from_rfc3339(ts)
                        .ok()
                        .map(|t| t.with_timezone(&chrono::Utc));
                }
            }
        }
    }
    None
}

async fn one(
    http: reqwest::Client,
    create: String,
    follow: String,
    i: u64,
    lat: Arc<Mutex<Vec<f64>>>,
    errors: Arc<Mutex<u64>>,
) {
    let fail = || *errors.lock().unwrap() += 1;
    let created: Value = match http
        .post(&create)
        .json(
            &json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {
            "message": {"messageId": format!("fanout-{}-{i}", std::process::id()),
                        "role": "ROLE_USER", "parts": [{"text": "sleep 200\nhello"}]},
            "configuration": {"returnImmediately": true}}}),
        )
        .send()
        .await
    {
        Ok(r) => match r.json().await {
            Ok(v) => v,
            Err(_) => return fail(),
        },
        Err(_) => return fail(),
    };
    let Some(id) = created.pointer("/result/task/id").and_then(Value::as_str) else {
        return fail();
    };
    let resp = match http
        .post(&follow)
        .header("accept", "text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": i, "method": "SubscribeToTask",
                      "params": {"id": id}}),
        )
        .send()
        .await
    {
        Ok(r) if r.status().is_success() => r,
        _ => return fail(),
    };
    match tokio::time::timeout(Duration::from_secs(30), completed_at(resp)).await {
        Ok(Some(at)) => {
            let ms = (chrono::Utc::now() - at).num_microseconds().unwrap_or(0) as f64 / 1000.0;
            lat.lock().unwrap().push(ms);
        }
        _ => fail(),
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        usage();
    }
    let create = format!("{}/a2a", args[1].trim_end_matches('/'));
    let follow = format!("{}/a2a", args[2].trim_end_matches('/'));
    let rate: u64 = args[3].parse().unwrap_or_else(|_| usage());
    let secs: u64 = args[4].parse().unwrap_or_else(|_| usage());
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(2048)
        .build()
        .unwrap();
    let lat = Arc::new(Mutex::new(Vec::new()));
    let errors = Arc::new(Mutex::new(0u64));
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let start = Instant::now();
    let mut handles = Vec::new();
    let mut i = 0u64;
    while start.elapsed() < Duration::from_secs(secs) {
        tick.tick().await;
        i += 1;
        handles.push(tokio::spawn(one(
            http.clone(),
            create.clone(),
            follow.clone(),
            i,
            lat.clone(),
            errors.clone(),
        )));
    }
    let sent_in = start.elapsed().as_secs_f64();
    for h in handles {
        let _ = h.await;
    }
    let mut v = lat.lock().unwrap().clone();
    v.sort_by(f64::total_cmp);
    let pick = |q: f64| v.get(((v.len() as f64 * q) as usize).min(v.len().saturating_sub(1)));
    println!(
        "fanout: {} tasks created at {:.0}/s, {} timed, {} errors; completed-status delivery \
         latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        i,
        i as f64 / sent_in,
        v.len(),
        errors.lock().unwrap(),
        pick(0.5).copied().unwrap_or(f64::NAN),
        pick(0.99).copied().unwrap_or(f64::NAN),
        v.last().copied().unwrap_or(f64::NAN),
    );
}
