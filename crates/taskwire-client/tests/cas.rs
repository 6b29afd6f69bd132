//! The CAS client against this repo's CAS surface.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::Duration;

use futures::StreamExt;
use taskwire_client::cas::{CasClient, CasInput, CasPhase, Conditional, IoType, TerminalReason};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cas_lifecycles() {
    let server = common::start().await;
    let client = CasClient::new(common::config(&server.base)).unwrap();

    // Echo: poll until terminal, then read the messages.
    let created = client
        .create_task(&CasInput::text("hello"), Some("k-1"))
        .await
        .unwrap();
    let again = client
        .create_task(&CasInput::text("hello"), Some("k-1"))
        .await
        .unwrap();
    assert_eq!(created.id, again.id, "idempotent create");
    let done = client
        .wait_until(&created.id, Duration::from_secs(10), |s| s.is_terminal())
        .await
        .unwrap();
    assert_eq!(done.status.terminal_reason, Some(TerminalReason::Completed));
    let msgs = client.messages(&created.id).await.unwrap();
    assert!(
        msgs.iter()
            .any(|m| m.io == IoType::Output && m.text() == "hello"),
        "{:?}",
        msgs.raw
    );
    // Conditional read: unchanged revision is 304.
    let cond = client
        .status_if_changed(&created.id, &done.status.revision)
        .await
        .unwrap();
    assert_eq!(cond, Conditional::NotModified);

    // Ask: idle, then input completes it.
    let asked = client
        .create_task(&CasInput::text("ask name?"), None)
        .await
        .unwrap();
    let idle = client
        .wait_until(&asked.id, Duration::from_secs(10), |s| {
            s.status.phase == CasPhase::Idle
        })
        .await
        .unwrap();
    let mut events = client
        .events(&asked.id, Some(&idle.status.revision))
        .await
        .unwrap();
    client
        .send_input(&asked.id, &CasInput::text("Ada"), None)
        .await
        .unwrap();
    let mut last = None;
    while let Some(s) = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("event in time")
    {
        last = Some(s.unwrap());
    }
    let last = last.expect("at least one status event");
    assert_eq!(last.status.phase, CasPhase::Terminal);
    let msgs = client.messages(&asked.id).await.unwrap();
    assert!(
        msgs.iter().any(|m| m.text().contains("answer: Ada")),
        "{:?}",
        msgs.raw
    );

    // Input to a terminal task: 409 task_terminal.
    let err = client
        .send_input(&asked.id, &CasInput::text("late"), None)
        .await
        .unwrap_err();
    match &err {
        taskwire_client::ClientError::Http { status, code, .. } => {
            assert_eq!(*status, 409);
            assert_eq!(code.as_deref(), Some("task_terminal"));
        }
        other => panic!("{other:?}"),
    }

    // Host control: complete a sleeping task.
    let sleeping = client
        .create_task(&CasInput::text("sleep 5000"), None)
        .await
        .unwrap();
    client.complete(&sleeping.id, Some("test")).await.unwrap();
    let ended = client
        .wait_until(&sleeping.id, Duration::from_secs(10), |s| s.is_terminal())
        .await
        .unwrap();
    assert_eq!(
        ended.status.terminal_reason,
        Some(TerminalReason::Completed)
    );

    // Long poll returns at once when the revision is stale.
    let s = client
        .wait_status(&sleeping.id, "stale", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(s.id, sleeping.id);

    // Unknown task: 404 not_found.
    let err = client
        .status("0123456789abcdef0123456789abcdef")
        .await
        .unwrap_err();
    assert_eq!(err.http_status(), Some(404));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cas_auth_notification_and_interrupt() {
    let server = common::start().await;
    let client = CasClient::new(common::config(&server.base)).unwrap();
    let t = client
        .create_task(&CasInput::text("auth github"), None)
        .await
        .unwrap();
    let waiting = client
        .wait_until(&t.id, Duration::from_secs(10), |s| {
            !s.status.notifications.is_empty()
        })
        .await
        .unwrap();
    assert_eq!(
        waiting.status.notifications[0].kind.as_str(),
        "user_auth_required"
    );
    assert_eq!(
        waiting.status.notifications[0].provider.as_deref(),
        Some("github")
    );
    client.grant_authorization(&t.id, "github").await.unwrap();
    let done = client
        .wait_until(&t.id, Duration::from_secs(10), |s| s.is_terminal())
        .await
        .unwrap();
    assert!(done.status.notifications.is_empty());

    let t = client
        .create_task(&CasInput::text("sleep 5000"), None)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    client.interrupt(&t.id, None).await.unwrap();
    let idle = client
        .wait_until(&t.id, Duration::from_secs(10), |s| {
            s.status.phase == CasPhase::Idle
        })
        .await
        .unwrap();
    assert_eq!(idle.status.phase, CasPhase::Idle);
}
