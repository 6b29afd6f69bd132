//! MCP upstreams (`mcp+http://…/mcp[#tool]`) served by taskwire: tasks, questions, cancels, blocking calls.

use super::*;

// ---- MCP upstreams (`mcp+http://…/mcp[#tool]`) ----

/// An upstream taskwire and a bridge calling its MCP endpoint (`suffix`: a
/// `#tool`, or nothing).
pub(crate) async fn mcp_pair(suffix: &str) -> (Running, Running) {
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

pub(crate) type DetailedTaskFields = taskwire_client::mcp::DetailedTask;

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
pub(crate) async fn mcp_blocking_bridge(up: &Running) -> Running {
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
