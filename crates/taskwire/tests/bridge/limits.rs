//! Upstream answers beyond the bridge's bounds fail the task, naming the bound.

use super::*;

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
