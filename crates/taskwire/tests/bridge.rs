//! Bridge mode (#21): a `taskwire serve --upstream a2a+http://…` (or
//! `a2a+grpc://…`) in front of another taskwire running the scripted agent,
//! driven through the bridge's own surfaces (A2A JSON-RPC, MCP and CAS, with
//! taskwire-client) and checked against the upstream directly. The lifecycle
//! tests run once per upstream binding (`mod jsonrpc` and `mod grpc` of each).

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::time::Duration;
use taskwire_client::A2aBinding as _;

use clap::Parser;
use taskwire::cli::{Cli, Command};
use taskwire_client::a2a::{self, pb, A2aClient};
use taskwire_client::cas::{CasClient, CasInput, CasPhase, TerminalReason};
use taskwire_client::ClientConfig;

use common::bridge::{
    a2a_client, artifact_texts, config, eventually_showing, free_ports, serve, serve_agent,
    settled, spawn_serve, state, status_text, task_of, Restartable, Running, LIMIT,
};

/// The binding the bridge calls its upstream over.
#[derive(Clone, Copy, Debug)]
enum Over {
    /// `a2a+http://…`.
    JsonRpc,
    /// `a2a+grpc://host:port` (taskwire serves gRPC on its one port).
    Grpc,
}

/// The `--upstream` URL of a taskwire at `base` over `over`.
fn upstream_url(base: &str, over: Over) -> String {
    match over {
        Over::JsonRpc => format!("a2a+{base}"),
        Over::Grpc => format!("a2a+grpc://{}", base.trim_start_matches("http://")),
    }
}

/// An upstream taskwire (scripted agent) and a bridging taskwire in front of
/// it, calling it over `over`.
async fn pair_over(over: Over) -> (Running, Running) {
    let up = serve(&[]).await;
    let url = upstream_url(&up.base, over);
    let bridge = serve(&["--upstream", &url]).await;
    (up, bridge)
}

/// Runs a lifecycle test once per upstream binding.
macro_rules! over_both {
    ($case:ident) => {
        mod $case {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn jsonrpc() {
                super::$case(super::Over::JsonRpc).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn grpc() {
                super::$case(super::Over::Grpc).await
            }
        }
    };
}

/// Every task the upstream holds (the bridge's caller is the local principal).
async fn upstream_tasks(up: &A2aClient) -> Vec<pb::Task> {
    up.list_tasks(pb::ListTasksRequest {
        include_artifacts: Some(true),
        history_length: Some(10),
        ..Default::default()
    })
    .await
    .expect("upstream ListTasks")
    .into_inner()
    .tasks
}

/// The one task of the upstream, once it is in `want` (within LIMIT).
async fn upstream_task_in(up: &A2aClient, want: pb::TaskState) -> pb::Task {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let tasks = upstream_tasks(up).await;
        assert!(tasks.len() <= 1, "more than one upstream task: {tasks:?}");
        if let Some(t) = tasks.first() {
            if state(t) == want {
                return t.clone();
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream task did not reach {want:?}: {tasks:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A downstream task running `sleep 30000` (sent returning at once), and the
/// upstream's task for it once it is working.
async fn sleeping_task(down: &A2aClient, direct: &A2aClient) -> (pb::Task, pb::Task) {
    let t = task_of(
        down.send_text("sleep 30000", true)
            .await
            .expect("send")
            .into_inner(),
    );
    let ut = upstream_task_in(direct, pb::TaskState::Working).await;
    (t, ut)
}

/// Cancels downstream task `id`: it answers canceled, and the upstream's one
/// task, `upstream`, ends canceled (`what` names the case in failures).
async fn cancel_reaches_upstream(
    down: &A2aClient,
    direct: &A2aClient,
    id: &str,
    upstream: &str,
    what: &str,
) {
    let canceled = down.cancel_task(id).await.expect("cancel").into_inner();
    assert_eq!(state(&canceled), pb::TaskState::Canceled, "{what}");
    assert_eq!(
        upstream_task_in(direct, pb::TaskState::Canceled).await.id,
        upstream,
        "{what}"
    );
}

fn text_to_task(text: &str, task_id: &str) -> pb::SendMessageRequest {
    let mut m = a2a::text_message(text);
    m.task_id = task_id.to_string();
    a2a::send_request(m)
}

over_both!(a_plain_task_completes_with_the_upstream_output);
async fn a_plain_task_completes_with_the_upstream_output(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let t = task_of(
        down.send_text("hello through the bridge", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    let ut = upstream_task_in(&direct, pb::TaskState::Completed).await;
    assert_eq!(
        artifact_texts(&ut),
        vec![("echo".to_string(), "hello through the bridge".to_string())]
    );
    // The downstream output is what the upstream produced.
    assert_eq!(artifact_texts(&t), artifact_texts(&ut));
    assert_eq!(t.artifacts[0].artifact_id, ut.artifacts[0].artifact_id);
    // The upstream message id is derived from the downstream task and turn.
    let first = ut.history.first().expect("upstream history");
    assert_eq!(first.message_id, format!("tw-{}-turn-1", t.id));
    // A streaming send through the bridge: chunked upstream artifact arrives whole.
    let req = a2a::send_request(a2a::text_message("stream 3"));
    let events = down
        .send_streaming_message(req)
        .await
        .expect("stream")
        .collect_all()
        .await
        .expect("events");
    let last = events.iter().filter_map(|e| e.state()).next_back();
    assert_eq!(last, Some(pb::TaskState::Completed));
    let id = events
        .iter()
        .find_map(|e| e.task_id().map(str::to_string))
        .expect("task id");
    let got = down.get_task(&id, None).await.expect("get").into_inner();
    let ups = upstream_tasks(&direct).await;
    let ut = ups
        .iter()
        .find(|t| t.artifacts.iter().any(|a| a.name == "stream"))
        .expect("the upstream stream task");
    assert_eq!(state(ut), pb::TaskState::Completed);
    // Three chunks upstream, the same three parts downstream.
    assert_eq!(ut.artifacts[0].parts.len(), 3);
    assert_eq!(got.artifacts.len(), 1);
    assert_eq!(got.artifacts[0].artifact_id, ut.artifacts[0].artifact_id);
    assert_eq!(got.artifacts[0].parts, ut.artifacts[0].parts);
    assert_eq!(
        a2a::parts_text(&got.artifacts[0].parts).replace("\n\n", "\n"),
        "chunk 1 of 3\nchunk 2 of 3\nchunk 3 of 3\n"
    );
    up.stop().await;
    bridge.stop().await;
}

over_both!(input_required_round_trips_over_a2a);
async fn input_required_round_trips_over_a2a(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let t = task_of(
        down.send_text("ask what colour?", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    assert_eq!(status_text(&t), "what colour?");
    let ut = upstream_task_in(&direct, pb::TaskState::InputRequired).await;

    // The downstream answer goes upstream, to the same upstream task.
    let t2 = task_of(
        down.send_message(text_to_task("blue", &t.id))
            .await
            .expect("answer")
            .into_inner(),
    );
    assert_eq!(t2.id, t.id);
    assert_eq!(state(&t2), pb::TaskState::Completed, "{t2:?}");
    assert_eq!(
        artifact_texts(&t2),
        vec![("answer".to_string(), "answer: blue".to_string())]
    );
    let ut2 = upstream_task_in(&direct, pb::TaskState::Completed).await;
    assert_eq!(ut2.id, ut.id, "the answer continued the same upstream task");
    assert_eq!(artifact_texts(&ut2), artifact_texts(&t2));
    up.stop().await;
    bridge.stop().await;
}

over_both!(input_required_round_trips_over_cas);
async fn input_required_round_trips_over_cas(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let cas = CasClient::new(config(&bridge.base)).expect("cas client");
    let direct = a2a_client(&up.base);

    let created = cas
        .create_task(&CasInput::text("ask favourite number?"), None)
        .await
        .expect("create");
    let id = created.id.clone();
    let idle = cas
        .wait_until(&id, LIMIT, |s| s.status.phase == CasPhase::Idle)
        .await
        .expect("idle");
    assert_eq!(idle.status.phase, CasPhase::Idle);
    upstream_task_in(&direct, pb::TaskState::InputRequired).await;

    cas.send_input(&id, &CasInput::text("7"), None)
        .await
        .expect("input");
    let done = cas
        .wait_until(&id, LIMIT, |s| s.is_terminal())
        .await
        .expect("terminal");
    assert_eq!(done.status.terminal_reason, Some(TerminalReason::Completed));
    // The same task over the bridge's A2A surface carries the upstream's answer artifact.
    let t = a2a_client(&bridge.base)
        .get_task(&id, None)
        .await
        .expect("get")
        .into_inner();
    assert_eq!(
        artifact_texts(&t),
        vec![("answer".to_string(), "answer: 7".to_string())]
    );
    let ut = upstream_task_in(&direct, pb::TaskState::Completed).await;
    assert_eq!(artifact_texts(&ut), artifact_texts(&t));
    up.stop().await;
    bridge.stop().await;
}

over_both!(the_upstream_skill_is_an_mcp_tool_and_input_round_trips_over_mcp);
async fn the_upstream_skill_is_an_mcp_tool_and_input_round_trips_over_mcp(over: Over) {
    use taskwire_client::mcp::{elicit_accept, McpClient, McpTaskStatus, ToolCallOutcome};
    let (up, bridge) = pair_over(over).await;
    let direct = a2a_client(&up.base);
    let mcp = McpClient::new(config(&bridge.base)).expect("mcp client");
    let tools = mcp.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["run_script"]);

    let created = mcp
        .call_tool("run_script", serde_json::json!({"text": "ask your name?"}))
        .await
        .expect("tools/call");
    let id = match &created.value {
        ToolCallOutcome::Task(t) => t.task_id.clone(),
        other => panic!("expected a task, got {other:?}"),
    };
    let asked = mcp.wait_task(&id, LIMIT).await.expect("wait");
    assert_eq!(
        asked.status,
        McpTaskStatus::InputRequired,
        "{:?}",
        asked.raw
    );
    let keys: Vec<String> = asked
        .input_requests
        .clone()
        .expect("inputRequests")
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, vec!["upstream-input-1".to_string()]);
    upstream_task_in(&direct, pb::TaskState::InputRequired).await;

    // The keyed answer goes upstream as the reply to the upstream's question.
    let mut answers = std::collections::BTreeMap::new();
    let mut answer = serde_json::Map::new();
    answer.insert("answer".into(), "Ada".into());
    answers.insert(keys[0].clone(), elicit_accept(answer));
    mcp.update_task(&id, answers).await.expect("tasks/update");
    let done = mcp.wait_task(&id, LIMIT).await.expect("wait");
    assert_eq!(done.status, McpTaskStatus::Completed, "{:?}", done.raw);
    assert!(
        done.result
            .as_ref()
            .expect("result")
            .text()
            .contains("answer: Ada"),
        "{:?}",
        done.raw
    );
    let ut = upstream_task_in(&direct, pb::TaskState::Completed).await;
    assert_eq!(
        artifact_texts(&ut),
        vec![("answer".to_string(), "answer: Ada".to_string())]
    );
    up.stop().await;
    bridge.stop().await;
}

over_both!(failing_and_rejecting_directives_end_the_same_way);
async fn failing_and_rejecting_directives_end_the_same_way(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let down = a2a_client(&bridge.base);

    let t = task_of(
        down.send_text("fail boom", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Failed, "{t:?}");
    assert_eq!(status_text(&t), "boom");

    let t = task_of(
        down.send_text("reject not today", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Rejected, "{t:?}");
    assert_eq!(status_text(&t), "not today");

    // Over CAS: the failure is terminal / errored.
    let cas = CasClient::new(config(&bridge.base)).expect("cas client");
    let created = cas
        .create_task(&CasInput::text("fail again"), None)
        .await
        .expect("create");
    let done = cas
        .wait_until(&created.id, LIMIT, |s| s.is_terminal())
        .await
        .expect("terminal");
    assert_eq!(done.status.terminal_reason, Some(TerminalReason::Errored));
    up.stop().await;
    bridge.stop().await;
}

over_both!(a_downstream_cancel_cancels_the_upstream_task);
async fn a_downstream_cancel_cancels_the_upstream_task(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let (t, ut) = sleeping_task(&down, &direct).await;
    cancel_reaches_upstream(&down, &direct, &t.id, &ut.id, "").await;
    up.stop().await;
    bridge.stop().await;
}

over_both!(a_downstream_cancel_while_waiting_for_input_cancels_the_upstream_task);
async fn a_downstream_cancel_while_waiting_for_input_cancels_the_upstream_task(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let t = task_of(
        down.send_text("ask anything?", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    let ut = upstream_task_in(&direct, pb::TaskState::InputRequired).await;
    // No turn runs now: the bridge's watcher of the store cancels upstream.
    cancel_reaches_upstream(&down, &direct, &t.id, &ut.id, "").await;
    up.stop().await;
    bridge.stop().await;
}

over_both!(upstream_auth_required_becomes_a_provider_authorisation);
async fn upstream_auth_required_becomes_a_provider_authorisation(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);
    let cas = CasClient::new(config(&bridge.base)).expect("cas client");

    let t = task_of(
        down.send_text("auth github\nhello after auth", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::AuthRequired, "{t:?}");
    assert_eq!(status_text(&t), "authorization required: github");
    upstream_task_in(&direct, pb::TaskState::AuthRequired).await;
    // CAS shows it as a user_auth_required notification for the provider `upstream`.
    let status = cas.status(&t.id).await.expect("cas status");
    let providers: Vec<Option<String>> = status
        .status
        .notifications
        .iter()
        .map(|n| n.provider.clone())
        .collect();
    assert_eq!(
        providers,
        vec![Some("upstream".to_string())],
        "{:?}",
        status.raw
    );

    // A message granting both `upstream` (downstream) and `github` (carried
    // upstream in the message's metadata) lets both continue.
    let req: pb::SendMessageRequest = serde_json::from_value(serde_json::json!({
        "message": {
            "messageId": "grant-1", "role": "ROLE_USER", "taskId": t.id,
            "parts": [{"text": "granted"}],
            "metadata": {"authorization": {"providers": ["upstream", "github"]}}
        }
    }))
    .expect("request");
    down.send_message(req).await.expect("grant");
    let ended = down
        .wait_task(&t.id, LIMIT)
        .await
        .expect("wait")
        .into_inner();
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert_eq!(
        artifact_texts(&ended),
        vec![("echo".to_string(), "hello after auth".to_string())]
    );
    upstream_task_in(&direct, pb::TaskState::Completed).await;
    up.stop().await;
    bridge.stop().await;
}

over_both!(an_upstream_cancel_ends_the_downstream_task_canceled);
async fn an_upstream_cancel_ends_the_downstream_task_canceled(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let (t, ut) = sleeping_task(&down, &direct).await;
    direct.cancel_task(&ut.id).await.expect("cancel upstream");
    let ended = down
        .wait_task(&t.id, LIMIT)
        .await
        .expect("wait")
        .into_inner();
    assert_eq!(state(&ended), pb::TaskState::Canceled, "{ended:?}");
    up.stop().await;
    bridge.stop().await;
}

over_both!(the_bridge_card_lists_the_upstream_skills);
async fn the_bridge_card_lists_the_upstream_skills(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let upstream_card = a2a_client(&up.base)
        .agent_card()
        .await
        .expect("upstream card");
    let card = a2a_client(&bridge.base)
        .agent_card()
        .await
        .expect("bridge card");
    assert_eq!(card.name, upstream_card.name);
    let ids = |c: &pb::AgentCard| {
        c.skills
            .iter()
            .map(|s| (s.id.clone(), s.name.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&card), ids(&upstream_card));
    assert_eq!(
        ids(&card),
        vec![("run_script".to_string(), "Run a script".to_string())]
    );
    // The bridge's interfaces are its own, not the upstream's.
    let url = a2a::interface_url(&card, a2a::BINDING_JSONRPC).expect("jsonrpc url");
    assert!(url.starts_with(&bridge.base), "{url}");
    up.stop().await;
    bridge.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_token_is_sent_as_a_bearer_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "up-secret bridge-user\n").expect("tokens");
    let tokens = tokens.to_string_lossy().to_string();
    let up = serve(&["--auth-tokens", &tokens]).await;
    let url = format!("a2a+{}", up.base);

    let with = serve(&["--upstream", &url, "--upstream-token", "up-secret"]).await;
    let t = task_of(
        a2a_client(&with.base)
            .send_text("hello", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(artifact_texts(&t)[0].1, "hello");

    // Without the token the upstream refuses the bridge: the task fails.
    let without = serve(&["--upstream", &url]).await;
    let t = task_of(
        a2a_client(&without.base)
            .send_text("hello", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Failed, "{t:?}");
    up.stop().await;
    with.stop().await;
    without.stop().await;
}

fn serve_args(argv: &[&str]) -> Result<taskwire::cli::ServeArgs, clap::Error> {
    let mut full = vec!["taskwire", "serve"];
    full.extend_from_slice(argv);
    Cli::try_parse_from(full).map(|c| match c.command {
        Command::Serve(a) => a,
        _ => panic!("parsed as another command"),
    })
}

/// What `taskwire serve --listen 127.0.0.1:0 --store memory:// ARGV…` stops
/// with at start (within LIMIT); panics if it starts.
async fn refused_at_start(argv: &[&str]) -> String {
    let mut full = vec!["--listen", "127.0.0.1:0", "--store", "memory://"];
    full.extend_from_slice(argv);
    let args = serve_args(&full).expect("parse");
    match tokio::time::timeout(LIMIT, taskwire::cli::build_server(&args)).await {
        Ok(Ok(_)) => panic!("started: {argv:?}"),
        Ok(Err(e)) => e.to_string(),
        Err(_) => panic!("no answer within {LIMIT:?}: {argv:?}"),
    }
}

#[tokio::test]
async fn bad_upstreams_are_clear_errors() {
    let build = |url: &'static str| async move { refused_at_start(&["--upstream", url]).await };
    let e = build("mcp+http://127.0.0.1:1/mcp#run_script").await;
    assert!(e.contains("discovering"), "{e}");
    let e = build("agui+http://127.0.0.1:1/agui").await;
    assert!(e.contains("discovering"), "{e}");
    let e = build("http://127.0.0.1:1").await;
    assert!(e.contains("unknown upstream scheme"), "{e}");
    // Nothing listens on port 1: discovery fails at start.
    let e = build("a2a+http://127.0.0.1:1").await;
    assert!(e.contains("discovering"), "{e}");
    let e = build("a2a+grpc://127.0.0.1:1").await;
    assert!(e.contains("discovering"), "{e}");
    let e = build("a2a+grpc://127.0.0.1").await;
    assert!(e.contains("needs a port"), "{e}");

    assert!(serve_args(&["--upstream-token", "t"]).is_err());
    assert!(serve_args(&["--upstream", "a2a+http://h", "--agent", "tck"]).is_err());
    let args = serve_args(&["--upstream", "a2a+http://h", "--upstream-token", "t"]).expect("parse");
    assert_eq!(args.upstream.url, vec!["a2a+http://h".to_string()]);
    assert_eq!(args.upstream.token.as_deref(), Some("t"));
}

/// The upstream link is stored before anything else happens upstream: a
/// bridging `taskwire` process killed mid-task (SIGKILL) re-attaches to the
/// upstream task once the lease lapses (started again on the same SQLite
/// store, or as another node of the same PostgreSQL store), instead of
/// sending again; the task completes once, with one upstream task. Over each
/// upstream protocol.
async fn killed_mid_task(kind: &str, postgres: bool) {
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
async fn cancel_while_the_bridge_is_down(postgres: bool, running: bool) {
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

// ---- MCP upstreams (`mcp+http://…/mcp[#tool]`) ----

/// An upstream taskwire and a bridge calling its MCP endpoint (`suffix`: a
/// `#tool`, or nothing).
async fn mcp_pair(suffix: &str) -> (Running, Running) {
    let up = serve(&[]).await;
    let url = format!("mcp+{}/mcp{suffix}", up.base);
    let bridge = serve(&["--upstream", &url]).await;
    (up, bridge)
}

/// Every directive of the scripted agent through an MCP upstream, driven over
/// A2A: output, chunks, failure, rejection, a question answered with plain
/// text, an authorisation granted downstream and carried upstream, a review.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_upstream_runs_every_directive() {
    let (up, bridge) = mcp_pair("#run_script").await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);
    let send = |text: &'static str| {
        let down = down.clone();
        async move {
            task_of(
                down.send_text(text, false)
                    .await
                    .expect("send")
                    .into_inner(),
            )
        }
    };

    let t = send("hello over mcp").await;
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(
        artifact_texts(&t),
        vec![("result".to_string(), "hello over mcp".to_string())]
    );
    let ut = upstream_task_in(&direct, pb::TaskState::Completed).await;
    assert_eq!(
        artifact_texts(&ut),
        vec![("echo".to_string(), "hello over mcp".to_string())]
    );

    // Three chunks upstream arrive as three text blocks of one result.
    let t = send("stream 3").await;
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(t.artifacts.len(), 1, "{t:?}");
    assert_eq!(t.artifacts[0].parts.len(), 3, "{t:?}");
    assert!(a2a::parts_text(&t.artifacts[0].parts).contains("chunk 3 of 3"));

    let t = send("fail boom").await;
    assert_eq!(state(&t), pb::TaskState::Failed, "{t:?}");
    assert!(status_text(&t).contains("boom"), "{t:?}");
    // MCP has no rejected: an upstream rejection arrives as a failure.
    let t = send("reject not today").await;
    assert_eq!(state(&t), pb::TaskState::Failed, "{t:?}");
    assert!(status_text(&t).contains("not today"), "{t:?}");

    // A question: the upstream's form becomes the bridged task's input
    // request; a plain-text answer fills its one property.
    let t = send("ask what colour?").await;
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    assert!(status_text(&t).contains("what colour?"), "{t:?}");
    let t2 = task_of(
        down.send_message(text_to_task("blue", &t.id))
            .await
            .expect("answer")
            .into_inner(),
    );
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

    // An authorisation: the upstream's URL elicitation is the bridged task's
    // provider authorisation; the grant goes upstream.
    let t = send("auth github\nhello after auth").await;
    assert_eq!(state(&t), pb::TaskState::AuthRequired, "{t:?}");
    let req: pb::SendMessageRequest = serde_json::from_value(serde_json::json!({
        "message": {
            "messageId": "grant-mcp-1", "role": "ROLE_USER", "taskId": t.id,
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

    // A review: the upstream's confirmation form, approved with a word.
    let t = send("review\nreviewed text").await;
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    down.send_message(text_to_task("yes", &t.id))
        .await
        .expect("approve");
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert_eq!(artifact_texts(&ended)[0].1, "reviewed text");

    // An upstream refusal (the tool's required `text` is missing: the message
    // has only data) fails the bridged task with the upstream's own words.
    let req: pb::SendMessageRequest = serde_json::from_value(serde_json::json!({
        "message": {"messageId": "data-only-1", "role": "ROLE_USER",
            "parts": [{"data": {"colour": "red"}}]}
    }))
    .expect("request");
    let t = task_of(down.send_message(req).await.expect("send").into_inner());
    assert_eq!(state(&t), pb::TaskState::Failed, "{t:?}");
    assert!(
        status_text(&t).contains("the upstream refused tools/call")
            && status_text(&t).contains("text"),
        "{t:?}"
    );

    // One upstream task per bridged task, none sent twice (the refused call
    // made none).
    let tasks = upstream_tasks(&direct).await;
    assert_eq!(tasks.len(), 7, "{tasks:?}");
    up.stop().await;
    bridge.stop().await;
}

/// An MCP caller of the bridge sees the upstream tool, and the upstream's own
/// input request key; its keyed answer goes upstream unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_upstream_question_round_trips_over_mcp() {
    use taskwire_client::mcp::{elicit_accept, McpClient, McpTaskStatus, ToolCallOutcome};
    let (up, bridge) = mcp_pair("").await;
    let mcp = McpClient::new(config(&bridge.base)).expect("mcp client");
    let upstream_mcp = McpClient::new(config(&up.base)).expect("mcp client");
    let tools = mcp.list_tools().await.expect("tools/list");
    let upstream_tools = upstream_mcp.list_tools().await.expect("tools/list");
    let names = |t: &[taskwire_client::mcp::Tool]| {
        t.iter()
            .map(|t| (t.name.clone(), t.input_schema.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&tools), names(&upstream_tools));

    let created = mcp
        .call_tool("run_script", serde_json::json!({"text": "ask your name?"}))
        .await
        .expect("tools/call");
    let id = match &created.value {
        ToolCallOutcome::Task(t) => t.task_id.clone(),
        other => panic!("expected a task, got {other:?}"),
    };
    let asked = mcp.wait_task(&id, LIMIT).await.expect("wait");
    assert_eq!(
        asked.status,
        McpTaskStatus::InputRequired,
        "{:?}",
        asked.raw
    );
    let direct = a2a_client(&up.base);
    let ut = upstream_task_in(&direct, pb::TaskState::InputRequired).await;
    let upstream_asked = upstream_mcp.get_task(&ut.id).await.expect("tasks/get");
    let keys = |t: &DetailedTaskFields| t.input_requests.clone().unwrap_or_default();
    assert_eq!(keys(&asked), keys(&upstream_asked), "{:?}", asked.raw);
    let key = keys(&asked).keys().next().cloned().expect("a key");

    let mut answer = serde_json::Map::new();
    answer.insert("answer".into(), "Ada".into());
    let mut answers = std::collections::BTreeMap::new();
    answers.insert(key, elicit_accept(answer));
    mcp.update_task(&id, answers).await.expect("tasks/update");
    let done = mcp.wait_task(&id, LIMIT).await.expect("wait");
    assert_eq!(done.status, McpTaskStatus::Completed, "{:?}", done.raw);
    assert!(
        done.result
            .as_ref()
            .expect("result")
            .text()
            .contains("answer: Ada"),
        "{:?}",
        done.raw
    );
    upstream_task_in(&direct, pb::TaskState::Completed).await;
    up.stop().await;
    bridge.stop().await;
}

type DetailedTaskFields = taskwire_client::mcp::DetailedTask;

/// Cancels cross an MCP hop both ways: a downstream cancel of a running and of
/// a waiting task cancels the upstream task; an upstream cancel ends the
/// bridged task canceled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancels_cross_an_mcp_upstream_both_ways() {
    let (up, bridge) = mcp_pair("").await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let (t, ut) = sleeping_task(&down, &direct).await;
    cancel_reaches_upstream(&down, &direct, &t.id, &ut.id, "").await;
    up.stop().await;
    bridge.stop().await;

    let (up, bridge) = mcp_pair("").await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);
    let t = task_of(
        down.send_text("ask anything?", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    upstream_task_in(&direct, pb::TaskState::InputRequired).await;
    down.cancel_task(&t.id).await.expect("cancel");
    upstream_task_in(&direct, pb::TaskState::Canceled).await;
    up.stop().await;
    bridge.stop().await;

    let (up, bridge) = mcp_pair("").await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);
    let (t, ut) = sleeping_task(&down, &direct).await;
    direct.cancel_task(&ut.id).await.expect("cancel upstream");
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Canceled, "{ended:?}");
    up.stop().await;
    bridge.stop().await;
}

/// A TCP relay on 127.0.0.1 to `backend` (`http://HOST:PORT`): while `slow`
/// is set, each chunk the backend sends back waits [`SlowRelay::DELAY`]
/// first (requests pass at once).
struct SlowRelay {
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
struct Gate {
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
async fn sent_while_the_gate_is_shut(
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
async fn a_send_to_an_upstream_briefly_down_is_sent_again(over: Over) {
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

#[tokio::test]
async fn a_missing_mcp_tool_is_a_clear_error() {
    let up = serve(&[]).await;
    let e = refused_at_start(&["--upstream", &format!("mcp+{}/mcp#no_such_tool", up.base)]).await;
    assert!(e.contains("no tool \"no_such_tool\""), "{e}");
    assert!(e.contains("run_script"), "{e}");
    up.stop().await;
}

/// A bridge to an MCP upstream that calls its tools without the tasks
/// extension: plain blocking `tools/call`s, and for input the SEP-2322
/// exchange (`input_required` with a `requestState`, repeated with the
/// answers), which taskwire's MCP adapter answers to a caller that does not
/// declare the extension.
async fn mcp_blocking_bridge(up: &Running) -> Running {
    use std::sync::Arc;
    let options = taskwire_bridge::UpstreamOptions {
        mcp_tasks: false,
        poll_interval: Duration::from_millis(50),
        ..Default::default()
    };
    let store: Arc<dyn taskwire::core::TaskStore> = Arc::new(taskwire::MemoryStore::new());
    let agent = taskwire_bridge::McpUpstream::discover(&format!("{}/mcp", up.base), None, &options)
        .await
        .expect("discover")
        .with_store(store.clone());
    assert!(!agent.offers_tasks());
    serve_agent(Arc::new(agent), store).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_upstream_without_tasks_is_called_blocking_with_input_round_trips() {
    let up = serve(&[]).await;
    let bridge = mcp_blocking_bridge(&up).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let t = task_of(
        down.send_text("hello, blocking", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(
        artifact_texts(&t),
        vec![("result".to_string(), "hello, blocking".to_string())]
    );
    upstream_task_in(&direct, pb::TaskState::Completed).await;

    // input_required without a task: the bridged task asks; the answer goes
    // back with the repeated call, which continues the same upstream task.
    let t = task_of(
        down.send_text("ask what colour?", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    assert!(status_text(&t).contains("what colour?"), "{t:?}");
    down.send_message(text_to_task("green", &t.id))
        .await
        .expect("answer");
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert_eq!(
        artifact_texts(&ended),
        vec![("result".to_string(), "answer: green".to_string())]
    );
    // Two upstream tasks (one per bridged task), both completed.
    let tasks = upstream_tasks(&direct).await;
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(
        tasks.iter().all(|t| state(t) == pb::TaskState::Completed),
        "{tasks:?}"
    );
    up.stop().await;
    bridge.stop().await;
}

/// `/readyz` of a bridge reports its upstream: ready while it answers, 503
/// naming it once it stops; each call to the upstream is measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_and_metrics_report_the_upstream() {
    for over in ["a2a", "a2a-grpc", "mcp"] {
        let up = serve(&[]).await;
        let url = match over {
            "a2a" => upstream_url(&up.base, Over::JsonRpc),
            "a2a-grpc" => upstream_url(&up.base, Over::Grpc),
            _ => format!("mcp+{}/mcp", up.base),
        };
        let bridge = serve(&["--upstream", &url]).await;
        let http = reqwest::Client::new();
        let ready = |base: String| {
            let http = http.clone();
            async move {
                let r = http
                    .get(format!("{base}/readyz"))
                    .send()
                    .await
                    .expect("readyz");
                (r.status().as_u16(), r.text().await.unwrap_or_default())
            }
        };
        assert_eq!(
            ready(bridge.base.clone()).await,
            (200, "ready".to_string()),
            "{over}"
        );

        let t = task_of(
            a2a_client(&bridge.base)
                .send_text("hello, metrics", false)
                .await
                .expect("send")
                .into_inner(),
        );
        assert_eq!(state(&t), pb::TaskState::Completed, "{over}: {t:?}");
        let metrics = http
            .get(format!("{}/metrics", bridge.base))
            .send()
            .await
            .expect("metrics")
            .text()
            .await
            .expect("text");
        let operation = match over {
            "mcp" => "tools/call",
            _ => "SendStreamingMessage",
        };
        assert!(
            metrics.lines().any(|l| {
                l.starts_with("taskwire_upstream_request_duration_seconds_count")
                    && l.contains(&format!("operation=\"{operation}\""))
                    && l.contains(&format!("protocol=\"{over}\""))
            }),
            "{over}: {metrics}"
        );

        up.stop().await;
        // The answer is reused for a second; then the upstream is asked again.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let (code, text) = ready(bridge.base.clone()).await;
        assert_eq!(code, 503, "{over}: {text}");
        assert!(
            text.starts_with("agent not ready: upstream"),
            "{over}: {text}"
        );
        bridge.stop().await;
    }
}

/// Several named upstreams behind one bridge: each is one skill; MCP callers
/// choose by tool, A2A callers by request metadata; each upstream gets its own
/// token from its own file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_named_upstreams_are_one_skill_each() {
    use taskwire_client::mcp::{McpClient, ToolCallOutcome};
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "writer-secret bridge\n").expect("tokens");
    let writer = serve(&["--auth-tokens", &tokens.to_string_lossy()]).await;
    let tool = serve(&[]).await;
    let token_file = dir.path().join("writer.token");
    std::fs::write(&token_file, "  writer-secret\n").expect("token file");
    let writer_url = format!("writer=a2a+{}", writer.base);
    let tool_url = format!("tool=mcp+{}/mcp#run_script", tool.base);
    let token_arg = format!("writer={}", token_file.display());
    let bridge = serve(&[
        "--upstream",
        &writer_url,
        "--upstream",
        &tool_url,
        "--upstream-token-file",
        &token_arg,
    ])
    .await;

    let card = a2a_client(&bridge.base).agent_card().await.expect("card");
    let ids: Vec<&str> = card.skills.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec!["writer", "tool"]);

    // MCP: the tool named after the upstream runs there.
    let mcp = McpClient::new(config(&bridge.base)).expect("mcp");
    let called = mcp
        .call_tool("writer", serde_json::json!({"text": "to the writer"}))
        .await
        .expect("tools/call");
    let id = match &called.value {
        ToolCallOutcome::Task(t) => t.task_id.clone(),
        other => panic!("{other:?}"),
    };
    let done = mcp.wait_task(&id, LIMIT).await.expect("wait");
    assert!(
        done.result
            .as_ref()
            .expect("result")
            .text()
            .contains("to the writer"),
        "{:?}",
        done.raw
    );
    let writer_direct = A2aClient::new(
        ClientConfig::builder(&writer.base)
            .request_timeout(LIMIT)
            .bearer_token("writer-secret")
            .build(),
    )
    .expect("client");
    assert_eq!(upstream_tasks(&writer_direct).await.len(), 1);
    assert_eq!(upstream_tasks(&a2a_client(&tool.base)).await.len(), 0);

    // A2A: the request's metadata names the upstream.
    let req: pb::SendMessageRequest = serde_json::from_value(serde_json::json!({
        "message": {"messageId": "multi-1", "role": "ROLE_USER", "parts": [{"text": "to the tool"}]},
        "metadata": {"skill": "tool"}
    }))
    .expect("request");
    let t = task_of(
        a2a_client(&bridge.base)
            .send_message(req)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(
        artifact_texts(&t),
        vec![("result".to_string(), "to the tool".to_string())]
    );
    assert_eq!(upstream_tasks(&a2a_client(&tool.base)).await.len(), 1);

    // Naming none of several: rejected, listing them.
    let t = task_of(
        a2a_client(&bridge.base)
            .send_text("to whom?", false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Rejected, "{t:?}");
    assert!(status_text(&t).contains("writer, tool"), "{t:?}");

    writer.stop().await;
    tool.stop().await;
    bridge.stop().await;
}

#[tokio::test]
async fn bad_upstream_lists_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").expect("file");
    let empty_arg = format!("a={}", empty.display());
    let build = |argv: Vec<String>| async move {
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        refused_at_start(&refs).await
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let e = build(s(&[
        "--upstream",
        "a2a+http://127.0.0.1:1",
        "--upstream",
        "b=a2a+http://127.0.0.1:2",
    ]))
    .await;
    assert!(e.contains("need a name each"), "{e}");
    let e = build(s(&[
        "--upstream",
        "a=a2a+http://127.0.0.1:1",
        "--upstream",
        "a=a2a+http://127.0.0.1:2",
    ]))
    .await;
    assert!(e.contains("two --upstream are named a"), "{e}");
    let e = build(s(&[
        "--upstream",
        "a=a2a+http://127.0.0.1:1",
        "--upstream-token-file",
        "zz=/nonexistent",
    ]))
    .await;
    assert!(e.contains("/nonexistent"), "{e}");
    let e = build(s(&[
        "--upstream",
        "a=a2a+http://127.0.0.1:1",
        "--upstream-token-file",
        &empty_arg,
    ]))
    .await;
    assert!(e.contains("is empty"), "{e}");
    let token = dir.path().join("token");
    std::fs::write(&token, "t\n").expect("file");
    let e = build(s(&[
        "--upstream",
        "a=a2a+http://127.0.0.1:1",
        "--upstream",
        "b=a2a+http://127.0.0.1:2",
        "--upstream-token-file",
        &format!("zz={}", token.display()),
    ]))
    .await;
    assert!(e.contains("zz, which no --upstream NAME=URL names"), "{e}");
    let many: Vec<String> = (0..33)
        .flat_map(|i| {
            [
                "--upstream".to_string(),
                format!("u{i}=a2a+http://127.0.0.1:{}", i + 1),
            ]
        })
        .collect();
    let e = build(many).await;
    assert!(
        e.contains("33 --upstream: a bridge serves at most 32"),
        "{e}"
    );
    let e = serve_args(&[
        "--upstream",
        "a2a+http://127.0.0.1:1",
        "--upstream-max-message-bytes",
        "10",
    ])
    .expect_err("below the floor")
    .to_string();
    assert!(e.contains("--upstream-max-message-bytes"), "{e}");
    // The record, page and message bounds: their defaults, a value, and no 0.
    let a = serve_args(&["--upstream", "a2a+http://127.0.0.1:1"]).expect("defaults");
    assert_eq!(
        (
            a.upstream.max_open_messages,
            a.upstream.max_list_pages,
            a.upstream.max_link_records,
            a.upstream.catch_up_records
        ),
        (64, 100, 100_000, 10_000)
    );
    for flag in [
        "--upstream-max-open-messages",
        "--upstream-max-list-pages",
        "--upstream-max-link-records",
        "--upstream-catch-up-records",
    ] {
        let a = serve_args(&["--upstream", "a2a+http://127.0.0.1:1", flag, "7"]).expect(flag);
        let got = [
            a.upstream.max_open_messages,
            a.upstream.max_list_pages,
            a.upstream.max_link_records,
            a.upstream.catch_up_records,
        ];
        assert_eq!(
            got.iter().filter(|v| **v == 7).count(),
            1,
            "{flag}: {got:?}"
        );
        let e = serve_args(&["--upstream", "a2a+http://127.0.0.1:1", flag, "0"])
            .expect_err("0")
            .to_string();
        assert!(e.contains(flag), "{e}");
    }
    // A query's `=` is not a name.
    assert_eq!(
        taskwire::cli::split_named("mcp+http://h/mcp?k=v"),
        (None, "mcp+http://h/mcp?k=v")
    );
    assert_eq!(
        taskwire::cli::split_named("n_1=mcp+http://h/mcp?k=v"),
        (Some("n_1"), "mcp+http://h/mcp?k=v")
    );
}

/// An upstream answer larger than `--upstream-max-message-bytes` fails the
/// bridged task, naming the limit, over an A2A, an MCP and an AG-UI upstream
/// (a stream event of the A2A upstream, a response of the MCP one, a streamed
/// text message of the AG-UI one); the bridge goes on serving smaller answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_answers_beyond_the_limit_fail_the_task_naming_it() {
    let up = serve(&[]).await;
    let big = format!("message\n{}", "x".repeat(3000));
    for url in [
        upstream_url(&up.base, Over::JsonRpc),
        format!("mcp+{}/mcp#run_script", up.base),
        format!("agui+{}/agui", up.base),
    ] {
        let bridge = serve(&["--upstream", &url, "--upstream-max-message-bytes", "2048"]).await;
        let down = a2a_client(&bridge.base);
        let t = task_of(
            down.send_text(&big, false)
                .await
                .expect("send")
                .into_inner(),
        );
        assert_eq!(state(&t), pb::TaskState::Failed, "{url}: {t:?}");
        assert!(
            status_text(&t).contains("2048 bytes"),
            "{url}: {}",
            status_text(&t)
        );
        let t = task_of(
            down.send_text("small", false)
                .await
                .expect("send")
                .into_inner(),
        );
        assert_eq!(state(&t), pb::TaskState::Completed, "{url}: {t:?}");
    }
}

/// An AG-UI upstream whose run streams more text messages at once than
/// `--upstream-max-open-messages` fails the bridged task, naming the bound;
/// with the default bound the same run completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agui_run_with_too_many_open_messages_fails_the_task() {
    use axum::http::header::CONTENT_TYPE;
    async fn run(body: axum::body::Bytes) -> impl axum::response::IntoResponse {
        let input: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let (thread, run) = (input["threadId"].clone(), input["runId"].clone());
        let mut events =
            vec![serde_json::json!({"type": "RUN_STARTED", "threadId": thread, "runId": run})];
        for m in ["m1", "m2", "m3"] {
            events.push(serde_json::json!({"type": "TEXT_MESSAGE_START", "messageId": m, "role": "assistant"}));
            events.push(
                serde_json::json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": m, "delta": m}),
            );
        }
        for m in ["m1", "m2", "m3"] {
            events.push(serde_json::json!({"type": "TEXT_MESSAGE_END", "messageId": m}));
        }
        events.push(serde_json::json!({"type": "RUN_FINISHED", "threadId": thread, "runId": run}));
        let sse: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        ([(CONTENT_TYPE, "text/event-stream")], sse)
    }
    let app = axum::Router::new().route(
        "/agui",
        axum::routing::get(|| async { "an AG-UI agent" }).post(run),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let url = format!("agui+http://{addr}/agui");
    for (bound, want) in [
        ("2", pb::TaskState::Failed),
        ("64", pb::TaskState::Completed),
    ] {
        let bridge = serve(&["--upstream", &url, "--upstream-max-open-messages", bound]).await;
        let t = task_of(
            a2a_client(&bridge.base)
                .send_text("three at once", false)
                .await
                .expect("send")
                .into_inner(),
        );
        assert_eq!(state(&t), want, "bound {bound}: {t:?}");
        if want == pb::TaskState::Failed {
            assert!(
                status_text(&t).contains("more than 2 text messages at once"),
                "{}",
                status_text(&t)
            );
        }
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

// ---- AG-UI upstreams (`agui+http://…/agui`) ----

/// Every directive of the scripted agent through an AG-UI hop, driven over
/// A2A: output (a taskwire.artifact activity and the run result), chunks,
/// failure, rejection, a question answered with plain text (the resume of its
/// interrupt), an authorisation granted downstream (resumed upstream), a
/// review approved with a word, and cancels both ways.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agui_upstream_runs_every_directive() {
    let up = serve(&[]).await;
    let url = format!("agui+{}/agui", up.base);
    let bridge = serve(&["--upstream", &url]).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);
    let send = |text: &'static str, immediately: bool| {
        let down = down.clone();
        async move {
            task_of(
                down.send_text(text, immediately)
                    .await
                    .expect("send")
                    .into_inner(),
            )
        }
    };

    let t = send("hello over ag-ui", false).await;
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(
        artifact_texts(&t),
        vec![("echo".to_string(), "hello over ag-ui".to_string())]
    );

    let t = send("stream 3", false).await;
    assert_eq!(state(&t), pb::TaskState::Completed, "{t:?}");
    assert_eq!(t.artifacts.len(), 1, "{t:?}");
    assert_eq!(t.artifacts[0].parts.len(), 3, "{t:?}");

    let t = send("fail boom", false).await;
    assert_eq!(state(&t), pb::TaskState::Failed, "{t:?}");
    assert!(status_text(&t).contains("boom"), "{t:?}");
    let t = send("reject not today", false).await;
    assert_eq!(state(&t), pb::TaskState::Rejected, "{t:?}");
    assert!(status_text(&t).contains("not today"), "{t:?}");

    let t = send("ask what colour?", false).await;
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    assert!(status_text(&t).contains("what colour?"), "{t:?}");
    down.send_message(text_to_task("blue", &t.id))
        .await
        .expect("answer");
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert!(
        artifact_texts(&ended).contains(&("answer".to_string(), "answer: blue".to_string())),
        "{ended:?}"
    );

    let t = send("auth github\nhello after auth", false).await;
    assert_eq!(state(&t), pb::TaskState::AuthRequired, "{t:?}");
    let req: pb::SendMessageRequest = serde_json::from_value(serde_json::json!({
        "message": {
            "messageId": "grant-agui-1", "role": "ROLE_USER", "taskId": t.id,
            "parts": [{"text": "granted"}],
            "metadata": {"authorization": {"provider": "github"}}
        }
    }))
    .expect("request");
    down.send_message(req).await.expect("grant");
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");
    assert!(
        artifact_texts(&ended)
            .iter()
            .any(|(_, text)| text == "hello after auth"),
        "{ended:?}"
    );

    let t = send("review\nreviewed text", false).await;
    assert_eq!(state(&t), pb::TaskState::InputRequired, "{t:?}");
    down.send_message(text_to_task("yes", &t.id))
        .await
        .expect("approve");
    let ended = settled(&down, &t.id).await;
    assert_eq!(state(&ended), pb::TaskState::Completed, "{ended:?}");

    // One upstream task per bridged task so far.
    assert_eq!(upstream_tasks(&direct).await.len(), 7);

    // A downstream cancel of a running task cancels the upstream run's task.
    let t = send("sleep 30000", true).await;
    let deadline = tokio::time::Instant::now() + LIMIT;
    let running = loop {
        let tasks = upstream_tasks(&direct).await;
        if let Some(u) = tasks.iter().find(|u| state(u) == pb::TaskState::Working) {
            break u.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "{tasks:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let canceled = down.cancel_task(&t.id).await.expect("cancel").into_inner();
    assert_eq!(state(&canceled), pb::TaskState::Canceled);
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let u = direct
            .get_task(&running.id, None)
            .await
            .expect("get")
            .into_inner();
        if state(&u) == pb::TaskState::Canceled {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{u:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    up.stop().await;
    bridge.stop().await;
}

// ---- upstreams over TLS (`a2a+https://`, `a2a+grpcs://`, `mcp+https://`) ----

/// One task through a bridge of upstream `url` (started with `flags` besides):
/// it completes, its text echoed back as the artifact.
async fn one_task_through(url: &str, flags: &[&str]) {
    let mut argv = vec!["--upstream", url];
    argv.extend_from_slice(flags);
    let bridge = serve(&argv).await;
    let text = format!("through {url}");
    let t = task_of(
        a2a_client(&bridge.base)
            .send_text(&text, false)
            .await
            .expect("send")
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed, "{url}: {t:?}");
    let texts = artifact_texts(&t);
    assert!(texts.iter().any(|(_, x)| x == &text), "{url}: {texts:?}");
    bridge.stop().await;
}

/// A TLS front on 127.0.0.1: a fresh CA signs a certificate for `localhost`
/// and 127.0.0.1; once [`TlsFront::relay_to`] runs, each TLS connection (ALPN
/// `h2` or `http/1.1`) is relayed byte for byte to a plain server.
struct TlsFront {
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    port: u16,
    /// The CA certificate, PEM.
    ca_pem: String,
    /// A client certificate the CA signed, and its key, PEM (for
    /// [`TlsFront::bind_mutual`]).
    client_pem: (String, String),
}

impl TlsFront {
    async fn bind() -> Self {
        Self::bind_with(false).await
    }

    /// A front that asks every client for a certificate the CA signed
    /// (mutual TLS) and refuses the handshake without one.
    async fn bind_mutual() -> Self {
        Self::bind_with(true).await
    }

    async fn bind_with(mutual: bool) -> Self {
        use tokio_rustls::rustls;
        let ca_key = rcgen::KeyPair::generate().expect("CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "taskwire test CA");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("params")
            .signed_by(&key, &ca)
            .expect("certificate");
        let client_key = rcgen::KeyPair::generate().expect("client key");
        let client_cert = rcgen::CertificateParams::new(vec!["taskwire-bridge".into()])
            .expect("client params")
            .signed_by(&client_key, &ca)
            .expect("client certificate");
        let key_der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions");
        let builder = if mutual {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der().clone()).expect("CA root");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                std::sync::Arc::new(roots),
                provider,
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder
            .with_single_cert(vec![cert.der().clone()], key_der)
            .expect("server config");
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        Self {
            listener,
            acceptor: tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)),
            port,
            ca_pem: ca.pem(),
            client_pem: (client_cert.pem(), client_key.serialize_pem()),
        }
    }

    /// Writes the CA certificate, the client certificate and its key (PEM)
    /// into `dir`; answers their paths.
    fn write_pems(&self, dir: &std::path::Path) -> (String, String, String) {
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).expect("write");
            p.to_string_lossy().to_string()
        };
        (
            write("ca.pem", &self.ca_pem),
            write("client.pem", &self.client_pem.0),
            write("client-key.pem", &self.client_pem.1),
        )
    }

    /// Relays to the plain server at `base` (`http://127.0.0.1:PORT`) until
    /// the returned task is aborted.
    fn relay_to(self, base: &str) -> tokio::task::JoinHandle<()> {
        let backend = base.trim_start_matches("http://").to_string();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = self.listener.accept().await {
                let acceptor = self.acceptor.clone();
                let backend = backend.clone();
                tokio::spawn(async move {
                    let mut tls = match acceptor.accept(tcp).into_fallible().await {
                        Ok(tls) => tls,
                        // A refused handshake: the alert is sent; closing
                        // with the client's first request unread would reset
                        // the connection, and a reset can discard the alert
                        // before the client reads it. Close our side, then
                        // read what the client sent until it closes.
                        Err((_, mut tcp)) => {
                            use tokio::io::{AsyncReadExt, AsyncWriteExt};
                            let _ = tcp.shutdown().await;
                            let mut sink = [0u8; 4096];
                            let drain = async {
                                while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
                            };
                            let _ = tokio::time::timeout(Duration::from_secs(2), drain).await;
                            return;
                        }
                    };
                    let Ok(mut plain) = tokio::net::TcpStream::connect(&backend).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        })
    }
}

/// A bridge reaches upstreams over TLS, trusting a private CA given with
/// `--upstream-ca-file`: an A2A agent over JSON-RPC (`a2a+https://`, its card
/// naming its https URL) and over gRPC (`a2a+grpcs://`), and an MCP server
/// (`mcp+https://`); each runs a task to its end through the bridge. Without
/// the CA the https upstream's certificate is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_over_tls_with_a_private_ca() {
    let front = TlsFront::bind().await;
    let https = format!("https://localhost:{}", front.port);
    let up = serve(&["--public-url", &https]).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &front.ca_pem).expect("CA file");
    let ca_arg = ca_file.to_string_lossy().to_string();
    let port = front.port;
    let relay = front.relay_to(&up.base);

    for url in [
        format!("a2a+https://localhost:{port}"),
        format!("a2a+grpcs://localhost:{port}"),
        format!("mcp+https://localhost:{port}/mcp#run_script"),
    ] {
        one_task_through(&url, &["--upstream-ca-file", &ca_arg]).await;
    }

    // Without the CA, the upstream's certificate is not trusted.
    let url = format!("a2a+https://localhost:{port}");
    let err = refused_at_start(&["--upstream", &url]).await;
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    relay.abort();
    up.stop().await;
}

/// A webhook receiver on 127.0.0.1 (plain HTTP, `/hook`) keeping every JSON
/// body POSTed to it; answers its base URL, the bodies, and its task.
async fn push_receiver() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    tokio::task::JoinHandle<()>,
) {
    let got: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>> = Default::default();
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let keep = keep.clone();
            async move {
                if let Ok(v) = serde_json::from_slice(&body) {
                    keep.lock().expect("receiver lock").push(v);
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind receiver");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, got, task)
}

/// Runs a task on the taskwire at `base` with a push config for `hook`
/// (blocking SendMessage); answers its id once completed.
async fn task_pushed_to(base: &str, hook: &str, text: &str) -> String {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": format!("push-{text}"), "role": "ROLE_USER",
            "parts": [{"text": text}]},
            "configuration": {"taskPushNotificationConfig": {"url": hook, "token": "t"}}}});
    let r: serde_json::Value = reqwest::Client::new()
        .post(format!("{base}/a2a"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    assert_eq!(
        r["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{r}"
    );
    r["result"]["task"]["id"]
        .as_str()
        .expect("task id")
        .to_string()
}

/// Serves with `untrusting` flags and with `trusting` ones (besides
/// `--push-allow-private`), runs one task on each pushing to `hook`: the
/// second's completed status arrives, the first's nothing (given as long and
/// more).
async fn pushes_arrive_only_with(
    hook: &str,
    got: &std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
    untrusting: &[&str],
    trusting: &[&str],
) {
    let pushed_for = |id: &str| {
        got.lock()
            .expect("receiver lock")
            .iter()
            .filter(|v| v.to_string().contains(id))
            .count()
    };
    fn with<'a>(flags: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["--push-allow-private"];
        v.extend_from_slice(flags);
        v
    }
    let refusing = serve(&with(untrusting)).await;
    let refused = task_pushed_to(&refusing.base, hook, "refused").await;
    let delivering = serve(&with(trusting)).await;
    let delivered = task_pushed_to(&delivering.base, hook, "delivered").await;
    common::bridge::eventually("the completed status pushed over https", || {
        got.lock().expect("receiver lock").iter().any(|v| {
            v.to_string().contains(&delivered) && v.to_string().contains("TASK_STATE_COMPLETED")
        })
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(pushed_for(&refused), 0, "delivered with {untrusting:?}");
    assert!(pushed_for(&delivered) >= 1);
    refusing.stop().await;
    delivering.stop().await;
}

/// A2A push notifications reach an `https` receiver whose certificate a
/// private CA signed, when that CA is given with `--push-ca-file` (the same
/// TLS front as the upstreams above, in front of a plain receiver); without
/// it, nothing reaches the receiver. A CA file without a certificate stops
/// `serve` with a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_notifications_over_tls_with_a_private_ca() {
    let (plain, got, receiver) = push_receiver().await;
    let front = TlsFront::bind().await;
    let hook = format!("https://localhost:{}/hook", front.port);
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &front.ca_pem).expect("CA file");
    let ca_arg = ca_file.to_string_lossy().to_string();
    let relay = front.relay_to(&plain);
    pushes_arrive_only_with(&hook, &got, &[], &["--push-ca-file", &ca_arg]).await;

    // A file without a certificate is refused at start.
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").expect("file");
    let err = refused_at_start(&["--push-ca-file", &empty.to_string_lossy()]).await;
    assert!(err.contains("--push-ca-file"), "{err}");
    relay.abort();
    receiver.abort();
}

/// A2A push notifications reach an `https` receiver that requires a client
/// certificate (mutual TLS) when `--push-client-cert` and
/// `--push-client-key` give one its CA signed; with the CA alone, nothing
/// arrives. A key that does not parse stops `serve` with a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_notifications_over_mutual_tls() {
    let (plain, got, receiver) = push_receiver().await;
    let front = TlsFront::bind_mutual().await;
    let hook = format!("https://localhost:{}/hook", front.port);
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = front.write_pems(dir.path());
    let relay = front.relay_to(&plain);
    pushes_arrive_only_with(
        &hook,
        &got,
        &["--push-ca-file", &ca],
        &[
            "--push-ca-file",
            &ca,
            "--push-client-cert",
            &cert,
            "--push-client-key",
            &key,
        ],
    )
    .await;

    let err = refused_at_start(&["--push-client-cert", &cert, "--push-client-key", &ca]).await;
    assert!(err.contains("--push-client-key"), "{err}");
    assert!(serve_args(&["--push-client-cert", &cert]).is_err());
    relay.abort();
    receiver.abort();
}

/// A bridge presents the client certificate of `--upstream-client-cert` and
/// `--upstream-client-key` to upstreams that require one (mutual TLS), over
/// `a2a+https://`, `a2a+grpcs://` and `mcp+https://`; without it, such an
/// upstream refuses the bridge, which then does not start. A key that does
/// not belong with a certificate file is a usage error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstreams_over_mutual_tls() {
    let front = TlsFront::bind_mutual().await;
    let https = format!("https://localhost:{}", front.port);
    let up = serve(&["--public-url", &https]).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = front.write_pems(dir.path());
    let port = front.port;
    let relay = front.relay_to(&up.base);

    for url in [
        format!("a2a+https://localhost:{port}"),
        format!("a2a+grpcs://localhost:{port}"),
        format!("mcp+https://localhost:{port}/mcp#run_script"),
    ] {
        let flags = [
            "--upstream-ca-file",
            &ca,
            "--upstream-client-cert",
            &cert,
            "--upstream-client-key",
            &key,
        ];
        one_task_through(&url, &flags).await;
    }

    // Without a client certificate the upstream refuses the bridge. Over TLS
    // 1.3 the client's handshake is done before the server reads its (empty)
    // certificate, so the server's alert races the request: hyper reports it
    // as the alert when the request was sent, and as a connection that
    // closed before the request could be sent ("connection was not ready",
    // the alert unread) when the alert came first (seen under load).
    let url = format!("a2a+https://localhost:{port}");
    let err = refused_at_start(&["--upstream", &url, "--upstream-ca-file", &ca]).await;
    assert!(
        err.contains("discovering the upstream agent")
            && (err.contains("CertificateRequired") || err.contains("connection was not ready")),
        "{err}"
    );

    // A certificate with a key that is not one is refused at start.
    let err = refused_at_start(&[
        "--upstream",
        &url,
        "--upstream-client-cert",
        &cert,
        "--upstream-client-key",
        &ca,
    ])
    .await;
    assert!(err.contains("--upstream-client-key"), "{err}");
    // The key alone is not a flag set.
    assert!(serve_args(&["--upstream", &url, "--upstream-client-key", &key]).is_err());
    relay.abort();
    up.stop().await;
}
