//! The A2A JSON-RPC client against this repo's server: lifecycles with the
//! scripted agent, typed errors, push config CRUD, stream reconnection with
//! `Last-Event-ID` through a proxy that cuts the stream, and the polling
//! fallback.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{state, task_of};

use std::sync::{Arc, Mutex};
use std::time::Duration;
use taskwire_client::A2aBinding as _;

use futures::StreamExt;
use taskwire_client::a2a::{self, pb, A2aClient, EventOrigin};
use taskwire_client::{ClientConfig, ClientError, Exchange};

fn artifact_text(t: &pb::Task) -> String {
    t.artifacts
        .iter()
        .map(|a| a2a::parts_text(&a.parts))
        .collect::<Vec<_>>()
        .join("|")
}

/// A base url naming the JSON-RPC endpoint (what a user copies from a card):
/// nothing is at `{endpoint}/.well-known/agent-card.json`, so the card is
/// found at the origin's `/.well-known/agent-card.json` (issue 42).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_with_an_endpoint_path_finds_the_card_at_the_origin() {
    let server = common::start().await;
    let config = common::config(&format!("{}/a2a", server.base));
    let (client, card) = A2aClient::discover(config).await.expect("discover");
    assert_eq!(card.name, "scripted");
    assert_eq!(client.endpoint(), format!("{}/a2a", server.base));
    let reply = client.send_text("hello", false).await.expect("send");
    assert_eq!(state(&task_of(&reply)), pb::TaskState::Completed);
    // Any path with no card below it falls back to the origin's card.
    let config = common::config(&format!("{}/nothing-here", server.base));
    let probe = A2aClient::new(config).expect("client");
    assert_eq!(probe.agent_card().await.expect("card").name, "scripted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn card_discovery_and_echo_lifecycle() {
    let server = common::start().await;
    let seen: Arc<Mutex<Vec<Exchange>>> = Arc::default();
    let log = seen.clone();
    let mut config = common::config(&server.base);
    config.observer = Some(Arc::new(move |e: &Exchange| {
        log.lock().unwrap().push(e.clone())
    }));
    let (client, card) = A2aClient::discover(config).await.expect("discover");
    assert_eq!(card.name, "scripted");
    assert_eq!(client.endpoint(), format!("{}/a2a", server.base));
    assert_eq!(card.raw["name"], "scripted");

    let reply = client.send_text("hello", false).await.expect("send");
    let task = task_of(&reply);
    assert_eq!(state(&task), pb::TaskState::Completed);
    assert_eq!(artifact_text(&task), "hello");
    assert_eq!(reply.raw["task"]["status"]["state"], "TASK_STATE_COMPLETED");

    let got = client.get_task(&task.id, Some(1)).await.expect("get");
    assert_eq!(got.id, task.id);
    assert!(
        got.history.len() <= 1,
        "historyLength honoured: {:?}",
        got.raw
    );

    let list = client
        .list_tasks(pb::ListTasksRequest::default())
        .await
        .expect("list");
    assert!(list.tasks.iter().any(|t| t.id == task.id));

    let ext = client.extended_agent_card().await.expect("extended card");
    assert_eq!(ext.name, "scripted");

    let ops: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|e| e.operation.clone())
        .collect();
    assert!(ops.contains(&"SendMessage".to_string()), "{ops:?}");
    assert!(ops.iter().any(|o| o.contains("agent-card")), "{ops:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_then_answer_then_cancel() {
    let server = common::start().await;
    let client = A2aClient::new(common::config(&server.base)).unwrap();

    let asked = task_of(
        &client
            .send_text("ask What is your name?", false)
            .await
            .unwrap(),
    );
    assert_eq!(state(&asked), pb::TaskState::InputRequired);
    let mut answer = a2a::text_message("Ada");
    answer.task_id = asked.id.clone();
    answer.context_id = asked.context_id.clone();
    let done = task_of(
        &client
            .send_message(a2a::send_request(answer))
            .await
            .unwrap(),
    );
    assert_eq!(state(&done), pb::TaskState::Completed);
    assert_eq!(artifact_text(&done), "answer: Ada");

    // Messages to a terminal task are refused with a typed error.
    let mut late = a2a::text_message("again");
    late.task_id = done.id.clone();
    let err = client
        .send_message(a2a::send_request(late))
        .await
        .unwrap_err();
    assert_eq!(
        err.rpc_code(),
        Some(a2a::code::UNSUPPORTED_OPERATION),
        "{err}"
    );

    // Cancel a sleeping task sent with returnImmediately.
    let sleeping = task_of(&client.send_text("sleep 5000", true).await.unwrap());
    assert!(!a2a::is_terminal(state(&sleeping)));
    let canceled = client.cancel_task(&sleeping.id).await.unwrap();
    assert_eq!(state(&canceled), pb::TaskState::Canceled);
    // Idempotent.
    let again = client.cancel_task(&sleeping.id).await.unwrap();
    assert_eq!(state(&again), pb::TaskState::Canceled);
    // Not cancelable once completed.
    let err = client.cancel_task(&done.id).await.unwrap_err();
    assert_eq!(err.rpc_code(), Some(a2a::code::TASK_NOT_CANCELABLE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_errors_for_unknown_and_foreign_tasks_and_bad_requests() {
    let server = common::start().await;
    let alice = A2aClient::new(common::config(&server.base)).unwrap();
    let err = alice
        .get_task("0123456789abcdef0123456789abcdef", None)
        .await
        .unwrap_err();
    let rpc = err.rpc().expect("rpc error");
    assert_eq!(rpc.code, a2a::code::TASK_NOT_FOUND);
    assert_eq!(rpc.reason.as_deref(), Some("TASK_NOT_FOUND"));
    assert!(rpc.data.is_some());

    // Bearer auth is sent: bob does not see alice's task.
    let task = task_of(&alice.send_text("hi", false).await.unwrap());
    let mut bob_config = common::config(&server.base);
    bob_config.bearer_token = Some("bob".into());
    let bob = A2aClient::new(bob_config).unwrap();
    let err = bob.get_task(&task.id, None).await.unwrap_err();
    assert_eq!(err.rpc_code(), Some(a2a::code::TASK_NOT_FOUND));
    assert!(alice.get_task(&task.id, None).await.is_ok());

    // Raw probes.
    let raw = alice.post_raw("{", &[]).await.unwrap();
    let body = raw.json().unwrap();
    assert_eq!(body["error"]["code"], -32700, "{body}");
    let err = alice
        .call_raw("NoSuchMethod", serde_json::json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.rpc_code(), Some(a2a::code::METHOD_NOT_FOUND));

    // Subscribing to a terminal task is UnsupportedOperation.
    let err = alice.subscribe_to_task(&task.id).await.unwrap_err();
    assert_eq!(
        err.rpc_code(),
        Some(a2a::code::UNSUPPORTED_OPERATION),
        "{err}"
    );

    // Nothing listening: a connect error (nothing sent), not a panic.
    let dead = A2aClient::new(ClientConfig::new("http://127.0.0.1:1")).unwrap();
    let err = dead.get_task("x", None).await.unwrap_err();
    assert!(matches!(err, ClientError::Connect(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_config_crud() {
    let server = common::start().await;
    let client = A2aClient::new(common::config(&server.base)).unwrap();
    let task = task_of(&client.send_text("sleep 2000", true).await.unwrap());
    let created = client
        .create_push_config(pb::TaskPushNotificationConfig {
            task_id: task.id.clone(),
            url: "http://127.0.0.1:9/hook".into(),
            token: "tok".into(),
            ..Default::default()
        })
        .await
        .expect("create");
    assert!(!created.id.is_empty());
    let got = client
        .get_push_config(&task.id, &created.id)
        .await
        .expect("get");
    assert_eq!(got.url, "http://127.0.0.1:9/hook");
    let list = client.list_push_configs(&task.id).await.expect("list");
    assert_eq!(list.configs.len(), 1);
    client
        .delete_push_config(&task.id, &created.id)
        .await
        .expect("delete");
    let list = client.list_push_configs(&task.id).await.expect("list");
    assert!(list.configs.is_empty());
    client.cancel_task(&task.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_send_and_subscribe() {
    let server = common::start().await;
    let client = A2aClient::new(common::config(&server.base)).unwrap();
    let req = a2a::send_request(a2a::text_message("stream 3"));
    let stream = client.send_streaming_message(req).await.unwrap();
    let events = stream.collect_all().await.expect("events");
    assert!(matches!(
        events[0].response.payload,
        Some(pb::stream_response::Payload::Task(_))
    ));
    let chunks = events
        .iter()
        .filter(|e| {
            matches!(
                e.response.payload,
                Some(pb::stream_response::Payload::ArtifactUpdate(_))
            )
        })
        .count();
    assert_eq!(chunks, 3);
    assert_eq!(
        events.last().unwrap().state(),
        Some(pb::TaskState::Completed)
    );
    assert!(events
        .iter()
        .all(|e| e.origin == EventOrigin::Live && e.event_id.is_some()));

    // Subscribe stays open through an interrupt; the answer completes it.
    let asked = task_of(&client.send_text("ask name?", false).await.unwrap());
    let mut sub = client.subscribe_to_task(&asked.id).await.unwrap();
    let first = sub.next().await.unwrap().unwrap();
    assert_eq!(first.state(), Some(pb::TaskState::InputRequired));
    let mut answer = a2a::text_message("Bo");
    answer.task_id = asked.id.clone();
    client
        .send_message(a2a::send_request(answer))
        .await
        .unwrap();
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(10), sub.collect::<Vec<_>>())
        .await
        .expect("subscription ends");
    let rest: Vec<_> = rest.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(rest.last().unwrap().state(), Some(pb::TaskState::Completed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_stream_resumes_with_last_event_id_without_gap_or_duplicate() {
    let server = common::start().await;
    // The first event stream is cut after one frame; later ones pass.
    let proxy = common::proxy(server.addr, |n| (n == 0).then_some(1)).await;
    let client = A2aClient::new(common::config(&proxy.base)).unwrap();
    let req = a2a::send_request(a2a::text_message("sleep 300\nstream 3"));
    let stream = client.send_streaming_message(req).await.unwrap();
    let events = tokio::time::timeout(Duration::from_secs(20), async {
        let mut s = stream;
        let mut out = Vec::new();
        while let Some(e) = s.next().await {
            out.push(e.expect("event"));
        }
        (out, s.reconnects(), s.fell_back_to_polling())
    })
    .await
    .expect("stream ends");
    let (events, reconnects, polled) = events;
    assert_eq!(reconnects, 1, "one reconnect");
    assert!(!polled);
    assert!(proxy.streams_seen.load(std::sync::atomic::Ordering::SeqCst) >= 2);
    assert_eq!(events[0].origin, EventOrigin::Live);
    assert!(events[1..].iter().all(|e| e.origin == EventOrigin::Resumed));
    assert_eq!(
        events.last().unwrap().state(),
        Some(pb::TaskState::Completed)
    );

    // No duplicate: event ids strictly increase.
    let ids: Vec<u64> = events
        .iter()
        .map(|e| e.event_id.as_deref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");

    // No gap: an unbroken resubscription from the first event id, straight to
    // the server, yields exactly the events the resumed stream delivered.
    let direct = A2aClient::new(common::config(&server.base)).unwrap();
    let task_id = events[0].task_id().unwrap().to_string();
    let again = direct
        .resubscribe(&task_id, events[0].event_id.as_deref())
        .await
        .unwrap()
        .collect_all()
        .await
        .unwrap();
    let resumed: Vec<_> = events[1..].iter().map(|e| (&e.event_id, e.raw())).collect();
    let reference: Vec<_> = again.iter().map(|e| (&e.event_id, e.raw())).collect();
    assert_eq!(resumed, reference);
    let chunks = events
        .iter()
        .filter(|e| {
            matches!(
                e.response.payload,
                Some(pb::stream_response::Payload::ArtifactUpdate(_))
            )
        })
        .count();
    assert_eq!(chunks, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_falls_back_to_polling_when_it_cannot_be_reestablished() {
    let server = common::start().await;
    // The first stream is cut after one frame; every later one right after
    // its headers, so resubscribing never delivers anything.
    let proxy = common::proxy(server.addr, |n| Some(usize::from(n == 0))).await;
    let client = A2aClient::new(common::config(&proxy.base)).unwrap();
    let req = a2a::send_request(a2a::text_message("sleep 300\nstream 2"));
    let mut s = client.send_streaming_message(req).await.unwrap();
    let mut events = Vec::new();
    let done = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(e) = s.next().await {
            events.push(e.expect("event"));
        }
    })
    .await;
    assert!(done.is_ok(), "stream ends");
    assert!(s.fell_back_to_polling());
    assert_eq!(s.reconnects(), 3, "max_attempts resubscriptions first");
    let last = events.last().unwrap();
    assert_eq!(last.origin, EventOrigin::Polled);
    assert_eq!(last.state(), Some(pb::TaskState::Completed));
    assert!(last.raw()["task"]["artifacts"].is_array(), "{}", last.raw());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_and_stream_events_beyond_the_limit_are_refused() {
    let server = common::start().await;
    let mut config = common::config(&server.base);
    // Room for a small answer, not for a task with its history.
    config.max_message_bytes = 120;
    let client = A2aClient::new(config).expect("client");
    let e = client
        .send_text("hello", false)
        .await
        .expect_err("too large");
    assert!(
        matches!(&e, ClientError::Decode { detail, .. } if detail.contains("larger than 120 bytes")),
        "{e:?}"
    );
    let e = client
        .send_streaming_message(a2a::text_request("hello", false))
        .await
        .expect("the stream opens")
        .collect_all()
        .await
        .expect_err("the first event is too large");
    assert!(
        matches!(&e, ClientError::Decode { detail, .. } if detail.contains("larger than 120 bytes")),
        "{e:?}"
    );
    // The same calls pass with the default limit.
    let client = A2aClient::new(common::config(&server.base)).expect("client");
    client.send_text("hello", false).await.expect("send");
}
