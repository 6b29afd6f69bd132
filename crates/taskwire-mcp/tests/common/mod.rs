//! Test harness: a real runtime with the scripted agent behind the MCP adapter on
//! 127.0.0.1, a raw HTTP client for both generations, SSE reading and golden
//! fixtures.
#![allow(
    dead_code,
    unreachable_pub,
    reason = "each test crate uses a different part of the shared harness"
)]
#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions panic on failure by design"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt;
use serde_json::{json, Value};
use taskwire_core::{
    Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService, TaskStore,
};
use taskwire_mcp::{McpAdapter, McpConfig};

pub const V: &str = "2026-07-28";
pub const EXT: &str = "io.modelcontextprotocol/tasks";

pub struct Server {
    pub url: String,
    pub rt: Option<Runtime>,
    pub http: reqwest::Client,
    next_id: std::sync::atomic::AtomicU64,
}

async fn insert_caller(mut req: Request, next: Next) -> Response {
    let principal = req
        .headers()
        .get("x-test-principal")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("alice")
        .to_string();
    req.extensions_mut().insert(Caller::new("t1", principal));
    next.run(req).await
}

impl Server {
    pub async fn start() -> Self {
        Self::with_config(McpConfig::default()).await
    }

    pub async fn with_config(config: McpConfig) -> Self {
        Self::with_agent(Arc::new(ScriptedAgent::new()), config).await
    }

    #[allow(dead_code, reason = "not every test binary serves its own agent")]
    pub async fn with_agent(agent: Arc<dyn taskwire_core::Agent>, config: McpConfig) -> Self {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        Self::with_store(store, agent, taskwire_core::Limits::default(), config).await
    }

    /// A server over `store` with the service's `limits`.
    pub async fn with_store(
        store: Arc<dyn TaskStore>,
        agent: Arc<dyn taskwire_core::Agent>,
        limits: taskwire_core::Limits,
        config: McpConfig,
    ) -> Self {
        let svc = TaskService::new(store, agent.info().name).with_limits(limits);
        let rt = Runtime::start(svc.clone(), agent.clone(), {
            let mut v = RuntimeConfig::default();
            v.poll_interval = Duration::from_millis(20);
            v
        });
        let adapter = McpAdapter::new(svc, agent, config);
        let app = adapter
            .routes()
            .layer(axum::middleware::from_fn(insert_caller));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            // With the peer address of each connection (axum's ConnectInfo),
            // as the taskwire server provides it.
            let app = app.into_make_service_with_connect_info::<std::net::SocketAddr>();
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://{addr}/mcp"),
            rt: Some(rt),
            http: reqwest::Client::new(),
            next_id: 1.into(),
        }
    }

    pub fn id(&self) -> u64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// A 2026-07-28 request with `_meta` and all standard headers filled in.
    pub async fn call(&self, method: &str, params: Value, tasks: bool) -> (u16, Value) {
        self.call_as("alice", method, params, tasks).await
    }

    pub async fn call_as(
        &self,
        who: &str,
        method: &str,
        params: Value,
        tasks: bool,
    ) -> (u16, Value) {
        let caps = if tasks {
            json!({"extensions": {EXT: {}}})
        } else {
            json!({})
        };
        self.call_with_caps(who, method, params, caps).await
    }

    /// A 2026-07-28 request as `who` declaring the client capabilities `caps`.
    pub async fn call_with_caps(
        &self,
        who: &str,
        method: &str,
        mut params: Value,
        caps: Value,
    ) -> (u16, Value) {
        // Keys the caller put in _meta (a progressToken) are kept.
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": caps,
        });
        if let Some(Value::Object(extra)) = params.get("_meta") {
            for (k, v) in extra {
                meta[k] = v.clone();
            }
        }
        params.as_object_mut().unwrap().insert("_meta".into(), meta);
        let name = match method {
            "tools/call" => params.get("name").and_then(Value::as_str),
            "tasks/get" | "tasks/update" | "tasks/cancel" | "tasks/continue" => {
                params.get("taskId").and_then(Value::as_str)
            }
            _ => None,
        }
        .map(str::to_string);
        let mut headers = vec![
            ("mcp-protocol-version".to_string(), V.to_string()),
            ("mcp-method".to_string(), method.to_string()),
            ("x-test-principal".to_string(), who.to_string()),
        ];
        if let Some(n) = name {
            headers.push(("mcp-name".into(), n));
        }
        let body = json!({"jsonrpc": "2.0", "id": self.id(), "method": method, "params": params});
        self.raw(&body.to_string(), &headers).await
    }

    /// A raw POST with the given headers; returns status and JSON body (or the
    /// SSE messages as an array when the answer is a stream).
    pub async fn raw(&self, body: &str, headers: &[(String, String)]) -> (u16, Value) {
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(k, v);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        let text = resp.text().await.unwrap();
        if sse {
            return (status, Value::Array(sse_messages(&text)));
        }
        if text.is_empty() {
            return (status, Value::Null);
        }
        (status, serde_json::from_str(&text).unwrap())
    }

    /// Polls tasks/get until `pred` holds on the result (at most 10 s).
    pub async fn poll(&self, task_id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..500 {
            let (_, r) = self
                .call("tasks/get", json!({"taskId": task_id}), true)
                .await;
            let res = r["result"].clone();
            if pred(&res) {
                return res;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("task {task_id} never reached the expected state");
    }

    pub async fn shutdown(mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown(Duration::from_millis(200)).await;
        }
    }
}

/// The JSON messages of an SSE body (events with empty data are skipped).
pub fn sse_messages(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let data: Vec<&str> = block
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        let data = data.join("\n");
        if !data.trim().is_empty() {
            out.push(serde_json::from_str(&data).unwrap());
        }
    }
    out
}

/// Reads SSE messages one at a time from a streaming response.
pub struct SseReader {
    stream: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buf: String,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> Self {
        Self {
            stream: resp.bytes_stream().boxed(),
            buf: String::new(),
        }
    }

    /// The next JSON message, or None at the end of the stream (10 s timeout).
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            while let Some(pos) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..pos + 2).collect();
                let msgs = sse_messages(&block);
                if let Some(m) = msgs.into_iter().next() {
                    return Some(m);
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.stream.next())
                .await
                .expect("SSE read timed out")?;
            self.buf
                .push_str(&String::from_utf8_lossy(&chunk.unwrap()).replace("\r\n", "\n"));
        }
    }
}

/// Replaces what changes from run to run (ids, timestamps) with placeholders.
pub fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let nv = match k.as_str() {
                        "createdAt" | "lastUpdatedAt" => json!("<timestamp>"),
                        // When a task event was committed (tasks/stream).
                        "at" if v.is_string() => json!("<timestamp>"),
                        // Sealed with a random key per adapter.
                        "requestState" if v.is_string() => json!("<requestState>"),
                        "version" if v.is_string() && m.contains_key("name") => json!("<version>"),
                        // Request ids depend on how many polls a test made.
                        "id" if v.is_number() && m.contains_key("jsonrpc") => json!("<n>"),
                        _ => normalize(v),
                    };
                    (k.clone(), nv)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        Value::String(s) => Value::String(mask_ids(s)),
        other => other.clone(),
    }
}

/// Replaces every run of exactly 32 hex digits (task and session ids) with `<id>`.
fn mask_ids(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let run = b[i..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if run == 32 {
            out.push_str("<id>");
            i += run;
        } else if run > 0 {
            out.push_str(&s[i..i + run]);
            i += run;
        } else {
            let ch = s[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn fixture_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"))
}

/// Compares `v` (normalized) with the golden fixture `name`; writes the fixture
/// when it is missing or TASKWIRE_UPDATE_FIXTURES is set.
pub fn golden(name: &str, v: &Value) {
    let got = normalize(v);
    let path = fixture_path(name);
    let pretty = serde_json::to_string_pretty(&got).unwrap() + "\n";
    assert!(
        path.exists() || std::env::var_os("CI").is_none(),
        "golden fixture {} is missing; CI never writes one (run the test outside CI to write it, then commit it)", path.display()
    );
    if std::env::var_os("TASKWIRE_UPDATE_FIXTURES").is_some() || !path.exists() {
        std::fs::write(&path, pretty).unwrap();
        return;
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        got, want,
        "golden fixture {name} differs (set TASKWIRE_UPDATE_FIXTURES=1 to rewrite)\n{pretty}"
    );
}
