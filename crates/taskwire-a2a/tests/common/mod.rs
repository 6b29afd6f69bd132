//! Test harness: a real runtime (scripted agent, memory store) behind the A2A
//! routes on 127.0.0.1:0, with the caller taken from `x-test-principal`.

#![allow(
    dead_code,
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    reason = "test harness shared by several test crates"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};
use taskwire_a2a::{A2aAdapter, A2aConfig};
use taskwire_core::{
    Agent, Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService,
};

pub const PRINCIPAL_HEADER: &str = "x-test-principal";

pub struct Server {
    pub base: String,
    pub addr: std::net::SocketAddr,
    pub client: reqwest::Client,
    pub service: TaskService,
    pub adapter: A2aAdapter,
    runtime: Option<Runtime>,
}

async fn caller_layer(mut req: Request, next: Next) -> Response {
    let principal = req
        .headers()
        .get(PRINCIPAL_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("alice")
        .to_string();
    req.extensions_mut()
        .insert(Caller::new("default", principal));
    next.run(req).await
}

pub fn test_config() -> A2aConfig {
    {
        let mut v = A2aConfig::default();
        v.push_allow_private = true;
        v.push_base_backoff = Duration::from_millis(20);
        v.blocking_timeout = Duration::from_secs(20);
        v.max_body_bytes = 64 * 1024;
        v
    }
}

pub async fn start(config: A2aConfig) -> Server {
    start_with(Arc::new(ScriptedAgent::new()), config, |_| Router::new()).await
}

/// Starts a server; `extra` may add routes (the gRPC router) to the authenticated set.
pub async fn start_with(
    agent: Arc<dyn Agent>,
    mut config: A2aConfig,
    extra: impl FnOnce(&A2aAdapter) -> Router,
) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    config.public_url = format!("http://{addr}");
    let store = Arc::new(MemoryStore::new());
    let service = TaskService::new(store, agent.info().name);
    let runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
    let adapter = A2aAdapter::new(service.clone(), agent, config);
    let authed = adapter
        .routes()
        .merge(extra(&adapter))
        .layer(middleware::from_fn(caller_layer));
    let app = authed.merge(adapter.public_routes());
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Server {
        base: format!("http://{addr}"),
        addr,
        client: reqwest::Client::new(),
        service,
        adapter,
        runtime: Some(runtime),
    }
}

impl Server {
    pub fn url(&self) -> String {
        format!("{}/a2a", self.base)
    }

    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.rpc_as("alice", method, params).await
    }

    pub async fn rpc_as(&self, principal: &str, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let r = self
            .client
            .post(self.url())
            .header(PRINCIPAL_HEADER, principal)
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .unwrap();
        r.json().await.unwrap()
    }

    /// Posts raw bytes; returns the HTTP status and the body text.
    pub async fn raw(&self, body: &str, headers: &[(&str, &str)]) -> (u16, String) {
        let mut req = self.client.post(self.url()).body(body.to_string());
        let mut has_ct = false;
        for (k, v) in headers {
            has_ct |= k.eq_ignore_ascii_case("content-type");
            req = req.header(*k, *v);
        }
        if !has_ct {
            req = req.header("content-type", "application/json");
        }
        let r = req.send().await.unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    /// A streaming call, read to its end: (SSE id, JSON data) per frame.
    pub async fn sse(
        &self,
        principal: &str,
        method: &str,
        params: Value,
        last_event_id: Option<u64>,
    ) -> (String, Vec<(Option<u64>, Value)>) {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let mut req = self
            .client
            .post(self.url())
            .header(PRINCIPAL_HEADER, principal)
            .json(&body);
        if let Some(n) = last_event_id {
            req = req.header("Last-Event-ID", n.to_string());
        }
        let r = tokio::time::timeout(Duration::from_secs(20), req.send())
            .await
            .unwrap()
            .unwrap();
        let ct = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let text = tokio::time::timeout(Duration::from_secs(20), r.text())
            .await
            .expect("stream did not end")
            .unwrap();
        (ct, parse_sse(&text))
    }

    pub async fn stop(mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown(Duration::from_millis(100)).await;
        }
    }
}

pub fn parse_sse(text: &str) -> Vec<(Option<u64>, Value)> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut id = None;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !data.is_empty() {
            out.push((id, serde_json::from_str(&data).unwrap()));
        }
    }
    out
}

pub fn send_params(text: &str, message_id: &str) -> Value {
    json!({
        "message": {
            "messageId": message_id,
            "role": "ROLE_USER",
            "parts": [{"text": text}]
        }
    })
}

/// Replaces server-generated values (ids, timestamps, tokens) with placeholders.
pub fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, val)| {
                    let placeholder = match (k.as_str(), val) {
                        ("id" | "taskId" | "contextId" | "messageId", Value::String(s))
                            if !s.is_empty() && !s.starts_with("fixed-") =>
                        {
                            Some(format!("<{k}>"))
                        }
                        ("timestamp", Value::String(s)) => {
                            assert!(s.ends_with('Z'), "timestamp {s} must end in Z");
                            Some("<timestamp>".into())
                        }
                        ("nextPageToken", Value::String(s)) if !s.is_empty() => {
                            Some("<token>".into())
                        }
                        ("url", Value::String(s))
                            if s.starts_with("http://127.0.0.1:") && s.ends_with("/a2a/rest") =>
                        {
                            Some("<base>/a2a/rest".into())
                        }
                        ("url", Value::String(s)) if s.starts_with("http://127.0.0.1:") => {
                            Some("<base>/a2a".into())
                        }
                        ("url", Value::String(s)) if s.starts_with("127.0.0.1:") => {
                            Some("<host:port>".into())
                        }
                        _ => None,
                    };
                    (
                        k.clone(),
                        placeholder
                            .map(Value::String)
                            .unwrap_or_else(|| normalize(val)),
                    )
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// Compares `v` (normalized) with `tests/fixtures/<name>.json`; writes the file when
/// it is missing or `TASKWIRE_BLESS=1`.
pub fn check_fixture(name: &str, v: &Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"));
    let got = normalize(v);
    let bless = std::env::var("TASKWIRE_BLESS").is_ok_and(|v| v == "1");
    assert!(
        path.exists() || std::env::var_os("CI").is_none(),
        "golden fixture {} is missing; CI never writes one (run the test outside CI to write it, then commit it)", path.display()
    );
    if bless || !path.exists() {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
        return;
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        got,
        want,
        "fixture {name} differs; got:\n{}",
        serde_json::to_string_pretty(&got).unwrap()
    );
}
