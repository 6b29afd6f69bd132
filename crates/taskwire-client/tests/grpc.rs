//! The A2A gRPC client against this repo's gRPC binding (same listener, h2c).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{state, task_of};

use std::time::Duration;

use futures::StreamExt;
use taskwire_client::a2a::{self, pb, A2aClient};
use taskwire_client::grpc::A2aGrpcClient;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_lifecycles_streams_and_typed_errors() {
    let server = common::start().await;
    let (_, card) = A2aClient::discover(common::config(&server.base))
        .await
        .unwrap();
    let client = A2aGrpcClient::from_card(common::config(&server.base), &card)
        .unwrap()
        .expect("the card lists a GRPC interface");

    // Echo.
    let reply = client
        .send_message(a2a::send_request(a2a::text_message("hello")))
        .await
        .unwrap();
    let task = task_of(&reply);
    assert_eq!(state(&task), pb::TaskState::Completed);
    assert_eq!(reply.raw["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    let got = client.get_task(&task.id, None).await.unwrap();
    assert_eq!(got.id, task.id);
    let list = client
        .list_tasks(pb::ListTasksRequest::default())
        .await
        .unwrap();
    assert!(list.tasks.iter().any(|t| t.id == task.id));

    // Ask, answer.
    let asked = task_of(
        &client
            .send_message(a2a::send_request(a2a::text_message("ask name?")))
            .await
            .unwrap(),
    );
    assert_eq!(state(&asked), pb::TaskState::InputRequired);
    let mut answer = a2a::text_message("Ada");
    answer.task_id = asked.id.clone();
    let done = task_of(
        &client
            .send_message(a2a::send_request(answer))
            .await
            .unwrap(),
    );
    assert_eq!(state(&done), pb::TaskState::Completed);

    // Cancel.
    let mut req = a2a::send_request(a2a::text_message("sleep 5000"));
    req.configuration = Some(pb::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let sleeping = task_of(&client.send_message(req).await.unwrap());
    let canceled = client.cancel_task(&sleeping.id).await.unwrap();
    assert_eq!(state(&canceled), pb::TaskState::Canceled);

    // Typed errors from statuses with ErrorInfo.
    let err = client
        .get_task("0123456789abcdef0123456789abcdef", None)
        .await
        .unwrap_err();
    let rpc = err.rpc().expect("mapped to an A2A error");
    assert_eq!(rpc.code, a2a::code::TASK_NOT_FOUND);
    assert_eq!(rpc.reason.as_deref(), Some("TASK_NOT_FOUND"));
    assert_eq!(rpc.grpc_code, Some(tonic::Code::NotFound as i32));
    let err = client.cancel_task(&done.id).await.unwrap_err();
    assert_eq!(err.rpc_code(), Some(a2a::code::TASK_NOT_CANCELABLE));

    // Bearer metadata is sent: bob does not see alice's task.
    let mut bob = common::config(&server.base);
    bob.bearer_token = Some("bob".into());
    let bob = A2aGrpcClient::new(bob).unwrap();
    let err = bob.get_task(&task.id, None).await.unwrap_err();
    assert_eq!(err.rpc_code(), Some(a2a::code::TASK_NOT_FOUND));

    // Streaming.
    let s = client
        .send_streaming_message(a2a::send_request(a2a::text_message("stream 3")))
        .await
        .unwrap();
    let events = tokio::time::timeout(Duration::from_secs(10), s.collect_all())
        .await
        .expect("ends")
        .unwrap();
    assert_eq!(
        events.last().unwrap().state(),
        Some(pb::TaskState::Completed)
    );
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

    // Subscribe through an interrupt.
    let asked = task_of(
        &client
            .send_message(a2a::send_request(a2a::text_message("ask again?")))
            .await
            .unwrap(),
    );
    let mut sub = client.subscribe_to_task(&asked.id).await.unwrap();
    let first = sub.next().await.unwrap().unwrap();
    assert_eq!(first.state(), Some(pb::TaskState::InputRequired));
    let mut answer = a2a::text_message("yes");
    answer.task_id = asked.id.clone();
    client
        .send_message(a2a::send_request(answer))
        .await
        .unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(10), sub.collect_all())
        .await
        .expect("ends")
        .unwrap();
    assert_eq!(rest.last().unwrap().state(), Some(pb::TaskState::Completed));

    // Push config CRUD and the extended card.
    let t = task_of(
        &client
            .send_message(a2a::send_request(a2a::text_message("hi")))
            .await
            .unwrap(),
    );
    let created = client
        .create_push_config(pb::TaskPushNotificationConfig {
            task_id: t.id.clone(),
            url: "http://127.0.0.1:9/hook".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        client.list_push_configs(&t.id).await.unwrap().configs.len(),
        1
    );
    assert_eq!(
        client
            .get_push_config(&t.id, &created.id)
            .await
            .unwrap()
            .url,
        "http://127.0.0.1:9/hook"
    );
    client.delete_push_config(&t.id, &created.id).await.unwrap();
    assert_eq!(client.extended_agent_card().await.unwrap().name, "scripted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_stream_reconnects_after_the_connection_drops() {
    // The connection is cut when the chunks arrive after the first sleep; the
    // task is still in its second sleep when the client resubscribes.
    let server = common::start().await;
    let proxy = common::pause_cutting_proxy(server.addr, Duration::from_millis(150)).await;
    let client = A2aGrpcClient::new(common::config(&proxy.base)).unwrap();
    let s = client
        .send_streaming_message(a2a::send_request(a2a::text_message(
            "sleep 400\nstream 2\nsleep 400\ndone",
        )))
        .await
        .unwrap();
    let (events, reconnects) = tokio::time::timeout(Duration::from_secs(20), async {
        let mut s = s;
        let mut out = Vec::new();
        while let Some(e) = s.next().await {
            out.push(e.unwrap());
        }
        (out, s.reconnects())
    })
    .await
    .expect("stream ends");
    assert_eq!(
        proxy.streams_seen.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the connection was cut once"
    );
    assert!(reconnects >= 1);
    assert!(events
        .iter()
        .any(|e| e.origin == taskwire_client::a2a::EventOrigin::Resumed));
    assert_eq!(
        events.last().unwrap().state(),
        Some(pb::TaskState::Completed)
    );
}
