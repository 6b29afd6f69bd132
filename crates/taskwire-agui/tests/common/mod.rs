//! A served adapter over a real runtime, and helpers to read and check streams.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the helpers"
)]
#![expect(
    clippy::unwrap_used,
    reason = "test helpers fail the test by panicking"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use serde_json::{json, Value};
use taskwire_agui::sse;
use taskwire_agui::verify::Verifier;
use taskwire_agui::{AguiAdapter, AguiConfig};
use taskwire_core::{
    Agent, Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService, TaskStore,
};

pub(crate) struct Env {
    pub(crate) addr: SocketAddr,
    pub(crate) service: TaskService,
    pub(crate) http: reqwest::Client,
    rt: Option<Runtime>,
    server: tokio::task::JoinHandle<()>,
}

async fn caller_from_header(mut req: Request, next: Next) -> Response {
    let principal = req
        .headers()
        .get("x-test-principal")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("alice")
        .to_string();
    req.extensions_mut().insert(Caller::new("t1", principal));
    next.run(req).await
}

impl Env {
    pub(crate) async fn start() -> Self {
        Self::with_agent(Arc::new(ScriptedAgent::new())).await
    }

    pub(crate) async fn with_agent(agent: Arc<dyn Agent>) -> Self {
        Self::with_agent_and_config(agent, AguiConfig::default()).await
    }

    pub(crate) async fn with_config(config: AguiConfig) -> Self {
        Self::with_agent_and_config(Arc::new(ScriptedAgent::new()), config).await
    }

    pub(crate) async fn with_agent_and_config(agent: Arc<dyn Agent>, config: AguiConfig) -> Self {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
        let service = TaskService::new(store, "scripted");
        let rt = Runtime::start(service.clone(), agent.clone(), {
            let mut v = RuntimeConfig::default();
            v.poll_interval = Duration::from_millis(20);
            v.reap_interval = Duration::from_millis(50);
            v
        });
        let adapter = AguiAdapter::new(service.clone(), agent, config);
        let app = adapter
            .routes()
            .layer(middleware::from_fn(caller_from_header));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            service,
            http: reqwest::Client::new(),
            rt: Some(rt),
            server,
        }
    }

    /// Another adapter over this one's store (as a restarted process, or another
    /// node sharing the store, would be), on a port of its own, without a runtime.
    pub(crate) async fn another_node(&self, config: AguiConfig) -> Env {
        let adapter =
            AguiAdapter::new(self.service.clone(), Arc::new(ScriptedAgent::new()), config);
        let app = adapter
            .routes()
            .layer(middleware::from_fn(caller_from_header));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Env {
            addr,
            service: self.service.clone(),
            http: reqwest::Client::new(),
            rt: None,
            server,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Posts a run and reads the whole stream.
    pub(crate) async fn run(&self, principal: &str, body: &Value) -> Stream {
        let resp = self
            .http
            .post(self.url("/agui"))
            .header("x-test-principal", principal)
            .header("accept", "text/event-stream")
            .json(body)
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Stream::parse(&resp.text().await.unwrap())
    }

    pub(crate) async fn get(
        &self,
        principal: &str,
        path: &str,
        last_event_id: Option<&str>,
    ) -> (u16, String) {
        let mut req = self
            .http
            .get(self.url(path))
            .header("x-test-principal", principal)
            .timeout(Duration::from_secs(20));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap())
    }

    pub(crate) async fn stop(mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown(Duration::from_secs(5)).await;
        }
        self.server.abort();
    }
}

/// A parsed SSE stream.
#[derive(Clone, Debug)]
pub(crate) struct Stream {
    pub(crate) frames: Vec<(Option<String>, Value)>,
}

impl Stream {
    pub(crate) fn parse(body: &str) -> Self {
        let frames = sse::decode(body)
            .into_iter()
            .map(|(id, d)| (id, serde_json::from_str::<Value>(&d).unwrap()))
            .collect();
        Self { frames }
    }

    pub(crate) fn events(&self) -> Vec<&Value> {
        self.frames.iter().map(|(_, v)| v).collect()
    }

    pub(crate) fn types(&self) -> Vec<String> {
        self.frames
            .iter()
            .map(|(_, v)| v["type"].as_str().unwrap_or("?").to_string())
            .collect()
    }

    pub(crate) fn last(&self) -> &Value {
        &self.frames.last().unwrap().1
    }

    pub(crate) fn first_of(&self, ty: &str) -> Option<&Value> {
        self.events().into_iter().find(|e| e["type"] == ty)
    }

    /// Passes the verifier, or panics with the stream.
    pub(crate) fn verified(self) -> Self {
        let mut v = Verifier::new();
        for (_, e) in &self.frames {
            if let Err(err) = v.push_json(e) {
                panic!("{err}\n{:#?}", self.frames);
            }
        }
        if let Err(err) = v.finish() {
            panic!("{err}\n{:#?}", self.frames);
        }
        self
    }

    /// The interrupts of the closing RUN_FINISHED.
    pub(crate) fn interrupts(&self) -> Vec<Value> {
        let last = self.last();
        assert_eq!(last["type"], "RUN_FINISHED", "{:#?}", self.frames);
        assert_eq!(last["outcome"]["type"], "interrupt", "{last}");
        last["outcome"]["interrupts"].as_array().unwrap().clone()
    }
}

pub(crate) fn input(thread: &str, run: &str, messages: Value) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {}
    })
}

pub(crate) fn user(id: &str, text: &str) -> Value {
    json!({"id": id, "role": "user", "content": text})
}

/// Replaces what changes from run to run (ids, times) with stable placeholders.
pub(crate) fn normalize(v: &Value) -> Value {
    let mut ids: Vec<String> = Vec::new();
    fn walk(v: &Value, ids: &mut Vec<String>) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .map(|(k, v)| {
                        let v = match k.as_str() {
                            "timestamp" => json!(0),
                            "expiresAt" => json!("<time>"),
                            _ => walk(v, ids),
                        };
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(|x| walk(x, ids)).collect()),
            Value::String(s) => Value::String(replace_hex(s, ids)),
            other => other.clone(),
        }
    }
    walk(v, &mut ids)
}

fn replace_hex(s: &str, ids: &mut Vec<String>) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let run = b[i..]
            .iter()
            .take_while(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
            .count();
        if run == 32 {
            let id = &s[i..i + 32];
            let n = match ids.iter().position(|x| x == id) {
                Some(n) => n,
                None => {
                    ids.push(id.to_string());
                    ids.len() - 1
                }
            };
            out.push_str(&format!("<id{n}>"));
            i += 32;
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

/// Compares a stream (normalized, as `[{id, event}]`) with a golden fixture;
/// writes the fixture when it is missing or `UPDATE_FIXTURES` is set.
pub(crate) fn golden(name: &str, frames: &[(Option<String>, Value)]) {
    let whole = Value::Array(
        frames
            .iter()
            .map(|(id, e)| json!({"id": id, "event": e}))
            .collect(),
    );
    let got = normalize(&whole);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"));
    let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
    assert!(
        path.exists() || std::env::var_os("CI").is_none(),
        "golden fixture {} is missing; CI never writes one (run the test outside CI to write it, then commit it)", path.display()
    );
    if std::env::var_os("UPDATE_FIXTURES").is_some() || !path.exists() {
        std::fs::write(&path, text).unwrap();
        eprintln!("wrote fixture {}", path.display());
        return;
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        got, want,
        "fixture {name} differs (UPDATE_FIXTURES=1 to rewrite)"
    );
}

impl Env {
    /// Reads `path` twice, as SSE and as protobuf: the protobuf body must be the
    /// SSE events framed as protobuf, byte for byte, and decode frame by frame.
    /// Pins the protobuf shape (oneof arm, event type, frame length) as a fixture.
    pub(crate) async fn proto_matches_sse(&self, principal: &str, path: &str, fixture: &str) {
        use prost::Message as _;
        use taskwire_agui::proto;
        let (status, sse_body) = self.get(principal, path, None).await;
        assert_eq!(status, 200);
        let sse = Stream::parse(&sse_body).verified();
        let resp = self
            .http
            .get(self.url(path))
            .header("x-test-principal", principal)
            .header(
                "accept",
                "application/vnd.ag-ui.event+proto, text/event-stream;q=0.5",
            )
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            proto::MEDIA_TYPE
        );
        let bytes = resp.bytes().await.unwrap();
        let mut want = Vec::new();
        for (_, e) in &sse.frames {
            let ev: taskwire_agui::wire::Event = serde_json::from_value(e.clone()).unwrap();
            want.extend(proto::encode_frame(&ev));
        }
        assert_eq!(bytes.as_ref(), want.as_slice(), "protobuf body of {path}");
        let decoded = proto::decode_frames(&bytes).unwrap();
        assert_eq!(decoded.len(), sse.frames.len());
        let summary: Vec<Value> = decoded
            .iter()
            .zip(&sse.frames)
            .map(|(pb, (_, e))| json!({"type": e["type"], "bytes": pb.encoded_len() + 4}))
            .collect();
        let frames: Vec<(Option<String>, Value)> = summary.into_iter().map(|v| (None, v)).collect();
        golden(fixture, &frames);
    }
}
