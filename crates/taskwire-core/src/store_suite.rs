//! The shared store test suite. Every [`TaskStore`] must pass it: the in-memory store
//! runs it in this crate's tests, the SQLite and PostgreSQL stores in theirs.
//!
//! Each check gets a fresh store from the factory. The checks panic on failure, so
//! call [`run_all`] from a `#[tokio::test(flavor = "multi_thread")]`.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use serde_json::json;

use crate::error::{CoreError, StoreError};
use crate::event::EventKind;
use crate::record::{PutOutcome, Quota, Record, RecordKind, RecordScope};
use crate::runtime::{Runtime, RuntimeConfig};
use crate::scripted::{ask_key, ScriptedAgent};
use crate::service::{Access, CreateTask, TaskDefaults, TaskService};
use crate::store::{Commit, ListOrder, ListQuery, QueueOp, TaskStore};
use crate::types::{Caller, InputResponse, Message, TaskState};

/// A factory of fresh, empty stores.
pub type Factory<'a> = &'a (dyn Fn() -> Arc<dyn TaskStore> + Sync);

fn alice() -> Caller {
    Caller::new("t1", "alice")
}

fn service(store: Arc<dyn TaskStore>) -> TaskService {
    TaskService::new(store, "scripted")
}

fn msg(id: &str, text: &str) -> Message {
    let mut m = Message::user_text(text);
    m.message_id = id.to_string();
    m
}

/// Runs every check.
pub async fn run_all(factory: Factory<'_>) {
    create_is_idempotent(factory()).await;
    commit_is_compare_and_set(factory()).await;
    events_are_ordered_and_paged(factory()).await;
    fence_guards_commits(factory()).await;
    claims_leases_and_reaping(factory()).await;
    queue_operations(factory()).await;
    listing_filters_and_cursor(factory()).await;
    sweep_removes_expired_terminal_tasks(factory()).await;
    idle_expiry_candidates(factory()).await;
    counts(factory()).await;
    hub_is_published(factory()).await;
    runtime_end_to_end(factory()).await;
    records_are_keyed_versioned_and_swept(factory()).await;
    record_quotas_count_live_records_per_owner(factory()).await;
    record_leases_are_exclusive_and_fenced(factory()).await;
}

pub async fn create_is_idempotent(store: Arc<dyn TaskStore>) {
    let svc = service(store);
    let a = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap();
    let b = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap();
    assert!(a.created && !b.created);
    assert_eq!(a.task.id, b.task.id);
    // Another owner or tenant with the same message id gets its own task.
    let c = svc
        .create(&Caller::new("t1", "bob"), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap();
    let d = svc
        .create(
            &Caller::new("t2", "alice"),
            CreateTask::new(msg("m1", "hi")),
        )
        .await
        .unwrap();
    assert!(c.created && d.created);
    assert_ne!(c.task.id, a.task.id);
    assert_ne!(d.task.id, a.task.id);
    assert_eq!(svc.store().queue_depth().await.unwrap(), 3);
}

pub async fn commit_is_compare_and_set(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let t = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let mut next = (*t).clone();
    next.version += 1;
    next.metadata.insert("k".into(), json!(1));
    store
        .commit(Commit {
            task: Arc::new(next.clone()),
            expected_version: t.version,
            events: vec![],
            queue: QueueOp::Keep,
            fence: None,
        })
        .await
        .unwrap();
    // A second writer with the old version loses.
    let err = store
        .commit(Commit {
            task: Arc::new(next.clone()),
            expected_version: t.version,
            events: vec![],
            queue: QueueOp::Keep,
            fence: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Conflict), "{err:?}");
    let got = store.get(&t.id).await.unwrap().unwrap();
    assert_eq!(got.version, t.version + 1);
    assert_eq!(got.metadata.get("k"), Some(&json!(1)));
    // Unknown task.
    let mut ghost = next.clone();
    ghost.id = crate::ids::TaskId::new();
    let err = store
        .commit(Commit {
            task: Arc::new(ghost),
            expected_version: 1,
            events: vec![],
            queue: QueueOp::Keep,
            fence: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound), "{err:?}");
}

pub async fn events_are_ordered_and_paged(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let t = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    for i in 0..20 {
        svc.send_input(&alice(), &t.id, msg(&format!("in-{i}"), "more"))
            .await
            .unwrap();
    }
    let all = store.events(&t.id, 0, 1000).await.unwrap();
    assert_eq!(all.len(), 22);
    for (i, e) in all.iter().enumerate() {
        assert_eq!(e.seq, i as u64 + 1);
    }
    let page = store.events(&t.id, 5, 3).await.unwrap();
    assert_eq!(
        page.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![6, 7, 8]
    );
    assert!(store.events(&t.id, 22, 10).await.unwrap().is_empty());
    let t2 = store.get(&t.id).await.unwrap().unwrap();
    assert_eq!(t2.last_seq, 22);
    assert_eq!(t2.history.len(), 21);
}

pub async fn fence_guards_commits(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let t = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let claims = store
        .claim("w1", 10, Duration::from_secs(30), Utc::now())
        .await
        .unwrap();
    assert_eq!(claims.len(), 1);
    let claim = claims[0].clone();
    // With the lease held, a fenced commit succeeds.
    let (t1, ()) = svc
        .mutate(&t.id, Access::System, Some(&claim), |d| {
            d.record(EventKind::Step {
                name: "s".into(),
                phase: crate::event::StepPhase::Started,
            });
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(t1.version, t.version + 1);
    // A stale epoch is refused.
    let mut stale = claim.clone();
    stale.epoch += 7;
    let err = svc
        .mutate(&t.id, Access::System, Some(&stale), |d| {
            d.record(EventKind::Step {
                name: "s".into(),
                phase: crate::event::StepPhase::Finished,
            });
            Ok(())
        })
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::LeaseLost), "{err:?}");
    // Once the lease lapses and is reaped, the old holder's fence fails too.
    let later = Utc::now() + chrono::Duration::seconds(60);
    let reaped = store.reap(later).await.unwrap();
    assert_eq!(reaped, vec![t.id.clone()]);
    let err = svc
        .mutate(&t.id, Access::System, Some(&claim), |d| {
            d.record(EventKind::Step {
                name: "s".into(),
                phase: crate::event::StepPhase::Finished,
            });
            Ok(())
        })
        .await
        .unwrap_err();
    assert!(matches!(err, CoreError::LeaseLost), "{err:?}");
}

pub async fn claims_leases_and_reaping(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(
            svc.create(&alice(), CreateTask::new(msg(&format!("m{i}"), "hi")))
                .await
                .unwrap()
                .task
                .id
                .clone(),
        );
    }
    let now = Utc::now();
    let a = store
        .claim("w1", 3, Duration::from_secs(10), now)
        .await
        .unwrap();
    let b = store
        .claim("w2", 10, Duration::from_secs(10), now)
        .await
        .unwrap();
    assert_eq!(a.len(), 3);
    assert_eq!(b.len(), 2);
    let mut claimed: Vec<_> = a
        .iter()
        .chain(b.iter())
        .map(|c| c.task_id.clone())
        .collect();
    claimed.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(claimed, want, "every entry claimed exactly once");
    assert!(store
        .claim("w3", 10, Duration::from_secs(10), now)
        .await
        .unwrap()
        .is_empty());
    for c in a.iter().chain(b.iter()) {
        assert_eq!(c.epoch, 1);
        assert_eq!(c.attempts, 1);
    }
    // Renewal works for the holder only.
    assert!(store
        .renew(&a[0], Duration::from_secs(10), now)
        .await
        .unwrap());
    let mut other = a[0].clone();
    other.worker = "w9".into();
    assert!(!store
        .renew(&other, Duration::from_secs(10), now)
        .await
        .unwrap());
    // Release makes one available again with a new epoch on the next claim.
    store.release(&a[1]).await.unwrap();
    let again = store
        .claim("w3", 10, Duration::from_secs(10), now)
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].task_id, a[1].task_id);
    assert_eq!(again[0].epoch, 2);
    assert_eq!(again[0].attempts, 2);
    // drop_claim deletes the entry.
    store.drop_claim(&a[2]).await.unwrap();
    assert_eq!(store.queue_depth().await.unwrap(), 4);
    // Reap: everything still leased lapses 20s later (a[0] was renewed to now+10s).
    let later = now + chrono::Duration::seconds(20);
    let mut reaped = store.reap(later).await.unwrap();
    reaped.sort();
    assert_eq!(reaped.len(), 4);
    assert!(
        store.reap(later).await.unwrap().is_empty(),
        "reaping is not repeated"
    );
    let re = store
        .claim("w4", 10, Duration::from_secs(10), later)
        .await
        .unwrap();
    assert_eq!(re.len(), 4);
}

pub async fn queue_operations(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let t = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let c = store
        .claim("w1", 1, Duration::from_secs(30), Utc::now())
        .await
        .unwrap()
        .remove(0);
    // Enqueue on a leased entry leaves it leased.
    svc.mutate(&t.id, Access::System, None, |d| {
        d.set_queue(QueueOp::Enqueue);
        d.record(EventKind::Step {
            name: "x".into(),
            phase: crate::event::StepPhase::Started,
        });
        Ok(())
    })
    .await
    .unwrap();
    assert!(store
        .claim("w2", 1, Duration::from_secs(30), Utc::now())
        .await
        .unwrap()
        .is_empty());
    // Requeue (fenced) frees it.
    svc.mutate(&t.id, Access::System, Some(&c), |d| {
        d.set_queue(QueueOp::Requeue);
        d.record(EventKind::Step {
            name: "x".into(),
            phase: crate::event::StepPhase::Finished,
        });
        Ok(())
    })
    .await
    .unwrap();
    let c2 = store
        .claim("w2", 1, Duration::from_secs(30), Utc::now())
        .await
        .unwrap()
        .remove(0);
    assert_eq!(c2.epoch, c.epoch + 1);
    assert_eq!(c2.attempts, 1, "a requeue starts a fresh attempt count");
    // Remove deletes it.
    svc.mutate(&t.id, Access::System, Some(&c2), |d| {
        d.set_queue(QueueOp::Remove);
        d.record(EventKind::Step {
            name: "y".into(),
            phase: crate::event::StepPhase::Started,
        });
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(store.queue_depth().await.unwrap(), 0);
    // Enqueue on no entry inserts one.
    svc.mutate(&t.id, Access::System, None, |d| {
        d.set_queue(QueueOp::Enqueue);
        d.record(EventKind::Step {
            name: "y".into(),
            phase: crate::event::StepPhase::Finished,
        });
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(store.queue_depth().await.unwrap(), 1);
}

pub async fn listing_filters_and_cursor(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let mut mine = Vec::new();
    for i in 0..7 {
        let mut req = CreateTask::new(msg(&format!("m{i}"), "hi"));
        req.context_id = Some(if i % 2 == 0 {
            "even".into()
        } else {
            "odd".into()
        });
        mine.push(svc.create(&alice(), req).await.unwrap().task);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    svc.create(&Caller::new("t1", "bob"), CreateTask::new(msg("b", "hi")))
        .await
        .unwrap();
    svc.create(&Caller::new("t2", "alice"), CreateTask::new(msg("c", "hi")))
        .await
        .unwrap();
    svc.cancel(Access::Owner(&alice()), &mine[0].id, None)
        .await
        .unwrap();

    let q = |size| ListQuery {
        page_size: size,
        ..ListQuery::default()
    };
    // Paging: newest first, no duplicates, no gaps.
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = svc
            .list(
                &alice(),
                ListQuery {
                    cursor: cursor.clone(),
                    ..q(3)
                },
            )
            .await
            .unwrap();
        assert_eq!(page.total, 7);
        seen.extend(page.tasks.iter().map(|t| t.id.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let want: Vec<_> = mine.iter().rev().map(|t| t.id.clone()).collect();
    assert_eq!(seen, want);
    let even = svc
        .list(
            &alice(),
            ListQuery {
                context_id: Some("even".into()),
                ..q(50)
            },
        )
        .await
        .unwrap();
    assert_eq!(even.tasks.len(), 4);
    assert!(even.tasks.iter().all(|t| t.context_id == "even"));
    let canceled = svc
        .list(
            &alice(),
            ListQuery {
                state: Some(TaskState::Canceled),
                ..q(50)
            },
        )
        .await
        .unwrap();
    assert_eq!(canceled.tasks.len(), 1);
    assert_eq!(canceled.tasks[0].id, mine[0].id);
    let recent = svc
        .list(
            &alice(),
            ListQuery {
                updated_after: Some(mine[6].updated_at),
                ..q(50)
            },
        )
        .await
        .unwrap();
    // Only the canceled one changed after the last create.
    assert_eq!(
        recent
            .tasks
            .iter()
            .map(|t| t.id.clone())
            .collect::<Vec<_>>(),
        vec![mine[0].id.clone()]
    );
    // By status time: the canceled task (the last state change) comes first, then
    // the others newest first; paging in twos sees each once; `changed_since`
    // narrows the list and its total.
    let mut by_status = Vec::new();
    let mut cursor = None;
    loop {
        let page = svc
            .list(
                &alice(),
                ListQuery {
                    order: ListOrder::StateChanged,
                    cursor: cursor.clone(),
                    ..q(2)
                },
            )
            .await
            .unwrap();
        assert_eq!(page.total, 7);
        by_status.extend(page.tasks.iter().map(|t| t.id.clone()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let mut want: Vec<_> = vec![mine[0].id.clone()];
    want.extend(mine[1..].iter().rev().map(|t| t.id.clone()));
    assert_eq!(by_status, want);
    let canceled_at = svc
        .get(&alice(), &mine[0].id)
        .await
        .unwrap()
        .state_changed_at;
    let since = svc
        .list(
            &alice(),
            ListQuery {
                order: ListOrder::StateChanged,
                changed_since: Some(canceled_at),
                ..q(50)
            },
        )
        .await
        .unwrap();
    assert_eq!(since.total, 1);
    assert_eq!(since.tasks.len(), 1);
    assert_eq!(since.tasks[0].id, mine[0].id);
    let bad = svc
        .list(
            &alice(),
            ListQuery {
                cursor: Some("garbage".into()),
                ..q(5)
            },
        )
        .await;
    assert!(matches!(bad, Err(CoreError::InvalidInput { .. })));
}

pub async fn sweep_removes_expired_terminal_tasks(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone()).with_defaults(
        TaskDefaults::default()
            .with_ttl(Some(Duration::from_millis(1)))
            .with_idle_lifespan(None),
    );
    let done = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let live = svc
        .create(&alice(), CreateTask::new(msg("m2", "hi")))
        .await
        .unwrap()
        .task;
    svc.cancel(Access::Owner(&alice()), &done.id, None)
        .await
        .unwrap();
    let later = Utc::now() + chrono::Duration::seconds(1);
    assert_eq!(store.sweep(later, 100).await.unwrap(), 1);
    assert!(store.get(&done.id).await.unwrap().is_none());
    assert!(store.events(&done.id, 0, 10).await.unwrap().is_empty());
    assert!(store.get(&live.id).await.unwrap().is_some());
    // The idempotency key went with it: the same message id creates a new task.
    let again = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap();
    assert!(again.created);
    assert_ne!(again.task.id, done.id);
}

pub async fn idle_expiry_candidates(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone()).with_defaults(
        TaskDefaults::default()
            .with_ttl(None)
            .with_idle_lifespan(Some(Duration::from_millis(10))),
    );
    let t = svc
        .create(&alice(), CreateTask::new(msg("m1", "ask what?")))
        .await
        .unwrap()
        .task;
    svc.mutate(&t.id, Access::System, None, |d| {
        d.transition(TaskState::Working, None)?;
        d.task.input_requests.insert(
            "k".into(),
            crate::types::InputRequest {
                key: "k".into(),
                prompt: "what?".into(),
                schema: json!({}),
                since: d.now(),
                kind: Default::default(),
                subject: None,
            },
        );
        d.transition(TaskState::InputRequired, None)
    })
    .await
    .unwrap();
    let got = store.get(&t.id).await.unwrap().unwrap();
    assert!(got.idle_expires_at.is_some());
    let later = Utc::now() + chrono::Duration::seconds(1);
    assert_eq!(
        store.idle_expired(later, 10).await.unwrap(),
        vec![t.id.clone()]
    );
    assert!(store
        .idle_expired(Utc::now() - chrono::Duration::seconds(10), 10)
        .await
        .unwrap()
        .is_empty());
    tokio::time::sleep(Duration::from_millis(20)).await;
    let ended = svc.expire_idle(&t.id).await.unwrap();
    assert_eq!(ended.state, TaskState::Canceled);
    assert!(ended.idle_expires_at.is_none());
    assert!(store.idle_expired(later, 10).await.unwrap().is_empty());
}

pub async fn counts(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let a = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    svc.create(&alice(), CreateTask::new(msg("m2", "hi")))
        .await
        .unwrap();
    svc.cancel(Access::Owner(&alice()), &a.id, None)
        .await
        .unwrap();
    let counts: BTreeMap<_, _> = store.count_by_state().await.unwrap().into_iter().collect();
    assert_eq!(counts.get(&TaskState::Submitted), Some(&1));
    assert_eq!(counts.get(&TaskState::Canceled), Some(&1));
    assert_eq!(
        store.queue_depth().await.unwrap(),
        1,
        "a canceled task leaves the queue"
    );
}

pub async fn hub_is_published(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let t = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let mut rx = store.hub().watch(&t.id);
    svc.cancel(Access::Owner(&alice()), &t.id, None)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), rx.changed())
        .await
        .unwrap()
        .unwrap();
    let w = *rx.borrow();
    assert_eq!(w.state, TaskState::Canceled);
    assert_eq!(w.last_seq, 3);
}

pub async fn runtime_end_to_end(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let rt = Runtime::start(
        svc.clone(),
        Arc::new(ScriptedAgent::new()),
        RuntimeConfig {
            poll_interval: Duration::from_millis(20),
            ..RuntimeConfig::default()
        },
    );
    let wait = |id| {
        let svc = svc.clone();
        async move {
            svc.wait_until(&alice(), &id, Duration::from_secs(10), |t| {
                t.state.is_interrupted()
            })
            .await
            .unwrap()
        }
    };
    // Echo.
    let t = svc
        .create(&alice(), CreateTask::new(msg("e1", "hello")))
        .await
        .unwrap()
        .task;
    let t = wait(t.id.clone()).await;
    assert_eq!(t.state, TaskState::Completed);
    assert_eq!(t.artifacts[0].name.as_deref(), Some("echo"));
    assert_eq!(t.artifacts[0].text(), "hello");
    // Ask, answered by key.
    let t = svc
        .create(&alice(), CreateTask::new(msg("a1", "ask your name?")))
        .await
        .unwrap()
        .task;
    let t = wait(t.id.clone()).await;
    assert_eq!(t.state, TaskState::InputRequired);
    let mut answers = BTreeMap::new();
    answers.insert(ask_key(0), InputResponse::accept(json!({"answer": "Ada"})));
    svc.answer_inputs(&alice(), &t.id, answers).await.unwrap();
    let t = svc
        .wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
            t.state.is_terminal()
        })
        .await
        .unwrap();
    assert_eq!(t.state, TaskState::Completed);
    assert_eq!(t.artifacts[0].text(), "answer: Ada");
    // Cancel a sleeping task: the stream ends with canceled.
    let t = svc
        .create(&alice(), CreateTask::new(msg("s1", "sleep 5000")))
        .await
        .unwrap()
        .task;
    svc.wait_until(&alice(), &t.id, Duration::from_secs(10), |t| {
        t.state == TaskState::Working
    })
    .await
    .unwrap();
    let mut sub = svc
        .subscribe(Access::Owner(&alice()), &t.id, 0)
        .await
        .unwrap();
    svc.cancel(Access::Owner(&alice()), &t.id, None)
        .await
        .unwrap();
    let mut last = None;
    while let Some(e) = tokio::time::timeout(Duration::from_secs(10), sub.next())
        .await
        .unwrap()
    {
        last = Some(e.unwrap());
    }
    assert_eq!(
        last.unwrap().kind.terminal_state(),
        Some(TaskState::Canceled)
    );
    rt.shutdown(Duration::from_secs(5)).await;
}

fn rec(kind: RecordKind, id: &str, owner: &str, n: u64) -> Record {
    Record::new(kind, id, "t1", owner, json!({ "n": n }))
}

fn stored(o: PutOutcome) -> u64 {
    match o {
        PutOutcome::Stored { version } => version,
        other => panic!("not stored: {other:?}"),
    }
}

pub async fn records_are_keyed_versioned_and_swept(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone()).with_defaults(
        TaskDefaults::default()
            .with_ttl(Some(Duration::from_millis(1)))
            .with_idle_lifespan(None),
    );
    let task = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let kind = RecordKind::PushConfig;
    // A record of a task that does not exist is refused.
    let orphan = rec(kind, "x", "alice", 0).for_task(crate::ids::TaskId::new());
    assert!(matches!(
        store.put_record(orphan, None).await,
        Err(StoreError::NotFound)
    ));
    let a = rec(kind, "b-config", "alice", 1)
        .for_task(task.id.clone())
        .active(true)
        .at(3);
    assert_eq!(stored(store.put_record(a.clone(), None).await.unwrap()), 1);
    // A put under the same key replaces data, cursor and flags; owner stays.
    let mut replaced = rec(kind, "b-config", "mallory", 2).for_task(task.id.clone());
    replaced.cursor = 5;
    assert_eq!(stored(store.put_record(replaced, None).await.unwrap()), 2);
    let got = store.get_record(kind, "b-config").await.unwrap().unwrap();
    assert_eq!(got.data, json!({ "n": 2 }));
    assert_eq!((got.cursor, got.active, got.version), (5, false, 2));
    assert_eq!(got.owner, "alice");
    assert_eq!(got.task_id.as_ref(), Some(&task.id));
    // Kinds are separate key spaces.
    assert!(store
        .get_record(RecordKind::AguiRun, "b-config")
        .await
        .unwrap()
        .is_none());
    stored(
        store
            .put_record(
                rec(kind, "a-config", "alice", 3).for_task(task.id.clone()),
                None,
            )
            .await
            .unwrap(),
    );
    stored(
        store
            .put_record(rec(RecordKind::McpSession, "s1", "alice", 4), None)
            .await
            .unwrap(),
    );
    let of_task = store
        .list_records(kind, &RecordScope::Task(task.id.clone()))
        .await
        .unwrap();
    let ids: Vec<&str> = of_task.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a-config", "b-config"]);
    let owner = RecordScope::Owner {
        tenant: "t1".into(),
        owner: "alice".into(),
    };
    assert_eq!(store.list_records(kind, &owner).await.unwrap().len(), 2);
    assert_eq!(
        store
            .list_records(RecordKind::McpSession, &owner)
            .await
            .unwrap()
            .len(),
        1
    );
    // Update is compare-and-set on the version.
    let mut stale = got.clone();
    stale.version = 1;
    assert!(matches!(
        store.update_record(&stale, None).await,
        Err(StoreError::Conflict)
    ));
    let mut next = got.clone();
    next.cursor = 9;
    next.data = json!({ "n": 9 });
    assert_eq!(store.update_record(&next, None).await.unwrap(), 3);
    let got = store.get_record(kind, "b-config").await.unwrap().unwrap();
    assert_eq!((got.cursor, got.version), (9, 3));
    assert!(matches!(
        store.update_record(&next, None).await,
        Err(StoreError::Conflict)
    ));
    // Delete.
    assert!(store.delete_record(kind, "a-config").await.unwrap());
    assert!(!store.delete_record(kind, "a-config").await.unwrap());
    assert!(matches!(
        store
            .update_record(&rec(kind, "a-config", "alice", 0), None)
            .await,
        Err(StoreError::NotFound)
    ));
    // Expiring records are swept by sweep_records; the rest stay.
    let now = Utc::now();
    let session = rec(RecordKind::McpSession, "s2", "bob", 0)
        .expiring(Some(now + chrono::Duration::seconds(1)));
    stored(store.put_record(session, None).await.unwrap());
    assert_eq!(store.sweep_records(now, 100).await.unwrap(), 0);
    let later = now + chrono::Duration::seconds(2);
    assert_eq!(store.sweep_records(later, 100).await.unwrap(), 1);
    assert!(store
        .get_record(RecordKind::McpSession, "s2")
        .await
        .unwrap()
        .is_none());
    let counts = store.count_records().await.unwrap();
    let count = |k: RecordKind| counts.iter().find(|(c, _)| *c == k).map(|(_, n)| *n);
    assert_eq!(count(kind), Some(1));
    assert_eq!(count(RecordKind::McpSession), Some(1));
    // A task's records go with it when it is swept.
    svc.cancel(Access::Owner(&alice()), &task.id, None)
        .await
        .unwrap();
    assert_eq!(store.sweep(later, 100).await.unwrap(), 1);
    assert!(store.get_record(kind, "b-config").await.unwrap().is_none());
    assert!(store
        .list_records(kind, &RecordScope::Task(task.id.clone()))
        .await
        .unwrap()
        .is_empty());
    assert!(store
        .get_record(RecordKind::McpSession, "s1")
        .await
        .unwrap()
        .is_some());
}

pub async fn record_quotas_count_live_records_per_owner(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let bob = Caller::new("t1", "bob");
    let task = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let kind = RecordKind::AguiRun;
    let now = Utc::now();
    let q = Some(Quota { max: 2, now });
    for id in ["r1", "r2"] {
        let r = rec(kind, id, "alice", 0).for_task(task.id.clone());
        stored(store.put_record(r, q).await.unwrap());
    }
    let third = rec(kind, "r3", "alice", 0).for_task(task.id.clone());
    assert_eq!(
        store.put_record(third.clone(), q).await.unwrap(),
        PutOutcome::OverQuota { max: 2 }
    );
    assert!(store.get_record(kind, "r3").await.unwrap().is_none());
    // Replacing one of one's own is not an insert.
    let again = rec(kind, "r1", "alice", 7).for_task(task.id.clone());
    assert_eq!(stored(store.put_record(again, q).await.unwrap()), 2);
    // Another owner (even in the same tenant) has a quota of its own.
    let bobs = svc
        .create(&bob, CreateTask::new(msg("m2", "hi")))
        .await
        .unwrap()
        .task;
    let b = rec(kind, "b1", "bob", 0).for_task(bobs.id.clone());
    stored(store.put_record(b, q).await.unwrap());
    // Records of a terminal task, and expired ones, are not live.
    svc.cancel(Access::Owner(&alice()), &task.id, None)
        .await
        .unwrap();
    let task2 = svc
        .create(&alice(), CreateTask::new(msg("m3", "hi")))
        .await
        .unwrap()
        .task;
    let r = rec(kind, "r3", "alice", 0).for_task(task2.id.clone());
    stored(store.put_record(r, q).await.unwrap());
    let sk = RecordKind::McpSession;
    let s1 = rec(sk, "s1", "alice", 0).expiring(Some(now - chrono::Duration::seconds(1)));
    stored(store.put_record(s1, None).await.unwrap());
    let s2 = rec(sk, "s2", "alice", 0);
    stored(
        store
            .put_record(s2, Some(Quota { max: 1, now }))
            .await
            .unwrap(),
    );
    let s3 = rec(sk, "s3", "alice", 0);
    assert_eq!(
        store
            .put_record(s3, Some(Quota { max: 1, now }))
            .await
            .unwrap(),
        PutOutcome::OverQuota { max: 1 }
    );
}

pub async fn record_leases_are_exclusive_and_fenced(store: Arc<dyn TaskStore>) {
    let svc = service(store.clone());
    let task = svc
        .create(&alice(), CreateTask::new(msg("m1", "hi")))
        .await
        .unwrap()
        .task;
    let kind = RecordKind::PushConfig;
    for (id, active) in [("c1", true), ("c2", false), ("c3", true)] {
        let r = rec(kind, id, "alice", 0)
            .for_task(task.id.clone())
            .active(active);
        stored(store.put_record(r, None).await.unwrap());
    }
    let now = Utc::now();
    let lease = Duration::from_secs(10);
    let first = store
        .claim_records(kind, "w1", 1, lease, now)
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    let rest = store
        .claim_records(kind, "w2", 10, lease, now)
        .await
        .unwrap();
    // Only active records, and each to one worker.
    let mut ids: Vec<String> = first
        .iter()
        .chain(rest.iter())
        .map(|(r, _)| r.id.clone())
        .collect();
    ids.sort();
    assert_eq!(ids, ["c1", "c3"]);
    assert!(store
        .claim_records(kind, "w3", 10, lease, now)
        .await
        .unwrap()
        .is_empty());
    let (r1, l1) = first[0].clone();
    // The holder updates under its fence.
    let mut moved = r1.clone();
    moved.cursor = 4;
    let v = store.update_record(&moved, Some(&l1)).await.unwrap();
    assert!(store.renew_record(&l1, lease, now).await.unwrap());
    // Once the lease lapses another worker takes it with a higher epoch; the old
    // holder's fence no longer holds.
    let late = now + chrono::Duration::seconds(30);
    let taken = store
        .claim_records(kind, "w3", 10, lease, late)
        .await
        .unwrap();
    let (r1b, l1b) = taken
        .iter()
        .find(|(r, _)| r.id == r1.id)
        .cloned()
        .expect("lapsed lease claimed again");
    assert!(l1b.epoch > l1.epoch);
    assert_eq!((r1b.cursor, r1b.version), (4, v));
    let mut stale = r1b.clone();
    stale.cursor = 5;
    assert!(matches!(
        store.update_record(&stale, Some(&l1)).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(!store.renew_record(&l1, lease, late).await.unwrap());
    store.update_record(&stale, Some(&l1b)).await.unwrap();
    // Released, it can be claimed at once; made inactive, it is not claimed.
    store.release_record(&l1b).await.unwrap();
    let again = store
        .claim_records(kind, "w4", 10, lease, late)
        .await
        .unwrap();
    assert!(again.iter().any(|(r, _)| r.id == r1.id));
    let (mut done, l) = again
        .into_iter()
        .find(|(r, _)| r.id == r1.id)
        .expect("claimed");
    done.active = false;
    store.update_record(&done, Some(&l)).await.unwrap();
    store.release_record(&l).await.unwrap();
    let far = late + chrono::Duration::seconds(60);
    assert!(!store
        .claim_records(kind, "w5", 10, lease, far)
        .await
        .unwrap()
        .iter()
        .any(|(r, _)| r.id == r1.id));
}
