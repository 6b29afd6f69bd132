//! Bridge mode in front of MCP servers of revision 2025-11-25 (#21, item 1):
//! `initialize` and a session, the experimental task methods (`params.task`,
//! `tasks/get`, `tasks/result`, `tasks/cancel`), and `elicitation/create`
//! requests on a POST's SSE answer.
//!
//! Two upstreams:
//! - taskwire itself, whose MCP adapter still serves 2025-11-25, bridged with
//!   `--upstream-mcp-version 2025-11-25` (it would also answer
//!   `server/discover`): the scripted agent's directives over the 2025-11-25 task
//!   methods, a blocking call with an elicitation on its stream (the library's
//!   `mcp_tasks: false`), and a bridge killed with SIGKILL mid-task that
//!   re-attaches to the same 2025-11-25 task in the same session;
//! - the official Python SDK at 1.30.0 (`conformance/targets/mcp_sdk_server_2025_11_25.py`,
//!   which answers `server/discover` with HTTP 400 "Missing session ID", so
//!   the bridge falls back to 2025-11-25 by itself): an elicitation in a
//!   blocking call (`ask_name`, `ctx.elicit`) and in a task (`task_ask`,
//!   delivered on `tasks/result`), a slow tool, a failing tool, cancels of a
//!   blocking call (`notifications/cancelled`) and of a task (`tasks/cancel`),
//!   over the bridge's A2A and AG-UI surfaces. These are `#[ignore]`d (plain
//!   `cargo test` reports them as ignored); `.ci/test` runs them with
//!   `--include-ignored`, where a missing interpreter or SDK is a failure. The
//!   interpreter is `$TASKWIRE_MCP_PY_2025_11_25_PYTHON`, else the virtualenv
//!   `.ci/setup-mcp-py-2025-11-25.sh` makes (`target/mcp-py-2025-11-25-venv`).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use taskwire_client::a2a::{self, pb, A2aClient};
use taskwire_client::agui::{event_type, AguiClient, ResumeEntry, ResumeStatus, RunAgentInput};

use crate::common::bridge::{
    a2a_client, a2a_send, agui_id, agui_run, artifact_texts, config, eventually, serve,
    serve_agent, settled, state, status_text, task_of, PythonSdk, Restartable, Running, SdkServer,
    LIMIT,
};

/// The SDK server's tools, sorted.
const SDK_TOOLS: [&str; 6] = [
    "ask_name",
    "ask_name_again",
    "fail",
    "slow",
    "task_ask",
    "task_slow",
];
/// The text of `fail`'s tool error (FastMCP prefixes the ToolError's message).
const FAIL_TEXT: &str = "Error executing tool fail: it broke";

/// An A2A `SendMessage` whose one part is `data` (the tool's arguments),
/// returning at once.
async fn a2a_send_data(client: &A2aClient, data: serde_json::Value) -> pb::Task {
    let req: pb::SendMessageRequest = serde_json::from_value(json!({
        "message": {"messageId": a2a::random_id(), "role": "ROLE_USER", "parts": [{"data": data}]},
        "configuration": {"returnImmediately": true}
    }))
    .expect("request");
    task_of(
        tokio::time::timeout(LIMIT, client.send_message(req))
            .await
            .expect("SendMessage answered within LIMIT")
            .expect("SendMessage")
            .into_inner(),
    )
}

/// Every upstream task of an upstream taskwire.
async fn upstream_tasks(up: &A2aClient) -> Vec<pb::Task> {
    up.list_tasks(pb::ListTasksRequest::default())
        .await
        .expect("ListTasks")
        .into_inner()
        .tasks
}

/// The bridge's `/metrics` lines about upstream operations.
async fn upstream_operations(base: &str) -> String {
    reqwest::get(format!("{base}/metrics"))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text")
        .lines()
        .filter(|l| l.starts_with("taskwire_upstream_request_duration_seconds_count"))
        .collect::<Vec<_>>()
        .join("\n")
}

// ---- taskwire behind a bridge that speaks 2025-11-25 to it ----

/// An upstream taskwire and a bridge told to speak 2025-11-25 to its MCP
/// endpoint (`#run_script`).
async fn rev_2025_11_25_pair() -> (Running, Running) {
    let up = serve(&[]).await;
    let url = format!("mcp+{}/mcp#run_script", up.base);
    let bridge = serve(&["--upstream", &url, "--upstream-mcp-version", "2025-11-25"]).await;
    (up, bridge)
}

/// The scripted agent's directives through a 2025-11-25 hop (the 2025-11-25 task
/// methods: taskwire's tools allow tasks): output, failure, a question
/// answered with plain text (its elicitation arrives on `tasks/result` and
/// the answer goes back as the response to it), an authorisation granted
/// downstream, a cancel of a running task,
/// and a cancel of a task waiting for input. The bridge never sent
/// `server/discover`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_11_25_mcp_upstream_runs_the_scripted_directives() {
    let (up, bridge) = rev_2025_11_25_pair().await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let t = a2a_send(&down, "hello over 2025-11-25", None, false).await;
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(
        artifact_texts(&t),
        vec![("result".to_string(), "hello over 2025-11-25".to_string())]
    );

    let t = a2a_send(&down, "fail boom", None, false).await;
    assert_eq!(state(&t), pb::TaskState::Failed, "{t:?}");
    assert!(status_text(&t).contains("boom"), "{t:?}");

    let t = a2a_send(&down, "ask what colour?", None, false).await;
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    assert!(status_text(&t).contains("what colour?"), "{t:?}");
    let t2 = a2a_send(&down, "blue", Some(&t.id), false).await;
    let t2 = if state(&t2) == pb::TaskState::Completed {
        t2
    } else {
        settled(&down, &t.id).await
    };
    assert_eq!(state(&t2), pb::TaskState::Completed, "{t2:?}");
    assert_eq!(
        artifact_texts(&t2),
        vec![("result".to_string(), "answer: blue".to_string())]
    );

    // An authorisation: the upstream's URL elicitation (elicitationId
    // `taskwire.auth/github`) is the bridged task's provider authorisation;
    // the grant goes back as the response accepting it.
    let t = a2a_send(&down, "auth github\nhello after auth", None, false).await;
    assert_eq!(state(&t), pb::TaskState::AuthRequired, "{t:?}");
    let req: pb::SendMessageRequest = serde_json::from_value(json!({
        "message": {
            "messageId": "grant-mcp-2025-11-25-1", "role": "ROLE_USER", "taskId": t.id,
            "parts": [{"text": "granted"}],
            "metadata": {"authorization": {"provider": "github"}}
        }
    }))
    .expect("request");
    down.send_message(req).await.expect("grant");
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert_eq!(
        artifact_texts(&ended),
        vec![("result".to_string(), "hello after auth".to_string())]
    );

    // A downstream cancel of a running task: tasks/cancel upstream.
    let before = upstream_tasks(&direct).await.len();
    let t = a2a_send(&down, "sleep 30000", None, true).await;
    let deadline = Instant::now() + LIMIT;
    let ut = loop {
        let tasks = upstream_tasks(&direct).await;
        if tasks.len() > before {
            if let Some(u) = tasks
                .into_iter()
                .find(|u| state(u) == pb::TaskState::Working)
            {
                break u;
            }
        }
        assert!(Instant::now() < deadline, "no working upstream task");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let canceled = down.cancel_task(&t.id).await.expect("cancel").into_inner();
    assert_eq!(state(&canceled), pb::TaskState::Canceled, "{canceled:?}");
    let deadline = Instant::now() + LIMIT;
    loop {
        let u = direct
            .get_task(&ut.id, None)
            .await
            .expect("GetTask")
            .into_inner();
        if state(&u) == pb::TaskState::Canceled {
            break;
        }
        assert!(Instant::now() < deadline, "upstream not canceled: {u:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A cancel while the bridged task waits for input (no turn runs): the
    // store watcher cancels upstream.
    let t = a2a_send(&down, "ask anything?", None, false).await;
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    down.cancel_task(&t.id).await.expect("cancel");
    let deadline = Instant::now() + LIMIT;
    loop {
        let tasks = upstream_tasks(&direct).await;
        let waiting = tasks
            .iter()
            .filter(|u| state(u) == pb::TaskState::InputRequired)
            .count();
        if waiting == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "{tasks:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // One upstream task per bridged task.
    assert_eq!(upstream_tasks(&direct).await.len(), 6);
    // Spoken in 2025-11-25: the 2025-11-25 task methods, no server/discover.
    let ops = upstream_operations(&bridge.base).await;
    assert!(ops.contains("operation=\"tasks/result\""), "{ops}");
    assert!(
        ops.contains("operation=\"elicitation/create response\""),
        "{ops}"
    );
    assert!(!ops.contains("server/discover"), "{ops}");
    up.stop().await;
    bridge.stop().await;
}

/// A bridge speaking 2025-11-25 to `up` with blocking calls only (the
/// library's `mcp_tasks: false`), serving on the given store.
async fn blocking_2025_11_25_bridge(
    up: &Running,
    store: Arc<dyn taskwire::core::TaskStore>,
) -> Running {
    let options = taskwire_bridge::UpstreamOptions {
        mcp_tasks: false,
        poll_interval: Duration::from_millis(50),
        ..Default::default()
    };
    let agent = taskwire_bridge::McpUpstream::discover_as(
        &format!("{}/mcp", up.base),
        Some("run_script"),
        &options,
        taskwire_bridge::McpVersion::V2025_11_25,
    )
    .await
    .expect("discover")
    .with_store(store.clone());
    assert!(agent.is_2025_11_25());
    assert!(!agent.offers_tasks());
    serve_agent(Arc::new(agent), store).await
}

/// The named loss of a blocking call that waits for an answer: the call is
/// held by the bridge process that made it; a bridge started again on the
/// same store (the first one gone, and its open call with it) fails the task
/// when the answer comes, saying so, instead of calling the tool again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_2025_11_25_call_lost_with_its_bridge_fails_its_task_clearly() {
    let up = serve(&[]).await;
    let store: Arc<dyn taskwire::core::TaskStore> = Arc::new(taskwire::MemoryStore::new());
    let first = blocking_2025_11_25_bridge(&up, store.clone()).await;
    let t = a2a_send(&a2a_client(&first.base), "ask what colour?", None, false).await;
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    first.stop().await;

    let second = blocking_2025_11_25_bridge(&up, store).await;
    let down = a2a_client(&second.base);
    a2a_send(&down, "green", Some(&t.id), false).await;
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Failed, "{ended:?}");
    let why = status_text(&ended);
    assert!(
        why.contains("asked for input inside a blocking call, and that call was lost"),
        "{why}"
    );
    // The named loss's words (`upstream::mcp::LOSS_MCP_2025_11_25_BLOCKING_INPUT`).
    assert!(
        why.contains("a bridge restarted while the call waits for the answer fails the task"),
        "{why}"
    );
    // The tool was called once.
    assert_eq!(upstream_tasks(&a2a_client(&up.base)).await.len(), 1);
    second.stop().await;
    up.stop().await;
}

/// A blocking 2025-11-25 `tools/call` (the library's `mcp_tasks: false`):
/// taskwire answers it with an SSE stream that carries the question as an
/// `elicitation/create` request; the bridged task asks, the turn ends while
/// the call stays open, and the downstream answer is sent as the response to
/// that request, after which the call's result completes the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_2025_11_25_call_answers_its_elicitation_from_the_next_turn() {
    let up = serve(&[]).await;
    let store: Arc<dyn taskwire::core::TaskStore> = Arc::new(taskwire::MemoryStore::new());
    let bridge = blocking_2025_11_25_bridge(&up, store).await;
    let down = a2a_client(&bridge.base);

    let t = a2a_send(&down, "hello, blocking", None, false).await;
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(
        artifact_texts(&t),
        vec![("result".to_string(), "hello, blocking".to_string())]
    );

    let t = a2a_send(&down, "ask what colour?", None, false).await;
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    assert!(status_text(&t).contains("what colour?"), "{t:?}");
    a2a_send(&down, "green", Some(&t.id), false).await;
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert_eq!(
        artifact_texts(&ended),
        vec![("result".to_string(), "answer: green".to_string())]
    );
    // (The metrics recorder is the process's, shared with the other tests:
    // that no task method was used is not checked here; `offers_tasks` above
    // says no tool is called as a task.)
    let ops = upstream_operations(&bridge.base).await;
    assert!(
        ops.contains("operation=\"elicitation/create response\""),
        "{ops}"
    );
    up.stop().await;
    bridge.stop().await;
}

/// A `taskwire` bridge process speaking 2025-11-25, killed with SIGKILL
/// mid-task once the link (upstream task id and session) is committed,
/// re-attaches to the same 2025-11-25 task, in the same session, once the lease
/// lapses (started again on the same SQLite store, or as another node of the
/// same PostgreSQL store): the task completes once, with one upstream task.
/// Then the same with the kill while the bridged task waits for input: the
/// answer, sent by the restarted bridge as the response to the upstream's
/// stored request id, completes it.
async fn killed_mid_2025_11_25_task(postgres: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some((store, _schema)) = crate::pg::store_in(postgres, dir.path()).await else {
        return;
    };
    let up = serve(&[]).await;
    let direct = a2a_client(&up.base);
    let url = format!("mcp+{}/mcp#run_script", up.base);
    let bridge = Restartable::new(
        dir.path(),
        &[
            "--store",
            &store,
            "--upstream",
            &url,
            "--upstream-mcp-version",
            "2025-11-25",
            "--lease",
            "1s",
        ],
    );
    let logs = |n: u32| bridge.logs(n);

    // Killed while the upstream task works.
    let (mut first, base) = bridge.start(1).await;
    let t = a2a_send(&a2a_client(&base), "sleep 3000\nafter the nap", None, true).await;
    eventually("the link is committed", || {
        logs(1).contains("upstream link stored")
    })
    .await;
    bridge.kill(&mut first).await;

    let (mut second, base) = bridge.start(2).await;
    let ended = bridge.ended(&base, &t.id, 2).await;
    assert_eq!(
        state(&ended),
        pb::TaskState::Completed,
        "{ended:?}\nsecond:\n{}",
        logs(2)
    );
    assert!(
        artifact_texts(&ended)
            .iter()
            .any(|(_, text)| text.contains("after the nap")),
        "{ended:?}"
    );
    assert!(
        logs(2).contains("re-attaching to the upstream MCP task (2025-11-25)"),
        "{}",
        logs(2)
    );
    // It asked in the session of the first process (the upstream keeps it):
    // no session was found lost.
    assert!(
        !logs(2).contains("no longer holds the session"),
        "{}",
        logs(2)
    );
    let tasks = upstream_tasks(&direct).await;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(state(&tasks[0]), pb::TaskState::Completed);

    // Killed while the bridged task waits for input.
    let t = a2a_send(&a2a_client(&base), "ask what colour?", None, false).await;
    assert_eq!(
        state(&t),
        pb::TaskState::InputRequired,
        "{t:?}\n{}",
        logs(2)
    );
    bridge.kill(&mut second).await;
    let (third, base) = bridge.start(3).await;
    a2a_send(&a2a_client(&base), "violet", Some(&t.id), false).await;
    let ended = bridge.ended(&base, &t.id, 3).await;
    assert_eq!(
        state(&ended),
        pb::TaskState::Completed,
        "{ended:?}\nthird:\n{}",
        logs(3)
    );
    assert_eq!(
        artifact_texts(&ended),
        vec![("result".to_string(), "answer: violet".to_string())],
        "{}",
        logs(3)
    );
    let tasks = upstream_tasks(&direct).await;
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(
        tasks.iter().all(|u| state(u) == pb::TaskState::Completed),
        "{tasks:?}"
    );
    drop(third);
    up.stop().await;
}

mod a_bridge_killed_mid_2025_11_25_task_re_attaches {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_restart() {
        super::killed_mid_2025_11_25_task(false).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_other_node() {
        super::killed_mid_2025_11_25_task(true).await
    }
}

/// `--upstream-mcp-version` takes the three revisions' words, and needs
/// `--upstream`.
#[test]
fn the_mcp_version_flag_is_checked() {
    use clap::Parser;
    use taskwire::cli::{Cli, Command};
    let parse = |extra: &[&str]| {
        let mut argv = vec!["taskwire", "serve"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).map(|c| match c.command {
            Command::Serve(a) => a.upstream.mcp_version.clone(),
            _ => panic!("not serve"),
        })
    };
    for v in ["auto", "2025-11-25", "2026-07-28"] {
        assert_eq!(
            parse(&[
                "--upstream",
                "mcp+http://127.0.0.1:1/mcp",
                "--upstream-mcp-version",
                v
            ])
            .expect("parse"),
            Some(v.to_string())
        );
    }
    assert!(parse(&[
        "--upstream",
        "mcp+http://127.0.0.1:1/mcp",
        "--upstream-mcp-version",
        "2024-11-05"
    ])
    .is_err());
    assert!(parse(&["--upstream-mcp-version", "2025-11-25"]).is_err());
    assert_eq!(
        "2025-11-25".parse::<taskwire_bridge::McpVersion>().ok(),
        Some(taskwire_bridge::McpVersion::V2025_11_25)
    );
}

// ---- the official Python SDK 1.x (2025-11-25 only) behind the bridge ----

/// The SDK server: `mcp_sdk_server_2025_11_25.py` (Streamable HTTP at `/mcp`) in
/// the virtualenv of `.ci/setup-mcp-py-2025-11-25.sh`. Its bridges
/// (`sdk.bridge(tool)`) have no version flag: the bridge finds out by itself.
const SDK_2025_11_25: PythonSdk = PythonSdk {
    name: "the MCP SDK 1.x server",
    script: "mcp_sdk_server_2025_11_25.py",
    python_var: "TASKWIRE_MCP_PY_2025_11_25_PYTHON",
    venv: "mcp-py-2025-11-25-venv",
    setup: ".ci/setup-mcp-py-2025-11-25.sh",
    needs: "the MCP SDK 1.x (mcp==1.30.0, with mcp.server.experimental) and uvicorn",
    probe: "import mcp.server.fastmcp, mcp.server.experimental.task_context, uvicorn",
    ports: &["--port"],
    path: "/mcp",
    scheme: "mcp",
};

/// The SDK server refuses `server/discover` (it wants a session): the bridge
/// falls back to 2025-11-25 by itself, and its card lists the six tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK 1.x (.ci/setup-mcp-py-2025-11-25.sh); .ci/test runs it with --include-ignored"]
async fn the_bridge_falls_back_to_2025_11_25_and_lists_the_sdk_tools() {
    let sdk = SdkServer::start(&SDK_2025_11_25).await;
    let bridge = sdk.bridge(None).await;
    let (_, card) = A2aClient::discover(config(&bridge.base))
        .await
        .expect("the bridge's card");
    let mut ids: Vec<String> = card.skills.iter().map(|s| s.id.clone()).collect();
    ids.sort();
    assert_eq!(ids, SDK_TOOLS, "{:?}", card.value);
    let ready = reqwest::get(format!("{}/readyz", bridge.base))
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 200, "{:?}", ready.text().await);
    bridge.stop().await;
    drop(sdk);
}

/// `ask_name` (a blocking call whose SSE answer carries `ctx.elicit`'s
/// `elicitation/create`) over A2A: INPUT_REQUIRED with the SDK's question; a
/// plain-text answer fills its one property and completes the task with
/// `hello, Ada`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK 1.x (.ci/setup-mcp-py-2025-11-25.sh); .ci/test runs it with --include-ignored"]
async fn a2a_ask_name_elicitation_round_trips_inside_a_blocking_call() {
    let (sdk, bridge) =
        a2a_elicitation_round_trip("ask_name", "What is your name?", "Ada", "hello, Ada").await;
    bridge.stop().await;
    drop(sdk);
}

/// Over A2A, through a bridge of the SDK's `tool` alone: `greet me` stops in
/// INPUT_REQUIRED asking `question`; the plain-text `answer` completes the task
/// with the one artifact `result`, whose text is `result`. Answers the SDK
/// server and the (running) bridge.
async fn a2a_elicitation_round_trip(
    tool: &str,
    question: &str,
    answer: &str,
    result: &str,
) -> (SdkServer, Running) {
    let sdk = SdkServer::start(&SDK_2025_11_25).await;
    let bridge = sdk.bridge(Some(tool)).await;
    let down = a2a_client(&bridge.base);
    let t = a2a_send(&down, "greet me", None, false).await;
    assert_eq!(
        state(&t),
        pb::TaskState::InputRequired,
        "{t:?}\n{}",
        sdk.logs()
    );
    assert_eq!(status_text(&t), question, "{t:?}");
    answer_completes(&sdk, &down, &t.id, answer, result).await;
    (sdk, bridge)
}

/// Sends the plain-text `answer` to task `id` through `down` and waits for it
/// to complete with the one artifact `result`, whose text is `result`.
async fn answer_completes(sdk: &SdkServer, down: &A2aClient, id: &str, answer: &str, result: &str) {
    a2a_send(down, answer, Some(id), false).await;
    let ended = settled(down, id).await;
    assert_eq!(
        state(&ended),
        pb::TaskState::Completed,
        "{ended:?}\n{}",
        sdk.logs()
    );
    assert_eq!(
        artifact_texts(&ended),
        vec![("result".to_string(), result.to_string())],
        "{ended:?}"
    );
}

/// `task_ask` (a 2025-11-25 task whose elicitation is delivered on
/// `tasks/result`, related to the task) over A2A.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK 1.x (.ci/setup-mcp-py-2025-11-25.sh); .ci/test runs it with --include-ignored"]
async fn a2a_task_ask_elicitation_round_trips_through_tasks_result() {
    let (sdk, bridge) = a2a_elicitation_round_trip(
        "task_ask",
        "What is your name, task?",
        "Bo",
        "hello from a task, Bo",
    )
    .await;
    let ops = upstream_operations(&bridge.base).await;
    assert!(ops.contains("operation=\"tasks/get\""), "{ops}");
    bridge.stop().await;
    drop(sdk);
}

/// A bridge in front of the SDK's `tool` (2025-11-25, found by itself),
/// serving on `store`.
async fn sdk_bridge_on(
    sdk: &SdkServer,
    tool: &str,
    store: Arc<dyn taskwire::core::TaskStore>,
) -> Running {
    let agent = taskwire_bridge::McpUpstream::discover_as(
        &sdk.endpoint,
        Some(tool),
        &taskwire_bridge::UpstreamOptions::default(),
        taskwire_bridge::McpVersion::Auto,
    )
    .await
    .expect("discover")
    .with_store(store.clone());
    assert!(agent.is_2025_11_25());
    serve_agent(Arc::new(agent), store).await
}

/// `ask_name_again` is marked idempotent: when the bridge that holds its
/// blocking call waiting for the answer is gone, the next bridge on the same
/// store calls the tool again and answers its repeated question with the
/// answer the caller gave, instead of failing the task
/// (`LOSS_MCP_2025_11_25_BLOCKING_INPUT`'s exception). `ask_name`, not marked,
/// still fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK 1.x (.ci/setup-mcp-py-2025-11-25.sh); .ci/test runs it with --include-ignored"]
async fn an_idempotent_blocking_call_lost_with_its_bridge_is_made_again() {
    let sdk = SdkServer::start(&SDK_2025_11_25).await;
    for (tool, idempotent) in [("ask_name_again", true), ("ask_name", false)] {
        let store: Arc<dyn taskwire::core::TaskStore> = Arc::new(taskwire::MemoryStore::new());
        let first = sdk_bridge_on(&sdk, tool, store.clone()).await;
        let t = a2a_send(&a2a_client(&first.base), "greet me", None, false).await;
        assert_eq!(state(&t), pb::TaskState::InputRequired, "{tool}: {t:?}");
        first.stop().await;

        let second = sdk_bridge_on(&sdk, tool, store).await;
        let down = a2a_client(&second.base);
        if idempotent {
            answer_completes(&sdk, &down, &t.id, "Ada", "hello again, Ada").await;
            assert_eq!(
                sdk.logs().matches("event: ask_name_again called").count(),
                2,
                "{}",
                sdk.logs()
            );
        } else {
            a2a_send(&down, "Ada", Some(&t.id), false).await;
            let ended = settled(&down, &t.id).await;
            assert_eq!(state(&ended), pb::TaskState::Failed, "{ended:?}");
            assert!(
                status_text(&ended).contains("that call was lost"),
                "{}",
                status_text(&ended)
            );
        }
        second.stop().await;
    }
    drop(sdk);
}

/// `ask_name` over AG-UI: the run ends with an interrupt carrying the SDK's
/// question and form; a resume answering the form (`{"name": "Ada"}`)
/// completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK 1.x (.ci/setup-mcp-py-2025-11-25.sh); .ci/test runs it with --include-ignored"]
async fn agui_ask_name_interrupts_and_a_resume_completes_it() {
    let sdk = SdkServer::start(&SDK_2025_11_25).await;
    let bridge = sdk.bridge(Some("ask_name")).await;
    let agui = AguiClient::new(config(&bridge.base)).expect("agui client");
    let thread = agui_id("thread");
    let first = RunAgentInput::new(&thread, agui_id("run")).user_message(agui_id("m"), "greet me");
    let events = agui_run(&agui, &first).await;
    let end = events.last().expect("events");
    assert_eq!(
        end.kind,
        event_type::RUN_FINISHED,
        "{:?}\n{}",
        end.raw,
        sdk.logs()
    );
    assert_eq!(
        end.outcome_type().as_deref(),
        Some("interrupt"),
        "{:?}",
        end.raw
    );
    let interrupts = end.interrupts();
    assert_eq!(interrupts.len(), 1, "{:?}", end.raw);
    let interrupt = &interrupts[0];
    assert_eq!(interrupt["message"], "What is your name?", "{interrupt}");
    assert_eq!(
        interrupt["responseSchema"]["properties"]["name"]["type"], "string",
        "{interrupt}"
    );
    let interrupt_id = interrupt["id"].as_str().expect("interrupt id").to_string();
    assert!(
        interrupt_id.ends_with("/input/upstream-elicitation-1-0"),
        "{interrupt_id}"
    );
    let mut second = RunAgentInput::new(&thread, agui_id("run")).resume(vec![ResumeEntry {
        interrupt_id,
        status: ResumeStatus::Resolved.into(),
        payload: Some(json!({"name": "Ada"})),
        metadata: None,
    }]);
    second.messages = first.messages.clone();
    let events = agui_run(&agui, &second).await;
    let end = events.last().expect("events");
    assert_eq!(
        end.outcome_type().as_deref(),
        Some("success"),
        "{:?}\n{}",
        end.raw,
        sdk.logs()
    );
    let all: Vec<String> = events.iter().map(|e| e.raw.to_string()).collect();
    assert!(
        all.iter().any(|e| e.contains("hello, Ada")),
        "no `hello, Ada` among the events: {all:#?}"
    );
    bridge.stop().await;
    drop(sdk);
}

/// `slow` (blocking) and `task_slow` (a task, polled with `tasks/get`) over
/// A2A complete after the SDK's two seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK 1.x (.ci/setup-mcp-py-2025-11-25.sh); .ci/test runs it with --include-ignored"]
async fn a2a_slow_tools_complete_after_the_sleep() {
    let sdk = SdkServer::start(&SDK_2025_11_25).await;
    for (tool, text) in [("slow", "slept 2s"), ("task_slow", "slept 2s as a task")] {
        let bridge = sdk.bridge(Some(tool)).await;
        let down = a2a_client(&bridge.base);
        let started = Instant::now();
        let done = a2a_send(&down, "take your time", None, false).await;
        let done = if state(&done) == pb::TaskState::Completed {
            done
        } else {
            settled(&down, &done.id).await
        };
        let took = started.elapsed();
        assert_eq!(
            state(&done),
            pb::TaskState::Completed,
            "{tool}: {done:?}\n{}",
            sdk.logs()
        );
        assert!(took >= Duration::from_secs(2), "{tool}: after {took:?}");
        assert_eq!(
            artifact_texts(&done),
            vec![("result".to_string(), text.to_string())],
            "{tool}"
        );
        bridge.stop().await;
    }
    drop(sdk);
}

/// `fail` over A2A and AG-UI: the SDK's tool error text, as is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK 1.x (.ci/setup-mcp-py-2025-11-25.sh); .ci/test runs it with --include-ignored"]
async fn fail_ends_failed_with_the_sdk_text_over_a2a_and_agui() {
    let sdk = SdkServer::start(&SDK_2025_11_25).await;
    let bridge = sdk.bridge(Some("fail")).await;
    let done = a2a_send(&a2a_client(&bridge.base), "go", None, false).await;
    assert_eq!(state(&done), pb::TaskState::Failed, "{done:?}");
    assert_eq!(status_text(&done), FAIL_TEXT, "{done:?}");
    let agui = AguiClient::new(config(&bridge.base)).expect("agui client");
    let input =
        RunAgentInput::new(agui_id("thread"), agui_id("run")).user_message(agui_id("m"), "go");
    let events = agui_run(&agui, &input).await;
    let end = events.last().expect("events");
    assert_eq!(end.kind, event_type::RUN_ERROR, "{:?}", end.raw);
    assert_eq!(end.raw["message"], FAIL_TEXT, "{:?}", end.raw);
    bridge.stop().await;
    drop(sdk);
}

/// A downstream cancel of a blocking `slow` call sends
/// `notifications/cancelled` (the SDK cancels the tool: `slow cancelled` in
/// its log), and of a `task_slow` task `tasks/cancel`; both bridged tasks end
/// CANCELED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "interop: needs the Python MCP SDK 1.x (.ci/setup-mcp-py-2025-11-25.sh); .ci/test runs it with --include-ignored"]
async fn cancels_reach_the_sdk_for_blocking_calls_and_tasks() {
    let sdk = SdkServer::start(&SDK_2025_11_25).await;
    for tool in ["slow", "task_slow"] {
        let bridge = sdk.bridge(Some(tool)).await;
        let down = a2a_client(&bridge.base);
        let t = a2a_send_data(&down, json!({"seconds": 30})).await;
        // Let the call reach the tool.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let canceled = down.cancel_task(&t.id).await.expect("cancel").into_inner();
        assert_eq!(state(&canceled), pb::TaskState::Canceled, "{canceled:?}");
        let ops = {
            let deadline = Instant::now() + LIMIT;
            loop {
                let ops = upstream_operations(&bridge.base).await;
                let want = match tool {
                    "slow" => "operation=\"notifications/cancelled\"",
                    _ => "operation=\"tasks/cancel\"",
                };
                if ops.contains(want) {
                    break ops;
                }
                assert!(Instant::now() < deadline, "{tool}: {ops}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        if tool == "slow" {
            eventually("the SDK cancels slow", || {
                sdk.logs().contains("event: slow cancelled")
            })
            .await;
        }
        let _ = ops;
        bridge.stop().await;
    }
    drop(sdk);
}
