//! Test harness: every adapter of this repo on one listener on 127.0.0.1:0
//! (memory store, real runtime, the scripted agent), behind a test auth layer
//! whose principal is the bearer token (`alice` without one); and a TCP proxy
//! that can cut event streams to test reconnection.

#![allow(
    dead_code,
    unreachable_pub,
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test harness"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use taskwire_client::a2a::pb;
use taskwire_client::{BackoffPolicy, ClientConfig};
use taskwire_core::{
    Agent, Caller, MemoryStore, Runtime, RuntimeConfig, ScriptedAgent, TaskService,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn caller_layer(mut req: Request, next: Next) -> Response {
    let principal = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("alice")
        .to_string();
    req.extensions_mut()
        .insert(Caller::new("default", principal));
    next.run(req).await
}

pub struct Server {
    pub base: String,
    pub addr: std::net::SocketAddr,
    pub service: TaskService,
    runtime: Option<Runtime>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub async fn start() -> Server {
    let agent: Arc<dyn Agent> = Arc::new(ScriptedAgent::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = TaskService::new(Arc::new(MemoryStore::new()), agent.info().name);
    let runtime = Runtime::start(service.clone(), agent.clone(), RuntimeConfig::default());
    let a2a = taskwire_a2a::A2aAdapter::new(service.clone(), agent.clone(), {
        let mut v = taskwire_a2a::A2aConfig::default();
        v.public_url = format!("http://{addr}");
        v.push_allow_private = true;
        v.extended_card = true;
        v.blocking_timeout = Duration::from_secs(20);
        v
    });
    let grpc = taskwire_grpc::GrpcAdapter::new(a2a.service().clone());
    let mcp = taskwire_mcp::McpAdapter::new(
        service.clone(),
        agent.clone(),
        taskwire_mcp::McpConfig::default(),
    );
    let agui = taskwire_agui::AguiAdapter::new(
        service.clone(),
        agent.clone(),
        taskwire_agui::AguiConfig::default(),
    );
    let cas = taskwire_cas::CasAdapter::new(service.clone(), agent.clone(), {
        let mut v = taskwire_cas::CasConfig::default();
        v.recheck = Duration::from_millis(200);
        v
    });
    let authed = a2a
        .routes()
        .merge(grpc.routes())
        .merge(mcp.routes())
        .merge(agui.routes())
        .merge(cas.routes())
        .layer(middleware::from_fn(caller_layer));
    let app = authed.merge(a2a.public_routes()).merge(cas.public_routes());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Server {
        base: format!("http://{addr}"),
        addr,
        service,
        runtime: Some(runtime),
        server,
    }
}

/// A config with short timeouts and a fast backoff.
pub fn config(base: &str) -> ClientConfig {
    ClientConfig::builder(base)
        .request_timeout(Duration::from_secs(20))
        .connect_timeout(Duration::from_secs(5))
        .stream_idle_timeout(Duration::from_secs(20))
        .poll_interval(Duration::from_millis(50))
        .backoff(BackoffPolicy {
            initial: Duration::from_millis(20),
            max: Duration::from_millis(200),
            multiplier: 2.0,
            jitter: 0.5,
            max_attempts: 3,
        })
        .build()
}

/// A TCP proxy in front of `target`. For the `n`-th `text/event-stream` (or
/// AG-UI protobuf) response it sees (0-based), `allow(n)` says how many
/// complete SSE frames (blank-line terminated) to pass before cutting the
/// connection; `None` passes everything.
pub struct Proxy {
    pub base: String,
    pub streams_seen: Arc<AtomicUsize>,
    pub connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn proxy(
    target: std::net::SocketAddr,
    allow: impl Fn(usize) -> Option<usize> + Send + Sync + 'static,
) -> Proxy {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let streams_seen = Arc::new(AtomicUsize::new(0));
    let connections = Arc::new(AtomicUsize::new(0));
    let allow = Arc::new(allow);
    let (seen, conns) = (streams_seen.clone(), connections.clone());
    let task = tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            conns.fetch_add(1, Ordering::SeqCst);
            let (seen, allow) = (seen.clone(), allow.clone());
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                    let _ = sw.shutdown().await;
                });
                // Server → client, watching for event-stream responses.
                let mut buf = vec![0u8; 16 * 1024];
                let mut head = Vec::<u8>::new();
                let mut limit: Option<usize> = None;
                let mut frames = 0usize;
                let mut in_body = false;
                let mut last: Vec<u8> = Vec::new();
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let chunk = &buf[..n];
                    let mut out = Vec::with_capacity(n);
                    for &b in chunk {
                        out.push(b);
                        if !in_body {
                            head.push(b);
                            if head.ends_with(b"\r\n\r\n") {
                                let h = String::from_utf8_lossy(&head).to_ascii_lowercase();
                                if h.contains("content-type: text/event-stream") {
                                    let n = seen.fetch_add(1, Ordering::SeqCst);
                                    limit = allow(n);
                                    frames = 0;
                                    in_body = true;
                                    last.clear();
                                    if limit == Some(0) {
                                        break;
                                    }
                                }
                                head.clear();
                            }
                        } else if limit.is_some() {
                            last.push(b);
                            if last.ends_with(b"\n\n") {
                                frames += 1;
                                last.clear();
                                if Some(frames) == limit {
                                    break;
                                }
                            }
                        }
                    }
                    if cw.write_all(&out).await.is_err() {
                        break;
                    }
                    if in_body && limit.is_some_and(|l| frames >= l) {
                        // Cut: close both directions.
                        up.abort();
                        return;
                    }
                }
                up.abort();
            });
        }
    });
    Proxy {
        base: format!("http://{addr}"),
        streams_seen,
        connections,
        task,
    }
}

/// A TCP proxy that cuts its first connection at the first server read that
/// follows a silence of at least `pause` (for HTTP/2 streams, where frames
/// cannot be counted from outside); later connections pass untouched.
pub async fn pause_cutting_proxy(target: std::net::SocketAddr, pause: Duration) -> Proxy {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let streams_seen = Arc::new(AtomicUsize::new(0));
    let connections = Arc::new(AtomicUsize::new(0));
    let (cuts, conns) = (streams_seen.clone(), connections.clone());
    let task = tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let n = conns.fetch_add(1, Ordering::SeqCst);
            let cuts = cuts.clone();
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(target).await else {
                    return;
                };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                    let _ = sw.shutdown().await;
                });
                let mut buf = vec![0u8; 16 * 1024];
                let mut last = tokio::time::Instant::now();
                loop {
                    let r = sr.read(&mut buf).await;
                    let k = match r {
                        Ok(0) | Err(_) => break,
                        Ok(k) => k,
                    };
                    if n == 0 && last.elapsed() >= pause {
                        cuts.fetch_add(1, Ordering::SeqCst);
                        break;
                    }
                    last = tokio::time::Instant::now();
                    if cw.write_all(&buf[..k]).await.is_err() {
                        break;
                    }
                }
                up.abort();
            });
        }
    });
    Proxy {
        base: format!("http://{addr}"),
        streams_seen,
        connections,
        task,
    }
}

/// The task of a `SendMessage` answer (panics on a direct message).
pub fn task_of(r: &pb::SendMessageResponse) -> pb::Task {
    match &r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t.clone(),
        other => panic!("expected a task, got {other:?}"),
    }
}

/// A task's state.
pub fn state(t: &pb::Task) -> pb::TaskState {
    t.status.as_ref().expect("status").state()
}
