//! Several `taskwire serve` processes on one PostgreSQL database, as a deployment
//! behind a load balancer runs them: a task created on one node runs on another
//! and is followed on a third; a node killed with SIGKILL mid-turn has its turn
//! re-run by another node once the lease lapses; doubled creates spread over the
//! nodes make one task each; push delivery continues from another node after the
//! delivering node dies.
//!
//! Each test uses a schema of its own in the database named by
//! `TASKWIRE_TEST_POSTGRES_URL`, and is skipped (saying so) without it.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_taskwire");

#[path = "common/pg.rs"]
mod pg;
use pg::{fresh_store, pg_url};
#[path = "../../taskwire-store-postgres/tests/common/partition.rs"]
mod partition;
use partition::{Mode, PartitionProxy};

async fn sql_count(url: &str, sql: &str) -> i64 {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    client.query_one(sql, &[]).await.expect(sql).get(0)
}

/// One `taskwire serve` process.
struct Node {
    child: Child,
    addr: String,
    _dir: tempfile::TempDir,
    log: std::path::PathBuf,
}

impl Node {
    async fn start(store: &str, extra: &[&str]) -> Node {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("stderr.log");
        let mut cmd = Command::new(BIN);
        cmd.args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            store,
            "--insecure-no-auth",
            // Small pools: the tests run beside each other and beside the store's
            // own tests, under the server's max_connections (100 by default).
            "--pg-pool-size",
            "4",
        ])
        .args(extra)
        .current_dir(dir.path())
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .kill_on_drop(true);
        for (k, _) in std::env::vars() {
            if k.starts_with("TASKWIRE_") {
                cmd.env_remove(k);
            }
        }
        let mut child = cmd.spawn().expect("spawn taskwire serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no address line; stderr:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })
            .expect("read stdout")
            .unwrap_or_else(|| {
                panic!(
                    "serve exited; stderr:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        let addr = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Node {
            child,
            addr,
            _dir: dir,
            log,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL: no drain, no lease released.
    async fn kill9(&mut self) {
        self.child.start_kill().expect("kill");
        let _ = self.child.wait().await;
    }

    /// The sum of the samples of one metric family with these labels in it.
    async fn metric(&self, name: &str, labels: &str) -> f64 {
        let text = reqwest::get(self.url("/metrics"))
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics body");
        text.lines()
            .filter(|l| {
                l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']) && l.contains(labels)
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    async fn rpc(&self, http: &reqwest::Client, method: &str, params: Value) -> Value {
        let r: Value = http
            .post(self.url("/a2a"))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .expect("a2a request")
            .json()
            .await
            .expect("a2a answer");
        match r.get("result") {
            Some(v) => v.clone(),
            None => panic!("{method} failed: {r}"),
        }
    }
}

fn send_params(message_id: &str, text: &str) -> Value {
    json!({
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": true}
    })
}

/// The raw JSON-RPC answer of an A2A request (result or error), the HTTP status
/// and how long it took.
async fn a2a_raw(
    http: &reqwest::Client,
    node: &str,
    method: &str,
    params: Value,
) -> (u16, Value, Duration) {
    let t = Instant::now();
    let r = http
        .post(format!("http://{node}/a2a"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .expect("a2a request");
    let status = r.status().as_u16();
    let body: Value = r.json().await.expect("a2a answer");
    (status, body, t.elapsed())
}

/// The `data:` payloads of an SSE response, as JSON, until `stop` holds for one
/// (included) or `deadline` passes.
async fn sse_until(
    resp: reqwest::Response,
    deadline: Duration,
    stop: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut buf = String::new();
    let mut body = resp.bytes_stream();
    let end = tokio::time::Instant::now() + deadline;
    while let Ok(Some(chunk)) = tokio::time::timeout_at(end, body.next()).await {
        let Ok(chunk) = chunk else { break };
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(i) = buf.find("\n\n") {
            let frame: String = buf.drain(..i + 2).collect();
            let data: String = frame
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect::<Vec<_>>()
                .join("\n");
            if data.is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(&data).expect("JSON data");
            let done = stop(&v);
            out.push(v);
            if done {
                return out;
            }
        }
    }
    out
}

fn a2a_state(frame: &Value) -> Option<&str> {
    let r = frame.get("result").unwrap_or(frame);
    r.pointer("/statusUpdate/status/state")
        .or_else(|| r.pointer("/task/status/state"))
        .and_then(Value::as_str)
}

/// A task created through node A (which runs no turns) runs on node B and is
/// followed on node C (which runs none either) over A2A SSE and AG-UI, while
/// node A answers CAS polls for it; every view ends completed with the same
/// output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_one_node_runs_on_a_second_and_streams_on_a_third() {
    let Some(url) = pg_url() else { return };
    let (_, store, _cleanup) = fresh_store(&url).await;
    let a = Node::start(&store, &["--max-concurrent-turns", "0"]).await;
    let b = Node::start(&store, &[]).await;
    let c = Node::start(&store, &["--max-concurrent-turns", "0"]).await;
    let http = reqwest::Client::new();

    // AG-UI run on A: read up to the frame that names the task.
    let run = http
        .post(a.url("/agui"))
        .header("accept", "text/event-stream")
        .json(&json!({
            "threadId": "th-multi", "runId": "run-multi",
            "messages": [{"id": "m-multi", "role": "user",
                          "content": "steps 2\nsleep 1500\nhello from three nodes"}],
            "tools": [], "context": [], "state": {}, "forwardedProps": {}
        }))
        .send()
        .await
        .expect("agui run");
    assert_eq!(run.status(), 200);
    let head = sse_until(run, Duration::from_secs(20), |v| {
        v["type"] == "CUSTOM" && v["name"] == "taskwire:task_created"
    })
    .await;
    let created = head.last().expect("frames from A");
    let task_id = created["value"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("task_created frame: {created}"))
        .to_string();

    // On C: A2A SubscribeToTask over SSE, and the AG-UI run's stream again.
    let a2a_stream = http
        .post(c.url("/a2a"))
        .header("accept", "text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask",
                      "params": {"id": task_id}}),
        )
        .send();
    let agui_stream = http
        .get(c.url("/agui/threads/th-multi/runs/run-multi/events"))
        .header("accept", "text/event-stream")
        .send();
    let (a2a_stream, agui_stream) = tokio::join!(a2a_stream, agui_stream);
    let a2a_frames = sse_until(
        a2a_stream.expect("subscribe on C"),
        Duration::from_secs(30),
        |v| a2a_state(v) == Some("TASK_STATE_COMPLETED"),
    );
    let agui_frames = sse_until(
        agui_stream.expect("agui on C"),
        Duration::from_secs(30),
        |v| v["type"] == "RUN_FINISHED",
    );
    // On A: CAS long polls until the task is terminal.
    let cas = async {
        let mut revision = String::new();
        for _ in 0..60 {
            let s: Value = http
                .get(a.url(&if revision.is_empty() {
                    format!("/cas/tasks/{task_id}")
                } else {
                    format!("/cas/tasks/{task_id}?wait=5&revision={revision}")
                }))
                .send()
                .await
                .expect("cas poll")
                .json()
                .await
                .expect("cas status");
            if s["status"]["phase"] == "terminal" {
                return s;
            }
            revision = s["status"]["revision"]
                .as_str()
                .unwrap_or_default()
                .to_string();
        }
        let last = http
            .get(a.url(&format!("/cas/tasks/{task_id}")))
            .send()
            .await
            .expect("cas get");
        panic!(
            "CAS never saw the task end: {} {}",
            last.status(),
            last.text().await.unwrap_or_default()
        );
    };
    let (a2a_frames, agui_frames, cas_status) = tokio::join!(a2a_frames, agui_frames, cas);

    let states: Vec<&str> = a2a_frames.iter().filter_map(a2a_state).collect();
    assert_eq!(
        states.last(),
        Some(&"TASK_STATE_COMPLETED"),
        "{a2a_frames:?}"
    );
    assert!(states.contains(&"TASK_STATE_WORKING"), "{states:?}");
    let texts = |frames: &[Value]| -> String {
        frames
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        texts(&a2a_frames).contains("hello from three nodes"),
        "the echo artifact reached C over A2A: {a2a_frames:?}"
    );
    let kinds: Vec<&str> = agui_frames
        .iter()
        .filter_map(|f| f["type"].as_str())
        .collect();
    assert_eq!(kinds.last(), Some(&"RUN_FINISHED"), "{kinds:?}");
    assert!(kinds.contains(&"STEP_STARTED"), "{kinds:?}");
    assert!(
        texts(&agui_frames).contains("hello from three nodes"),
        "{agui_frames:?}"
    );
    assert_eq!(
        cas_status["status"]["terminal_reason"], "completed",
        "{cas_status}"
    );

    // Only B ran turns.
    const TURNS: &str = "taskwire_turn_seconds_count";
    assert!(
        b.metric(TURNS, "").await >= 1.0,
        "B ran the turn:\n{}",
        b.log()
    );
    assert_eq!(a.metric(TURNS, "").await, 0.0);
    assert_eq!(c.metric(TURNS, "").await, 0.0);
    // And the views agree on the outcome: GetTask on C.
    let got = c.rpc(&http, "GetTask", json!({"id": task_id})).await;
    assert_eq!(got["status"]["state"], "TASK_STATE_COMPLETED", "{got}");
}

/// Node A is killed with SIGKILL while its turn sleeps; node B, started after,
/// reaps the lapsed lease, re-runs the turn from the start, and the task ends
/// once: completed, with one echo artifact and one completed status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_s_turn_is_rerun_once_by_another_node() {
    let Some(url) = pg_url() else { return };
    let (schema, store, _cleanup) = fresh_store(&url).await;
    let http = reqwest::Client::new();
    let mut a = Node::start(&store, &["--lease", "2s"]).await;
    let t = a
        .rpc(
            &http,
            "SendMessage",
            send_params("slow-1", "sleep 4000\nrerun me"),
        )
        .await;
    let id = t["task"]["id"].as_str().expect("task id").to_string();
    // Wait until A's turn has begun (the task is working), then kill A.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = a.rpc(&http, "GetTask", json!({"id": id})).await;
        if got["status"]["state"] == "TASK_STATE_WORKING" {
            break;
        }
        assert!(Instant::now() < deadline, "never working: {got}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    a.kill9().await;

    let b = Node::start(&store, &["--lease", "2s"]).await;
    let deadline = Instant::now() + Duration::from_secs(40);
    let done = loop {
        let got = b.rpc(&http, "GetTask", json!({"id": id})).await;
        if got["status"]["state"] == "TASK_STATE_COMPLETED" {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "B never finished the task: {got}\n{}",
            b.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let artifacts = done["artifacts"].as_array().cloned().unwrap_or_default();
    assert_eq!(artifacts.len(), 1, "one echo artifact: {done}");
    assert!(done.to_string().contains("rerun me"), "{done}");
    assert!(
        b.metric("taskwire_lease_expiries_total", "").await >= 1.0,
        "B took the task over from a lapsed lease:\n{}",
        b.log()
    );
    // Exactly one terminal status in the event log, and no queue entry left.
    let terminal = sql_count(
        &url,
        &format!(
            "SELECT count(*) FROM {schema}.events e, \
             json_array_elements(e.body) ev WHERE e.task_id = '{id}' \
             AND ev::text LIKE '%\"completed\"%' AND ev::text LIKE '%\"status\"%'"
        ),
    )
    .await;
    assert_eq!(terminal, 1, "the task ended once");
    let queued = sql_count(
        &url,
        &format!("SELECT count(*) FROM {schema}.queue WHERE task_id = '{id}'"),
    )
    .await;
    assert_eq!(queued, 0);
}

/// 1,000 creates spread over three nodes, every one sent twice at once to two
/// different nodes: each pair answers one task, and the database holds exactly
/// 1,000 tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doubled_creates_over_three_nodes_make_one_task_each() {
    let Some(url) = pg_url() else { return };
    let (schema, store, _cleanup) = fresh_store(&url).await;
    let nodes = [
        Node::start(&store, &[]).await,
        Node::start(&store, &[]).await,
        Node::start(&store, &[]).await,
    ];
    let http = reqwest::Client::new();
    let nodes = &nodes;
    let http = &http;
    let pairs = futures::stream::iter(0..1000usize)
        .map(|i| async move {
            let mid = format!("twice-{i}");
            let first = nodes[i % 3].rpc(http, "SendMessage", send_params(&mid, "hello"));
            let second = nodes[(i + 1) % 3].rpc(http, "SendMessage", send_params(&mid, "hello"));
            let (x, y) = tokio::join!(first, second);
            (
                x["task"]["id"].as_str().map(str::to_string),
                y["task"]["id"].as_str().map(str::to_string),
            )
        })
        .buffer_unordered(24)
        .collect::<Vec<_>>()
        .await;
    let mut ids = BTreeSet::new();
    for (x, y) in &pairs {
        assert!(x.is_some(), "{pairs:?}");
        assert_eq!(x, y, "both sends of one message answer the same task");
        ids.insert(x.clone());
    }
    assert_eq!(ids.len(), 1000);
    let stored = sql_count(&url, &format!("SELECT count(*) FROM {schema}.tasks")).await;
    assert_eq!(stored, 1000);
    // Each task's turn ran once, on the node that inserted it, started by the
    // create itself (local dispatch): no node claimed any.
    let (mut by_create, mut by_claim) = (0.0, 0.0);
    for n in nodes {
        by_create += n
            .metric("taskwire_turns_started_total", "via=\"create\"")
            .await;
        by_claim += n
            .metric("taskwire_turns_started_total", "via=\"claim\"")
            .await;
    }
    assert_eq!(by_create, 1000.0);
    assert_eq!(by_claim, 0.0);
}

/// A webhook on 127.0.0.1 that keeps every body POSTed to it with the token
/// `tok-1` (and answers 401 to others).
async fn receiver() -> (String, Arc<Mutex<Vec<Value>>>) {
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let keep = keep.clone();
                async move {
                    let token = headers
                        .get("x-a2a-notification-token")
                        .and_then(|v| v.to_str().ok());
                    if token != Some("tok-1") {
                        return axum::http::StatusCode::UNAUTHORIZED;
                    }
                    if let Ok(v) = serde_json::from_slice::<Value>(&body) {
                        keep.lock().expect("receiver lock").push(v);
                    }
                    axum::http::StatusCode::OK
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind receiver");
    let addr = listener.local_addr().expect("receiver addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}/hook"), got)
}

/// Push delivery continues from another node after the delivering node dies: A
/// runs the task and delivers its first notifications, A is killed with SIGKILL,
/// and B takes over both the turn and the push config (each once its lease
/// lapses), delivering from the stored cursor up to the completed status; every
/// artifact of the finished task reached the webhook, and the config's cursor
/// ends at the task's last event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_delivery_continues_from_another_node_after_a_kill() {
    let Some(url) = pg_url() else { return };
    let (schema, store, _cleanup) = fresh_store(&url).await;
    let (hook, got) = receiver().await;
    let http = reqwest::Client::new();
    let flags = ["--lease", "2s", "--push-allow-private"];
    let mut a = Node::start(&store, &flags).await;
    let mut params = send_params("pushed-1", "stream 3\nsleep 4000\npushed through");
    params["configuration"]["taskPushNotificationConfig"] = json!({"url": hook, "token": "tok-1"});
    let t = a.rpc(&http, "SendMessage", params).await;
    let id = t["task"]["id"].as_str().expect("task id").to_string();
    // A delivers the first notifications (working, the streamed chunks).
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.lock().expect("lock").len() < 2 {
        assert!(
            Instant::now() < deadline,
            "A delivered nothing:\n{}",
            a.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before_kill = got.lock().expect("lock").len();
    a.kill9().await;

    let b = Node::start(&store, &flags).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let frames = got.lock().expect("lock").clone();
        if frames
            .iter()
            .any(|f| a2a_state(f) == Some("TASK_STATE_COMPLETED"))
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no completed notification after the kill ({} before it): {frames:?}\n{}",
            before_kill,
            b.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        b.metric("taskwire_push_deliveries_total", "outcome=\"delivered\"")
            .await
            >= 1.0,
        "B delivered:\n{}",
        b.log()
    );
    let done = b.rpc(&http, "GetTask", json!({"id": id})).await;
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
    let frames = got.lock().expect("lock").clone();
    let delivered: BTreeSet<String> = frames
        .iter()
        .filter_map(|f| f.pointer("/artifactUpdate/artifact/artifactId"))
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    for artifact in done["artifacts"].as_array().cloned().unwrap_or_default() {
        let aid = artifact["artifactId"].as_str().unwrap_or_default();
        assert!(
            delivered.contains(aid),
            "artifact {aid} never reached the webhook: {frames:?}"
        );
    }
    // The cursor ends at the end of the log.
    let lag_sql = format!(
        "SELECT count(*) FROM {schema}.records r JOIN {schema}.tasks t \
         ON t.id = r.task_id WHERE r.task_id = '{id}' AND r.cursor <> t.last_seq"
    );
    let lagging = || sql_count(&url, &lag_sql);
    let mut lag = lagging().await;
    let configs = sql_count(
        &url,
        &format!("SELECT count(*) FROM {schema}.records WHERE task_id = '{id}'"),
    )
    .await;
    assert_eq!(configs, 1);
    // The cursor is written after each delivery; give the last write a moment.
    for _ in 0..50 {
        if lag == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        lag = lagging().await;
    }
    assert_eq!(lag, 0, "the push cursor reached the last event");
}

/// Whether a JSON-RPC answer is taskwire's "store unavailable": -32603 with an
/// ErrorInfo of reason UNAVAILABLE saying a retry with the same messageId is
/// safe, and a RetryInfo.
fn is_unavailable(answer: &Value) -> bool {
    let e = &answer["error"];
    e["code"] == -32603
        && e["data"][0]["reason"] == "UNAVAILABLE"
        && e["data"][0]["domain"] == "taskwire"
        && e["data"][0]["metadata"]["retrySafeWith"] == "messageId"
        && e["data"][1]["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
        && !e["message"]
            .as_str()
            .unwrap_or("")
            .contains("internal error")
}

/// What one round of calls to a node cut off from PostgreSQL saw.
struct CutOffRound {
    /// The round's message id.
    id: String,
    /// SendMessage on the cut-off node, and how long it took.
    answer: Value,
    took: Duration,
    /// GetTask (JSON-RPC) on it, and how long it took.
    read: Value,
    read_took: Duration,
    /// GetTask over HTTP+JSON: status, whether `Retry-After` came, time.
    rest_status: u16,
    retry_after: bool,
    rest_took: Duration,
    /// `/readyz`: status and time.
    ready: u16,
    ready_took: Duration,
    /// SendMessage on the other node, meanwhile.
    on_b: Value,
}

/// Two nodes on one database, node A's traffic to it through a proxy the test
/// controls: silently dropped (nothing forwarded, nothing closed) for three
/// times A's --pg-timeout while creates and reads keep coming on both nodes,
/// then reset, then healed. Every request on A ends within the bound plus a
/// small slack with the unavailable answer (JSON-RPC, HTTP+JSON 503 with
/// Retry-After, /readyz 503); B serves throughout; after the heal A serves
/// again within 2 s, every acknowledged task is there and completes, no task
/// has two terminal events, and each task's first turn ran once (turns started
/// on both nodes = tasks).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_postgres_answers_unavailable_within_its_bound() {
    let Some(url) = pg_url() else { return };
    let config: tokio_postgres::Config = url.parse().expect("the test database's address");
    let target = match (config.get_hosts().first(), config.get_ports().first()) {
        (Some(tokio_postgres::config::Host::Tcp(h)), port) => {
            format!("{h}:{}", port.copied().unwrap_or(5432))
        }
        _ => {
            eprintln!("skipped: TASKWIRE_TEST_POSTGRES_URL is not a TCP address");
            return;
        }
    };
    let (schema, store, _cleanup) = fresh_store(&url).await;
    let proxy = PartitionProxy::start(&target).await;
    let via_proxy = format!(
        "postgres://{}@{}/{}?options=-csearch_path%3D{schema}",
        config.get_user().unwrap_or("postgres"),
        proxy.addr(),
        config.get_dbname().unwrap_or("postgres"),
    );
    const BOUND: Duration = Duration::from_secs(1);
    const SLACK: Duration = Duration::from_millis(1000);
    let flags = ["--pg-timeout", "1s", "--lease", "3s"];
    let a = Node::start(&via_proxy, &flags).await;
    let b = Node::start(&store, &flags).await;
    // A request that hangs fails the test in 20 s (as every one did before
    // the store had a bound).
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    let mut acknowledged: BTreeSet<String> = BTreeSet::new();

    // Before: tasks on both nodes, all completed.
    for i in 0..5 {
        for (node, name) in [(&a, "a"), (&b, "b")] {
            let t = node
                .rpc(
                    &http,
                    "SendMessage",
                    send_params(&format!("pre-{name}-{i}"), "hi"),
                )
                .await;
            acknowledged.insert(t["task"]["id"].as_str().expect("task id").to_string());
        }
    }
    let known = acknowledged.iter().next().expect("a task").clone();
    wait_all_completed(&b, &http, &acknowledged).await;

    // Silent partition for 3 s: requests on A every 100 ms (creates, reads
    // over JSON-RPC and HTTP+JSON, readiness); creates on B.
    proxy.set(Mode::Silent);
    let start = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    let mut n = 0;
    while start.elapsed() < 3 * BOUND {
        n += 1;
        let (http, a_addr, b_addr, known) =
            (http.clone(), a.addr.clone(), b.addr.clone(), known.clone());
        calls.spawn(async move {
            let id = format!("cut-{n}");
            let (_, answer, took) =
                a2a_raw(&http, &a_addr, "SendMessage", send_params(&id, "hi")).await;
            let (_, read, read_took) =
                a2a_raw(&http, &a_addr, "GetTask", json!({"id": known})).await;
            let t = Instant::now();
            let rest = http
                .get(format!("http://{a_addr}/a2a/rest/tasks/{known}"))
                .send()
                .await
                .expect("rest get");
            let rest_took = t.elapsed();
            let rest_status = rest.status().as_u16();
            let retry_after = rest.headers().get("retry-after").is_some();
            let t = Instant::now();
            let ready = http
                .get(format!("http://{a_addr}/readyz"))
                .send()
                .await
                .expect("readyz")
                .status()
                .as_u16();
            let ready_took = t.elapsed();
            let (_, on_b, _) = a2a_raw(
                &http,
                &b_addr,
                "SendMessage",
                send_params(&format!("b-{id}"), "hi"),
            )
            .await;
            CutOffRound {
                id,
                answer,
                took,
                read,
                read_took,
                rest_status,
                retry_after,
                rest_took,
                ready,
                ready_took,
                on_b,
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut refused = Vec::new();
    let mut slowest = Duration::ZERO;
    while let Some(r) = calls.join_next().await {
        let CutOffRound {
            id,
            answer,
            took,
            read,
            read_took,
            rest_status,
            retry_after,
            rest_took,
            ready,
            ready_took,
            on_b,
        } = r.expect("a call");
        // A call that began before the partition took effect may have succeeded.
        match answer["result"]["task"]["id"].as_str() {
            Some(t) => {
                acknowledged.insert(t.to_string());
            }
            None => {
                assert!(is_unavailable(&answer), "SendMessage {id} on A: {answer}");
                refused.push(id.clone());
            }
        }
        assert!(
            read.get("result").is_some() || is_unavailable(&read),
            "GetTask on A: {read}"
        );
        assert!(
            rest_status == 200 || (rest_status == 503 && retry_after),
            "HTTP+JSON GetTask on A: {rest_status}"
        );
        assert!(ready == 200 || ready == 503, "/readyz on A: {ready}");
        for (what, t) in [
            ("SendMessage", took),
            ("GetTask", read_took),
            ("REST GetTask", rest_took),
            ("readyz", ready_took),
        ] {
            assert!(t <= BOUND + SLACK, "{what} ({id}) on A took {t:?}");
            slowest = slowest.max(t);
        }
        let t = on_b["result"]["task"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("B answers during the partition: {on_b}"));
        acknowledged.insert(t.to_string());
    }
    assert!(
        refused.len() >= 10,
        "A refused {} creates of {n}",
        refused.len()
    );

    // Reset: A's connections are reset, and new ones too.
    proxy.set(Mode::Reset);
    let mut reset_slowest = Duration::ZERO;
    for i in 0..5 {
        let id = format!("reset-{i}");
        let (_, answer, took) =
            a2a_raw(&http, &a.addr, "SendMessage", send_params(&id, "hi")).await;
        assert!(
            is_unavailable(&answer),
            "SendMessage {id} on A during the reset: {answer}"
        );
        assert!(took <= BOUND + SLACK, "{id} took {took:?}");
        reset_slowest = reset_slowest.max(took);
        refused.push(id);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Healed: A serves within 2 s.
    proxy.set(Mode::Forward);
    let healed = Instant::now();
    let recovery = loop {
        let (_, r, _) = a2a_raw(&http, &a.addr, "GetTask", json!({"id": known})).await;
        if r.get("result").is_some() {
            break healed.elapsed();
        }
        assert!(
            healed.elapsed() < Duration::from_secs(2),
            "A did not recover in 2 s: {r}\n{}",
            a.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Every refused create, retried with its messageId, is a task.
    for id in &refused {
        let t = a.rpc(&http, "SendMessage", send_params(id, "hi")).await;
        acknowledged.insert(t["task"]["id"].as_str().expect("task id").to_string());
    }
    wait_all_completed(&b, &http, &acknowledged).await;

    // 0 acknowledged lost; no double terminal events; first turns ran once.
    let tasks = sql_count(&url, &format!("SELECT count(*) FROM {schema}.tasks")).await;
    assert_eq!(
        tasks,
        acknowledged.len() as i64,
        "every acknowledged task, and no other"
    );
    let doubled = sql_count(
        &url,
        &format!(
            "SELECT count(*) FROM (SELECT e.task_id FROM {schema}.events e, \
             json_array_elements(e.body) ev WHERE ev::text LIKE '%\"completed\"%' \
             AND ev::text LIKE '%\"status\"%' GROUP BY e.task_id HAVING count(*) > 1) d"
        ),
    )
    .await;
    assert_eq!(doubled, 0, "tasks with more than one terminal event");
    // Every task here is one echo turn: turns started on both nodes = tasks.
    let turns = a.metric("taskwire_turns_started_total", "").await
        + b.metric("taskwire_turns_started_total", "").await;
    let reruns = turns - tasks as f64;
    eprintln!(
        "partition: {} creates refused on A, {} tasks, slowest answer on A {slowest:?} \
         while silent (bound {BOUND:?}), {reset_slowest:?} while reset, recovery \
         {recovery:?}, first-turn re-runs {reruns}",
        refused.len(),
        tasks
    );
    assert!(recovery < Duration::from_secs(2));
    assert_eq!(reruns, 0.0, "first turns that ran twice");
}

/// Waits (up to 30 s) until every task in `ids` is completed, read on `node`.
async fn wait_all_completed(node: &Node, http: &reqwest::Client, ids: &BTreeSet<String>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    for id in ids {
        loop {
            let got = node.rpc(http, "GetTask", json!({"id": id})).await;
            if got["status"]["state"] == "TASK_STATE_COMPLETED" {
                break;
            }
            assert!(Instant::now() < deadline, "{id} never completed: {got}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A 2026-07-28 MCP request to a node, with `_meta` (tasks extension) and the
/// standard headers.
fn mcp_request(
    http: &reqwest::Client,
    node: &Node,
    method: &str,
    mut params: Value,
) -> reqwest::RequestBuilder {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "multinode", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        }
    });
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    http.post(node.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
}

/// MCP `tasks/stream` (SEP-2694) on a node that runs no turns follows a task
/// created on a second and run by a third, from the start to its terminal
/// event (PostgreSQL wake-ups); cut after a few events and resumed on yet
/// another node, no event is lost or repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tasks_stream_follows_a_task_across_nodes_and_resumes_elsewhere() {
    let Some(url) = pg_url() else { return };
    let (_, store, _cleanup) = fresh_store(&url).await;
    let a = Node::start(&store, &["--max-concurrent-turns", "0"]).await;
    let b = Node::start(&store, &[]).await;
    let c = Node::start(&store, &["--max-concurrent-turns", "0"]).await;
    let http = reqwest::Client::new();
    let created: Value = mcp_request(
        &http,
        &a,
        "tools/call",
        json!({"name": "run_script", "arguments": {"text": "sleep 800\nstream 4\nsleep 300\nsteps 1"}}),
    )
    .send()
    .await
    .expect("tools/call")
    .json()
    .await
    .expect("tools/call answer");
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task: {created}"))
        .to_string();
    let is_end = |v: &Value| v.get("result").is_some() || v.get("error").is_some();

    // On C, from the start to the end.
    let whole = sse_until(
        mcp_request(&http, &c, "tasks/stream", json!({"taskId": id}))
            .send()
            .await
            .expect("tasks/stream on C"),
        Duration::from_secs(30),
        is_end,
    )
    .await;
    let (end, events) = whole.split_last().expect("messages from C");
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["params"]["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    let last = &events[events.len() - 1]["params"];
    assert_eq!(last["type"], "taskwire.status");
    assert_eq!(last["payload"]["to"], "completed", "{last}");

    // Cut on A after three events, resumed on C: the same log.
    let first = sse_until(
        mcp_request(&http, &a, "tasks/stream", json!({"taskId": id}))
            .send()
            .await
            .expect("tasks/stream on A"),
        Duration::from_secs(30),
        |v| v["params"]["seq"] == 2,
    )
    .await;
    assert_eq!(first.len(), 3, "{first:?}");
    let rest = sse_until(
        mcp_request(&http, &c, "tasks/stream", json!({"taskId": id, "after": 2}))
            .send()
            .await
            .expect("tasks/stream resumed on C"),
        Duration::from_secs(30),
        is_end,
    )
    .await;
    let mut joined: Vec<Value> = first;
    joined.extend(rest.split_last().expect("messages").1.iter().cloned());
    assert_eq!(joined.as_slice(), events);
    drop(b);
}
