//! gRPC binding over the same listener as JSON-RPC (h2c), through the shared layer.

#![allow(clippy::unwrap_used, reason = "test helpers")]

#[path = "../../taskwire-a2a/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{start_with, test_config, Server};
use futures::StreamExt;
use prost::Message as _;
use serde_json::json;
use taskwire_a2a::pb;
use taskwire_core::ScriptedAgent;
use taskwire_grpc::{A2aServiceClient, ErrorInfo, GrpcAdapter, RpcStatus};
use tonic::transport::Channel;
use tonic::Code;

async fn grpc_server() -> (Server, A2aServiceClient<Channel>) {
    // gRPC joins the JSON-RPC routes on the same listener (h2c).
    let s = start_with(Arc::new(ScriptedAgent::new()), test_config(), |a| {
        GrpcAdapter::new(a.service().clone()).routes()
    })
    .await;
    let ch = Channel::from_shared(s.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    (s, A2aServiceClient::new(ch))
}

fn msg(text: &str, id: &str) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        message: Some(pb::Message {
            message_id: id.into(),
            role: pb::Role::User as i32,
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text(text.into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn task_of(r: pb::SendMessageResponse) -> pb::Task {
    match r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("not a task: {other:?}"),
    }
}

fn reason(st: &tonic::Status) -> String {
    let s = RpcStatus::decode(st.details()).unwrap();
    assert_eq!(s.code, st.code() as i32);
    let any = &s.details[0];
    assert_eq!(any.type_url, "type.googleapis.com/google.rpc.ErrorInfo");
    let info = ErrorInfo::decode(any.value.clone()).unwrap();
    assert_eq!(info.domain, "a2a-protocol.org");
    info.reason
}

fn state(t: &pb::Task) -> pb::TaskState {
    pb::TaskState::try_from(t.status.as_ref().unwrap().state).unwrap()
}

#[tokio::test]
async fn unary_methods_share_the_service_layer() {
    let (s, mut c) = grpc_server().await;
    let t = task_of(
        c.send_message(msg("hello", "g1"))
            .await
            .unwrap()
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::Completed);
    assert_eq!(
        t.artifacts[0].parts[0].content,
        Some(pb::part::Content::Text("hello".into()))
    );
    // The same task is visible over JSON-RPC.
    let r = s.rpc("GetTask", json!({"id": t.id})).await;
    assert_eq!(r["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    let got = c
        .get_task(pb::GetTaskRequest {
            id: t.id.clone(),
            history_length: Some(0),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(got.history.is_empty());
    let l = c
        .list_tasks(pb::ListTasksRequest::default())
        .await
        .unwrap()
        .into_inner();
    assert_eq!(l.total_size, 1);
    // Errors carry the A2A mapping and an ErrorInfo.
    let e = c
        .cancel_task(pb::CancelTaskRequest {
            id: t.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(reason(&e), "TASK_NOT_CANCELABLE");
    let mut req = tonic::Request::new(pb::GetTaskRequest {
        id: t.id.clone(),
        ..Default::default()
    });
    req.metadata_mut()
        .insert("x-test-principal", "mallory".parse().unwrap());
    let e = c.get_task(req).await.unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert_eq!(reason(&e), "TASK_NOT_FOUND");
    let mut req = tonic::Request::new(pb::ListTasksRequest::default());
    req.metadata_mut()
        .insert("a2a-version", "99.0".parse().unwrap());
    let e = c.list_tasks(req).await.unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(reason(&e), "VERSION_NOT_SUPPORTED");
    let e = c
        .get_extended_agent_card(pb::GetExtendedAgentCardRequest::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(reason(&e), "UNSUPPORTED_OPERATION");
    s.stop().await;
}

#[tokio::test]
async fn streaming_and_subscribe() {
    let (s, mut c) = grpc_server().await;
    let frames: Vec<pb::StreamResponse> = c
        .send_streaming_message(msg("stream 2", "g-st"))
        .await
        .unwrap()
        .into_inner()
        .map(|r| r.unwrap())
        .collect()
        .await;
    use pb::stream_response::Payload;
    assert!(matches!(frames[0].payload, Some(Payload::Task(_))));
    let chunks = frames
        .iter()
        .filter(|f| matches!(f.payload, Some(Payload::ArtifactUpdate(_))))
        .count();
    assert_eq!(chunks, 2);
    match &frames.last().unwrap().payload {
        Some(Payload::StatusUpdate(u)) => {
            assert_eq!(
                u.status.as_ref().unwrap().state,
                pb::TaskState::Completed as i32
            )
        }
        other => panic!("{other:?}"),
    }
    // Input required: the send stream closes, a subscription stays open.
    let frames: Vec<pb::StreamResponse> = c
        .send_streaming_message(msg("ask what?", "g-ask"))
        .await
        .unwrap()
        .into_inner()
        .map(|r| r.unwrap())
        .collect()
        .await;
    let Some(Payload::Task(t)) = &frames[0].payload else {
        panic!()
    };
    let id = t.id.clone();
    let mut sub = c
        .subscribe_to_task(pb::SubscribeToTaskRequest {
            id: id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let first = sub.next().await.unwrap().unwrap();
    assert!(matches!(first.payload, Some(Payload::Task(_))));
    let mut answer = msg("green", "g-ans");
    answer.message.as_mut().unwrap().task_id = id.clone();
    let done = task_of(c.send_message(answer).await.unwrap().into_inner());
    assert_eq!(state(&done), pb::TaskState::Completed);
    let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(10), sub.collect::<Vec<_>>())
        .await
        .unwrap();
    let last = rest.last().unwrap().as_ref().unwrap();
    assert!(
        matches!(&last.payload, Some(Payload::StatusUpdate(u)) if u.status.as_ref().unwrap().state == pb::TaskState::Completed as i32)
    );
    let e = c
        .subscribe_to_task(pb::SubscribeToTaskRequest {
            id,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(reason(&e), "UNSUPPORTED_OPERATION");
    s.stop().await;
}

/// Every method of the service is routed to its own handler (each has an exact
/// route; see `RPC_METHODS`), and a method the service does not have still
/// reaches tonic through the wildcard route and is UNIMPLEMENTED, in gRPC's
/// shape rather than the router's 404.
#[tokio::test]
async fn every_method_is_routed_and_unknown_ones_are_unimplemented() {
    let (s, _) = grpc_server().await;
    let ch = Channel::from_shared(s.base.clone())
        .unwrap()
        .connect()
        .await
        .unwrap();
    let grpc = tonic::client::Grpc::new(ch);
    let call = |path: String| {
        let mut grpc = grpc.clone();
        async move {
            grpc.ready().await.unwrap();
            // An empty message decodes as any request type (all fields default).
            let codec =
                tonic_prost::ProstCodec::<pb::GetTaskRequest, taskwire_wire::wkt::Empty>::default();
            let path = axum::http::uri::PathAndQuery::try_from(path).unwrap();
            let r = tokio::time::timeout(
                Duration::from_secs(10),
                grpc.unary(
                    tonic::Request::new(pb::GetTaskRequest::default()),
                    path,
                    codec,
                ),
            )
            .await
            .expect("answered");
            r.err().map(|st| st.code())
        }
    };
    // A name in RPC_METHODS that is not the service's would be routed to tonic
    // as an unknown method, and be UNIMPLEMENTED here.
    for m in taskwire_grpc::RPC_METHODS {
        let code = call(format!("{}{m}", taskwire_grpc::RPC_PREFIX)).await;
        assert_ne!(code, Some(Code::Unimplemented), "{m} is not routed");
    }
    for m in ["NoSuchMethod", "GetTask/extra", "gettask"] {
        let code = call(format!("{}{m}", taskwire_grpc::RPC_PREFIX)).await;
        assert_eq!(code, Some(Code::Unimplemented), "{m}");
    }
    s.stop().await;
}

#[tokio::test]
async fn push_config_delete_is_idempotent() {
    let (s, mut c) = grpc_server().await;
    let t = task_of(
        c.send_message(msg("ask ready?", "g-push"))
            .await
            .unwrap()
            .into_inner(),
    );
    assert_eq!(state(&t), pb::TaskState::InputRequired);
    let cfg = c
        .create_task_push_notification_config(pb::TaskPushNotificationConfig {
            task_id: t.id.clone(),
            url: "http://127.0.0.1:9/hook".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let del = || pb::DeleteTaskPushNotificationConfigRequest {
        task_id: t.id.clone(),
        id: cfg.id.clone(),
        ..Default::default()
    };
    c.delete_task_push_notification_config(del()).await.unwrap();
    // The config is gone; deleting it again succeeds.
    c.delete_task_push_notification_config(del()).await.unwrap();
    let listed = c
        .list_task_push_notification_configs(pb::ListTaskPushNotificationConfigsRequest {
            task_id: t.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert!(listed.configs.is_empty());
    // An unknown task is still NOT_FOUND.
    let e = c
        .delete_task_push_notification_config(pb::DeleteTaskPushNotificationConfigRequest {
            task_id: "0".repeat(32),
            id: cfg.id.clone(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert_eq!(reason(&e), "TASK_NOT_FOUND");
    s.stop().await;
}
