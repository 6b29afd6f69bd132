//! What `serve --upstream` is started with and reports: the upstream token, bad upstream URLs and lists, readiness and metrics, several named upstreams.

use super::*;

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

pub(crate) fn serve_args(argv: &[&str]) -> Result<taskwire::cli::ServeArgs, clap::Error> {
    let mut full = vec!["taskwire", "serve"];
    full.extend_from_slice(argv);
    Cli::try_parse_from(full).map(|c| match c.command {
        Command::Serve(a) => a,
        _ => panic!("parsed as another command"),
    })
}

/// What `taskwire serve --listen 127.0.0.1:0 --store memory:// ARGV…` stops
/// with at start (within LIMIT); panics if it starts.
pub(crate) async fn refused_at_start(argv: &[&str]) -> String {
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
}
