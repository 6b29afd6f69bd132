//! A load generator for the A2A bindings of a running `taskwire serve`:
//! GetTask of a completed task, or blocking SendMessage (echo, a fresh messageId per
//! request), over JSON-RPC (HTTP/1.1 keep-alive connections) or gRPC (one HTTP/2
//! connection per worker). Reports requests/s, p50/p99 latency and, given the
//! server's pid, the server's CPU time per request (from `/proc/<pid>/stat`).
//!
//! The requests go out through the lean wire clients of `raw.rs` (prebuilt bytes
//! on HTTP/1.1 or HTTP/2, every answer checked), so that the generator, on its one
//! core, costs less per request than the server and keeps it saturated.
//! `A2A_LOAD_CLIENT=library` uses reqwest and tonic instead.
//!
//! ```text
//! TOKIO_WORKER_THREADS=1 taskset -c 0 target/release/taskwire serve --store memory:// &
//! taskset -c 1 target/release/a2a_load http://127.0.0.1:8080 get jsonrpc 64 10 <server-pid>
//! # latency per 10-second window while SendMessage grows the store:
//! taskset -c 1 target/release/a2a_load http://127.0.0.1:8080 send jsonrpc 64 120 <server-pid> 10
//! ```

#![allow(
    clippy::unwrap_used,
    reason = "a benchmark tool: failures abort the run"
)]

mod raw;

use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message as _;
use serde_json::{json, Value};
use taskwire_a2a::pb;
use taskwire_grpc::A2aServiceClient;
use tonic::transport::Channel;

fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn send_body(i: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {
        "message": {"messageId": format!("load-{}-{i}", std::process::id()), "role": "ROLE_USER",
                    "parts": [{"text": "hello"}]}}})
}

/// The text of [`send_body`], written without a value tree: the load generator
/// shares the machine with nothing but its own work, and the less CPU a request
/// costs it, the closer the server runs to saturation (where its CPU per request
/// is what one core can sustain, not inflated by idle-and-wake cycles).
fn send_text(i: u64) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"SendMessage","params":{{"message":{{"messageId":"load-{}-{i}","role":"ROLE_USER","parts":[{{"text":"hello"}}]}}}}}}"#,
        std::process::id()
    )
    .into_bytes()
}

/// Aborts the run unless `body` is a JSON-RPC result (the server writes
/// `{"jsonrpc":"2.0","id":…,"result":` first), so that no figure is of errors.
fn check(body: &[u8]) {
    let head = &body[..body.len().min(64)];
    if !head.windows(9).any(|w| w == b"\"result\":") {
        panic!("not a result: {}", String::from_utf8_lossy(body));
    }
}

/// What one worker sends its requests through.
enum Client {
    Raw1(raw::H1),
    Raw2(raw::H2),
    Grpc(A2aServiceClient<Channel>),
    Http,
}

fn send_grpc(i: u64) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: format!("load-g-{}-{i}", std::process::id()),
            role: pb::Role::User as i32,
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text("hello".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: a2a_load <base-url> <get|send> <jsonrpc|grpc> <conns> <secs> [server-pid] [window-secs]\n\
                 A2A_LOAD_CLIENT=library sends through reqwest and tonic instead of the lean wire clients\n\
                 A2A_LOAD_TOKEN=TOKEN sends `Authorization: Bearer TOKEN` (bench/callgrind-auth.sh)";
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{usage}");
        return;
    }
    if args.len() < 6 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let base = args[1].trim_end_matches('/').to_string();
    let mode = args[2].clone();
    let binding = args[3].clone();
    let conns: usize = args[4].parse().unwrap();
    let secs: u64 = args[5].parse().unwrap();
    let pid: Option<u32> = args.get(6).and_then(|p| p.parse().ok());
    // With a window, latency is also reported per window of that many seconds, to
    // show whether it stays flat while the store grows.
    let window: Option<u64> = args.get(7).and_then(|w| w.parse().ok()).filter(|w| *w > 0);

    let token = std::env::var("A2A_LOAD_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(t) = &token {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {t}").parse().unwrap(),
        );
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(conns)
        .default_headers(headers)
        .build()
        .unwrap();
    let seed: Value = http
        .post(format!("{base}/a2a"))
        .json(&send_body(0))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let task_id = seed["result"]["task"]["id"].as_str().unwrap().to_string();
    let library = std::env::var("A2A_LOAD_CLIENT").is_ok_and(|c| c == "library");
    let addr = base
        .strip_prefix("http://")
        .expect("the base url is http://host:port")
        .to_string();
    let get_grpc = bytes::Bytes::from(
        pb::GetTaskRequest {
            id: task_id.clone(),
            ..Default::default()
        }
        .encode_to_vec(),
    );

    let url = reqwest::Url::parse(&format!("{base}/a2a")).unwrap();
    let get_text = bytes::Bytes::from(
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                   "params": {"id": task_id}}))
        .unwrap(),
    );
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let cpu0 = pid.and_then(cpu_ticks);
    let started = Instant::now();
    let mut handles = Vec::new();
    for _ in 0..conns {
        let (http, base, mode, binding, task_id, counter) = (
            http.clone(),
            base.clone(),
            mode.clone(),
            binding.clone(),
            task_id.clone(),
            counter.clone(),
        );
        let token = token.clone();
        let (url, get_text, get_grpc, addr) = (
            url.clone(),
            get_text.clone(),
            get_grpc.clone(),
            addr.clone(),
        );
        handles.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let method = if mode == "get" {
                "GetTask"
            } else {
                "SendMessage"
            };
            let mut client = match (library, binding.as_str()) {
                (false, "grpc") => Client::Raw2(
                    raw::H2::connect(
                        &addr,
                        &format!("{}{method}", taskwire_grpc::RPC_PREFIX),
                        token.as_deref(),
                    )
                    .await
                    .unwrap(),
                ),
                (false, _) => Client::Raw1(
                    raw::H1::connect(&addr, "/a2a", token.as_deref())
                        .await
                        .unwrap(),
                ),
                (true, "grpc") => {
                    let ch = Channel::from_shared(base.clone())
                        .unwrap()
                        .connect()
                        .await
                        .unwrap();
                    Client::Grpc(A2aServiceClient::new(ch))
                }
                (true, _) => Client::Http,
            };
            while Instant::now() < deadline {
                let i = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let t = Instant::now();
                match (&mut client, mode.as_str()) {
                    (Client::Raw2(c), "get") => {
                        let task = pb::Task::decode(&c.call(&get_grpc).await.unwrap()[..]).unwrap();
                        assert_eq!(task.id, task_id, "GetTask answered another task");
                    }
                    (Client::Raw2(c), _) => {
                        let answer = c.call(&send_grpc(i).encode_to_vec()).await.unwrap();
                        let r = pb::SendMessageResponse::decode(&answer[..]).unwrap();
                        assert!(
                            matches!(r.payload, Some(pb::send_message_response::Payload::Task(_))),
                            "SendMessage answered no task: {r:?}"
                        );
                    }
                    (Client::Raw1(c), "get") => check(&c.post(&get_text).await.unwrap()),
                    (Client::Raw1(c), _) => check(&c.post(&send_text(i)).await.unwrap()),
                    (Client::Grpc(c), "get") => {
                        c.get_task(pb::GetTaskRequest {
                            id: task_id.clone(),
                            ..Default::default()
                        })
                        .await
                        .unwrap();
                    }
                    (Client::Grpc(c), _) => {
                        c.send_message(send_grpc(i)).await.unwrap();
                    }
                    (Client::Http, "get") => {
                        let r = http
                            .post(url.clone())
                            .header(reqwest::header::CONTENT_TYPE, "application/json")
                            .body(get_text.clone())
                            .send()
                            .await
                            .unwrap();
                        check(&r.bytes().await.unwrap());
                    }
                    (Client::Http, _) => {
                        let r = http
                            .post(url.clone())
                            .header(reqwest::header::CONTENT_TYPE, "application/json")
                            .body(send_text(i))
                            .send()
                            .await
                            .unwrap();
                        check(&r.bytes().await.unwrap());
                    }
                }
                let w = window.map_or(0, |w| started.elapsed().as_secs() / w);
                lat.push((w, t.elapsed().as_micros() as u64));
            }
            lat
        }));
    }
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    for h in handles {
        pairs.extend(h.await.unwrap());
    }
    if let Some(w) = window {
        let mut by: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        for (i, l) in &pairs {
            by.entry(*i).or_default().push(*l);
        }
        println!("| window | requests | p50 µs | p99 µs | max µs |");
        println!("|---|---:|---:|---:|---:|");
        for (i, mut v) in by {
            v.sort_unstable();
            let n = v.len();
            println!(
                "| {}-{} s | {n} | {} | {} | {} |",
                i * w,
                (i + 1) * w,
                v[n / 2],
                v[((n as f64 * 0.99) as usize).min(n - 1)],
                v[n - 1]
            );
        }
    }
    let mut all: Vec<u64> = pairs.into_iter().map(|(_, l)| l).collect();
    let elapsed = started.elapsed().as_secs_f64();
    let cpu1 = pid.and_then(cpu_ticks);
    all.sort_unstable();
    let n = all.len().max(1);
    let pct = |p: f64| all[((n as f64 * p) as usize).min(n - 1)];
    println!(
        "{mode} over {binding}: {} requests in {elapsed:.1}s = {:.0} req/s, p50 {} µs, p99 {} µs",
        all.len(),
        all.len() as f64 / elapsed,
        pct(0.50),
        pct(0.99)
    );
    if let (Some(a), Some(b)) = (cpu0, cpu1) {
        // /proc ticks are 1/100 s on Linux.
        let cpu_us = (b - a) as f64 * 10_000.0;
        println!("server CPU: {:.1} µs per request", cpu_us / n as f64);
    }
}
