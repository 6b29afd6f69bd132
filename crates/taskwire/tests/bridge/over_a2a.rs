//! A2A upstreams (`a2a+http://…`, `a2a+grpc://…`): each lifecycle once per upstream binding.

use super::*;

over_both!(a_plain_task_completes_with_the_upstream_output);
pub(crate) async fn a_plain_task_completes_with_the_upstream_output(over: Over) {
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
pub(crate) async fn input_required_round_trips_over_a2a(over: Over) {
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
pub(crate) async fn input_required_round_trips_over_cas(over: Over) {
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
pub(crate) async fn the_upstream_skill_is_an_mcp_tool_and_input_round_trips_over_mcp(over: Over) {
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
pub(crate) async fn failing_and_rejecting_directives_end_the_same_way(over: Over) {
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
pub(crate) async fn a_downstream_cancel_cancels_the_upstream_task(over: Over) {
    let (up, bridge) = pair_over(over).await;
    let down = a2a_client(&bridge.base);
    let direct = a2a_client(&up.base);

    let (t, ut) = sleeping_task(&down, &direct).await;
    cancel_reaches_upstream(&down, &direct, &t.id, &ut.id, "").await;
    up.stop().await;
    bridge.stop().await;
}

over_both!(a_downstream_cancel_while_waiting_for_input_cancels_the_upstream_task);
pub(crate) async fn a_downstream_cancel_while_waiting_for_input_cancels_the_upstream_task(
    over: Over,
) {
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
pub(crate) async fn upstream_auth_required_becomes_a_provider_authorisation(over: Over) {
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
pub(crate) async fn an_upstream_cancel_ends_the_downstream_task_canceled(over: Over) {
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
pub(crate) async fn the_bridge_card_lists_the_upstream_skills(over: Over) {
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
