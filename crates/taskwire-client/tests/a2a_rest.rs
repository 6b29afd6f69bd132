//! The A2A HTTP+JSON client against this repo's server: discovery of the card's
//! HTTP+JSON interface, lifecycles with the scripted agent, typed errors from the
//! binding's error object, push config CRUD with an idempotent delete, the
//! tenant prefix, and stream reconnection with `Last-Event-ID` through a proxy
//! that cuts the stream.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{state, task_of};

use std::sync::{Arc, Mutex};
use std::time::Duration;
use taskwire_client::A2aBinding as _;

use futures::StreamExt;
use taskwire_client::a2a::{self, pb, EventOrigin};
use taskwire_client::a2a_rest::{self, A2aRestClient};
use taskwire_client::{ClientConfig, ClientError, Exchange};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lifecycle_and_errors() {
    let server = common::start().await;
    let seen: Arc<Mutex<Vec<Exchange>>> = Arc::default();
    let log = seen.clone();
    let mut config = common::config(&server.base);
    config.observer = Some(Arc::new(move |e: &Exchange| {
        log.lock().unwrap().push(e.clone())
    }));
    let (client, card) = A2aRestClient::discover(config).await.expect("discover");
    assert_eq!(card.name, "scripted");
    assert_eq!(client.url(), format!("{}/a2a/rest", server.base));

    let done = task_of(&client.send_text("hello", false).await.expect("send"));
    assert_eq!(state(&done), pb::TaskState::Completed);
    let got = client.get_task(&done.id, Some(1)).await.expect("get");
    assert_eq!(got.id, done.id);
    assert!(got.history.len() <= 1);
    let listed = client
        .list_tasks(pb::ListTasksRequest {
            status: pb::TaskState::Completed as i32,
            include_artifacts: Some(true),
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(listed.tasks.len(), 1);
    assert!(!listed.tasks[0].artifacts.is_empty());
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|e| e.protocol == a2a_rest::PROTOCOL || e.operation.starts_with("GET ")));

    // Input required, answered, then a terminal task refuses more.
    let asked = task_of(&client.send_text("ask name?", false).await.unwrap());
    assert_eq!(state(&asked), pb::TaskState::InputRequired);
    let mut answer = a2a::text_message("Ada");
    answer.task_id = asked.id.clone();
    let answered = task_of(
        &client
            .send_message(a2a::send_request(answer))
            .await
            .unwrap(),
    );
    assert_eq!(state(&answered), pb::TaskState::Completed);
    let mut late = a2a::text_message("again");
    late.task_id = answered.id.clone();
    let err = client
        .send_message(a2a::send_request(late))
        .await
        .unwrap_err();
    let rpc = err.rpc().expect("rpc error");
    assert_eq!(rpc.code, a2a::code::UNSUPPORTED_OPERATION, "{err}");
    assert_eq!(rpc.http_status, Some(400));

    // Cancel, idempotent; a completed task is not cancelable (400).
    let sleeping = task_of(&client.send_text("sleep 5000", true).await.unwrap());
    let canceled = client.cancel_task(&sleeping.id).await.unwrap();
    assert_eq!(state(&canceled), pb::TaskState::Canceled);
    assert_eq!(
        state(&client.cancel_task(&sleeping.id).await.unwrap()),
        pb::TaskState::Canceled
    );
    let err = client.cancel_task(&done.id).await.unwrap_err();
    assert_eq!(err.rpc_code(), Some(a2a::code::TASK_NOT_CANCELABLE));
    assert_eq!(err.rpc().and_then(|r| r.http_status), Some(400));

    // Unknown and foreign tasks: 404 TaskNotFound.
    let err = client
        .get_task("0123456789abcdef0123456789abcdef", None)
        .await
        .unwrap_err();
    let rpc = err.rpc().expect("rpc error");
    assert_eq!(rpc.code, a2a::code::TASK_NOT_FOUND);
    assert_eq!(rpc.http_status, Some(404));
    let mut bob_config = common::config(&server.base);
    bob_config.bearer_token = Some("bob".into());
    let bob = A2aRestClient::new(bob_config).unwrap();
    let err = bob.get_task(&done.id, None).await.unwrap_err();
    assert_eq!(err.rpc_code(), Some(a2a::code::TASK_NOT_FOUND));

    // The extended card (this server has one).
    let ext = client.extended_agent_card().await.expect("extended card");
    assert_eq!(
        ext.capabilities
            .as_ref()
            .and_then(|c| c.extended_agent_card),
        Some(true)
    );

    // Subscribing to a terminal task is UnsupportedOperation.
    let err = client.subscribe_to_task(&done.id).await.unwrap_err();
    assert_eq!(err.rpc_code(), Some(a2a::code::UNSUPPORTED_OPERATION));

    // The tenant prefix reaches the same routes.
    let t = client.with_tenant("acme");
    assert_eq!(
        state(&t.get_task(&done.id, None).await.unwrap()),
        pb::TaskState::Completed
    );

    // Nothing listening: a connect error (nothing sent), not a panic.
    let dead = A2aRestClient::new(ClientConfig::new("http://127.0.0.1:1")).unwrap();
    let err = dead.get_task("x", None).await.unwrap_err();
    assert!(matches!(err, ClientError::Connect(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_config_crud_with_idempotent_delete() {
    let server = common::start().await;
    let client = A2aRestClient::new(common::config(&server.base)).unwrap();
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
    assert_eq!(created.task_id, task.id);
    let got = client
        .get_push_config(&task.id, &created.id)
        .await
        .expect("get");
    assert_eq!(got.url, "http://127.0.0.1:9/hook");
    assert_eq!(
        client
            .list_push_configs(&task.id)
            .await
            .unwrap()
            .configs
            .len(),
        1
    );
    client
        .delete_push_config(&task.id, &created.id)
        .await
        .expect("delete");
    client
        .delete_push_config(&task.id, &created.id)
        .await
        .expect("a second delete succeeds");
    assert!(client
        .list_push_configs(&task.id)
        .await
        .unwrap()
        .configs
        .is_empty());
    client.cancel_task(&task.id).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_send_subscribe_and_resume() {
    let server = common::start().await;
    let client = A2aRestClient::new(common::config(&server.base)).unwrap();
    let req = a2a::send_request(a2a::text_message("stream 3"));
    let events = client
        .send_streaming_message(req)
        .await
        .unwrap()
        .collect_all()
        .await
        .expect("events");
    assert!(matches!(
        events[0].response.payload,
        Some(pb::stream_response::Payload::Task(_))
    ));
    assert_eq!(
        events.last().unwrap().state(),
        Some(pb::TaskState::Completed)
    );
    assert!(events.iter().all(|e| e.event_id.is_some()));

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

    // A stream cut after one frame resumes with Last-Event-ID, no duplicate.
    let proxy = common::proxy(server.addr, |n| (n == 0).then_some(1)).await;
    let client = A2aRestClient::new(common::config(&proxy.base)).unwrap();
    let req = a2a::send_request(a2a::text_message("sleep 300\nstream 3"));
    let mut s = client.send_streaming_message(req).await.unwrap();
    let events = tokio::time::timeout(Duration::from_secs(20), async {
        let mut out = Vec::new();
        while let Some(e) = s.next().await {
            out.push(e.expect("event"));
        }
        out
    })
    .await
    .expect("stream ends");
    assert_eq!(s.reconnects(), 1);
    assert_eq!(events[0].origin, EventOrigin::Live);
    assert!(events[1..].iter().all(|e| e.origin == EventOrigin::Resumed));
    assert_eq!(
        events.last().unwrap().state(),
        Some(pb::TaskState::Completed)
    );
    let ids: Vec<u64> = events
        .iter()
        .map(|e| e.event_id.as_deref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
}
