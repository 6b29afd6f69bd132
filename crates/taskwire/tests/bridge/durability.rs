//! What survives: a bridge killed mid-task re-attaches, a cancel made while it was down reaches the upstream, sends the upstream never got are made again, and nothing is emitted twice.

use super::*;

/// The upstream link is stored before anything else happens upstream: a
/// bridging `taskwire` process killed mid-task (SIGKILL) re-attaches to the
/// upstream task once the lease lapses (started again on the same SQLite
/// store, or as another node of the same PostgreSQL store), instead of
/// sending again; the task completes once, with one upstream task. Over each
/// upstream protocol.
pub(crate) async fn killed_mid_task(kind: &str, postgres: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some((store, _schema)) = pg::store_in(postgres, dir.path()).await else {
        return;
    };
    let up = serve(&[]).await;
    let direct = a2a_client(&up.base);
    let (url, reattach_line, metric) = match kind {
        "a2a" => (
            format!("a2a+{}", up.base),
            "re-attaching to the upstream task",
            "a2a",
        ),
        "mcp" => (
            format!("mcp+{}/mcp", up.base),
            "re-attaching to the upstream MCP task",
            "mcp",
        ),
        _ => (
            format!("agui+{}/agui", up.base),
            "re-reading the upstream run",
            "agui",
        ),
    };
    let bridge = Restartable::new(
        dir.path(),
        &["--store", &store, "--upstream", &url, "--lease", "1s"],
    );
    let logs = |n: u32| bridge.logs(n);

    let (mut first, t) = bridge
        .start_with("stream 2\nsleep 3000\nafter the nap", true)
        .await;
    let ut = upstream_task_in(&direct, pb::TaskState::Working).await;
    // Kill it once the link is committed (before that, a restart sends again)
    // and, over A2A and AG-UI, once the stream position after the two chunks
    // is (committed with them by the next flush, a few ms later).
    let stored = if kind == "mcp" {
        "upstream link stored"
    } else {
        "upstream position stored"
    };
    // Then the same store again: a restart (SQLite), or another node
    // (PostgreSQL).
    let (second, base) = bridge
        .killed_once(&mut first, 1, stored, |log| log.contains(stored))
        .await;
    let ended = bridge.ended(&base, &t.id, 2).await;
    assert_eq!(
        state(&ended),
        pb::TaskState::Completed,
        "{kind}: {ended:?}\nsecond:\n{}",
        logs(2)
    );
    assert!(
        artifact_texts(&ended)
            .iter()
            .any(|(_, text)| text.contains("after the nap")),
        "{kind}: {ended:?}"
    );
    assert!(logs(2).contains(reattach_line), "{kind}: {}", logs(2));
    // The chunks streamed before the kill are there once: over A2A the
    // re-attach resumed after them (Last-Event-ID), not from the snapshot.
    // (An MCP upstream's output is the one tool result, read at the end.)
    let (name, want): (&str, &[&str]) = match kind {
        "mcp" => (
            "result",
            &["chunk 1 of 2\n", "chunk 2 of 2\n", "after the nap"],
        ),
        _ => ("stream", &["chunk 1 of 2\n", "chunk 2 of 2\n"]),
    };
    let chunks: Vec<String> = ended
        .artifacts
        .iter()
        .filter(|a| a.name == name)
        .flat_map(|a| {
            a.parts
                .iter()
                .map(|p| a2a::parts_text(std::slice::from_ref(p)))
        })
        .collect();
    assert_eq!(chunks, want, "{kind}: {ended:?}");
    if kind == "a2a" {
        let line = logs(2)
            .lines()
            .find(|l| l.contains(reattach_line))
            .map(str::to_string)
            .unwrap_or_default();
        assert!(
            line.contains("after_event=\"") && !line.contains("from the snapshot"),
            "the re-attach did not resume after a stored position: {line}"
        );
    }
    if kind == "agui" {
        // The re-read run came to the stored position: the run's frames
        // have the same SSE ids when read again.
        assert!(
            logs(2).contains("re-read up to the stored position"),
            "{}",
            logs(2)
        );
    }
    // The re-attachment is counted.
    let metrics = reqwest::get(format!("{base}/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let counted = format!("taskwire_upstream_reattachments_total{{protocol=\"{metric}\"}} 1");
    assert!(
        metrics.lines().any(|l| l.starts_with(&counted)),
        "{kind}: {metrics}"
    );
    // One upstream task, completed once.
    let tasks = upstream_tasks(&direct).await;
    assert_eq!(tasks.len(), 1, "{kind}: {tasks:?}");
    assert_eq!(tasks[0].id, ut.id);
    assert_eq!(state(&tasks[0]), pb::TaskState::Completed, "{kind}");
    if kind == "a2a" {
        // Sent to once: the one message id of turn 1.
        let sent: Vec<&str> = tasks[0]
            .history
            .iter()
            .filter(|m| m.role == pb::Role::User as i32)
            .map(|m| m.message_id.as_str())
            .collect();
        assert_eq!(sent, vec![format!("tw-{}-turn-1", t.id).as_str()]);
    }
    drop(second);
    up.stop().await;
}

/// A downstream cancel made while no bridge runs still reaches the upstream:
/// the bridge records the link of a task waiting for input (`running`:
/// whose turn has run upstream for a second); it is killed; the task is
/// canceled through a plain taskwire on the same store; the bridge, started
/// again, cancels the upstream task (and drops the record).
pub(crate) async fn cancel_while_the_bridge_is_down(postgres: bool, running: bool) {
    let (text, waits, upstream_state) = match running {
        false => ("ask what colour?", true, pb::TaskState::InputRequired),
        true => ("sleep 60000", false, pb::TaskState::Working),
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let Some((store, _schema)) = pg::store_in(postgres, dir.path()).await else {
        return;
    };
    let up = serve(&[]).await;
    let direct = a2a_client(&up.base);
    let url = format!("a2a+{}", up.base);
    let bridge = Restartable::new(dir.path(), &["--store", &store, "--upstream", &url]);
    let logs = |n: u32| bridge.logs(n);
    let (mut first, t) = bridge.start_with(text, !waits).await;
    if waits {
        assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    }
    let ut = upstream_task_in(&direct, upstream_state).await;
    eventually_showing(
        "the link record is stored",
        || logs(1).contains("upstream link record stored"),
        || logs(1),
    )
    .await;
    bridge.kill(&mut first).await;

    // No bridge runs: the task is canceled through a taskwire without one.
    let (plain, plain_base) =
        spawn_serve(&["--store", &store], &dir.path().join("stderr-2.log")).await;
    let canceled = a2a_client(&plain_base)
        .cancel_task(&t.id)
        .await
        .expect("cancel")
        .into_inner();
    assert_eq!(state(&canceled), pb::TaskState::Canceled);
    drop(plain);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let still = direct
        .get_task(&ut.id, None)
        .await
        .expect("get")
        .into_inner();
    assert_eq!(
        state(&still),
        upstream_state,
        "nobody told the upstream yet"
    );

    // The bridge again: it cancels the upstream task it finds recorded.
    let (third, _) = bridge.start(3).await;
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let u = direct
            .get_task(&ut.id, None)
            .await
            .expect("get")
            .into_inner();
        if state(&u) == pb::TaskState::Canceled {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "upstream still {:?}:\n{}",
            state(&u),
            logs(3)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Sent by the start-up catch-up (which then reports it).
    eventually_showing(
        "the catch-up reports the cancel",
        || logs(3).contains("canceled=1"),
        || logs(3),
    )
    .await;
    drop(third);
    up.stop().await;
}

mod a_cancel_while_the_bridge_is_down_reaches_the_upstream {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::cancel_while_the_bridge_is_down(false, false).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::cancel_while_the_bridge_is_down(true, false).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_running_upstream() {
        super::cancel_while_the_bridge_is_down(false, true).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_running_upstream() {
        super::cancel_while_the_bridge_is_down(true, true).await
    }
}

/// Runs the kill test over every upstream protocol, on SQLite and (with
/// `TASKWIRE_TEST_POSTGRES_URL`) on PostgreSQL.
macro_rules! killed {
    ($name:ident, $kind:literal) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_restart() {
                super::killed_mid_task($kind, false).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_other_node() {
                super::killed_mid_task($kind, true).await
            }
        }
    };
}
killed!(a_bridge_killed_mid_task_re_attaches_over_a2a, "a2a");
killed!(a_bridge_killed_mid_task_re_attaches_over_mcp, "mcp");
killed!(a_bridge_killed_mid_task_re_attaches_over_agui, "agui");

/// An AG-UI run re-read after the bridge was killed emits nothing twice: the
/// link's cursor (the SSE id of the last event whose outputs are committed,
/// committed with them) marks what the re-read only replays to rebuild the
/// turn (the text held back), so each text message of the upstream run is
/// once in the downstream history. The upstream here streams the run's
/// first eight events and then hangs, and serves the whole run on taskwire's
/// `GET …/runs/{run}/events` (as a taskwire upstream does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_read_agui_run_emits_each_message_once() {
    use axum::http::header::CONTENT_TYPE;
    use futures::StreamExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn events(thread: &str, run: &str) -> Vec<serde_json::Value> {
        let mut v =
            vec![serde_json::json!({"type": "RUN_STARTED", "threadId": thread, "runId": run})];
        for (m, text) in [("m1", "first"), ("m2", "second")] {
            v.push(serde_json::json!({"type": "TEXT_MESSAGE_START", "messageId": m, "role": "assistant"}));
            v.push(
                serde_json::json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": m, "delta": text}),
            );
            v.push(serde_json::json!({"type": "TEXT_MESSAGE_END", "messageId": m}));
        }
        v.push(serde_json::json!({"type": "STEP_STARTED", "stepName": "think"}));
        // What the live stream never sent: the bridge was killed before.
        v.push(serde_json::json!({"type": "STEP_FINISHED", "stepName": "think"}));
        v.push(serde_json::json!({"type": "TEXT_MESSAGE_START", "messageId": "m3", "role": "assistant"}));
        v.push(serde_json::json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m3", "delta": "third"}));
        v.push(serde_json::json!({"type": "TEXT_MESSAGE_END", "messageId": "m3"}));
        v.push(serde_json::json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run}));
        v
    }
    fn sse(events: &[serde_json::Value]) -> String {
        events
            .iter()
            .enumerate()
            .map(|(i, e)| format!("id: {}\ndata: {e}\n\n", i + 1))
            .collect()
    }
    let posts = Arc::new(AtomicUsize::new(0));
    let counted = posts.clone();
    let run = move |body: axum::body::Bytes| {
        let counted = counted.clone();
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            let input: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let thread = input["threadId"].as_str().unwrap_or_default().to_string();
            let run = input["runId"].as_str().unwrap_or_default().to_string();
            let head = sse(&events(&thread, &run)[..8]);
            let body = futures::stream::iter([Ok::<_, std::io::Error>(head)])
                .chain(futures::stream::pending());
            (
                [(CONTENT_TYPE, "text/event-stream")],
                axum::body::Body::from_stream(body),
            )
        }
    };
    let again = |axum::extract::Path((thread, run)): axum::extract::Path<(String, String)>| async move {
        (
            [(CONTENT_TYPE, "text/event-stream")],
            sse(&events(&thread, &run)),
        )
    };
    let app = axum::Router::new()
        .route(
            "/agui",
            axum::routing::get(|| async { "an AG-UI agent" }).post(run),
        )
        .route(
            "/agui/threads/{thread}/runs/{run}/events",
            axum::routing::get(again),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let dir = tempfile::tempdir().expect("tempdir");
    let Some((store, _schema)) = pg::store_in(false, dir.path()).await else {
        return;
    };
    let url = format!("agui+http://{addr}/agui");
    let bridge = Restartable::new(
        dir.path(),
        &["--store", &store, "--upstream", &url, "--lease", "1s"],
    );
    let logs = |n: u32| bridge.logs(n);
    let (mut first, t) = bridge.start_with("think aloud", true).await;
    // The step (event 8) is the last output the live stream had: killed once
    // the cursor after it is stored (committed by the next flush, ms later).
    let stored = "upstream position stored (committed with the event's outputs) task";
    let at_step = |l: &str| l.contains(stored) && l.contains("cursor=8");
    let (second, base) = bridge
        .killed_once(&mut first, 1, "the cursor at the step", |log| {
            log.lines().any(at_step)
        })
        .await;
    let ended = bridge.ended(&base, &t.id, 2).await;
    assert_eq!(
        state(&ended),
        pb::TaskState::Completed,
        "{ended:?}\n{}",
        logs(2)
    );
    assert!(
        logs(2).contains("re-reading the upstream run") && logs(2).contains("after_event=\"8\""),
        "{}",
        logs(2)
    );
    let said: Vec<String> = ended
        .history
        .iter()
        .filter(|m| m.role == pb::Role::Agent as i32)
        .map(|m| a2a::parts_text(&m.parts))
        .collect();
    assert_eq!(said, ["first", "second"], "{ended:?}");
    // The last message of the run is the task's final (status) message.
    assert_eq!(status_text(&ended), "third", "{ended:?}");
    assert_eq!(posts.load(Ordering::SeqCst), 1, "the run was posted again");
    drop(second);
}

/// A TCP relay on 127.0.0.1 to `backend` (`http://HOST:PORT`): while `slow`
/// is set, each chunk the backend sends back waits [`SlowRelay::DELAY`]
/// first (requests pass at once).
pub(crate) struct SlowRelay {
    port: u16,
    slow: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl SlowRelay {
    const DELAY: Duration = Duration::from_secs(2);

    async fn start(backend: &str) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let backend = backend.trim_start_matches("http://").to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind relay");
        let port = listener.local_addr().expect("addr").port();
        let slow = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = slow.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = tokio::net::TcpStream::connect(&backend).await else {
                    continue;
                };
                let flag = flag.clone();
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut cr, &mut sw).await;
                    let _ = sw.shutdown().await;
                });
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        let n = match sr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if flag.load(std::sync::atomic::Ordering::SeqCst) {
                            tokio::time::sleep(SlowRelay::DELAY).await;
                        }
                        if cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = cw.shutdown().await;
                });
            }
        });
        Self { port, slow, task }
    }
}

/// A TCP relay on 127.0.0.1:`port` (0: any) to `backend` (`http://HOST:PORT`)
/// that can be shut, dropping its listener and every connection through it
/// (the upstream "down": connections refused), and opened again on its port.
pub(crate) struct Gate {
    port: u16,
    tasks: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Gate {
    async fn open(port: u16, backend: &str) -> Self {
        let backend = backend.trim_start_matches("http://").to_string();
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind gate");
        let port = listener.local_addr().expect("addr").port();
        let tasks: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>> =
            Default::default();
        let held = tasks.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let Ok(mut server) = tokio::net::TcpStream::connect(&backend).await else {
                    continue;
                };
                let relay = tokio::spawn(async move {
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                });
                held.lock().unwrap_or_else(|e| e.into_inner()).push(relay);
            }
        });
        tasks.lock().unwrap_or_else(|e| e.into_inner()).push(accept);
        Self { port, tasks }
    }

    /// Stops accepting and closes every relayed connection; returns once
    /// they are closed (a connection accepted while the listener was still
    /// open would otherwise be reset after the bridge wrote to it, which is
    /// not the refused connection the tests mean).
    async fn shut(&self) {
        loop {
            let tasks: Vec<_> = self
                .tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..)
                .collect();
            if tasks.is_empty() {
                return;
            }
            for t in &tasks {
                t.abort();
            }
            for t in tasks {
                let _ = t.await;
            }
        }
    }
}

/// Shuts `gate` (the upstream's connections are refused), sends `req` to
/// `bridge` (returning at once), opens the gate again 0.8 s later, and
/// returns the task once it settled. The gate is open again after.
pub(crate) async fn sent_while_the_gate_is_shut(
    bridge: &Running,
    gate: &mut Gate,
    up: &Running,
    mut req: pb::SendMessageRequest,
) -> pb::Task {
    let down = a2a_client(&bridge.base);
    gate.shut().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    req.configuration
        .get_or_insert_with(Default::default)
        .return_immediately = true;
    let t = task_of(down.send_message(req).await.expect("send").into_inner());
    tokio::time::sleep(Duration::from_millis(800)).await;
    *gate = Gate::open(gate.port, &up.base).await;
    settled(&down, &t.id).await
}

/// The upstream cannot be reached when a turn sends (its connections are
/// refused): the bridge sends again with backoff, with the same message id,
/// and once the upstream is back the task completes, with one upstream task.
/// Before, the task failed at once.
pub(crate) async fn a_send_to_an_upstream_briefly_down_is_sent_again(over: Over) {
    // The upstream's card names the gate, so that JSON-RPC calls go through
    // it too (a bridge calls the interface URL of the card).
    let port = free_ports(1)[0];
    let at_gate = format!("http://127.0.0.1:{port}");
    let up = serve(&["--public-url", &at_gate]).await;
    let mut gate = Gate::open(port, &up.base).await;
    let url = upstream_url(&at_gate, over);
    let bridge = serve(&["--upstream", &url]).await;
    let hello = a2a::text_request("hello while down", true);
    let ended = sent_while_the_gate_is_shut(&bridge, &mut gate, &up, hello).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert_eq!(
        artifact_texts(&ended),
        vec![("echo".to_string(), "hello while down".to_string())]
    );
    assert_eq!(upstream_tasks(&a2a_client(&up.base)).await.len(), 1);
    bridge.stop().await;
    up.stop().await;
}

over_both!(a_send_to_an_upstream_briefly_down_is_sent_again);

/// An upstream that stays down (its connections refused past the retries'
/// backoff, about 6 s) fails the bridged task saying so, over each upstream
/// protocol: the status message names what failed and the call, not the
/// upstream's address or the error chain (those are logged). Before, the task
/// failed with a bare "internal error".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_stays_down_fails_the_task_saying_so() {
    async fn case(kind: &'static str) {
        let port = free_ports(1)[0];
        let at_gate = format!("http://127.0.0.1:{port}");
        let up = serve(&["--public-url", &at_gate]).await;
        let gate = Gate::open(port, &up.base).await;
        let url = match kind {
            "a2a" => format!("a2a+{at_gate}"),
            "mcp" => format!("mcp+{at_gate}/mcp#run_script"),
            _ => format!("agui+{at_gate}/agui"),
        };
        let bridge = serve(&["--upstream", &url]).await;
        gate.shut().await;
        let down = a2a_client(&bridge.base);
        let t = task_of(
            down.send_text("hello to no one", true)
                .await
                .expect("send")
                .into_inner(),
        );
        let ended = settled(&down, &t.id).await;
        assert_eq!(state(&ended), pb::TaskState::Failed, "{kind}: {ended:?}");
        let said = status_text(&ended);
        let operation = match kind {
            "a2a" => "SendStreamingMessage",
            "mcp" => "tools/call",
            _ => "run",
        };
        assert_eq!(
            said,
            format!("the upstream agent could not be reached ({operation})"),
            "{kind}"
        );
        assert!(
            upstream_tasks(&a2a_client(&up.base)).await.is_empty(),
            "{kind}"
        );
        bridge.stop().await;
        up.stop().await;
    }
    futures::future::join_all(["a2a", "mcp", "agui"].map(case)).await;
}

/// The upstream refuses connections when a turn makes its first call: an MCP
/// `tools/call` (over the tasks extension, over the 2025-11-25 task methods,
/// and a plain blocking call) or an AG-UI run. These carry no idempotency
/// key, but nothing of the call reached the upstream (no connection was
/// made), so the bridge makes it again with backoff; once the upstream is
/// back the task completes, with one upstream task. The same for the
/// downstream answer to an upstream question. Before, the task failed at
/// once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_call_the_upstream_never_got_is_made_again() {
    use std::sync::Arc;
    for case in ["mcp 2026-07-28", "mcp 2025-11-25", "mcp blocking", "agui"] {
        let up = serve(&[]).await;
        let mut gate = Gate::open(0, &up.base).await;
        let at_gate = format!("http://127.0.0.1:{}", gate.port);
        let bridge = match case {
            "mcp blocking" => {
                let options = taskwire_bridge::UpstreamOptions {
                    mcp_tasks: false,
                    poll_interval: Duration::from_millis(50),
                    ..Default::default()
                };
                let store: Arc<dyn taskwire::core::TaskStore> =
                    Arc::new(taskwire::MemoryStore::new());
                let agent = taskwire_bridge::McpUpstream::discover(
                    &format!("{at_gate}/mcp"),
                    None,
                    &options,
                )
                .await
                .expect("discover")
                .with_store(store.clone());
                assert!(!agent.offers_tasks());
                serve_agent(Arc::new(agent), store).await
            }
            "agui" => serve(&["--upstream", &format!("agui+{at_gate}/agui")]).await,
            mcp => {
                let version = mcp.trim_start_matches("mcp ");
                let url = format!("mcp+{at_gate}/mcp#run_script");
                serve(&["--upstream", &url, "--upstream-mcp-version", version]).await
            }
        };
        let hello = a2a::text_request("hello while down", true);
        let ended = sent_while_the_gate_is_shut(&bridge, &mut gate, &up, hello).await;
        assert_eq!(state(&ended), pb::TaskState::Completed, "{case}: {ended:?}");
        let texts = artifact_texts(&ended);
        assert!(
            texts.len() == 1 && texts[0].1 == "hello while down",
            "{case}: {texts:?}"
        );
        assert_eq!(
            upstream_tasks(&a2a_client(&up.base)).await.len(),
            1,
            "{case}"
        );

        // The downstream answer to an upstream question, carried upstream
        // (an MCP `tasks/update`, a 2025-11-25 elicitation response, a
        // repeated `tools/call`, an AG-UI resume run) while no connection
        // can be made: sent again once it can.
        let down = a2a_client(&bridge.base);
        let t = task_of(
            down.send_text("ask what colour?", false)
                .await
                .expect("send")
                .into_inner(),
        );
        assert_eq!(state(&t), pb::TaskState::InputRequired, "{case}: {t:?}");
        let answer = text_to_task("blue", &t.id);
        let ended = sent_while_the_gate_is_shut(&bridge, &mut gate, &up, answer).await;
        assert_eq!(state(&ended), pb::TaskState::Completed, "{case}: {ended:?}");
        let texts = artifact_texts(&ended);
        assert!(
            texts.iter().any(|(_, t)| t == "answer: blue"),
            "{case}: {texts:?}"
        );
        assert_eq!(
            upstream_tasks(&a2a_client(&up.base)).await.len(),
            2,
            "{case}"
        );
        bridge.stop().await;
        up.stop().await;
    }
}

/// A downstream cancel made while the upstream MCP server is creating the
/// tool call's task (its `tools/call` answer held back by a slow relay)
/// still cancels that task once the answer names it, over the tasks
/// extension and over the 2025-11-25 task methods: the bridge does not give
/// up a call that answers with a task, and a link whose commit the cancel
/// refuses still cancels upstream (36a279d; before it, the upstream task was
/// left running).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_while_the_upstream_creates_its_task_reaches_it() {
    for version in ["2026-07-28", "2025-11-25"] {
        let up = serve(&[]).await;
        let relay = SlowRelay::start(&up.base).await;
        let url = format!("mcp+http://127.0.0.1:{}/mcp", relay.port);
        let bridge = serve(&["--upstream", &url, "--upstream-mcp-version", version]).await;
        let down = a2a_client(&bridge.base);
        let direct = a2a_client(&up.base);
        relay.slow.store(true, std::sync::atomic::Ordering::SeqCst);
        let (t, ut) = sleeping_task(&down, &direct).await;
        // The upstream has made its task; its answer is still in the relay.
        cancel_reaches_upstream(&down, &direct, &t.id, &ut.id, version).await;
        relay.task.abort();
        bridge.stop().await;
        up.stop().await;
    }
}

/// An AG-UI run whose `POST` broke after it was sent (the connection closed
/// before any answer: the upstream may have started the run) is followed on
/// taskwire's run-events path, where the upstream has the run, instead of
/// failing the task; the run is not posted again. Before, the task failed
/// ("the connection to the upstream agent broke (run)"). The upstream here
/// reads each `POST` whole and closes the connection, and serves the run on
/// `GET …/threads/{thread}/runs/{run}/events`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agui_run_whose_post_broke_is_followed_on_its_events_path() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads one request: its head, and its body by `content-length`.
    async fn request(sock: &mut tokio::net::TcpStream) -> Option<String> {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = sock.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < end + length {
            let n = sock.read(&mut chunk).await.ok().filter(|n| *n > 0)?;
            buf.extend_from_slice(&chunk[..n]);
        }
        Some(head)
    }
    async fn answer(sock: &mut tokio::net::TcpStream, content_type: &str, body: &str) {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = sock.write_all(head.as_bytes()).await;
        let _ = sock.write_all(body.as_bytes()).await;
        let _ = sock.shutdown().await;
    }

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let posts = Arc::new(AtomicUsize::new(0));
    let counted = posts.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let Some(head) = request(&mut sock).await else {
                    return;
                };
                let target = head
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_string();
                if head.starts_with("POST") {
                    // The run is taken, and the connection closes unanswered.
                    counted.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                // GET /agui/threads/{thread}/runs/{run}/events
                let parts: Vec<&str> = target.trim_matches('/').split('/').collect();
                if let ["agui", "threads", thread, "runs", run, "events"] = parts[..] {
                    let events = [
                        serde_json::json!({"type": "RUN_STARTED", "threadId": thread, "runId": run}),
                        serde_json::json!({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
                        serde_json::json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "done anyway"}),
                        serde_json::json!({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
                        serde_json::json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run}),
                    ];
                    let sse: String = events
                        .iter()
                        .enumerate()
                        .map(|(i, e)| format!("id: {}\ndata: {e}\n\n", i + 1))
                        .collect();
                    answer(&mut sock, "text/event-stream", &sse).await;
                } else {
                    answer(&mut sock, "text/plain", "an AG-UI agent").await;
                }
            });
        }
    });

    let bridge = serve(&["--upstream", &format!("agui+http://{addr}/agui")]).await;
    let down = a2a_client(&bridge.base);
    let t = task_of(
        down.send_text("hello", true)
            .await
            .expect("send")
            .into_inner(),
    );
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert_eq!(status_text(&ended), "done anyway", "{ended:?}");
    assert_eq!(posts.load(Ordering::SeqCst), 1, "the run was posted again");
    bridge.stop().await;
}
