//! The unary fast path (`GrpcRoute`) answers exactly as tonic's generated server
//! does: the same request to both, status, headers, message bytes and trailers
//! compared, for successes and for every kind of bad request.

#![allow(clippy::unwrap_used, reason = "tests")]

#[path = "../../taskwire-a2a/tests/common/mod.rs"]
mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, Request};
use bytes::Bytes;
use http_body_util::BodyExt;
use prost::Message as _;
use serde_json::json;
use taskwire_a2a::pb;
use taskwire_core::{Caller, ScriptedAgent};
use taskwire_grpc::GrpcAdapter;
use tower::ServiceExt;

/// A request of the comparison: method, body, extra headers, with a caller.
type Case<'a> = (&'a str, Vec<u8>, Vec<(&'a str, &'a str)>, bool);

/// status, headers without `date`, data, trailers.
type Answer = (u16, Vec<(String, String)>, Vec<u8>, Option<HeaderMap>);

async fn answer(res: axum::http::Response<Body>) -> Answer {
    let status = res.status().as_u16();
    let mut headers: Vec<(String, String)> = res
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    headers.sort();
    let collected = res.into_body().collect().await.unwrap();
    let trailers = collected.trailers().cloned();
    (status, headers, collected.to_bytes().to_vec(), trailers)
}

fn framed(flag: u8, msg: &[u8]) -> Vec<u8> {
    let mut b = vec![flag];
    b.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    b.extend_from_slice(msg);
    b
}

fn request(method: &str, body: Vec<u8>, headers: &[(&str, &str)], caller: bool) -> Request<Body> {
    let mut req = Request::post(format!("http://x/lf.a2a.v1.A2AService/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut req = req.body(Body::from(Bytes::from(body))).unwrap();
    if caller {
        req.extensions_mut().insert(Caller::new("default", "alice"));
    }
    req
}

#[tokio::test]
async fn the_fast_path_answers_as_tonic_does() {
    let s = common::start_with(
        Arc::new(ScriptedAgent::new()),
        common::test_config(),
        |_| axum::Router::new(),
    )
    .await;
    let sent = s
        .rpc(
            "SendMessage",
            json!({"message": {"messageId": "u-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
        )
        .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let grpc = GrpcAdapter::new(s.adapter.service().clone());

    let get = |id: &str| {
        pb::GetTaskRequest {
            id: id.to_string(),
            ..Default::default()
        }
        .encode_to_vec()
    };
    let mut two = framed(0, &get(&id));
    two.extend(framed(0, &get(&id)));
    let cases: Vec<Case<'_>> = vec![
        ("GetTask", framed(0, &get(&id)), vec![], true),
        (
            "GetTask",
            framed(0, &get(&id)),
            vec![("a2a-version", "1.0")],
            true,
        ),
        ("GetTask", framed(0, &get("missing")), vec![], true),
        (
            "GetTask",
            framed(0, &get(&id)),
            vec![("a2a-version", "9.9")],
            true,
        ),
        ("GetTask", framed(0, &get(&id)), vec![], false),
        ("GetTask", framed(1, &get(&id)), vec![], true),
        (
            "GetTask",
            framed(0, &get(&id)),
            vec![("grpc-encoding", "gzip")],
            true,
        ),
        ("GetTask", framed(0, &[0xff, 0xff, 0xff]), vec![], true),
        ("GetTask", framed(0, &get(&id))[..7].to_vec(), vec![], true),
        ("GetTask", vec![], vec![], true),
        ("GetTask", two, vec![], true),
        (
            "ListTasks",
            framed(0, &pb::ListTasksRequest::default().encode_to_vec()),
            vec![],
            true,
        ),
        (
            "CancelTask",
            framed(
                0,
                &pb::CancelTaskRequest {
                    id: id.clone(),
                    ..Default::default()
                }
                .encode_to_vec(),
            ),
            vec![],
            true,
        ),
        (
            "GetTaskPushNotificationConfig",
            framed(
                0,
                &pb::GetTaskPushNotificationConfigRequest {
                    task_id: id.clone(),
                    id: "none".into(),
                    ..Default::default()
                }
                .encode_to_vec(),
            ),
            vec![],
            true,
        ),
        ("GetExtendedAgentCard", framed(0, &[]), vec![], true),
    ];
    for (method, body, headers, caller) in cases {
        let fast = answer(
            grpc.route()
                .oneshot(request(method, body.clone(), &headers, caller))
                .await
                .unwrap(),
        )
        .await;
        let tonic = answer(
            grpc.server()
                .oneshot(request(method, body.clone(), &headers, caller))
                .await
                .unwrap()
                .map(Body::new),
        )
        .await;
        assert_eq!(fast, tonic, "{method} {body:?} {headers:?} caller {caller}");
    }

    // A success: one message, then grpc-status 0.
    let (status, headers, data, trailers) = answer(
        grpc.route()
            .oneshot(request("GetTask", framed(0, &get(&id)), &[], true))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert!(headers.contains(&("content-type".into(), "application/grpc".into())));
    let task = pb::Task::decode(&data[5..]).unwrap();
    assert_eq!(task.id, id);
    assert_eq!(trailers.unwrap()["grpc-status"], "0");
    s.stop().await;
}
