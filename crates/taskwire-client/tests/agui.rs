//! The AG-UI client against this repo's AG-UI adapter: SSE and protobuf,
//! interrupt and resume, cancel, and reconnect after a cut stream.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use taskwire_client::agui::{
    event_type, AguiClient, AguiEncoding, AguiEvent, EventOrigin, ResumeEntry, ResumeStatus,
    RunAgentInput,
};
use taskwire_client::ClientError;

fn id(prefix: &str) -> String {
    format!("{prefix}-{}", taskwire_client::a2a::random_id())
}

async fn run(client: &AguiClient, input: &RunAgentInput, enc: AguiEncoding) -> Vec<AguiEvent> {
    let s = client.run(input, enc).await.unwrap();
    tokio::time::timeout(Duration::from_secs(15), s.collect_all())
        .await
        .expect("run ends")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_run_over_sse_and_protobuf_agree() {
    let server = common::start().await;
    let client = AguiClient::new(common::config(&server.base)).unwrap();
    let input = RunAgentInput::new(id("thread"), id("run")).user_message(id("m"), "hello");
    let sse = run(&client, &input, AguiEncoding::Sse).await;
    assert_eq!(sse[0].kind, event_type::RUN_STARTED);
    let last = sse.last().unwrap();
    assert_eq!(last.kind, event_type::RUN_FINISHED);
    assert_eq!(last.outcome_type().as_deref(), Some("success"));
    assert!(
        last.raw["result"].to_string().contains("hello"),
        "{}",
        last.raw
    );
    assert!(sse.iter().all(|e| e.id.is_some() && e.proto.is_none()));

    // The same run again, as protobuf frames: the same events.
    let proto = run(&client, &input, AguiEncoding::Protobuf).await;
    assert!(proto.iter().all(|e| e.proto.is_some() && e.id.is_none()));
    let a: Vec<_> = sse.iter().map(|e| &e.raw).collect();
    let b: Vec<_> = proto.iter().map(|e| &e.raw).collect();
    assert_eq!(a, b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_then_resume_and_cancel() {
    let server = common::start().await;
    let client = AguiClient::new(common::config(&server.base)).unwrap();
    let thread = id("thread");
    let first =
        RunAgentInput::new(&thread, id("run")).user_message(id("m"), "ask What is your name?");
    let events = run(&client, &first, AguiEncoding::Sse).await;
    let end = events.last().unwrap();
    assert_eq!(end.outcome_type().as_deref(), Some("interrupt"));
    let interrupts = end.interrupts();
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0]["reason"], "input_required");
    let interrupt_id = interrupts[0]["id"].as_str().unwrap().to_string();

    // Resume (as protobuf, to exercise that path too).
    let mut second = RunAgentInput::new(&thread, id("run")).resume(vec![ResumeEntry {
        interrupt_id,
        status: ResumeStatus::Resolved.into(),
        payload: Some(json!({"answer": "Ada"})),
        metadata: None,
    }]);
    second.messages = first.messages.clone();
    let events = run(&client, &second, AguiEncoding::Protobuf).await;
    let end = events.last().unwrap();
    assert_eq!(end.kind, event_type::RUN_FINISHED, "{:?}", end.raw);
    assert_eq!(end.outcome_type().as_deref(), Some("success"));
    assert!(
        end.raw["result"].to_string().contains("answer: Ada"),
        "{}",
        end.raw
    );

    // Cancel a running run: its stream ends with outcome cancelled.
    let thread = id("thread");
    let run_id = id("run");
    let input = RunAgentInput::new(&thread, &run_id).user_message(id("m"), "sleep 5000");
    let mut s = client.run(&input, AguiEncoding::Sse).await.unwrap();
    let started = s.next().await.unwrap().unwrap();
    assert_eq!(started.kind, event_type::RUN_STARTED);
    client.cancel_run(&thread, &run_id).await.unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(10), s.collect_all())
        .await
        .expect("ends")
        .unwrap();
    assert_eq!(
        rest.last().unwrap().outcome_type().as_deref(),
        Some("cancelled")
    );

    // Unknown run: a typed HTTP error.
    let err = client
        .run_events(&thread, "no-such-run", None, AguiEncoding::Sse)
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), Some(404), "{err:?}");
    assert!(matches!(err, ClientError::Http { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_sse_stream_reconnects_with_last_event_id() {
    let server = common::start().await;
    let proxy = common::proxy(server.addr, |n| (n == 0).then_some(2)).await;
    let client = AguiClient::new(common::config(&proxy.base)).unwrap();
    let input =
        RunAgentInput::new(id("thread"), id("run")).user_message(id("m"), "sleep 200\nstream 3");
    let s = client.run(&input, AguiEncoding::Sse).await.unwrap();
    let (events, reconnects) = tokio::time::timeout(Duration::from_secs(15), async {
        let mut s = s;
        let mut out = Vec::new();
        while let Some(e) = s.next().await {
            out.push(e.unwrap());
        }
        (out, s.reconnects())
    })
    .await
    .expect("ends");
    assert_eq!(reconnects, 1);
    assert_eq!(events[0].origin, EventOrigin::Live);
    assert_eq!(events[2].origin, EventOrigin::Resumed);
    assert_eq!(
        events.last().unwrap().outcome_type().as_deref(),
        Some("success")
    );

    // The same as an uncut read of the same run, event for event: the
    // server's restatement of what the client already has (a RUN_STARTED
    // with the id of the last frame received) is dropped.
    let direct = AguiClient::new(common::config(&server.base)).unwrap();
    let full = run(&direct, &input, AguiEncoding::Sse).await;
    let got: Vec<_> = events.iter().map(|e| (&e.id, &e.raw)).collect();
    let want: Vec<_> = full.iter().map(|e| (&e.id, &e.raw)).collect();
    assert_eq!(got, want);
    assert_eq!(
        events
            .iter()
            .filter(|e| e.kind == event_type::RUN_STARTED)
            .count(),
        1
    );
    let chunks = events
        .iter()
        .filter(|e| e.kind == event_type::ACTIVITY_DELTA || e.kind == event_type::ACTIVITY_SNAPSHOT)
        .count();
    assert!(chunks >= 3, "{chunks}");
}

/// Protobuf frames carry no ids: a cut protobuf stream is re-read from the
/// run-events route and the events already delivered are skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cut_protobuf_stream_rereads_the_run_and_skips_what_was_delivered() {
    use axum::http::header::CONTENT_TYPE;
    use prost::Message as _;
    use taskwire_client::agui::{pb, PROTO_MEDIA_TYPE};

    fn frame(e: pb::event::Event) -> Vec<u8> {
        let bytes = pb::Event { event: Some(e) }.encode_to_vec();
        let mut out = (bytes.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&bytes);
        out
    }
    let started = frame(pb::event::Event::RunStarted(pb::RunStartedEvent {
        thread_id: "t".into(),
        run_id: "r".into(),
        ..Default::default()
    }));
    let step = |finished: bool| {
        if finished {
            frame(pb::event::Event::StepFinished(pb::StepFinishedEvent {
                step_name: "s".into(),
                ..Default::default()
            }))
        } else {
            frame(pb::event::Event::StepStarted(pb::StepStartedEvent {
                step_name: "s".into(),
                ..Default::default()
            }))
        }
    };
    let finished = frame(pb::event::Event::RunFinished(pb::RunFinishedEvent {
        thread_id: "t".into(),
        run_id: "r".into(),
        ..Default::default()
    }));
    // The run as first posted: two frames, then half a frame.
    let mut cut = [started.clone(), step(false)].concat();
    cut.extend_from_slice(&step(true)[..3]);
    let full = [started, step(false), step(true), finished].concat();
    let app = axum::Router::new()
        .route(
            "/agui",
            axum::routing::post(move || {
                let body = cut.clone();
                async move { ([(CONTENT_TYPE, PROTO_MEDIA_TYPE)], body) }
            }),
        )
        .route(
            "/agui/threads/{t}/runs/{r}/events",
            axum::routing::get(move || {
                let body = full.clone();
                async move { ([(CONTENT_TYPE, PROTO_MEDIA_TYPE)], body) }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let client = AguiClient::new(common::config(&base)).unwrap();
    let input = RunAgentInput::new("t", "r").user_message("m", "x");
    let mut s = client.run(&input, AguiEncoding::Protobuf).await.unwrap();
    let mut events = Vec::new();
    while let Some(e) = s.next().await {
        events.push(e.unwrap());
    }
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "STEP_FINISHED",
            "RUN_FINISHED"
        ]
    );
    assert_eq!(s.reconnects(), 1);
    assert_eq!(events[2].origin, EventOrigin::Resumed);
    server.abort();
}
