//! AG-UI adapter benchmark over a real runtime (memory store, scripted agent):
//!
//! 1. events per second through one SSE stream (a `stream N` run: one
//!    `ACTIVITY_*` frame per artifact chunk, plus the run's bookkeeping frames);
//! 2. time to first event for C concurrent runs (`POST /agui`, until the first
//!    SSE frame arrives), as percentiles.
//!
//! `cargo run -p taskwire-bench --bin agui_bench [--release] -- [N] [C]`
//! (defaults N = 10000, C = 1000).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use futures::StreamExt;
use serde_json::json;
use taskwire_agui::{AguiAdapter, AguiConfig};
use taskwire_core::{
    Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService, TaskStore,
};

async fn local(mut req: Request, next: Next) -> Response {
    req.extensions_mut().insert(Caller::local());
    next.run(req).await
}

fn body(thread: &str, run: &str, text: &str) -> serde_json::Value {
    json!({
        "threadId": thread, "runId": run,
        "messages": [{"id": format!("{thread}-{run}"), "role": "user", "content": text}],
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let c: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);

    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let service = TaskService::new(store, "scripted");
    let agent = Arc::new(ScriptedAgent::new());
    let rt = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
    let app = AguiAdapter::new(service, agent, AguiConfig::default())
        .routes()
        .layer(middleware::from_fn(local));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let url = format!("http://{addr}/agui");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()?;

    // 1. One stream.
    let start = Instant::now();
    let resp = http
        .post(&url)
        .json(&body("bench-stream", "r", &format!("stream {n}")))
        .send()
        .await?;
    let mut stream = resp.bytes_stream();
    let mut frames = 0u64;
    let mut first = None;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        if first.is_none() {
            first = Some(Instant::now());
        }
        frames += chunk.windows(2).filter(|w| w == b"\n\n").count() as u64;
    }
    let total = start.elapsed();
    let streaming = first.map_or(total, |f| f.elapsed());
    println!(
        "one stream: {frames} frames in {:.3}s ({:.0} events/s end to end, {:.0} events/s after the first byte)",
        total.as_secs_f64(),
        frames as f64 / total.as_secs_f64(),
        frames as f64 / streaming.as_secs_f64().max(1e-9),
    );

    // 2. Time to first event, C concurrent runs.
    let mut tasks = Vec::with_capacity(c);
    let t0 = Instant::now();
    for i in 0..c {
        let http = http.clone();
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let resp = http
                .post(&url)
                .json(&body(&format!("bench-ttfe-{i}"), "r", "hello"))
                .send()
                .await
                .ok()?;
            let mut s = resp.bytes_stream();
            let first = s.next().await?.ok()?;
            let ttfe = sent.elapsed();
            debug_assert!(!first.is_empty());
            while s.next().await.is_some() {}
            Some(ttfe)
        }));
    }
    let mut times: Vec<Duration> = Vec::with_capacity(c);
    for t in tasks {
        if let Ok(Some(d)) = t.await {
            times.push(d);
        }
    }
    let wall = t0.elapsed();
    times.sort();
    let pct = |p: f64| {
        times
            .get(((times.len() as f64 - 1.0) * p).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    println!(
        "{c} concurrent runs: {} completed in {:.3}s; time to first event p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        times.len(),
        wall.as_secs_f64(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        pct(1.0),
    );

    rt.shutdown(Duration::from_secs(5)).await;
    server.abort();
    Ok(())
}
