//! `tasks/stream` (SEP-2694, Resumable Task Event Streams) over raw HTTP: from
//! the start, after a cursor, across a dropped connection, at the end of a
//! task, the refusals, the per-principal stream quota, one stream per task per
//! connection, and `events_gone` when the log no longer holds the events.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{golden, Server, SseReader, EXT, V};
use serde_json::{json, Value};
use taskwire_core::{MemoryStore, ScriptedAgent, TaskStore};
use taskwire_mcp::McpConfig;

/// Starts a task running `text` (tasks extension) and returns its id.
async fn start_task(s: &Server, text: &str) -> String {
    let (st, r) = s
        .call(
            "tools/call",
            json!({"name": "run_script", "arguments": {"text": text}}),
            true,
        )
        .await;
    assert_eq!(st, 200, "{r}");
    r["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_string()
}

/// The body of a `tasks/stream` request.
fn stream_body(id: u64, task: &str, after: Option<Value>) -> Value {
    let mut params = json!({
        "taskId": task,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
        }
    });
    if let Some(a) = after {
        params["after"] = a;
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tasks/stream", "params": params})
}

/// Sends `tasks/stream` on `http` (its own connection pool) and returns the
/// response unread.
async fn open(
    s: &Server,
    http: &reqwest::Client,
    who: &str,
    task: &str,
    after: Option<Value>,
) -> reqwest::Response {
    http.post(&s.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", V)
        .header("mcp-method", "tasks/stream")
        .header("mcp-name", task)
        .header("x-test-principal", who)
        .body(stream_body(s.id(), task, after).to_string())
        .send()
        .await
        .expect("tasks/stream request")
}

/// Reads a whole `tasks/stream` answer: its events and the final message.
async fn read_all(s: &Server, task: &str, after: Option<Value>) -> (Vec<Value>, Value) {
    let resp = open(s, &s.http, "alice", task, after).await;
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| c.starts_with("text/event-stream"));
    if !sse {
        return (Vec::new(), resp.json().await.expect("a JSON answer"));
    }
    let mut r = SseReader::new(resp);
    let mut events = Vec::new();
    while let Some(m) = r.next().await {
        if m["method"] == "notifications/tasks/event" {
            events.push(m["params"].clone());
        } else {
            return (events, m);
        }
    }
    panic!("the stream ended without a result");
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["seq"].as_u64().expect("a seq"))
        .collect()
}

/// From the start: every event of the log from 0 without a gap, each
/// vendor-prefixed with the related task in `_meta`, ending at the terminal
/// status with the empty result; after a cursor, exactly the rest; after the
/// last event of an ended task, the empty result at once.
#[tokio::test]
async fn streams_the_log_from_the_start_and_after_a_cursor() {
    let s = Server::start().await;
    let id = start_task(&s, "steps 2\nstream 3").await;
    let (events, end) = read_all(&s, &id, None).await;
    assert_eq!(end["result"], json!({"resultType": "complete"}), "{end}");
    let n = events.len() as u64;
    assert_eq!(seqs(&events), (0..n).collect::<Vec<_>>());
    for e in &events {
        assert_eq!(e["taskId"], id.as_str());
        assert_eq!(
            e["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
            id.as_str()
        );
        assert!(e["type"].as_str().unwrap().starts_with("taskwire."), "{e}");
        assert!(e["payload"].is_object(), "{e}");
    }
    assert_eq!(events[0]["type"], "taskwire.created");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "taskwire.status");
    assert_eq!(last["payload"]["to"], "completed", "{last}");
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert!(
        kinds.contains(&"taskwire.step") && kinds.contains(&"taskwire.artifact"),
        "{kinds:?}"
    );

    let (rest, end) = read_all(&s, &id, Some(json!(2))).await;
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(rest, events[3..].to_vec());

    let (none, end) = read_all(&s, &id, Some(json!(n - 1))).await;
    assert!(none.is_empty());
    assert_eq!(end["result"], json!({"resultType": "complete"}), "{end}");
    golden("task_stream_terminal_event", last);
    s.shutdown().await;
}

/// A connection dropped mid-task: resuming after the last event read gives
/// every later event once, and the two halves are the whole log.
#[tokio::test]
async fn a_dropped_stream_resumes_with_no_event_lost_or_repeated() {
    let s = Server::start().await;
    let id = start_task(&s, "sleep 200\nstream 4\nsleep 200\nsteps 1").await;
    let http = reqwest::Client::new();
    let mut r = SseReader::new(open(&s, &http, "alice", &id, None).await);
    let mut first = Vec::new();
    while first.len() < 3 {
        let m = r.next().await.expect("an event before the drop");
        assert_eq!(m["method"], "notifications/tasks/event", "{m}");
        first.push(m["params"].clone());
    }
    drop(r);
    drop(http);
    let cursor = first.last().unwrap()["seq"].clone();
    let (rest, end) = read_all(&s, &id, Some(cursor)).await;
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    let mut whole = first.clone();
    whole.extend(rest);
    let n = whole.len() as u64;
    assert_eq!(
        seqs(&whole),
        (0..n).collect::<Vec<_>>(),
        "no gap, no repeat"
    );
    let (all, _) = read_all(&s, &id, None).await;
    assert_eq!(whole, all);
    s.shutdown().await;
}

/// Bad cursors, unknown and foreign tasks are -32602; without the tasks
/// extension -32021; a cursor past the log's end -32602.
#[tokio::test]
async fn refusals() {
    let s = Server::start().await;
    let id = start_task(&s, "hello").await;
    s.poll(&id, |t| t["status"] == "completed").await;
    for bad in [json!(-1), json!("3"), json!(1.5), json!(99)] {
        let (_, end) = read_all(&s, &id, Some(bad.clone())).await;
        assert_eq!(end["error"]["code"], -32602, "after {bad}: {end}");
    }
    let (_, end) = read_all(&s, "0123456789abcdef0123456789abcdef", None).await;
    assert_eq!(end["error"]["code"], -32602, "{end}");
    let resp = open(&s, &s.http, "mallory", &id, None).await;
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let (st, v) = s.call("tasks/stream", json!({"taskId": id}), false).await;
    assert_eq!(
        (st, v["error"]["code"].clone()),
        (400, json!(-32021)),
        "{v}"
    );
    s.shutdown().await;
}

/// The stream counts against the caller's stream quota, and a second stream
/// of one task on one connection is -32602 (another connection may open one).
#[tokio::test]
async fn streams_are_bounded() {
    let mut limits = taskwire_core::Limits::default();
    limits.max_streams_per_principal = 1;
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let s = Server::with_store(
        store,
        Arc::new(ScriptedAgent::new()),
        limits,
        McpConfig::default(),
    )
    .await;
    let a = start_task(&s, "sleep 5000").await;
    let b = start_task(&s, "sleep 5000").await;
    let one = reqwest::Client::new();
    let held = open(&s, &one, "alice", &a, None).await;
    assert!(held.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    // The quota: alice holds one stream already.
    let other = reqwest::Client::new();
    let v: Value = open(&s, &other, "alice", &b, None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("stream"),
        "{v}"
    );
    // Another principal has a quota of its own.
    let (st, _) = s.call("tasks/cancel", json!({"taskId": b}), true).await;
    assert_eq!(st, 200);
    drop(held);
    drop(one);
    s.shutdown().await;
}

/// One `tasks/stream` per task per connection (SEP-2694): told apart by the
/// peer address the server gives each request.
#[tokio::test]
async fn one_stream_per_task_per_connection() {
    use axum::body::Body;
    use axum::extract::ConnectInfo;
    use tower::ServiceExt;
    // The server's own routes, called in process with a peer address.
    let agent = Arc::new(ScriptedAgent::new());
    let store: Arc<dyn TaskStore> = Arc::new(MemoryStore::new());
    let svc = taskwire_core::TaskService::new(store, "scripted");
    let rt = taskwire_core::Runtime::start(svc.clone(), agent.clone(), Default::default());
    let routes = taskwire_mcp::McpAdapter::new(svc, agent, McpConfig::default()).routes();
    let req = |peer: &str, body: Value, method: &str, name: &str| {
        let mut r = axum::http::Request::post("/mcp")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", V)
            .header("mcp-method", method)
            .header("mcp-name", name)
            .body(Body::from(body.to_string()))
            .unwrap();
        r.extensions_mut()
            .insert(taskwire_core::Caller::new("t1", "alice"));
        r.extensions_mut()
            .insert(ConnectInfo(peer.parse::<std::net::SocketAddr>().unwrap()));
        r
    };
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
    });
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": meta, "name": "run_script", "arguments": {"text": "sleep 5000"}}});
    let res = routes
        .clone()
        .oneshot(req("127.0.0.1:1000", call, "tools/call", "run_script"))
        .await
        .unwrap();
    let body = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    let task: Value = serde_json::from_slice(&body).unwrap();
    let t = task["result"]["taskId"].as_str().unwrap().to_string();
    let first = routes
        .clone()
        .oneshot(req(
            "127.0.0.1:1000",
            stream_body(2, &t, None),
            "tasks/stream",
            &t,
        ))
        .await
        .unwrap();
    assert!(first.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let again = routes
        .clone()
        .oneshot(req(
            "127.0.0.1:1000",
            stream_body(3, &t, None),
            "tasks/stream",
            &t,
        ))
        .await
        .unwrap();
    let body = axum::body::to_bytes(again.into_body(), 1 << 20)
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already open"),
        "{v}"
    );
    // Another connection may.
    let elsewhere = routes
        .clone()
        .oneshot(req(
            "127.0.0.1:1001",
            stream_body(4, &t, None),
            "tasks/stream",
            &t,
        ))
        .await
        .unwrap();
    assert!(elsewhere.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    // Once the first is closed, the connection may open one again.
    drop(first);
    let mut reopened = false;
    for _ in 0..100 {
        let r = routes
            .clone()
            .oneshot(req(
                "127.0.0.1:1000",
                stream_body(5, &t, None),
                "tasks/stream",
                &t,
            ))
            .await
            .unwrap();
        if r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
        {
            reopened = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(reopened, "the closed stream's claim was not released");
    rt.shutdown(Duration::from_millis(200)).await;
}

/// A store whose log no longer holds the events up to `trim` (as retention
/// would leave it).
struct TrimmedStore {
    inner: MemoryStore,
    trim: AtomicU64,
}

#[taskwire_core::async_trait]
impl TaskStore for TrimmedStore {
    fn kind(&self) -> &'static str {
        "trimmed"
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
    ) -> Result<Option<Arc<taskwire_core::Task>>, taskwire_core::StoreError> {
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
        let from = after.max(self.trim.load(Ordering::SeqCst));
        self.inner.events(id, from, limit).await
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
        self.inner.queue_depth().await
    }
    async fn count_by_state(
        &self,
    ) -> Result<Vec<(taskwire_core::TaskState, u64)>, taskwire_core::StoreError> {
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

/// Events after the cursor that the log no longer holds are `events_gone`
/// (-32010 with `data.reason`, `taskId`, `earliestSeq`), never skipped; no
/// cursor starts at the earliest event retained, and a cursor within what is
/// retained streams as usual.
#[tokio::test]
async fn events_no_longer_retained_are_events_gone() {
    let store = Arc::new(TrimmedStore {
        inner: MemoryStore::new(),
        trim: AtomicU64::new(0),
    });
    let s = Server::with_store(
        store.clone(),
        Arc::new(ScriptedAgent::new()),
        taskwire_core::Limits::default(),
        McpConfig::default(),
    )
    .await;
    let id = start_task(&s, "steps 2").await;
    let done = s.poll(&id, |t| t["status"] == "completed").await;
    assert_eq!(done["status"], "completed");
    let (all, _) = read_all(&s, &id, None).await;
    // The log keeps core events 4.. (stream sequence numbers 3..).
    store.trim.store(3, Ordering::SeqCst);
    // Without a cursor: from the earliest event retained.
    let (events, end) = read_all(&s, &id, None).await;
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(events, all[3..].to_vec());
    for after in [Some(json!(0)), Some(json!(1))] {
        let (events, end) = read_all(&s, &id, after.clone()).await;
        assert!(events.is_empty(), "{events:?}");
        assert_eq!(end["error"]["code"], -32010, "after {after:?}: {end}");
        assert_eq!(
            end["error"]["data"],
            json!({"reason": "events_gone", "taskId": id, "earliestSeq": 3}),
            "{end}"
        );
    }
    // Resuming from just before the earliest retained event works.
    let (rest, end) = read_all(&s, &id, Some(json!(2))).await;
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(rest, all[3..].to_vec());
    s.shutdown().await;
}
