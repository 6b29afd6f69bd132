//! Behaviour particular to the SQLite store: schema and WAL set-up, group commit
//! under concurrency, isolation of failing requests, and wakes.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions panic on failure by design"
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use taskwire_core::store::{Commit, QueueOp};
use taskwire_core::{
    Caller, CreateTask, Event, EventKind, Message, StepPhase, StoreError, TaskService, TaskStore,
};
use taskwire_store_sqlite::{SqliteError, SqliteOptions, SqliteStore, Synchronous};

fn open(dir: &tempfile::TempDir) -> Arc<SqliteStore> {
    Arc::new(SqliteStore::open(&dir.path().join("t.db").display().to_string()).unwrap())
}

fn msg(id: &str) -> Message {
    let mut m = Message::user_text("hi");
    m.message_id = id.to_string();
    m
}

fn step(task: &taskwire_core::Task, seq: u64) -> Event {
    Event {
        task_id: task.id.clone(),
        seq,
        version: task.version + 1,
        at: Utc::now(),
        kind: EventKind::Step {
            name: "s".into(),
            phase: StepPhase::Started,
        },
    }
}

#[test]
fn schema_is_migrated_in_wal_mode_and_a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/s.db");
    let store = SqliteStore::open_with(&path, SqliteOptions::default()).unwrap();
    assert!(store.path().is_absolute());
    drop(store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 10);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    // Reopening applies nothing twice.
    drop(SqliteStore::open_with(&path, SqliteOptions::default()).unwrap());
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = SqliteStore::open_with(&path, SqliteOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            SqliteError::SchemaTooNew {
                found: 99,
                supported: 10
            }
        ),
        "{err}"
    );
}

#[test]
fn a_database_has_one_store_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.db");
    let first = SqliteStore::open_with(&path, SqliteOptions::default()).unwrap();
    let err = SqliteStore::open_with(&path, SqliteOptions::default()).unwrap_err();
    assert!(matches!(err, SqliteError::InUse(_)), "{err}");
    drop(first);
    drop(SqliteStore::open_with(&path, SqliteOptions::default()).unwrap());
}

#[test]
fn bad_addresses_are_errors() {
    for bad in [
        "sqlite://",
        "sqlite://x.db?synchronous=sometimes",
        "redis://x",
    ] {
        assert!(
            matches!(SqliteStore::open(bad), Err(SqliteError::InvalidUrl { .. })),
            "{bad}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    // A directory is not a database.
    assert!(SqliteStore::open(&dir.path().display().to_string()).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_on_one_task_have_one_winner_and_spare_their_neighbours() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let svc = TaskService::new(store.clone(), "scripted");
    let t = svc
        .create(&Caller::local(), CreateTask::new(msg("m")))
        .await
        .unwrap()
        .task
        .as_ref()
        .clone();
    let mut racers = Vec::new();
    for i in 0..64 {
        let store = store.clone();
        let mut next = t.clone();
        next.version += 1;
        next.last_seq += 1;
        next.metadata.insert("winner".into(), i.into());
        let events = vec![step(&t, t.last_seq + 1)];
        racers.push(tokio::spawn(async move {
            store
                .commit(Commit {
                    task: next.into(),
                    expected_version: 1,
                    events,
                    queue: QueueOp::Keep,
                    fence: None,
                })
                .await
        }));
    }
    let mut creators = Vec::new();
    for i in 0..64 {
        let svc = svc.clone();
        creators.push(tokio::spawn(async move {
            svc.create(&Caller::local(), CreateTask::new(msg(&format!("n{i}"))))
                .await
        }));
    }
    let mut wins = 0;
    for r in futures::future::join_all(racers).await {
        match r.unwrap() {
            Ok(()) => wins += 1,
            Err(StoreError::Conflict) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(wins, 1);
    for c in futures::future::join_all(creators).await {
        assert!(c.unwrap().unwrap().created);
    }
    let got = store.get(&t.id).await.unwrap().unwrap();
    assert_eq!(got.version, 2);
    assert_eq!(store.events(&t.id, 0, 100).await.unwrap().len(), 3);
    assert_eq!(store.queue_depth().await.unwrap(), 65);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_request_leaves_no_trace_and_spares_its_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let svc = TaskService::new(store.clone(), "scripted");
    let t = svc
        .create(&Caller::local(), CreateTask::new(msg("m")))
        .await
        .unwrap()
        .task
        .as_ref()
        .clone();
    for round in 0..20 {
        // An event that reuses sequence number 2 (the last of the create's events,
        // which keys its log row) violates the log's primary key after the queue
        // entry was already deleted in the same request.
        let mut next = t.clone();
        next.version += 1;
        let bad = {
            let store = store.clone();
            let events = vec![step(&t, 2)];
            tokio::spawn(async move {
                store
                    .commit(Commit {
                        task: next.into(),
                        expected_version: 1,
                        events,
                        queue: QueueOp::Remove,
                        fence: None,
                    })
                    .await
            })
        };
        let mut good = Vec::new();
        for i in 0..16 {
            let svc = svc.clone();
            good.push(tokio::spawn(async move {
                svc.create(
                    &Caller::local(),
                    CreateTask::new(msg(&format!("g{round}-{i}"))),
                )
                .await
            }));
        }
        let err = bad.await.unwrap().unwrap_err();
        assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
        for g in futures::future::join_all(good).await {
            assert!(g.unwrap().unwrap().created);
        }
    }
    let got = store.get(&t.id).await.unwrap().unwrap();
    assert_eq!(got, t, "the failed commit changed nothing");
    assert_eq!(store.events(&t.id, 0, 100).await.unwrap().len(), 2);
    assert_eq!(
        store.queue_depth().await.unwrap(),
        1 + 20 * 16,
        "its queue entry is still there"
    );
    // The writer's in-memory queue index was restored too: every entry, the
    // failed commit's among them, can still be claimed.
    let claims = store
        .claim("w", 1000, Duration::from_secs(30), Utc::now())
        .await
        .unwrap();
    assert_eq!(claims.len(), 1 + 20 * 16);
    assert_eq!(
        claims[0].task_id, t.id,
        "claimed first, as the oldest entry"
    );
}

/// The queue is durable: after a reopen, claimable entries come in their old
/// order, and a lease held when the store closed stays held until it lapses, then
/// is reaped with its attempt count kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let now = Utc::now();
    let ids = {
        let store = Arc::new(SqliteStore::open_with(&path, SqliteOptions::default()).unwrap());
        let svc = TaskService::new(store.clone(), "scripted");
        let mut ids = Vec::new();
        for i in 0..4 {
            let t = svc
                .create(&Caller::local(), CreateTask::new(msg(&format!("q{i}"))))
                .await
                .unwrap()
                .task
                .as_ref()
                .clone();
            ids.push(t.id);
        }
        let first = store
            .claim("w1", 1, Duration::from_secs(60), now)
            .await
            .unwrap();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].task_id, ids[0]);
        ids
    };
    let store = SqliteStore::open_with(&path, SqliteOptions::default()).unwrap();
    let later = store
        .claim("w2", 10, Duration::from_secs(60), now)
        .await
        .unwrap();
    let later_ids: Vec<_> = later.iter().map(|c| c.task_id.clone()).collect();
    assert_eq!(
        later_ids,
        ids[1..].to_vec(),
        "FIFO order kept; the leased one is not offered"
    );
    assert!(later.iter().all(|c| c.attempts == 1 && c.epoch == 1));
    assert!(store.reap(now).await.unwrap().is_empty(), "not lapsed yet");
    let mut reaped = store
        .reap(now + chrono::Duration::seconds(61))
        .await
        .unwrap();
    reaped.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    let mut all = ids.clone();
    all.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    assert_eq!(reaped, all, "the lease from before the reopen lapses too");
    let again = store
        .claim("w3", 10, Duration::from_secs(60), now)
        .await
        .unwrap();
    let first_again = again.iter().find(|c| c.task_id == ids[0]).unwrap();
    assert_eq!((first_again.epoch, first_again.attempts), (2, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_with_one_key_make_one_task() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let svc = TaskService::new(store.clone(), "scripted");
    let mut all = Vec::new();
    for _ in 0..32 {
        let svc = svc.clone();
        all.push(tokio::spawn(async move {
            svc.create(&Caller::local(), CreateTask::new(msg("same")))
                .await
                .unwrap()
        }));
    }
    let results: Vec<_> = futures::future::join_all(all)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(results.iter().filter(|r| r.created).count(), 1);
    assert!(results.iter().all(|r| r.task.id == results[0].task.id));
    assert_eq!(store.queue_depth().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wakes_follow_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir);
    let svc = TaskService::new(store.clone(), "scripted");
    let notified = store.hub().work_notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    let t = svc
        .create(&Caller::local(), CreateTask::new(msg("m")))
        .await
        .unwrap()
        .task
        .as_ref()
        .clone();
    tokio::time::timeout(Duration::from_secs(5), notified)
        .await
        .unwrap();
    // A watcher woken by a commit reads the committed state.
    let mut rx = store.hub().watch(&t.id);
    let claim = store
        .claim("w", 1, Duration::from_secs(30), Utc::now())
        .await
        .unwrap()
        .remove(0);
    let reader = {
        let store = store.clone();
        let id = t.id.clone();
        tokio::spawn(async move {
            rx.changed().await.unwrap();
            let seen = *rx.borrow();
            let task = store.get(&id).await.unwrap().unwrap();
            assert_eq!(task.last_seq, seen.last_seq);
            store.events(&id, 0, 100).await.unwrap().len() as u64
        })
    };
    let mut next = t.clone();
    next.version += 1;
    next.last_seq += 1;
    let notified = store.hub().work_notified();
    tokio::pin!(notified);
    notified.as_mut().enable();
    store
        .commit(Commit {
            task: next.into(),
            expected_version: 1,
            events: vec![step(&t, 3)],
            queue: QueueOp::Requeue,
            fence: Some(claim),
        })
        .await
        .unwrap();
    assert_eq!(reader.await.unwrap(), 3);
    tokio::time::timeout(Duration::from_secs(5), notified)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_creates_are_all_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open_with(dir.path().join("many.db"), {
            let mut v = SqliteOptions::default();
            v.synchronous = Synchronous::Full;
            v
        })
        .unwrap(),
    );
    let svc = TaskService::new(store.clone(), "scripted");
    let started = Instant::now();
    let mut callers = Vec::new();
    for c in 0..64 {
        let svc = svc.clone();
        callers.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..50 {
                let t = svc
                    .create(&Caller::local(), CreateTask::new(msg(&format!("{c}-{i}"))))
                    .await
                    .unwrap();
                ids.push(t.task.id.clone());
            }
            ids
        }));
    }
    let ids: Vec<_> = futures::future::join_all(callers)
        .await
        .into_iter()
        .flat_map(Result::unwrap)
        .collect();
    eprintln!(
        "{} creates from 64 callers in {:?} (debug build, synchronous=full)",
        ids.len(),
        started.elapsed()
    );
    assert_eq!(store.queue_depth().await.unwrap(), 3200);
    for id in ids.iter().step_by(97) {
        assert!(store.get(id).await.unwrap().is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_are_monotonic_and_end_at_the_committed_state_under_concurrent_writes() {
    use taskwire_core::Access;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mono.db");
    // A tiny cache so that reads keep missing and racing the writer's puts.
    let store = Arc::new(
        SqliteStore::open_with(&path, {
            let mut v = SqliteOptions::default();
            v.cache_tasks = 4;
            v
        })
        .unwrap(),
    );
    let svc = TaskService::new(store.clone(), "scripted");
    let mut ids = Vec::new();
    for i in 0..8 {
        ids.push(
            svc.create(&Caller::local(), CreateTask::new(msg(&format!("t{i}"))))
                .await
                .unwrap()
                .task
                .id
                .clone(),
        );
    }
    let mut writers = Vec::new();
    for w in 0..4 {
        let svc = svc.clone();
        let ids = ids.clone();
        writers.push(tokio::spawn(async move {
            for round in 0..40 {
                let id = &ids[(w + round) % ids.len()];
                svc.mutate(id, Access::System, None, |d| {
                    let n = d
                        .task
                        .metadata
                        .get("n")
                        .and_then(|v| v.as_u64())
                        .unwrap_or(0);
                    d.task.metadata.insert("n".into(), (n + 1).into());
                    d.record(EventKind::Step {
                        name: format!("w{w}"),
                        phase: StepPhase::Started,
                    });
                    Ok(())
                })
                .await
                .unwrap();
            }
        }));
    }
    let mut readers = Vec::new();
    for _ in 0..4 {
        let store = store.clone();
        let ids = ids.clone();
        readers.push(tokio::spawn(async move {
            let mut seen = vec![0u64; ids.len()];
            for round in 0..400 {
                let i = round % ids.len();
                let t = store.get(&ids[i]).await.unwrap().unwrap();
                assert!(t.version >= seen[i], "a read went back in time");
                seen[i] = t.version;
            }
        }));
    }
    for j in writers.into_iter().chain(readers) {
        j.await.unwrap();
    }
    // What the store serves is what the database holds.
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut total = 0;
    for id in &ids {
        let served = store.get(id).await.unwrap().unwrap();
        let body: Vec<u8> = conn
            .query_row("SELECT body FROM tasks WHERE id = ?1", [id.as_str()], |r| {
                r.get(0)
            })
            .unwrap();
        let stored: taskwire_core::Task = serde_json::from_slice(&body).unwrap();
        assert_eq!(served, stored);
        total += served
            .metadata
            .get("n")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
    }
    assert_eq!(total, 160, "no increment was lost");
}

/// A create refused for a duplicate task id leaves nothing behind: its
/// idempotency key stays free, and a later create with that key makes a task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_create_gives_its_key_back() {
    use taskwire_core::store::{CreateOutcome, IdempotencyKey};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.db");
    let store = SqliteStore::open_with(&path, SqliteOptions::default()).unwrap();
    let key = |m: &str| IdempotencyKey {
        tenant: "t".into(),
        owner: "o".into(),
        message_id: m.into(),
    };
    // A valid task to store, made by the service on a scratch memory store.
    let scratch = TaskService::new(Arc::new(taskwire_core::MemoryStore::new()), "scripted");
    let first = scratch
        .create(&Caller::local(), CreateTask::new(msg("template")))
        .await
        .unwrap()
        .task
        .as_ref()
        .clone();
    let created = store
        .create(first.clone(), Vec::new(), Some(key("a")), false)
        .await
        .unwrap();
    assert!(matches!(created, CreateOutcome::Created(_)));
    // Same id, another key: refused.
    let err = store
        .create(first.clone(), Vec::new(), Some(key("b")), false)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
    let keys = || -> i64 {
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(
                "SELECT COUNT(*) FROM tasks WHERE idem_message_id IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    assert_eq!(keys(), 1, "no key of the refused create remains");
    // Key "b" is free: it makes a new task, and key "a" still names the first.
    let mut second = first.clone();
    second.id = taskwire_core::TaskId::new();
    let again = store
        .create(second.clone(), Vec::new(), Some(key("b")), false)
        .await
        .unwrap();
    assert!(matches!(again, CreateOutcome::Created(t) if t.id == second.id));
    let same = store
        .create(second.clone(), Vec::new(), Some(key("a")), false)
        .await
        .unwrap();
    assert!(matches!(same, CreateOutcome::Existing(t) if t.id == first.id));
    drop(store);
    assert_eq!(keys(), 2);
}

/// The writer and the syncer run under SCHED_BATCH on Linux, so that a runtime
/// thread's sends do not switch to them one by one (see `batch_scheduling`).
#[cfg(target_os = "linux")]
#[test]
fn writer_threads_use_batch_scheduling() {
    let dir = tempfile::tempdir().unwrap();
    let _store = open(&dir);
    // Thread names are cut to 15 bytes: the writer and the syncer both read so.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut ours = Vec::new();
        for entry in std::fs::read_dir("/proc/self/task").unwrap() {
            let path = entry.unwrap().path();
            let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
                continue;
            };
            if comm.trim_end() != "taskwire-sqlite" {
                continue;
            }
            let tid: libc::pid_t = path.file_name().unwrap().to_str().unwrap().parse().unwrap();
            // SAFETY: reads the policy of a thread of this process.
            ours.push(unsafe { libc::sched_getscheduler(tid) });
        }
        // Each thread sets its policy as it starts: wait for both.
        if ours.len() >= 2 && ours.iter().all(|p| *p == libc::SCHED_BATCH) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "writer and syncer policies: {ours:?} (SCHED_BATCH is {})",
            libc::SCHED_BATCH
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Records, their cursors and their leases are durable: a reopened store finds
/// them, does not hand out a lease that is still held, and hands it out once it
/// lapsed (so another process can take over delivery from where it stopped).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_and_their_leases_survive_a_reopen() {
    use taskwire_core::{Record, RecordKind, RecordScope};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let now = Utc::now();
    let lease = Duration::from_secs(60);
    let kind = RecordKind::PushConfig;
    let task_id = {
        let store = Arc::new(SqliteStore::open_with(&path, SqliteOptions::default()).unwrap());
        let svc = TaskService::new(store.clone(), "scripted");
        let t = svc
            .create(&Caller::local(), CreateTask::new(msg("r1")))
            .await
            .unwrap()
            .task
            .id
            .clone();
        let r = Record::new(
            kind,
            "cfg",
            "local",
            "local",
            serde_json::json!({"url": "u"}),
        )
        .for_task(t.clone())
        .active(true);
        store.put_record(r, None).await.unwrap();
        let claimed = store
            .claim_records(kind, "w1", 10, lease, now)
            .await
            .unwrap();
        let (mut rec, l) = claimed.into_iter().next().unwrap();
        rec.cursor = 7;
        store.update_record(&rec, Some(&l)).await.unwrap();
        t
    };
    let store = SqliteStore::open_with(&path, SqliteOptions::default()).unwrap();
    let got = store.get_record(kind, "cfg").await.unwrap().unwrap();
    assert_eq!((got.cursor, got.version), (7, 2));
    assert_eq!(got.data["url"], "u");
    assert_eq!(
        store
            .list_records(kind, &RecordScope::Task(task_id))
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(store
        .claim_records(kind, "w2", 10, lease, now)
        .await
        .unwrap()
        .is_empty());
    let later = now + chrono::Duration::seconds(61);
    let taken = store
        .claim_records(kind, "w2", 10, lease, later)
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!((taken[0].0.cursor, taken[0].1.epoch), (7, 2));
}
