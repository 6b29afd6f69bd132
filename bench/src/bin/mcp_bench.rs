//! Benchmark of the MCP task path: `tools/call` (answered with a task) then
//! `tasks/get` until completed, by concurrent clients over real HTTP on
//! 127.0.0.1, against an in-process server (memory store, scripted agent).
//!
//! `cargo run --release -p taskwire-bench --bin mcp_bench -- [clients] [tasks] [poll_ms]`
//! (defaults: 64 clients, 6400 tasks in total, 2 ms between polls). Prints tasks
//! per second and the p50/p99 latency of one call from `tools/call` to the
//! `tasks/get` that saw it completed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use taskwire_core::{
    Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService, TaskStore,
};
use taskwire_mcp::{McpAdapter, McpConfig};

const V: &str = "2026-07-28";

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

fn body(method: &str, mut params: Value, id: u64) -> String {
    if let Some(o) = params.as_object_mut() {
        o.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": V,
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
            }),
        );
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    method: &str,
    name: &str,
    body: String,
) -> Result<Value, String> {
    let r = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", V)
        .header("mcp-method", method)
        .header("mcp-name", name)
        .body(body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    r.json::<Value>().await.map_err(|e| e.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clients = arg(1, 64) as usize;
    let total = arg(2, 6400) as usize;
    let poll = Duration::from_millis(arg(3, 2));

    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store, "scripted");
    let agent = Arc::new(ScriptedAgent::new());
    let rt = Runtime::start(svc.clone(), agent.clone(), RuntimeConfig::default());
    let app = McpAdapter::new(svc, agent, McpConfig::default())
        .routes()
        .layer(axum::Extension(Caller::local()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut handles = Vec::new();
    for c in 0..clients {
        let url = url.clone();
        let next = next.clone();
        handles.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut lat = Vec::new();
            let mut polls = 0u64;
            let mut id = (c as u64) << 32;
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let t0 = Instant::now();
                id += 1;
                let r = post(
                    &http,
                    &url,
                    "tools/call",
                    "run_script",
                    body(
                        "tools/call",
                        json!({"name": "run_script", "arguments": {"text": "hello"}}),
                        id,
                    ),
                )
                .await?;
                let task = r["result"]["taskId"]
                    .as_str()
                    .ok_or_else(|| format!("no task in {r}"))?
                    .to_string();
                loop {
                    id += 1;
                    polls += 1;
                    let g = post(
                        &http,
                        &url,
                        "tasks/get",
                        &task,
                        body("tasks/get", json!({"taskId": task}), id),
                    )
                    .await?;
                    match g["result"]["status"].as_str() {
                        Some("completed") => break,
                        Some("working") => tokio::time::sleep(poll).await,
                        other => return Err(format!("unexpected status {other:?}: {g}")),
                    }
                }
                lat.push(t0.elapsed());
            }
            Ok::<_, String>((lat, polls))
        }));
    }
    let mut lat = Vec::new();
    let mut polls = 0;
    for h in handles {
        let (l, p) = h.await??;
        lat.extend(l);
        polls += p;
    }
    let elapsed = started.elapsed();
    lat.sort();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or_default()
    };
    println!(
        "mcp tools/call -> task -> tasks/get until completed: {} tasks, {clients} clients, poll every {} ms",
        lat.len(),
        poll.as_millis()
    );
    println!(
        "throughput {:.0} tasks/s; latency p50 {:.2} ms, p99 {:.2} ms; {:.2} tasks/get per task; {:.2} s",
        lat.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        polls as f64 / lat.len().max(1) as f64,
        elapsed.as_secs_f64()
    );
    rt.shutdown(Duration::from_secs(1)).await;
    Ok(())
}
