//! Nothing is visible before it is durable: with the syncer held (a test hook in
//! [`crate::durable`]), a committed batch is not shown by GetTask (the cache and
//! the database), a stream, a long poll, the event log or a listing; once the
//! sync runs, all of them show it.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use taskwire_core::store::ListQuery;
use taskwire_core::{
    Access, Caller, CreateTask, Message, TaskId, TaskService, TaskState, TaskStore,
};

use crate::{SqliteOptions, SqliteStore};

/// How long a read gets to show what it must not.
const LOOK: Duration = Duration::from_millis(300);
const LONG: Duration = Duration::from_secs(20);

fn held(store: &SqliteStore) -> usize {
    store.durability.hold.waiting()
}

/// Waits until the syncer holds at least `n` committed batches.
async fn until_held(store: &SqliteStore, n: usize) {
    let deadline = tokio::time::Instant::now() + LONG;
    while held(store) < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the syncer never held {n} batches"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Lets the syncer go when dropped, so that a failing test does not hang in the
/// store's close (which waits for the syncer).
struct LetGo(Arc<SqliteStore>);

impl Drop for LetGo {
    fn drop(&mut self) {
        self.0.durability.hold.set(false);
    }
}

/// The answer of a spawned read, which must come once the sync ran.
async fn in_time<T>(h: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(LONG, h)
        .await
        .expect("answered once durable")
        .expect("the read panicked")
}

/// Adds `what` to `early` if it answered. Each of these reads meets the held
/// batch (in the cache, the database or the in-memory indexes), and the store
/// answers such a read only once the batch is durable: it must still be waiting.
/// (Without that, each answers at once from the batch.)
fn still_waiting<T>(
    early: &mut Vec<&'static str>,
    what: &'static str,
    read: &tokio::task::JoinHandle<T>,
) {
    if read.is_finished() {
        early.push(what);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_visible_before_its_sync() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open_with(dir.path().join("v.db"), SqliteOptions::default()).unwrap(),
    );
    let svc = TaskService::new(store.clone() as Arc<dyn TaskStore>, "scripted");
    let me = Caller::local();
    let a = svc
        .create(&me, CreateTask::new(Message::user_text("a")))
        .await
        .unwrap()
        .task;
    assert_eq!(a.state, TaskState::Submitted);

    // A stream and a long poll that began before the write.
    let early_stream = {
        let mut s = svc
            .subscribe(Access::Owner(&me), &a.id, a.last_seq)
            .await
            .unwrap();
        tokio::spawn(async move { s.next().await.map(|e| e.unwrap()) })
    };
    let early_poll = {
        let (svc, me, id) = (svc.clone(), me.clone(), a.id.clone());
        tokio::spawn(async move {
            svc.wait_for_state_shared(&me, &id, LONG, |s| s.is_terminal())
                .await
                .unwrap()
        })
    };

    store.durability.hold.set(true);
    let let_go = LetGo(store.clone());
    // Batch 1: A canceled (a commit: cache and rows).
    let cancel = {
        let (svc, me, id) = (svc.clone(), me.clone(), a.id.clone());
        tokio::spawn(async move { svc.cancel(Access::Owner(&me), &id, None).await })
    };
    until_held(&store, 1).await;
    // Batch 2: B created (a new row, a new id in the in-memory indexes).
    let create_b = {
        let (svc, me) = (svc.clone(), me.clone());
        tokio::spawn(async move {
            svc.create(&me, CreateTask::new(Message::user_text("b")))
                .await
                .map(|c| c.task.id.clone())
        })
    };
    until_held(&store, 2).await;

    // GetTask (from the cache, where the writer put A's new snapshot).
    let get = {
        let (svc, me, id) = (svc.clone(), me.clone(), a.id.clone());
        tokio::spawn(async move { svc.get(&me, &id).await.unwrap() })
    };
    // A stream and a long poll that begin now.
    let stream = {
        let (svc, me, id, after) = (svc.clone(), me.clone(), a.id.clone(), a.last_seq);
        tokio::spawn(async move {
            let mut s = svc.subscribe(Access::Owner(&me), &id, after).await.unwrap();
            s.next().await.map(|e| e.unwrap())
        })
    };
    let poll = {
        let (svc, me, id) = (svc.clone(), me.clone(), a.id.clone());
        tokio::spawn(async move {
            svc.wait_for_state_shared(&me, &id, LONG, |s| s.is_terminal())
                .await
                .unwrap()
        })
    };
    // The event log and the listing, read from the database.
    let events = {
        let (store, id, after) = (store.clone(), a.id.clone(), a.last_seq);
        tokio::spawn(async move { store.events(&id, after, 100).await.unwrap() })
    };
    let list = {
        let (svc, me) = (svc.clone(), me.clone());
        tokio::spawn(async move { svc.list(&me, ListQuery::default()).await.unwrap() })
    };

    tokio::time::sleep(LOOK).await;
    let mut early = Vec::new();
    still_waiting(&mut early, "GetTask", &get);
    still_waiting(&mut early, "a stream begun before the write", &early_stream);
    still_waiting(&mut early, "a stream begun during the sync", &stream);
    still_waiting(
        &mut early,
        "a long poll begun before the write",
        &early_poll,
    );
    still_waiting(&mut early, "a long poll begun during the sync", &poll);
    still_waiting(&mut early, "the event log", &events);
    still_waiting(&mut early, "the listing", &list);
    still_waiting(&mut early, "the cancel's acknowledgement", &cancel);
    still_waiting(&mut early, "the create's acknowledgement", &create_b);
    assert!(
        early.is_empty(),
        "answered before the batch was durable: {early:?}"
    );

    drop(let_go);
    let canceled = in_time(cancel).await.unwrap();
    assert_eq!(canceled.state, TaskState::Canceled);
    let b: TaskId = in_time(create_b).await.unwrap();
    assert_eq!(in_time(get).await.state, TaskState::Canceled);
    for h in [early_stream, stream] {
        let e = in_time(h).await.expect("an event");
        assert_eq!(e.seq, a.last_seq + 1);
        assert_eq!(e.kind.terminal_state(), Some(TaskState::Canceled), "{e:?}");
    }
    for h in [early_poll, poll] {
        assert_eq!(in_time(h).await.state, TaskState::Canceled);
    }
    let events = in_time(events).await;
    assert!(
        events
            .iter()
            .any(|e| e.kind.terminal_state() == Some(TaskState::Canceled)),
        "{events:?}"
    );
    let listed = in_time(list).await;
    assert!(
        listed.tasks.iter().any(|t| t.id == b),
        "B listed once durable"
    );
}
