//! Test harness: the CAS routes behind a test auth layer (principal from the
//! `x-test-principal` header, tenant `t`), served on 127.0.0.1:0 over a real
//! runtime with the in-memory store.

#![expect(
    unreachable_pub,
    reason = "a test helper module: pub for the test crate"
)]
#![expect(
    clippy::unwrap_used,
    reason = "test harness: a failure is a test failure"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use reqwest::StatusCode;
use serde_json::Value;
use taskwire_cas::{CasAdapter, CasConfig};
use taskwire_core::{Agent, Caller, MemoryStore, Runtime, RuntimeConfig, TaskService};

pub const TENANT: &str = "t";

async fn test_auth(mut req: Request, next: Next) -> Response {
    let principal = req
        .headers()
        .get("x-test-principal")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("alice")
        .to_string();
    req.extensions_mut().insert(Caller::new(TENANT, principal));
    next.run(req).await
}

pub struct Harness {
    pub base: String,
    pub client: reqwest::Client,
    pub service: TaskService,
    runtime: Option<Runtime>,
    server: tokio::task::JoinHandle<()>,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Harness {
    pub async fn start(agent: Arc<dyn Agent>) -> Self {
        Self::start_with(agent, |s| s, RuntimeConfig::default()).await
    }

    pub async fn start_with(
        agent: Arc<dyn Agent>,
        configure: impl FnOnce(TaskService) -> TaskService,
        rc: RuntimeConfig,
    ) -> Self {
        let config = {
            let mut v = CasConfig::default();
            v.recheck = Duration::from_millis(500);
            v
        };
        Self::start_full(agent, configure, rc, config).await
    }

    pub async fn start_full(
        agent: Arc<dyn Agent>,
        configure: impl FnOnce(TaskService) -> TaskService,
        rc: RuntimeConfig,
        config: CasConfig,
    ) -> Self {
        let service = configure(TaskService::new(
            Arc::new(MemoryStore::new()),
            agent.info().name,
        ));
        let runtime = Runtime::start(service.clone(), agent.clone(), rc);
        let adapter = CasAdapter::new(service.clone(), agent, config);
        let app = adapter
            .routes()
            .merge(adapter.public_routes())
            .layer(axum::middleware::from_fn(test_auth));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
            service,
            runtime: Some(runtime),
            server,
        }
    }

    pub async fn stop(mut self) {
        if let Some(r) = self.runtime.take() {
            r.shutdown(Duration::from_secs(2)).await;
        }
        self.server.abort();
    }

    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        who: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Reply {
        let mut rb = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("x-test-principal", who)
            .timeout(Duration::from_secs(20));
        for (k, v) in headers {
            rb = rb.header(*k, *v);
        }
        if let Some(b) = body {
            rb = rb.json(&b);
        }
        let r = rb.send().await.unwrap();
        let status = r.status();
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, who: &str) -> Reply {
        self.send(reqwest::Method::GET, path, who, None, &[]).await
    }

    pub async fn post(&self, path: &str, who: &str, body: Value) -> Reply {
        self.send(reqwest::Method::POST, path, who, Some(body), &[])
            .await
    }

    /// Creates a task from one text part as alice; returns the status object.
    pub async fn create_text(&self, text: &str) -> Value {
        let r = self.post("/cas/tasks", "alice", input(text)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body
    }

    pub async fn status(&self, id: &str) -> Value {
        let r = self.get(&format!("/cas/tasks/{id}"), "alice").await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    }

    pub async fn messages(&self, id: &str) -> Value {
        let r = self
            .get(&format!("/cas/tasks/{id}/messages"), "alice")
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    }

    /// Long-polls until `pred` holds for the status object (10 s at most).
    pub async fn wait_for(&self, id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut cur = self.status(id).await;
        while !pred(&cur) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting; last status {cur}"
            );
            let rev = cur["status"]["revision"].as_str().unwrap().to_string();
            let r = self
                .get(&format!("/cas/tasks/{id}?wait=2&revision={rev}"), "alice")
                .await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            cur = r.body;
        }
        cur
    }

    pub async fn wait_phase(&self, id: &str, phase: &str) -> Value {
        self.wait_for(id, |v| v["status"]["phase"] == phase).await
    }
}

/// An input with one text part.
pub fn input(text: &str) -> Value {
    serde_json::json!({"message": [{"mimeType": "text/plain", "text": text}]})
}

pub fn id_of(status: &Value) -> String {
    status["id"].as_str().unwrap().to_string()
}

/// Replaces ids, times and revisions by placeholders so that shapes can be compared.
pub fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let nv = match (k.as_str(), v) {
                        ("id" | "task_id", Value::String(s))
                            if s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit()) =>
                        {
                            Value::from("<id>")
                        }
                        (
                            "created_at" | "since" | "received_at" | "committed_at"
                            | "idle_expires_at",
                            Value::String(_),
                        ) => Value::from("<time>"),
                        ("revision", Value::String(_)) => Value::from("<revision>"),
                        _ => normalize(v),
                    };
                    (k.clone(), nv)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

/// Compares `v` (normalized) with `tests/fixtures/<name>.json`; rewrites the file
/// when `UPDATE_FIXTURES=1`.
pub fn golden(name: &str, v: &Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"));
    let got = normalize(v);
    if std::env::var("UPDATE_FIXTURES").as_deref() == Ok("1") {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing fixture {path:?}; run with UPDATE_FIXTURES=1"));
    let want: Value = serde_json::from_str(&want).unwrap();
    assert_eq!(got, want, "fixture {name} differs");
}
