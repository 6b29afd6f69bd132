//! AG-UI upstreams (`agui+http://…/agui`) served by taskwire.

use super::*;

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
