//! The server built through the library entry point: endpoints, metrics, auth,
//! listen policy and graceful shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::{Extension, Json, Router};
use chrono::Utc;
use taskwire::{
    check_listen_policy, Adapter, AdapterContext, AuthConfig, Error, Server, ServerBuilder,
    TokenTable,
};
use taskwire_core::{
    Caller, CreateTask, MemoryStore, Message, RuntimeConfig, ScriptedAgent, TaskService, TaskState,
    TaskStore,
};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tower::ServiceExt;

struct Running {
    addr: SocketAddr,
    service: TaskService,
    router: Router,
    stop: Option<oneshot::Sender<()>>,
    handle: JoinHandle<Result<(), Error>>,
}

impl Running {
    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Triggers shutdown and waits for `run` to return.
    async fn stop(mut self) -> Duration {
        let started = Instant::now();
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(Duration::from_secs(30), self.handle)
            .await
            .expect("run returns")
            .expect("run task")
            .expect("run ok");
        started.elapsed()
    }
}

fn base() -> ServerBuilder {
    Server::builder()
        .agent(Arc::new(ScriptedAgent::new()))
        .store(Arc::new(MemoryStore::new()))
        .runtime_config({
            let mut v = RuntimeConfig::default();
            v.poll_interval = Duration::from_millis(20);
            v.reap_interval = Duration::from_millis(100);
            v
        })
}

async fn start(builder: ServerBuilder) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let server = builder.listen(listener).build().await.expect("build");
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback() && addr.port() != 0);
    let service = server.service().clone();
    let router = server.router();
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    Running {
        addr,
        service,
        router,
        stop: Some(tx),
        handle,
    }
}

async fn create(service: &TaskService, text: &str) -> std::sync::Arc<taskwire_core::Task> {
    service
        .create(&Caller::local(), CreateTask::new(Message::user_text(text)))
        .await
        .expect("create")
        .task
}

async fn wait_state(service: &TaskService, id: &taskwire_core::TaskId, state: TaskState) {
    let t = service
        .wait_until(&Caller::local(), id, Duration::from_secs(10), |t| {
            t.state == state
        })
        .await
        .expect("wait");
    assert_eq!(t.state, state, "task {id} ended {:?}", t.state);
}

#[tokio::test]
async fn health_ready_and_metrics() {
    let s = start(base()).await;
    let http = reqwest::Client::new();

    let r = http.get(s.url("/healthz")).send().await.expect("healthz");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("body"), "ok");
    let r = http.get(s.url("/readyz")).send().await.expect("readyz");
    assert_eq!(r.status(), 200);

    let t = create(&s.service, "hello metrics").await;
    wait_state(&s.service, &t.id, TaskState::Completed).await;

    let r = http.get(s.url("/metrics")).send().await.expect("metrics");
    assert_eq!(r.status(), 200);
    assert!(r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/plain")));
    let text = r.text().await.expect("body");
    for needle in [
        "taskwire_transitions_total{",
        "from=\"working\"",
        "to=\"completed\"",
        "taskwire_tasks_created_total",
        "taskwire_lease_expiries_total",
        "taskwire_tasks_swept_total",
        "taskwire_turn_seconds_bucket",
        "taskwire_tasks{state=\"completed\"} 1",
        "taskwire_tasks{state=\"working\"} 0",
        "taskwire_queue_depth 0",
        "taskwire_http_request_duration_seconds_bucket",
        "route=\"/healthz\"",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
    // Every exported name is prefixed.
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        assert!(line.starts_with("taskwire_"), "unprefixed metric: {line}");
    }
    s.stop().await;
}

/// A store whose health can be switched off.
struct FlakyStore {
    inner: MemoryStore,
    down: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl TaskStore for FlakyStore {
    fn kind(&self) -> &'static str {
        "flaky"
    }
    fn hub(&self) -> &taskwire_core::WakeHub {
        self.inner.hub()
    }
    async fn create(
        &self,
        task: taskwire_core::Task,
        events: Vec<taskwire_core::Event>,
        key: Option<taskwire_core::store::IdempotencyKey>,
        enqueue: bool,
    ) -> Result<taskwire_core::store::CreateOutcome, taskwire_core::StoreError> {
        self.inner.create(task, events, key, enqueue).await
    }
    async fn get_shared(
        &self,
        id: &taskwire_core::TaskId,
    ) -> Result<Option<std::sync::Arc<taskwire_core::Task>>, taskwire_core::StoreError> {
        self.inner.get_shared(id).await
    }
    async fn commit(
        &self,
        c: taskwire_core::store::Commit,
    ) -> Result<(), taskwire_core::StoreError> {
        self.inner.commit(c).await
    }
    async fn events(
        &self,
        id: &taskwire_core::TaskId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<taskwire_core::Event>, taskwire_core::StoreError> {
        self.inner.events(id, after, limit).await
    }
    async fn list(
        &self,
        q: &taskwire_core::store::ListQuery,
    ) -> Result<taskwire_core::store::ListPage, taskwire_core::StoreError> {
        self.inner.list(q).await
    }
    async fn claim(
        &self,
        worker: &str,
        max: usize,
        lease: Duration,
        now: taskwire_core::Timestamp,
    ) -> Result<Vec<taskwire_core::store::Claim>, taskwire_core::StoreError> {
        self.inner.claim(worker, max, lease, now).await
    }
    async fn renew(
        &self,
        c: &taskwire_core::store::Claim,
        lease: Duration,
        now: taskwire_core::Timestamp,
    ) -> Result<bool, taskwire_core::StoreError> {
        self.inner.renew(c, lease, now).await
    }
    async fn release(
        &self,
        c: &taskwire_core::store::Claim,
    ) -> Result<(), taskwire_core::StoreError> {
        self.inner.release(c).await
    }
    async fn drop_claim(
        &self,
        c: &taskwire_core::store::Claim,
    ) -> Result<(), taskwire_core::StoreError> {
        self.inner.drop_claim(c).await
    }
    async fn reap(
        &self,
        now: taskwire_core::Timestamp,
    ) -> Result<Vec<taskwire_core::TaskId>, taskwire_core::StoreError> {
        self.inner.reap(now).await
    }
    async fn sweep(
        &self,
        now: taskwire_core::Timestamp,
        limit: usize,
    ) -> Result<usize, taskwire_core::StoreError> {
        self.inner.sweep(now, limit).await
    }
    async fn idle_expired(
        &self,
        now: taskwire_core::Timestamp,
        limit: usize,
    ) -> Result<Vec<taskwire_core::TaskId>, taskwire_core::StoreError> {
        self.inner.idle_expired(now, limit).await
    }
    async fn queue_depth(&self) -> Result<u64, taskwire_core::StoreError> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            Err(taskwire_core::StoreError::Backend(
                "down for the test".into(),
            ))
        } else {
            self.inner.queue_depth().await
        }
    }
    async fn count_by_state(&self) -> Result<Vec<(TaskState, u64)>, taskwire_core::StoreError> {
        self.inner.count_by_state().await
    }
    async fn put_record(
        &self,
        r: taskwire_core::Record,
        q: Option<taskwire_core::Quota>,
    ) -> Result<taskwire_core::PutOutcome, taskwire_core::StoreError> {
        self.inner.put_record(r, q).await
    }
    async fn get_record(
        &self,
        k: taskwire_core::RecordKind,
        id: &str,
    ) -> Result<Option<taskwire_core::Record>, taskwire_core::StoreError> {
        self.inner.get_record(k, id).await
    }
    async fn list_records(
        &self,
        k: taskwire_core::RecordKind,
        s: &taskwire_core::RecordScope,
    ) -> Result<Vec<taskwire_core::Record>, taskwire_core::StoreError> {
        self.inner.list_records(k, s).await
    }
    async fn update_record(
        &self,
        r: &taskwire_core::Record,
        f: Option<&taskwire_core::RecordLease>,
    ) -> Result<u64, taskwire_core::StoreError> {
        self.inner.update_record(r, f).await
    }
    async fn delete_record(
        &self,
        k: taskwire_core::RecordKind,
        id: &str,
    ) -> Result<bool, taskwire_core::StoreError> {
        self.inner.delete_record(k, id).await
    }
    async fn claim_records(
        &self,
        k: taskwire_core::RecordKind,
        w: &str,
        max: usize,
        lease: Duration,
        now: taskwire_core::Timestamp,
    ) -> Result<Vec<(taskwire_core::Record, taskwire_core::RecordLease)>, taskwire_core::StoreError>
    {
        self.inner.claim_records(k, w, max, lease, now).await
    }
    async fn renew_record(
        &self,
        l: &taskwire_core::RecordLease,
        d: Duration,
        now: taskwire_core::Timestamp,
    ) -> Result<bool, taskwire_core::StoreError> {
        self.inner.renew_record(l, d, now).await
    }
    async fn release_record(
        &self,
        l: &taskwire_core::RecordLease,
    ) -> Result<(), taskwire_core::StoreError> {
        self.inner.release_record(l).await
    }
    async fn sweep_records(
        &self,
        now: taskwire_core::Timestamp,
        limit: usize,
    ) -> Result<usize, taskwire_core::StoreError> {
        self.inner.sweep_records(now, limit).await
    }
    async fn count_records(
        &self,
    ) -> Result<Vec<(taskwire_core::RecordKind, u64)>, taskwire_core::StoreError> {
        self.inner.count_records().await
    }
}

#[tokio::test]
async fn readyz_follows_the_store_and_shutdown() {
    let store = Arc::new(FlakyStore {
        inner: MemoryStore::new(),
        down: false.into(),
    });
    let s = start(
        base()
            .store(store.clone())
            .drain_timeout(Duration::from_secs(5)),
    )
    .await;
    let http = reqwest::Client::new();
    assert_eq!(
        http.get(s.url("/readyz"))
            .send()
            .await
            .expect("readyz")
            .status(),
        200
    );
    store.down.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = http.get(s.url("/readyz")).send().await.expect("readyz");
    assert_eq!(r.status(), 503);
    assert_eq!(r.text().await.expect("body"), "store unavailable");
    // Liveness does not depend on the store.
    assert_eq!(
        http.get(s.url("/healthz"))
            .send()
            .await
            .expect("healthz")
            .status(),
        200
    );
    store.down.store(false, std::sync::atomic::Ordering::SeqCst);

    // Keep a turn running so that shutdown takes a while, then watch readiness
    // through the router while it drains.
    let t = create(&s.service, "sleep 700").await;
    wait_state(&s.service, &t.id, TaskState::Working).await;
    let router = s.router.clone();
    let service = s.service.clone();
    let stopping = tokio::spawn(s.stop());
    let mut saw_503 = false;
    for _ in 0..200 {
        let res = router
            .clone()
            .oneshot(
                Request::get("/readyz")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("infallible");
        if res.status() == StatusCode::SERVICE_UNAVAILABLE {
            saw_503 = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(saw_503, "readyz never reported shutdown");
    stopping.await.expect("stop");
    let t = service.get(&Caller::local(), &t.id).await.expect("get");
    assert_eq!(t.state, TaskState::Completed);
}

#[tokio::test]
async fn graceful_shutdown_lets_a_running_turn_finish() {
    let s = start(base().drain_timeout(Duration::from_secs(5))).await;
    let service = s.service.clone();
    let t = create(&service, "sleep 200").await;
    wait_state(&service, &t.id, TaskState::Working).await;
    let took = s.stop().await;
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");
    let t = service.get(&Caller::local(), &t.id).await.expect("get");
    assert_eq!(t.state, TaskState::Completed, "the turn in flight finished");
    assert_eq!(service.store().queue_depth().await.expect("depth"), 0);
}

#[tokio::test]
async fn drain_timeout_releases_the_lease_of_an_unfinished_turn() {
    let s = start(
        base()
            .runtime_config({
                let mut v = RuntimeConfig::default();
                v.lease = Duration::from_secs(60);
                v
            })
            .drain_timeout(Duration::from_millis(200)),
    )
    .await;
    let service = s.service.clone();
    let t = create(&service, "sleep 30000").await;
    wait_state(&service, &t.id, TaskState::Working).await;
    let took = s.stop().await;
    assert!(took < Duration::from_secs(3), "shutdown took {took:?}");
    let task = service.get(&Caller::local(), &t.id).await.expect("get");
    assert_eq!(
        task.state,
        TaskState::Working,
        "the task survives, unfinished"
    );
    // The lease was released, not left to lapse: another node claims it at once.
    let claims = service
        .store()
        .claim("next-node", 10, Duration::from_secs(30), Utc::now())
        .await
        .expect("claim");
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].task_id, t.id);
}

fn whoami() -> Router {
    Router::new().route(
        "/whoami",
        get(|Extension(c): Extension<Caller>| async move {
            Json(serde_json::json!({"principal": c.principal, "tenant": c.tenant}))
        }),
    )
}

#[tokio::test]
async fn bearer_tokens_guard_mounted_routes_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("tokens.txt");
    std::fs::write(&path, "# test tokens\nsecret-a alice acme\nsecret-b bob\n").expect("write");
    let s = start(
        base()
            .auth(AuthConfig::token_file(&path).expect("token file"))
            .mount(whoami()),
    )
    .await;
    let http = reqwest::Client::new();

    let r = http.get(s.url("/whoami")).send().await.expect("send");
    assert_eq!(r.status(), 401);
    assert!(r.headers().contains_key("www-authenticate"));
    let body: serde_json::Value = r.json().await.expect("json error body");
    assert_eq!(body["error"]["code"], "unauthenticated");
    assert!(body["error"]["message"]
        .as_str()
        .is_some_and(|m| !m.is_empty()));

    let r = http
        .get(s.url("/whoami"))
        .bearer_auth("wrong")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 401);

    let r = http
        .get(s.url("/whoami"))
        .bearer_auth("secret-a")
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(
        body,
        serde_json::json!({"principal": "alice", "tenant": "acme"})
    );

    let r = http
        .get(s.url("/whoami"))
        .bearer_auth("secret-b")
        .send()
        .await
        .expect("send");
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(
        body,
        serde_json::json!({"principal": "bob", "tenant": "default"})
    );

    // Health, readiness and metrics stay open.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let r = http.get(s.url(path)).send().await.expect("send");
        assert_eq!(r.status(), 200, "{path}");
    }
    s.stop().await;
}

#[tokio::test]
async fn without_tokens_every_caller_is_local() {
    let s = start(base().mount(whoami())).await;
    let body: serde_json::Value = reqwest::get(s.url("/whoami"))
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(
        body,
        serde_json::json!({"principal": "local", "tenant": "default"})
    );
    s.stop().await;
}

struct Echo;

impl Adapter for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn routes(&self, ctx: &AdapterContext) -> Router {
        let agent = ctx.service().agent_name().to_string();
        Router::new().route("/echo/agent", get(move || async move { agent }))
    }
    fn public_routes(&self, _ctx: &AdapterContext) -> Router {
        Router::new().route("/echo/card", get(|| async { "card" }))
    }
}

#[tokio::test]
async fn adapters_mount_public_and_protected_routes() {
    let mut t = TokenTable::new();
    t.insert("tok", Caller::new("t", "p"));
    let s = start(base().auth(AuthConfig::tokens(t)).adapter(Echo)).await;
    let http = reqwest::Client::new();
    let r = http.get(s.url("/echo/card")).send().await.expect("send");
    assert_eq!(r.status(), 200);
    let r = http.get(s.url("/echo/agent")).send().await.expect("send");
    assert_eq!(r.status(), 401);
    let r = http
        .get(s.url("/echo/agent"))
        .bearer_auth("tok")
        .send()
        .await
        .expect("send");
    assert_eq!(r.text().await.expect("body"), "scripted");
    s.stop().await;
}

#[tokio::test]
async fn conflicting_routes_are_an_error_not_a_panic() {
    let clash = Router::new().route("/healthz", get(|| async { "mine" }));
    let err = base()
        .listen(TcpListener::bind("127.0.0.1:0").await.expect("bind"))
        .mount(clash)
        .build()
        .await
        .expect_err("conflict");
    assert!(matches!(err, Error::Mount { .. }), "{err}");
}

#[test]
fn listen_policy() {
    let addr = |s: &str| s.parse::<SocketAddr>().expect("addr");
    let local = AuthConfig::Local;
    let mut t = TokenTable::new();
    t.insert("tok", Caller::new("t", "p"));
    let tokens = AuthConfig::tokens(t);
    for ok in [
        "127.0.0.1:7420",
        "127.9.9.9:1",
        "[::1]:7420",
        "[::ffff:127.0.0.1]:80",
    ] {
        check_listen_policy(addr(ok), &local, false).expect(ok);
    }
    for remote in [
        "0.0.0.0:7420",
        "[::]:7420",
        "192.0.2.1:7420",
        "[::ffff:192.0.2.1]:80",
    ] {
        let err = check_listen_policy(addr(remote), &local, false).expect_err(remote);
        assert!(matches!(err, Error::InsecureListen { .. }));
        assert!(err.to_string().contains("--insecure-no-auth"), "{err}");
        assert!(err.to_string().contains("--auth-tokens"), "{err}");
        check_listen_policy(addr(remote), &local, true).expect("explicitly allowed");
        check_listen_policy(addr(remote), &tokens, false).expect("authenticated");
    }
}

#[tokio::test]
async fn the_builder_refuses_a_remote_address_without_auth() {
    let err = base()
        .listen("0.0.0.0:0".parse::<SocketAddr>().expect("addr"))
        .build()
        .await
        .expect_err("refused");
    assert!(matches!(err, Error::InsecureListen { .. }), "{err}");
    let err = Server::builder().build().await.expect_err("no agent");
    assert!(matches!(err, Error::MissingAgent), "{err}");
}

#[tokio::test]
async fn request_bodies_are_bounded_by_the_message_limit() {
    let limits = {
        let mut v = taskwire_core::Limits::default();
        v.max_message_bytes = 1000;
        v
    };
    let limit = taskwire::body_limit(&limits);
    let echo_len = Router::new().route(
        "/len",
        axum::routing::post(|body: String| async move { body.len().to_string() }),
    );
    let s = start(base().limits(limits.clone()).mount(echo_len)).await;
    let http = reqwest::Client::new();
    let r = http
        .post(s.url("/len"))
        .body("x".repeat(limit))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("body"), limit.to_string());
    let r = http
        .post(s.url("/len"))
        .body("x".repeat(limit + 1))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status(), 413);
    s.stop().await;

    // Every adapter route takes the same limit: a body one byte over it is the
    // protocol's "too large" (413; AG-UI's RUN_ERROR too_large), one at the
    // limit is read (and refused for what it says).
    let mut b = base().limits(limits);
    for a in taskwire::adapters::all(&taskwire::adapters::AdapterOptions::default()) {
        b = b.boxed_adapter(a);
    }
    let s = start(b).await;
    for path in [
        "/a2a",
        "/a2a/rest/message:send",
        "/mcp",
        "/agui",
        "/cas/tasks",
    ] {
        for (len, over) in [(limit, false), (limit + 1, true)] {
            let r = http
                .post(s.url(path))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("a2a-version", "1.0")
                .header("mcp-protocol-version", "2025-11-25")
                .body(" ".repeat(len))
                .send()
                .await
                .expect("send");
            let status = r.status();
            let body = r.text().await.expect("body");
            // AG-UI answers in the stream it was asked for: a RUN_ERROR event.
            let too_large = if path == "/agui" {
                body.contains("too_large")
            } else {
                status == 413
            };
            assert_eq!(too_large, over, "{path}, {len} bytes: {status} {body}");
        }
    }
    s.stop().await;
}
