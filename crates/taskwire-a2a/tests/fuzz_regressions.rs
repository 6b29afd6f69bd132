//! Regressions from fuzzing the push-config URL check (docs/fuzzing.md).
//!
//! F3: `push::check_url` refuses a URL whose host is (or resolves to) a loopback,
//! private or link-local address, but the delivery client followed redirects, so a
//! receiver that passed the check could send the server's POST anywhere with one
//! `307 Temporary Redirect`. Fixed: delivery uses `taskwire_webhook::client`,
//! which never follows a redirect (a 3xx is a failed attempt).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, StatusCode};
use axum::routing::post;
use axum::Router;
use taskwire_a2a::pb;
use taskwire_a2a::push::PushManager;
use taskwire_a2a::A2aConfig;
use taskwire_core::{
    Caller, CreateTask, MemoryStore, Message, Runtime, RuntimeConfig, ScriptedAgent, TaskService,
};

/// A receiver on loopback that counts POSTs and answers each with `answer`.
async fn receiver(
    answer: impl Fn() -> (StatusCode, Vec<(header::HeaderName, String)>) + Clone + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let app = Router::new().route(
        "/hook",
        post(move || {
            let h = h.clone();
            let answer = answer.clone();
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                let (status, headers) = answer();
                let mut r = axum::response::Response::new(axum::body::Body::empty());
                *r.status_mut() = status;
                for (k, v) in headers {
                    r.headers_mut().insert(k, v.parse().unwrap());
                }
                r
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/hook"), hits)
}

#[tokio::test]
async fn push_delivery_does_not_follow_redirects() {
    // Where the redirect points: in an attack, an internal address the URL check
    // would have refused.
    let (inner_url, inner_hits) = receiver(|| (StatusCode::OK, vec![])).await;
    let target = inner_url.clone();
    let (outer_url, outer_hits) = receiver(move || {
        (
            StatusCode::TEMPORARY_REDIRECT,
            vec![(header::LOCATION, target.clone())],
        )
    })
    .await;

    let store = Arc::new(MemoryStore::new());
    let svc = TaskService::new(store, "scripted");
    let rt = Runtime::start(
        svc.clone(),
        Arc::new(ScriptedAgent::new()),
        RuntimeConfig::default(),
    );
    let caller = Caller::new("default", "alice");
    let cfg = {
        let mut v = A2aConfig::default();
        v.push_allow_private = true;
        v.push_max_attempts = 1;
        v.push_base_backoff = Duration::from_millis(10);
        v
    };
    let task = svc
        .create(&caller, CreateTask::new(Message::user_text("ask go?")))
        .await
        .unwrap()
        .task;
    let task = svc
        .wait_until(&caller, &task.id, Duration::from_secs(10), |t| {
            t.state.is_interrupted()
        })
        .await
        .unwrap();
    let push = PushManager::new(svc.clone(), &cfg);
    let created = push
        .create(
            &caller,
            &task,
            pb::TaskPushNotificationConfig {
                url: outer_url,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    svc.send_input(&caller, &task.id, Message::user_text("now"))
        .await
        .unwrap();
    // Wait for the first delivery attempt, then a little for a followed redirect.
    for _ in 0..200 {
        if outer_hits.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(outer_hits.load(Ordering::SeqCst) > 0, "no delivery attempt");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        inner_hits.load(Ordering::SeqCst),
        0,
        "the push POST followed a redirect to {inner_url}"
    );
    // The refusal is in the config's delivery state.
    let state = push
        .delivery_state(&task.id, &created.id)
        .await
        .unwrap()
        .unwrap();
    assert!(state.failed > 0 && state.delivered == 0, "{state:?}");
    let why = state.last_error.unwrap_or_default();
    assert!(why.contains("redirects are not followed"), "{why}");
    push.shutdown();
    rt.shutdown(Duration::from_millis(100)).await;
}
