//! The three A2A clients behind one trait: the same operations through
//! `Arc<dyn A2aBinding>` over JSON-RPC, HTTP+JSON and gRPC, against this
//! repo's server. `send_text`, `wait_task`, `subscribe_to_task` and `probe` are
//! the trait's own (gRPC had no `send_text` or `wait_task` before it).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::{state, task_of};

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use taskwire_client::a2a::{pb, A2aClient, BINDING_GRPC, BINDING_JSONRPC};
use taskwire_client::a2a_rest::{A2aRestClient, BINDING_HTTP_JSON};
use taskwire_client::grpc::A2aGrpcClient;
use taskwire_client::{A2aBinding, ClientError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_binding_serves_the_same_operations_through_the_trait() {
    let server = common::start().await;
    let config = common::config(&server.base);
    let (rpc, card) = A2aClient::discover(config.clone()).await.expect("discover");
    let grpc = A2aGrpcClient::from_card(config.clone(), &card)
        .expect("grpc client")
        .expect("the card lists a GRPC interface");
    let (rest, _) = A2aRestClient::discover(config).await.expect("rest");
    let bindings: Vec<Arc<dyn A2aBinding>> = vec![Arc::new(rpc), Arc::new(rest), Arc::new(grpc)];
    let names: Vec<_> = bindings.iter().map(|b| b.binding()).collect();
    assert_eq!(names, [BINDING_JSONRPC, BINDING_HTTP_JSON, BINDING_GRPC]);

    for b in &bindings {
        let name = b.binding();
        b.probe()
            .await
            .unwrap_or_else(|e| panic!("{name}: probe: {e}"));

        // Blocking echo.
        let done = task_of(&b.send_text("hello", false).await.expect("send"));
        assert_eq!(state(&done), pb::TaskState::Completed, "{name}");

        // A task left running, waited for by polling.
        let sleeping = task_of(&b.send_text("sleep 150", true).await.expect("send"));
        let waited = b
            .wait_task(&sleeping.id, Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("{name}: wait: {e}"));
        assert_eq!(state(&waited), pb::TaskState::Completed, "{name}");

        // An interrupted task ends the wait too; subscribing shows its snapshot.
        let asked = task_of(&b.send_text("ask name?", true).await.expect("send"));
        let waited = b
            .wait_task(&asked.id, Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(state(&waited), pb::TaskState::InputRequired, "{name}");
        let mut sub = b.subscribe_to_task(&asked.id).await.expect("subscribe");
        let first = sub.next().await.expect("an event").expect("not an error");
        assert_eq!(first.state(), Some(pb::TaskState::InputRequired), "{name}");
        drop(sub);
        let canceled = b.cancel_task(&asked.id).await.expect("cancel");
        assert_eq!(state(&canceled), pb::TaskState::Canceled, "{name}");

        // A wait that runs out says so.
        let long = task_of(&b.send_text("sleep 5000", true).await.expect("send"));
        match b.wait_task(&long.id, Duration::from_millis(120)).await {
            Err(ClientError::Timeout(m)) => assert!(m.contains(&long.id), "{name}: {m}"),
            other => panic!("{name}: expected a timeout, got {other:?}"),
        }
        b.cancel_task(&long.id).await.expect("cancel");

        // The binding's own client is reachable for its raw calls.
        let any = b.as_any();
        assert!(
            any.is::<A2aClient>() || any.is::<A2aRestClient>() || any.is::<A2aGrpcClient>(),
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_of_nothing_listening_fails() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let config = common::config(&base);
    let bindings: Vec<Arc<dyn A2aBinding>> = vec![
        Arc::new(A2aClient::new(config.clone()).unwrap()),
        Arc::new(A2aGrpcClient::new(config).unwrap()),
    ];
    for b in bindings {
        assert!(b.probe().await.is_err(), "{}", b.binding());
    }
}
